"""lmleak.audit.quick: ``lmleak audit --model M --corpus C`` — the config it builds (against a
hand-written one), the written file (what runs), membership from people the model never saw, the
refusals before any work, and the follow-up query."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from lmleak.audit import quick, runner
from lmleak.audit.config import load_config, parse_config, to_dict
from lmleak.audit.nonmembers import NO_NON_MEMBERS, cut_text, quick_command
from lmleak.audit.quick import QuickOptions as Q
from lmleak.audit.release import not_run
from lmleak.data.holdout import Holdout, write_holdout
from lmleak.data.loaders import load_corpus
from lmleak.data.synth.mail import synthesize
from lmleak.errors import ConfigError, CorpusError, DataFileError
from lmleak.models.fake import FakeLM
from lmleak.probe.builder import build_subjects_file
from lmleak.probe.subjects import read_subjects
from lmleak.runs import write_parquet


@pytest.fixture(scope="module")
def mail(tmp_path_factory):
    """A small mailing-list corpus (75 documents, 27 authors) whose headers link names to e-mails."""
    return synthesize(tmp_path_factory.mktemp("mail"), scale=0.05, seed=1)["corpus"]


def _model(folder: Path, held_out: tuple[str, ...] = (), corpus: str | None = None) -> Path:
    """A folder the audit takes for a model (its marker file), with the held-out users it records."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "lmleak_model.json").write_text("{}")
    if held_out:
        write_holdout(folder, Holdout(users=held_out, fraction=0.3, seed=0, corpus=corpus))
    return folder


def _held_out(corpus: Path, n: int = 8) -> tuple[str, ...]:
    users = sorted({d.user_id for d in load_corpus(corpus)})
    return tuple(users[1::3][:n])


def _hand_written(run: Path, model: Path, corpus: Path, *, top: str = "", analyses: str) -> object:
    """A config written by hand, as ``lmleak audit RUN/audit.yaml`` reads it (from the run folder):
    the model and corpus, ``top``-level keys, the ``analyses`` (YAML lines) and the release gate."""
    text = (
        f"out: .\ncorpus: {{path: {corpus}}}\nmodels: [{{name: model, path: {model}}}]\n{top}"
        "analyses:\n  report: {k: [1, 3]}\n"
        + "".join(f"  {line.strip()}\n" for line in analyses.splitlines() if line.strip())
        + "gate: {profile: release}\n"
    )
    return parse_config(yaml.safe_load(text), base_dir=str(run))


def test_the_quick_config_is_the_hand_written_one_with_the_same_stages_and_options(tmp_path, mail):
    model = _model(tmp_path / "model", _held_out(mail))
    run = tmp_path / "run"
    cfg = quick.config_for(str(model), mail, Q(out=run))
    hand = _hand_written(
        run,
        model,
        mail,
        analyses="""
        mia: {}
        probe: {subjects: subjects.jsonl, templates: mined}
        """,
    )
    assert cfg == hand
    assert to_dict(cfg) == to_dict(hand) and cfg.base_dir == str(run.resolve())
    assert not run.exists()  # config_for writes nothing


def test_every_option_lands_where_a_hand_written_config_puts_it(tmp_path, mail):
    model = _model(tmp_path / "model")  # no held-out users: the non-members come from --holdout
    people = tmp_path / "people.jsonl"
    people.write_text(json.dumps({"user_id": "stranger", "text": "Hello from someone new."}) + "\n")
    canaries = tmp_path / "canaries.jsonl"
    canaries.write_text(
        json.dumps({"text": "My ID is: 123456", "secret": "123456", "prefix": "My ID is: "}) + "\n"
    )
    public = _model(tmp_path / "public")
    run = tmp_path / "run"
    cfg = quick.config_for(
        str(model), mail, Q(out=run, public_model=str(public), canaries=canaries, holdout=people, redact=True)
    )
    hand = _hand_written(
        run,
        model,
        mail,
        top=f"public_model: {public}\nredact: true\n",
        analyses=f"""
        exposure: {{canaries: {canaries}}}
        mia: {{non_members: {people}}}
        probe: {{subjects: {tmp_path / "run-subjects.jsonl"}, templates: mined}}
        """,
    )
    assert cfg == hand  # redacted: the subjects (PII) lie beside the run, not in it
    named = quick.config_for("smollm2-135m", mail, Q(out=run, public_model="leave-out"))
    assert named.models[0].path == "smollm2-135m" and named.public_model == "leave-out"
    assert named.analyses.mia is not None and named.analyses.mia.non_members is None


