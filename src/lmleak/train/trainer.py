"""Training small language models on a corpus, with pluggable modes (plain, DP-SGD, CRT, SDP).

The loop is shared; a *strategy* per mode decides which batches an epoch visits and how a step
turns a batch into an update (:mod:`lmleak.train.dp` for DP-SGD, CRT and selective DP). Rules:

- Validation holds out *users*, never single documents (a user's data is all train or all
  validation), seeded, so validation perplexity measures generalisation to unseen people.
- Each document becomes ``[BOS] tokens [EOS]``, cut into chunks of at most ``seq_len + 1`` tokens
  (inputs plus the shifted target) that advance by ``seq_len`` — chunks never cross documents,
  so one training sequence never mixes two users' text (the privacy unit of DP modes).
- The loss of a sequence is the mean over its real (non-padding) targets; a batch's loss is the
  mean over its sequences. DP-SGD clips per sequence, so both agree on what one example is.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from lmleak.data.corpus import Corpus
from lmleak.data.holdout import TRAIN_DOCUMENTS_KEY, Holdout, document_counts, held_out_of, write_holdout
from lmleak.data.loaders import load_corpus
from lmleak.errors import ConfigError
from lmleak.models.small import (
    SmallGPTConfig,
    SmallLSTM,
    SmallLSTMConfig,
    build_tokenizer,
    new_small_gpt,
    save_small_model,
)
from lmleak.pii.evaluate import Secret, evaluate_policy, evaluate_policy_shapes, gamma_by_shape, load_secrets
from lmleak.pii.policies import get_policy
from lmleak.progress import track
from lmleak.runs import atomic_write_json
from lmleak.train import dp
from lmleak.train.confidentiality import delta2_upper_bound
from lmleak.train.config import TrainConfig
from lmleak.train.plain import EpochMeter, evaluate
from lmleak.train.sensitive import mask_token_id
from lmleak.train.sentences import sentence_spans
from lmleak.train.sequences import RunData, crt_split_words, encode_run
from lmleak.train.vocab import public_tokenizer


def split_users(corpus: Corpus, fraction: float, seed: int) -> tuple[Corpus, Corpus | None]:
    """Hold out a seeded ``fraction`` of users (at least one when the fraction is > 0)."""
    users = corpus.users
    if fraction <= 0 or len(users) < 2:
        return corpus, None
    rng = random.Random(seed)
    held = set(rng.sample(users, max(1, round(len(users) * fraction))))
    return corpus.without_users(held), corpus.select_users(held)


def build_module(config: TrainConfig, vocab_size: int, tokenizer: Any) -> torch.nn.Module:
    if config.arch == "gpt":
        shape = SmallGPTConfig(
            n_positions=config.seq_len + 1, n_embd=config.n_embd, n_layer=config.n_layer, n_head=config.n_head
        )
        return new_small_gpt(
            vocab_size,
            shape,
            seed=config.seed,
            bos_id=tokenizer.bos_token_id,
            eos_id=tokenizer.eos_token_id,
            pad_id=tokenizer.pad_token_id,
        )
    torch.manual_seed(config.seed)
    return SmallLSTM(SmallLSTMConfig(vocab_size=vocab_size, max_length=config.seq_len + 1))


@dataclass
class TrainResult:
    """What :func:`train_model` produced: where the model is and how training went."""

    model_dir: Path
    history: list[dict[str, Any]]
    final: dict[str, Any]
    privacy: dict[str, Any]
    train_users: list[str] = field(default_factory=list)
    val_users: list[str] = field(default_factory=list)


# long: the docstring documents nine parameters; the body itself is under 40 lines of steps, each a helper
def train_model(
    corpus: Corpus,
    out_dir: str | Path,
    config: TrainConfig | None = None,
    *,
    val_corpus: Corpus | None = None,
    progress: bool = True,
    split: tuple[Corpus, Corpus] | None = None,
    on_epoch_end: Callable[[int, torch.nn.Module, Any], None] | None = None,
    tokenizer: Any = None,
    tokenizer_source: str | None = None,
) -> TrainResult:
    """Train a small GPT or LSTM on ``corpus`` and save it to ``out_dir``.

    Args:
        corpus: training data; ``config.holdout_users`` of its users are held out for validation
            unless ``val_corpus`` is given.
        split: ``(public, private)`` for ``mode="crt"`` with a pre-computed split (otherwise the
            split is computed from ``corpus`` with ``config.policy``).
        on_epoch_end: called as ``(epoch, module, tokenizer)`` after each epoch (audit callbacks).
        tokenizer: use this (HF fast) tokenizer instead of learning one (the leave-out public model
            reuses the audited model's, so perplexities compare); ``tokenizer_source`` names it.
        progress: show a Rich progress bar per epoch (``False``: a plain loop).

    Writes the model (loadable by :func:`lmleak.models.small.load_small_model`; the GPT also by
    plain ``transformers``), ``train.json`` (config, per-epoch metrics, throughput, users) and
    ``privacy.json``; with ``config.snapshots`` a copy per epoch under ``snapshots/epoch-N``.
    """
    config = config if config is not None else TrainConfig()
    torch.manual_seed(config.seed)
    train_corpus, val = (
        (corpus, val_corpus)
        if val_corpus is not None
        else split_users(corpus, config.holdout_users, config.seed)
    )
    public, private = split or (None, None)
    crt = crt_split_words(train_corpus, config, public, private) if config.mode == "crt" else None
    if tokenizer is None:
        tokenizer, tokenizer_source = resolve_tokenizer(config, train_corpus, crt[0] if crt else None)
    else:
        tokenizer_source = tokenizer_source or "pretrained"
    module = build_module(config, len(tokenizer), tokenizer)
    data = encode_run(config, tokenizer, train_corpus, val, crt)
    train_chunks, val_chunks, extra = data.train, data.val, _strategy_inputs(data, tokenizer)

    strategy = dp.make_strategy(config)
    module = strategy.setup(module, train_chunks, extra)
    out = Path(out_dir)
    t_start = time.perf_counter()
    history, trained_tokens = _run_epochs(
        strategy, module, config, val_chunks, tokenizer, out, progress=progress, on_epoch_end=on_epoch_end
    )
    final_module = strategy.trained_module()
    final = dict(history[-1]) if history else {}
    final["train_eval"] = evaluate(final_module, data.public if data.public is not None else train_chunks)
    final["wall_seconds"] = time.perf_counter() - t_start
    final["tokens_per_s"] = trained_tokens / max(final["wall_seconds"], 1e-9)
    health = strategy.finish_health() if hasattr(strategy, "finish_health") else None
    privacy = _privacy_record(strategy, config, tokenizer_source, train_corpus, data.split_stats)
    save_small_model(final_module, tokenizer, out, extra={"mode": config.mode})
    info = _train_info(config, history, final, train_corpus, val, len(train_chunks), data.split_stats)
    info["vocab_size"] = len(tokenizer)
    info["privacy_unit"] = privacy.get("privacy_unit")  # as resolved (the config's None means the default)
    if health is not None:
        info["health"] = health
    atomic_write_json(out / "train.json", info)
    held = held_out_of(info["val_users"], info["train_users"])
    write_holdout(out, Holdout(held, config.holdout_users, config.seed, corpus.source))
    atomic_write_json(out / "privacy.json", privacy)
    return TrainResult(out, history, final, privacy, info["train_users"], info["val_users"])


def _strategy_inputs(data: RunData, tokenizer: Any) -> dict[str, Any]:
    """What a strategy's ``setup`` reads beside the training sequences: crt's D_pub and D_pri,
    sdp's sensitive-token mask and mask token, a DP mode's privacy unit and who owns what."""
    extra: dict[str, Any] = {"split_stats": data.split_stats}
    if data.mode == "crt":
        extra.update(public=data.public, private=data.train)
    if data.mode == "sdp":
        extra.update(sensitive=data.sensitive, mask_id=mask_token_id(tokenizer))
    if data.mode != "nodp":
        extra.update(unit=data.unit, unit_reason=data.unit_reason, units=data.units)
    return extra


def _train_info(
    config: TrainConfig,
    history: list[dict[str, Any]],
    final: dict[str, Any],
    train_corpus: Corpus,
    val: Corpus | None,
    num_sequences: int,
    split_stats: dict[str, Any] | None,
) -> dict[str, Any]:
    """``train.json``: the config, per-epoch history, final metrics and who was trained on."""
    return {
        "config": config.to_dict(),
        "history": history,
        "final": final,
        "train_users": train_corpus.users,
        "val_users": val.users if val is not None else [],
        "num_train_documents": len(train_corpus),
        TRAIN_DOCUMENTS_KEY: document_counts(d.user_id for d in train_corpus),
        "num_train_sequences": num_sequences,
        "split_stats": split_stats,
    }


def _privacy_record(
    strategy: Any,
    config: TrainConfig,
    tokenizer_source: str | None,
    train_corpus: Corpus,
    split_stats: dict[str, Any] | None,
) -> dict[str, Any]:
    """``privacy.json``: the strategy's accounting, the tokenizer's source, gamma and the CRT split."""
    privacy: dict[str, Any] = strategy.privacy()
    privacy["tokenizer_source"] = tokenizer_source
    privacy.update(train_corpus.people_record())  # people after merging spellings (issue 33)
    if config.mode in ("crt", "sdp"):
        privacy.update(policy_gamma(config, train_corpus))
    if split_stats:
        privacy["split"] = public_share(split_stats)
    return privacy


def _run_epochs(
    strategy: Any,
    module: torch.nn.Module,
    config: TrainConfig,
    val_chunks: Any,
    tokenizer: Any,
    out: Path,
    *,
    progress: bool,
    on_epoch_end: Callable[[int, torch.nn.Module, Any], None] | None,
) -> tuple[list[dict[str, Any]], int]:
    """Train every epoch (evaluating, snapshotting and calling back after each); (history, tokens trained)."""
    history: list[dict[str, Any]] = []
    trained_tokens = 0
    for epoch in range(1, config.epochs + 1):
        module.train()
        batches: Iterable[tuple[Any, ...]] = list(strategy.batches(epoch))
        if progress:
            batches = track(batches, description=f"epoch {epoch}/{config.epochs} ({config.mode})")
        record, tokens = _train_epoch(strategy, batches, epoch)
        trained_tokens += tokens
        plain = strategy.trained_module()
        if val_chunks is not None:
            record.update({f"val_{k}": v for k, v in evaluate(plain, val_chunks).items()})
        history.append(record)
        if config.snapshots:
            save_small_model(plain, tokenizer, out / "snapshots" / f"epoch-{epoch}", extra={"epoch": epoch})
        if on_epoch_end is not None:
            on_epoch_end(epoch, plain, tokenizer)
    return history, trained_tokens


def _train_epoch(
    strategy: Any, batches: Iterable[tuple[str, torch.Tensor, torch.Tensor]], epoch: int
) -> tuple[dict[str, Any], int]:
    """Take one epoch's steps; (its history record, the tokens trained on)."""
    meter = EpochMeter()
    rest: list[Any]
    for kind, ids, lengths, *rest in batches:
        # an empty Poisson batch is still a step: a noise-only one, accounted (its loss is NaN)
        meter.add(strategy.step(kind, ids, lengths, *rest), lengths)
    return meter.record(epoch), meter.tokens


def resolve_tokenizer(config: TrainConfig, corpus: Corpus, public: Corpus | None) -> tuple[Any, str]:
    """The tokenizer to train with and its ``tokenizer_source`` for ``privacy.json``.

    ``public``: a folder with a tokenizer (``pretrained:<folder>``, or ``private (inherited …)`` when
    that model's own record says its vocabulary was learnt from private text — refused for a DP mode
    unless ``tokenizer_from_private``) or a public corpus file learnt on (``public``); ``crt`` without
    it learns on D_pub (``public``); ``dp``/``sdp`` without it use the public default vocabulary
    (:func:`lmleak.train.vocab.public_tokenizer`, ``public:smollm2-bpe-N``), or with
    ``tokenizer_from_private`` learn on the training text (``private``): a vocabulary learnt from the
    private text carries its rare words (names) outside the DP guarantee.
    """

    src = config.tokenizer_from
    if src:
        p = Path(src)
        if p.is_dir() and (p / "tokenizer.json").is_file():
            from transformers import AutoTokenizer

            source = inherited_tokenizer_source(p)
            if config.mode != "nodp" and source.startswith("private") and not config.tokenizer_from_private:
                raise ConfigError(
                    f"the tokenizer of {p} was learnt from private text ({source}): a private vocabulary "
                    "stays outside the DP guarantee whatever folder it is taken from",
                    field="tokenizer_from",
                    hint="use a public corpus or the default public vocabulary (no --tokenizer-from), "
                    "or --tokenizer-from-private to accept it (recorded)",
                )
            return AutoTokenizer.from_pretrained(p), source

        return build_tokenizer(
            load_corpus(p).texts(), kind=config.tokenizer_kind, vocab_size=config.vocab_size
        ), "public"
    if config.mode == "crt" and public is not None and not config.tokenizer_from_private:
        if len(public) == 0:
            raise ConfigError(
                "D_pub is empty: no tokenizer can be learnt from public text",
                field="policy",
                hint="use a less conservative policy, --tokenizer-from PUBLIC_CORPUS, or --tokenizer-from-private",
            )
        return build_tokenizer(
            public.texts(), kind=config.tokenizer_kind, vocab_size=config.vocab_size
        ), "public"
    if config.mode in ("dp", "sdp") and not config.tokenizer_from_private:
        if config.tokenizer == "word":
            raise ConfigError(
                f"mode {config.mode!r} would learn a word tokenizer from the private training text, which the DP "
                "guarantee does not cover (rare private words such as names enter the vocabulary)",
                field="tokenizer_from",
                hint="drop --tokenizer word for the public default vocabulary, pass --tokenizer-from "
                "PUBLIC_CORPUS_OR_MODEL_DIR, or --tokenizer-from-private to accept it (recorded)",
            )
        return public_tokenizer(config.vocab_size)  # the public default: no private word in the vocabulary
    return build_tokenizer(
        corpus.texts(), kind=config.tokenizer_kind, vocab_size=config.vocab_size
    ), "private"


def inherited_tokenizer_source(folder: str | Path) -> str:
    """``tokenizer_source`` of a tokenizer taken from a model folder: what that model's own
    ``privacy.json`` says (a vocabulary learnt from private text stays ``private``, whatever folder
    it is taken from), else ``pretrained:<folder name>``.

    Example:
        >>> inherited_tokenizer_source("/nonexistent/base")
        'pretrained:base'
    """
    p = Path(folder)
    try:
        theirs = json.loads((p / "privacy.json").read_text()).get("tokenizer_source")
    except (OSError, json.JSONDecodeError, AttributeError):
        theirs = None
    if isinstance(theirs, str) and theirs.startswith("private"):
        return f"private (inherited from {p.name}: {theirs})"
    return f"pretrained:{p.name}"


def policy_gamma(config: TrainConfig, corpus: Corpus) -> dict[str, Any]:
    """γ for ``privacy.json``: the policy's miss rate measured against ``config.secrets`` on the
    training text (weighted over entity types as ``pii evaluate`` weights them: the micro-averaged
    ``ALL`` row), or the nominal one; ``gamma_source`` says which. With a measured γ of 0 the
    Bayesian bound is not 0: a finite sample cannot show that a policy misses nothing, so the bound
    is reported as infinite with the reason (and the 95 % upper confidence bound of γ beside it)."""

    policy = get_policy(config.policy or "balanced")
    nominal = getattr(policy, "recall", None)  # a DegradedPolicy's target recall; other policies state none
    gamma_nominal = None if nominal is None else 1.0 - float(nominal)
    out: dict[str, Any] = {"policy": config.policy or "balanced", "gamma_nominal": gamma_nominal}
    if not config.secrets:
        out.update(gamma=gamma_nominal, gamma_source="nominal" if gamma_nominal is not None else "unknown")
        return out

    docs = {d.doc_id for d in corpus}
    secrets = [x for x in load_secrets(config.secrets) if x.doc_id in docs]
    table, shapes = evaluate_policy_shapes(corpus, secrets, policy)  # one detection pass, per name shape too
    row = table["ALL"]
    out.update(
        gamma=row["gamma"],
        gamma_source="measured",
        gamma_support=int(row["support"]),
        gamma_upper95=delta2_upper_bound(round((row["gamma"] or 0.0) * row["support"]), int(row["support"])),
        gamma_by_entity={
            k: v["gamma"] for k, v in table.items() if k != "ALL" and v.get("gamma") is not None
        },
        gamma_by_shape=gamma_by_shape(shapes),  # issue 28: the pooled γ hides a shape the policy misses
    )
    if config.mode == "crt":
        out.update(conservative_delta2(corpus, secrets))
    return out


def conservative_delta2(corpus: Corpus, secrets: Sequence[Secret]) -> dict[str, Any]:
    """Theorem 8.3's δ₂ (paper 002 §3.3: π_c has recall 1 − δ₂ on μ) measured like γ, for
    ``privacy.json``: the secrets whose sentence CRT's conservative policy π_c does not flag (a
    flagged sentence goes to D_pri, under DP) are its misses; ``delta2_upper95`` is their one-sided
    95 % Clopper–Pearson upper bound (:func:`~lmleak.train.confidentiality.delta2_upper_bound`;
    0 misses of 696: 4.3e-3), which the audit adds to the Bayesian δ."""
    row = evaluate_policy(corpus, secrets, get_policy("conservative"), splitter=sentence_spans)["ALL"]
    n = int(row["support"])
    caught = row.get("sentence_recall")
    misses = None if caught is None else n - round(caught * n)
    return {
        "delta2_policy": "conservative",
        "delta2": None if misses is None or not n else misses / n,
        "delta2_misses": misses,
        "delta2_support": n,
        "delta2_upper95": None if misses is None else delta2_upper_bound(misses, n),
    }


def public_share(stats: dict[str, Any]) -> dict[str, Any]:
    """D_pub's share of the CRT split (sentences and tokens) and why sentences went private."""
    out: dict[str, Any] = {
        k: stats[k]
        for k in (
            "sentences",
            "public",
            "private",
            "private_reasons",
            "conservative",
            "public_words",
            "private_words",
            "mask_only",
        )
        if k in stats
    }
    pub, pri = stats.get("public"), stats.get("private")
    if pub is not None and pri is not None and pub + pri:
        out["public_sentence_share"] = pub / (pub + pri)
    pw, rw = stats.get("public_words"), stats.get("private_words")
    if pw is not None and rw is not None and pw + rw:
        out["public_word_share"] = pw / (pw + rw)
    if isinstance(stats.get("redaction"), dict):
        out["redacted_by_entity"] = stats["redaction"].get("by_entity", stats["redaction"])
    return out


def load_train_config(model_dir: str | Path) -> TrainConfig | None:
    """The config a model was trained with, when it has a ``train.json``."""
    p = Path(model_dir) / "train.json"
    if not p.exists():
        return None
    cfg = dict(json.loads(p.read_text())["config"])
    if "val_fraction" in cfg:  # train.json written before the field was renamed
        cfg["holdout_users"] = cfg.pop("val_fraction")
    return TrainConfig(**cfg)
