# long: paper 002's experiment (§5, Figs. 2-6) end to end in the paper's order; its documented config alone is 100 lines
"""The evaluation of Confidentially Redacted Training (paper 002 §5, Figs. 2-6), end to end.

For each architecture and each policy false-negative rate γ (the screening policy degraded to
recall 1 - γ), train on the synthetic CustomerSim corpus with 10 canaries x 20 repeats
(``My ID is: <6 digits>``, §5.1) and evaluate:

=================  =========================================================================
method             training
=================  =========================================================================
``nodp``           plain SGD on the raw corpus (γ-independent reference)
``redact``         plain SGD on the redacted corpus ("No-DP ... with mask", Figs. 3-5)
``dp``             DP-SGD on the whole corpus (γ-independent)
``crt``            CRT: dedup + redact, SGD on the public part, DP-SGD on the private part
``sdp``            selective DP-SGD (LSTM only, as the paper; γ = 0 only, see :func:`plan`)
=================  =========================================================================

Measured per model: test perplexity (PPL) and top-1 accuracy (AccT1) from the trainer, ε of
the DP part, the Bayesian-confidentiality ε (Prop. 6 / Thm. 8: ``log(1 + γ(e^ε - 1))`` for
CRT; ∞ where a missed secret is trained on without noise), the highest exposure of the 10
canaries (rank of the most exposed canary among 10^6 candidates by the pruned trie search with
that canary's cost as threshold — exact; when that search would score more than
``exposure_max_nodes`` trie nodes the canary is far from memorised and its rank is estimated from
a uniform sample of candidates instead, ``exposure_method = "sampled"``), and the individual /
group membership-inference accuracy of A.4 (members: sentences holding protected secrets — the
customers' addresses — that were in training; non-members: the same sentences from a held-out
synthesis with another seed).

Caveat measured on the quick run: the trainer builds its word vocabulary from the (private)
training text, so members' names and streets are in-vocabulary while held-out ones are
``<unk>`` (1.7 % vs 11.7 % of tokens). That side channel survives DP-SGD and lifts MIA accuracy of
DP models above 50 %; a vocabulary built from public data would close it.

Outputs in the run directory: ``crt_table.parquet`` and ``.csv`` (one row per model),
``fig2_ppl_vs_epsilon.png`` ... ``fig6_amplification.png``, ``summary.json``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from lmleak.attacks.exposure import exposure, string_costs
from lmleak.attacks.membership import MembershipSettings, evaluate_membership
from lmleak.attacks.trie import (
    CanaryFormat,
    CandidateSpace,
    SearchBudgetExceeded,
    SearchStats,
    count_candidates,
    path_cost,
    rank_from_counts,
)
from lmleak.data.corpus import Corpus
from lmleak.data.loaders import load_corpus
from lmleak.data.synth.customersim import synthesize
from lmleak.errors import ConfigError
from lmleak.experiments._config import replace_validated, require_positive_counts
from lmleak.figures import pyplot, save_figure
from lmleak.jsonl import read_jsonl
from lmleak.models.base import SCORING_CONVENTION
from lmleak.models.evaluation import evaluate_model as quality
from lmleak.models.loading import load_model
from lmleak.models.small import load_small_model
from lmleak.pii import policies
from lmleak.pii.addresses import AddressDetector
from lmleak.pii.compose import UnionDetector
from lmleak.pii.evaluate import SECRET_FIELDS, Secret, evaluate_policy
from lmleak.pii.policies import POLICY_NAMES, DegradedPolicy
from lmleak.progress import track
from lmleak.runs import atomic_write_text, secure_dir, write_parquet, write_summary, writes_run
from lmleak.train.confidentiality import bayesian_confidentiality
from lmleak.train.finetune import FinetuneConfig, finetune
from lmleak.train.split import crt_split
from lmleak.train.trainer import TrainConfig, public_share, train_model
from lmleak.words import plural

METHODS = ("nodp", "redact", "dp", "crt", "sdp")
GAMMA_FREE = ("nodp", "dp")  # trained once per architecture
METHOD_COLORS = {
    "nodp": "tab:red",
    "redact": "tab:orange",
    "dp": "tab:blue",
    "crt": "tab:green",
    "sdp": "tab:purple",
}


@dataclass(frozen=True, slots=True)
class CRTExperimentConfig:
    """Sizes of the experiment. Defaults fit ~30 minutes on 2 CPU cores; :meth:`quick` ~5."""

    gammas: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)
    archs: tuple[str, ...] = ("lstm", "gpt")
    methods: tuple[str, ...] = METHODS
    users: int = 60
    dialogs_per_user: int = 3
    canaries: int = 10
    canary_repeats: int = 20
    epochs: int = 2
    batch_size: int = 32
    lr: float | None = None
    seq_len: int = 64
    tokenizer: str = "word"
    vocab_size: int = 2000
    target_epsilon: float = 3.0
    target_delta: float = 8e-5  # the paper's δ (Fig. 2)
    policy: str = "regex+address"
    conservative: str | None = "conservative"
    val_documents: int = 40
    exposure_max_nodes: int = 20000  # beyond this the best canary's rank is estimated by sampling
    exposure_sample: int = 4000
    mia_entity: str = "ADDRESS"
    # A.4's individual and group attacks: the library's membership settings (the experiment's seed wins)
    mia: MembershipSettings = field(default_factory=MembershipSettings)
    seed: int = 0
    # --base: LoRA fine-tunes of this pretrained model (arch "lora") instead of small models from scratch
    base: str | None = None
    lora: int = 8
    max_steps: int | None = None  # cap on each fine-tune's optimiser steps (CPU-sized runs)

    @classmethod
    def quick(cls) -> CRTExperimentConfig:
        """A few minutes on 2 cores: 24 users, one epoch, γ in {0, 0.5}, smaller MIA sets."""
        return cls(
            gammas=(0.0, 0.5),
            users=24,
            dialogs_per_user=2,
            epochs=1,
            seq_len=48,
            mia=MembershipSettings(num_per_side=200),
            val_documents=20,
            exposure_max_nodes=10000,
            exposure_sample=2000,
        )

    @classmethod
    def for_base(cls, base: str, *, gpu: bool) -> CRTExperimentConfig:
        """LoRA fine-tunes of ``base`` in place of the small models: the default sizes on a GPU; on the
        CPU a smoke-sized run (10 users, γ = 0 only, nodp / dp / crt, at most 6 steps per model)."""
        if gpu:
            return cls(base=base, archs=("lora",), methods=("nodp", "redact", "dp", "crt", "sdp"))
        return cls(
            base=base,
            archs=("lora",),
            methods=("nodp", "dp", "crt"),
            gammas=(0.0,),
            users=10,
            dialogs_per_user=2,
            canary_repeats=5,
            epochs=1,
            batch_size=8,
            seq_len=48,
            max_steps=6,
            mia=MembershipSettings(num_per_side=20, group_size=5),
            val_documents=5,
            exposure_max_nodes=2000,
            exposure_sample=200,
        )

    def with_options(self, **kw: Any) -> CRTExperimentConfig:
        """A copy with the options that are not None replaced, validated."""
        return replace_validated(self, **kw)

    def validate(self) -> None:
        bad = [a for a in self.archs if a not in (("lora",) if self.base else ("lstm", "gpt"))]
        if bad:
            raise ConfigError(
                f"unknown architecture {bad[0]!r}; use "
                + ("lora with --base" if self.base else "lstm or gpt"),
                field="archs",
            )
        if any(not 0.0 <= g <= 1.0 for g in self.gammas):
            raise ConfigError("every gamma must be in [0, 1]", field="gammas")
        require_positive_counts(self, ("epochs", "users", "dialogs_per_user", "batch_size", "seq_len"))
        if (
            self.users < self.canaries
        ):  # checked here: the synthesis' own message names no option of this command
            raise ConfigError(
                f"{plural(self.users, 'user')} cannot hold the experiment's {plural(self.canaries, 'canary')} "
                "(one user each)",
                field="users",
                hint=f"give --users {self.canaries} or more",
            )
        if self.lr is not None and not self.lr > 0:
            raise ConfigError(f"lr must be positive, got {self.lr}", field="lr")
        badm = [m for m in self.methods if m not in METHODS]
        if badm:
            raise ConfigError(f"unknown method {badm[0]!r}; use {', '.join(METHODS)}", field="methods")


def bayes_epsilon(method: str, gamma: float, epsilon: float | None) -> float:
    """Bayesian-confidentiality ε of a method (paper 002 Prop. 6, Thm. 8.3; uniform μ).

    CRT: ``log(1 + γ (e^ε - 1))``; DP-SGD on everything: ε; plain training: ∞, or 0 for
    redaction with a perfect policy (γ = 0); selective DP: ε at γ = 0, ∞ otherwise (a secret the
    policy misses is trained on without noise — the paper's Fig. 2 caption).

    Example:
        >>> round(bayes_epsilon("crt", 0.1, 1.0), 3)
        0.159
        >>> bayes_epsilon("redact", 0.0, None), bayes_epsilon("redact", 0.1, None)
        (0.0, inf)
    """
    if method == "crt":
        return math.inf if epsilon is None else bayesian_confidentiality(epsilon, 0.0, gamma)[0]
    if method == "dp":
        return math.inf if epsilon is None else float(epsilon)
    if method == "sdp":
        return (math.inf if epsilon is None else float(epsilon)) if gamma == 0 else math.inf
    if method == "redact":
        return 0.0 if gamma == 0 else math.inf
    return math.inf


# ---------------------------------------------------------------------------------- data
def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return read_jsonl(
        path,
        hint="--corpus needs canaries.jsonl and secrets.jsonl beside it, as `lmleak synth customersim` writes",
    )


def _prepare_data(data_dir: Path, cfg: CRTExperimentConfig, corpus_path: Path | None) -> dict[str, Any]:
    """The training corpus with canaries and its ground-truth secrets, plus a held-out synthesis.

    Without ``corpus_path`` CustomerSim is synthesised with ``cfg.canaries`` canaries inserted
    ``cfg.canary_repeats`` times each. A given corpus must come with ``canaries.jsonl`` and
    ``secrets.jsonl`` beside it (what ``lmleak synth customersim`` writes). The held-out synthesis
    (another seed, same generator) supplies same-format non-member secrets for A.4's MIA sets.
    """

    kw: dict[str, Any] = dict(users=cfg.users, dialogs_per_user=cfg.dialogs_per_user)
    if corpus_path is None:
        paths = synthesize(
            data_dir / "train", seed=cfg.seed, canaries=cfg.canaries, canary_repeats=cfg.canary_repeats, **kw
        )
    else:
        paths = {
            "corpus": corpus_path,
            "canaries": corpus_path.parent / "canaries.jsonl",
            "secrets": corpus_path.parent / "secrets.jsonl",
        }
    # the given files are read before anything is synthesised: a bad one fails before any work
    given = {
        "corpus": load_corpus(Path(paths["corpus"])),
        "canaries": _read_jsonl(Path(paths["canaries"])),
        "secrets": _read_jsonl(Path(paths["secrets"])),
    }
    hold = synthesize(data_dir / "holdout", seed=cfg.seed + 7919, **kw)
    # public text for the tokenizer every model shares (other users again): a vocabulary learnt from the
    # private training text would sit outside the DP guarantee, and a shared one keeps perplexities
    # comparable across the methods
    public = synthesize(data_dir / "public", seed=cfg.seed + 104729, **kw)
    return {
        "tokenizer_corpus": str(public["corpus"]),
        **given,
        "holdout_corpus": load_corpus(Path(hold["corpus"])),
        "holdout_secrets": _read_jsonl(Path(hold["secrets"])),
    }


def _sentence(text: str, start: int, end: int) -> str:
    """The line (dialog turn) holding a span; a window of 80 characters around it otherwise."""
    lo = text.rfind("\n", 0, start) + 1
    hi = text.find("\n", end)
    hi = len(text) if hi < 0 else hi
    if hi - lo > 200:
        lo, hi = max(0, start - 80), min(len(text), end + 80)
    return text[lo:hi].strip()


def mia_sets(
    corpus: Any,
    secrets: list[dict[str, Any]],
    holdout: Any,
    holdout_secrets: list[dict[str, Any]],
    entity: str,
) -> tuple[list[str], list[str]]:
    """A.4's evaluation sets: sentences with protected secrets in training vs held-out ones.

    A held-out sentence whose secret value also occurs in training is dropped (it would be a member).
    """

    def collect(c: Any, recs: list[dict[str, Any]]) -> list[tuple[str, str]]:
        out = []
        for r in recs:
            if r.get("entity") != entity:
                continue
            try:
                doc = c.get(r["doc_id"])
            except KeyError:
                continue
            out.append((r["value"], _sentence(doc.text, int(r["start"]), int(r["end"]))))
        return out

    mem = collect(corpus, secrets)
    seen = {v for v, _ in mem}
    members = list(dict.fromkeys(s for _, s in mem))
    non = list(dict.fromkeys(s for v, s in collect(holdout, holdout_secrets) if v not in seen))
    return members, non


# ---------------------------------------------------------------------------------- one model
def base_policy(name: str) -> Any:
    """π before degradation: a policy name, or ``regex+address`` (paper 002's CustomerSim regex
    redacts whole addresses; lmleak's ``regex`` catches only their digits, so pyap's addresses
    are added)."""

    if name == "regex+address":
        return UnionDetector([policies.get_policy("regex"), AddressDetector()], name="regex+address")
    return policies.get_policy(name)


def degraded_policy(cfg: CRTExperimentConfig, gamma: float) -> Any:
    """π with false-negative rate γ: the base policy's detections kept with probability 1 - γ,
    decided per secret value (:class:`lmleak.pii.policies.DegradedPolicy`)."""

    base = base_policy(cfg.policy)
    return base if gamma == 0 else DegradedPolicy(base, recall=1.0 - gamma, seed=cfg.seed)


def _train(
    corpus: Any,
    out: Path,
    cfg: CRTExperimentConfig,
    arch: str,
    mode: str,
    val: Any,
    *,
    tokenizer_from: str | None = None,
    **split: Any,
) -> dict[str, Any]:
    """Train one model with the training area's trainer; returns its utility and privacy numbers."""
    import json

    if cfg.base:
        return _finetune(corpus, out, cfg, mode, val, **split)

    want: dict[str, Any] = dict(
        arch=arch,
        mode=mode,
        epochs=cfg.epochs,
        batch_size=cfg.batch_size,
        seq_len=cfg.seq_len,
        tokenizer=cfg.tokenizer,
        vocab_size=cfg.vocab_size,
        seed=cfg.seed,
        target_delta=cfg.target_delta,
        tokenizer_from=tokenizer_from,
    )
    if mode != "nodp":
        want["target_epsilon"] = cfg.target_epsilon
    if cfg.lr is not None:
        want["lr"] = cfg.lr
    if mode == "sdp":
        want["policy"] = split.pop("policy_name")
    tc = TrainConfig(**want)
    t0 = time.perf_counter()
    pair = (split.pop("public"), split.pop("private")) if "public" in split else None  # crt's D_pub, D_priv
    res = train_model(corpus, out, tc, val_corpus=val, split=pair, **split)
    secs = time.perf_counter() - t0
    info = json.loads((out / "train.json").read_text()) if (out / "train.json").exists() else {}
    return _trained(res, info, secs)


def _finetune(
    corpus: Any, out: Path, cfg: CRTExperimentConfig, mode: str, val: Any, **split: Any
) -> dict[str, Any]:
    """A LoRA fine-tune of ``cfg.base`` in ``mode`` (the pretrained tokenizer: nothing is learnt from the data)."""
    import json

    policy = split.pop("policy_name", None)
    fc = FinetuneConfig(
        base=cfg.base or "",
        mode=mode,
        lora=cfg.lora,
        epochs=cfg.epochs,
        batch_size=cfg.batch_size,
        lr=cfg.lr or 1e-3,
        seq_len=cfg.seq_len,
        seed=cfg.seed,
        holdout_users=0.0,
        max_steps=cfg.max_steps,
        target_delta=cfg.target_delta,
        policy=policy,
        target_epsilon=None if mode == "nodp" else cfg.target_epsilon,
    )
    t0 = time.perf_counter()
    res = finetune(corpus, out, fc, val_corpus=val, progress=False, **split)
    info = json.loads((out / "train.json").read_text())
    return _trained(res, info, time.perf_counter() - t0)


def _trained(res: Any, info: dict[str, Any], seconds: float) -> dict[str, Any]:
    """What :func:`_train` returns: the trainer's result, its ``train.json``, privacy, final metrics, time."""
    return {
        "result": res,
        "train": info,
        "privacy": dict(res.privacy),
        "final": dict(res.final),
        "seconds": seconds,
    }


def _first(d: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if k in d and d[k] is not None:
            return d[k]
    return None


def _max_exposure(
    lm: Any, canaries: list[dict[str, Any]], cfg: CRTExperimentConfig
) -> tuple[float, int, str, int]:
    """The highest exposure over the canaries: (bits, rank, ``exact`` or ``sampled``, trie nodes scored)."""
    best_bits, best_rank, nodes, method = 0.0, 0, 0, "exact"
    by_fmt: dict[CanaryFormat, list[str]] = {}
    for c in canaries:
        by_fmt.setdefault(CanaryFormat.infer(c["prefix"], c["secret"], c.get("alphabet")), []).append(
            c["secret"]
        )
    rng = np.random.default_rng(cfg.seed)
    for fmt, secrets in by_fmt.items():
        stats = SearchStats()
        rank, how = _best_rank(lm, fmt, secrets, cfg, rng, stats)
        nodes += stats.nodes_scored
        bits = exposure(min(rank, fmt.num_candidates), fmt.num_candidates)
        if bits >= best_bits:
            best_bits, best_rank, method = bits, rank, how
    return best_bits, best_rank, method, nodes


def _best_rank(
    lm: Any, fmt: CanaryFormat, secrets: list[str], cfg: CRTExperimentConfig, rng: Any, stats: SearchStats
) -> tuple[int, str]:
    """Rank of the format's most exposed canary among all its candidates, and how it was found."""
    # Only the most exposed canary matters here (the paper plots the highest of 10): search
    # with its cost as the threshold. A canary so unexposed that this needs more than
    # exposure_max_nodes nodes gets its rank estimated from a uniform sample instead, and so
    # does a format too large to enumerate (8 hex characters: 4.3e9 candidates, each of which a
    # BPE tokenizer would have to tokenise to build the trie)
    try:
        if fmt.num_candidates > MAX_ENUMERABLE:
            raise SearchBudgetExceeded(f"{fmt.num_candidates} candidates")
        space = CandidateSpace.build(lm.tokenizer, fmt, seed=cfg.seed)
        costs = [path_cost(lm, space.context_ids, space.continuation(s)) for s in secrets]
        best = int(np.argmin(costs))
        more, tied = count_candidates(lm, space, [costs[best]], stats=stats, max_nodes=cfg.exposure_max_nodes)
        return rank_from_counts(int(more[0]), int(tied[0])), "exact"
    except SearchBudgetExceeded:
        sample = fmt.candidates(rng.integers(0, fmt.num_candidates, size=cfg.exposure_sample))
        best = int(np.argmin(string_costs(lm, fmt, secrets)))
        both = string_costs(lm, fmt, [secrets[best], *sample])
        c0, rest = both[0], both[1:]
        frac = float(np.mean(rest < c0 - 1e-4)) + 0.5 * float(np.mean(np.abs(rest - c0) <= 1e-4))
        return max(1, round(1 + frac * fmt.num_candidates)), "sampled"


def evaluate_model(
    model_dir: Path,
    data: dict[str, Any],
    members: list[str],
    non_members: list[str],
    cfg: CRTExperimentConfig,
) -> dict[str, Any]:
    """Highest canary exposure (exact) and individual / group MIA accuracy of one trained model."""
    lm = load_model(model_dir) if cfg.base else load_small_model(model_dir)
    best_bits, best_rank, method, nodes = _max_exposure(lm, data["canaries"], cfg)
    mia = evaluate_membership(lm, members, non_members, dataclasses.replace(cfg.mia, seed=cfg.seed))
    m = mia.metrics.set_index(["level", "feature"])
    group_level = f"group{cfg.mia.group_size}"
    return {
        # utility on the language around the secrets: the validation text with every PII span the
        # perfect policy finds masked; a model trained on redacted text cannot be expected to
        # predict the raw names and numbers that dominate the raw validation perplexity
        "ppl_redacted": quality(lm, data["val_redacted"])["perplexity"]
        if data.get("val_redacted")
        else math.nan,
        "max_exposure": best_bits,
        "max_exposure_rank": best_rank,
        "exposure_method": method,
        "exposure_nodes": nodes,
        "mia_accuracy": float(m.loc[("individual", "perplexity"), "accuracy"]),
        "mia_auc": float(m.loc[("individual", "perplexity"), "auc"]),
        "group_mia_accuracy": float(m.loc[(group_level, "perplexity"), "accuracy"])
        if (group_level, "perplexity") in m.index
        else math.nan,
        "mia_per_side": mia.num_per_side,
        "bos_token_id": lm.bos_token_id,  # the start token every score above follows
    }


# formats with more candidates than this are never enumerated: their exposure is sampled
MAX_ENUMERABLE = 10**7


# ---------------------------------------------------------------------------------- driver
def plan(cfg: CRTExperimentConfig) -> list[tuple[str, str, float]]:
    """(arch, method, gamma) of every model to train; γ-free methods once per arch (gamma NaN).

    Example:
        >>> len(plan(CRTExperimentConfig(gammas=(0.0, 0.5), archs=("lstm", "gpt"))))
        13
    """
    out = []
    for arch in cfg.archs:
        for method in cfg.methods:
            if method == "sdp" and arch not in ("lstm", "lora"):
                continue
            if method == "sdp":
                # the trainer takes selective DP's policy by registered name only, so it cannot be
                # degraded to recall 1 - γ: selective DP runs with the perfect-policy setting, as
                # the paper's Fig. 2 shows it (its ε is +∞ for any γ > 0)
                if 0.0 in cfg.gammas:
                    out.append((arch, method, 0.0))
                continue
            if method in GAMMA_FREE:
                out.append((arch, method, math.nan))
            else:
                out.extend((arch, method, float(g)) for g in cfg.gammas)
    return out


def _train_planned(
    arch: str,
    method: str,
    gamma: float,
    data: dict[str, Any],
    model_dir: Path,
    cfg: CRTExperimentConfig,
    val: Corpus,
    *,
    cache: dict[str, dict[float, Any]],
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Train one model of :func:`plan`; returns the training result and its split's stats (None when
    the method splits nothing). ``cache`` keeps each γ's redaction / CRT split across architectures."""
    tok_from = data["tokenizer_corpus"]
    if method == "redact":
        # "No-DP with mask": Redact_π only (no dedup, no DP), trained on the redacted sentences
        redacted = cache["redact"]
        if gamma not in redacted:
            redacted[gamma] = crt_split(data["corpus"], degraded_policy(cfg, gamma), dedup=None)
        trained = _train(redacted[gamma].redacted, model_dir, cfg, arch, "nodp", val, tokenizer_from=tok_from)
        return trained, redacted[gamma].stats
    if method == "crt":
        splits = cache["crt"]
        if gamma not in splits:
            splits[gamma] = crt_split(
                data["corpus"], degraded_policy(cfg, gamma), conservative=cfg.conservative, dedup="exact"
            )
        trained = _train(
            data["corpus"],
            model_dir,
            cfg,
            arch,
            "crt",
            val,
            tokenizer_from=tok_from,
            public=splits[gamma].public,
            private=splits[gamma].private,
        )
        return trained, splits[gamma].stats
    if method == "sdp":
        # selective DP takes its policy by registered name in the trainer config (γ = 0 only)
        policy_name = cfg.policy if cfg.policy in POLICY_NAMES else "regex"
        return _train(
            data["corpus"], model_dir, cfg, arch, "sdp", val, tokenizer_from=tok_from, policy_name=policy_name
        ), None
    return _train(data["corpus"], model_dir, cfg, arch, method, val, tokenizer_from=tok_from), None


def _table_row(
    arch: str,
    method: str,
    gamma: float,
    trained: dict[str, Any],
    ev: dict[str, Any],
    split_stats: dict[str, Any] | None,
    measured: float | None,
) -> dict[str, Any]:
    """One row of ``crt_table`` (all but ``eval_seconds``): training, privacy, evaluation, split."""
    fin, pr = trained["final"], trained["privacy"]
    eps = None if method in ("nodp", "redact") else _first(pr, "epsilon", "eps")
    g = 0.0 if math.isnan(gamma) else gamma
    share = {} if split_stats is None else public_share(split_stats)
    return {
        "arch": arch,
        "method": method,
        "gamma": gamma,
        "ppl": _first(fin, "val_perplexity", "val_ppl", "perplexity"),
        "acc_top1": _first(fin, "val_top1_accuracy", "val_top1", "val_acc_top1", "top1_accuracy"),
        "epsilon": math.inf if eps is None else float(eps),
        "delta": _first(pr, "delta"),
        "bayes_epsilon": bayes_epsilon(method, g, None if eps is None else float(eps)),
        **ev,
        "private_fraction": None if split_stats is None else split_stats.get("private_fraction"),
        "measured_gamma": None if math.isnan(gamma) else measured,
        "public_sentence_share": share.get("public_sentence_share"),
        "public_word_share": share.get("public_word_share"),
        "tokenizer_source": "public",  # every model shares a tokenizer learnt on other, public users
        "train_seconds": trained["seconds"],
    }


@writes_run("out_dir")
def run_crt_experiment(
    out_dir: str | Path, cfg: CRTExperimentConfig, *, corpus: str | Path | None = None
) -> dict[str, Any]:
    """Train and evaluate every model of :func:`plan`; write the table, figures and summary."""
    import pandas as pd

    cfg.validate()
    run = secure_dir(out_dir)
    t_start = time.perf_counter()
    data = _prepare_data(run / "data", cfg, Path(corpus) if corpus else None)
    members, non_members = mia_sets(
        data["corpus"], data["secrets"], data["holdout_corpus"], data["holdout_secrets"], cfg.mia_entity
    )

    # validation: held-out synthetic users (so every training user, canary owner and MIA member
    # is trained on; the trainer would otherwise hold out 10 % of the users)
    val = Corpus(list(data["holdout_corpus"])[: cfg.val_documents])
    data["val_redacted"] = crt_split(val, base_policy(cfg.policy), dedup=None).redacted
    redacted: dict[float, Any] = {}
    splits: dict[float, Any] = {}
    measured: dict[float, float | None] = {}
    rows: list[dict[str, Any]] = []
    for arch, method, gamma in track(plan(cfg), description="CRT experiment"):
        tag = f"{arch}-{method}" + ("" if math.isnan(gamma) else f"-g{gamma:g}")
        model_dir = run / "models" / tag
        trained, split_stats = _train_planned(
            arch, method, gamma, data, model_dir, cfg, val, cache={"redact": redacted, "crt": splits}
        )
        t0 = time.perf_counter()
        ev = evaluate_model(model_dir, data, members, non_members, cfg)
        if not math.isnan(gamma) and gamma not in measured:
            measured[gamma] = measured_gamma(data["corpus"], data["secrets"], degraded_policy(cfg, gamma))
        row = _table_row(arch, method, gamma, trained, ev, split_stats, measured.get(gamma))
        rows.append({**row, "eval_seconds": time.perf_counter() - t0})
    table = pd.DataFrame(rows)
    write_parquet(table, run / "crt_table.parquet")
    atomic_write_text(run / "crt_table.csv", table.to_csv(index=False))
    figures = plot_figures(table, run, cfg)
    summary = {
        "experiment": "crt",
        "scoring_convention": SCORING_CONVENTION,  # after each row's bos_token_id
        "config": dataclasses.asdict(cfg),
        "ppl_ordering": ppl_ordering(table),
        "num_models": len(rows),
        "num_members": len(members),
        "num_non_members": len(non_members),
        "seconds": time.perf_counter() - t_start,
        "figures": [str(p.name) for p in figures],
        "rows": table.to_dict(orient="records"),
    }
    write_summary(run, summary)
    return {"table": table, "summary": summary}


def measured_gamma(corpus: Any, secrets: list[dict[str, Any]], policy: Any) -> float | None:
    """The policy's miss rate on the training corpus against its ground-truth secrets (the
    micro-averaged ``ALL`` row of ``pii evaluate``), as the trainer writes ``gamma`` for CRT."""
    docs = {d.doc_id for d in corpus}
    gold = [Secret(**{k: s[k] for k in SECRET_FIELDS}) for s in secrets if s["doc_id"] in docs]
    if not gold:
        return None
    return evaluate_policy(corpus, gold, policy)["ALL"]["gamma"]


def ppl_ordering(table: Any) -> dict[str, dict[str, Any]]:
    """Per architecture: No-DP, CRT and DP-SGD perplexity and whether No-DP <= CRT <= DP-SGD holds
    (paper 002 Fig. 3 puts CRT between the two), on the raw validation text (``ppl``) and on the
    same text with its PII masked (``ppl_redacted``). CRT is taken at its smallest γ. When the raw
    ordering fails, ``reason`` says why: a model trained on redacted text never sees the names and
    numbers the raw validation text is full of (the redaction-only model shows the same cost), and
    a small D_pub leaves CRT with DP-SGD on nearly the whole corpus."""
    out: dict[str, dict[str, Any]] = {}
    for arch, part in table.groupby("arch"):
        rec: dict[str, Any] = {}
        for col, suffix in (("ppl", ""), ("ppl_redacted", "_redacted")):
            vals = {}
            for method in ("nodp", "crt", "dp", "redact"):
                rows = part[part["method"] == method].sort_values("gamma")
                vals[method] = None if rows.empty or col not in rows else float(rows[col].iloc[0])
            rec.update({f"{m}{suffix}": v for m, v in vals.items()})
            nodp, crt, dp = vals["nodp"], vals["crt"], vals["dp"]
            ok = None if nodp is None or crt is None or dp is None else bool(nodp <= crt <= dp)
            rec[f"holds{suffix}"] = ok
        crt_rows = part[part["method"] == "crt"].sort_values("gamma")
        if rec["holds"] is False and not crt_rows.empty:
            why = []
            red, nodp = rec.get("redact"), rec.get("nodp")
            if red is not None and nodp is not None and red > 2 * nodp:
                why.append(
                    f"redaction alone raises the raw-text PPL {red / nodp:.1f}x (the model never sees the masked PII)"
                )
            s, w = crt_rows["public_sentence_share"].iloc[0], crt_rows["public_word_share"].iloc[0]
            if s is not None and w is not None and s == s and s < 0.2:
                why.append(
                    f"D_pub is {s:.1%} of the sentences ({w:.1%} of the words), so CRT is DP-SGD on nearly everything"
                )
            rec["reason"] = "; ".join(why) + " (docs/crt-utility.md)" if why else "see docs/crt-utility.md"
        out[str(arch)] = rec
    return out


def _fig_vs_gamma(
    plt: Any, table: Any, cfg: CRTExperimentConfig, col: str, ylabel: str, chance: float | None
) -> Any:
    """One column against γ: a line per (method, architecture); γ-free models as horizontal lines."""
    fig, ax = plt.subplots(figsize=(6, 4))
    gmin, gmax = min(cfg.gammas), max(cfg.gammas)
    for (arch, method), df in table.groupby(["arch", "method"], sort=True):
        # colour = method, line style = architecture, so every line of the legend is distinct
        style = dict(color=METHOD_COLORS.get(method, "grey"), label=f"{method}-{arch}")
        if df["gamma"].isna().all():  # trained once: a horizontal line over the γ range
            ax.hlines(df[col].iloc[0], gmin, gmax, linestyles="--" if arch == "gpt" else ":", **style)
        else:
            d = df.sort_values("gamma")
            ax.plot(
                d["gamma"],
                d[col],
                marker="o" if arch == "gpt" else "s",
                ls="-" if arch == "gpt" else "-.",
                **style,
            )
    if chance is not None:
        ax.axhline(chance, color="k", lw=0.8, ls=":")
    ax.set_xlabel("policy false-negative rate γ")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    return fig


def _fig2_ppl_vs_epsilon(plt: Any, table: Any) -> Any:
    """Fig. 2: utility vs Bayesian-confidentiality ε (∞ drawn at the right edge)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    finite = table["bayes_epsilon"].replace([np.inf], np.nan)
    right = (np.nanmax(finite) if finite.notna().any() else 1.0) * 1.3 + 0.5
    for (arch, method), df in table.groupby(["arch", "method"], sort=True):
        eps = df["bayes_epsilon"].replace([np.inf], right)
        ax.scatter(df["ppl"], eps, label=f"{method}-{arch}")
    ax.axhline(right, color="grey", lw=0.5, ls=":")
    ax.set_xlabel("perplexity (validation)")
    ax.set_ylabel("Bayesian confidentiality ε (top line: ∞)")
    ax.legend(fontsize=7)
    return fig


def _fig6_amplification(plt: Any, table: Any) -> Any:
    """Fig. 6: amplification by redaction, Prop. 6 for fixed DP ε', with the measured CRT points."""
    fig, ax = plt.subplots(figsize=(6, 4))
    g = np.linspace(0, 1, 101)
    for e in (0.5, 1.0, 2.0, 4.0, 8.0):
        ax.plot(g, [bayesian_confidentiality(e, 0.0, x)[0] for x in g], label=f"ε' = {e:g}")
    crt = table[(table["method"] == "crt") & np.isfinite(table["bayes_epsilon"])]
    if len(crt):
        ax.scatter(crt["gamma"], crt["bayes_epsilon"], color="k", zorder=3, label="CRT runs")
    ax.set_xlabel("policy false-negative rate γ")
    ax.set_ylabel("Bayesian confidentiality ε")
    ax.legend(fontsize=7)
    return fig


def plot_figures(table: Any, run: Path, cfg: CRTExperimentConfig) -> list[Path]:
    """Figs. 2-6 of paper 002 as PNGs (matplotlib, Agg)."""
    plt = pyplot()
    draw = [
        ("fig2_ppl_vs_epsilon.png", lambda: _fig2_ppl_vs_epsilon(plt, table)),
        (
            "fig3_exposure_vs_gamma.png",
            lambda: _fig_vs_gamma(plt, table, cfg, "max_exposure", "highest canary exposure (bits)", None),
        ),
        (
            "fig4_mia_vs_gamma.png",
            lambda: _fig_vs_gamma(plt, table, cfg, "mia_accuracy", "membership inference accuracy", 0.5),
        ),
        (
            "fig5_group_mia_vs_gamma.png",
            lambda: _fig_vs_gamma(
                plt, table, cfg, "group_mia_accuracy", f"group ({cfg.mia.group_size}) MIA accuracy", 0.5
            ),
        ),
        ("fig6_amplification.png", lambda: _fig6_amplification(plt, table)),
    ]
    out: list[Path] = []
    for name, figure in draw:  # each figure drawn and saved before the next is drawn
        fig = figure()
        p = run / name
        fig.tight_layout()
        save_figure(fig, p, dpi=100)
        out.append(p)
    return out
