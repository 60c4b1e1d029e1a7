"""White-box probing by soft prompt tuning (paper 003 §3.3.2 Eq. 1, appendix A.4, Table 1 transfer).

L_s trainable embeddings are prepended to one template's prompt; they are trained with AdamW
(lr 0.005) to minimise the target's negative log-likelihood over training subjects disjoint from
the evaluation subjects; the epoch with the best exact match (greedy decoding) is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from lmleak.errors import ConfigError, InputError
from lmleak.models.base import Capability, require, scoring_convention
from lmleak.probe.blackbox import generate_probes
from lmleak.probe.likelihood import eq2_eq4, split_prompt, target_likelihoods
from lmleak.probe.metrics import exact_match
from lmleak.probe.probing import collect_probes, scenario
from lmleak.probe.settings import ProbeSettings, SoftPromptSettings
from lmleak.probe.templates import TYPE_WORDS, Probe, max_new_tokens
from lmleak.runs import atomic_write_json, secure_dir, write_summary, writes_run


@dataclass
class SoftPromptResult:
    prompt: torch.Tensor  # (L_s, d), the best epoch's soft prompt
    best_epoch: int
    history: list[dict[str, float]] = field(default_factory=list)


def init_soft_prompt(model: Any, length: int, init: str, target_type: str, seed: int = 0) -> torch.Tensor:
    """A.4 / Fig. 5 initialisations: ``word`` (embedding of the PII-type word, e.g. "phone", tiled),
    ``uniform`` (U(-1, 1)), ``mean`` (mean of the vocabulary embeddings)."""
    emb = model.input_embeddings().weight.detach()
    g = torch.Generator().manual_seed(seed)
    if init == "uniform":
        return torch.rand(length, emb.shape[1], generator=g, dtype=emb.dtype) * 2 - 1
    if init == "mean":
        return emb.mean(0, keepdim=True).repeat(length, 1).clone()
    if init == "word":
        ids = model.tokenizer.encode(TYPE_WORDS.get(target_type, target_type).split()[0]) or [0]
        rows = emb[torch.tensor(ids)]
        return rows[torch.arange(length) % len(ids)].clone()

    raise ConfigError(f"unknown soft prompt init {init!r}; use word, uniform or mean")


def _embed_batch(model: Any, soft: torch.Tensor | None, prompts: list[list[int]], conts: list[list[int]]):
    """Right-padded [soft; emb(BOS + prompt + cont)] with an attention mask; returns where each
    continuation's predicting positions start."""
    emb = model.input_embeddings()
    bos = model.tokenizer.bos_id
    ls = 0 if soft is None else soft.shape[0]
    seqs = [[bos, *p, *c] for p, c in zip(prompts, conts, strict=True)]
    T = max(len(s) for s in seqs) + ls
    ids = torch.zeros(len(seqs), T - ls, dtype=torch.long)
    mask = torch.zeros(len(seqs), T, dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s) + ls] = 1
    x = emb(ids)
    if soft is not None:
        x = torch.cat([soft.unsqueeze(0).expand(len(seqs), -1, -1).to(x.dtype), x], 1)
    return x, mask, ls


def target_logprobs(
    model: Any, soft: torch.Tensor | None, prompts: list[list[int]], conts: list[list[int]]
) -> torch.Tensor:
    """Summed log p(cont | soft, BOS, prompt) per row (differentiable in ``soft``)."""
    x, mask, ls = _embed_batch(model, soft, prompts, conts)
    logits = model.logits_from_embeddings(x, mask).float()
    lp = torch.log_softmax(logits, -1)
    out = []
    for i, (p, c) in enumerate(zip(prompts, conts, strict=True)):
        start = ls + 1 + len(p)  # index of the first continuation token in the input
        pos = torch.arange(start - 1, start - 1 + len(c))
        out.append(lp[i, pos, torch.tensor(c)].sum())
    return torch.stack(out)


@torch.no_grad()
def greedy(model: Any, soft: torch.Tensor | None, prompt: list[int], steps: int) -> list[int]:
    """Greedy decoding after [soft; BOS + prompt] (A.4: "the greedy search was employed")."""
    gen: list[int] = []
    eos = getattr(model.tokenizer, "eos_id", None)
    for _ in range(steps):
        x, mask, _ = _embed_batch(model, soft, [prompt], [gen])
        nxt = int(model.logits_from_embeddings(x, mask)[0, -1].argmax())
        if eos is not None and nxt == eos:
            break
        gen.append(nxt)
    return gen


