"""A redacted run holds no way back to the training text (issue 16, item 2).

The corpus is a small CustomerSim (names, addresses, phones, e-mails, order ids, canaries); the
model is the memorising :class:`~lmleak.models.fake.FakeLM` fitted on it, so the report finds
real leaks. ``lmleak report --redact`` and ``lmleak render`` run through the CLI; then every file
of the run is read back byte by byte, every Parquet file is decoded with pyarrow and every value
dumped as text, and (library test) every integer column is decoded as token ids with the model's
tokenizer. No secret, canary, user id or document id may come back.

The token-id decoding uses a FakeLM over a byte-level BPE that splits digits: every secret is then
several tokens, so a run of small integers (offsets, counts) cannot spell one by chance. Under the
``fake:`` spec's whitespace tokenizer a whole order id is one token with a small id, and any count
column "decodes" to it. The same scan on the *unredacted* run
must find them (the positive control: a scanner that finds nothing anywhere proves nothing).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from lmleak.cli.main import app

KEY = "k" * 40


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from lmleak.data.synth.customersim import synthesize

    root = tmp_path_factory.mktemp("redaction")
    paths = synthesize(root / "data", users=6, dialogs_per_user=2, seed=3, canaries=2, canary_repeats=3)
    secrets = {json.loads(line)["value"] for line in paths["secrets"].read_text().splitlines()}
    canaries = [json.loads(line) for line in paths["canaries"].read_text().splitlines()]
    secrets |= {c["secret"] for c in canaries} | {c["text"] for c in canaries}
    docs = [json.loads(line) for line in paths["corpus"].read_text().splitlines()]
    ids = {d["user_id"] for d in docs} | {d["doc_id"] for d in docs}
    return root, paths["corpus"], sorted(secrets), sorted(ids)


def _cli(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, list(args), env=env or {}, catch_exceptions=False)


def _report(root: Path, corpus: Path, name: str, *extra: str, env: dict[str, str] | None = None):
    run = root / name
    res = _cli(
        "report",
        "--model",
        f"fake:{corpus}",
        "--corpus",
        str(corpus),
        "--out",
        str(run),
        "--k",
        "1",
        "--k",
        "3",
        *extra,
        env=env,
    )
    assert res.exit_code == 0, res.output
    res2 = _cli("render", str(run))
    assert res2.exit_code == 0, res2.output
    return run, res.output + res2.output


def _parquet_dump(path: Path) -> tuple[str, list[list[list[int]]]]:
    """Every value of every column as text, and every integer column as rows of ints (a list column
    row by row — one document's token ids —, a scalar column as one row)."""
    table = pq.read_table(path)
    text, ints = [str(table.schema)], []
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        values = col.to_pylist()
        text.append(json.dumps(values, default=str))
        leaf = col.type
        while pa.types.is_list(leaf) or pa.types.is_large_list(leaf):
            leaf = leaf.value_type
        if pa.types.is_integer(leaf):
            rows = values if leaf != col.type else [values]
            ints.append([[int(v) for v in _flat(r) if v is not None] for r in rows if r is not None])
    return "\n".join(text), ints


def _flat(row):
    for v in row:
        if isinstance(v, list):
            yield from _flat(v)
        else:
            yield v


def _scan(run: Path, tokenizer, needles: list[str], logs: str) -> dict[str, list[str]]:
    """Where each needle shows up: raw bytes, decoded Parquet values, decoded integer columns, logs."""
    found: dict[str, list[str]] = {}
    files = [p for p in run.rglob("*") if p.is_file()]
    assert files
    haystacks = [("logs", logs)]
    for p in files:
        haystacks.append((f"{p.relative_to(run)} (bytes)", p.read_bytes().decode("latin-1")))
        if p.suffix == ".parquet":
            text, int_cols = _parquet_dump(p)
            haystacks.append((f"{p.relative_to(run)} (values)", text))
            for i, rows in enumerate(int_cols if tokenizer is not None else []):
                # an id the vocabulary does not hold cannot be a token of the text
                text = "\n".join(
                    tokenizer.decode([v for v in r if 0 <= v < tokenizer.vocab_size]) for r in rows
                )
                haystacks.append((f"{p.relative_to(run)} (int column {i} decoded)", text))
    for needle in needles:
        # token boundaries: "104030" inside the digits of a float is not the canary
        pat = re.compile(r"(?<![0-9A-Za-z])" + re.escape(needle) + r"(?![0-9A-Za-z])")
        hits = [where for where, hay in haystacks if needle in hay and pat.search(hay)]
        if hits:
            found[needle] = hits
    return found


def test_redacted_run_holds_no_secret_canary_id_or_token(corpus):
    root, corpus_path, secrets, ids = corpus
    run, logs = _report(root, corpus_path, "redacted", "--redact", env={"LMLEAK_REDACT_KEY": KEY})
    summary = json.loads((run / "summary.json").read_text())
    assert summary["redacted"] is True and summary["unique_sequences"] > 0  # the model did leak
    assert summary["redaction"]["key"] == "environment variable LMLEAK_REDACT_KEY"
    assert summary["ledger"]["kept"] is False
    assert not (run / "ledger").exists()
    for name in ("occurrences.parquet", "sequences.parquet"):
        assert "token_ids" not in pq.read_schema(run / name).names
    assert (run / "report.html").exists()
    found = _scan(run, None, [*secrets, *ids, KEY], logs)
    assert found == {}


def test_the_scan_finds_secrets_and_ids_in_an_unredacted_run(corpus):
    """Positive control: the same scan over the plain run finds the leaked text and the ids."""
    root, corpus_path, secrets, ids = corpus
    run, logs = _report(root, corpus_path, "plain")
    found = _scan(run, None, [*secrets, *ids], logs)
    assert set(ids) <= set(found)
    assert any(s in found for s in secrets)
    # redacted by default (docs/security.md): the HTML report and the console output, also in this plain run
    assert not {w for hits in found.values() for w in hits if w == "logs" or w.startswith("report.html")}


def _bpe_fake(corpus_path: Path):
    from lmleak.models.fake import FakeLM, NGramModule
    from lmleak.models.small import build_tokenizer
    from lmleak.models.tokenizer import HFTokenizer

    texts = [json.loads(line)["text"] for line in corpus_path.read_text().splitlines()]
    tok = HFTokenizer(build_tokenizer(texts, kind="bpe", vocab_size=400))
    seqs = [[tok.bos_id, *tok.encode(t)] for t in texts]
    return FakeLM(NGramModule(seqs, tok.vocab_size, 8, 0.01), tok, name="fake-bpe", max_length=64)


@pytest.mark.parametrize("redact", [True, False])
def test_no_integer_column_decodes_to_a_secret(corpus, redact):
    """Every integer column of every Parquet file (the ledger's token ids included, when kept)
    decoded with the audited model's tokenizer; the plain run is the positive control."""
    from lmleak.data.loaders import load_corpus
    from lmleak.render.html import render_report
    from lmleak.report.leakage import ReportConfig, run_report

    root, corpus_path, secrets, _ = corpus
    model = _bpe_fake(corpus_path)
    run = root / f"bpe-{redact}"
    summary = run_report(model, load_corpus(corpus_path), run, ReportConfig(k=(1, 3), redact=redact))
    assert summary["unique_sequences"] > 0
    render_report(run)
    found = _scan(run, model.tokenizer, secrets, "")
    decoded = {s for s, hits in found.items() if any("decoded" in w for w in hits)}
    if redact:
        assert found == {}
    else:  # the ledger's token ids give back every secret of the corpus
        assert decoded == set(secrets)


def test_keyed_ids_join_under_one_key_and_differ_under_another(corpus, tmp_path):
    root, corpus_path, _, _ = corpus
    key_a, key_b = tmp_path / "a.key", tmp_path / "b.key"
    key_a.write_text("a" * 32)
    key_b.write_text("b" * 32)
    runs = [
        _report(root, corpus_path, f"keyed-{n}", "--redact", "--redact-key-file", str(k))[0]
        for n, k in (("a1", key_a), ("a2", key_a), ("b", key_b))
    ]
    users = [pq.read_table(r / "occurrences.parquet").column("user_id").to_pylist() for r in runs]
    assert users[0] == users[1] and set(users[0]).isdisjoint(users[2])
    assert (
        json.loads((runs[0] / "summary.json").read_text())["redaction"]["key"] == "key file (outside the run)"
    )
    rnd = _report(root, corpus_path, "random-key", "--redact")[0]
    assert json.loads((rnd / "summary.json").read_text())["redaction"]["key"] == "random, discarded"
    assert set(pq.read_table(rnd / "occurrences.parquet").column("user_id").to_pylist()).isdisjoint(users[0])


@pytest.mark.parametrize("case", ["key-in-run", "short-key", "unredacted-run"])
def test_redaction_refuses_what_would_leak(corpus, tmp_path, case):
    root, corpus_path, _, _ = corpus
    run = tmp_path / "run"
    args = [
        "report",
        "--model",
        f"fake:{corpus_path}",
        "--corpus",
        str(corpus_path),
        "--out",
        str(run),
        "--redact",
    ]
    if case == "key-in-run":
        run.mkdir()
        (run / "k.key").write_text("x" * 32)
        args += ["--redact-key-file", str(run / "k.key")]
    elif case == "short-key":
        (tmp_path / "k.key").write_text("short")
        args += ["--redact-key-file", str(tmp_path / "k.key")]
    else:
        assert _cli(*args[:-1], "--quiet").exit_code == 0  # a plain report first: its ledger holds token ids
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert "redact" in res.output.lower() or "key" in res.output.lower()
    if case == "short-key":
        assert not run.exists()  # refused before anything is written
    assert not (run / "occurrences.parquet").exists() or case == "unredacted-run"


def test_a_redacted_run_is_not_rendered_with_text(corpus):
    root, corpus_path, _, _ = corpus
    run = root / "redacted-show-text"
    assert (
        _cli(
            "report",
            "--model",
            f"fake:{corpus_path}",
            "--corpus",
            str(corpus_path),
            "--out",
            str(run),
            "--redact",
            "--quiet",
        ).exit_code
        == 0
    )
    res = CliRunner().invoke(app, ["render", str(run), "--show-text"])
    assert res.exit_code == 2 and "redacted" in res.output
    assert not (run / "report.html").exists()


# ---------------------------------------------------------------------------------------- audits


@pytest.fixture(scope="module")
def audit_inputs(corpus):
    """An audit config over the corpus: report, exposure, membership, probing and extraction."""

    root, corpus_path, secrets, ids = corpus
    texts = [json.loads(line)["text"] for line in corpus_path.read_text().splitlines()]
    (root / "members.txt").write_text("\n".join(t.split("\n")[1] for t in texts if "\n" in t) + "\n")
    from lmleak.data.synth.customersim import synthesize

    unseen = synthesize(root / "unseen", users=4, dialogs_per_user=2, seed=9)
    others = [json.loads(x)["text"].split("\n")[1] for x in unseen["corpus"].read_text().splitlines()]
    (root / "non_members.txt").write_text("\n".join(others) + "\n")
    # the probe's subjects also name relatives and universities: every subject value is a needle
    subjects = [json.loads(x) for x in (corpus_path.parent / "subjects.jsonl").read_text().splitlines()]
    names = {s["name"] for s in subjects} | {v for s in subjects for v in s["relations"].values()}
    cfg = {
        "corpus": {"path": str(corpus_path)},
        "models": [{"name": "memorizer", "path": f"fake:{corpus_path}"}],
        "analyses": {
            "report": {"k": [1, 3]},
            "exposure": {"canaries": str(corpus_path.parent / "canaries.jsonl")},
            "mia": {"members": "members.txt", "non_members": "non_members.txt", "group_size": 4},
            "probe": {"subjects": str(corpus_path.parent / "subjects.jsonl"), "level": "twin", "beams": 1},
            "extract": {
                "num_samples": 4,
                "max_new_tokens": 8,
                "top_n": 4,
                "min_match_tokens": 6,
                "prefix_tokens": 4,
                "suffix_tokens": 4,
                "discoverable_docs": 2,
            },
        },
    }
    return root, corpus_path, cfg, sorted(set(secrets) | names), ids


def _audit(root: Path, cfg: dict, name: str, *extra: str, env: dict[str, str] | None = None):
    import yaml

    (root / f"{name}.yaml").write_text(yaml.safe_dump({**cfg, "out": name}))
    res = _cli("audit", str(root / f"{name}.yaml"), *extra, env=env)
    assert res.exit_code == 0, res.output
    return root / name, res.output


@pytest.mark.parametrize("redact", [True, False])
def test_a_redacted_audit_holds_no_secret_canary_id_or_token(audit_inputs, monkeypatch, redact):
    """Every stage of `lmleak audit --redact` (report, exposure, mia, probe, extract): every byte,
    every Parquet value and every integer column decoded with the model's (digit-splitting)
    tokenizer, the audit log and the console output. The unredacted audit is the positive control."""
    import lmleak.audit.runner as runner

    root, corpus_path, cfg, needles, ids = audit_inputs
    model = _bpe_fake(corpus_path)
    monkeypatch.setattr(runner, "load_model", lambda spec, *a, **k: model)
    name = f"audit-{'redacted' if redact else 'plain'}"
    run, logs = _audit(root, cfg, name, *(["--redact"] if redact else []), env={"LMLEAK_REDACT_KEY": KEY})
    summary = json.loads((run / "summary.json").read_text())
    stages = summary["models"]["memorizer"]["stages"]
    assert set(stages) == {"report", "exposure", "mia", "probe", "extract"}, summary["models"]
    head = summary["models"]["memorizer"]["headline"]
    assert head["unique_sequences"] > 0 and head["max_exposure"] > 0  # the model did leak
    assert summary["redacted"] is redact
    found = _scan(run, model.tokenizer, [*needles, *ids, KEY], logs)
    if redact:
        assert summary["redaction"]["key"] == "environment variable LMLEAK_REDACT_KEY"
        assert found == {}
        assert not list(run.rglob("ledger")) and not list(run.rglob("*.png"))
        for p in run.rglob("*.parquet"):
            assert "token_ids" not in pq.read_schema(p).names
        res = CliRunner().invoke(app, ["render", str(run), "--show-text"])
        assert res.exit_code == 2 and "redacted" in res.output
    else:  # the same scan finds the secrets, the canaries and the ids in the plain audit
        assert set(ids) <= set(found)
        canaries = [json.loads(x)["secret"] for x in (corpus_path.parent / "canaries.jsonl").open()]
        assert set(canaries) <= set(found)
        decoded = {s for s, hits in found.items() if any("decoded" in w for w in hits)}
        assert set(canaries) <= decoded  # the ledger's token ids give them back


def test_a_redacted_audit_hashes_ids_under_the_runs_one_key(audit_inputs, tmp_path):
    """One key for every stage: the report's and the probe's hashed user ids join; a config's
    `redact: true` is the same as --redact; a key file inside the run is refused before any write."""
    root, corpus_path, cfg, _, _ = audit_inputs
    probe = {**cfg["analyses"]["probe"], "templates": 1}
    small = {**cfg, "analyses": {"report": {"k": [1]}, "probe": probe}, "redact": True}
    key = tmp_path / "audit.key"
    key.write_text("z" * 32)
    run, _ = _audit(root, small, "audit-keyed", "--redact-key-file", str(key))
    report_users = set(
        pq.read_table(run / "models/memorizer/report/occurrences.parquet")["user_id"].to_pylist()
    )
    probe = pq.read_table(run / "models/memorizer/probe/likelihoods.parquet")
    assert "subject_id" in probe.column_names and set(probe["subject_id"].to_pylist()) & report_users
    assert json.loads((run / "summary.json").read_text())["redaction"]["key"] == "key file (outside the run)"
    # a rerun under the same key resumes; under another key every stage runs again (ids must join)
    _, again = _audit(root, small, "audit-keyed", "--redact-key-file", str(key))
    assert again.count("complete, skipped") == 2, again
    other = tmp_path / "other.key"
    other.write_text("w" * 32)
    _, rerun = _audit(root, small, "audit-keyed", "--redact-key-file", str(other))
    assert "complete, skipped" not in rerun
    rehashed = set(pq.read_table(run / "models/memorizer/report/occurrences.parquet")["user_id"].to_pylist())
    assert rehashed.isdisjoint(report_users)
    import yaml

    (root / "inrun.yaml").write_text(yaml.safe_dump({**small, "out": "audit-inrun"}))
    (root / "audit-inrun").mkdir()
    (root / "audit-inrun" / "k.key").write_text("y" * 32)
    res = CliRunner().invoke(
        app, ["audit", str(root / "inrun.yaml"), "--redact-key-file", str(root / "audit-inrun" / "k.key")]
    )
    assert res.exit_code == 2 and "key" in res.output.lower(), res.output
    assert sorted(p.name for p in (root / "audit-inrun").iterdir()) == ["k.key"]


def test_a_bad_corpus_leaves_no_run_directory(tmp_path):
    """The corpus is read before the run directory is created: a bad one exits 2 and leaves nothing."""
    import yaml

    (tmp_path / "corpus.jsonl").write_text('{"user_id": "u1", "text": "fine"}\n{not json\n')
    cfg = {
        "out": "run",
        "corpus": {"path": "corpus.jsonl"},
        "models": [{"name": "m", "path": f"fake:{tmp_path / 'corpus.jsonl'}"}],
        "analyses": {"report": {"k": [1]}},
    }
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(cfg))
    res = CliRunner().invoke(app, ["audit", str(tmp_path / "audit.yaml")])
    assert res.exit_code == 2, res.output
    assert "corpus.jsonl" in res.output
    assert not (tmp_path / "run").exists()


