"""The newcomer path (issue 29): the README's "audit your model" block, run verbatim through the
installed ``lmleak`` on a small trained model and its corpus, prints the verdict the README shows.

Only the two placeholders change: ``path/to/model`` becomes a small GPT trained by ``lmleak train``
with held-out users, ``corpus.jsonl`` its training corpus (a synthetic mailing list). Each line runs
as a subprocess in a fresh folder. The README's verdict snippet must match in shape: the same limits
for the same model, each limit's result where it does not depend on the trained weights (an analysis
not run is "Not evaluable" whatever the model), Pass or Fail where it does.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
START, END = "<!-- newcomer-path:start -->", "<!-- newcomer-path:end -->"
MODEL, CORPUS = "path/to/model", "corpus.jsonl"


def newcomer_block(text: str) -> tuple[list[str], str]:
    """The commands of the README's marked ```bash block and the verdict snippet (the ```text block)
    that follows it between the same markers."""
    assert text.count(START) == 1 and text.count(END) == 1, "README.md needs one newcomer-path block"
    part = text[text.index(START) + len(START) : text.index(END)]
    bash = re.search(r"```bash\n(.*?)```", part, re.S)
    shown = re.search(r"```text\n(.*?)```", part, re.S)
    assert bash and shown, "the newcomer-path block holds a ```bash block and the ```text verdict it prints"
    commands = [ln for ln in bash.group(1).splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    return commands, shown.group(1)


def verdict_rows(text: str) -> list[list[str]]:
    """The cells of every body row of the verdict table printed in ``text``: model, limit, value,
    interval, result (the header row is drawn with ┃, a wrapped row's continuation has no model)."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) == 5 and cells[0]:
            rows.append(cells)
    return rows


def _limit(label: str) -> str:
    """A verdict row's limit without the membership attack it names (``AUC [min_k]``): the split-half
    selection picks the attack from the trained weights, which the README cannot pin."""
    return re.sub(r" \[[a-z_+]+\]", " [attack]", label)


def test_the_readme_block_is_three_lmleak_commands_with_the_two_placeholders():
    commands, shown = newcomer_block(README.read_text(encoding="utf-8"))
    assert [shlex.split(c)[:2] for c in commands] == [
        ["lmleak", "audit"],
        ["lmleak", "gate"],
        ["lmleak", "query"],
    ]
    assert MODEL in commands[0] and CORPUS in commands[0]
    assert verdict_rows(shown), "the snippet shows the verdict table"


def _lmleak() -> str:
    """The installed console script (beside this Python, as `make install` puts it)."""
    exe = Path(sys.executable).parent / "lmleak"
    found = str(exe) if exe.exists() else shutil.which("lmleak")
    assert found, "lmleak is not installed: run `make install`"
    return found


@pytest.mark.slow  # trains a small GPT, then three CLI processes: about a minute on 2 CPU cores
def test_the_readme_block_run_verbatim_prints_the_verdict_it_shows(tmp_path):
    from lmleak.data.loaders import load_corpus
    from lmleak.data.synth.mail import synthesize
    from lmleak.train.config import TrainConfig
    from lmleak.train.trainer import train_model

    commands, shown = newcomer_block(README.read_text(encoding="utf-8"))
    corpus = synthesize(tmp_path / "data", scale=0.05, seed=1)["corpus"]
    cfg = TrainConfig(
        epochs=1, n_layer=1, n_embd=32, n_head=2, seq_len=64, vocab_size=400, holdout_users=0.3, seed=0
    )
    train_model(load_corpus(corpus), tmp_path / "model", cfg, progress=False)
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    outputs = []
    for line in commands:
        line = line.replace(MODEL, str(tmp_path / "model")).replace(CORPUS, str(corpus))
        argv = shlex.split(line)
        done = subprocess.run(
            [_lmleak(), *argv[1:]], cwd=work, env=env, capture_output=True, text=True, timeout=600
        )
        allowed = (0, 1) if argv[1] == "gate" else (0,)  # the gate exits 1 when a limit fails
        assert done.returncode in allowed, f"{line}\n{done.stdout}\n{done.stderr}"
        outputs.append((done.stdout, done.stderr))
    (audit_out, _), (gate_out, _), (query_out, query_err) = outputs

    # the verdict: the README's rows, for the same model and limits, in the audit and the gate
    expected = verdict_rows(shown)
    assert expected
    for printed in (audit_out, gate_out):
        got = {(r[0], _limit(r[1])): r[4] for r in verdict_rows(printed)}
        assert set(got) == {(r[0], _limit(r[1])) for r in expected}, printed
        for model, limit, _value, _interval, result in expected:
            if result.startswith("Not evaluable"):
                assert (
                    got[(model, _limit(limit))] == result
                )  # no public model, canaries or extraction: never measured
            else:
                decided = ("Pass", "Fail", "Inconclusive (blocks)")  # issue 32: decided on the interval
                assert got[(model, _limit(limit))] in decided, (limit, got[(model, _limit(limit))])
    words = "PASS|FAIL|INCONCLUSIVE|NOT EVALUABLE"
    verdict = re.search(rf"^(\S+): verdict ({words})$", shown, re.M)
    assert verdict and re.search(rf"^{verdict.group(1)}: verdict ({words})$", audit_out, re.M)
    assert ("gate passed" in gate_out) == ("verdict PASS" in audit_out)
    # the audit names the report and the two commands to run next: the README's
    assert re.search(r"^report: .*audit-run/report\.html", audit_out, re.M)
    sql = shlex.split(commands[2])[3]
    assert f"lmleak query {work / 'audit-run'} {shlex.quote(sql)}" in audit_out
    assert f"lmleak gate {work / 'audit-run'} --profile release" in audit_out
    # the query returns leaked sequences of this run, with no warning about an empty column
    assert "warning" not in query_err, query_err
    assert re.search(r"^│ [13] ", query_out, re.M), query_out
