"""The users a model never saw: ``holdout.json`` in a model directory.

``lmleak train`` holds out a share of the corpus's *users* (never single documents: a member's
other documents would leak into the "unseen" side). It records them in the model directory, and
every analysis that needs controls — membership inference's non-members, probing's control
subjects — reads them from here instead of asking the user for a second list.

File format (JSON)::

    {"held_out_users": ["u-3", "u-9"], "fraction": 0.1, "seed": 0, "corpus": "corpus.jsonl"}

Models trained before this file existed record the same users as ``val_users`` in ``train.json``;
:func:`read_holdout` reads those too. Ids are read canonical (:mod:`lmleak.data.user_ids`), so they
join a corpus whose loader normalised its ids.

Every analysis splits the audited people in two by this file: the held-out users are the null, and
*everyone else is counted as trained on*. A corpus holding people the model never saw who are not
held out (a larger corpus than the training one, people filtered out before training, another
corpus whose ids happen to match) would put them on the trained-on side, where they leak nothing
and dilute every members' number towards the null: a leaking model could pass. So
:func:`check_known_people` refuses, before any work, a corpus with people that ``train.json``'s
``train_users`` and ``holdout.json`` both leave out, and a trained-on person with more documents
than ``train.json``'s ``train_documents_by_user`` counts (mails written since training would be
member texts the model never saw, beside held-out people with none).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from lmleak import jsonl
from lmleak.data.user_ids import Collision, canonical_ids, normalise_user_id
from lmleak.errors import ConfigError, DataFileError
from lmleak.runs import atomic_write_json

HOLDOUT_FILE = "holdout.json"
#: the training record beside it; its ``train_users`` are the people the model was trained on
TRAIN_FILE = "train.json"
#: the ``train.json`` key of a null model (:mod:`lmleak.audit.nullmodel`): trained on other people, it
#: stands in, on purpose, for a model trained on the audited corpus's people outside ``holdout.json``
NULL_MODEL_KEY = "null_model"
#: the ``train.json`` key of each trained-on person's number of documents
TRAIN_DOCUMENTS_KEY = "train_documents_by_user"


@dataclass(frozen=True, slots=True)
class Holdout:
    """Users held out of a model's training.

    Attributes:
        users: the held-out user ids, sorted.
        fraction: the share of users asked for (0 when none were held out).
        seed: the seed of the draw.
        corpus: the corpus the users were drawn from, as given to ``train`` (None when unknown).
    """

    users: tuple[str, ...]
    fraction: float
    seed: int | None = None
    corpus: str | None = None


def write_holdout(model_dir: str | Path, holdout: Holdout) -> Path:
    """Write ``holdout.json`` into ``model_dir`` (atomically, owner-only).

    Example:
        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> _ = write_holdout(d, Holdout(users=("u2", "u1"), fraction=0.5, seed=3))
        >>> read_holdout(d)
        Holdout(users=('u1', 'u2'), fraction=0.5, seed=3, corpus=None)
    """

    record = {
        "held_out_users": sorted(holdout.users),
        "fraction": float(holdout.fraction),
        "seed": holdout.seed,
        "corpus": holdout.corpus,
    }
    return atomic_write_json(Path(model_dir) / HOLDOUT_FILE, record)


def held_out_of(val_users: Iterable[str], train_users: Iterable[str]) -> tuple[str, ...]:
    """The validation users that are really held out: those the model did not train on.

    A validation corpus passed in beside the training corpus (``train_model(..., val_corpus=...)``,
    as the demo does with a second synthetic population) may reuse the training corpus's user ids
    (``user-00`` in both). Such an id names a person the model *did* train on, so it must not go into
    ``holdout.json``, where probing would count that person as a control and membership inference as
    a non-member.

    Example:
        >>> held_out_of(["u3", "u1", "u9"], ["u1", "u2"])
        ('u3', 'u9')
    """
    trained = set(train_users)
    return tuple(sorted(u for u in set(val_users) if u not in trained))


def read_holdout(model_dir: str | Path | None) -> Holdout | None:
    """The held-out users of the model in ``model_dir``, or None when it records none.

    Reads ``holdout.json``; falls back to ``val_users`` in ``train.json`` (older models). A model
    that is not a directory (a ``.gguf`` file, a name) has no record: None.
    """
    if model_dir is None:
        return None
    d = Path(model_dir)
    if not d.is_dir():
        return None
    p = d / HOLDOUT_FILE
    if p.is_file():
        data = _read_json(p)
        return Holdout(
            _canonical(data.get("held_out_users"), p, "held_out_users"),
            float(data.get("fraction") or 0.0),
            data.get("seed"),
            data.get("corpus"),
        )
    t = d / TRAIN_FILE
    if t.is_file():
        data = _read_json(t)
        users = data.get("val_users")
        trained = data.get("train_users") or []
        if isinstance(users, list) and all(isinstance(u, str) for u in users):
            cfg = data.get("config") or {}
            ok = isinstance(trained, list) and all(isinstance(u, str) for u in trained)
            return Holdout(
                held_out_of(
                    _canonical(users, t, "val_users"), _canonical(trained, t, "train_users") if ok else []
                ),
                float(cfg.get("holdout_users", cfg.get("val_fraction")) or 0.0),
                cfg.get("seed"),
                None,
            )
    return None


def trained_users(model_dir: str | Path | None) -> frozenset[str] | None:
    """The people the model in ``model_dir`` was trained on (``train.json``'s ``train_users``,
    canonical), or None where it records none: no folder, no ``train.json`` (a model lmleak did not
    train), or a null model (:data:`NULL_MODEL_KEY`), which claims the audited people on purpose.

    Example:
        >>> import json, tempfile
        >>> d = Path(tempfile.mkdtemp())
        >>> _ = (d / TRAIN_FILE).write_text(json.dumps({"train_users": ["U1 ", "u2"]}))
        >>> sorted(trained_users(d)), trained_users(d / "missing")
        (['u1', 'u2'], None)
    """
    return _users_of(_training_record(model_dir))


def _training_record(model_dir: str | Path | None) -> tuple[Path, dict] | None:
    """``train.json``'s path and contents, read once; None: no folder, no file, or a null model."""
    if model_dir is None or not (Path(model_dir) / TRAIN_FILE).is_file():
        return None
    t = Path(model_dir) / TRAIN_FILE
    data = _read_json(t)
    return None if data.get(NULL_MODEL_KEY) else (t, data)


