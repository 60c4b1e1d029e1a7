"""Redacted leakage reports: outputs that hold no way back to the training text.

A redacted run (``lmleak report --redact``) keeps what paper 001 §4 (end) shows a reviewer who may
not see the data — lengths, counts, context lengths, perplexities — and nothing that leads back to
the text:

- **No token ids.** The ledger (one row of token ids, ranks and log-probabilities per document) is
  computed in memory and never written (:func:`memory_ledger`), so nothing decodable is left on
  disk even by a SIGKILL; a redacted run cannot re-derive S for another k or resume a pass — that
  needs an unredacted run. No column of ``occurrences.parquet`` or ``sequences.parquet`` holds
  token ids (offsets and lengths stay).
- **No text.** ``text``, ``contexts`` and every other text column are dropped: the tables keep
  numeric columns, the PII type labels and keyed ids, nothing else (a whitelist, so a new text
  column is dropped until someone decides otherwise).
- **No residue (issue 33).** What a redacted run must write unredacted while it runs — a leave-out
  public model (trained on the corpus, its records naming users by keyed ids), a standalone
  command's or an audit stage's own run — lives in ``RUN/.redacted-scratch`` (:func:`private_scratch`:
  0700, files 0600, inside the run and never under ``$TMPDIR``), deleted when the run ends, also on
  an error or Ctrl-C; after a SIGKILL the resume or the next run into the folder deletes it first.
- **Keyed ids.** ``user_id``, ``doc_id`` and ``sequence_id`` are replaced by HMAC-SHA256 under a key
  kept outside the run: the ``LMLEAK_REDACT_KEY`` environment variable, a key file the user names,
  or, with neither, 32 random bytes used once and discarded (ids then join within the run only).
  An unkeyed hash of a user id or of a token sequence could be confirmed by anyone who guesses the
  value; a keyed one only by the key's holder. ``summary.json`` says which key source was used,
  never the key.

The standalone commands that write a run — ``exposure``, ``mia``, ``probe run``, ``extract``,
``dp-audit run`` — take the same ``--redact`` / ``--redact-key-file`` (:func:`write_run`): the
command runs into the run's private scratch folder and only its Parquet tables and JSON summaries
come into the run, through the same whitelists (:func:`redact_stage_dir`), as an audit's stages do.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import shutil
import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmleak import progress
from lmleak.errors import ConfigError
from lmleak.ledger.ledger import Ledger, encode_long, model_access, score_documents
from lmleak.models.base import scoring_convention
from lmleak.runs import (
    SCRATCH_DIR,
    atomic_write_json,
    open_run,
    owner_only,
    read_summary,
    secure_dir,
    write_parquet,
)

#: The environment variable holding the redaction key.
KEY_ENV = "LMLEAK_REDACT_KEY"
#: Tests only: the named points at which the process SIGKILLs itself (:func:`sigkill_at`).
SIGKILL_ENV = "LMLEAK_TEST_SIGKILL_AT"
#: Shortest key accepted (bytes): a short passphrase would let anyone with the run brute-force it.
MIN_KEY_BYTES = 16
#: Identifier columns replaced by their keyed hash (a probe subject is a user of the corpus).
HASHED_COLUMNS = ("user_id", "doc_id", "sequence_id", "subject_id")
#: The hash domain of a column when it is not the column's name: a probe subject's id is its user id,
#: so the probe's rows join the report's users under the run's key.
HASH_KIND = {"subject_id": "user_id"}
#: Non-numeric columns a redacted table may keep (lists of numbers, PII type labels, and the fixed
#: labels of the audit's stages: attack level and feature, ROC curve, method, PII target type).
SAFE_OBJECT_COLUMNS = (
    "context_lengths",
    "perplexities",
    "public_perplexities",
    "pii_types",
    "level",
    "feature",
    "curve",
    "method",
    "target_type",
)
#: Keys of a stage's JSON summary whose strings are kept in a redacted run: the fixed vocabulary of
#: attacks, methods, scenarios and notes the code writes (never a value read from the data).
SAFE_JSON_STRING_KEYS = frozenset(
    {
        # issue 32/35: what the leaked-PII null is, why there is none, the canaries' design, the f-DP notes
        "null_kind",
        "null_note",
        "pii_people_excess_reason",
        "pii_people_excess_fix",
        "canary_design",
        "fdp_assumption",
        "fdp_note",
        "fdp_theorem",
        "attack",
        "mia_attack",
        "mia_methods",
        "methods",
        "level",
        "feature",
        "target_type",
        "access",
        "anonymization",
        "knowledge",
        "resources",
        "target",
        "notation",
        "notes",
        "needs",
        "rank_rule",
        "combination",
        "metrics",
        "note",
        "stage",
        "kind",
        "method",
        "curve",
        "blind_baseline_warning",
        "mia_tpr_at_1pct_fpr_note",
        "tpr_at_1pct_fpr_note",
        "tpr_at_0.1pct_fpr_note",
        # issue 26: the membership headline's method, how it was chosen, and the code's fixed notes
        "mia_method",
        "headline_selection",
        "mia_best_raw_method",
        "mia_headline_note",
        "mia_best_raw_note",
        "mia_excluded_note",
        "placebo_note",
        "placebo_warning",
        "blind_note",
        "grouping",
        "grouping_note",
        "near_duplicate_shingles",
        "tpr_at_fpr_note",
        "unit",
        "schema_version",
        "lmleak_version",
        "ids",
        "hashed_columns",
        "key",
        "ledger",
        "text",
        "statement",
        "verdict",
        # issue 26/27 (i26-nulls): an interval's unit, the DP audit's reach and the placebo notes
        "limit",
        # provenance (lmleak.fingerprints): what the code computed about the model and corpus files —
        # one-way hashes of whole files and fixed labels, never a value read from the data
        "fingerprint",
        "sha256",
        "head_tail_sha256",
        "safetensors_header_sha256",
        "probe_sha256",
        "backend",
        "device",
        "dtype",
        "hash",
        "tier",
        "scoring_convention",
    }
)
#: The JSON files of a stage a redacted run keeps (redacted): summaries and privacy records. Any
#: other JSON (a trained model's tokenizer vocabulary, a pass's manifest) stays behind.
REDACTED_JSON_FILES = ("summary.json", "dp_audit.json", "privacy.json")
#: Dict keys kept as written in a redacted JSON summary: snake_case field names and labels (no
#: hyphen or ``@``: ids such as ``user-0`` and e-mail addresses have them) and plain numbers (k);
#: any other key (a user id, a name, a secret used as a key) is replaced by its keyed hash.
_SAFE_JSON_KEY = re.compile(r"^(?:[a-z<>][a-z0-9_.%/<>]*|[0-9]{1,3})$")
#: What a redacted run says about its ledger.
LEDGER_NOTE = (
    "not kept: a redacted run holds no token ids; re-deriving S (another k, API hardening) needs "
    "an unredacted run of the same model and corpus"
)


@dataclass(frozen=True)
class Redactor:
    """Keyed hashing of identifiers. The key never appears in ``repr`` or in any output.

    Example:
        >>> r = Redactor(b"k" * 32, "test")
        >>> r.hash("u1") == r.hash("u1") != Redactor(b"j" * 32, "test").hash("u1")
        True
        >>> "kkkk" in repr(r)
        False
    """

    key: bytes = field(repr=False)
    source: str

    def hash(self, value: str, *, kind: str = "") -> str:
        """HMAC-SHA256 of ``kind:value``, 32 hex digits (128 bits)."""
        return hmac.new(self.key, f"{kind}:{value}".encode(), hashlib.sha256).hexdigest()[:32]

    def hash_all(self, values: Sequence[Any], *, kind: str = "") -> list[str]:
        return [self.hash(str(v), kind=kind) for v in values]

    def describe(self) -> dict[str, Any]:
        """What ``summary.json`` records about the redaction (no key, nothing derived from it)."""
        return {
            "ids": "hmac-sha256",
            "hashed_columns": list(HASHED_COLUMNS),
            "key": self.source,
            "ledger": LEDGER_NOTE,
            "text": "dropped (text, contexts, user id lists)",
        }


def redactor_from(key_file: str | Path | None = None, *, run_dir: str | Path | None = None) -> Redactor:
    """The redaction key: ``key_file`` if given, else ``$LMLEAK_REDACT_KEY``, else random and discarded.

    Raises :class:`~lmleak.errors.ConfigError` for a missing, short or in-run key file, or a short
    environment key.

    Example:
        >>> redactor_from(None).source in ("random, discarded", "environment variable LMLEAK_REDACT_KEY")
        True
    """
    if key_file is not None:
        path = Path(key_file)
        if run_dir is not None and is_inside(path, Path(run_dir)):
            raise ConfigError(
                f"the key file {path} is inside the run directory",
                field="--redact-key-file",
                hint="keep the key outside the run (the run is what you hand out)",
            )
        try:
            key = path.read_bytes().strip()
        except OSError as e:
            raise ConfigError(
                f"cannot read the key file {path}: {e.strerror or e}",
                field="--redact-key-file",
                hint=f"give a readable file of at least {MIN_KEY_BYTES} random bytes",
            ) from None
        if len(key) < MIN_KEY_BYTES:
            raise ConfigError(
                f"the key file {path} holds {len(key)} bytes, fewer than {MIN_KEY_BYTES}",
                field="--redact-key-file",
                hint="e.g. `head -c 32 /dev/urandom | base64 > KEYFILE`",
            )
        return Redactor(key, "key file (outside the run)")
    env = os.environ.get(KEY_ENV)
    if env:
        if len(env.encode()) < MIN_KEY_BYTES:
            raise ConfigError(
                f"{KEY_ENV} holds fewer than {MIN_KEY_BYTES} bytes",
                field=KEY_ENV,
                hint="e.g. export LMLEAK_REDACT_KEY=$(head -c 32 /dev/urandom | base64)",
            )
        return Redactor(env.encode(), f"environment variable {KEY_ENV}")
    return Redactor(secrets.token_bytes(32), "random, discarded")


def is_inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` lies in ``folder`` (after resolving links)."""
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def redact_table(df: Any, redactor: Redactor) -> Any:
    """A copy of ``df`` with the identifier columns keyed, numeric columns and the safe object
    columns kept, and every other column dropped.

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"user_id": ["u1"], "text": ["my pin 1234"], "start": [3], "pii_types": [["PHONE"]]})
        >>> out = redact_table(df, Redactor(b"k" * 32, "test"))
        >>> list(out.columns), out["user_id"][0] != "u1"
        (['user_id', 'start', 'pii_types'], True)
    """
    import pandas as pd

    out = {}
    for col in df.columns:
        values = df[col]
        if col in HASHED_COLUMNS:
            out[col] = pd.Series(
                redactor.hash_all(values.tolist(), kind=HASH_KIND.get(col, col)), index=df.index, dtype=object
            )
        elif (
            col in SAFE_OBJECT_COLUMNS
            or pd.api.types.is_numeric_dtype(values)
            or pd.api.types.is_bool_dtype(values)
        ):
            out[col] = values
        # anything else (text, contexts, user id lists, a column added later) is dropped
    return pd.DataFrame(out, index=df.index)