def test_a_stage_folder_is_copied_through_whitelists(tmp_path):
    """redact_stage_dir: text columns and unknown JSON or files stay behind, ids are keyed, labels
    and numbers are kept; a new text column is dropped without anyone listing it."""
    import pandas as pd

    from lmleak.report.redaction import Redactor, redact_stage_dir
    from lmleak.runs import write_parquet

    src = tmp_path / "stage"
    write_parquet(
        pd.DataFrame(
            {
                "subject_id": ["user-1"],
                "target_type": ["phone"],
                "prompt": ["The phone number of John Doe is"],
                "brand_new_text": ["(555) 555-0100"],
                "exact_match": [True],
                "likelihood": [0.5],
            }
        ),
        src / "likelihoods.parquet",
    )
    write_parquet(pd.DataFrame({"text": ["(555) 555-0100"], "rank": [1]}), src / "passes" / "p" / "s.parquet")
    (src / "summary.json").write_text(
        json.dumps({"attack": "propile", "auc": 0.7, "secret": "(555) 555-0100", "by_user": {"user-1": 1.0}})
    )
    (src / "model").mkdir()
    (src / "model" / "tokenizer.json").write_text(json.dumps({"vocab": {"doe": 5}}))
    (src / "roc.png").write_bytes(b"John Doe")
    r = Redactor(b"r" * 32, "test")
    written = redact_stage_dir(src, tmp_path / "out", r)
    assert sorted(written) == ["likelihoods.parquet", "summary.json"]
    table = pq.read_table(tmp_path / "out" / "likelihoods.parquet").to_pydict()
    assert set(table) == {"subject_id", "target_type", "exact_match", "likelihood"}
    assert table["subject_id"] == [r.hash("user-1", kind="user_id")] and table["target_type"] == ["phone"]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["attack"] == "propile" and summary["auc"] == 0.7 and summary["secret"] is None
    assert summary["redacted"] is True and "user-1" not in summary["by_user"]


