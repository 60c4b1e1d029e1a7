"""Corpus loaders: JSONL, CSV, Parquet, a folder of ``<user>/*.txt`` files, a saved HF dataset.

Every loader yields :class:`~lmleak.data.corpus.Document` s and validates each row: a missing or
non-string field, empty text, undecodable bytes, invalid JSON or a duplicate ``doc_id`` raises
:class:`~lmleak.errors.CorpusError` naming the file, line (or row) and field. With
``skip_bad_rows=True`` such rows are counted and reported in a :class:`LoadReport` instead —
never silently dropped. A missing ``doc_id`` column is allowed: ids are derived stably from the
user and text (:func:`~lmleak.data.corpus.stable_doc_id`).

User ids are canonical (:func:`~lmleak.data.user_ids.normalise_user_id`: format characters
removed, NFKC, case-folded, trimmed): spellings of one id are one user, named in one line on stderr,
or refused under ``lmleak --user-ids strict`` with the lines of both spellings.

:func:`iter_documents` streams JSONL, CSV and Parquet without loading the whole file, so passes
over huge corpora keep memory flat; :func:`load_corpus` materialises a :class:`Corpus`.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmleak import jsonl
from lmleak.data.corpus import Corpus, Document, stable_doc_id
from lmleak.data.user_ids import Collision, UserIds
from lmleak.errors import CorpusError

FORMATS = ("jsonl", "csv", "parquet", "folder", "hf")
#: Longest user or document id accepted: a longer one is almost always a text column named as an id.
MAX_ID_CHARS = 1024
#: Largest CSV field (characters): one document may be long, far beyond csv's 128 kB default.
MAX_CSV_FIELD = 1 << 30
_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


@dataclass
class LoadReport:
    """What a load skipped (only with ``skip_bad_rows=True``): ``(line, reason)`` per row; and the
    spellings of user ids it met (``user_ids``: which were merged into one user)."""

    path: str
    skipped: list[tuple[int, str]] = field(default_factory=list)
    loaded: int = 0
    user_ids: UserIds = field(init=False)

    def __post_init__(self) -> None:
        self.user_ids = UserIds(self.path)


@dataclass(frozen=True, slots=True)
class Fields:
    text: str = "text"
    user: str = "user_id"
    doc: str = "doc_id"


def detect_format(path: Path) -> str:
    """Format from the path: a folder (HF dataset if it has ``dataset_info.json``/``state.json``) or the extension."""
    if path.is_dir():
        if (
            (path / "state.json").exists()
            or (path / "dataset_info.json").exists()
            or (path / "dataset_dict.json").exists()
        ):
            return "hf"
        return "folder"
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise CorpusError(
        f"cannot tell the format from the extension {suffix!r}",
        path=path,
        hint=f"pass format= (one of {', '.join(FORMATS)}) or use .jsonl, .csv, .parquet",
    )


#: What is wrong with a row: (reason, field or None, hint), as :meth:`_Validator.bad` takes them.
_Problem = tuple[str, str | None, str]


class _Validator:
    """Turns raw rows into Documents, enforcing the corpus rules with precise errors."""

    def __init__(self, path: Path, fields: Fields, skip: bool, report: LoadReport) -> None:
        self.path, self.fields, self.skip, self.report = path, fields, skip, report
        self.seen: dict[str, int] = {}
        self.ordinals: dict[str, int] = {}
        self.user_ids = report.user_ids

    def bad(self, line: int, reason: str, field_name: str | None, hint: str) -> None:
        if self.skip:
            self.report.skipped.append((line, f"{field_name}: {reason}" if field_name else reason))
            return
        raise CorpusError(reason, path=self.path, line=line, field=field_name, hint=hint)

    def row(self, line: int, row: Any) -> Document | None:
        """The row as a Document (its user id canonical: :mod:`lmleak.data.user_ids`), or None for a
        bad row that is skipped (else CorpusError)."""
        problem = self._fields_problem(row)
        doc_id = user = None
        if problem is None:
            user, problem = self._user(line, row[self.fields.user])
        if problem is None and user is not None:
            doc_id, problem = self._doc_id(line, row, user)
        if problem is not None or doc_id is None or user is None:
            assert problem is not None
            self.bad(line, *problem)
            return None
        self.seen[doc_id] = line
        self.report.loaded += 1
        return Document(user, doc_id, row[self.fields.text])

    def _user(self, line: int, spelling: str) -> tuple[str | None, _Problem | None]:
        """The canonical user id of a row (a second spelling under ``--user-ids strict``: CorpusError)."""
        try:
            user = self.user_ids.canonical(spelling, where=line)
        except Collision as e:
            raise CorpusError(
                str(e), path=self.path, line=line, field=self.fields.user, hint=Collision.HINT
            ) from None
        if not user:
            return None, (
                "user id is empty (only spaces or invisible format characters)",
                self.fields.user,
                "give every row its user's id",
            )
        return user, None

    def _fields_problem(self, row: Any) -> _Problem | None:
        """What is wrong with the row's shape, user and text (reason, field, hint), or None."""
        f = self.fields
        if not isinstance(row, dict):
            return (
                f"expected an object with '{f.user}' and '{f.text}', got {type(row).__name__}",
                None,
                'write one JSON object per line, e.g. {"user_id": "u1", "text": "..."}',
            )
        for name in (f.user, f.text):
            if name not in row or row[name] is None:
                return (
                    "missing",
                    name,
                    f"give every row a '{name}' (or name the column with the matching option)",
                )
            if not isinstance(row[name], str):
                return (f"expected a string, got {type(row[name]).__name__}", name, "quote the value")
        text, user = row[f.text], row[f.user]
        for name, value in ((f.user, user), (f.text, text), (f.doc, row.get(f.doc))):
            if isinstance(value, str) and "\x00" in value:
                return (
                    "contains a NUL character",
                    name,
                    "remove the NUL bytes (often a binary or UTF-16 file read as text)",
                )
        if not text.strip():
            return ("text is empty", f.text, "drop the row or use --skip-bad-rows")
        if not user.strip():
            return ("user id is empty", f.user, "give every row its user's id")
        if len(user) > MAX_ID_CHARS:
            return (
                f"user id is {len(user):,} characters long (at most {MAX_ID_CHARS:,})",
                f.user,
                "check that the user column holds ids, not text",
            )
        return None

    def _doc_id(self, line: int, row: dict[str, Any], user: str) -> tuple[str | None, _Problem | None]:
        """The row's doc id (given, or derived from the canonical user, text and ordinal) and what is
        wrong with it."""
        f = self.fields
        text = row[f.text]
        doc_id = row.get(f.doc)
        if doc_id is None or (isinstance(doc_id, float) and doc_id != doc_id):  # absent or NaN
            ordinal = self.ordinals.get(user, 0)
            self.ordinals[user] = ordinal + 1
            doc_id = stable_doc_id(user, text, ordinal)
        elif isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)
        elif not isinstance(doc_id, str) or not doc_id.strip():
            return None, (
                f"expected a non-empty string, got {_short(doc_id)}",
                f.doc,
                "use string ids or omit the column",
            )
        if len(doc_id) > MAX_ID_CHARS:
            return None, (
                f"doc id is {len(doc_id):,} characters long (at most {MAX_ID_CHARS:,})",
                f.doc,
                "check that the doc id column holds ids, not text",
            )
        if doc_id in self.seen:
            return None, (
                f"duplicate doc_id {doc_id!r} (first on line {self.seen[doc_id]})",
                f.doc,
                "give every document a unique doc_id, or omit the column to derive ids",
            )
        return doc_id, None