def redact_json(value: Any, redactor: Redactor, *, key: str | None = None) -> Any:
    """A JSON value with only numbers, booleans, nulls and the strings of :data:`SAFE_JSON_STRING_KEYS`
    kept (a whitelist: a new text field is dropped until someone decides otherwise).

    Strings under any other key become null; dict keys that are not snake_case labels are keyed-hashed.

    Example:
        >>> r = Redactor(b"k" * 32, "test")
        >>> out = redact_json({"attack": "propile", "secret": "555-0100", "auc": 0.9, "by_user": {"U-7": 1}}, r)
        >>> out["attack"], out["secret"], out["auc"], "U-7" in out["by_user"]
        ('propile', None, 0.9, False)
    """
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            name = str(k) if _SAFE_JSON_KEY.match(str(k)) else redactor.hash(str(k), kind="key")
            out[name] = redact_json(v, redactor, key=str(k))
        return out
    if isinstance(value, list | tuple):
        return [redact_json(v, redactor, key=key) for v in value]
    if isinstance(value, str):
        if key in HASHED_COLUMNS:
            return redactor.hash(value, kind=HASH_KIND.get(key, key))
        return value if key in SAFE_JSON_STRING_KEYS else None
    if value is None or isinstance(value, bool | int | float):
        return value
    return None