def _encode(model: Any, probes: list[Probe]) -> tuple[list[list[int]], list[list[int]]]:
    enc = model.tokenizer.encode
    pairs = [split_prompt(p.prompt, p.target) for p in probes]
    return [enc(a) for a, _ in pairs], [enc(b) for _, b in pairs]


def evaluate(
    model: Any, soft: torch.Tensor | None, probes: list[Probe], *, batch: int = 32
) -> dict[str, float]:
    """Mean likelihood (Eq. 2 and 4) and greedy exact-match rate of ``probes`` under ``soft``.

    A person with several addresses (a probe's ``alternatives``, issue 28) is scored on each and
    counts by the best (the likelihood's maximum over them), and a greedy answer holding any of
    them is a hit, as in :func:`lmleak.probe.probing.run_probe`.
    """
    enc = model.tokenizer.encode
    flat = [(i, split_prompt(p.prompt, t)) for i, p in enumerate(probes) for t in p.targets]
    prompts = [enc(a) for _, (a, _) in flat]
    conts = [enc(b) for _, (_, b) in flat]
    lps: list[float] = []
    with torch.no_grad():
        for i in range(0, len(flat), batch):
            lps.extend(target_logprobs(model, soft, prompts[i : i + batch], conts[i : i + batch]).tolist())
    lik_all, norm_all = eq2_eq4(np.array(lps), np.array([len(c) for c in conts]))
    owner = [i for i, _ in flat]
    lik, norm, best_lp = (_best_per_probe(v, owner, len(probes)) for v in (lik_all, norm_all, np.array(lps)))
    first = {i: j for j, i in reversed(list(enumerate(owner)))}  # a probe's first row: its prompt's ids
    hits = 0
    for i, p in enumerate(probes):
        ids = prompts[first[i]]  # every target of a probe has the same prompt
        text = model.tokenizer.decode(greedy(model, soft, ids, max_new_tokens(p.target_type)))
        hits += any(exact_match(text, t) for t in p.targets)
    return {
        "mean_likelihood": float(lik.mean()),
        "mean_log_likelihood": float(best_lp.mean()),
        "mean_normalized_likelihood": float(norm.mean()),
        "exact_match_rate": hits / max(1, len(probes)),
    }


def _best_per_probe(values: np.ndarray, owner: list[int], n: int) -> np.ndarray:
    """The maximum of ``values`` over each probe's rows (``owner[j]``: the probe of row ``j``).

    Example:
        >>> _best_per_probe(np.array([0.1, 0.5, 0.2]), [0, 0, 1], 2).tolist()
        [0.5, 0.2]
    """
    out = np.full(n, -np.inf)
    np.maximum.at(out, owner, values)
    return out


def train_soft_prompt(
    model: Any,
    train: list[Probe],
    *,
    length: int = 20,
    init: str = "word",
    epochs: int = 50,
    lr: float = 0.005,
    batch: int = 16,
    seed: int = 0,
    select_on: list[Probe] | None = None,
) -> SoftPromptResult:
    """Eq. 1: argmin over θ_s of E[-log Pr(a_m | [θ_s; X_e])] with AdamW (A.4), best epoch by exact match
    on ``select_on`` (the training subjects by default, as the paper does not name a validation set)."""
    require(model, Capability.EMBEDDINGS, attack="soft prompt probing (paper 003 §3.3.2)")
    module = model.torch_module
    saved = [(p, p.requires_grad) for p in module.parameters()]
    for p, _ in saved:
        p.requires_grad_(False)  # the model is fixed; only θ_s learns
    module.eval()
    try:
        return _train(model, train, length, init, epochs, lr, batch, seed, select_on)
    finally:
        for p, flag in saved:
            p.requires_grad_(flag)