@pytest.mark.parametrize(
    "case",
    ["not-a-bool", "show-text-in-config", "show-text-with-flag", "key-file-without-redact", "unredacted-run"],
)
def test_a_redacted_audit_refuses_what_would_show_text_before_any_write(tmp_path, case):
    import yaml

    (tmp_path / "corpus.jsonl").write_text('{"user_id": "u1", "text": "hello there"}\n')
    cfg = {
        "out": "run",
        "corpus": {"path": "corpus.jsonl"},
        "models": [{"name": "m", "path": f"fake:{tmp_path / 'corpus.jsonl'}"}],
        "analyses": {"report": {"k": [1]}},
        "redact": "yes" if case == "not-a-bool" else case == "show-text-in-config",
        "render": {"show_text": case.startswith("show-text")},
    }
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(cfg))
    extra = {
        "show-text-with-flag": ["--redact"],
        "key-file-without-redact": ["--redact-key-file", "k.key"],
        "unredacted-run": ["--redact"],
    }
    if case == "unredacted-run":  # a plain audit first: its report's ledger holds token ids
        assert CliRunner().invoke(app, ["audit", str(tmp_path / "audit.yaml"), "--quiet"]).exit_code == 0
        before = sorted(p for p in (tmp_path / "run").rglob("*"))
    res = CliRunner().invoke(app, ["audit", str(tmp_path / "audit.yaml"), *extra.get(case, [])])
    assert res.exit_code == 2, res.output
    assert ("redact" in res.output) and len(res.output.strip().splitlines()) == 1, res.output
    if case == "unredacted-run":
        assert sorted(p for p in (tmp_path / "run").rglob("*")) == before
    else:
        assert not (tmp_path / "run").exists()