def redact_stage_dir(src: str | Path, dst: str | Path, redactor: Redactor) -> list[str]:
    """Copy a stage's output folder ``src`` into ``dst`` redacted; returns the files written.

    Parquet tables go through :func:`redact_table`, the JSON files of :data:`REDACTED_JSON_FILES`
    through :func:`redact_json`; every other file (a tokenizer's vocabulary, figures, a pass's shards, models trained on the corpus, mined templates) is left
    behind, to be deleted with ``src``.
    """
    import json

    import pandas as pd

    src, dst = Path(src), secure_dir(dst)
    written = []
    for f in sorted(src.rglob("*")):
        rel = f.relative_to(src)
        if not f.is_file() or any(part.startswith(".") or part == "passes" for part in rel.parts):
            continue  # markers, and the resumable shards of a pass (the stage has finished)
        if f.suffix == ".parquet":
            write_parquet(redact_table(pd.read_parquet(f), redactor), dst / rel)
        elif f.name in REDACTED_JSON_FILES:
            data = redact_json(json.loads(f.read_text(encoding="utf-8")), redactor)
            if f.name == "summary.json" and isinstance(data, dict):
                data = {**data, "redacted": True}
            atomic_write_json(dst / rel, data)
        else:
            continue
        written.append(str(rel))
    return written


