"""``lmleak --help`` in panels, every command's help (one sentence, then an example that runs), and
the surface itself (issue 34).

Each command's and group's help opens with a paragraph of one sentence (what the command list shows),
then a paragraph of ``Example: lmleak ...`` lines. Each example is parsed as the command line it is:
it must reach the command whose help shows it (or, for a group, one of its commands) and parse there
with every required option given and no unknown one (the command itself is not run).

:data:`SURFACE` is the checked-in list of visible commands and, per command, its visible option
names: any change to the surface (a command or an option added, renamed, removed or hidden) is a
diff here, made on purpose. :data:`DEPRECATED` lists the old spellings that keep working, hidden,
each printing one line that names the new one (docs/commands.md#old-spellings).
"""

from __future__ import annotations

import inspect
import json
import re
import shlex
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from lmleak.cli.main import PANEL_OF, PANELS, build_app

#: Every visible command path ("" is ``lmleak`` itself) -> its visible option names, sorted. Regenerate
#: the entry of a command you change on purpose from :func:`surface`'s output.
SURFACE = {
    "": "--cache-dir --debug --device --full-hash --max-requests --quiet --tokenizer --user-ids -q",
    "audit": (
        "--canaries --corpus --example --force --holdout --json --model --no-force --out "
        "--public-model --redact --redact-key-file"
    ),
    "cache": "",
    "cache clear": "--cache-dir --json --run",
    "cache info": "--cache-dir --json --run",
    "confidentiality": (
        "--delta --delta2 --delta2-misses --delta2-secrets --epsilon --gamma --json --occurrences "
        "--plot --quantile --unique-secrets"
    ),
    "corpus": "",
    "corpus check": (
        "--doc-field --format --json --no-skip-bad-rows --skip-bad-rows --text-field --user-field"
    ),
    "dedup": "--corpus --fp-rate --json --mode --out",
    "demo": "--base --json --leave-out --max-steps --no-leave-out --out --quick --seed",
    "dp-audit": "",
    "dp-audit bound": "--confidence --delta --json --m --r --v",
    "dp-audit plan": "--confidence --delta --json --m --precision --r --target-epsilon",
    "dp-audit run": (
        "--batch-size --canary-design --canary-documents --confidence --corpus --delta --epochs "
        "--heads --holdout-users --json --layers --lr --m --max-grad-norm --mode --noise-multiplier "
        "--out --placebo --privacy-unit --r --redact --redact-key-file --seed --seq-len "
        "--target-epsilon --tokenizer --tokenizer-from --vocab-size --width"
    ),
    "eval": "--corpus --json --k --model --out",
    "experiment": "",
    "experiment crt": "--base --corpus --epochs --json --lr --max-steps --out --quick --seed --users",
    "experiment kart": "--docs --epochs --iterations --json --out --patients --quick --seed",
    "experiment propile": (
        "--base --epochs --json --max-steps --no-smollm2 --out --quick --seed --smollm2 "
        "--softprompt-epochs --users"
    ),
    "exposure": (
        "--alphabet --canaries --canary-design --corpus --extrapolate --json --max-candidates --model --out "
        "--placebos --redact --redact-key-file --sample-size --seed -m"
    ),
    "extract": (
        "--corpus --discoverable-docs --json --max-new-tokens --min-match-tokens --model --n "
        "--num-samples --out --p --prefix-tokens --prefixes --public-model --redact "
        "--redact-key-file --seed --suffix-tokens --temperature-decay --temperature-start --top-k "
        "--top-n --window"
    ),
    "gate": (
        "--allow-changed --allow-inconclusive --allow-not-evaluable --json --max-exposure "
        "--max-extracted --max-leakage-epsilon --max-mia-auc --max-pii-exact-match "
        "--max-pii-exact-match-excess --max-pii-people-excess --max-pii-unique --max-unique "
        "--min-epsilon-lower-bound --profile"
    ),
    "kart": "",
    "kart describe": "--json",
    "kart margins": "--decimals --json",
    "kart review": "--json",
    "kart run": "--json --out",
    "mia": (
        "--benchmark --benchmark-subset --blind --corpus --data --engine --field --gpus-per-worker "
        "--group-size --json --members --min-k --mlm --model --n-boot --neighbours --no-blind --non-members "
        "--num-groups --num-per-side "
        "--num-workers --out --ray-address --recall-prefix --recall-shots --redact "
        "--redact-key-file --reference --rmia-gamma --rmia-offline-a --rmia-population --rmia-reference "
        "--samia-max-new-tokens --samia-ngram --samia-prefix-share --samia-samples --samia-temperature "
        "--samia-top-k --seed -m"
    ),
    "pii": "",
    "pii detect": "--corpus --json --policy --recall --save --seed --text",
    "pii evaluate": (
        "--base-recall --by --corpus --json --min-overlap --policy --recall --save --secrets --seed"
    ),
    "probe": "",
    "probe build": "--corpus --json --method --min-count --out -c",
    "probe person": "--beams --html --json --model --subject --templates -m",
    "probe run": (
        "--beams --corpus --engine --gpus-per-worker --json --level --likelihood --limit --made-up "
        "--max-new-tokens --model --no-generate --no-likelihood --no-made-up --num-workers --out "
        "--ray-address --redact --redact-key-file --samples --seed --subjects --targets "
        "--template-file --templates -m -s"
    ),
    "probe softprompt": (
        "--epochs --init --json --length --level --lr --model --out --seed --subjects --target "
        "--train-subjects --transfer-to -m -s"
    ),
    "probe sweep": "--json --limit --model --out --subjects --target -m -s",
    "probe templates": "--corpus --json --out --subjects --top -c -s",
    "query": "--json",
    "redact": "--base-recall --corpus --json --out --policy --recall --seed",
    "render": "--no-show-text --out --show-text",
    "report": (
        "--allow-pickle --api-top-k --corpus --engine --gpus-per-worker --headline-pii-types --holdout "
        "--index-cache --json --k --leave-out-folds --max-contexts --min-tokens --model "
        "--num-workers --out --p --pii-policy --public-context-tokens --public-model "
        "--public-occurrences --public-scope --ray-address --redact --redact-key-file --t"
    ),
    "selftest": "--json",
    "serve": (
        "--allowed-host --api-key --batch-tokens --deadline --dtype --host --max-body "
        "--max-connections --max-inflight --max-logprobs --max-n --max-prompts --max-tokens --name "
        "--port --read-timeout --tier -p"
    ),
    "split": "--base-recall --conservative --corpus --dedup --fp-rate --json --out --policy --recall --seed",
    "study": "",
    "study compare": "--corpus --json --k --model --out --public-model --val",
    "study hardening": "--json --k --run --threshold --val-run",
    "study snapshots": "--corpus --json --k --model --out --val",
    "synth": "",
    "synth clinical": "--json --notes-per-patient --out --patients --seed",
    "synth customersim": (
        "--canaries --canary-design --canary-repeats --dialogs-per-user --json --locales --out --seed --users"
    ),
    "synth mail": "--canaries --canary-design --canary-repeats --json --locales --out --scale --seed",
    "train": (
        "--arch --base --batch-size --config --context --corpus --delta --epochs --heads --help-all "
        "--holdout-users --json --layers --lr --mode --noise-multiplier --out --privacy-unit --seed "
        "--seq-len --target-epsilon --val-fraction --width"
    ),
}