# ------------------------------------------------------- the standalone commands (issue 25 item 7)
# exposure, mia, probe run, extract and dp-audit run each take --redact; every file of a redacted run
# is scanned as the audit's are, and the unredacted run of the same command is the positive control.
STANDALONE = ("exposure", "mia", "probe run", "extract", "dp-audit run")
DP_AUDIT_M, DP_AUDIT_SEED = 8, 4


def _standalone_args(command: str, root: Path, corpus_path: Path, run: Path) -> list[str]:
    data = corpus_path.parent
    model = ["--model", f"fake:{corpus_path}"]
    return {
        "exposure": ["exposure", *model, "--canaries", str(data / "canaries.jsonl")],
        "mia": ["mia", *model, "--members", str(root / "members.txt"), "--non-members",
                str(root / "non_members.txt"), "--group-size", "4"],
        "probe run": ["probe", "run", *model, "--subjects", str(data / "subjects.jsonl"), "--level", "twin",
                      "--beams", "1", "--limit", "3"],
        "extract": ["extract", *model, "--corpus", str(corpus_path), "--num-samples", "4", "--max-new-tokens",
                    "8", "--top-n", "4", "--min-match-tokens", "6", "--prefix-tokens", "4", "--suffix-tokens",
                    "4", "--discoverable-docs", "2"],
        "dp-audit run": ["dp-audit", "run", "--corpus", str(corpus_path), "--mode", "nodp", "--m",
                         str(DP_AUDIT_M), "--seed", str(DP_AUDIT_SEED), "--epochs", "1", "--width", "16",
                         "--heads", "2", "--layers", "1", "--seq-len", "32", "--vocab-size", "300"],
    }[command] + ["--out", str(run)]  # fmt: skip