@contextmanager
def private_scratch(run_dir: str | Path) -> Iterator[Path]:
    """A private folder for a redacted run's unredacted work: ``run_dir/.redacted-scratch``, owner-only
    (0700, its files 0600), deleted however the block ends; call it inside :func:`~lmleak.runs.open_run`
    on ``run_dir`` (the run's lock keeps a second writer out of it).

    Inside the run, not under ``$TMPDIR`` (issue 33): a SIGKILL that skips every ``finally`` leaves the
    scratch where the next run or the resume into the same folder finds it and deletes it first
    (:func:`remove_stale_scratch`) — a temporary folder of another path would stay forever.

    Example:
        >>> import tempfile, pathlib, stat
        >>> run = pathlib.Path(tempfile.mkdtemp())
        >>> with private_scratch(run) as scratch:
        ...     stat.S_IMODE(scratch.stat().st_mode) == 0o700, scratch.parent == run
        (True, True)
        >>> (run / SCRATCH_DIR).exists()
        False
    """
    owner_only()  # files created inside are 0600 whoever calls (the CLI sets this too)
    remove_stale_scratch(run_dir)
    path = Path(run_dir) / SCRATCH_DIR
    path.mkdir(mode=0o700, parents=True)
    try:
        os.chmod(path, 0o700)
        sigkill_at("redacted-scratch")
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def remove_stale_scratch(run_dir: str | Path) -> bool:
    """Delete the scratch folder a killed redacted run left in ``run_dir`` (say so in one line); True
    when there was one."""
    path = Path(run_dir) / SCRATCH_DIR
    if not path.exists():
        return False
    shutil.rmtree(path, ignore_errors=True)
    progress.log(f"{path}: removed the private scratch of an earlier redacted run that did not finish")
    return True


def sigkill_at(point: str) -> None:
    """Kill this process with SIGKILL at a named point when ``$LMLEAK_TEST_SIGKILL_AT`` names it (a
    comma-separated list): the tests' deterministic stand-in for a power cut or the OOM killer, which
    skip every ``finally``. Points: ``redacted-scratch``, ``redacted-ledger``, ``redacted-leave-out``,
    ``redacted-tables``, ``redacted-produced``."""
    if point in os.environ.get(SIGKILL_ENV, "").split(","):
        os.kill(os.getpid(), signal.SIGKILL)


