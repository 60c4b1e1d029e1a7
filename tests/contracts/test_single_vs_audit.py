"""One path per analysis (issue 34 item 2): a single-analysis command is a one-stage audit.

For each analysis, ``lmleak <analysis>`` and ``lmleak audit`` with a config holding only that stage
run on the same inputs; the stage's ``summary.json`` must be the same, but for the keys listed in
:data:`MAY_DIFFER` (where the run folder is, how long it took), and the stage folder must hold the
same files. ``users.parquet`` (risk per person) is the single run's and the audited model's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.data.corpus import Corpus, Document

runner = CliRunner()

#: Keys of a stage summary that legitimately differ between the two runs, each for one reason:
MAY_DIFFER = {
    "provenance",  # compared apart (`_same_provenance`): it names the files, which lie elsewhere
    "report",  # the path of a dp-audit run's report.html, added to the printed summary only
    "users",  # users.parquet's record: the audit keeps it in the model's entry (`_same_users`)
}

#: Keys dropped at any depth: when the file was written and how long a step took (the search, training).
TIMINGS = {"created_at", "seconds", "wall_seconds", "tokens_per_s"}

#: Files of a stage folder that legitimately differ: the audit's stage-complete marker, its lock.
STAGE_ONLY = {".complete.json"}

TEXTS = [
    "hello my name is ada and my phone is 555 0100",
    "thank you very much for the call today",
    "my order number is 4 4 1 2 and it is late",
    "the weather is nice today thank you",
    "please call me back at 555 0199 thank you",
    "my name is bob and i like cats very much",
    "write to ada at ada@example.org about the order",
    "the parcel came late again this week",
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    """A corpus of four users, a never-seen corpus, member / non-member files, canaries, and an
    untrained small GPT (seconds to build) that holds out user u3."""
    from lmleak.data.holdout import Holdout, write_holdout
    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

    root = tmp_path_factory.mktemp("contract")
    corpus = Corpus([Document(f"u{i % 4}", f"d{i}", t) for i, t in enumerate(TEXTS)])
    corpus_path = corpus.write_jsonl(root / "corpus.jsonl")
    never = Corpus([Document(f"n{i}", f"n{i}", f"a stranger wrote line {i} of this") for i in range(4)])
    never_path = never.write_jsonl(root / "never_seen.jsonl")
    members = root / "members.jsonl"
    members.write_text(
        "".join(json.dumps({"text": t, "user_id": f"u{i % 4}"}) + "\n" for i, t in enumerate(TEXTS))
    )
    non = root / "non_members.jsonl"
    non.write_text(
        "".join(
            json.dumps({"text": f"an unseen line number {i}", "user_id": f"x{i % 3}"}) + "\n"
            for i in range(8)
        )
    )
    canaries = root / "canaries.jsonl"
    canaries.write_text(
        json.dumps({"secret": "4412", "prefix": "my order number is ", "user_id": "u2", "repeats": 1}) + "\n"
    )
    tok = build_tokenizer([*TEXTS, *never.texts()], kind="word", vocab_size=200)
    module = new_small_gpt(len(tok), SmallGPTConfig(n_positions=64, n_embd=32, n_layer=1, n_head=2), seed=0)
    model = save_small_model(module, tok, root / "model")
    write_holdout(model, Holdout(users=("u3",), fraction=0.25, corpus=str(corpus_path)))
    other = new_small_gpt(len(tok), SmallGPTConfig(n_positions=64, n_embd=32, n_layer=1, n_head=2), seed=1)
    reference = save_small_model(other, tok, root / "reference")
    return {
        "root": root,
        "corpus": corpus_path,
        "never_seen": never_path,
        "members": members,
        "non_members": non,
        "canaries": canaries,
        "model": Path(model),
        "reference": Path(reference),
        "fake": Path(f"fake:{corpus_path}"),
    }


def _single(args: list[str]) -> None:
    res = runner.invoke(app, [*args, "--quiet"])
    assert res.exit_code == 0, res.output


def _audit(root: Path, name: str, model: str, stage: str, section: dict[str, Any], **extra: Any) -> Path:
    """``lmleak audit`` with one model and only ``stage``; returns the model's folder in the run."""
    cfg = {
        "out": f"audit-{name}",
        "corpus": {"path": "corpus.jsonl"},
        "models": [{"name": "m", "path": model}],
        "analyses": {stage: section},
    } | extra
    (root / f"{name}.yaml").write_text(yaml.safe_dump(cfg))
    res = runner.invoke(app, ["audit", str(root / f"{name}.yaml"), "--quiet"])
    assert res.exit_code == 0, res.output
    return root / f"audit-{name}" / "models" / "m"


