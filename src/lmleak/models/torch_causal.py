"""One implementation of scoring, top-k and generation for every torch causal LM.

:class:`TorchCausalLM` wraps any module callable as ``module(input_ids=..., attention_mask=...)``
or ``module(inputs_embeds=..., attention_mask=...)`` that returns an object with ``.logits``
(B, T, V) and has ``get_input_embeddings()``: every Hugging Face causal LM, and the small LSTM
lmleak trains. The backends in this package only differ in how they build the module and the
tokenizer.

Teacher forcing (the ledger's pass) scores every position of a sequence in one forward pass; a
sequence longer than ``max_length`` is split into windows of ``max_length`` tokens that advance by
``max_length - overlap`` tokens, and each token is scored in the first window that contains it
with at least ``overlap`` tokens of context before it (or all of them, at the start), as in the
Hugging Face sliding-window perplexity recipe. ``overlap`` defaults to half the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
import torch

from lmleak.models.base import (
    Capability,
    SpanScore,
    TextTokenizer,
    TokenStats,
    continuation_logprobs,
    score_text_by_ids,
)
from lmleak.models.windows import stats_buffers, window_rows

_Beam = TypeVar("_Beam", bound=tuple[Any, ...])  # (score, tokens, ...): what a search carries per beam


def _prune(
    cands: list[_Beam], beams: int, eos: int | None, done: list[tuple[float, list[int]]]
) -> tuple[list[_Beam], bool]:
    """One beam-search step of one prompt: its live beams, and whether its search goes on.

    Candidates are taken best first until ``beams`` are live; one ending in EOS moves to ``done``
    (its score kept, EOS dropped). The search stops when no beam is live, or when ``beams`` have
    finished and the best finished one beats every live one (no length penalty).
    """
    cands.sort(key=lambda c: -c[0])
    live: list[_Beam] = []
    for c in cands:
        if eos is not None and c[1][-1] == eos:
            done.append((c[0], c[1][:-1]))
        else:
            live.append(c)
        if len(live) == beams:
            break
    return live, bool(live) and not (len(done) >= beams and max(sc for sc, _ in done) > live[0][0])


class TorchCausalLM:
    """Scoring, top-k, generation and white-box access for a torch causal LM.

    Args:
        module: the network (see the module docstring for the calling convention).
        tokenizer: a :class:`TextTokenizer`.
        name: shown in reports and errors.
        max_length: the longest input the module accepts (BOS included).
        batch_tokens: padded tokens per forward pass in batched scoring (bounds memory: logits take
            ``batch_tokens * vocab * 4`` bytes).
        overlap: context tokens kept between sliding windows (default ``max_length // 2``).
    """

    def __init__(
        self,
        module: torch.nn.Module,
        tokenizer: TextTokenizer,
        *,
        name: str,
        max_length: int,
        batch_tokens: int = 4096,
        overlap: int | None = None,
        device: str | torch.device = "cpu",
    ) -> None:
        self.module = module.eval()
        self.tokenizer = tokenizer
        self.name = name
        self.max_length = int(max_length)
        self.batch_tokens = int(batch_tokens)
        self.overlap = self.max_length // 2 if overlap is None else int(overlap)
        if not 0 <= self.overlap < self.max_length:
            raise ValueError(f"overlap must be in [0, max_length), got {self.overlap}")
        self.device = torch.device(device)
        self.capabilities = frozenset(
            {Capability.SCORE, Capability.TOP_K, Capability.GENERATE, Capability.EMBEDDINGS}
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, max_length={self.max_length})"

    @property
    def bos_token_id(self) -> int:
        """The start token every scored text follows (the tokenizer's ``bos_id``)."""
        return int(self.tokenizer.bos_id)

    def to_device(self, device: str | torch.device) -> TorchCausalLM:
        """Move the module to ``device`` (e.g. ``"cuda"``); inputs follow it, outputs come back as CPU arrays."""
        self.device = torch.device(device)
        self.module.to(self.device)
        return self

    # ------------------------------------------------------------------ forward passes
    def _forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out = self.module(input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device))
        return out.logits if hasattr(out, "logits") else out[0]

    def _pad(self, rows: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        """Right-pad rows to one tensor; returns (input_ids, attention_mask)."""
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.tokenizer.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.as_tensor(list(r), dtype=torch.long)
            mask[i, : len(r)] = 1
        return ids, mask

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices grouped so each padded batch stays within ``batch_tokens`` (longest first)."""
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        batches: list[list[int]] = []
        cur: list[int] = []
        for i in order:
            width = lengths[cur[0]] if cur else lengths[i]
            if cur and (len(cur) + 1) * width > self.batch_tokens:
                batches.append(cur)
                cur = []
            cur.append(i)
        if cur:
            batches.append(cur)
        return batches

    # ------------------------------------------------------------------ Capability.SCORE
    @torch.inference_mode()
    def token_stats(self, sequences: Sequence[Sequence[int]]) -> list[TokenStats]:
        # Every window of every sequence is one row; rows are batched by length across sequences.
        rows, owners = window_rows(sequences, self.tokenizer.bos_id, self.max_length, self.overlap)
        ranks, lps, top1 = stats_buffers(sequences)
        for batch in self._batches([len(r) for r in rows]):
            ids, mask = self._pad([rows[i] for i in batch])
            logp = torch.log_softmax(self._forward(ids, mask).float(), dim=-1)[:, :-1]
            targets = ids[:, 1:].to(logp.device)
            true_lp = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
            rank = (logp > true_lp.unsqueeze(-1)).sum(-1) + 1
            best = logp.max(-1).values
            for j, i in enumerate(batch):
                s, first, start = owners[i]
                n_in = len(rows[i])
                # prediction column c predicts input position start + c + 1 (a target index into
                # `full`); target t of `full` is token t-1 of the sequence.
                c0 = first - start - 1
                cols = slice(c0, n_in - 1)
                t0 = first - 1
                t1 = t0 + (n_in - 1 - c0)
                ranks[s][t0:t1] = rank[j, cols].cpu().numpy()
                lps[s][t0:t1] = true_lp[j, cols].cpu().numpy()
                top1[s][t0:t1] = best[j, cols].cpu().numpy()
        return [TokenStats(r, lp, t) for r, lp, t in zip(ranks, lps, top1, strict=True)]

    @torch.inference_mode()
    def next_logprobs(self, prefixes: Sequence[Sequence[int]]) -> np.ndarray:
        bos = self.tokenizer.bos_id
        rows = [[bos, *map(int, p)][-self.max_length :] for p in prefixes]
        out = np.empty((len(rows), self._vocab_out()), dtype=np.float32)
        for batch in self._batches([len(r) for r in rows]):
            ids, mask = self._pad([rows[i] for i in batch])
            logits = self._forward(ids, mask).float()
            last = mask.sum(1) - 1
            sel = logits[torch.arange(len(batch)), last.to(logits.device)]
            out[batch] = torch.log_softmax(sel, dim=-1).cpu().numpy()
        return out

    def _vocab_out(self) -> int:
        emb = self.module.get_output_embeddings() if hasattr(self.module, "get_output_embeddings") else None
        if emb is not None and hasattr(emb, "weight"):
            return int(emb.weight.shape[0])
        return int(self._forward(*self._pad([[self.tokenizer.bos_id]])).shape[-1])

    def score_ids(
        self, contexts: Sequence[Sequence[int]], continuations: Sequence[Sequence[int]]
    ) -> np.ndarray:
        """Sum of continuation log-probs. A context too long for one window keeps its last tokens
        (the sliding-window rule applies to the joined sequence)."""
        if len(contexts) != len(continuations):
            raise ValueError("contexts and continuations differ in length")
        joined = [[*c, *x] for c, x in zip(contexts, continuations, strict=True)]
        stats = self.token_stats(joined)
        return continuation_logprobs(stats, contexts)

    def score_text(self, contexts: Sequence[str], continuations: Sequence[str]) -> list[SpanScore]:
        return score_text_by_ids(self, contexts, continuations)

    # ------------------------------------------------------------------ Capability.TOP_K
    def top_k(self, prefixes: Sequence[Sequence[int]], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        lp = self.next_logprobs(prefixes)
        k = min(k, lp.shape[1])
        out = []
        for row in lp:
            # stable sort: equal log-probs keep the lower id first
            idx = np.argsort(-row, kind="stable")[:k]
            out.append((idx.astype(np.int64), row[idx]))
        return out

    # ------------------------------------------------------------------ Capability.GENERATE
    @torch.inference_mode()
    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int,
        num_beams: int = 1,
        do_sample: bool = False,
        num_return_sequences: int = 1,
        temperature: float = 1.0,
        top_k: int | None = None,
        seed: int | None = None,
    ) -> list[list[str]]:
        if num_return_sequences > num_beams and not do_sample:
            raise ValueError("num_return_sequences cannot exceed num_beams without sampling")
        gen = torch.Generator().manual_seed(0 if seed is None else seed)
        starts = [[self.tokenizer.bos_id, *self.tokenizer.encode(p)][-self.max_length :] for p in prompts]
        if not do_sample:  # every prompt's beams advance together: one forward pass per step for all
            if starts and self._cacheable(starts, max_new_tokens):
                # groups whose beams x (prompt + new tokens) stay within batch_tokens, like _step_batched's
                per = max(1, self.batch_tokens // (num_beams * (max(map(len, starts)) + max_new_tokens)))
                found = [
                    o
                    for g in range(0, len(starts), per)
                    for o in self._beam_many_cached(starts[g : g + per], max_new_tokens, num_beams)
                ]
            else:
                found = self._beam_many(starts, max_new_tokens, num_beams)
            return [[self.tokenizer.decode(o) for o in outs[:num_return_sequences]] for outs in found]
        results: list[list[str]] = []
        for ids in starts:
            outs = self._sample(ids, max_new_tokens, num_return_sequences, temperature, top_k, gen)
            results.append([self.tokenizer.decode(o) for o in outs])
        return results

    def _step(self, rows: list[list[int]]) -> torch.Tensor:
        rows = [r[-self.max_length :] for r in rows]
        ids, mask = self._pad(rows)
        logits = self._forward(ids, mask).float()
        last = mask.sum(1) - 1
        return torch.log_softmax(logits[torch.arange(len(rows)), last.to(logits.device)], -1).cpu()

    def _beam_many(self, prompts: list[list[int]], steps: int, beams: int) -> list[list[list[int]]]:
        """Beam search without length penalty (finished beams keep their score; ``beams=1`` is
        greedy decoding) for many prompts at once: the live beams of every prompt are scored in one
        batched forward pass per step (rows padded on the right; each row's last real position is
        read), and each prompt's search then proceeds exactly as a search of that prompt alone would
        (the one-prompt oracle of ``tests/models/test_torch_causal.py``). Recomputes the whole prefix
        each step (no KV cache) so it works for every module; small models make that cheap."""
        eos = self.tokenizer.eos_id
        live: list[list[tuple[float, list[int]]]] = [[(0.0, [])] for _ in prompts]
        done: list[list[tuple[float, list[int]]]] = [[] for _ in prompts]
        active = list(range(len(prompts)))
        for _ in range(steps):
            if not active:
                break
            rows = [prompts[i] + seq for i in active for _, seq in live[i]]
            lp = self._step_batched(rows)
            r = 0
            still = []
            for i in active:
                cands: list[tuple[float, list[int]]] = []
                for score, seq in live[i]:
                    vals, idx = torch.topk(lp[r], beams)
                    r += 1
                    for v, t in zip(vals.tolist(), idx.tolist(), strict=True):
                        cands.append((score + v, [*seq, t]))
                live[i], going = _prune(cands, beams, eos, done[i])
                if going:
                    still.append(i)
            active = still
        out = []
        for i in range(len(prompts)):
            pool = sorted(done[i] + live[i], key=lambda c: -c[0])
            out.append([seq for _, seq in pool[:beams]])
        return out

    def _cacheable(self, prompts: list[list[int]], steps: int) -> bool:
        """Whether :meth:`_beam_many_cached` applies: a Hugging Face module (it takes position ids and
        returns a key/value cache) and no row that would outgrow the window (that slides instead)."""
        from transformers import PreTrainedModel

        return isinstance(self.module, PreTrainedModel) and max(map(len, prompts)) + steps <= self.max_length

    def _beam_many_cached(self, prompts: list[list[int]], steps: int, beams: int) -> list[list[list[int]]]:
        """:meth:`_beam_many` with a key/value cache: the prompts (left-padded, explicit position ids)
        are run once, then each step feeds only the newest token of every live beam, and the cache
        rows follow the beams they extend (``reorder_cache``). The search itself — candidates,
        their order, EOS handling, the stopping rule (:func:`_prune`) — is :meth:`_beam_many`'s;
        only the arithmetic that produces each step's log-probabilities is shorter (one token per
        row instead of the whole prefix)."""
        eos = self.tokenizer.eos_id
        n = len(prompts)
        cache, mask, last_pos, lp = self._prefill(prompts)
        # live beams carry the cache row they were scored in: (score, tokens, row)
        live: list[list[tuple[float, list[int], int]]] = [[(0.0, [], i)] for i in range(n)]
        done: list[list[tuple[float, list[int]]]] = [[] for _ in prompts]
        active = list(range(n))
        for step in range(steps):
            if not active:
                break
            r = 0
            still = []
            for i in active:
                cands: list[tuple[float, list[int], int]] = []
                for score, seq, _ in live[i]:
                    vals, idx = torch.topk(lp[r], beams)
                    for v, t in zip(vals.tolist(), idx.tolist(), strict=True):
                        cands.append((score + v, [*seq, t], r))
                    r += 1
                live[i], going = _prune(cands, beams, eos, done[i])
                if going:
                    still.append(i)
            active = still
            if not active or step == steps - 1:
                break
            beams_now = [b for i in active for b in live[i]]
            cache, mask, last_pos, lp = self._cached_step(cache, mask, last_pos, beams_now)
            r = 0
            for i in active:  # the rows of the new step are the live beams, in order
                live[i] = [(score, seq, (r := r + 1) - 1) for score, seq, _ in live[i]]
        result = []
        for i in range(n):
            pool = sorted(done[i] + [(s, q) for s, q, _ in live[i]], key=lambda c: -c[0])
            result.append([seq for _, seq in pool[:beams]])
        return result

    def _prefill(self, prompts: list[list[int]]) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Run the left-padded prompts once: (key/value cache, attention mask, last position, log-probs)."""
        n, width = len(prompts), max(len(p) for p in prompts)
        ids = torch.full((n, width), self.tokenizer.pad_id, dtype=torch.long)
        mask = torch.zeros((n, width), dtype=torch.long)
        for i, p in enumerate(prompts):
            ids[i, width - len(p) :] = torch.as_tensor(p, dtype=torch.long)
            mask[i, width - len(p) :] = 1
        pos = (mask.cumsum(1) - 1).clamp(min=0)
        out = self.module(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device),
            position_ids=pos.to(self.device),
            use_cache=True,
        )
        return out.past_key_values, mask, pos[:, -1], torch.log_softmax(out.logits[:, -1].float(), -1).cpu()

    def _cached_step(
        self,
        cache: Any,
        mask: torch.Tensor,
        last_pos: torch.Tensor,
        beams: list[tuple[float, list[int], int]],
    ) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Feed each live beam's newest token, its cache row taken from the row it extends (``reorder_cache``)."""
        parents = torch.tensor([b[2] for b in beams], dtype=torch.long)
        new = torch.tensor([[b[1][-1]] for b in beams], dtype=torch.long)
        cache.reorder_cache(parents)
        mask = torch.cat([mask[parents], torch.ones((len(parents), 1), dtype=torch.long)], 1)
        last_pos = last_pos[parents] + 1
        out = self.module(
            input_ids=new.to(self.device),
            attention_mask=mask.to(self.device),
            position_ids=last_pos[:, None].to(self.device),
            past_key_values=cache,
            use_cache=True,
        )
        return out.past_key_values, mask, last_pos, torch.log_softmax(out.logits[:, -1].float(), -1).cpu()

    def _step_batched(self, rows: list[list[int]]) -> torch.Tensor:
        """:meth:`_step` over many rows, in batches that respect ``batch_tokens``."""
        rows = [r[-self.max_length :] for r in rows]
        out: list[torch.Tensor | None] = [None] * len(rows)
        for batch in self._batches([len(r) for r in rows]):
            lp = self._step([rows[i] for i in batch])
            for j, i in enumerate(batch):
                out[i] = lp[j]
        return torch.stack(out)  # type: ignore[arg-type]

    def _sample(
        self,
        ids: list[int],
        steps: int,
        n: int,
        temperature: float,
        top_k: int | None,
        gen: torch.Generator,
    ) -> list[list[int]]:
        eos = self.tokenizer.eos_id
        seqs: list[list[int]] = [[] for _ in range(n)]
        active = list(range(n))
        for _ in range(steps):
            if not active:
                break
            lp = self._step([ids + seqs[i] for i in active]) / max(temperature, 1e-6)
            if top_k is not None:
                kth = torch.topk(lp, min(top_k, lp.shape[-1]), dim=-1).values[:, -1:]
                lp = lp.masked_fill(lp < kth, float("-inf"))
            nxt = torch.multinomial(torch.softmax(lp, -1), 1, generator=gen).squeeze(-1).tolist()
            still = []
            for i, t in zip(active, nxt, strict=True):
                if eos is not None and t == eos:
                    continue
                seqs[i].append(t)
                still.append(i)
            active = still
        return seqs

    # ------------------------------------------------------------------ Capability.EMBEDDINGS
    @property
    def torch_module(self) -> torch.nn.Module:
        return self.module

    def input_embeddings(self) -> torch.nn.Embedding:
        return self.module.get_input_embeddings()

    def logits_from_embeddings(self, embeds: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        out: Any = self.module(inputs_embeds=embeds, attention_mask=attention_mask)
        return out.logits if hasattr(out, "logits") else out[0]