def memory_ledger(model: Any, documents: Any, *, k: int | None, shard_size: int = 256) -> Ledger:
    """The ledger of ``model`` over ``documents`` computed in memory, never written: a redacted run's
    ledger (every document's token ids and plain ids) exists only in this process, so nothing
    decodable is left on disk whatever kills it. The same numbers as the on-disk pass
    (:func:`~lmleak.ledger.ledger.build_ledger`), scored ``shard_size`` documents at a time."""
    access, k_avail = model_access(model)
    if access == "top_k":
        k_avail = k
    docs = list(documents)
    ids: list[Any] = []
    stats: list[Any] = []
    starts = range(0, len(docs), max(1, shard_size))
    for start in progress.track(starts, total=len(starts), description="ledger (in memory)", unit="shards"):
        batch = [encode_long(model.tokenizer, d.text) for d in docs[start : start + shard_size]]
        stats += score_documents(model, batch, k=k_avail)
        ids += batch
    ledger = Ledger.from_stats(
        [d.doc_id for d in docs], [d.user_id for d in docs], ids, stats, k_available=k_avail
    )
    ledger.meta = {
        "model": getattr(model, "name", type(model).__name__),
        "access": access,
        "k_available": k_avail,
        "max_length": getattr(model, "max_length", None),
        "overlap": getattr(model, "overlap", None),
        "num_docs": ledger.num_docs,
        "num_tokens": ledger.num_tokens,
        **scoring_convention(model),
    }
    return ledger


def unredacted_leftovers(run_dir: str | Path) -> list[str]:
    """Files of an earlier unredacted report in ``run_dir`` that a redacted report must not sit beside."""
    run = Path(run_dir)
    found = [name for name in ("ledger", "leave-out-model") if (run / name).exists()]
    summary = run / "summary.json"
    if summary.exists():
        import json

        try:
            redacted = json.loads(summary.read_text(encoding="utf-8")).get("redacted")
        except (OSError, ValueError):
            redacted = None
        if redacted is not True:
            found.append("summary.json")
    return found


def write_run(
    out_dir: str | Path,
    produce: Callable[[Path], Any],
    *,
    redact: bool = False,
    key_file: str | Path | None = None,
    after: Callable[[Path, Redactor | None], Any] | None = None,
) -> Any:
    """``produce(folder)`` — a command that writes a run into ``folder`` — into ``out_dir``, redacted
    when asked (the ``--redact`` / ``--redact-key-file`` of ``exposure``, ``mia``, ``probe run``,
    ``extract`` and ``dp-audit run``).

    Unredacted, ``produce(out_dir)`` runs as is and its result is returned. Redacted, the key is read
    first (:func:`redactor_from`: a key file outside the run, ``$LMLEAK_REDACT_KEY``, or random and
    discarded) and a run folder holding unredacted results is refused, both before any work; then
    ``produce`` writes into the run's private scratch (:func:`private_scratch`), :func:`redact_stage_dir` copies its
    Parquet tables and JSON summaries into ``out_dir`` through the whitelists (texts, secrets,
    prompts, generations, figures, models and shards stay behind and are deleted), ``summary.json``
    gains ``redaction`` (the key's source, never the key), and that redacted summary is returned: a
    caller never holds the unredacted one. ``after(out_dir, redactor)`` (None unredacted), when given,
    runs last on the finished run and its result is returned: what is built from the redacted files
    under the same key, as the audit builds ``users.parquet`` from its redacted stages.

    Example:
        >>> import json, tempfile, pathlib
        >>> from lmleak.runs import write_summary
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "run"
        >>> s = write_run(out, lambda d: write_summary(d, {"attack": "demo", "secret": "555-0100"}), redact=True)
        >>> s["attack"], s["secret"], s["redacted"], s["redaction"]["key"] in ("random, discarded", f"environment variable {KEY_ENV}")
        ('demo', None, True, True)
        >>> "555-0100" in (out / "summary.json").read_text()
        False
    """
    out = Path(out_dir)
    if not redact:
        if key_file is not None:
            raise ConfigError("--redact-key-file needs --redact", field="--redact-key-file")
        result = produce(out)
        return after(out, None) if after is not None else result
    redactor = redactor_from(key_file, run_dir=out)
    leftovers = unredacted_leftovers(out)
    if leftovers:
        raise ConfigError(
            f"{out} already holds unredacted results ({', '.join(leftovers[:3])})",
            field="--redact",
            hint="give a new, empty run directory for a redacted run",
        )
    with open_run(out, redacted=True), private_scratch(out) as scratch:
        work = scratch / "run"
        produce(work)
        sigkill_at("redacted-produced")
        redact_stage_dir(work, out, redactor)
        summary = {**read_summary(out), "redaction": redactor.describe()}
        atomic_write_json(out / "summary.json", summary)
    return after(out, redactor) if after is not None else summary