def test_the_written_config_reads_back_as_the_config_that_runs(tmp_path, mail):
    model = _model(tmp_path / "model", _held_out(mail))
    plan = quick.plan_quick_audit(str(model), mail, Q(out=tmp_path / "run"))
    assert parse_config(yaml.safe_load(plan.text), base_dir=str(plan.run)) == plan.config
    assert quick._unedited(plan.text) and not quick._unedited(plan.text.replace("k: [1, 3]", "k: [1]"))
    # every decision is explained in the file, and the file says how to rerun it
    assert f"lmleak audit {plan.run / 'audit.yaml'}" in plan.text
    assert "8 users held out of training (holdout.json)" in " ".join(plan.text.split())
    planted = len((mail.parent / "subjects.jsonl").read_text().splitlines())  # the people synth wrote
    assert f"{planted} subjects linked to their PII" in " ".join(plan.text.split())


def test_subjects_are_built_from_the_corpus_and_read_back_by_the_probe(tmp_path, mail):
    """``probe build`` writes ``seen`` (how often each value was seen with the name): the probe reads it."""
    counts = build_subjects_file(mail, tmp_path / "subjects.jsonl")
    subjects = read_subjects(tmp_path / "subjects.jsonl")
    planted = len((mail.parent / "subjects.jsonl").read_text().splitlines())  # the people synth wrote
    assert len(subjects) == counts["subjects"] == planted and all("seen" in s for s in subjects)
    plan = quick.plan_quick_audit(str(_model(tmp_path / "model")), mail, Q(out=tmp_path / "run"))
    assert [s["name"] for s in plan.subjects] == [s["name"] for s in subjects]


def test_the_probe_note_says_how_many_people_the_chosen_level_probes(tmp_path, mail):
    """``level: null`` is triplet whenever anyone has two items, and triplet skips the people with
    one: the note said "the level they have" while most of the people it listed were not probed."""
    plan = quick.plan_quick_audit(str(_model(tmp_path / "model")), mail, Q(out=tmp_path / "run"))
    items = [sum(1 for k in ("phone", "email", "address") if s.get(k)) for s in plan.subjects]
    two, total = sum(1 for n in items if n >= 2), len(plan.subjects)
    assert 0 < two < total  # the mail corpus has both kinds of people
    note = plan.notes["probe"]
    assert f"level null: triplet, which probes {two} of the {total}" in note
    assert f"the other {total - two} have too few items" in note
    assert f"`level: twin` under analyses.probe asks by the name alone and probes {total}" in note


def test_the_probe_note_counts_people_by_user_id_and_labels_third_parties(tmp_path):
    """Issue 32: four subject rows are three people — Ann (u1) writes under two names, Maya is only
    quoted in Ann's messages (a third party: never u1's membership) — and Bo (u2) is held out."""
    docs = [
        ("u1", "From: Ann Lee <ann@example.org>\n\nOn Mon, Maya Lo <maya@example.org> wrote:\n> it fails"),
        ("u1", "From: Annie Lee-Smith <annie@example.net>\n\nfixed"),
        ("u2", "From: Bo Kim <bo@example.org>\n\nthanks"),
    ]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"user_id": u, "text": t}) + "\n" for u, t in docs))
    plan = quick.plan_quick_audit(str(_model(tmp_path / "model", ("u2",))), corpus, Q(out=tmp_path / "run"))
    note = plan.notes["probe"]
    assert note.startswith("4 subjects linked to their PII")
    assert (
        "3 people by user id, 1 of them held out (the controls), 1 third party found only in other "
        "people's documents (membership unknown)"
    ) in note
    maya = next(s for s in plan.subjects if s["name"] == "Maya Lo")
    assert maya["third_party"] and "user_id" not in maya and maya["found_in"] == "u1"
    # no held-out people: nobody is called a member
    bare = quick.plan_quick_audit(str(_model(tmp_path / "bare")), corpus, Q(out=tmp_path / "run2"))
    assert "so every probed person's membership is unknown: made-up people and a guess from the name" in (
        " ".join(bare.notes["probe"].split())
    )


