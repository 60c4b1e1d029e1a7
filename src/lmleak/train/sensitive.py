"""What is private in CRT and selective DP: paper 002's public/private split, selective DP's sensitive
tokens, and the public copy of a batch that selective DP's un-noised gradient is computed on.

Selective DP (Shi et al. 2021) trains the non-sensitive part of each sequence without noise. That
part must not depend on the sensitive tokens at all — not as targets, and not as *inputs* either
(the context after a secret carries it through attention). :func:`public_copy` therefore rebuilds
each sequence with every run of flagged tokens replaced by one mask token, as CRT's redaction does:
the un-noised gradient is a function of the unflagged tokens and of where the flagged spans are,
never of what they hold (tests change only a secret and compare the public gradients exactly).
"""

from __future__ import annotations

from typing import Any

import torch

from lmleak.pii.policies import get_policy
from lmleak.train.config import TrainConfig
from lmleak.train.plain import encode_chunks
from lmleak.train.split import crt_split

#: what selective DP guarantees (issue 26 item 7): the detected secrets only
SDP_GUARANTEE = (
    "(epsilon, delta) for the tokens the policy flagged as sensitive (detected secrets); none for "
    "secrets the policy missed. The public part is trained on a copy with every flagged span replaced "
    "by one mask token, so it depends on where flagged spans are, never on what they hold"
)


def crt_split_for(
    train: Any, config: TrainConfig, public: Any, private: Any
) -> tuple[Any, Any, dict[str, Any]]:
    """The (public, private) corpora for CRT: given ones, or the paper-002 split of ``train``."""
    if public is not None and private is not None:
        return public, private, {"public_sequences": len(public), "private_sequences": len(private)}
    res = crt_split(
        train, get_policy(config.policy or "balanced"), conservative=get_policy("conservative"), dedup="exact"
    )
    return res.public, res.private, dict(res.stats)


def sensitive_token_mask(corpus: Any, tokenizer: Any, config: TrainConfig) -> torch.Tensor:
    """Per chunk token (aligned with :func:`encode_chunks`), True where the token is sensitive."""
    policy = None
    if config.policy:
        policy = get_policy(config.policy)
    rows: list[list[bool]] = []
    mask_id = tokenizer.convert_tokens_to_ids("<MASK>")
    for doc in corpus:
        enc = tokenizer(doc.text, add_special_tokens=False, return_offsets_mapping=True)
        ids, offsets = enc["input_ids"], enc["offset_mapping"]
        if policy is not None:
            spans = [(s.start, s.end) for s in policy.detect(doc.text)]
            flags = [any(a < e and b > s for s, e in spans) for a, b in offsets]
        else:
            flags = [
                i == mask_id or doc.text[a:b].strip().isdigit()
                for i, (a, b) in zip(ids, offsets, strict=True)
            ]
        full = [False, *flags, False]  # BOS, tokens, EOS
        start = 0
        while start < len(full) - 1:
            rows.append(full[start : start + config.seq_len + 1])
            start += config.seq_len
    chunks = encode_chunks(corpus.texts(), tokenizer, config.seq_len)
    out = torch.zeros_like(chunks.ids, dtype=torch.bool)
    assert len(rows) == len(chunks), "sensitivity mask and chunks disagree"
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r, dtype=torch.bool)
    return out


def public_copy(
    ids: torch.Tensor, lengths: torch.Tensor, sensitive: torch.Tensor, mask_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, lengths) of the batch with every run of flagged tokens collapsed into one ``mask_id``.

    ``sensitive`` is aligned with ``ids`` (one flag per chunk token, :func:`sensitive_token_mask`).

    Example:
        >>> ids = torch.tensor([[1, 7, 8, 9, 2, 0], [1, 5, 2, 0, 0, 0]])
        >>> flags = torch.tensor([[0, 1, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0]]).bool()
        >>> out, n = public_copy(ids, torch.tensor([5, 3]), flags, mask_id=4)
        >>> out.tolist(), n.tolist()
        ([[1, 4, 9, 2, 0, 0], [1, 5, 2, 0, 0, 0]], [4, 3])
    """
    rows: list[list[int]] = []
    for r in range(len(ids)):
        n = int(lengths[r])
        row: list[int] = []
        before = False
        for tok, flag in zip(ids[r, :n].tolist(), sensitive[r, :n].tolist(), strict=True):
            if not flag:
                row.append(tok)
            elif not before:
                row.append(mask_id)
            before = bool(flag)
        rows.append(row)
    out = torch.zeros_like(ids)
    new_lengths = torch.tensor([len(r) for r in rows], dtype=lengths.dtype)
    for r, row in enumerate(rows):
        out[r, : len(row)] = torch.tensor(row, dtype=ids.dtype)
    return out, new_lengths


def mask_token_id(tokenizer: Any) -> int:
    """The token a public copy puts where a flagged span was: ``<MASK>`` when it is one token of the
    vocabulary (lmleak's tokenizers), else the unknown token, else the end-of-text token."""
    unk = getattr(tokenizer, "unk_token_id", None)
    mask = tokenizer.convert_tokens_to_ids("<MASK>")
    if isinstance(mask, int) and mask is not None and mask != unk:
        return mask
    if isinstance(unk, int):
        return unk
    return int(tokenizer.eos_token_id)