@pytest.fixture(scope="module")
def standalone_runs(audit_inputs, tmp_path_factory):
    """Each command run twice through the CLI (plain, and --redact under one key), the memorising
    model in place of ``fake:`` loading: a FakeLM over a digit-splitting BPE, as in the audit test."""
    import importlib

    from lmleak.attacks.dp_audit import make_canaries

    root, corpus_path, _, needles, ids = audit_inputs
    model = _bpe_fake(corpus_path)
    mp = pytest.MonkeyPatch()
    # exposure and extraction import the loader when they run (their settings stay cheap to import)
    for name in ("models.loading", "attacks.membership", "probe.commands"):
        module = importlib.import_module(f"lmleak.{name}")  # the package re-exports functions of these names
        mp.setattr(module, "load_model", lambda spec, *a, **k: model)
    dp_canaries = make_canaries(DP_AUDIT_M, seed=DP_AUDIT_SEED)
    needles = sorted({*needles, *(c["secret"] for c in dp_canaries), *(c["text"] for c in dp_canaries)})
    out = tmp_path_factory.mktemp("standalone")
    runs = {}
    try:
        for command in STANDALONE:
            for redact in (False, True):
                run = out / f"{command.replace(' ', '-')}-{'redacted' if redact else 'plain'}"
                res = _cli(*_standalone_args(command, root, corpus_path, run), *(["--redact"] if redact else []),
                           env={"LMLEAK_REDACT_KEY": KEY})  # fmt: skip
                assert res.exit_code == 0, (command, redact, res.output)
                runs[command, redact] = (run, res.output)
    finally:
        mp.undo()
    return runs, model, needles, ids


