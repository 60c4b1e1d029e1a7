"""The one-run DP audit as a training experiment (Steinke, Nasr & Jagielski 2023): insert m canaries,
each with probability 1/2, train once, score them, and bound epsilon from below.

The maths (the bound, the guesses, canary scoring) lives in :mod:`lmleak.attacks.dp_audit`; this
module trains, so it sits above the methods layer (attacks may not import train).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lmleak.attacks.dp_audit import (
    DPAuditConfig,
    DPAuditSettings,
    audit_scores,
    audit_statement,
    canary_documents,
    epsilon_lower_bound,
    limit_statement,
    make_canaries,
    score_canaries,
)
from lmleak.attacks.fdp_audit import gdp_epsilon
from lmleak.audit.dp_training import DPAuditTraining
from lmleak.data.canaries import CRAFTED_ALPHABET, crafted_characters_in, crafted_tokens
from lmleak.data.corpus import Corpus, Document
from lmleak.data.loaders import load_corpus
from lmleak.errors import ConfigError
from lmleak.models.base import scoring_convention
from lmleak.models.small import build_tokenizer, load_small_model
from lmleak.render.html import render_report
from lmleak.report.redaction import write_run
from lmleak.runs import atomic_write_json, secure_dir, write_parquet, write_summary
from lmleak.scenarios import scenario_record
from lmleak.train.accounting import group_privacy
from lmleak.train.trainer import split_users, train_model

__all__ = ["DPAuditConfig", "DPAuditSettings", "DPAuditTraining", "run_dp_audit", "run_dp_audit_with_report"]


def run_dp_audit(
    corpus_path: str | Path,
    out_dir: str | Path,
    train_config: Any,
    audit: DPAuditSettings | None = None,
    *,
    progress: bool = True,
) -> dict[str, Any]:
    """Insert canaries, train once, score, guess and bound; write the run directory.

    Writes ``RUN/model/`` (the trained model; its ``privacy.json`` gains ``epsilon_lower_bound`` and
    ``dp_audit``), ``RUN/canaries.parquet`` (secret, included, score, guess, correct per canary) and
    ``RUN/summary.json`` (``attack: dp_audit``, the accountant's ``dp_epsilon`` beside the measured
    ``epsilon_lower_bound``, ``max_certifiable_epsilon`` and the null, the KART scenario); with
    ``audit.placebo`` no canary is trained on (everything else the same), and the bound must be 0.
    Validation users are split off the corpus before
    the canaries are added, so no canary is ever held out; unless ``train_config.tokenizer_from``
    names one, the tokenizer is learnt from the corpus plus every digit, never from the canaries, so
    the vocabulary does not depend on the inclusion (``privacy.json`` records it as
    ``private:corpus-without-canaries``: the corpus's own users are not covered by DP through it).
    """
    audit = audit or DPAuditSettings()
    base = load_corpus(corpus_path)  # every input and setting is checked before the run folder exists
    canaries = make_canaries(
        audit.m, prefix=audit.canary_prefix, digits=audit.digits, seed=audit.seed, design=audit.canary_design
    )
    if audit.canary_design == "crafted":
        _check_crafted_is_new(base, corpus_path)
    run = secure_dir(out_dir)
    result, num_train_documents = _train_with_canaries(
        base, str(corpus_path), run, train_config, audit, canaries, progress=progress
    )
    model = load_small_model(result.model_dir)
    _check_one_sequence(canaries, model.tokenizer.encode(canaries[0]["text"]), train_config)
    scores = score_canaries(model, canaries)
    included = [c["included"] for c in canaries]
    privacy = dict(result.privacy)
    claim = claim_in_unit(privacy, audit.privacy_unit, audit.documents_per_canary)
    delta = audit.delta if audit.delta is not None else (claim["delta"] or 1e-5)
    rec = audit_scores(
        scores, included, m=audit.m, r=audit.r, delta=float(delta), confidence=audit.confidence
    )
    guesses = rec.pop("guesses")
    write_parquet(
        _canary_table(canaries, scores, guesses, audit.documents_per_canary), run / "canaries.parquet"
    )
    record = _record(rec, audit, included)
    privacy["epsilon_lower_bound"] = rec["epsilon_lower_bound"]
    privacy["dp_audit"] = record
    atomic_write_json(result.model_dir / "privacy.json", privacy)
    summary = {
        **_summary(result, train_config, claim, record, num_train_documents),
        **scoring_convention(model),
    }
    write_summary(run, summary, model=str(result.model_dir), corpus=corpus_path)
    (run / "dp_audit.json").write_text(json.dumps(record, indent=2))
    return summary


def run_dp_audit_with_report(
    corpus_path: str | Path,
    out_dir: str | Path,
    train_config: Any,
    audit: DPAuditSettings | None = None,
    *,
    progress: bool = True,
    redact: bool = False,
    redact_key_file: str | Path | None = None,
) -> dict[str, Any]:
    """:func:`run_dp_audit`, then the run's ``report.html`` (the work of ``lmleak dp-audit run``).

    ``redact`` writes the run redacted (:func:`lmleak.report.redaction.write_run`, the key from
    ``redact_key_file``, ``$LMLEAK_REDACT_KEY`` or random): the canaries' secrets, the corpus and the
    trained model stay in a private folder that is deleted; the tables, summaries and the report
    hold numbers, labels and keyed ids.

    Returns:
        The run's summary (redacted with ``redact``) with ``report``, the path of the HTML report,
        added (``summary.json`` itself stays as written).
    """
    summary = write_run(
        out_dir,
        lambda d: run_dp_audit(corpus_path, d, train_config, audit, progress=progress),
        redact=redact,
        key_file=redact_key_file,
    )
    summary["report"] = str(render_report(out_dir))
    return summary


def _train_with_canaries(
    base: Corpus,
    source: str,
    run: Path,
    train_config: Any,
    audit: DPAuditSettings,
    canaries: list[dict[str, Any]],
    *,
    progress: bool,
) -> tuple[Any, int]:
    """Train once into ``run/model`` on ``base``'s training users plus the included canaries;
    returns the training result and the number of training documents."""
    train_part, val = split_users(base, train_config.holdout_users, train_config.seed)
    # a placebo run trains on none; a user-level canary is a person with several documents
    added = canary_documents(canaries, audit.documents_per_canary, placebo=audit.placebo)
    docs = list(train_part) + [Document(user, doc_id, text) for user, doc_id, text in added]
    train_corpus = Corpus(docs, source=source)
    tok_source = None
    tokenizer = None
    if train_config.tokenizer_from is None:
        kind: Any = train_config.tokenizer or ("bpe" if train_config.arch == "gpt" else "word")
        tokenizer = build_tokenizer(
            [*base.texts(), audit.canary_prefix + "0123456789"], kind=kind, vocab_size=train_config.vocab_size
        )
        if (
            audit.canary_design == "crafted"
        ):  # new tokens (Panda et al.): one per rune, whatever the coin flips
            tokenizer.add_tokens(crafted_tokens())
        # the corpus's own text, without canaries: outside the DP guarantee for the corpus's users
        # (as resolve_tokenizer warns), but independent of the canaries, which is what the audit tests
        tok_source = "private:corpus-without-canaries"
        _check_one_sequence(
            canaries, tokenizer.encode(canaries[0]["text"], add_special_tokens=False), train_config
        )
    result = train_model(
        train_corpus,
        run / "model",
        train_config,
        val_corpus=val,
        progress=progress,
        tokenizer=tokenizer,
        tokenizer_source=tok_source,
    )
    return result, len(train_corpus)


def _record(rec: dict[str, Any], audit: DPAuditSettings, included: Sequence[bool]) -> dict[str, Any]:
    """The ``dp_audit`` record: the counts and bound, with what one canary was and how it was drawn."""
    return {
        **rec,
        "privacy_unit": audit.privacy_unit,
        "canary_documents": audit.documents_per_canary,
        "num_included": int(sum(included)),
        "placebo": audit.placebo,
        "num_trained_canaries": 0 if audit.placebo else int(sum(included)),
        "score": "logprob(secret | prefix)",
        "seed": audit.seed,
        "canary_design": audit.canary_design,
        "canary_format": f"{audit.canary_prefix}<{audit.digits} digits>"
        if audit.canary_design == "random"
        else f"{audit.canary_prefix}<{audit.digits} of {CRAFTED_ALPHABET[:10]}>",
        "config": asdict(audit),
    }


def claim_in_unit(privacy: dict[str, Any], unit: str, documents: int) -> dict[str, Any]:
    """The DP claim about one canary of the audit: ``epsilon`` and ``delta`` (None without DP), the
    unit the model was trained with (``training_privacy_unit``) and ``claim_basis``.

    A user-level claim covers a person, so a sequence canary (a person with one document) and a
    canary user alike. A sequence-level claim covers one canary user of ``documents`` sequences only
    by group privacy: ``(K ε, K e^{(K-1) ε} δ)`` (:func:`lmleak.train.accounting.group_privacy`) —
    the per-person claim the audit then tests.

    Example:
        >>> c = claim_in_unit({"epsilon": 0.5, "delta": 1e-6, "privacy_unit": "sequence"}, "user", 4)
        >>> c["epsilon"], round(c["delta"], 10), c["training_privacy_unit"]
        (2.0, 1.79268e-05, 'sequence')
        >>> claim_in_unit({"epsilon": 0.5, "delta": 1e-6, "privacy_unit": "user"}, "user", 4)["epsilon"]
        0.5
        >>> c = claim_in_unit({"epsilon": 5.0, "delta": 1e-5, "privacy_unit": "sequence"}, "user", 4)
        >>> c["epsilon"], c["trained_epsilon"], c["claim_basis"].endswith("no guarantee at all for such a person")
        (None, 5.0, True)
    """
    eps, delta, trained = privacy.get("epsilon"), privacy.get("delta"), privacy.get("privacy_unit")
    out = {"epsilon": eps, "delta": delta, "training_privacy_unit": trained, "trained_epsilon": eps}
    if eps is None:
        return {**out, "claim_basis": "no DP claim (plain training)"}
    if unit == "user" and trained == "sequence" and documents > 1:
        eps_k, delta_k = group_privacy(float(eps), float(delta or 0.0), documents)
        basis = (
            f"per person by group privacy: the model claims ε = {float(eps):.3g} per training sequence, "
            f"and a canary user wrote {documents} sequences, so (Kε, K e^((K-1)ε) δ) with K = {documents}"
        )
        if not delta_k < 1.0:  # (Kε, δ_K ≥ 1) holds of every algorithm: nothing is claimed per person
            basis += f" = ({eps_k:.3g}, {delta_k:.3g}): δ ≥ 1, so no guarantee at all for such a person"
            return {**out, "epsilon": None, "delta": None, "claim_basis": basis}
        return {**out, "epsilon": eps_k, "delta": delta_k, "claim_basis": basis}
    return {**out, "claim_basis": f"as trained (privacy unit: {trained or 'unrecorded'})"}


def _canary_table(
    canaries: list[dict[str, Any]], scores: Any, guesses: Sequence[int], documents: int = 1
) -> Any:
    """``canaries.parquet``: per canary (a user, at user level) its secret, whether it was included,
    the documents it adds when included, its score and the guess."""
    import pandas as pd

    included = [c["included"] for c in canaries]
    return pd.DataFrame(
        {
            "canary_id": [c["canary_id"] for c in canaries],
            "user_id": [c["user_id"] for c in canaries],
            "secret": [c["secret"] for c in canaries],
            "included": included,
            "documents": [documents] * len(canaries),
            "logprob": scores,
            "guess": guesses,
            "correct": [bool(g != 0 and (g > 0) == inc) for g, inc in zip(guesses, included, strict=True)],
        }
    )


def _summary(
    result: Any, train_config: Any, claim: dict[str, Any], record: dict[str, Any], num_train_documents: int
) -> dict[str, Any]:
    """``summary.json``: the accountant's ε beside the measured lower bound and the most this audit
    could certify, the null it is read against, and the KART scenario.

    ``claim_violated`` is decided at the *claimed* δ only: a bound computed at a smaller ``--delta``
    is larger, and would "refute" an (ε, δ) claim that the counts do not refute. The bound at the
    claimed δ (``epsilon_lower_bound_at_claimed_delta``) is computed from the same counts for that."""
    claimed = claim["epsilon"]  # about one canary: per person for a canary user (claim_in_unit)
    eps = record["epsilon_lower_bound"]
    out = {
        **claim_check(claimed, claim["delta"], record),
        "attack": "dp_audit",
        "model": str(result.model_dir),
        "mode": train_config.mode,
        "privacy_unit": record["privacy_unit"],  # what one canary is: the unit the bound is about
        "canary_documents": record["canary_documents"],
        "training_privacy_unit": claim["training_privacy_unit"],
        "dp_epsilon_trained": claim["trained_epsilon"],  # privacy.json's ε, per its own unit
        "claim_basis": claim["claim_basis"],
        "dp_epsilon": claimed,
        "dp_delta": claim["delta"],
        "epsilon_lower_bound": eps,
        # the f-DP bound from the same guesses, under its Gaussian trade-off assumption (stated)
        "epsilon_lower_bound_fdp": record.get("epsilon_lower_bound_fdp"),
        "mu_lower_bound": record.get("mu_lower_bound"),
        "fdp_assumption": record.get("fdp_assumption"),
        "fdp_note": record.get("fdp_note"),
        "canary_design": record.get("canary_design", "random"),
        "max_certifiable_epsilon": record["max_certifiable_epsilon"],
        "claim_beyond_reach": bool(
            claimed is not None and float(claimed) >= record["max_certifiable_epsilon"]
        ),
        "placebo": record["placebo"],
        "null": record["null"]["statement"],
        "dp_audit": record,
        "statement": audit_statement(claimed, eps, record["confidence"], record["privacy_unit"]),
        "limit": limit_statement(record["m"], record["r"], record["max_certifiable_epsilon"], claimed),
        "train": {"final": result.final, "num_train_documents": num_train_documents},
        "scenario": _scenario(claim, record),
    }
    if claimed is None and claim["trained_epsilon"] is not None:  # group privacy left no per-person claim
        out["statement"] = out["statement"].replace(
            "no DP claim (ε = ∞)",
            f"no per-person DP claim (ε = {float(claim['trained_epsilon']):.3g} per training sequence; "
            f"group privacy over {record['canary_documents']} sequences gives δ ≥ 1)",
        )
    if record["placebo"]:
        out["statement"] = "placebo run (no canary trained on): " + out["statement"]
        if eps > 0:  # happens with probability at most 1 - confidence; more often means a broken pipeline
            out["placebo_warning"] = (
                f"a placebo run certified ε ≥ {eps:.3g} although no canary was trained on: "
                f"this happens with probability at most {1 - record['confidence']:.0%}; rerun with "
                "another --seed, and if it persists the scores depend on the inclusion by another route"
            )
    return out


def _scenario(claim: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """The audit's KART record: scores access, membership of a canary (a person at user level)."""
    user = record["privacy_unit"] == "user"
    return scenario_record(
        attack="dp_audit_one_run",
        access="scores",
        target="membership",
        knowledge=("canary_prefix", "secret_format"),
        anonymization=_dp_label(claim),
        notes="one-run DP audit (Steinke, Nasr & Jagielski 2023): the auditor inserts canaries with "
        "probability 1/2 and guesses their membership from log p(secret | prefix)"
        + (
            f"; each canary is a user with {record['canary_documents']} documents carrying its secret"
            if user
            else ""
        ),
    )


def _dp_label(claim: dict[str, Any]) -> str:
    """The KART A factor of the audited training: ``dp[UNIT]:ε`` as trained (``identity`` without DP)."""
    eps, unit = claim.get("trained_epsilon"), claim.get("training_privacy_unit")
    if eps is None:
        return "identity"
    return f"dp[{unit}]:{float(eps):.3g}" if unit in ("user", "sequence") else f"dp:{float(eps):.3g}"


def claim_check(claimed: float | None, claimed_delta: float | None, record: dict[str, Any]) -> dict[str, Any]:
    """Whether the counts refute an (ε, δ) claim, decided at the claimed δ (the record's own δ when the
    claim names none): ``epsilon_lower_bound_at_claimed_delta``, ``claimed_delta``, ``claim_violated``.

    Example (1,000 canaries, 100 guesses, all right: the bound is 3.49 at δ = 0 but 0.81 at the
    claimed δ = 1e-3, so a claim of ε = 3 is not refuted):
        >>> rec = {"m": 1000, "r": 100, "v": 100, "delta": 0.0, "confidence": 0.95, "epsilon_lower_bound": 3.493}
        >>> c = claim_check(3.0, 1e-3, rec)
        >>> c["claim_violated"], round(c["epsilon_lower_bound_at_claimed_delta"], 2)
        (False, 0.81)
        >>> claim_check(3.0, 0.0, rec)["claim_violated"]
        True
    """
    delta = float(record["delta"] if claimed_delta is None else claimed_delta)
    if delta == float(record["delta"]) and "epsilon_lower_bound" in record:
        at_claim = float(record["epsilon_lower_bound"])
    else:
        at_claim = epsilon_lower_bound(
            int(record["m"]), int(record["r"]), int(record["v"]), delta, float(record["confidence"])
        )
    mu = record.get("mu_lower_bound")
    fdp_at_claim = gdp_epsilon(float(mu), delta) if mu is not None and delta > 0 else None
    return {
        "claimed_delta": delta,
        "epsilon_lower_bound_at_claimed_delta": at_claim,
        "claim_violated": bool(claimed is not None and at_claim > float(claimed)),
        # under the Gaussian trade-off assumption only (None at δ = 0, where it is not given)
        "epsilon_lower_bound_fdp_at_claimed_delta": fdp_at_claim,
        "claim_violated_fdp": None
        if fdp_at_claim is None or claimed is None
        else bool(fdp_at_claim > float(claimed)),
    }


def _check_crafted_is_new(base: Corpus, corpus_path: str | Path) -> None:
    """Crafted canaries are new tokens only in a corpus that never uses their characters."""
    seen = crafted_characters_in(base.texts())
    if seen:
        raise ConfigError(
            f"{corpus_path}: the corpus already uses {''.join(sorted(seen))}, characters of the crafted "
            "canaries, so they would not be new tokens",
            field="canary_design",
            hint="use --canary-design random for this corpus",
        )


def _check_one_sequence(
    canaries: Sequence[dict[str, Any]], sample_ids: Sequence[int], train_config: Any
) -> None:
    """Each canary must be one training sequence, the privacy unit of the DP modes: a canary cut into
    several chunks is a group of units, and a bound above the per-unit ε would not refute the claim."""
    if len(sample_ids) + 2 > train_config.seq_len + 1:  # BOS and EOS travel with it
        raise ConfigError(
            f"a canary takes {len(sample_ids) + 2} tokens with BOS/EOS, more than one training "
            f"sequence ({train_config.seq_len} + 1)",
            field="seq_len",
            hint="raise --seq-len, or use fewer secret digits",
        )