def _short(value: Any, limit: int = 60) -> str:
    """``repr(value)`` cut to ``limit`` characters (an error line never echoes a whole field)."""
    r = repr(value)
    return r if len(r) <= limit else r[: limit - 3] + "..."


def _check_bom(path: Path, head: bytes) -> None:
    """Refuse a UTF-16/32 file up front: read as UTF-8 its errors would point at NUL bytes."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            raise CorpusError(
                f"the file is {name} (it starts with a {name} byte order mark), not UTF-8",
                path=path,
                line=1,
                hint=f"re-encode it as UTF-8, e.g. iconv -f {name} -t UTF-8",
            )


def _open_binary(path: Path) -> Any:
    try:
        return open(path, "rb")
    except OSError as e:
        raise CorpusError(
            f"cannot read the file ({e.strerror or e})", path=path, hint="check the path and its permissions"
        ) from None


def _jsonl(path: Path, v: _Validator) -> Iterator[tuple[int, Any]]:
    with _open_binary(path) as fh:
        for line_no, raw in enumerate(fh, start=1):
            if line_no == 1:
                _check_bom(path, raw)
                raw = raw.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark is harmless
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                v.bad(
                    line_no, f"not UTF-8 ({e.reason} at byte {e.start})", None, "re-encode the file as UTF-8"
                )
                continue
            if not line.strip():
                continue  # blank lines carry no row
            try:
                row = jsonl.loads(line)
            except json.JSONDecodeError as e:
                reason, fix = jsonl.bad_json(e, "write one JSON object per line")
                v.bad(line_no, reason.replace("not valid JSON", "invalid JSON"), None, fix)
                continue
            yield line_no, row


def _csv(path: Path, v: _Validator) -> Iterator[tuple[int, Any]]:
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    with _open_binary(path) as fh:
        _check_bom(path, fh.read(4))
    old_limit = csv.field_size_limit()
    line = 0
    try:
        csv.field_size_limit(MAX_CSV_FIELD)
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh, delimiter=delimiter)
            if reader.fieldnames is None:
                raise CorpusError(
                    "file is empty (no header row)", path=path, hint="write a header: user_id,doc_id,text"
                )
            header = [h for h in reader.fieldnames if h is not None]
            missing = [c for c in (v.fields.user, v.fields.text) if c not in header]
            if missing:
                raise CorpusError(
                    f"no column '{missing[0]}' in the header (columns: {', '.join(map(_short, header))})",
                    path=path,
                    line=1,
                    field=missing[0],
                    hint="rename the column (or name it: text_field / user_field in an audit config, --text-field in corpus check)",
                )
            for row in reader:
                line = reader.line_num
                if None in row:  # more fields than the header has
                    v.bad(
                        line,
                        f"the row has {len(header) + len(row[None])} fields, the header {len(header)}",
                        None,
                        "quote fields that contain the delimiter, or add the column to the header",
                    )
                    continue
                yield line, {k: (val if val != "" else None) for k, val in row.items()}
    except UnicodeDecodeError as e:
        raise CorpusError(
            f"not UTF-8 ({e.reason} after line {line})", path=path, hint="re-encode the file as UTF-8"
        ) from None
    except csv.Error as e:
        raise CorpusError(
            f"malformed CSV ({e})",
            path=path,
            line=line + 1 if line else None,
            hint="quote fields that contain commas or newlines",
        ) from None
    finally:
        csv.field_size_limit(old_limit)


def _parquet(path: Path, v: _Validator) -> Iterator[tuple[int, Any]]:
    import pyarrow.parquet as pq

    hint = "re-export the corpus (the file is damaged or not Parquet)"
    try:
        pf = pq.ParquetFile(path)
    except Exception as e:  # pyarrow raises several types for a corrupt file
        raise CorpusError(
            f"not a readable Parquet file ({_short(str(e), 120)})", path=path, hint=hint
        ) from None
    names = pf.schema_arrow.names
    missing = [c for c in (v.fields.user, v.fields.text) if c not in names]
    if missing:
        raise CorpusError(
            f"no column '{missing[0]}' (columns: {', '.join(map(_short, names))})",
            path=path,
            field=missing[0],
            hint="rename the column (or name it: text_field / user_field in an audit config, --text-field in corpus check)",
        )
    row_no = 0
    batches = pf.iter_batches(batch_size=4096)
    while True:
        try:
            batch = next(batches, None)
        except Exception as e:  # a damaged page surfaces only when read
            raise CorpusError(
                f"not a readable Parquet file after row {row_no} ({_short(str(e), 120)})",
                path=path,
                hint=hint,
            ) from None
        if batch is None:
            break
        for row in batch.to_pylist():
            row_no += 1
            yield row_no, row


def _folder(path: Path, v: _Validator) -> Iterator[tuple[int, Any]]:
    users = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not users:
        raise CorpusError(
            "folder has no user sub-folders", path=path, hint="lay it out as <folder>/<user_id>/<doc>.txt"
        )
    n = 0
    for user_dir in users:
        for f in sorted(user_dir.rglob("*.txt")):
            n += 1
            try:
                text = f.read_bytes().decode("utf-8")
            except UnicodeDecodeError as e:
                if v.skip:
                    v.report.skipped.append((n, f"{f}: not UTF-8"))
                    continue
                raise CorpusError(
                    f"not UTF-8 ({e.reason})", path=f, hint="re-encode the file as UTF-8"
                ) from None
            yield (
                n,
                {v.fields.user: user_dir.name, v.fields.doc: str(f.relative_to(path)), v.fields.text: text},
            )


def _hf(path: Path, v: _Validator) -> Iterator[tuple[int, Any]]:
    try:
        from datasets import DatasetDict, load_from_disk
    except ImportError:
        raise CorpusError(
            "reading a saved Hugging Face dataset needs the 'datasets' package",
            path=path,
            hint="pip install 'lmleak[hf]'",
        ) from None
    try:
        ds = load_from_disk(str(path))
    except Exception as e:
        raise CorpusError(f"not a dataset saved with save_to_disk ({e})", path=path) from None
    if isinstance(ds, DatasetDict):
        if "train" not in ds:
            raise CorpusError(
                f"dataset has splits {sorted(ds)} but no 'train'", path=path, hint="save the split you audit"
            )
        ds = ds["train"]
    missing = [c for c in (v.fields.user, v.fields.text) if c not in ds.column_names]
    if missing:
        raise CorpusError(
            f"columns {missing} not found (columns: {ds.column_names})",
            path=path,
            field=missing[0],
            hint="name the columns with text_field= / user_field=",
        )
    yield from enumerate(ds, start=1)


#: each reader yields (line or row number, raw row); iter_documents validates them into Documents
_READERS = {"jsonl": _jsonl, "csv": _csv, "parquet": _parquet, "folder": _folder, "hf": _hf}


def iter_documents(
    path: str | Path,
    *,
    format: str | None = None,
    text_field: str = "text",
    user_field: str = "user_id",
    doc_field: str = "doc_id",
    skip_bad_rows: bool = False,
    report: LoadReport | None = None,
) -> Iterator[Document]:
    """Stream the documents of a corpus file (validated as they are read)."""
    p = Path(path)
    if not p.exists():
        raise CorpusError("no such file or folder", path=p, hint="check the path")
    fmt = format or detect_format(p)
    if fmt not in _READERS:
        raise CorpusError(f"unknown format {fmt!r}", path=p, hint=f"use one of {', '.join(FORMATS)}")
    rep = report if report is not None else LoadReport(str(p))
    v = _Validator(p, Fields(text_field, user_field, doc_field), skip_bad_rows, rep)
    for line, row in _READERS[fmt](p, v):
        doc = v.row(line, row)
        if doc is not None:
            yield doc
    rep.user_ids.say_merges()  # one line naming the spellings merged into one user (issue 33)


def load_corpus_with_report(path: str | Path, **options: Any) -> tuple[Corpus, LoadReport]:
    """Load a whole corpus and the report of what was skipped."""
    report = LoadReport(str(path))
    docs = list(iter_documents(path, report=report, **options))
    if not docs:
        raise CorpusError(
            "no documents" + (f" ({len(report.skipped)} bad rows skipped)" if report.skipped else ""),
            path=path,
            hint="the corpus needs at least one valid row",
        )
    return Corpus(docs, source=str(path), user_id_merges=report.user_ids.merged), report


def load_corpus(
    path: str | Path,
    *,
    format: str | None = None,
    text_field: str = "text",
    user_field: str = "user_id",
    doc_field: str = "doc_id",
    skip_bad_rows: bool = False,
) -> Corpus:
    """Load a corpus (see the module docstring for formats and validation).

    Example:
        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.jsonl"
        >>> _ = p.write_text('{"user_id": "u1", "text": "hello"}\\n{"user_id": "u2", "text": ""}\\n')
        >>> load_corpus(p)
        Traceback (most recent call last):
        ...
        lmleak.errors.CorpusError: ...c.jsonl:2: field 'text': text is empty. Fix: drop the row or use --skip-bad-rows
        >>> len(load_corpus(p, skip_bad_rows=True))
        1
    """
    corpus, _ = load_corpus_with_report(
        path,
        format=format,
        text_field=text_field,
        user_field=user_field,
        doc_field=doc_field,
        skip_bad_rows=skip_bad_rows,
    )
    return corpus