def _users_of(record: tuple[Path, dict] | None) -> frozenset[str] | None:
    if record is None or record[1].get("train_users") is None:
        return None
    return frozenset(_canonical(record[1]["train_users"], record[0], "train_users"))


def document_counts(user_of_each_document: Iterable[str]) -> dict[str, int]:
    """Each person's number of documents, from the user id of every document
    (:data:`TRAIN_DOCUMENTS_KEY`).

    Example:
        >>> document_counts(["u1", "u2", "u1"])
        {'u1': 2, 'u2': 1}
    """
    return dict(Counter(str(u) for u in user_of_each_document))


def trained_documents(model_dir: str | Path | None) -> dict[str, int] | None:
    """Each trained-on person's number of documents (:data:`TRAIN_DOCUMENTS_KEY`, canonical ids), or
    None where ``train.json`` counts none (older models; the cases of :func:`trained_users`)."""
    return _counts_of(_training_record(model_dir))


def _counts_of(record: tuple[Path, dict] | None) -> dict[str, int] | None:
    if record is None or record[1].get("train_users") is None:  # as _users_of: no people, no counts
        return None
    t, data = record
    counts = data.get(TRAIN_DOCUMENTS_KEY)
    if counts is None:
        return None
    if not isinstance(counts, dict) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts.values()
    ):
        raise DataFileError(
            "expected an object of user id -> number of documents",
            path=t,
            field=TRAIN_DOCUMENTS_KEY,
            hint="retrain the model with `lmleak train`, which writes this file",
        )
    return _canonical_counts(counts)


