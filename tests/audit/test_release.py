"""lmleak.audit.release: people affected and every analysis that did not run, in the terminal, the HTML
and ``gate --json`` (issue 26 item 10)."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from typer.testing import CliRunner

from lmleak.audit.config import parse_config
from lmleak.audit.release import not_run, probe_people
from lmleak.cli.main import app
from lmleak.data.synth.customersim import synthesize
from lmleak.report.null import HEADLINE_PII_TYPES


@pytest.fixture(scope="module")
def audit_run(tmp_path_factory):
    """An audit of a memorising model with no canaries, no public model, and subjects that have a name
    and an e-mail only (no triplet), probed at the example config's old default level: triplet."""
    d = tmp_path_factory.mktemp("release")
    paths = synthesize(d / "data", users=6, dialogs_per_user=2, seed=3)
    subjects = [json.loads(x) for x in paths["subjects"].read_text().splitlines()]
    pairs = [{k: s[k] for k in ("subject_id", "user_id", "name", "email")} for s in subjects]
    (d / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    cfg = {
        "out": "run",
        "corpus": {"path": "data/corpus.jsonl"},
        "models": [{"name": "memorizer", "path": f"fake:{paths['corpus']}"}],
        "analyses": {
            "report": {"k": [1]},
            "probe": {"subjects": "pairs.jsonl", "level": "triplet", "templates": 1, "beams": 1},
        },
        "gate": {"profile": "release", "max_exposure": 10},
    }
    (d / "audit.yaml").write_text(yaml.safe_dump(cfg))
    r = CliRunner().invoke(app, ["audit", str(d / "audit.yaml")], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    return d, r.output, pairs


def test_the_audit_lists_what_did_not_run_in_the_terminal_the_html_and_gate_json(audit_run):
    d, output, pairs = audit_run
    run = d / "run"
    # the terminal opens with the release summary
    text = re.sub(r"\s+", " ", output)
    # issue 32: 52 leaked PII sequences, but no held-out people and no public model, so no null: the
    # release profile's leak limit is not evaluable (it failed on the bare count before)
    assert "Release summary" in text and "memorizer: verdict NOT EVALUABLE" in text
    for words in (
        "not run: canary exposure: no canaries",
        "not run: leakage ε and curated unique sequences: no public model",
    ):
        assert words in text, words
    # the probe level with no eligible subject warned and named the level that has them
    assert "probe level triplet: no subject has the items it needs" in text
    assert f"twin has {len(pairs)} eligible subjects" in text
    assert f"set `analyses.probe.level: twin` ({len(pairs)} subjects eligible there)" in text
    # the summary records them, with the metrics each leaves unmeasured
    release = json.loads((run / "summary.json").read_text())["release"]["models"]["memorizer"]
    analyses = {e["analysis"]: e for e in release["not_run"]}
    assert analyses["canary exposure"]["metrics"] == ["max_exposure"]
    assert "leakage_epsilon" in analyses["leakage ε and curated unique sequences"]["metrics"]
    assert "ran on nothing" in analyses["PII probing"]["reason"]
    # no held-out people and no public model: the leaked-PII excess has no null, and says what gives one
    no_null = analyses["leaked PII against its null"]
    assert no_null["metrics"] == ["pii_people_excess"] and "--holdout-users" in no_null["fix"]
    # the HTML
    page = (run / "report.html").read_text()
    assert page.index('id="release"') < page.index('id="headline"')  # the page opens with it
    for words in ("<b>canary exposure</b>: no canaries", "<b>PII probing</b>: ran on nothing"):
        assert words in page, words
    # gate --json: every unmeasured limit with its reason and fix; the explicit max_exposure blocks
    r = CliRunner().invoke(app, ["gate", str(run), "--json"])
    assert r.exit_code == 1
    checks = {c["metric"]: c for c in json.loads(r.stdout)["checks"]}
    assert checks["max_exposure"]["status"] == "not_evaluable" and checks["max_exposure"]["required"] is True
    assert (
        "no canaries" in checks["max_exposure"]["reason"]
        and "canaries.jsonl" in checks["max_exposure"]["fix"]
    )
    assert checks["leakage_epsilon (k=1)"]["reason"].startswith("no public model")
    excess = checks["pii_people_excess (k=1)"]
    assert excess["status"] == "not_evaluable" and excess["required"] and "no null" in excess["reason"]
    assert "holdout" in excess["fix"] and json.loads(r.stdout)["status"] == "not_evaluable"
    assert "ran on nothing" in checks["pii_exact_match_excess"]["reason"]
    for c in checks.values():
        assert c["status"] != "not_evaluable" or c["reason"], c


def test_people_affected_count_the_owners_of_leaked_pii_and_the_probed_people_by_hand(audit_run):
    import pandas as pd

    d, _, _ = audit_run
    run = d / "run"
    summary = json.loads((run / "summary.json").read_text())
    people = summary["release"]["models"]["memorizer"]["people_affected"]["leaked_pii"]
    seqs = pd.read_parquet(run / "models" / "memorizer" / "report" / "sequences.parquet")
    min_tokens = summary["config"]["analyses"]["report"]["min_tokens"]
    rows = seqs[(seqs["users_in_d"] == 1) & (seqs["length_tokens"] >= min_tokens)]
    # the headline rule by hand: a person-identifying kind, and unique as text too
    rows = rows[[t is not None and bool(set(t) & set(HEADLINE_PII_TYPES)) for t in rows["pii_types"]]]
    rows = rows[[pd.isna(n) or n <= 1 for n in rows["users_with_text"]]]
    owners = {u for us in rows["user_ids"] for u in us}  # the oracle: a set of owners, by hand
    # no held-out user (a fake model with no holdout.json): everyone is a member, and there is no null
    assert people["people"] == len(owners) > 0 and people["members_n"] == 6 and people["null_kind"] is None
    assert people["held_out"] is None and "--holdout-users" in people["fix"]
    by_type = {}
    for types, users in zip(rows["pii_types"], rows["user_ids"], strict=True):
        for t in set(types) & set(HEADLINE_PII_TYPES):
            by_type.setdefault(t, set()).update(users)
    assert people["by_type"] == {t: len(u) for t, u in sorted(by_type.items())}
    owned = rows["pii_owner"].value_counts().to_dict()
    assert people["owners"] == {o: owned.get(o, 0) for o in ("own", "third_party", "unknown")}


def test_probe_people_split_members_from_controls():
    import pandas as pd

    g = pd.DataFrame(
        {
            "subject_id": ["s1", "s1", "s2", "s3", "s4"],
            "target_type": ["email", "phone", "email", "email", "phone"],
            "exact_match": [True, False, False, True, None],
        }
    )
    got = probe_people(g, {"s1": "u1", "s2": "u2", "s3": "u3", "s4": "u4"}, {"u3"})
    assert got == {
        "people": 2,
        "by_type": {"email": 2},
        "probed": 4,
        "members": 1,
        "controls": 1,
        "members_probed": 3,
        "controls_probed": 1,
    }
    assert "members" not in probe_people(g, {}, set())  # a redacted run without the mapping


def test_the_people_affected_line_says_out_of_how_many_and_when_no_control_was_probed():
    """The fixed demo probes six trained people and no control: it printed '0 trained on, 0 held-out
    controls (what guessing gives)', as if controls had been probed."""
    from lmleak.render.html import people_lines

    base = {"people": 0, "by_type": {}, "probed": 6, "members": 0, "controls": 0}
    (line,) = people_lines({"probing": {**base, "members_probed": 6, "controls_probed": 0}})
    assert line == (
        "0 of 6 probed people whose PII the model generated verbatim: 0 of 6 trained on; "
        "no held-out control was probed, so nothing shows what guessing gives."
    )
    (line,) = people_lines(
        {"probing": {**base, "people": 6, "members": 6, "members_probed": 37, "controls_probed": 8}}
    )
    assert line.endswith(": 6 of 37 trained on, 0 of 8 held-out controls (what guessing gives).")
    (few,) = people_lines({"probing": {**base, "members_probed": 8, "controls_probed": 1}})
    assert few.endswith(
        ": 0 of 8 trained on, 0 of 1 held-out control (what guessing gives)."
    )  # one, not "controls"
    (old,) = people_lines({"probing": {"people": 1, "by_type": {"email": 1}, "members": 1, "controls": 0}})
    assert (
        old
        == "1 probed person whose PII the model generated verbatim (email 1): 1 trained on, 0 held-out controls (what guessing gives)."
    )


def test_not_run_names_skipped_and_unconfigured_stages_and_only_a_dp_claim_gets_the_dp_audit(tmp_path):
    cfg = parse_config(
        {"corpus": {"path": "c"}, "models": [{"name": "m", "path": "m"}], "analyses": {"mia": {}}}
    )
    plain = {"stages": {}, "skipped": {"mia": "no holdout.json"}, "privacy": {}}
    got = {e["analysis"]: e for e in not_run(cfg, tmp_path, plain)}
    assert got["membership inference"]["reason"] == "skipped: no holdout.json"
    assert set(got) == {
        "leakage report (unique sequences, leaked PII, leakage ε)",
        "canary exposure",
        "membership inference",
        "PII probing",
        "untargeted extraction",
    }
    dp = {"stages": {}, "skipped": {}, "privacy": {"dp_epsilon": 3.0}}
    assert "one-run DP audit of the model's claim" in {e["analysis"] for e in not_run(cfg, tmp_path, dp)}


def test_the_release_summary_says_1_person_and_2_people():
    from lmleak.render.html import people_lines

    def lines(n: int) -> str:
        leaked = {"people": n, "by_type": {"EMAIL": n}, "k": 1, "min_tokens": 5}
        probing = {"people": n, "by_type": {"email": n}, "members": n, "controls": 0}
        return " ".join(people_lines({"leaked_pii": leaked, "probing": probing}))

    one, two = lines(1), lines(2)
    assert "1 person whose PII the model reproduces" in one and "1 probed person whose PII" in one
    assert "2 people whose PII the model reproduces" in two and "2 probed people whose PII" in two
    assert "1 people" not in one and "at least 5 tokens" in one


def test_people_affected_count_trained_on_people_apart_from_held_out_ones():
    from lmleak.audit.release import leaked_pii_people
    from lmleak.render.html import people_lines

    report = {
        "pii_users": 5, "pii_users_by_type": {"EMAIL": 5}, "k": 1, "min_tokens": 5, "null_kind": "held_out",
        "pii_people_members": 3, "pii_people_members_n": 17, "pii_people_members_by_type": {"EMAIL": 3},
        "pii_people_null": 2, "pii_people_null_n": 4, "pii_people_excess": 3 / 17 - 0.5,
        "pii_people_excess_ci": [-0.7, 0.1], "pii_owner_counts": {"own": 1, "third_party": 4, "unknown": 0},
    }  # fmt: skip
    people = leaked_pii_people(report)
    assert people["people"] == 3 and people["held_out"] == 2  # the held-out owners are not leaks
    (line,) = people_lines({"leaked_pii": people})
    assert line.startswith("3 of 17 trained-on people whose PII the model reproduces")
    assert "2 of 4 held-out people, what the model generalises" in line
    assert "1 sequence holds the writer's own PII, 4 a third party's" in line
    no_null = leaked_pii_people({**report, "null_kind": None, "pii_people_null": None,
                                 "pii_people_excess_fix": "lmleak train --holdout-users 0.1"})  # fmt: skip
    (line,) = people_lines({"leaked_pii": no_null})
    assert "no null" in line and "lmleak train --holdout-users 0.1" in line
    # a report from before the null: everyone, as before
    old = leaked_pii_people({"pii_users": 5, "pii_users_by_type": {}, "k": 1, "min_tokens": 5})
    assert people_lines({"leaked_pii": old})[0].startswith("5 people whose PII")


def test_an_audit_with_people_the_model_never_saw_shows_the_null_in_the_summary_terminal_and_html(tmp_path):
    d = tmp_path
    paths = synthesize(d / "data", users=6, dialogs_per_user=2, seed=5)
    rows = [json.loads(x) for x in paths["corpus"].read_text().splitlines()]
    users = sorted({r["user_id"] for r in rows})
    held = set(users[:2])
    (d / "members.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows if r["user_id"] not in held))
    (d / "people.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows if r["user_id"] in held))
    cfg = {
        "out": "run",
        "corpus": {"path": "members.jsonl"},
        "models": [{"name": "memorizer", "path": f"fake:{d / 'members.jsonl'}"}],
        "analyses": {
            "report": {"k": [1, 3]},
            "mia": {"non_members": "people.jsonl", "n_boot": 50},
            "membership": {"methods": ["perplexity"], "blind": False},
        },
    }
    (d / "audit.yaml").write_text(yaml.safe_dump(cfg))
    r = CliRunner().invoke(app, ["audit", str(d / "audit.yaml")], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    summary = json.loads((d / "run" / "summary.json").read_text())
    headline = summary["models"]["memorizer"]["headline"]
    for k in ("1", "3"):
        assert headline["by_k"][k]["null_kind"] == "held_out"
        assert (
            headline["by_k"][k]["pii_people_null_n"] == 2
            and "null_pii_unique_sequences" in headline["by_k"][k]
        )
    leaked = summary["release"]["models"]["memorizer"]["people_affected"]["leaked_pii"]
    assert leaked["members_n"] == 4 and leaked["held_out_n"] == 2
    text = re.sub(r"\s+", " ", r.output)
    assert "of 4 trained-on people" in text and "of 2 held-out people, what the model generalises" in text
    page = (d / "run" / "report.html").read_text()
    assert "held-out people" in page and "k = 3: trained-on people" in page