def test_a_corpus_without_linked_pii_leaves_probing_out_and_says_how_to_run_it(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "".join(json.dumps({"user_id": f"u{i}", "text": f"plain text {i}"}) + "\n" for i in range(4))
    )
    plan = quick.plan_quick_audit(str(_model(tmp_path / "model", ("u1",))), corpus, Q(out=tmp_path / "run"))
    assert plan.config.analyses.probe is None and plan.subjects == []
    assert "--method ner" in plan.notes["probe"]


def _fake_run(tmp_path, mail, monkeypatch, **options):
    """quick_audit on a model folder whose weights are a FakeLM fitted on its training users' documents."""
    docs = load_corpus(mail)
    held = set(_held_out(mail))
    trained = [d.text for d in docs if d.user_id not in held]
    model = _model(tmp_path / "model", tuple(sorted(held)), corpus=str(mail))
    (model / "train.json").write_text(json.dumps({"train_users": sorted({d.user_id for d in docs} - held)}))
    fake = FakeLM.from_texts(trained, name="model")
    monkeypatch.setattr(runner, "load_model", lambda spec, **kw: fake)
    run = quick.quick_audit(str(model), mail, Q(out=tmp_path / "run", **options))
    return run, docs, held


def test_the_non_members_are_exactly_the_held_out_users_documents(tmp_path, mail, monkeypatch):
    run, docs, held = _fake_run(tmp_path, mail, monkeypatch)
    scores = pd.read_parquet(run / "models" / "model" / "mia" / "mia_scores.parquet")
    cut = cut_text
    held_texts = {cut(d) for d in docs if d.user_id in held}
    trained_texts = {cut(d) for d in docs if d.user_id not in held}
    train_users = set(json.loads((run.parent / "model" / "train.json").read_text())["train_users"])
    assert not held & train_users
    non = set(scores.loc[scores["member"] == 0, "text"])
    mem = set(scores.loc[scores["member"] == 1, "text"])
    # every distinct held-out text that no training user also wrote, and nothing else
    assert non == held_texts - trained_texts
    assert mem <= trained_texts and not mem & held_texts
    summary = json.loads((run / "models" / "model" / "mia" / "summary.json").read_text())
    assert "users held out of training (holdout.json)" in summary["source"]
    # the run is the file it wrote: rerunning that file reuses every stage
    assert (run / "audit.yaml").exists() and (run / "subjects.jsonl").exists()
    assert (
        load_config(run / "audit.yaml").analyses
        == quick.config_for(str(run.parent / "model"), mail, Q(out=run)).analyses
    )
    _check_probe_counts_people(run, held)  # the same run: no second audit


def test_a_holdout_file_gives_the_non_members_and_the_training_users_the_members(tmp_path, mail, monkeypatch):
    people = tmp_path / "people.jsonl"
    strangers = [f"Stranger {i} writes about gardening, rain and the {i}th bus to town." for i in range(12)]
    people.write_text(
        "".join(json.dumps({"user_id": f"p{i % 4}", "text": t}) + "\n" for i, t in enumerate(strangers))
    )
    run, docs, held = _fake_run(tmp_path, mail, monkeypatch, holdout=people)
    scores = pd.read_parquet(run / "models" / "model" / "mia" / "mia_scores.parquet")
    assert set(scores.loc[scores["member"] == 0, "text"]) == set(strangers)
    assert set(scores.loc[scores["member"] == 1, "text"]) <= {
        cut_text(d) for d in docs if d.user_id not in held
    }
    summary = json.loads((run / "models" / "model" / "mia" / "summary.json").read_text())
    assert "12 documents of the 4 people of" in summary["source"]


def test_a_config_with_mia_and_no_files_runs_from_the_models_holdout(tmp_path, mail, monkeypatch):
    """The EXAMPLE config's `mia:` with no member files works (issue 29): non-members from holdout.json."""
    model = _model(tmp_path / "model", _held_out(mail))
    monkeypatch.setattr(runner, "load_model", lambda spec, **kw: FakeLM.from_texts(["a b c"], name="m"))
    cfg_file = tmp_path / "audit.yaml"
    cfg_file.write_text(
        f"out: run\ncorpus: {{path: {mail}}}\nmodels: [{{name: m, path: {model}}}]\n"
        "analyses:\n  mia:\n    members: null\n    non_members: null\n"
    )
    run = runner.run_audit(load_config(cfg_file))
    summary = json.loads((run / "summary.json").read_text())
    assert summary["models"]["m"]["stages"] == {"mia": "models/m/mia"}
    with pytest.raises(ConfigError, match="members alone would be ignored"):
        parse_config(
            {
                "corpus": {"path": "c"},
                "models": [{"name": "m", "path": "m"}],
                "analyses": {"mia": {"members": "x"}},
            }
        )


