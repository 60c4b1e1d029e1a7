"""Third-party warnings during training, caught and restated in lmleak's words (issue 33).

Opacus, torch and transformers warn through :mod:`warnings`, which prints the warning with the
source file it came from (``.../site-packages/opacus/accountants/analysis/rdp.py:332: UserWarning:
Optimal order is the largest alpha...``): a path and a sentence about the library's internals in the
middle of lmleak's output. :func:`restated_warnings` catches every warning raised outside lmleak
while training runs and keeps one line per distinct warning, in words that say what it means for the
run (:data:`KNOWN` for the ones lmleak knows; ``<package> warned: <message>`` for the rest). The
training summary lists them with its other ``warnings``; nothing is printed with a path.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

#: The start of a known third-party warning -> what it means, in lmleak's words.
KNOWN: dict[str, str] = {
    "Optimal order is the largest alpha": (
        "privacy accounting (opacus, RDP): the tightest Rényi order is the largest one tried, so an ε from "
        "the RDP bound may be looser than the true one (it is still a valid upper bound)"
    ),
}

_LMLEAK = Path(__file__).resolve().parents[1]


def _package(filename: str) -> str:
    """The top-level package a warning came from (``opacus`` for ``.../site-packages/opacus/x.py``).

    Example:
        >>> _package("/venv/lib/python3.11/site-packages/opacus/accountants/analysis/rdp.py")
        'opacus'
        >>> _package("/usr/lib/python3.11/warnings.py")
        'python'
    """
    parts = Path(filename).parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return Path(parts[parts.index(marker) + 1]).stem
    return "python"


def restate(message: str, filename: str) -> str:
    """One warning in lmleak's words (one line, no path).

    Example:
        >>> restate("Optimal order is the largest alpha. Please consider expanding", "/s/site-packages/opacus/rdp.py")[:40]
        'privacy accounting (opacus, RDP): the ti'
        >>> restate("Something odd\\nhappened", "/s/site-packages/torch/nn/x.py")
        'torch warned: Something odd happened'
    """
    for start, words in KNOWN.items():
        if message.startswith(start):
            return words
    return f"{_package(filename)} warned: {' '.join(message.split())}"


@contextlib.contextmanager
def restated_warnings() -> Iterator[list[str]]:
    """Catch the warnings raised outside lmleak inside the block; yields the list that receives each
    distinct one restated (:func:`restate`), in order. lmleak's own warnings are shown as usual."""
    lines: list[str] = []
    with warnings.catch_warnings():
        shown = warnings.showwarning  # the filters stay as they are (lmleak's "ignore"s keep applying)

        def show(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: TextIO | None = None,
            line: str | None = None,
        ) -> None:
            try:
                ours = Path(filename).resolve().is_relative_to(_LMLEAK)
            except (OSError, ValueError):
                ours = False
            if ours:
                shown(message, category, filename, lineno, file, line)
                return
            said = restate(str(message), filename)
            if said not in lines:
                lines.append(said)

        warnings.showwarning = show
        yield lines
