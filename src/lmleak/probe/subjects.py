"""Reading and writing subjects files (JSONL, one data subject per line; paper 003 §4.1 probe sets)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lmleak import jsonl
from lmleak.data.holdout import check_known_people, read_holdout
from lmleak.data.sidefiles import read_side_file
from lmleak.data.user_ids import Collision, canonical_ids, normalise_user_id
from lmleak.errors import DataFileError, did_you_mean
from lmleak.runs import atomic_write_text

#: The fields a probe reads: the name it starts from and the PII it probes (``emails``: more
#: addresses of the same person, any of which counts as a hit).
PROBED_FIELDS = ("name", "phone", "email", "emails", "address", "relations", "university")
#: Who the subject is: ``user_id`` joins the corpus (members vs held-out controls), ``subject_id``
#: names the row (defaults to ``user_id``, else ``s<line>``).
ID_FIELDS = ("subject_id", "user_id")
#: Kept and never probed: what lmleak's synthetic corpora and ``probe build`` write beside the PII
#: (``name_shape``, ``nickname``, ``variants``, ``locale``: issue 28's name shapes; ``seen``: how
#: often ``probe build`` saw each value with the name; ``third_party``: true for a person found only
#: in other people's documents, whose ``user_id`` is then absent unless it is their own, and
#: ``found_in``: the user whose documents name them most — never their membership, issue 32).
INFO_FIELDS = (
    "company",
    "messages",
    "orders",
    "tracking_numbers",
    "name_shape",
    "nickname",
    "variants",
    "locale",
    "seen",
    "third_party",
    "found_in",
)
SUBJECT_FIELDS = ID_FIELDS + PROBED_FIELDS + INFO_FIELDS
#: A field of the user's own (an annotation) starts with this and is kept, never probed.
OWN_PREFIX = "x_"


def read_subjects(path: str | Path) -> list[dict[str, Any]]:
    """Subjects from JSONL (the fields of :data:`SUBJECT_FIELDS` — ``emails``: every address of the person; a field of your own starts with
    ``x_``). A single JSON object file (one subject) is accepted too.

    Raises:
        DataFileError: unreadable file, bad JSON line, a subject without ``name``, or an unknown field
            (``"mail"`` for ``"email"`` would otherwise probe nothing and report nothing leaked).
    """

    p = Path(path)
    text = read_side_file(p, hint="give a subjects JSONL file (one person per line) or me.json")
    stripped = text.strip()
    rows: list[dict[str, Any]] = []
    lines: list[int] = []  # file line of each row, for error messages
    whole: Any = None
    if stripped.startswith("{") and "\n" in stripped:  # maybe one pretty-printed object (me.json)
        try:
            whole = jsonl.loads(stripped)
        except jsonl.JSONRuleError as e:  # one object (me.json) breaking a rule: name its line
            reason, fix = jsonl.bad_json(e, "")
            raise DataFileError(reason, path=p, line=e.lineno, hint=fix) from None
        except json.JSONDecodeError:
            whole = None  # JSONL: parsed line by line below, errors point at the line
    if isinstance(whole, dict) or (stripped.startswith("{") and "\n" not in stripped):
        try:
            rows = [whole if isinstance(whole, dict) else jsonl.loads(stripped)]
            lines = [1]
        except json.JSONDecodeError as e:
            reason, fix = jsonl.bad_json(e, "one JSON object per line (JSONL)")
            raise DataFileError(reason, path=p, line=1, hint=fix) from None
    else:
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = jsonl.loads(line)
            except json.JSONDecodeError as e:
                reason, fix = jsonl.bad_json(e, "one JSON object per line (JSONL)")
                raise DataFileError(reason, path=p, line=i, hint=fix) from None
            if not isinstance(row, dict):
                raise DataFileError(
                    "expected a JSON object", path=p, line=i, hint="one subject object per line"
                )
            rows.append(row)
            lines.append(i)
    if not rows:
        raise DataFileError("no subjects in the file", path=p, hint="one JSON object per line")
    _canonical_users(rows, lines, p)
    for i, row in enumerate(rows, 1):
        _check_subject(row, i, p, lines[i - 1])
        _check_emails(row, p, lines[i - 1])
    return rows


def _canonical_users(rows: list[dict[str, Any]], lines: list[int], path: Path) -> None:
    """Replace each subject's ``user_id`` by its canonical id (:mod:`lmleak.data.user_ids`), so that it
    joins the corpus and ``holdout.json``; two spellings under ``--user-ids strict``: DataFileError."""
    named = [(row, line) for row, line in zip(rows, lines, strict=True) if row.get("user_id") is not None]
    try:
        ids = canonical_ids(
            [str(r["user_id"]) for r, _ in named], source=str(path), where=[ln for _, ln in named]
        )
    except Collision as e:
        line = e.second_at if isinstance(e.second_at, int) else None
        raise DataFileError(str(e), path=path, line=line, field="user_id", hint=Collision.HINT) from None
    for (row, line), uid in zip(named, ids, strict=True):
        if not uid:
            raise DataFileError(
                "user id is empty (only spaces or invisible format characters)",
                path=path,
                line=line,
                field="user_id",
                hint="give the subject's user id, or leave the field out",
            )
        row["user_id"] = uid


def _check_subject(row: Any, i: int, path: Path, line: int) -> None:
    """Check the ``i``-th subject (file line ``line``) and fill in its ``subject_id``."""
    if not isinstance(row, dict):
        raise DataFileError("expected a JSON object", path=path, line=line)
    _check_fields(row, path, line)
    if not row.get("name"):
        raise DataFileError(
            "subject has no name (every probe starts from the name)",
            path=path,
            line=line,
            field="name",
            hint='add a "name" field',
        )
    row.setdefault("subject_id", str(row.get("user_id", f"s{i}")))
    row["subject_id"] = str(row["subject_id"])


def _check_fields(row: dict[str, Any], path: Path, line: int) -> None:
    """Raise DataFileError naming the first field of ``row`` that lmleak does not know."""
    for key in row:
        if key not in SUBJECT_FIELDS and not str(key).startswith(OWN_PREFIX):
            raise DataFileError(
                f"unknown field {key!r}." + did_you_mean(str(key), SUBJECT_FIELDS),
                path=path,
                line=line,
                field=str(key),
                hint=f"fields: {', '.join(SUBJECT_FIELDS)}; start a field of your own with {OWN_PREFIX!r}",
            )


def _check_emails(row: dict[str, Any], path: Path, line: int) -> None:
    """``emails`` (every address of a person, issue 28) is a list of strings; without ``email`` the
    first of them is the one probed first (``email`` is kept for files and readers that know one)."""
    emails = row.get("emails")
    if emails is None:
        return
    if not isinstance(emails, list) or not all(isinstance(e, str) and e for e in emails):
        raise DataFileError(
            "emails must be a list of e-mail addresses",
            path=path,
            line=line,
            field="emails",
            hint='e.g. "emails": ["ann@example.org", "a.lee@example.com"]',
        )
    if emails and not row.get("email"):
        row["email"] = emails[0]


def write_subjects(subjects: list[dict[str, Any]], path: str | Path) -> Path:
    """Write subjects as JSONL atomically."""

    return atomic_write_text(path, "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in subjects))


def control_users(model: str | Path, subjects: list[dict[str, Any]] | None = None) -> set[str]:
    """The users a model never saw (its ``holdout.json``): their subjects are probed as controls.

    Empty when ``model`` is no model directory with a holdout record (a hub name, a GGUF file). With
    ``subjects``, a subject's ``user_id`` that the model's records name neither as trained on nor as
    held out is refused (:func:`~lmleak.data.holdout.check_known_people`): it would be probed as a member.
    """
    if subjects is not None:
        users = [str(x["user_id"]) for x in subjects if x.get("user_id") is not None]
        check_known_people(model, users, corpus_name="the subjects", field="subjects")
    holdout = read_holdout(model)
    return set(holdout.users) if holdout else set()


def count_controls(subjects: list[dict[str, Any]], controls: set[str]) -> int:
    """How many subjects belong to a control user (``user_id``, else ``subject_id``).

    Example:
        >>> count_controls([{"subject_id": "s1", "user_id": "u1"}, {"subject_id": "u2"}], {"u2"})
        1
    """
    canonical = {normalise_user_id(u) for u in controls}
    return sum(
        1 for x in subjects if normalise_user_id(str(x.get("user_id", x.get("subject_id")))) in canonical
    )