def test_without_held_out_people_mia_is_listed_as_not_run_with_the_line_that_runs_it(tmp_path, mail):
    model = _model(tmp_path / "model")
    plan = quick.plan_quick_audit(str(model), mail, Q(out=tmp_path / "run"))
    assert plan.config.analyses.mia is not None  # configured, so the audit says why it is skipped
    why = runner.Auditor(plan.config).mia_source(str(model))
    assert why == NO_NON_MEMBERS
    entry = {"path": str(model), "skipped": {"mia": why}, "stages": {}, "privacy": {}}
    (mia,) = [e for e in not_run(plan.config, tmp_path, entry) if e["analysis"] == "membership inference"]
    line = quick_command(str(model), str(mail.resolve()), out=str(plan.run), holdout="PEOPLE.jsonl")
    assert f"`{line}`" in mia["fix"] and mia["metrics"] == ["mia_auc", "mia_accuracy"]


@pytest.mark.parametrize(
    ("case", "error", "match"),
    [
        ("no-model", ConfigError, "field '--model': 'nope' does not exist"),
        ("not-a-model", ConfigError, "field '--model': .* is a folder but not a model"),
        ("no-corpus", ConfigError, "field '--corpus': corpus .* does not exist"),
        ("bad-row", CorpusError, r"c.jsonl:2: field 'text'"),
        ("no-canaries", ConfigError, "field '--canaries'"),
        (
            "holdout-trained-on",
            ConfigError,
            "field '--holdout': 1 person of .* is a user the model was trained on",
        ),
        (  # a model behind an API has no holdout.json: the message says why u2 counts as trained on
            "holdout-in-corpus-no-holdout-json",
            ConfigError,
            r"\(u2\): they write in .*c.jsonl and the model records no held-out users.* audit a corpus "
            "without their documents",
        ),
        ("holdout-not-in-corpus", ConfigError, "field '--corpus': none of the 1 user the model held out"),
        ("holdout-json-broken", DataFileError, "holdout.json: field 'held_out_users'"),
        ("all-held-out", ConfigError, "every user of .* is held out"),
    ],
)
def test_model_corpus_and_holdout_problems_are_refused_before_anything_is_written(
    tmp_path, case, error, match
):
    corpus = tmp_path / "c.jsonl"
    rows = [{"user_id": "u1", "text": "a b"}, {"user_id": "u2", "text": "c d"}]
    model, options = _model(tmp_path / "model", ("u2",)), {}
    if case == "no-model":
        model = Path("nope")
    elif case == "not-a-model":
        model = tmp_path
    elif case == "no-corpus":
        corpus = tmp_path / "missing.jsonl"
    elif case == "bad-row":
        rows[1]["text"] = ""
    elif case == "no-canaries":
        options["canaries"] = tmp_path / "missing.jsonl"
    elif case == "holdout-trained-on":
        options["holdout"] = tmp_path / "people.jsonl"
        options["holdout"].write_text(json.dumps({"user_id": "u1", "text": "x"}) + "\n")
    elif case == "holdout-in-corpus-no-holdout-json":
        model = _model(tmp_path / "api-like")
        options["holdout"] = tmp_path / "people.jsonl"
        options["holdout"].write_text(json.dumps({"user_id": "u2", "text": "c d"}) + "\n")
    elif case == "holdout-not-in-corpus":
        model = _model(tmp_path / "other", ("u9",))
    elif case == "holdout-json-broken":
        (model / "holdout.json").write_text(json.dumps({"held_out_users": "u2"}))
    elif case == "all-held-out":
        model = _model(tmp_path / "other", ("u1", "u2"))
    if case != "no-corpus":
        corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(error, match=match):
        quick.quick_audit(str(model), corpus, Q(out=tmp_path / "run", **options))
    assert not (tmp_path / "run").exists()


