"""Is a run still about the files it names? The gate's provenance check (issue 25).

A run records the fingerprints of its model files and its corpus file (``provenance`` in
``summary.json``; :mod:`lmleak.fingerprints`). :func:`changed_inputs` recomputes them from the same
paths — the fast fingerprint, or the full SHA-256 when the run recorded that — and lists every
difference; :func:`refuse_changed_inputs` (called by ``lmleak gate``) refuses the run when there is
one, unless ``--allow-changed``: a release gate must not pass a model it did not measure.

What is checked: every model with local files (``provenance.model``, or each of an audit's
``provenance.models``) and the corpus. A model behind an HTTP API is not: checking it means asking
the server, and the gate contacts nothing (its fingerprint is in the run for a later audit to
compare). A run written before provenance existed has nothing to check and passes this step.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmleak.errors import RunError
from lmleak.fingerprints import corpus_record, files_fingerprint
from lmleak.runs import check_run, read_summary


def _recorded_models(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    prov = summary.get("provenance") or {}
    models = {str(k): v for k, v in (prov.get("models") or {}).items() if isinstance(v, dict)}
    if isinstance(prov.get("model"), dict):
        models[str(summary.get("model") or prov["model"].get("spec") or "model")] = prov["model"]
    return models


def _files_diff(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> str:
    """Which files were added, removed or changed (by name)."""
    before = {str(f.get("name")): f for f in old}
    after = {str(f.get("name")): f for f in new}
    parts = []
    for label, names in (
        ("added", sorted(set(after) - set(before))),
        ("removed", sorted(set(before) - set(after))),
        ("changed", sorted(n for n in set(before) & set(after) if before[n] != after[n])),
    ):
        if names:
            parts.append(f"{label} {', '.join(str(n) for n in names)}")
    return "; ".join(parts) or "files changed"


def model_change(rec: dict[str, Any]) -> str | None:
    """Why a recorded model's files no longer match (None: they match, or there are none to check)."""
    if rec.get("hash") not in ("fast", "full") or not rec.get("path"):
        return None  # a model behind an API, or one built in memory
    path = Path(str(rec["path"]))
    if not path.exists():
        return f"{path} no longer exists"
    now = files_fingerprint(path, full=rec["hash"] == "full")
    if now["fingerprint"] == rec.get("fingerprint"):
        return None
    return (
        f"{path} changed since the run ({_files_diff(rec.get('files') or [], now['files'])}; {rec['hash']} "
        f"fingerprint {str(rec.get('fingerprint'))[:12]} -> {now['fingerprint'][:12]})"
    )


def corpus_change(rec: dict[str, Any]) -> str | None:
    """Why a recorded corpus file no longer matches (None: it matches, or was not hashed)."""
    if not rec.get("sha256") or not rec.get("path"):
        return None
    path = Path(str(rec["path"]))
    if not path.is_file():
        return f"{path} no longer exists"
    now = corpus_record(path)
    assert now is not None
    if (now["size"], now["sha256"]) == (rec.get("size"), rec.get("sha256")):
        return None
    return (
        f"{path} changed since the run (size {rec.get('size')} -> {now['size']}, sha256 "
        f"{str(rec['sha256'])[:12]} -> {now['sha256'][:12]})"
    )


def changed_inputs(run_dir: str | Path) -> list[str]:
    """One line per model or corpus whose files no longer match the run's ``provenance``.

    Example:
        >>> import tempfile, pathlib, json
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> corpus = d / "c.jsonl"
        >>> _ = corpus.write_text("a")
        >>> from lmleak.runs import write_summary
        >>> _ = write_summary(d, {"stage": "demo"}, corpus=corpus)
        >>> changed_inputs(d)
        []
        >>> _ = corpus.write_text("b")
        >>> changed_inputs(d)[0].startswith("corpus: " + str(corpus.resolve()) + " changed since the run")
        True
    """
    summary = read_summary(run_dir)
    out = []
    for name, rec in _recorded_models(summary).items():
        why = model_change(rec)
        if why:
            out.append(f"model {name}: {why}")
    corpus = (summary.get("provenance") or {}).get("corpus")
    if isinstance(corpus, dict) and (why := corpus_change(corpus)):
        out.append(f"corpus: {why}")
    return out


def refuse_changed_inputs(
    run_dir: str | Path, *, allow_changed: bool = False, echo: Callable[[str], None] | None = None
) -> list[str]:
    """Raise :class:`~lmleak.errors.RunError` when the run's model or corpus files changed since it was
    written (:func:`changed_inputs`); with ``allow_changed``, say each change through ``echo`` and go
    on. Returns the changes."""
    check_run(run_dir)
    changes = changed_inputs(run_dir)
    if changes and not allow_changed:
        raise RunError(
            f"{run_dir} measured other files than the ones it names now: {' | '.join(changes)}; "
            "re-run the audit on the current files, or pass --allow-changed to gate the old results anyway"
        )
    for change in changes:
        (echo or (lambda s: None))(f"changed since the run (allowed by --allow-changed): {change}")
    return changes
