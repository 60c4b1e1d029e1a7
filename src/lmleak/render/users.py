"""The report's "People most at risk" section: the top rows of each model's ``users.parquet``
(:mod:`lmleak.report.users`), with what to do about each person — the documents to remove first,
or retraining without them.

It reads the file the audit wrote and formats it; it computes nothing. A redacted run's file holds
keyed ids (HMAC under the run's key), so the page shows those: whoever holds the key finds the
person with ``Redactor(key, ...).hash(user_id, kind="user_id")`` (and ``kind="doc_id"`` for a
document). The section is its own template partial, ``people_at_risk.html.j2``.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Rows shown per model (the file holds every user).
MAX_PEOPLE = 25
#: Document ids listed per person before "and N more".
MAX_DOCUMENTS = 5


@dataclass(frozen=True)
class PeopleView:
    """One model's table of the people most at risk, for the template."""

    name: str
    table: str
    note: str


def _num(value: Any, digits: str = ".4g") -> str:
    if value is None or (isinstance(value, float) and value != value):  # None or NaN
        return "—"
    return format(value, digits) if isinstance(value, float) else html.escape(str(value))


def _todo(row: dict[str, Any]) -> str:
    """The action cell: the documents to remove first, or retraining without the person."""
    action = row.get("action")
    if action == "remove documents":
        raw = row.get("pii_doc_ids")
        docs = [] if raw is None else [str(d) for d in raw]
        shown = ", ".join(f"<code>{html.escape(d)}</code>" for d in docs[:MAX_DOCUMENTS])
        more = f" and {len(docs) - MAX_DOCUMENTS} more" if len(docs) > MAX_DOCUMENTS else ""
        return f"remove {len(docs)} document{'s' if len(docs) != 1 else ''}: {shown}{more}"
    if action == "retrain without user":
        return "retrain without this person's documents (a probe gave their PII back; no leaked document holds it)"
    return "—"


def _table(df: Any) -> str:
    import pandas as pd

    head = [
        "rank", "person (user id)", "leaked PII sequences", "PII types", "user-unique leaked sequences",
        "probing hits", "MIA score (p vs held-out)", "held out", "what to do first",
    ]  # fmt: skip
    rows = []
    for r in df.to_dict("records"):
        types = r.get("pii_types")
        held = r.get("held_out")
        cells = [
            _num(r["risk_rank"]),
            f"<code>{html.escape(str(r['user_id']))}</code>",
            _num(r["pii_sequences"]),
            html.escape(", ".join(map(str, types))) if types is not None and len(types) else "—",
            _num(r["unique_sequences"]),
            f"{_num(r['probe_hits'])} of {_num(r['probe_targets'])}",
            f"{_num(r['mia_score'])} (p {_num(r['mia_p_value'], '.2g')})" if r.get("mia_documents") else "—",
            "—" if held is None or held is pd.NA else ("yes" if held else "no"),
            _todo(r),
        ]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    return (
        f'<table class="sortable people"><thead><tr>{th}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def people_at_risk(
    run_dir: str | Path, summary: dict[str, Any], *, limit: int = MAX_PEOPLE
) -> list[PeopleView]:
    """Per audited model with a ``users.parquet``, its people at risk (``at_risk``), most at risk
    first, at most ``limit``; models without the file are left out."""
    import pandas as pd

    out = []
    for name, model in (summary.get("models") or {}).items():
        record = (model or {}).get("users") or {}
        path = Path(run_dir) / str(record.get("path") or f"models/{name}/users.parquet")
        if not path.exists():
            continue
        users = pd.read_parquet(path)
        at_risk = users[users["at_risk"]].sort_values("risk_rank")
        shown = at_risk.head(limit)
        note = (
            f"{len(at_risk)} of {len(users)} people at risk (at least one leaked PII sequence or probing "
            f"hit, at the report's k = {record.get('k', '—')})"
        )
        if record.get("users_held_out") is not None:
            note += (
                f"; {record.get('users_at_risk_held_out')} of the {record['users_held_out']} held out of "
                "training are, too: what the model reveals without having trained on a person"
            )
        if len(at_risk) > limit:
            note += f"; the {limit} most at risk shown (all in {path.relative_to(run_dir)})"
        if record.get("mia_score_method"):
            note += f". MIA score: {record['mia_score_method']}"
        if summary.get("redacted") is True:
            note += ". Ids are keyed hashes under the run's redaction key"
        out.append(PeopleView(name, _table(shown) if len(shown) else "", note + "."))
    return out
