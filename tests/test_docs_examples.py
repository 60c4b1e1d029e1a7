"""Docs that cannot go stale (issue 34): every worked example in README.md and docs/ is made by
``make docs`` (``tools/make_docs.py``, the examples in ``tools/doc_examples.py``), and the pages
show what the code prints now.

- Every ``<!-- example: NAME -->`` block is an example the generator knows, and every example is
  shown by exactly one block of the page it names.
- Every other block that reads as output (no language, ``text``, ``console``, or a ``$ `` line)
  says why it is not generated (``<!-- static: WHY -->``), so a new hand-written output block fails.
- The examples that train nothing are re-run here and must match their blocks byte for byte (after
  the declared normalisations); the ones that train a model are re-run under ``-m slow``.
- The comparison itself fails on a planted stale number.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import make_docs  # noqa: E402
from doc_examples import EXAMPLES  # noqa: E402

BY_NAME = {e.name: e for e in EXAMPLES}
FAST = [e for e in EXAMPLES if not e.slow]
SLOW = [e for e in EXAMPLES if e.slow]


def test_every_marked_block_is_a_known_example_on_its_page_and_every_example_is_shown():
    shown = make_docs.shown_bodies()
    assert len(BY_NAME) == len(EXAMPLES), "two examples share a name"
    assert sorted(shown) == sorted(BY_NAME)
    for name, block in shown.items():
        assert block.page == ROOT / BY_NAME[name].page, f"{name} is shown on {block.page}"
        assert block.info == BY_NAME[name].language, f"{name}: fence says {block.info!r}"
        assert block.body.strip(), f"{name}: an empty block; run `make docs`"


def test_every_output_block_is_generated_or_says_why_not():
    unmarked = [
        f"{b.page.relative_to(ROOT)}:{b.line}"
        for page in make_docs.PAGES
        for b in make_docs.blocks(page)
        if make_docs.reads_as_output(b) and b.example is None and b.static is None
    ]
    assert not unmarked, f"output blocks neither generated nor marked <!-- static: WHY -->: {unmarked}"


def test_the_marker_rules_catch_an_unmarked_block_and_a_marker_left_open(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("text\n\n```console\n$ lmleak selftest\nok\n```\n")
    [b] = make_docs.blocks(page)
    assert make_docs.reads_as_output(b) and b.example is None and b.static is None
    page.write_text("<!-- static: a diagram -->\n```\na -> b\n```\n```yaml\nk: 1\n```\n")
    static, yaml = make_docs.blocks(page)
    assert static.static == "a diagram" and not make_docs.reads_as_output(yaml)
    page.write_text("<!-- example: x -->\n```console\n$ lmleak selftest\n```\n")
    with pytest.raises(ValueError, match="not closed"):
        make_docs.blocks(page)


def test_a_planted_stale_number_is_reported_and_a_declared_tolerance_is_honoured():
    e = BY_NAME["dp-audit-bound"]
    body = make_docs.shown_bodies()[e.name].body
    assert "epsilon_lower_bound: 0.955319" in body
    assert make_docs.stale([e], {e.name: body}) == []
    planted = body.replace("0.955319", "0.955318")
    [message] = make_docs.stale([e], {e.name: planted})
    assert "dp-audit-bound is stale" in message and "+epsilon_lower_bound: 0.955318" in message
    tol = make_docs.Tolerance("a test", rel=1e-5)
    assert make_docs.matches(body, planted, tol) and not make_docs.matches(body, planted, None)


def test_the_generator_writes_a_fresh_body_between_the_markers_and_nowhere_else(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "p.md"
    page.write_text(
        "a\n<!-- example: x -->\n```console\nold\n```\n<!-- /example -->\nb\n```console\nold\n```\n"
    )
    monkeypatch.setattr(make_docs, "ROOT", tmp_path)
    x = make_docs.Example("x", "docs/p.md", (make_docs.Cmd("echo hi"),))
    assert make_docs.write([x], {"x": "$ echo hi\nhi"}) == ["docs/p.md"]
    assert page.read_text() == (
        "a\n<!-- example: x -->\n```console\n$ echo hi\nhi\n```\n<!-- /example -->\nb\n```console\nold\n```\n"
    )


def test_an_example_runs_in_its_own_folder_with_paths_and_durations_normalised(tmp_path):
    e = make_docs.Example(
        "x",
        "docs/p.md",
        (make_docs.Cmd("pwd; echo took 1.2$((5)) s"), make_docs.Cmd("exit 2", status=2)),
        subs=(make_docs_seconds(),),
    )
    assert make_docs.run_example(e, tmp_path) == "$ pwd; echo took 1.2$((5)) s\n.\ntook <s> s\n$ exit 2"
    with pytest.raises(RuntimeError, match="exited 2, not 0"):
        make_docs.run_example(make_docs.Example("y", "docs/p.md", (make_docs.Cmd("exit 2"),)), tmp_path)


def make_docs_seconds() -> tuple[str, str]:
    from doc_examples import SECONDS

    return SECONDS


def _check(examples, fresh):
    problems = make_docs.stale(examples, fresh)
    assert not problems, "\n\n".join(problems) + "\n\nrun `make docs` to regenerate them"


def test_the_examples_that_train_nothing_print_what_the_docs_show():
    assert len(FAST) >= 5
    _check(FAST, make_docs.run_examples(make_docs.with_group(EXAMPLES, [e.name for e in FAST])))


#: each group's fresh bodies, run once for all its slow examples (each example re-ran the examples
#: of its group before it: the quick-audit group's first run four times over)
_GROUP_RUNS: dict[str, dict[str, str]] = {}


def _group_run(example: make_docs.Example) -> dict[str, str]:
    key = example.group or example.name
    if key not in _GROUP_RUNS:
        members = [e.name for e in SLOW if (e.group or e.name) == key]
        _GROUP_RUNS[key] = make_docs.run_examples(make_docs.with_group(EXAMPLES, members))
    return _GROUP_RUNS[key]


@pytest.mark.slow
@pytest.mark.parametrize("name", [e.name for e in SLOW])
def test_the_training_examples_print_what_the_docs_show(name):
    _check([BY_NAME[name]], _group_run(BY_NAME[name]))