def _canonical_counts(counts: Mapping[str, int]) -> dict[str, int]:
    """``counts`` under canonical ids, the counts of one person's spellings added."""
    out: dict[str, int] = {}
    for u, n in counts.items():
        key = normalise_user_id(str(u))
        out[key] = out.get(key, 0) + n
    return out


def check_known_people(
    model_dir: str | Path | None,
    users: Iterable[str],
    *,
    corpus_name: str,
    field: str,
    never_seen: Iterable[str] = (),
    never_seen_name: str = "the people never seen",
    never_seen_field: str | None = None,
    documents: Mapping[str, int] | None = None,
) -> None:
    """Refuse a split of the audited people that the model's records contradict (module docstring):
    people of the corpus (``users``) they name neither as trained on nor as held out (counted as
    trained on), held-out people ``train.json`` says were trained on, and people given as never seen
    (``never_seen``, named ``never_seen_name`` and ``never_seen_field``, default ``field``) who were
    trained on (both counted as the null, which would absorb their leaks). With ``documents`` (each
    audited person's number of documents), a trained-on person with more than ``train.json`` counts.

    Nothing to check for a model without ``train.json``'s ``train_users`` (:func:`trained_users`).

    Example:
        >>> import json, tempfile
        >>> d = Path(tempfile.mkdtemp())
        >>> _ = (d / TRAIN_FILE).write_text(json.dumps({"train_users": ["u1"]}))
        >>> _ = write_holdout(d, Holdout(("u2",), 0.5))
        >>> check_known_people(d, ["u1", "u2"], corpus_name="c.jsonl", field="--corpus")
        >>> check_known_people(d, ["u1", "u2", "x9"], corpus_name="c.jsonl", field="--corpus")
        Traceback (most recent call last):
        ...
        lmleak.errors.ConfigError: field '--corpus': 1 person of c.jsonl (x9) is neither trained on nor held out by the model (its train.json names 1 person trained on, its holdout.json 1 held out): they would be counted as trained on. Fix: audit the corpus the model was trained on, without people added since; give people it never saw as non-members (`lmleak mia --non-members`, `lmleak report --holdout`, the audit's `non_members`)
        >>> check_known_people(d, ["u1"], corpus_name="c.jsonl", field="--corpus", never_seen=["U1"],
        ...                    never_seen_name="people.jsonl")
        Traceback (most recent call last):
        ...
        lmleak.errors.ConfigError: field '--corpus': 1 person of people.jsonl (u1) was trained on (train.json names them), so they cannot be the null of people never seen. Fix: give people the model never saw, or drop them from people.jsonl
    """
    record = _training_record(model_dir)  # read once for every check below
    trained = _users_of(record)
    if trained is None:
        return
    holdout = read_holdout(model_dir)
    held = set(holdout.users) if holdout else set()
    _check_null(model_dir, trained, held, never_seen, name=never_seen_name, field=never_seen_field or field)
    unknown = sorted({normalise_user_id(str(u)) for u in users} - trained - held)
    _check_document_counts(record, None if unknown else documents, corpus_name=corpus_name, field=field)
    if not unknown:
        return
    raise ConfigError(
        f"{_people(unknown, corpus_name)} {_are(unknown)} neither "
        f"trained on nor held out by the model (its {TRAIN_FILE} names "
        f"{len(trained)} {'person' if len(trained) == 1 else 'people'} trained on, its {HOLDOUT_FILE} "
        f"{len(held)} held out): they would be counted as trained on",
        field=field,
        hint="audit the corpus the model was trained on, without people added since; give people it never "
        "saw as non-members (`lmleak mia --non-members`, `lmleak report --holdout`, the audit's `non_members`)",
    )