#: The old spellings (issue 34): argv -> the new spelling their one line names. Each still runs the
#: same command (tests below), hidden from every --help.
DEPRECATED = {
    ("kart", "experiment"): "lmleak experiment kart",
    ("report", "snapshots"): "lmleak study snapshots",
    ("report", "compare"): "lmleak study compare",
    ("report", "hardening"): "lmleak study hardening",
    ("probe", "--model"): "lmleak probe person --model M --subject F",
    ("mia", "--n"): "lmleak mia --num-per-side",
}

#: abbreviations that end in a full stop inside a sentence
_ABBREVIATIONS = re.compile(r"(?:\bet al|\be\.g|\bi\.e|\bvs|\bProp|\bThm|\bFigs?|\bEq|\bSec|\bcf|\bno)\.$")


def _commands() -> list[tuple[tuple[str, ...], Any]]:
    """Every command and group below the root, with its path (``("probe", "run")``)."""
    out = []

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        for name, sub in getattr(cmd, "commands", {}).items():
            out.append(((*path, name), sub))
            walk(sub, (*path, name))

    walk(typer.main.get_command(build_app()), ())
    return out


def _paragraphs(help_text: str | None) -> list[str]:
    text = inspect.cleandoc(help_text or "")
    return [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def sentences(paragraph: str) -> int:
    """Sentences in a paragraph: a full stop, ! or ? followed by a space and a capital (or the end),
    not after an abbreviation such as "et al." or "Prop.".

    >>> sentences("Canary exposure (Carlini et al. 2019; paper 002 §5.1): the rank of each canary.")
    1
    >>> sentences("Check the answers. Under a minute.")
    2
    """
    text = " ".join(paragraph.split())
    count = 0
    for m in re.finditer(r"[.!?](?=\s+[A-Z(`\"']|$)", text):
        if not _ABBREVIATIONS.search(text[: m.end()]):
            count += 1
    return count


def help_problems(path: tuple[str, ...], help_text: str | None) -> list[str]:
    """What is wrong with a command's help: the first paragraph is not one sentence, or the second
    is not ``Example: lmleak <path> ...`` lines."""
    name = " ".join(path)
    paras = _paragraphs(help_text)
    problems = []
    if not paras or sentences(paras[0]) != 1 or not paras[0].endswith((".", "?", "!")):
        problems.append(f"lmleak {name}: the help must open with one sentence, got {paras[:1]}")
    elif "\n" in paras[0]:  # the command list shows the line breaks: one line reads whole
        problems.append(f"lmleak {name}: the opening sentence must be one line")
    lines = paras[1].splitlines() if len(paras) > 1 else []
    if not lines or not all(line.startswith("Example: lmleak ") for line in lines):
        problems.append(f"lmleak {name}: the second paragraph must be 'Example: lmleak {name} ...' lines")
    return problems


def examples(help_text: str | None) -> list[list[str]]:
    """The argument lists of the help's ``Example: lmleak ...`` lines (without ``lmleak``)."""
    paras = _paragraphs(help_text)
    lines = paras[1].splitlines() if len(paras) > 1 else []
    return [
        shlex.split(line.removeprefix("Example: lmleak ")) for line in lines if line.startswith("Example:")
    ]


def _option_names(cmd: Any) -> str:
    return " ".join(
        sorted(
            name
            for p in cmd.params
            if p.param_type_name == "option" and not p.hidden
            for name in (*p.opts, *p.secondary_opts)
            if name != "--help"
        )
    )


def surface(root: Any) -> dict[str, str]:
    """The visible command paths of ``root`` ("" for itself) -> their visible option names."""
    out = {"": _option_names(root)}

    def walk(cmd: Any, path: tuple[str, ...]) -> None:
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            if not sub.hidden:
                out[" ".join((*path, name))] = _option_names(sub)
                walk(sub, (*path, name))

    walk(root, ())
    return out


def surface_diff(want: dict[str, str], got: dict[str, str]) -> list[str]:
    """One line per command added, removed or whose visible options changed."""
    lines = [f"+ lmleak {k}: {got[k]}" for k in got.keys() - want.keys()]
    lines += [f"- lmleak {k}" for k in want.keys() - got.keys()]
    for k in want.keys() & got.keys():
        added, gone = set(got[k].split()) - set(want[k].split()), set(want[k].split()) - set(got[k].split())
        if added or gone:
            lines.append(f"~ lmleak {k}: added {sorted(added)}, removed {sorted(gone)}")
    return sorted(lines)


def _parse(root: Any, argv: list[str]) -> tuple[str, ...]:
    """Follow ``argv`` down the command tree and parse the rest at the command it reaches (raises a
    usage error on an unknown or missing option); returns the path reached."""
    cmd, path, rest = root, (), list(argv)
    while rest and rest[0] in getattr(cmd, "commands", {}):
        cmd, path, rest = cmd.commands[rest[0]], (*path, rest[0]), rest[1:]
    cmd.make_context(" ".join(("lmleak", *path)), rest)
    return path


def _command_at(root: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        root = root.commands[name]
    return root


@pytest.fixture(scope="module")
def commands():
    return _commands()


def test_every_top_level_command_sits_in_a_panel_and_every_panel_is_used(commands):
    top = {path[0] for path, _ in commands}
    assert top == set(PANEL_OF), "give each command a panel in lmleak.cli.main.PANEL_OF"
    assert set(PANEL_OF.values()) == set(PANELS)
    for path, cmd in commands:
        if len(path) == 1:
            assert cmd.rich_help_panel == PANEL_OF[path[0]], path


def test_lmleak_help_shows_the_panels_in_order_with_each_command_under_its_own(commands):
    out = CliRunner().invoke(build_app(), ["--help"], env={"COLUMNS": "200"}).stdout
    titles = re.findall(r"╭─ (.+?) ─", out)
    assert titles == ["Options", *PANELS]  # no catch-all "Commands" panel
    where = {}
    panel = None
    for line in out.splitlines():
        title = re.match(r"╭─ (.+?) ─", line)
        if title:
            panel = title.group(1)
        row = re.match(r"│ ([a-z][a-z-]*) ", line)
        if row and panel in PANELS:
            where[row.group(1)] = panel
    assert where == PANEL_OF


def test_every_command_help_opens_with_one_sentence_then_an_example(commands):
    problems = [p for path, cmd in commands for p in help_problems(path, cmd.help)]
    assert not problems, "\n".join(problems)


def test_every_example_reaches_its_command_and_parses_there(commands):
    root = typer.main.get_command(build_app())
    bad = []
    for path, cmd in commands:
        for argv in examples(cmd.help):
            try:
                reached = _parse(root, argv)
            except Exception as e:  # a usage error: an unknown option, a missing required one
                bad.append(f"lmleak {shlex.join(argv)}: {type(e).__name__}: {e}")
                continue
            # a hidden deprecated spelling shares its command's help (lmleak kart experiment)
            if reached[: len(path)] != path and _command_at(root, reached).help != cmd.help:
                bad.append(f"lmleak {' '.join(path)} shows an example of lmleak {' '.join(reached)}")
    assert not bad, "\n".join(bad)


def test_the_help_checks_catch_planted_violations():
    root = typer.main.get_command(build_app())
    assert help_problems(("x",), "Does a thing. And another.\n\nExample: lmleak x") == [
        "lmleak x: the help must open with one sentence, got ['Does a thing. And another.']"
    ]
    assert help_problems(("x",), "Does a thing (Carlini et al. 2019).\n\nRuns it.") == [
        "lmleak x: the second paragraph must be 'Example: lmleak x ...' lines"
    ]
    assert help_problems(("x",), "Does a thing, e.g. this.\n\nExample: lmleak x --y 1") == []
    with pytest.raises(Exception, match="No such option"):
        _parse(root, ["exposure", "--model", "m", "--canaries", "c", "--out", "o", "--bogus"])
    assert help_problems(("x",), "Does a thing\nover two lines.\n\nExample: lmleak x") == [
        "lmleak x: the opening sentence must be one line"
    ]
    with pytest.raises(Exception, match="Missing parameter: canaries"):
        _parse(root, ["exposure", "--model", "m"])
    assert _parse(root, ["probe", "run", "--model", "m", "--subjects", "s.jsonl", "--out", "o"]) == (
        "probe",
        "run",
    )


def test_the_visible_surface_is_the_checked_in_one():
    diff = surface_diff(SURFACE, surface(typer.main.get_command(build_app())))
    assert not diff, "the surface changed; if on purpose, update SURFACE (and the CHANGELOG):\n" + "\n".join(
        diff
    )


def test_the_surface_diff_names_what_changed():
    want = {"a": "--x --y", "b": ""}
    got = {"a": "--x --z", "c": "--w"}
    assert surface_diff(want, got) == [
        "+ lmleak c: --w",
        "- lmleak b",
        "~ lmleak a: added ['--z'], removed ['--y']",
    ]


def test_no_name_is_both_a_command_and_a_group_and_no_option_is_global_and_visible_on_a_command():
    root = typer.main.get_command(build_app())
    seen = surface(root)
    globals_ = set(seen[""].split()) - {
        "--cache-dir",
        "--tokenizer",
        "--device",
    }  # listed in docs/commands.md
    for path, names in seen.items():
        cmd = _command_at(root, tuple(path.split()) if path else ())
        visible = [c for c in getattr(cmd, "commands", {}).values() if not c.hidden]
        if path and visible:  # a group (visible sub-commands): no visible option of its own runs anything
            assert names == "", f"lmleak {path} is a group with options {names}"
        if path:
            assert not globals_ & set(names.split()), f"lmleak {path} repeats a global option"
    assert "--device" not in seen["train"].split()  # shown by `train --help-all` only (it predates the rule)


def test_every_deprecated_spelling_is_hidden_and_its_new_spelling_is_visible():
    root = typer.main.get_command(build_app())
    seen = surface(root)
    for old, new in DEPRECATED.items():
        words = new.removeprefix("lmleak ").split()
        path = " ".join(w for w in words if not w.startswith("-") and w not in ("M", "F"))
        assert path in seen, new
        if old[1].startswith("-"):  # a renamed option, or the group's old callback options
            assert old[1] not in seen[old[0]].split(), old
        else:
            assert " ".join(old) not in seen and _command_at(root, old).hidden, old


def _deprecated_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("deprecated:")]


@pytest.mark.parametrize(
    ("argv", "module", "function", "result"),
    [
        (["kart", "experiment", "--quick"], "lmleak.experiments.kart", "run_experiment", {"ran": "kart"}),
        (
            ["report", "snapshots", "--model", "M", "--corpus", "C"],
            "lmleak.report.studies",
            "snapshot_study",
            None,
        ),
        (
            ["report", "compare", "--model", "a=M", "--corpus", "C"],
            "lmleak.report.studies",
            "compare_models",
            None,
        ),
        (
            ["report", "hardening", "--run", "R", "--threshold", "2"],
            "lmleak.report.studies",
            "hardening_study",
            None,
        ),
    ],
)
def test_each_deprecated_command_still_runs_its_command_and_prints_one_line(
    argv, module, function, result, tmp_path, monkeypatch
):
    import importlib

    import pandas as pd

    calls = []

    def fake(*args, **kwargs):
        calls.append((args, kwargs))
        return pd.DataFrame({"k": [1]}) if result is None else result

    monkeypatch.setattr(importlib.import_module(module), function, fake)
    out_dir = [] if "hardening" in argv else ["--out", str(tmp_path / "run")]
    res = CliRunner().invoke(build_app(), [*argv, *out_dir, "--json"])
    assert res.exit_code == 0, res.output
    assert len(calls) == 1
    new = DEPRECATED[tuple(argv[:2])]
    assert _deprecated_lines(res.stderr) == [f"deprecated: `lmleak {' '.join(argv[:2])}` is now `{new}`"]
    assert res.stdout.strip().startswith(("{", "["))  # the command's own JSON, unchanged on stdout


def test_the_old_probe_spelling_runs_probe_person_with_its_options(tmp_path, monkeypatch):
    import lmleak.probe.commands as commands

    class View:
        def to_dict(self):
            return {"items": []}

    calls = []
    monkeypatch.setattr(commands, "probe_subject_file", lambda *a, **kw: calls.append((a, kw)) or View())
    me = tmp_path / "me.json"
    me.write_text('{"name": "Ann Lee"}')
    for argv in (
        ["probe", "--model", "M", "--subject", str(me)],
        ["probe", "person", "--model", "M", "--subject", str(me)],
    ):
        res = CliRunner().invoke(build_app(), [*argv, "--templates", "2", "--json"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout) == {"items": []}
    assert calls == [(("M", me), {"templates": 2, "beams": 3})] * 2
    first = CliRunner().invoke(build_app(), ["probe", "--model", "M", "--subject", str(me), "--json"])
    second = CliRunner().invoke(
        build_app(), ["probe", "person", "--model", "M", "--subject", str(me), "--json"]
    )
    assert _deprecated_lines(first.stderr) == [
        "deprecated: `lmleak probe --model M --subject F` is now `lmleak probe person --model M --subject F`"
    ]
    assert _deprecated_lines(second.stderr) == [] and first.stdout == second.stdout
    bare = CliRunner().invoke(build_app(), ["probe"])
    assert bare.exit_code == 0 and "person" in bare.stdout and not _deprecated_lines(bare.stderr)


def test_mia_n_is_the_old_spelling_of_num_per_side(tmp_path, monkeypatch):
    import lmleak.audit.single as single

    monkeypatch.setattr(
        single,
        "membership_command",
        lambda model, out, settings, **kw: {"num_per_side": settings.num_per_side},
    )
    files = [
        "--model",
        "M",
        "--members",
        str(tmp_path / "in.jsonl"),
        "--non-members",
        str(tmp_path / "out.jsonl"),
    ]

    def run(out: str, *extra: str) -> Any:
        return CliRunner().invoke(
            build_app(), ["mia", *files, "--out", str(tmp_path / out), "--json", *extra]
        )

    old, new = run("a", "--n", "7"), run("b", "--num-per-side", "7")
    assert old.exit_code == 0 and new.exit_code == 0, old.output + new.output
    assert json.loads(old.stdout)["num_per_side"] == json.loads(new.stdout)["num_per_side"] == 7
    assert _deprecated_lines(old.stderr) == [
        "deprecated: `lmleak mia --n` is now `lmleak mia --num-per-side`"
    ]
    assert _deprecated_lines(new.stderr) == []
    both = run("c", "--n", "7", "--num-per-side", "9")  # refused: one line, the error (no deprecation line)
    assert both.exit_code == 2 and both.stderr.strip().splitlines() == [
        "error: field '--num-per-side': --n and --num-per-side disagree. Fix: give --num-per-side only"
    ]


def test_a_deprecated_spelling_that_fails_prints_only_its_error(tmp_path):
    res = CliRunner().invoke(
        build_app(), ["report", "hardening", "--run", str(tmp_path / "none"), "--threshold", "2"]
    )
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output
    assert not _deprecated_lines(res.output)


def test_the_per_command_quiet_still_parses_hidden_and_lmleak_q_is_the_documented_one():
    root = typer.main.get_command(build_app())
    hidden_quiet = [
        path for path, cmd in _commands() if any("--quiet" in p.opts and p.hidden for p in cmd.params)
    ]
    assert len(hidden_quiet) >= 25  # the 27 commands that had their own --quiet (aliases included)
    assert not any("--quiet" in names.split() for path, names in surface(root).items() if path)
    assert _parse(root, ["probe", "build", "--corpus", "c", "--out", "o", "-q"]) == ("probe", "build")
