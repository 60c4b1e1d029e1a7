# long: the methods share one teacher-forced pass where the maths allows (the table below); apart, each would redo it
"""Membership-inference scores of the current literature, from one shared forward pass where the maths allows.

Every score is oriented so that **higher = more likely a member**; each is one float per text.

=================  ==========================================================================  ===========================
method             score (higher = member)                                                     passes it needs
=================  ==========================================================================  ===========================
``perplexity``     ``-PPL`` per token (the loss attack; Yeom et al. 2018, Carlini et al. 2021)  the text
``zlib``           ``-log PPL / zlib bytes`` (Carlini et al. 2021 §6.1)                        the text
``min_k``          mean of the ``k`` % lowest token log-probabilities (Shi et al. 2024)        the text
``min_k_pp``       mean of the ``k`` % lowest ``(log p(x_t) - mu_t) / sigma_t`` (Zhang et      the text, with the full
                   al. 2024, "Min-K%++"), ``mu_t = E_{z~p_t}[log p_t(z)]``, ``sigma_t`` its     next-token distributions
                   standard deviation under the model's next-token distribution ``p_t``
``lowercase``      ``-log PPL(x) / log PPL(lower(x))`` (Carlini et al. 2021 §6.1)              the text, the lowercased text
``recall``         ``LL(x | P) / LL(x)``, LL the mean token log-likelihood and P a prefix of   the text, P + the text
                   known non-members (Xie et al. 2024, "ReCaLL"; members lose more likelihood
                   under a non-member context, so their ratio is larger)
``reference``      ``-log PPL_target / log PPL_reference`` per word (Carlini et al. 2021       the text, the reference model
                   §6.1; calibration by a public model)
``neighbourhood``  ``LL(x) - mean_j LL(x~_j)``, the x~_j neighbours made by replacing a word   the text, every neighbour
                   with a masked LM's best substitute (Mattern et al. 2023)
``samia``          mean ROUGE-N recall of the text's true continuation by continuations        sampled text only (no
                   sampled from its prefix (Kaneko et al. 2024; :mod:`lmleak.attacks.samia`)   log-probabilities)
``wbc``            share of sliding windows where the target's summed token loss is below    the text, the reference model
                   the reference's, averaged over window sizes 1, 5, 10, 20 (fast-mia's
                   window-based comparison; :mod:`lmleak.attacks.wbc`)
``rmia``           share of population texts z with ``(p(x|θ)/p(x)) / (p(z|θ)/p(z)) > γ``,  the text, the reference model,
                   ``p`` the OUT references' offline estimate (Zarifzadeh et al. 2024;       the population texts
                   :mod:`lmleak.attacks.rmia`)
=================  ==========================================================================  ===========================

One teacher-forced pass over the text gives every token's log-probability *and* the moments of the
full next-token distribution at every position, so ``perplexity``, ``zlib``, ``min_k`` and
``min_k_pp`` cost one pass together, and ``lowercase``, ``recall``, ``reference`` and
``neighbourhood`` reuse it and add only the passes of their own inputs (the table's last column).
``samia`` needs no pass at all, only generated text, so it runs on text-only backends too (the
HTTP ``text`` and ``chat`` tiers); scored alone it needs only ``Capability.GENERATE``.
:func:`score_methods` with ``shared=False`` runs each method on its own instead (its own passes,
nothing reused): the benchmark's baseline and the tests' oracle of the sharing.

The blind baseline (:mod:`lmleak.attacks.blind`) never queries the model; it is reported beside
these scores (Das et al. 2024).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lmleak.attacks.packed_pass import log_prob_moments, packed_pass, packs
from lmleak.attacks.rmia import DEFAULT_OFFLINE_A, rmia_scores, text_signal
from lmleak.attacks.samia import SamiaSettings, samia_columns
from lmleak.attacks.wbc import DEFAULT_WINDOWS, wbc_score
from lmleak.errors import CapabilityError, ConfigError, DataFileError, check_number, did_you_mean
from lmleak.models.base import Capability, count_words, require
from lmleak.models.torch_causal import TorchCausalLM
from lmleak.models.windows import window_rows
from lmleak.scenarios import scenario_record


@dataclass(frozen=True, slots=True)
class MethodInfo:
    """What a membership method is and the access it needs (its KART tags).

    ``access`` is a KART access kind (:func:`lmleak.scenarios.scenario_record`), ``needs`` the
    capabilities and calls the method uses, ``resources`` the KART R items besides the model.
    """

    name: str
    citation: str
    access: str
    needs: str
    resources: tuple[str, ...] = ()


METHODS: dict[str, MethodInfo] = {
    m.name: m
    for m in (
        MethodInfo("perplexity", "Carlini et al. 2021", "scores", "token log-probabilities"),
        MethodInfo("zlib", "Carlini et al. 2021 §6.1", "scores", "token log-probabilities"),
        MethodInfo("min_k", "Shi et al. 2024", "scores", "token log-probabilities"),
        MethodInfo(
            "min_k_pp",
            "Zhang et al. 2024",
            "scores",
            "full next-token distributions (next_logprobs)",
        ),
        MethodInfo("lowercase", "Carlini et al. 2021 §6.1", "scores", "token log-probabilities"),
        MethodInfo(
            "recall",
            "Xie et al. 2024",
            "scores",
            "conditional token log-probabilities",
            ("similar_corpus",),
        ),
        MethodInfo(
            "reference",
            "Carlini et al. 2021 §6.1",
            "scores",
            "token log-probabilities of the target and of a reference model",
            ("reference_model",),
        ),
        MethodInfo(
            "neighbourhood",
            "Mattern et al. 2023",
            "scores",
            "token log-probabilities of the target; a masked LM makes the neighbours",
            ("other_model:masked_lm",),
        ),
        MethodInfo("samia", "Kaneko et al. 2024", "generation", "sampled text continuations (generate)"),
        MethodInfo(
            "wbc",
            "fast-mia wbc.py (window-based comparison)",
            "scores",
            "token log-probabilities of the target and of a reference model",
            ("reference_model",),
        ),
        MethodInfo(
            "rmia",
            "Zarifzadeh et al. 2024",
            "scores",
            "token log-probabilities of the target and of a reference model, on the texts and on "
            "population texts",
            ("reference_model", "similar_corpus"),
        ),
    )
}
#: Methods that compare the target with the reference model (they need one).
REFERENCE_METHODS = ("reference", "wbc", "rmia")
#: Methods that need only generated text (no log-probabilities); ``all`` leaves them out (their cost
#: is ``samples`` generations per text): name them.
TEXT_ONLY_METHODS = ("samia",)
#: What ``lmleak mia`` scores when no ``--methods`` are given (``reference`` too when a reference is).
DEFAULT_METHODS = ("perplexity", "zlib", "min_k")


@dataclass(frozen=True, slots=True)
class MethodOptions:
    """Which methods to score and their settings.

    Attributes:
        methods: method names (:data:`METHODS`); ``None``: :data:`DEFAULT_METHODS`.
        recall_prefix: ReCaLL's non-member prefix text; ``None``: ``recall_shots`` non-members of the
            evaluation's pool become the prefix and leave the evaluation.
        recall_shots: non-member texts in the prefix when it is taken from the pool.
        num_neighbours: neighbours per text for ``neighbourhood``.
        mlm: the masked LM that makes the neighbours (an :class:`~lmleak.models.hf_masked.HFMaskedLM`).
        seed: seeds the neighbours' word choice and SaMIA's sampling.
        samia: SaMIA's settings (:class:`~lmleak.attacks.samia.SamiaSettings`).
        wbc_windows: WBC's window sizes (:mod:`lmleak.attacks.wbc`).
        rmia_offline_a: RMIA's offline ``a`` (:mod:`lmleak.attacks.rmia`).
        rmia_gamma: RMIA's ``γ``.
        rmia_population: non-members of the evaluation's pool that become RMIA's population texts
            ``z`` and leave the evaluation, when ``population`` is not given.
        population: RMIA's population texts (known non-members, never scored as targets).
        rmia_references: RMIA's OUT reference models besides the reference (none: the reference alone).
        reference: the loaded reference model (``reference``, WBC, RMIA; None: none).
    """

    methods: tuple[str, ...] | None = None
    recall_prefix: str | None = None
    recall_shots: int = 3
    num_neighbours: int = 8
    mlm: Any = field(default=None, repr=False, compare=False)
    seed: int = 0
    samia: SamiaSettings = field(default_factory=SamiaSettings)
    wbc_windows: tuple[int, ...] = DEFAULT_WINDOWS
    rmia_offline_a: float = DEFAULT_OFFLINE_A
    rmia_gamma: float = 1.0
    rmia_population: int = 25
    population: tuple[str, ...] | None = field(default=None, repr=False)
    rmia_references: tuple[Any, ...] = field(default=(), repr=False, compare=False)
    reference: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_number(self.recall_shots, "recall_shots", ge=1, integer=True)
        if not self.wbc_windows:
            raise ConfigError(
                "wbc_windows is empty", field="wbc_windows", hint="give window sizes, e.g. 1 5 10 20"
            )
        for w in self.wbc_windows:
            check_number(w, "wbc_windows", ge=1, integer=True)
        check_number(self.rmia_offline_a, "rmia_offline_a", ge=0, le=1)
        check_number(self.rmia_gamma, "rmia_gamma", gt=0)
        check_number(self.rmia_population, "rmia_population", ge=1, integer=True)
        check_number(self.num_neighbours, "num_neighbours", ge=1, integer=True)
        check_number(self.seed, "seed", ge=0, integer=True)

    def record(self) -> dict[str, Any]:
        """A JSON-able record (the MLM by name) for fingerprints and summaries."""
        return {
            "methods": None if self.methods is None else list(self.methods),
            "recall_prefix": self.recall_prefix,
            "recall_shots": self.recall_shots,
            "num_neighbours": self.num_neighbours,
            "mlm": None if self.mlm is None else getattr(self.mlm, "name", type(self.mlm).__name__),
            "seed": self.seed,
            "samia": self.samia.record(),
            "wbc_windows": list(self.wbc_windows),
            "rmia_offline_a": self.rmia_offline_a,
            "rmia_gamma": self.rmia_gamma,
            "rmia_population": None if self.population is None else len(self.population),
            "rmia_references": [getattr(r, "name", type(r).__name__) for r in self.rmia_references],
        }


def parse_methods(
    methods: Sequence[str] | None, *, reference: bool = False, mlm: bool = False, field: str = "methods"
) -> tuple[str, ...]:
    """Validate method names; ``None`` gives :data:`DEFAULT_METHODS` (plus ``reference`` with one).

    ``all`` expands to every likelihood method the given resources allow (not the text-only
    :data:`TEXT_ONLY_METHODS`, which cost generations: name them).

    Raises:
        ConfigError: an unknown name (with a "did you mean"), or ``reference`` / ``neighbourhood``
            without the reference model / masked LM they need.

    Example:
        >>> parse_methods(["min_k_pp", "zlib"])
        ('min_k_pp', 'zlib')
        >>> parse_methods(None, reference=True)
        ('perplexity', 'zlib', 'min_k', 'reference')
    """
    if methods is None:
        return DEFAULT_METHODS + (("reference",) if reference else ())
    out: list[str] = []
    for m in methods:
        for name in str(m).replace(",", " ").split():
            if name == "all":
                out.extend(
                    n
                    for n in METHODS
                    if (n not in REFERENCE_METHODS or reference)
                    and (n != "neighbourhood" or mlm)
                    and n not in TEXT_ONLY_METHODS
                )
                continue
            if name not in METHODS:
                raise ConfigError(
                    f"unknown membership method {name!r}." + did_you_mean(name, list(METHODS)),
                    field=field,
                    hint=f"use some of: {', '.join(METHODS)}, all",
                )
            if name in REFERENCE_METHODS and not reference:
                raise ConfigError(
                    f"method {name!r} needs a reference model",
                    field=field,
                    hint="give --reference (CLI) or public_model (audit config)",
                )
            if name == "neighbourhood" and not mlm:
                raise ConfigError(
                    "method 'neighbourhood' needs a masked LM to make the neighbours",
                    field=field,
                    hint="give --mlm DIR (an HF masked-LM directory, e.g. one `lmleak` pre-trained)",
                )
            out.append(name)
    if not out:
        raise ConfigError(
            "no membership methods given", field=field, hint=f"use some of: {', '.join(METHODS)}"
        )
    return tuple(dict.fromkeys(out))


# ----------------------------------------------------------------------------------- pure maths
def lowest_k_mean(values: np.ndarray, k: float) -> float:
    """Mean of the ``int(k * n)`` lowest of ``n`` values, as Min-K% and Min-K%++ are published; NaN
    when ``int(k * n) < 1`` (a text too short for ``k``: nothing to average).

    The published code (Shi et al.'s ``detect-pretrain-code``, Zhang et al.'s ``mink-plus-plus``,
    mimir's ``MinKProbAttack``) truncates ``len * k`` to an integer and averages an empty slice
    to NaN for short texts; rounding up instead (``ceil``) changes the ranks of short texts.

    Example:
        >>> lowest_k_mean(np.array([-0.1, -5.0, -0.2, -3.0, -0.3]), 0.4)   # int(0.4 * 5) = 2
        -4.0
        >>> lowest_k_mean(np.array([-0.1, -5.0, -0.2, -3.0, -0.3]), 0.5)   # int(2.5) = 2, not 3
        -4.0
        >>> lowest_k_mean(np.array([-1.0, -2.0, -3.0, -4.0]), 0.2)         # int(0.8) = 0: nothing
        nan
    """
    x = np.asarray(values, dtype=np.float64)
    m = int(len(x) * k)
    if m < 1:
        return math.nan
    return float(np.sort(x)[:m].mean())


def min_k_prob(token_logprobs: np.ndarray, k: float = 0.2) -> float:
    """Mean of the ``int(k * n)`` lowest token log-probabilities (Shi et al. 2024), NaN when
    ``int(k * n) < 1`` (:func:`lowest_k_mean`).

    Example:
        >>> min_k_prob(np.array([-0.1, -5.0, -0.2, -3.0, -0.3]), 0.4)
        -4.0
    """
    return lowest_k_mean(token_logprobs, k)


def min_k_plus_plus(logprobs: np.ndarray, mu: np.ndarray, sigma: np.ndarray, k: float = 0.2) -> float:
    """Min-K%++ (Zhang et al. 2024, Eq. 3-4): mean of the ``int(k * n)`` lowest per-token scores
    ``(log p(x_t) - mu_t) / sigma_t`` (:func:`lowest_k_mean`: NaN when ``int(k * n) < 1``).

    ``mu_t`` and ``sigma_t`` are the mean and standard deviation of ``log p_t(z)`` for ``z`` drawn
    from the model's next-token distribution ``p_t``. A position whose distribution is a point
    mass (``sigma_t = 0``) scores 0 there (the token is as expected; the paper's formula is 0/0).

    Example:
        >>> min_k_plus_plus(np.array([-1.0, -3.0]), np.array([-2.0, -2.0]), np.array([1.0, 0.5]), 0.5)
        -2.0
    """
    lp = np.asarray(logprobs, dtype=np.float64)
    sd = np.asarray(sigma, dtype=np.float64)
    z = np.where(sd > 0, (lp - np.asarray(mu, dtype=np.float64)) / np.where(sd > 0, sd, 1.0), 0.0)
    return lowest_k_mean(z, k)


def recall_ratio(cond_logprob: float, uncond_logprob: float) -> float:
    """ReCaLL (Xie et al. 2024): ``LL(x | P) / LL(x)``; higher = more likely a member.

    Mean or summed log-likelihoods give the same ratio (same tokens of x on both sides).

    Example:
        >>> recall_ratio(-6.0, -4.0)
        1.5
    """
    return float(cond_logprob) / min(float(uncond_logprob), -1e-12)


# ----------------------------------------------------------------------------------- the pass
@dataclass(frozen=True, slots=True)
class TokenPass:
    """Per-sequence arrays from one teacher-forced pass: log p of each token, and (when asked)
    ``mu`` and ``sigma`` of the log-probabilities under each position's next-token distribution."""

    logprobs: list[np.ndarray]
    mu: list[np.ndarray] | None = None
    sigma: list[np.ndarray] | None = None


def teacher_forced_pass(
    model: Any, sequences: Sequence[Sequence[int]], *, moments: bool = False
) -> TokenPass:
    """Token log-probabilities, and the next-token distributions' moments with ``moments=True``.

    For a :class:`~lmleak.models.torch_causal.TorchCausalLM` both come from the same forward
    passes as its ``token_stats`` (same windows and batches, so the log-probabilities are the
    ones ``token_stats`` returns). Any other SCORE model gets ``token_stats`` and, for the
    moments, one ``next_logprobs`` query per prefix (correct, slow).
    """
    if not moments:
        return TokenPass([st.logprobs for st in model.token_stats(sequences)])
    if isinstance(model, TorchCausalLM):
        return _torch_pass(model, sequences)
    lps = [st.logprobs for st in model.token_stats(sequences)]
    mus, sds = [], []
    for seq in sequences:
        nl = model.next_logprobs([list(seq[:t]) for t in range(len(seq))]).astype(np.float64)
        p = np.exp(nl)
        safe = np.where(p > 0, nl, 0.0)  # log 0 = -inf would turn 0 * -inf into NaN
        mu = (p * safe).sum(-1)
        var = (p * (safe - mu[:, None]) ** 2).sum(-1)
        mus.append(mu.astype(np.float32))
        sds.append(np.sqrt(var).astype(np.float32))
    return TokenPass(lps, mus, sds)


def _torch_pass(model: Any, sequences: Sequence[Sequence[int]]) -> TokenPass:
    """:meth:`TorchCausalLM.token_stats`'s loop, also reducing each position's distribution to its
    mean and standard deviation of log p (the extra work is elementwise over the logits it already has)."""
    import torch

    rows, owners = window_rows(sequences, model.tokenizer.bos_id, model.max_length, model.overlap)
    lps = [np.empty(len(seq), dtype=np.float32) for seq in sequences]
    mus = [np.empty(len(seq), dtype=np.float32) for seq in sequences]
    sds = [np.empty(len(seq), dtype=np.float32) for seq in sequences]
    with torch.inference_mode():
        for batch in model._batches([len(r) for r in rows]):
            ids, mask = model._pad([rows[i] for i in batch])
            logp = torch.log_softmax(model._forward(ids, mask).float(), dim=-1)[:, :-1]
            targets = ids[:, 1:].to(logp.device)
            true_lp = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
            mu, sd = log_prob_moments(logp)
            for j, i in enumerate(batch):
                s, first, start = owners[i]
                n_in = len(rows[i])
                c0 = first - start - 1
                cols = slice(c0, n_in - 1)
                t0 = first - 1
                t1 = t0 + (n_in - 1 - c0)
                lps[s][t0:t1] = true_lp[j, cols].cpu().numpy()
                mus[s][t0:t1] = mu[j, cols].cpu().numpy()
                sds[s][t0:t1] = sd[j, cols].cpu().numpy()
    return TokenPass(lps, mus, sds)


def conditional_logprobs(
    model: Any, prefix: Sequence[int], sequences: Sequence[Sequence[int]]
) -> list[np.ndarray]:
    """``log p(x_t | BOS + prefix + x_<t)`` for every token of every sequence (ReCaLL's conditional pass).

    Every sequence shares the prefix, so for a Hugging Face module whose inputs fit one window the
    prefix runs once and its key/value cache serves every batch (the prefix's positions are neither
    recomputed nor pushed through the output layer); otherwise each ``prefix + sequence`` is scored
    whole by :func:`teacher_forced_pass` (same numbers up to float rounding).
    """
    longest = max((len(s) for s in sequences), default=0)
    if (
        isinstance(model, TorchCausalLM)
        and type(model.module).__module__.startswith("transformers.")
        and 1 + len(prefix) + longest <= model.max_length
    ):
        return _cached_prefix_pass(model, prefix, sequences)
    lps = teacher_forced_pass(model, [[*prefix, *s] for s in sequences]).logprobs
    return [lp[len(prefix) :] for lp in lps]


def _cached_prefix_pass(
    model: Any, prefix: Sequence[int], sequences: Sequence[Sequence[int]]
) -> list[np.ndarray]:
    import copy

    import torch

    dev = model.device
    head = torch.tensor([[model.tokenizer.bos_id, *map(int, prefix)]], device=dev)
    out = [np.empty(len(s), dtype=np.float32) for s in sequences]
    with torch.inference_mode():
        first = model.module(input_ids=head, use_cache=True)
        cache = first.past_key_values
        # the prefix's last position predicts every sequence's first token
        lp0 = torch.log_softmax(first.logits[0, -1].float(), dim=-1).cpu().numpy()
        for batch in model._batches([len(s) for s in sequences]):
            ids, mask = model._pad([sequences[i] for i in batch])
            past = copy.deepcopy(cache)
            past.batch_repeat_interleave(len(batch))
            am = torch.cat([torch.ones((len(batch), head.shape[1]), dtype=mask.dtype), mask], dim=1)
            logits = model.module(
                input_ids=ids.to(dev), attention_mask=am.to(dev), past_key_values=past, use_cache=True
            ).logits
            logp = torch.log_softmax(logits.float(), dim=-1)[:, :-1]
            true_lp = logp.gather(-1, ids[:, 1:].to(dev).unsqueeze(-1)).squeeze(-1).cpu().numpy()
            for j, i in enumerate(batch):
                n = len(sequences[i])
                out[i][0] = lp0[int(sequences[i][0])]
                out[i][1:n] = true_lp[j, : n - 1]
    return out


# ----------------------------------------------------------------------------------- neighbours
def make_neighbours(texts: Sequence[str], mlm: Any, num: int = 8, *, seed: int = 0) -> list[list[str]]:
    """``num`` neighbours per text (Mattern et al. 2023): each replaces one word, chosen at random
    (seeded, distinct words while there are enough), with the masked LM's most likely substitute
    that differs from the word. ``mlm`` is an :class:`~lmleak.models.hf_masked.HFMaskedLM` (or any
    object with its ``tokenizer`` and ``logits``). A one-word text's neighbours replace that word.
    """
    import torch

    tok = mlm.tokenizer
    rng = np.random.default_rng(seed)
    jobs: list[tuple[int, list[str], int]] = []  # (text index, words, position)
    for i, t in enumerate(texts):
        words = t.split()
        if not words:
            raise DataFileError("text has no words", line=i + 1, field="text", hint="drop empty texts")
        pos = rng.permutation(len(words))
        for j in range(num):
            jobs.append((i, words, int(pos[j % len(words)])))
    special = set(getattr(tok, "all_special_ids", []))
    out: list[list[str]] = [[] for _ in texts]
    limit = int(getattr(mlm, "max_length", 512))
    for b in range(0, len(jobs), 64):
        chunk = jobs[b : b + 64]
        masked = [" ".join([*w[:p], tok.mask_token, *w[p + 1 :]]) for _, w, p in chunk]
        enc = tok(masked, padding=True, truncation=True, max_length=limit, return_tensors="pt")
        logits = mlm.logits(enc["input_ids"])
        for r, (i, words, p) in enumerate(chunk):
            where = (enc["input_ids"][r] == tok.mask_token_id).nonzero().flatten()
            if len(where) == 0:  # the mask fell beyond the MLM's window: keep the text as it is
                out[i].append(" ".join(words))
                continue
            order = torch.argsort(logits[r, int(where[0])], descending=True)[:50].tolist()
            orig = words[p].lower()
            # a whole word that differs from the original (WordPiece continuations "##x" are not words)
            cands = (tok.decode([t]).strip() for t in order if t not in special)
            sub = next(
                (
                    c
                    for c in cands
                    if c and not c.startswith("##") and len(c.split()) == 1 and c.lower() != orig
                ),
                words[p],
            )
            out[i].append(" ".join([*words[:p], sub, *words[p + 1 :]]))
    return out


# ----------------------------------------------------------------------------------- scoring
def _mean_lp(lps: list[np.ndarray]) -> np.ndarray:
    return np.array([float(x.astype(np.float64).mean()) for x in lps])


def _sum_lp(lps: list[np.ndarray]) -> np.ndarray:
    return np.array([float(x.astype(np.float64).sum()) for x in lps])


def score_methods(
    model: Any,
    texts: Sequence[str],
    options: MethodOptions | None = None,
    *,
    min_k: float = 0.2,
    shared: bool = True,
) -> dict[str, np.ndarray]:
    """Every method of ``options`` (:class:`MethodOptions`; its ``methods`` None:
    :data:`DEFAULT_METHODS`, plus ``reference`` with one) scored per text (higher = more likely a
    member), plus the statistics the table keeps: ``num_tokens``, ``logprob`` (summed nats),
    ``log_ppl``, ``log_ppl_word``, ``zlib_bytes``, ``ref_log_ppl_word`` (NaN without
    ``options.reference``). ``wbc`` and ``rmia`` share one reference pass over the texts and RMIA's
    ``population``; ``rmia_references`` are RMIA's further OUT reference models (:func:`_finetune_scores`).

    With ``shared=True`` the text's one pass serves every method and the methods' own inputs
    (lowercased text, neighbours) go through one batched pass together; ReCaLL's prefix runs once
    for all texts (:func:`conditional_logprobs`) in both modes; with
    ``shared=False`` each method runs every pass it needs by itself. Both give the same scores.

    ``samia`` (settings ``options.samia``) adds its score and cost columns (:func:`lmleak.attacks.samia.samia_columns`);
    scored with no likelihood method, the model needs only GENERATE and the log-probability
    statistics are not computed.

    Raises:
        CapabilityError: the model lacks SCORE for a likelihood method, or GENERATE for SaMIA (or the
            reference lacks SCORE).
        ConfigError: ``recall`` without a prefix, ``reference`` / ``neighbourhood`` / ``wbc`` /
            ``rmia`` without their model, ``rmia`` without population texts.
    """
    opts = options or MethodOptions()
    methods = (
        parse_methods(None, reference=opts.reference is not None)
        if opts.methods is None
        else tuple(opts.methods)
    )
    _check_methods(model, methods, opts, min_k=min_k)
    _check_finetune(methods, opts.population, opts.rmia_references)
    likelihood = tuple(m for m in methods if m not in TEXT_ONLY_METHODS)
    res: dict[str, np.ndarray] = {}
    if likelihood or not methods:
        res = _likelihood_scores(model, texts, likelihood, opts, min_k=min_k, shared=shared)
    if "samia" in methods:
        res.update(samia_columns(model, texts, opts.samia, seed=opts.seed))
    return res


def _likelihood_scores(
    model: Any,
    texts: Sequence[str],
    methods: tuple[str, ...],
    opts: MethodOptions,
    *,
    min_k: float,
    shared: bool,
) -> dict[str, np.ndarray]:
    """The likelihood methods' scores and the text statistics (:func:`score_methods`)."""
    enc = model.tokenizer.encode
    seqs = [enc(t) for t in texts]
    for i, s in enumerate(seqs):
        if not s:
            raise DataFileError("text has no tokens", line=i + 1, field="text", hint="drop empty texts")
    n = len(texts)
    extra = _method_inputs(model, texts, seqs, methods, opts)
    prefix_ids = enc(opts.recall_prefix or "") if "recall" in methods else None
    bases, out_extra = _method_passes(model, seqs, methods, extra, shared=shared)
    ref_word = np.full(n, np.nan)
    if "reference" in methods:
        ref = opts.reference.score_text([""] * n, list(texts))
        ref_word = np.array([-r.logprob / max(r.num_words, 1) for r in ref])

    first = bases[methods[0]] if methods else teacher_forced_pass(model, seqs)
    words = np.array([count_words(t) or 1 for t in texts], dtype=np.float64)
    res = _text_statistics(texts, seqs, _sum_lp(first.logprobs), words, ref_word)
    settings = (opts.wbc_windows, opts.rmia_offline_a, opts.rmia_gamma)
    refs = [opts.reference, *opts.rmia_references]
    ft = _finetune_scores(refs, texts, opts.population, bases, out_extra, methods, shared, settings)
    for m in methods:
        b = bases[m]
        lp = _sum_lp(b.logprobs)
        if m in ft:
            res[m] = ft[m]
        elif m == "recall":
            assert prefix_ids is not None
            cond = _sum_lp(conditional_logprobs(model, prefix_ids, seqs))
            res[m] = np.array([recall_ratio(c, u) for c, u in zip(cond, lp, strict=True)])
        else:
            res[m] = _method_score(m, b, lp, words, res, out_extra, min_k=min_k, k=opts.num_neighbours)
    return res


def _check_finetune(
    methods: tuple[str, ...], population: Sequence[str] | None, references: Sequence[Any]
) -> None:
    for r in references:
        require(r, Capability.SCORE, attack="RMIA (a further reference model)")
    if "rmia" in methods and not population:
        raise ConfigError(
            "method 'rmia' needs population texts (known non-members, not scored)",
            field="population",
            hint="the evaluation takes rmia_population non-members as them; or give them",
        )


def _encode_all(model: Any, texts: Sequence[str], what: str) -> list[list[int]]:
    seqs = [model.tokenizer.encode(t) for t in texts]
    for i, s in enumerate(seqs):
        if not s:
            name = "text" if what == "text" else f"{what} text"
            raise DataFileError(f"{name} has no tokens", line=i + 1, field=what, hint="drop empty texts")
    return seqs


def _reference_pass(
    reference: Any, texts: Sequence[str], population: Sequence[str] | None, methods: Sequence[str]
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The reference's per-token log-probabilities of the texts and (for ``rmia``) of the
    population, from one teacher-forced pass with the reference's own tokenizer."""
    rows = _encode_all(reference, texts, "text")
    pop = _encode_all(reference, population or (), "population") if "rmia" in methods else []
    lps = teacher_forced_pass(reference, rows + pop).logprobs
    return lps[: len(rows)], lps[len(rows) :]


def _finetune_scores(
    references: Sequence[Any],
    texts: Sequence[str],
    population: Sequence[str] | None,
    bases: dict[str, Any],
    out_extra: dict[str, list[np.ndarray]],
    methods: Sequence[str],
    shared: bool,
    settings: tuple[Sequence[int], float, float],
) -> dict[str, np.ndarray]:
    """WBC's and RMIA's scores (``settings``: WBC's windows, RMIA's offline ``a`` and ``γ``).

    The target's log-probabilities of the texts are the shared pass's, of the population the batched
    pass of the methods' own inputs (``out_extra["rmia"]``). WBC compares with the first reference,
    RMIA averages all of them (``references``: the reference, then RMIA's extra ones); with
    ``shared`` one pass of the first reference over the texts and the population serves both, else
    each method runs its own."""
    ft = [m for m in methods if m in ("wbc", "rmia")]
    first = _reference_pass(references[0], texts, population, ft) if shared and ft else None
    out: dict[str, np.ndarray] = {}
    for m in ft:
        passes = [first or _reference_pass(references[0], texts, population, [m])]
        if m == "rmia":
            passes += [_reference_pass(r, texts, population, [m]) for r in references[1:]]
        out[m] = _finetune_score(m, bases[m].logprobs, out_extra.get("rmia"), passes, *settings)
    return out


def _finetune_score(
    m: str,
    target_lps: list[np.ndarray],
    target_pop: list[np.ndarray] | None,
    refs: list[tuple[list[np.ndarray], list[np.ndarray]]],
    windows: Sequence[int],
    offline_a: float,
    gamma: float,
) -> np.ndarray:
    """WBC's or RMIA's score per text from the target's and the references' token log-probs
    (``refs``: each reference's log-probs of the texts and of the population)."""
    if m == "wbc":
        return np.array([wbc_score(t, r, windows) for t, r in zip(target_lps, refs[0][0], strict=True)])
    assert target_pop is not None
    return rmia_scores(
        text_signal(_mean_lp(target_lps)),
        np.stack([text_signal(_mean_lp(x)) for x, _ in refs], axis=1),
        text_signal(_mean_lp(target_pop)),
        np.stack([text_signal(_mean_lp(z)) for _, z in refs], axis=1),
        offline_a=offline_a,
        gamma=gamma,
    )


def _text_statistics(
    texts: Sequence[str], seqs: list[list[int]], lp_sum: np.ndarray, words: np.ndarray, ref_word: np.ndarray
) -> dict[str, np.ndarray]:
    """The per-text statistics ``score_methods`` keeps beside the scores."""
    n_tok = np.array([len(s) for s in seqs], dtype=np.int64)
    return {
        "num_tokens": n_tok,
        "logprob": lp_sum,
        "log_ppl": -lp_sum / n_tok,
        "log_ppl_word": -lp_sum / words,
        "zlib_bytes": np.array([_zlib_bytes(t) for t in texts], dtype=np.float64),
        "ref_log_ppl_word": ref_word,
    }


def _check_methods(model: Any, methods: tuple[str, ...], opts: MethodOptions, *, min_k: float) -> None:
    """Raise unless every method is known and has what it needs (capability, model, prefix, ``min_k``)."""
    reference, mlm, recall_prefix = opts.reference, opts.mlm, opts.recall_prefix
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise ConfigError(
            f"unknown membership method {bad[0]!r}." + did_you_mean(bad[0], list(METHODS)), field="methods"
        )
    if any(m not in TEXT_ONLY_METHODS for m in methods) or not methods:
        try:
            require(model, Capability.SCORE, attack="membership inference")
        except CapabilityError as e:
            if Capability.GENERATE not in getattr(model, "capabilities", frozenset()):
                raise
            raise CapabilityError(f"{e} From generated text alone: --methods samia.") from None
    if "samia" in methods:
        require(model, Capability.GENERATE, attack="SaMIA membership inference")
    for m in (m for m in REFERENCE_METHODS if m in methods):
        if reference is None:
            raise ConfigError(f"method {m!r} needs a reference model", field="methods")
        require(reference, Capability.SCORE, attack="reference-calibrated membership inference")
    if "recall" in methods and not recall_prefix:
        raise ConfigError(
            "method 'recall' needs a non-member prefix",
            field="recall_prefix",
            hint="give non-member texts for the prefix (--recall-prefix FILE)",
        )
    if "neighbourhood" in methods and mlm is None:
        raise ConfigError("method 'neighbourhood' needs a masked LM", field="mlm", hint="give --mlm DIR")
    if not 0 < min_k <= 1:
        raise ConfigError(f"min_k must be in (0, 1], got {min_k}", field="min_k")


def _method_inputs(
    model: Any, texts: Sequence[str], seqs: list[list[int]], methods: tuple[str, ...], opts: MethodOptions
) -> dict[str, list[list[int]]]:
    """The methods' own inputs (lowercased texts, neighbours, RMIA's population), each a list of
    token sequences."""
    enc = model.tokenizer.encode
    extra: dict[str, list[list[int]]] = {}
    if "lowercase" in methods:
        extra["lowercase"] = [enc(t.lower()) or s for t, s in zip(texts, seqs, strict=True)]
    if "neighbourhood" in methods:
        nbr_texts = make_neighbours(texts, opts.mlm, opts.num_neighbours, seed=opts.seed)
        extra["neighbourhood"] = [enc(x) or s for nb, s in zip(nbr_texts, seqs, strict=True) for x in nb]
    if "rmia" in methods:
        extra["rmia"] = _encode_all(model, opts.population or (), "population")
    return extra


def _method_passes(
    model: Any,
    seqs: list[list[int]],
    methods: tuple[str, ...],
    extra: dict[str, list[list[int]]],
    *,
    shared: bool,
) -> tuple[dict[str, Any], dict[str, list[np.ndarray]]]:
    """Each method's pass over the texts, and the per-token log-probs of each method's own inputs."""
    out_extra: dict[str, list[np.ndarray]] = {}
    if shared:
        base, rest = _text_pass_with_neighbours(
            model, seqs, extra, moments="min_k_pp" in methods, out=out_extra
        )
        if rest:  # every method's other inputs in one batched pass
            allrows = [r for rows in rest.values() for r in rows]
            lps = teacher_forced_pass(model, allrows).logprobs
            at = 0
            for name, rows in rest.items():
                out_extra[name] = lps[at : at + len(rows)]
                at += len(rows)
        return {m: base for m in methods}, out_extra
    # each method on its own: its own pass over the text (Min-K%++ with moments), its own extra pass
    bases = {m: teacher_forced_pass(model, seqs, moments=(m == "min_k_pp")) for m in methods}
    for name, rows in extra.items():
        out_extra[name] = teacher_forced_pass(model, rows).logprobs
    return bases, out_extra


def _text_pass_with_neighbours(
    model: Any,
    seqs: list[list[int]],
    extra: dict[str, list[list[int]]],
    *,
    moments: bool,
    out: dict[str, list[np.ndarray]],
) -> tuple[TokenPass, dict[str, list[list[int]]]]:
    """The texts' pass; the neighbours of every text that packs (:mod:`lmleak.attacks.packed_pass`)
    ride in it, each scored from where it leaves its text; a text too long to pack and its
    neighbours are scored whole. The neighbours' log-probs go to ``out``. Returns the pass and the
    inputs still to score."""
    nbrs = extra.get("neighbourhood")
    if not nbrs:
        return teacher_forced_pass(model, seqs, moments=moments), extra
    k = len(nbrs) // len(seqs)
    per_text = [nbrs[i * k : (i + 1) * k] for i in range(len(seqs))]
    fits = [packs(model, [s], [nb]) for s, nb in zip(seqs, per_text, strict=True)]
    fit = [i for i, f in enumerate(fits) if f]
    whole = [i for i, f in enumerate(fits) if not f]
    lps: list[Any] = [None] * len(seqs)
    mus: list[Any] = [None] * len(seqs)
    sds: list[Any] = [None] * len(seqs)
    nlps: list[Any] = [None] * len(seqs)
    if fit:
        pk = packed_pass(model, [seqs[i] for i in fit], [per_text[i] for i in fit], moments=moments)
        for j, i in enumerate(fit):
            lps[i], nlps[i] = pk.logprobs[j], pk.neighbour_logprobs[j]
            if pk.mu is not None and pk.sigma is not None:
                mus[i], sds[i] = pk.mu[j], pk.sigma[j]
    if whole:
        tp = teacher_forced_pass(model, [seqs[i] for i in whole], moments=moments)
        scored = teacher_forced_pass(model, [y for i in whole for y in per_text[i]]).logprobs
        for j, i in enumerate(whole):
            lps[i], nlps[i] = tp.logprobs[j], scored[j * k : (j + 1) * k]
            if tp.mu is not None and tp.sigma is not None:
                mus[i], sds[i] = tp.mu[j], tp.sigma[j]
    out["neighbourhood"] = [lp for row in nlps for lp in row]
    rest = {name: rows for name, rows in extra.items() if name != "neighbourhood"}
    return TokenPass(lps, mus if moments else None, sds if moments else None), rest


def _method_score(
    m: str,
    b: Any,
    lp: np.ndarray,
    words: np.ndarray,
    stats: dict[str, np.ndarray],
    out_extra: dict[str, list[np.ndarray]],
    *,
    min_k: float,
    k: int,
) -> np.ndarray:
    """One method's score per text (any but ReCaLL, which needs the model) from its pass ``b``
    (``lp``: its summed log-probs) and the text statistics ``stats``."""
    log_ppl = -lp / stats["num_tokens"]
    if m == "perplexity":
        return -np.exp(log_ppl)
    if m == "zlib":
        return -log_ppl / stats["zlib_bytes"]
    if m == "min_k":
        return np.array([min_k_prob(x, min_k) for x in b.logprobs])
    if m == "min_k_pp":
        assert b.mu is not None and b.sigma is not None
        return np.array(
            [min_k_plus_plus(x, mu, sd, min_k) for x, mu, sd in zip(b.logprobs, b.mu, b.sigma, strict=True)]
        )
    if m == "lowercase":
        low = -_mean_lp(out_extra["lowercase"])
        return -log_ppl / np.maximum(low, 1e-6)
    if m == "reference":
        return -(-lp / words) / np.maximum(stats["ref_log_ppl_word"], 1e-6)
    if m == "neighbourhood":
        nb = _mean_lp(out_extra["neighbourhood"]).reshape(len(lp), k)
        return -log_ppl - nb.mean(axis=1)
    raise AssertionError(f"no score for method {m!r}")


def _zlib_bytes(text: str) -> int:
    import zlib

    return len(zlib.compress(text.encode("utf-8")))


def method_scenarios(methods: Sequence[str], *, notes: str | None = None) -> dict[str, dict[str, Any]]:
    """The KART record of each method (what access and resources it assumes), plus the blind
    baseline's (no access to the model at all: it is not an attack on the model, so its record
    is a plain mapping with ``access: none``)."""
    out: dict[str, dict[str, Any]] = {}
    for m in methods:
        info = METHODS[m]
        rec = scenario_record(
            attack=f"membership_inference:{m}",
            knowledge=("candidate_texts",),
            access=info.access,
            target="membership",
            resources=info.resources,
            notes=notes,
        )
        out[m] = {**rec, "needs": info.needs, "citation": info.citation}
    out["blind"] = {
        "attack": "membership_inference:blind",
        "access": "none",
        "knowledge": ["candidate_texts"],
        "resources": ["labelled member / non-member texts"],
        "target": "membership",
        "needs": "nothing from the model: a text-only classifier",
        "citation": "Das et al. 2024",
    }
    return out
