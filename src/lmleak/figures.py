"""The one figure writer: matplotlib on the Agg backend, PNGs written like every result file
(temporary name beside the target, owner-only, then an atomic rename).

It sits at the bottom of the layers (beside :mod:`lmleak.runs`) so every method can plot;
:mod:`lmleak.render` reads files and never draws with matplotlib.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot`` with the non-interactive Agg backend (no display needed)."""
    import matplotlib  # lazy: the optional [report] extra, and half a second to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: str | Path, *, dpi: int = 100) -> Path:
    """Write ``fig`` to ``path`` (PNG, owner-only, atomically) and close it; returns the path.

    Example:
        >>> import tempfile, os
        >>> fig, ax = pyplot().subplots()
        >>> _ = ax.plot([0, 1], [0, 1])
        >>> p = save_figure(fig, os.path.join(tempfile.mkdtemp(), "line.png"))
        >>> p.read_bytes()[:4] == b"\\x89PNG", oct(p.stat().st_mode & 0o777)
        (True, '0o600')
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}.png")
    try:
        fig.savefig(tmp, dpi=dpi)
    finally:
        pyplot().close(fig)
    os.chmod(tmp, 0o600)
    os.replace(tmp, p)
    return p