@pytest.mark.parametrize("command", STANDALONE)
def test_a_redacted_standalone_run_holds_no_secret_canary_id_or_token(standalone_runs, command):
    """Every file of `lmleak COMMAND --redact` (bytes, Parquet values, integer columns decoded with the
    model's tokenizer) and its console output: no corpus secret, canary, subject value, user or doc
    id, and not the key; the unredacted run of the same command finds them (the positive control)."""
    runs, model, needles, ids = standalone_runs
    tokenizer = model.tokenizer
    plain_run, plain_logs = runs[command, False]
    if command == "dp-audit run":  # its own trained model: the same seed learns the same tokenizer
        from lmleak.models.small import load_small_model

        tokenizer = load_small_model(plain_run / "model").tokenizer
    run, logs = runs[command, True]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["redacted"] is True
    assert summary["redaction"]["key"] == "environment variable LMLEAK_REDACT_KEY"
    assert summary["scoring_convention"] == "every token after the start token is scored"
    assert summary["bos_token_id"] == json.loads((plain_run / "summary.json").read_text())["bos_token_id"]
    assert not list(run.rglob("*.png")) and not list(run.rglob("*.safetensors"))
    assert _scan(run, tokenizer, [*needles, *ids, KEY], logs) == {}
    found = _scan(plain_run, tokenizer, [*needles, *ids], plain_logs)
    assert found, f"the unredacted {command} run shows none of the planted values: the scan proves nothing"
    # what docs/security.md says is redacted by default: the HTML report and the console output (but for
    # exposure's table of canary secrets) hold none of them even in the unredacted run
    shown = {w for hits in found.values() for w in hits if w == "logs" or w.startswith("report.html")}
    assert shown == ({"logs"} if command == "exposure" else set()), shown