def _check_null(
    model_dir: str | Path | None,
    trained: frozenset[str],
    held: set[str],
    never_seen: Iterable[str],
    *,
    name: str,
    field: str,
) -> None:
    """Refuse a null holding people the model saw: held-out ones ``train.json`` trained on, or people
    given as never seen whom it names."""
    both = sorted(held & trained)
    if both:
        raise DataFileError(
            f"{_people(both, HOLDOUT_FILE)} {_are(both)} trained on by {TRAIN_FILE}'s train_users: the two "
            "files are of different trainings, and the null would hold people the model saw",
            path=Path(str(model_dir)) / HOLDOUT_FILE,
            field="held_out_users",
            hint="restore the model's own holdout.json (lmleak train writes both), or retrain",
        )
    seen = sorted({normalise_user_id(str(u)) for u in never_seen} & trained)
    if seen:
        raise ConfigError(
            f"{_people(seen, name)} {'was' if len(seen) == 1 else 'were'} trained on "
            f"({TRAIN_FILE} names them), so they cannot be the null of people never seen",
            field=field,
            hint=f"give people the model never saw, or drop them from {name}",
        )


def _check_document_counts(
    record: tuple[Path, dict] | None, documents: Mapping[str, int] | None, *, corpus_name: str, field: str
) -> None:
    """Refuse trained-on people with more documents in the audited corpus than they had in training."""
    trained = None if documents is None else _counts_of(record)
    if documents is None or trained is None:
        return
    audited = _canonical_counts(documents)
    over = sorted(u for u, n in audited.items() if u in trained and n > trained[u])
    if not over:
        return
    extra = sum(audited[u] - trained[u] for u in over)
    first = over[0]
    raise ConfigError(
        f"{_people(over, corpus_name)} {'has' if len(over) == 1 else 'have'} more documents than the model "
        f"was trained on ({extra} more in all; {first}: {audited[first]} against {trained[first]} in "
        f"{TRAIN_FILE}): documents written since training would count as trained on",
        field=field,
        hint="audit the documents the model was trained on (the corpus given to `lmleak train`)",
    )


def _people(ids: list[str], where: str) -> str:
    """``3 people of c.jsonl (a, b, c)``: the count, where they are and the first three ids."""
    named = ", ".join(ids[:3]) + (", ..." if len(ids) > 3 else "")
    return f"{len(ids)} {'person' if len(ids) == 1 else 'people'} of {where} ({named})"


def _are(ids: list[str]) -> str:
    return "is" if len(ids) == 1 else "are"


def _canonical(users: object, path: Path, key: str) -> tuple[str, ...]:
    """The canonical ids of a list of users (:mod:`lmleak.data.user_ids`), sorted and distinct; not a
    list of strings, or two spellings of one id under ``--user-ids strict``: DataFileError."""
    if not isinstance(users, list) or not all(isinstance(u, str) for u in users):
        raise DataFileError(
            "expected a list of user id strings",
            path=path,
            field=key,
            hint="retrain the model with `lmleak train`, which writes this file",
        )
    try:
        return tuple(sorted(set(canonical_ids(users, source=f"{path} ({key})"))))
    except Collision as e:
        raise DataFileError(str(e), path=path, field=key, hint=Collision.HINT) from None


def _read_json(p: Path) -> dict:
    try:
        data = jsonl.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        reason, fix = jsonl.bad_json(e, "retrain the model or restore the file")
        raise DataFileError(reason, path=p, line=e.lineno, hint=fix) from None
    except UnicodeDecodeError as e:
        raise DataFileError(
            f"not UTF-8 text (byte {e.start})", path=p, hint="retrain the model or restore the file"
        ) from None
    if not isinstance(data, dict):
        raise DataFileError("expected a JSON object", path=p, hint="retrain the model or restore the file")
    return data