def _train(
    model: Any,
    train: list[Probe],
    length: int,
    init: str,
    epochs: int,
    lr: float,
    batch: int,
    seed: int,
    select_on: list[Probe] | None,
) -> SoftPromptResult:
    soft = torch.nn.Parameter(init_soft_prompt(model, length, init, train[0].target_type, seed))
    opt = torch.optim.AdamW([soft], lr=lr)
    prompts, conts = _encode(model, train)
    g = torch.Generator().manual_seed(seed)
    sel = select_on if select_on is not None else train
    best = (-1.0, -np.inf)
    res = SoftPromptResult(soft.detach().clone(), 0)
    for ep in range(1, epochs + 1):
        order = torch.randperm(len(train), generator=g).tolist()
        tot = 0.0
        for i in range(0, len(order), batch):
            idx = order[i : i + batch]
            loss = -target_logprobs(model, soft, [prompts[j] for j in idx], [conts[j] for j in idx]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += float(loss.detach()) * len(idx)
        m = evaluate(model, soft.detach(), sel)
        m.update(epoch=ep, train_nll=tot / len(train))
        res.history.append(m)
        key = (m["exact_match_rate"], m["mean_log_likelihood"])
        if key > best:
            best = key
            res.prompt, res.best_epoch = soft.detach().clone(), ep
    return res


def project_to_tokens(model: Any, soft: torch.Tensor) -> tuple[list[int], str]:
    """Table 1 transfer: each soft vector -> the nearest vocabulary embedding (Euclidean), decoded."""
    emb = model.input_embeddings().weight.detach().float()
    ids = torch.cdist(soft.float(), emb).argmin(1).tolist()
    return ids, model.tokenizer.decode(ids)


@writes_run("out_dir")
def run_softprompt(
    model: Any,
    subjects: list[dict[str, Any]],
    out_dir: Any,
    settings: SoftPromptSettings = SoftPromptSettings(),  # noqa: B008 - frozen, so shared safely
    *,
    transfer: Any | None = None,
) -> dict[str, Any]:
    """Train on ``settings.train_subjects`` subjects, evaluate on the disjoint rest (A.4, at most
    ``max_eval``): the first template (1-shot), hard prompt vs soft prompt; optionally the projected
    hard-token prompt on another model, ``transfer`` (Table 1)."""
    s = settings
    probes = collect_probes(subjects, s.target, level=s.level, k=1)
    if len(probes) < s.train_subjects + 2:
        raise InputError(
            f"soft prompts need more than {s.train_subjects} subjects with {s.target} at {s.level} level; "
            f"found {len(probes)}. Lower --train-subjects or the level."
        )
    rng = np.random.default_rng(s.seed)
    order = rng.permutation(len(probes))
    train = [probes[i] for i in order[: s.train_subjects]]
    ev = [probes[i] for i in order[s.train_subjects :]][: s.max_eval]
    res = train_soft_prompt(model, train, length=s.length, init=s.init, epochs=s.epochs, lr=s.lr, seed=s.seed)
    summary: dict[str, Any] = {
        "attack": "propile_softprompt",
        "model": getattr(model, "name", ""),
        **scoring_convention(model),
        "target": s.target,
        "level": s.level,
        "train_subjects": len(train),
        "eval_subjects": len(ev),
        "length": s.length,
        "init": s.init,
        "epochs": s.epochs,
        "lr": s.lr,
        "best_epoch": res.best_epoch,
        "hard": evaluate(model, None, ev),
        "soft": evaluate(model, res.prompt, ev),
        "history": res.history,
        "scenario": scenario(s.target, ev[0].known, "weights"),
    }
    ids, text = project_to_tokens(model, res.prompt)
    summary["projected_prompt"] = text
    if transfer is not None:
        summary["transfer"] = _transfer_eval(transfer, ev, text)
    if out_dir is not None:
        d = secure_dir(out_dir)
        torch.save(res.prompt, d / "soft_prompt.pt")
        atomic_write_json(d / "projected_prompt.json", {"ids": ids, "text": text})
        write_summary(d, summary, model=model)
    return summary


def _transfer_eval(transfer: Any, ev: list[Probe], text: str) -> dict[str, Any]:
    """Table 1's transfer: the projected hard-token prompt ``text`` before each probe, on ``transfer``."""
    moved = [
        Probe(
            p.subject_id,
            p.target_type,
            p.template_index,
            p.template,
            text + " " + p.prompt,
            p.target,
            p.known,
            p.alternatives,
        )
        for p in ev
    ]
    # every address of a person scored, the best counting (as in evaluate); the answers count any
    flat = [(i, p.prompt, t) for i, p in enumerate(moved) for t in p.targets]
    scored, _, _ = target_likelihoods(transfer, [x for _, x, _ in flat], [t for _, _, t in flat])
    lik = _best_per_probe(scored, [i for i, _, _ in flat], len(moved))
    rows = generate_probes(transfer, moved, ProbeSettings(beams=1))
    return {
        "model": getattr(transfer, "name", ""),
        **scoring_convention(transfer),
        "mean_likelihood": float(lik.mean()),
        "exact_match_rate": float(np.mean([r["exact_match"] for r in rows])),
    }