def _summary(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "summary.json").read_text())


def _comparable(folder: Path) -> dict[str, Any]:
    """The summary without :data:`TIMINGS`, a path inside the run folder written from the folder."""
    text = (folder / "summary.json").read_text().replace(json.dumps(str(folder))[1:-1], "RUN")

    def untimed(d: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in d.items() if k not in TIMINGS}

    return json.loads(text, object_hook=untimed)


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()} - STAGE_ONLY


def _assert_same(single: Path, stage: Path, single_only: set[str] = frozenset()) -> None:
    """The same summary (but :data:`MAY_DIFFER`), the same files (but ``single_only``, what a command
    adds beside the stage's results), the same provenance of inputs."""
    a, b = _comparable(single), _comparable(stage)
    differ = {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)} - MAY_DIFFER
    assert not differ, {k: (a.get(k), b.get(k)) for k in sorted(differ)}
    _same_provenance(a.get("provenance"), b.get("provenance"))
    assert _files(single) - {"users.parquet"} - single_only == _files(stage)


def _same_provenance(a: dict[str, Any] | None, b: dict[str, Any] | None) -> None:
    """The same fingerprints of the model and corpus (file paths and the time aside)."""
    assert (a is None) == (b is None)
    if a is None or b is None:
        return

    def facts(p: dict[str, Any]) -> Any:
        return json.loads(
            json.dumps(p, sort_keys=True),
            object_hook=lambda d: {k: v for k, v in d.items() if k not in {"path", "created_at"}},
        )

    assert facts(a) == facts(b)


def _same_users(single: Path, model_folder: Path) -> None:
    """``users.parquet`` written by the single run equals the one-stage audit's, row for row, and
    its record in the single run's summary is the one in the audited model's entry."""
    assert (single / "users.parquet").exists() == (model_folder / "users.parquet").exists()
    if not (single / "users.parquet").exists():
        return
    pd.testing.assert_frame_equal(
        pd.read_parquet(single / "users.parquet"), pd.read_parquet(model_folder / "users.parquet")
    )
    run = json.loads((model_folder.parent.parent / "summary.json").read_text())
    record, audited = _summary(single)["users"], run["models"][model_folder.name]["users"]
    assert {**record, "path": None} == {**audited, "path": None}  # the path: inside each run


def test_lmleak_exposure_is_the_audits_exposure_stage(inputs):
    """The corpus holds, after the canary's prefix, the placebo a draw without it would pick first:
    both runs must draw their placebos away from it (the command once drew them without the corpus)."""
    from lmleak.attacks.exposure import draw_placebos, read_canaries

    root = inputs["root"]
    first = draw_placebos(read_canaries(inputs["canaries"]), seed=0)[0]
    docs = [Document(f"u{i % 4}", f"d{i}", t) for i, t in enumerate(TEXTS)]
    docs.append(Document("u1", "p0", f"{first['prefix']}{first['secret']} was the old one"))
    path = Corpus(docs).write_jsonl(root / "exposure-corpus.jsonl")
    single = root / "exposure-single"
    args = ["exposure", "--model", str(inputs["model"]), "--canaries", str(inputs["canaries"])]
    _single([*args, "--out", str(single), "--corpus", str(path)])
    section = {"canaries": "canaries.jsonl"}
    folder = _audit(root, "exposure", str(inputs["model"]), "exposure", section, corpus={"path": str(path)})
    _assert_same(single, folder / "exposure")
    _same_users(single, folder)
    placebos = pd.read_parquet(single / "placebo_exposure.parquet")
    assert first["secret"] not in set(placebos["secret"])


@pytest.mark.parametrize(
    "sides",
    [
        {"members": "members.jsonl", "non_members": "non_members.jsonl"},
        {"non_members": "never_seen.jsonl"},
        {},
    ],
    ids=["two-files", "never-seen", "holdout"],
)
def test_lmleak_mia_is_the_audits_mia_stage(inputs, sides):
    root = inputs["root"]
    name = "mia-" + "-".join(sides) if sides else "mia-holdout"
    single = root / f"{name}-single"
    args = ["mia", "--model", str(inputs["model"]), "--out", str(single), "--num-per-side", "50"]
    for key, file in sides.items():
        args += [f"--{key.replace('_', '-')}", str(root / file)]
    _single([*args, "--corpus", str(inputs["corpus"])])
    folder = _audit(root, name, str(inputs["model"]), "mia", {"num_per_side": 50, **sides})
    _assert_same(single, folder / "mia")
    _same_users(single, folder)