def test_an_edited_config_or_subjects_file_is_never_overwritten(tmp_path, mail):
    model = _model(tmp_path / "model", _held_out(mail))
    plan = quick.plan_quick_audit(str(model), mail, Q(out=tmp_path / "run"))
    plan.run.mkdir()
    (plan.run / "audit.yaml").write_text(plan.text)
    quick._check_overwrite(plan)  # unchanged since written: a rerun may rewrite it
    (plan.run / "audit.yaml").write_text(plan.text.replace("k: [1, 3]", "k: [1]"))
    with pytest.raises(ConfigError, match="audit.yaml was edited"):
        quick._check_overwrite(plan)
    (plan.run / "audit.yaml").write_text(plan.text)
    (plan.run / "subjects.jsonl").write_text('{"name": "Someone Else"}\n')
    with pytest.raises(ConfigError, match="subjects.jsonl differs"):
        quick._check_overwrite(plan)


def test_the_cli_takes_a_config_or_model_and_corpus_never_both(tmp_path):
    from lmleak.cli.main import app

    both = CliRunner().invoke(app, ["audit", str(tmp_path / "a.yaml"), "--model", "m"])
    assert both.exit_code == 2 and "a config file and --model given" in both.output
    alone = CliRunner().invoke(app, ["audit", "--model", "m"])
    assert alone.exit_code == 2 and "--model and --corpus go together" in " ".join(alone.output.split())


def _sequences_run(run: Path, ratio: float | None) -> Path:
    rows = [
        {
            "k": 1,
            "text": "unique one",
            "sequence_id": "a",
            "length_tokens": 4,
            "pii_types": ["EMAIL"],
            "users_in_d": 1,
            "perplexity_ratio": ratio,
        },
        {
            "k": 1,
            "text": "shared",
            "sequence_id": "b",
            "length_tokens": 9,
            "pii_types": [],
            "users_in_d": 3,
            "perplexity_ratio": ratio,
        },
    ]
    write_parquet(pd.DataFrame(rows), run / "models" / "m" / "report" / "sequences.parquet")
    (run / "summary.json").write_text("{}")
    return run


@pytest.mark.parametrize(("public", "redacted"), [(False, False), (True, False), (False, True)])
def test_the_follow_up_query_returns_rows_of_this_run(tmp_path, public, redacted):
    from lmleak.audit.query import empty_columns, query

    run = _sequences_run(tmp_path, 2.5 if public else None)
    gate, line = quick.followups(run, public_model=public, redacted=redacted)
    assert gate == f"lmleak gate {run} --profile release"
    sql = line.split(" ", 3)[3].strip("'")
    assert ("perplexity_ratio" in sql) == public and ("sequence_id" in sql) == redacted
    got = query(run, sql)
    assert len(got) == 1 and got["length_tokens"].tolist() == [4]  # the user-unique sequence only
    assert empty_columns(run, sql) == []


def _check_probe_counts_people(run: Path, held: set[str]) -> None:
    """Issue 32: the probe stage counts people (user ids) and writes the exact-match excess of
    members over the held-out controls, which the headline and the release summary carry."""
    probe = json.loads((run / "models" / "model" / "probe" / "summary.json").read_text())
    subjects = read_subjects(run / "subjects.jsonl")
    probed = set(pd.read_parquet(run / "models" / "model" / "probe" / "generations.parquet")["subject_id"])
    users = {str(s.get("user_id")) for s in subjects if s["subject_id"] in probed}
    people = probe["people"]
    assert people["people_probed"] == len(users) and people["membership"] == "held_out"
    assert people["controls"] == len(users & held) and people["members"] == len(users - held)
    assert probe["pii_exact_match_excess_null"] == "held_out" and "made_up_controls" not in probe
    side = probe["exact_match_people"]
    want = side["members"]["rate"] - side["null"]["rate"]
    assert probe["pii_exact_match_excess"] == pytest.approx(want)
    lo, hi = probe["pii_exact_match_excess_ci"]
    assert lo <= want <= hi
    summary = json.loads((run / "summary.json").read_text())
    headline = summary["models"]["model"]["headline"]
    assert headline["pii_exact_match_excess"] == probe["pii_exact_match_excess"]
    assert headline["pii_exact_match_excess_ci"] == probe["pii_exact_match_excess_ci"]
    probing = summary["release"]["models"]["model"]["people_affected"]["probing"]
    assert (probing["probed"], probing["members_probed"], probing["controls_probed"]) == (
        len(users),
        len(users - held),
        len(users & held),
    )
