"""lmleak.render.users: the report's "People most at risk" table, read from users.parquet."""

from __future__ import annotations

import re

import pandas as pd

from lmleak.render.html import render_report
from lmleak.render.users import MAX_DOCUMENTS, people_at_risk
from lmleak.report.users import REMOVE_DOCUMENTS, RETRAIN_WITHOUT_USER, USER_COLUMNS
from lmleak.runs import write_summary


def _users(rows: list[dict]) -> pd.DataFrame:
    base = {"held_out": False, "documents": 2, "pii_types": [], "unique_sequences": 0, "probe_targets": 3,
            "mia_score": float("nan"), "mia_documents": 0, "mia_p_value": float("nan"), "pii_doc_ids": [],
            "doc_ids": []}  # fmt: skip
    return pd.DataFrame([{**base, **r} for r in rows])[list(USER_COLUMNS)]


def _run(tmp_path, *, redacted: bool = False):
    many = [f"d{i}" for i in range(MAX_DOCUMENTS + 2)]
    table = _users(
        [
            {
                "user_id": "ann",
                "risk_rank": 2,
                "at_risk": True,
                "action": RETRAIN_WITHOUT_USER,
                "pii_sequences": 0,
                "probe_hits": 1,
            },
            {
                "user_id": "bo",
                "risk_rank": 1,
                "at_risk": True,
                "action": REMOVE_DOCUMENTS,
                "pii_sequences": 7,
                "pii_types": ["EMAIL", "PHONE"],
                "probe_hits": 0,
                "pii_doc_ids": many,
                "doc_ids": many,
                "mia_score": -3.25,
                "mia_documents": 2,
                "mia_p_value": 0.125,
            },
            {
                "user_id": "cy",
                "risk_rank": 3,
                "at_risk": False,
                "action": None,
                "pii_sequences": 0,
                "probe_hits": 0,
            },
        ]  # fmt: skip
    )
    (tmp_path / "models" / "m").mkdir(parents=True)
    table.to_parquet(tmp_path / "models" / "m" / "users.parquet")
    record = {"path": "models/m/users.parquet", "k": 1, "users_held_out": 1, "users_at_risk_held_out": 0}
    summary = {
        "title": "t",
        "redacted": redacted,
        "models": {"m": {"headline": {"users_at_risk": 2, "users_total": 3}, "stages": {}, "users": record}},
    }
    write_summary(tmp_path, summary)
    return summary


def test_the_table_lists_the_people_at_risk_by_rank_with_what_to_do(tmp_path):
    summary = _run(tmp_path)
    (view,) = people_at_risk(tmp_path, summary)
    assert view.name == "m"
    cells = [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr><td>.*?</tr>", view.table)]
    assert [c[0] for c in cells] == ["1", "2"]  # cy is not at risk: not listed
    bo, ann = cells
    assert bo[1] == "<code>bo</code>" and bo[2] == "7" and bo[3] == "EMAIL, PHONE"
    assert bo[6] == "-3.25 (p 0.12)" and bo[7] == "no"
    assert bo[8].startswith(f"remove {MAX_DOCUMENTS + 2} documents: <code>d0</code>")
    assert bo[8].endswith(" and 2 more") and "<code>d5</code>" not in bo[8]
    assert ann[5] == "1 of 3" and ann[8].startswith("retrain without this person") and ann[6] == "—"
    assert view.note.startswith("2 of 3 people at risk") and "0 of the 1 held out" in view.note
    assert "keyed" not in view.note
    assert len(people_at_risk(tmp_path, summary, limit=1)[0].table.split("<tr><td>")) == 2


def test_the_report_shows_the_section_keyed_ids_noted_and_none_without_users_parquet(tmp_path):
    summary = _run(tmp_path / "a", redacted=True)
    (view,) = people_at_risk(tmp_path / "a", summary)
    assert "keyed hashes under the run's redaction key" in view.note
    page = render_report(tmp_path / "a").read_text()
    assert 'id="people-at-risk"' in page and "<code>bo</code>" in page
    assert re.search(
        r'People at risk \(leaked PII at the first k, or probing hit\)</div><div class="v">2</div>', page
    )
    (tmp_path / "a" / "models" / "m" / "users.parquet").unlink()
    assert people_at_risk(tmp_path / "a", summary) == []
    assert 'id="people-at-risk"' not in render_report(tmp_path / "a").read_text()