def test_lmleak_mia_reference_is_the_audits_public_model(inputs):
    """The reference-calibrated attack: ``--reference R`` on the command, ``public_model: R`` in the audit."""
    root = inputs["root"]
    single = root / "mia-reference-single"
    args = ["mia", "--model", str(inputs["model"]), "--out", str(single), "--corpus", str(inputs["corpus"])]
    _single([*args, "--reference", str(inputs["reference"])])
    model = str(inputs["model"])
    folder = _audit(root, "mia-reference", model, "mia", {}, public_model=str(inputs["reference"]))
    assert "reference" in _summary(single)["mia_auc_by_attack"]
    _assert_same(single, folder / "mia")
    _same_users(single, folder)


@pytest.mark.parametrize("public", [False, True], ids=["alone", "public-model"])
def test_lmleak_report_is_the_audits_report_stage(inputs, public):
    root = inputs["root"]
    name = f"report-{public}"
    single = root / f"{name}-single"
    args = [
        "report",
        "--model",
        str(inputs["model"]),
        "--corpus",
        str(inputs["corpus"]),
        "--out",
        str(single),
    ]
    extra: dict[str, Any] = {}
    if public:  # the curated count and the leakage epsilon against a public model
        args += ["--public-model", str(inputs["reference"])]
        extra["public_model"] = str(inputs["reference"])
    _single([*args, "--k", "1"])
    folder = _audit(root, name, str(inputs["model"]), "report", {"k": [1]}, **extra)
    assert ("public_model" in extra) == bool(_summary(single).get("public_model"))
    _assert_same(single, folder / "report")
    _same_users(single, folder)


def test_lmleak_report_holdout_is_the_audits_never_seen_null(inputs):
    """A model that holds out nobody: its leaked-PII null is people it never saw, ``--holdout F`` on the
    command and ``analyses.mia.non_members: F`` alone in the audit (which then also runs mia, so the
    audit's users.parquet joins two stages and is not compared here)."""
    import shutil

    root = inputs["root"]
    model = shutil.copytree(inputs["model"], root / "no-holdout-model")
    (model / "holdout.json").unlink()
    single = root / "report-never-seen-single"
    args = ["report", "--model", str(model), "--corpus", str(inputs["corpus"]), "--out", str(single)]
    _single([*args, "--holdout", str(inputs["never_seen"]), "--k", "1"])
    sections = {"report": {"k": [1]}, "mia": {"non_members": "never_seen.jsonl"}}
    folder = _audit(root, "report-never-seen", str(model), "report", {"k": [1]}, analyses=sections)
    assert _summary(single)["by_k"]["1"]["null_kind"] == "held_out"  # the never-seen people are the null
    _assert_same(single, folder / "report")


@pytest.mark.parametrize("which", ["fake", "model"], ids=["fake-memoriser", "model-folder"])
def test_lmleak_extract_is_the_audits_extract_stage(inputs, which):
    """On the memorising fake (samples that verify) and on a model folder (its A factor read from it)."""
    root = inputs["root"]
    single = root / f"extract-{which}-single"
    options = {"num_samples": 4, "max_new_tokens": 6, "top_n": 3, "min_match_tokens": 4}
    options |= {"prefix_tokens": 3, "suffix_tokens": 3, "discoverable_docs": 2}
    flags = [x for k, v in options.items() for x in (f"--{k.replace('_', '-')}", str(v))]
    model = str(inputs[which])
    _single(["extract", "--model", model, "--corpus", str(inputs["corpus"]), "--out", str(single), *flags])
    folder = _audit(root, f"extract-{which}", model, "extract", options)
    _assert_same(single, folder / "extract")
    _same_users(single, folder)


