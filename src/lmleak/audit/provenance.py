"""Is a run still about the files it names? The gate's provenance check (issue 25).

A run records the fingerprints of its model files and its corpus file (``provenance`` in
``summary.json``; :mod:`lmleak.fingerprints`). :func:`changed_inputs` recomputes them from the same
paths — the fast fingerprint, or the full SHA-256 when the run recorded that — and lists every
difference; :func:`refuse_changed_inputs` (called by ``lmleak gate``) refuses the run when there is
one, unless ``--allow-changed``: a release gate must not pass a model it did not measure.

What is checked: every model with local files (``provenance.model``, or each of an audit's
``provenance.models``) and the corpus — a file by its SHA-256, a folder by its manifest (every
file's relative path, size and SHA-256), one line per file added, removed or changed. A model behind
an HTTP API is not: checking it means asking the server, and the gate contacts nothing (its
fingerprint is in the run for a later audit to compare).

Fail closed (issue 33): a summary with no provenance (a run written before provenance existed, or
one whose provenance was removed), a model or corpus ``hash`` kind this version does not know, or a
corpus recorded without a fingerprint (an older lmleak's "not a file: not hashed" folder) is
refused like a changed input; ``--allow-changed`` gates it anyway, saying each reason in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmleak.errors import RunError
from lmleak.fingerprints import corpus_record, files_fingerprint, folder_manifest, manifest_digest
from lmleak.runs import check_run, read_summary

#: The model ``hash`` kinds this version checks or knows it cannot: local files (fast, full), a
#: model behind an HTTP API (probe), a model built in memory (None, with no path).
MODEL_HASHES: tuple[str | None, ...] = (None, "fast", "full", "probe")
#: The corpus ``hash`` kinds: a file (no key: size and SHA-256), a folder (manifest), no such path.
CORPUS_HASHES: tuple[str | None, ...] = (None, "manifest", "missing")
#: Files of a corpus folder named one by one in the gate's lines (then "and N more").
SHOWN_CHANGES = 10


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


def corpus_changes(rec: dict[str, Any]) -> list[str]:
    """Why a recorded corpus no longer matches, or cannot be checked, one line per difference
    (empty: it matches).

    A file is compared by size and SHA-256; a folder by its manifest's digest, one line per file
    added, removed or changed (the first :data:`SHOWN_CHANGES` named). A record that fingerprints
    nothing (an older lmleak's "not a file: not hashed", a hash kind this version does not know, no
    ``sha256``) is a change too: the gate cannot tell that the run measured these files.
    """
    kind = rec.get("hash")
    path = Path(str(rec.get("path")))
    if kind not in CORPUS_HASHES:
        return [f"{path}: unknown hash kind {kind!r} (known: {', '.join(map(str, CORPUS_HASHES[1:]))})"]
    if kind == "missing":
        return [f"{path} did not exist when the run was written: the run measured no corpus file"]
    if rec.get("sha256") and not rec.get("path"):
        return []  # a redacted copy keeps the hash, not the path: said by unverified_inputs
    if not rec.get("sha256"):
        note = f" ({rec['note']})" if rec.get("note") else ""
        return [f"{path} was not fingerprinted{note}: the gate cannot tell which corpus the run measured"]
    if kind == "manifest":
        return _folder_changes(path, rec)
    if not path.is_file():
        return [f"{path} no longer exists" + (" as a file" if path.exists() else "")]
    now = corpus_record(path)
    assert now is not None
    if (now["size"], now["sha256"]) == (rec.get("size"), rec.get("sha256")):
        return []
    return [
        f"{path} changed since the run (size {rec.get('size')} -> {now['size']}, sha256 "
        f"{str(rec['sha256'])[:12]} -> {now['sha256'][:12]})"
    ]


def _folder_changes(path: Path, rec: dict[str, Any]) -> list[str]:
    """The files of a corpus folder added, removed or changed since its manifest was recorded."""
    if not path.is_dir():
        return [f"{path} no longer exists as a folder"]
    now = folder_manifest(path)
    if manifest_digest(now) == rec.get("sha256"):
        return []
    old = rec.get("manifest")
    if not isinstance(old, list):
        return [f"{path} changed since the run (its manifest digest differs; the file list was not kept)"]
    before = {str(f.get("path")): f for f in old if isinstance(f, dict)}
    after = {f["path"]: f for f in now}
    lines = [f"{path}/{n} added" for n in sorted(set(after) - set(before))]
    lines += [f"{path}/{n} removed" for n in sorted(set(before) - set(after))]
    for n in sorted(set(before) & set(after)):
        b, a = before[n], after[n]
        if (b.get("size"), b.get("sha256")) != (a["size"], a["sha256"]):
            lines.append(
                f"{path}/{n} changed (size {b.get('size')} -> {a['size']}, sha256 "
                f"{str(b.get('sha256'))[:12]} -> {a['sha256'][:12]})"
            )
    if not lines:  # the same files, the digest tampered with
        return [f"{path} changed since the run (its manifest digest differs)"]
    more = len(lines) - SHOWN_CHANGES
    return lines[:SHOWN_CHANGES] + (
        [f"{path}: and {more} more files added, removed or changed"] if more > 0 else []
    )


def unchecked_provenance(summary: dict[str, Any]) -> list[str]:
    """Why a summary's provenance cannot be checked at all: none recorded, nothing in it, or a model
    with a hash kind this version does not know (issue 33: such a run passed the gate unchecked).

    Example:
        >>> unchecked_provenance({"unique_sequences": 1})[0][:40]
        'provenance: the summary records none (no'
        >>> unchecked_provenance({"provenance": {"model": {"hash": "md5", "spec": "/m"}}})
        ["model /m: unknown hash kind 'md5' (known: fast, full, probe)"]
    """
    prov = summary.get("provenance")
    if not isinstance(prov, dict):
        return [
            "provenance: the summary records none (no fingerprint of the model or corpus it measured), so "
            "the gate cannot tell whether it measured the files it names; re-run it with this lmleak"
        ]
    out = []
    models = _recorded_models(summary)
    if not models and not isinstance(prov.get("corpus"), dict):
        out.append("provenance: it records neither a model nor a corpus, so there is nothing to check")
    for name, rec in models.items():
        kind = rec.get("hash")
        if kind not in MODEL_HASHES:
            out.append(
                f"model {name}: unknown hash kind {kind!r} (known: {', '.join(map(str, MODEL_HASHES[1:]))})"
            )
        elif kind is None and rec.get("path"):
            out.append(f"model {name}: {rec['path']} was recorded without a fingerprint")
    return out


def unverified_inputs(summary: dict[str, Any]) -> list[str]:
    """Fingerprinted inputs the gate cannot re-check because their record keeps no path (a redacted
    stage's summary drops paths): said in one line each, not refused — the hashes are in the run for
    whoever holds the files.

    Example:
        >>> unverified_inputs({"provenance": {"corpus": {"path": None, "size": 3, "sha256": "ab"}}})
        ['corpus: recorded without its path (a redacted run keeps none), so not re-checked']
    """
    prov = summary.get("provenance")
    if not isinstance(prov, dict):
        return []
    out = [
        f"model {name}: recorded without its path (a redacted run keeps none), so not re-checked"
        for name, rec in _recorded_models(summary).items()
        if rec.get("hash") in ("fast", "full") and not rec.get("path")
    ]
    corpus = prov.get("corpus")
    if isinstance(corpus, dict) and corpus.get("sha256") and not corpus.get("path"):
        out.append("corpus: recorded without its path (a redacted run keeps none), so not re-checked")
    return out


def changed_inputs(run_dir: str | Path) -> list[str]:
    """One line per model or corpus file that no longer matches the run's ``provenance``, and per
    thing that cannot be checked (:func:`unchecked_provenance`, :func:`corpus_changes`).

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
    out = unchecked_provenance(summary)
    for name, rec in _recorded_models(summary).items():
        why = model_change(rec) if rec.get("hash") in MODEL_HASHES else None
        if why:
            out.append(f"model {name}: {why}")
    corpus = (summary.get("provenance") or {}).get("corpus")
    if isinstance(corpus, dict):
        out += [f"corpus: {why}" for why in corpus_changes(corpus)]
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
            f"{run_dir} measured other files than the ones it names now, or cannot show that it did: "
            f"{' | '.join(changes)}; "
            "re-run the audit on the current files, or pass --allow-changed to gate the old results anyway"
        )
    say = echo or (lambda s: None)
    for change in changes:
        say(f"changed since the run (allowed by --allow-changed): {change}")
    for note in unverified_inputs(read_summary(run_dir)):
        say(f"not re-checked: {note}")
    return changes
