"""Generation from a masked LM by Gibbs sampling, and name–disease pair extraction (paper 004, B.3-B.4).

Wang & Cho (2019) treat BERT as a Markov random field: starting from a template whose unknown
spans are ``[MASK]`` tokens (the *writable positions*), repeatedly pick one writable position at
random and resample its token from the masked LM's conditional distribution given everything
else. The paper runs 1,000 such updates per document, drawing from the full distribution during
the first 250 (burn-in) and from the top-100 tokens afterwards, in batches of 32.

Template (B.3): ``[CLS] <name: 2> is a <age: 1> year old <sex: 1> who presented with
<disease: D> [SEP]``. In K+ scenarios the name span holds a known patient's name (not writable).

Rules kept here:
    - only writable positions ever change (:func:`gibbs_sample` asserts it on every batch);
    - each chain picks its own random position at each step; special tokens are never sampled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lmleak.progress import track


@dataclass(frozen=True, slots=True)
class GibbsConfig:
    """Appendix B.4 settings, scaled: ``iterations`` updates, the first ``burn_in`` from the full
    distribution, then top-``top_k``."""

    iterations: int = 1000
    burn_in: int = 250
    top_k: int = 100
    batch_size: int = 32
    disease_span: int = 116
    seed: int = 0


def build_template(
    tokenizer: Any, *, name: str | None, disease_span: int
) -> tuple[list[int], list[bool], tuple[int, int]]:
    """Token ids of the B.3 template, its writable mask, and the (start, end) of the name span.

    ``name=None`` (K-) leaves the two name positions masked and writable.
    """
    mask = tokenizer.mask_token_id
    enc = lambda s: tokenizer(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    name_ids = [mask, mask] if name is None else enc(name)
    ids = [tokenizer.cls_token_id]
    start = len(ids)
    ids += name_ids
    name_span = (start, len(ids))
    ids += enc("is a") + [mask] + enc("year old") + [mask] + enc("who presented with") + [mask] * disease_span
    ids.append(tokenizer.sep_token_id)
    writable = [t == mask for t in ids]
    return ids, writable, name_span


def gibbs_sample(
    model: Any, input_ids: Any, writable: Any, config: GibbsConfig, *, generator: Any = None
) -> Any:
    """Run Gibbs sampling on a ``[B, L]`` batch; only positions where ``writable`` is True change.

    Each step, every chain picks one of its writable positions uniformly at random and resamples
    it from the masked LM's distribution with that position masked (Wang & Cho 2019): the full
    distribution during burn-in, the ``top_k`` most likely tokens afterwards.
    """
    import torch

    tok = model.tokenizer
    ids = input_ids.clone()
    start = input_ids.clone()
    writable = writable.bool()
    g = generator or torch.Generator().manual_seed(config.seed)
    b = ids.shape[0]
    rows = torch.arange(b)
    n_special = len(tok.all_special_ids)
    special = torch.tensor(sorted(set(tok.all_special_ids)))
    counts = writable.sum(1)
    if (counts == 0).any():
        raise ValueError("every template needs at least one writable position")
    for it in range(config.iterations):
        # a uniformly random writable position per row: rank of a random draw among its writable slots
        r = (torch.rand(b, generator=g) * counts).long()
        pos = (writable.cumsum(1) == (r + 1).unsqueeze(1)).logical_and(writable).float().argmax(1)
        masked = ids.clone()
        masked[rows, pos] = tok.mask_token_id
        logits = model.logits(masked)[rows, pos].float()
        logits[:, special] = float("-inf")
        if it >= config.burn_in and config.top_k < logits.shape[1] - n_special:
            kth = logits.topk(config.top_k, dim=1).values[:, -1:]
            logits[logits < kth] = float("-inf")
        new = torch.multinomial(logits.softmax(1), 1, generator=g).squeeze(1)
        ids[rows, pos] = new
    if not torch.equal(ids[~writable], start[~writable]):
        raise AssertionError("Gibbs sampling wrote outside the writable positions")
    return ids


def generate_documents(model: Any, names: Sequence[str | None], config: GibbsConfig) -> list[dict[str, Any]]:
    """One generated document per entry of ``names`` (a known name for K+, None for K-).

    Returns ``{"name_given", "name", "text"}`` per document; ``name`` is the name span's text.
    """
    import torch

    tok = model.tokenizer
    g = torch.Generator().manual_seed(config.seed)
    out: list[dict[str, Any]] = []
    batches = range(0, len(names), config.batch_size)
    for i in track(batches, description="Gibbs sampling"):
        chunk = names[i : i + config.batch_size]
        temps = [build_template(tok, name=n, disease_span=config.disease_span) for n in chunk]
        width = max(len(t[0]) for t in temps)
        ids = torch.full((len(chunk), width), tok.pad_token_id, dtype=torch.long)
        wr = torch.zeros((len(chunk), width), dtype=torch.bool)
        for j, (t, w, _) in enumerate(temps):
            ids[j, : len(t)] = torch.tensor(t)
            wr[j, : len(w)] = torch.tensor(w)
        res = gibbs_sample(model, ids, wr, config, generator=g)
        for j, (t, _, (s, e)) in enumerate(temps):
            row = res[j, : len(t)].tolist()
            # K+: the attacker's known name *is* the name of the pair (a model whose vocabulary
            # lacks it, as under A-, would otherwise decode it as [UNK])
            out.append(
                {
                    "name_given": chunk[j],
                    "name": chunk[j]
                    if chunk[j] is not None
                    else tok.decode(row[s:e], skip_special_tokens=True),
                    "text": tok.decode(row, skip_special_tokens=True),
                }
            )
    return out


def extract_pairs(
    docs: Sequence[dict[str, Any]],
    *,
    valid_name: Any,
    concepts_of: Any,
    allowed_concepts: set[str] | None = None,
) -> tuple[set[tuple[str, str]], int]:
    """Î_T from generated documents (B.3 step 2): pairs of the name span and each extracted concept.

    ``valid_name(name) -> bool`` keeps names found in the name list; ``allowed_concepts`` (R+)
    drops concepts absent from D_public. Returns the set of pairs and their count with repeats.
    """
    pairs: set[tuple[str, str]] = set()
    total = 0
    for d in docs:
        name = " ".join(d["name"].lower().split())
        if not valid_name(name):
            continue
        for c in concepts_of(d["text"]):
            if allowed_concepts is not None and c not in allowed_concepts:
                continue
            pairs.add((name, c))
            total += 1
    return pairs, total