def test_lmleak_dp_audit_run_is_the_audits_dp_audit_stage(inputs):
    """The audit re-runs the audited model's recipe (its train.json); the command takes it as options.
    The model folder here records the very recipe the options give (its weights are not read)."""
    import shutil

    from lmleak.attacks.dp_audit import DPAuditSettings
    from lmleak.audit.dp_audit import DPAuditTraining
    from lmleak.data.synth.customersim import synthesize

    root = inputs["root"]
    corpus = synthesize(root / "dp-data", users=4, dialogs_per_user=1, seed=0)["corpus"]
    recipe = {"mode": "nodp", "epochs": 1, "seq_len": 32, "n_embd": 32, "n_layer": 1, "n_head": 2}
    recipe |= {"vocab_size": 200, "holdout_users": 0.0}
    audit = DPAuditSettings(m=8)
    model = shutil.copytree(inputs["model"], root / "dp-model")
    train = DPAuditTraining(**recipe).train_config(audit)
    (model / "train.json").write_text(json.dumps({"config": train.to_dict()}))
    single = root / "dp-single"
    flags = {"--mode": "nodp", "--epochs": 1, "--seq-len": 32, "--width": 32, "--layers": 1, "--heads": 2}
    flags |= {"--vocab-size": 200, "--holdout-users": 0}
    args = ["dp-audit", "run", "--corpus", str(corpus), "--out", str(single), "--m", "8"]
    _single([*args, *(x for k, v in flags.items() for x in (k, str(v)))])
    folder = _audit(root, "dp", str(model), "dp_audit", {"m": 8}, corpus={"path": str(corpus)})
    _assert_same(single, folder / "dp_audit", single_only={"report.html"})


def test_a_redacted_lmleak_mia_is_the_redacted_audits_mia_stage_and_names_nobody(inputs, monkeypatch):
    """Redacted, with one key (``LMLEAK_REDACT_KEY``) for both runs: the same summary, files and
    ``users.parquet`` (keyed-hash ids), and no user id of the corpus in plain text in either folder."""
    monkeypatch.setenv("LMLEAK_REDACT_KEY", "contract-test-key-0123456789abcdef")
    root = inputs["root"]
    single = root / "mia-redacted-single"
    args = ["mia", "--model", str(inputs["model"]), "--out", str(single), "--num-per-side", "50"]
    _single([*args, "--corpus", str(inputs["corpus"]), "--redact"])
    folder = _audit(root, "mia-redacted", str(inputs["model"]), "mia", {"num_per_side": 50}, redact=True)
    # the redaction record: the single run's summary holds it, the audit's run summary (not the stage's)
    record = _summary(single).pop("redaction")
    assert record == json.loads((folder.parent.parent / "summary.json").read_text())["redaction"]
    monkeypatch.setitem(globals(), "MAY_DIFFER", MAY_DIFFER | {"redaction"})
    _assert_same(single, folder / "mia")
    _same_users(single, folder)
    users = pd.read_parquet(single / "users.parquet")
    assert len(users) and not {"u0", "u1", "u2", "u3"} & set(users.astype(str).stack())
    for f in [*single.rglob("*"), *(folder / "mia").rglob("*")]:
        if f.is_file() and f.suffix in {".json", ".jsonl", ".csv", ".txt", ".html"}:
            assert not any(f'"u{i}"' in f.read_text() for i in range(4)), f


@pytest.fixture(scope="module")
def finetuned(inputs) -> Path:
    """A LoRA fine-tune (one epoch) of a tiny random Llama on the corpus, its base recorded."""
    from lmleak.data.loaders import load_corpus
    from lmleak.train.finetune import finetune
    from tests.train.tiny_llama import ft_config, make_tiny_llama

    root, corpus = inputs["root"], load_corpus(inputs["corpus"])
    base = make_tiny_llama(root / "llama-base", corpus.texts())
    finetune(corpus, root / "llama-ft", ft_config(base), progress=False)
    return root / "llama-ft"


@pytest.mark.parametrize("stage", ["report", "mia"])
def test_the_recorded_base_as_public_model_is_the_audits_public_model_base(inputs, finetuned, stage):
    """``--public-model base`` (report) and ``--reference base`` (mia) on a fine-tune: its recorded base,
    as the audit's ``public_model: base`` (paper 001's setting: the fine-tune against its base)."""
    root = inputs["root"]
    single = root / f"{stage}-base-single"
    args = [stage, "--model", str(finetuned), "--corpus", str(inputs["corpus"]), "--out", str(single)]
    if stage == "report":
        _single([*args, "--public-model", "base", "--k", "1"])
        section: dict[str, Any] = {"k": [1]}
    else:
        _single([*args, "--reference", "base"])
        section = {}
    folder = _audit(root, f"{stage}-base", str(finetuned), stage, section, public_model="base")
    a = _summary(single)
    if stage == "report":
        assert a["public_model"]["kind"] == "base" and a["public_model"]["path"] == str(
            (root / "llama-base").resolve()
        )
    else:
        assert "reference" in a["mia_auc_by_attack"]
    _assert_same(single, folder / stage)
    _same_users(single, folder)