def test_a_standalone_command_refuses_what_would_leak_before_any_work(audit_inputs, tmp_path):
    """The key handling of `report --redact`: a key file inside the run, a short key, a key file without
    --redact, and a run folder that holds unredacted results, all exit 2 before anything is written."""
    root, corpus_path, _, _, _ = audit_inputs
    run = tmp_path / "run"
    args = _standalone_args("exposure", root, corpus_path, run)
    (tmp_path / "short.key").write_text("short")
    res = CliRunner().invoke(app, [*args, "--redact", "--redact-key-file", str(tmp_path / "short.key")])
    assert res.exit_code == 2 and "key" in res.output and not run.exists(), res.output
    res = CliRunner().invoke(app, [*args, "--redact-key-file", str(tmp_path / "short.key")])
    assert res.exit_code == 2 and "--redact-key-file needs --redact" in res.output and not run.exists()
    run.mkdir()
    (run / "k.key").write_text("x" * 32)
    res = CliRunner().invoke(app, [*args, "--redact", "--redact-key-file", str(run / "k.key")])
    assert res.exit_code == 2 and "inside the run" in res.output, res.output
    assert sorted(p.name for p in run.iterdir()) == ["k.key"]
    (run / "summary.json").write_text(json.dumps({"attack": "canary_exposure", "secret": "555-0100"}))
    res = CliRunner().invoke(app, [*args, "--redact"])
    assert res.exit_code == 2 and "unredacted" in res.output, res.output
