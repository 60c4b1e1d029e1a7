"""A small BERT-style masked LM pre-trained from scratch on CPU (paper 004 §5.2, appendix B.2).

The paper pre-trains an uncased BERT-base from scratch on the clinical notes (not fine-tuned, so
that names the model emits can only come from the notes). Here the same recipe at toy size: an
uncased word-level tokenizer with BERT's special tokens, a :class:`transformers.BertForMaskedLM`
built from a small config, the standard 15% masking (80% ``[MASK]``, 10% random, 10% kept).
Saved as a standard Hugging Face directory (``config.json``, ``model.safetensors``, tokenizer
files), so ``AutoModelForMaskedLM.from_pretrained`` reads it without lmleak.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lmleak.models.base import Capability
from lmleak.progress import track
from lmleak.runs import secure_dir

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@dataclass(frozen=True, slots=True)
class MaskedLMConfig:
    """Shape and training of the small BERT (defaults train in a few minutes on 2 cores)."""

    hidden_size: int = 128
    num_layers: int = 2
    num_heads: int = 4
    intermediate_size: int = 256
    max_length: int = 64
    epochs: int = 30
    batch_size: int = 32
    lr: float = 1e-3  # from scratch at toy size; the paper's 2e-5 is for BERT-base over 1M steps
    mask_prob: float = 0.15
    seed: int = 0


def build_mlm_tokenizer(texts: Sequence[str], *, vocab_size: int = 30_000) -> Any:
    """An uncased word-level tokenizer (punctuation split off) with BERT's specials.

    Example:
        >>> tok = build_mlm_tokenizer(["Ada Smith is a 40 year old woman ."])
        >>> tok.convert_ids_to_tokens(tok("Ada Smith is")["input_ids"])
        ['[CLS]', 'ada', 'smith', 'is', '[SEP]']
    """
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tk.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tk.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()]
    )
    tk.train_from_iterator(
        list(texts), trainer=trainers.WordLevelTrainer(vocab_size=vocab_size, special_tokens=SPECIALS)
    )
    cls, sep = tk.token_to_id("[CLS]"), tk.token_to_id("[SEP]")
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tk,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


class HFMaskedLM:
    """A BERT-style masked LM with the FILL_MASK capability: logits for every position at once."""

    capabilities = frozenset({Capability.FILL_MASK})

    def __init__(self, module: Any, tokenizer: Any, *, name: str = "mlm") -> None:
        self.module = module.eval()
        self.tokenizer = tokenizer
        self.name = name
        self.max_length = int(module.config.max_position_embeddings)

    @property
    def bos_token_id(self) -> int | None:
        """The token every input starts with (a masked LM's ``[CLS]``; it scores no continuations)."""
        cls = getattr(self.tokenizer, "cls_token_id", None)
        return None if cls is None else int(cls)

    def logits(self, input_ids: Any) -> Any:
        """``[B, L, V]`` masked-LM logits for a ``[B, L]`` LongTensor (no gradient)."""
        import torch

        with torch.no_grad():
            return self.module(
                input_ids=input_ids, attention_mask=(input_ids != self.tokenizer.pad_token_id).long()
            ).logits

    def fill_mask(self, text: str, top_k: int = 5) -> list[list[tuple[str, float]]]:
        """For each ``[MASK]`` in ``text``: the ``top_k`` tokens and probabilities."""
        import torch

        ids = torch.tensor([self.tokenizer(text)["input_ids"]])
        probs = self.logits(ids)[0].softmax(-1)
        out = []
        for pos in (ids[0] == self.tokenizer.mask_token_id).nonzero().flatten().tolist():
            p, i = probs[pos].topk(top_k)
            out.append(
                [(self.tokenizer.convert_ids_to_tokens(int(t)), float(q)) for q, t in zip(p, i, strict=True)]
            )
        return out

    def save(self, out_dir: str | Path) -> Path:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # lmleak draws its own bars; HF's would interleave on stderr
        out = Path(out_dir)
        secure_dir(out)  # owner-only (umask 0o077): the weights memorise training data
        self.module.save_pretrained(out, safe_serialization=True)
        self.tokenizer.save_pretrained(out)
        return out

    @classmethod
    def load(cls, model_dir: str | Path, *, name: str | None = None) -> HFMaskedLM:
        """Load a Hugging Face masked-LM directory (safetensors only, no remote code)."""
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        d = Path(model_dir)
        module = AutoModelForMaskedLM.from_pretrained(d, trust_remote_code=False, use_safetensors=True)
        return cls(module, AutoTokenizer.from_pretrained(d), name=name or d.name)


def mask_tokens(input_ids: Any, tokenizer: Any, mask_prob: float, generator: Any) -> tuple[Any, Any]:
    """BERT's masking: choose ``mask_prob`` of the non-special positions; 80/10/10 mask/random/keep."""
    import torch

    labels = input_ids.clone()
    special = input_ids < len(SPECIALS)  # the five specials occupy the first ids
    chosen = (torch.rand(input_ids.shape, generator=generator) < mask_prob) & ~special
    labels[~chosen] = -100
    ids = input_ids.clone()
    r = torch.rand(input_ids.shape, generator=generator)
    ids[chosen & (r < 0.8)] = tokenizer.mask_token_id
    rnd = chosen & (r >= 0.8) & (r < 0.9)
    ids[rnd] = torch.randint(len(SPECIALS), len(tokenizer), (int(rnd.sum()),), generator=generator)
    return ids, labels


def train_masked_lm(
    texts: Sequence[str],
    config: MaskedLMConfig = MaskedLMConfig(),
    *,
    name: str = "mlm",
    progress_label: str = "pre-training MLM",
) -> tuple[HFMaskedLM, dict[str, Any]]:
    """Pre-train a fresh small BERT on ``texts`` (each truncated to ``max_length`` tokens)."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(config.seed)
    tok = build_mlm_tokenizer(texts)
    enc = tok(
        list(texts), truncation=True, max_length=config.max_length, padding="max_length", return_tensors="pt"
    )
    data = enc["input_ids"]
    module = BertForMaskedLM(
        BertConfig(
            vocab_size=len(tok),
            hidden_size=config.hidden_size,
            num_hidden_layers=config.num_layers,
            num_attention_heads=config.num_heads,
            intermediate_size=config.intermediate_size,
            max_position_embeddings=config.max_length,
            pad_token_id=tok.pad_token_id,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
    )
    opt = torch.optim.AdamW(module.parameters(), lr=config.lr, weight_decay=0.01)
    g = torch.Generator().manual_seed(config.seed)
    steps_per_epoch = math.ceil(len(data) / config.batch_size)
    total = config.epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(1, total // 20)) * max(0.0, 1 - s / total)
    )
    module.train()
    t0, last = time.perf_counter(), float("nan")
    for _ in track(range(config.epochs), description=progress_label):
        perm = torch.randperm(len(data), generator=g)
        for i in range(0, len(data), config.batch_size):
            batch = data[perm[i : i + config.batch_size]]
            ids, labels = mask_tokens(batch, tok, config.mask_prob, g)
            loss = module(
                input_ids=ids, attention_mask=(batch != tok.pad_token_id).long(), labels=labels
            ).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            last = float(loss.detach())
    stats = {
        "final_loss": last,
        "seconds": time.perf_counter() - t0,
        "documents": len(data),
        "vocab_size": len(tok),
        "config": asdict(config),
    }
    return HFMaskedLM(module, tok, name=name), stats
