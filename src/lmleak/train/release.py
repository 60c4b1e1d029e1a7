"""What a release decision needs from a training run, beside the model: ε with its unit and δ, what a
sequence-level ε means for the most prolific person, the warnings (sampler, health, quality, γ), and
the command that audits the model beside the one it replaces.

Everything here reads records a run already wrote (``privacy.json``, ``train.json``): no training, no
model. :func:`dp_summary` gives the keys the HTML card and the gate read (``dp_epsilon``,
``dp_delta``, ``privacy_unit``, ``group_privacy_epsilon_largest_user``, ``largest_user_sequences`` …).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from lmleak.train.confidentiality import delta_text
from lmleak.words import plural

#: validation perplexity more than this many times the reference's is called a collapse
PERPLEXITY_COLLAPSE = 2.0


def dp_summary(privacy: dict[str, Any]) -> dict[str, Any]:
    """The DP keys of a training summary (all None for a run without DP).

    Example:
        >>> s = dp_summary({"mode": "dp", "epsilon": 2.5, "delta": 1e-5, "privacy_unit": "user",
        ...                 "max_sequences_per_user": 4, "sampler": "poisson"})
        >>> s["dp_epsilon"], s["privacy_unit"], s["group_privacy_epsilon_largest_user"]
        (2.5, 'user', None)
    """
    keys = (
        "max_sequences_per_user",
        "sampler",
        "sampler_warning",
        "epsilon_poisson_accountant",
        "users",
        "largest_user_sequences",
        "group_privacy_epsilon_largest_user",
        "group_privacy_delta_largest_user",
        "guarantee",
    )
    out: dict[str, Any] = {
        "dp_epsilon": privacy.get("epsilon"),
        "dp_delta": privacy.get("delta"),
        "privacy_unit": privacy.get("privacy_unit"),
        **{k: privacy.get(k) for k in keys},
    }
    out["epsilon_statement"] = epsilon_statement(privacy)
    return out


def _g(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.3g}"


def epsilon_statement(privacy: dict[str, Any]) -> str | None:
    """One line: ε with its unit and δ, and for a sequence-level run what it means for the person
    with the most sequences (group privacy, stated as such). None without DP.

    Example:
        >>> epsilon_statement({"mode": "dp", "epsilon": 2.114, "delta": 1e-5, "privacy_unit": "user",
        ...                    "max_sequences_per_user": 4})
        'epsilon = 2.11 per person (user-level DP, delta = 1e-05; each person contributes at most 4 sequences per step)'
    """
    eps, delta = privacy.get("epsilon"), privacy.get("delta")
    if eps is None:
        return None
    unit = privacy.get("privacy_unit")
    scope = " for the tokens the policy flagged" if privacy.get("mode") == "sdp" else ""
    if unit == "user":
        k = privacy.get("max_sequences_per_user")
        per = f"; each person contributes at most {plural(k, 'sequence')} per step" if k else ""
        return f"epsilon = {_g(eps)} per person{scope} (user-level DP, delta = {delta:g}{per})"
    line = f"epsilon = {_g(eps)} per training sequence{scope} (sequence-level DP, delta = {delta:g})"
    k = privacy.get("largest_user_sequences")
    if unit == "sequence" and k and privacy.get("group_privacy_epsilon_largest_user") is not None:
        g_eps, g_delta = (
            privacy["group_privacy_epsilon_largest_user"],
            privacy["group_privacy_delta_largest_user"],
        )
        # e^10 ≈ 22,000-fold odds, or a failure probability above 1 %: nothing a person can rely on
        vacuous = " — no meaningful protection" if g_delta > 0.01 or g_eps > 10 else ""
        line += (
            f"; for the person with the most sequences ({k}) group privacy gives only "
            f"epsilon = {_g(g_eps)}, delta = {delta_text(g_delta)}{vacuous} (not a user-level guarantee: "
            "train with --privacy-unit user for one)"
        )
    return line


def confidentiality_statement(privacy: dict[str, Any]) -> str | None:
    """CRT's confidentiality needs the policy's miss rate γ: with γ unknown, say so instead of letting
    an ε stand alone (it bounds the redacted training only, not the secrets the policy missed)."""
    if privacy.get("mode") != "crt":
        return None
    if privacy.get("gamma") is None:
        return (
            "confidentiality: unknown — the policy's miss rate gamma was not measured, so nothing bounds "
            "the secrets it missed; the epsilon covers the DP steps on D_pri only (pass --secrets "
            "secrets.jsonl to measure gamma, then `lmleak confidentiality`)"
        )
    return None


def perplexity_warning(
    val_perplexity: float | None,
    *,
    reference: float | None = None,
    reference_name: str | None = None,
    vocab_size: int | None = None,
) -> str | None:
    """A warning when validation perplexity collapsed: above :data:`PERPLEXITY_COLLAPSE` times the
    reference's (the base before fine-tuning, or the model this one replaces), or — with no
    reference — at least half the vocabulary size (close to guessing uniformly).

    Example:
        >>> perplexity_warning(90.0, reference=30.0, reference_name="the base")
        'validation perplexity 90 is 3x that of the base (30): the model lost much of its quality'
        >>> perplexity_warning(2862.0, vocab_size=4000)
        'validation perplexity 2.86e+03 is close to guessing uniformly among 4000 tokens: the model learnt little'
    """
    if val_perplexity is None or not math.isfinite(val_perplexity):
        return None
    if reference is not None and reference > 0:
        ratio = val_perplexity / reference
        if ratio > PERPLEXITY_COLLAPSE:
            return (
                f"validation perplexity {val_perplexity:.3g} is {ratio:.2g}x that of {reference_name} "
                f"({reference:.3g}): the model lost much of its quality"
            )
        return None
    if vocab_size and val_perplexity >= vocab_size / 2:
        return (
            f"validation perplexity {val_perplexity:.3g} is close to guessing uniformly among {vocab_size} "
            "tokens: the model learnt little"
        )
    return None


def replaced_perplexity(replaces: str | Path, model_dir: str | Path) -> tuple[float | None, str]:
    """(the replaced model's validation perplexity, why not) when it is comparable with this run's: the
    same held-out users and the same tokenizer (or the same base); (None, the reason) otherwise."""
    other, this = Path(replaces), Path(model_dir)
    try:
        theirs = json.loads((other / "train.json").read_text())
        ours = json.loads((this / "train.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None, f"{other} has no readable train.json"
    if sorted(theirs.get("val_users") or []) != sorted(ours.get("val_users") or []):
        return None, "it held out different users"
    same_tok = (
        (other / "tokenizer.json").is_file()
        and (this / "tokenizer.json").is_file()
        and ((other / "tokenizer.json").read_bytes() == (this / "tokenizer.json").read_bytes())
    )
    if not same_tok and not (theirs.get("base") and theirs.get("base") == ours.get("base")):
        return None, "it uses another tokenizer"
    return (theirs.get("final") or {}).get("val_perplexity"), ""


def reaudit_config(
    model_dir: str | Path,
    corpus: str | Path,
    *,
    replaces: str | Path | None = None,
    fine_tune: bool = False,
) -> str:
    """The text of an audit config (``lmleak audit``) for this model and the one it replaces, on the
    training corpus: the leakage report, membership from the held-out users, KART; for a fine-tune
    the base as the public model. Paths are absolute; strings are JSON-quoted (valid YAML)."""
    out = Path(model_dir).resolve()
    lines = [
        "# written by `lmleak train`: audits this model beside the one it replaces (`lmleak audit THIS_FILE`)",
        f"out: {json.dumps(str(out.parent / (out.name + '-audit')))}",
        "corpus:",
        f"  path: {json.dumps(str(Path(corpus).resolve()))}",
        "models:",
        f"  - name: {json.dumps(out.name)}",
        f"    path: {json.dumps(str(out))}",
    ]
    if replaces is not None:
        other = Path(replaces).resolve()
        name = other.name if other.name != out.name else f"{other.name}-replaced"
        lines += [f"  - name: {json.dumps(name)}", f"    path: {json.dumps(str(other))}"]
    lines += [
        f"public_model: {'base' if fine_tune else 'null'}",
        "analyses:",
        "  report: {}",
        "  mia: {}                        # members and non-members from each model's holdout.json",
        "  kart: true",
        "",
    ]
    return "\n".join(lines)
