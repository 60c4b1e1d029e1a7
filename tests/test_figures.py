"""lmleak.figures: the one figure writer leaves an owner-only PNG and no temporary file."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from lmleak.figures import pyplot, save_figure  # noqa: E402


def test_save_figure_writes_an_owner_only_png_atomically_and_closes_the_figure(tmp_path):
    plt = pyplot()
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [1, 0, 1])
    path = save_figure(fig, tmp_path / "sub" / "curve.png", dpi=50)
    assert path == tmp_path / "sub" / "curve.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["curve.png"]  # no temporary file left behind
    assert not plt.fignum_exists(fig.number)
