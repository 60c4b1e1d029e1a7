"""The small models lmleak trains itself, and their tokenizers.

- :func:`build_tokenizer`: word-level over the most frequent N words (the papers' choice; spacing is
  kept with the Metaspace scheme so ``decode(encode(text)) == text`` for in-vocabulary text), or
  byte-level BPE (no unknown tokens). Either is saved as a standard ``PreTrainedTokenizerFast``.
  Subtle: both split digits into single-digit tokens by default. A tokenizer is fitted on the
  private training data without any DP; a BPE fitted on a corpus where a secret repeats learns
  the whole secret as one vocabulary entry, and a DP-SGD model then only has to learn "after
  'My ID is:' comes one of these few tokens" — every canary ranked in the top 10 (measured).
- :func:`new_small_gpt`: a GPT-2 of a few million parameters with *untied* input/output
  embeddings (Opacus ghost clipping refuses tied weights). It saves as a plain Hugging Face
  directory that ``AutoModelForCausalLM`` / ``AutoTokenizer`` load without lmleak.
- :class:`SmallLSTM`: paper 001 §6.1's model (2 layers, embedding and hidden size 128), saved as
  safetensors + tokenizer + ``lmleak_model.json``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

import torch

from lmleak.models.tokenizer import HFTokenizer
from lmleak.models.torch_causal import TorchCausalLM
from lmleak.runs import secure_dir

SPECIAL_TOKENS = ["<pad>", "<bos>", "<eos>", "<unk>", "<MASK>"]
MANIFEST = "lmleak_model.json"


def build_tokenizer(
    texts: Iterable[str],
    *,
    kind: Literal["word", "bpe"] = "word",
    vocab_size: int = 5000,
    split_digits: bool = True,
) -> Any:
    """Train a tokenizer on ``texts`` and wrap it as a ``transformers.PreTrainedTokenizerFast``.

    ``<MASK>`` (the redaction token of paper 002) is a special token, so it is one token in both
    kinds. Example:
        >>> tok = build_tokenizer(["My ID is: 123456", "hello there"], kind="word", vocab_size=50)
        >>> tok.decode(tok.encode("My ID is: 123456"))
        'My ID is: 123456'
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if kind == "word":
        tk = Tokenizer(models.WordLevel(unk_token="<unk>"))
        tk.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never", split=True),
                pre_tokenizers.Punctuation(behavior="isolated"),
                pre_tokenizers.Digits(individual_digits=split_digits),
            ]
        )
        tk.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="never", split=True)
        trainer: Any = trainers.WordLevelTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS)
    elif kind == "bpe":
        tk = Tokenizer(models.BPE())
        byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tk.pre_tokenizer = (
            pre_tokenizers.Sequence([byte_level, pre_tokenizers.Digits(individual_digits=True)])
            if split_digits
            else byte_level
        )
        tk.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=SPECIAL_TOKENS,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
    else:
        raise ValueError(f"unknown tokenizer kind {kind!r}; use 'word' or 'bpe'")
    tk.train_from_iterator(list(texts), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tk,
        bos_token="<bos>",
        eos_token="<eos>",
        unk_token="<unk>",
        pad_token="<pad>",
        additional_special_tokens=["<MASK>"],
    )


@dataclass(frozen=True, slots=True)
class SmallGPTConfig:
    """Shape of the small GPT-2 (defaults: ~1-2M parameters, trains in minutes on 2 CPU cores)."""

    n_positions: int = 128
    n_embd: int = 128
    n_layer: int = 2
    n_head: int = 4
    dropout: float = 0.0


def new_small_gpt(
    vocab_size: int,
    config: SmallGPTConfig = SmallGPTConfig(),
    *,
    seed: int = 0,
    bos_id: int = 1,
    eos_id: int = 2,
    pad_id: int = 0,
) -> Any:
    """A freshly initialised GPT-2 (untied embeddings) for ``vocab_size`` tokens."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    cfg = GPT2Config(
        vocab_size=vocab_size,
        n_positions=config.n_positions,
        n_embd=config.n_embd,
        n_layer=config.n_layer,
        n_head=config.n_head,
        resid_pdrop=config.dropout,
        embd_pdrop=config.dropout,
        attn_pdrop=config.dropout,
        bos_token_id=bos_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        tie_word_embeddings=False,
    )
    return GPT2LMHeadModel(cfg)


@dataclass(frozen=True, slots=True)
class SmallLSTMConfig:
    """Paper 001 §6.1: two LSTM layers, embedding and hidden size 128."""

    vocab_size: int
    embed_dim: int = 128
    hidden_dim: int = 128
    num_layers: int = 2
    max_length: int = 256


class SmallLSTM(torch.nn.Module):
    """A word-level LSTM language model with the Hugging Face calling convention."""

    def __init__(self, config: SmallLSTMConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = torch.nn.Embedding(config.vocab_size, config.embed_dim)
        self.lstm = torch.nn.LSTM(config.embed_dim, config.hidden_dim, config.num_layers, batch_first=True)
        self.head = torch.nn.Linear(config.hidden_dim, config.vocab_size)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        **_: Any,
    ) -> SimpleNamespace:
        # Subtle: right padding never influences earlier positions of a left-to-right LSTM, so
        # the attention mask needs no handling here; the loss masks padded targets.
        x = self.embed(input_ids) if inputs_embeds is None else inputs_embeds
        h, _ = self.lstm(x)
        return SimpleNamespace(logits=self.head(h))

    def get_input_embeddings(self) -> torch.nn.Embedding:
        return self.embed

    def get_output_embeddings(self) -> torch.nn.Linear:
        return self.head


def save_small_model(
    module: torch.nn.Module, tokenizer: Any, out_dir: str | Path, *, extra: dict[str, Any] | None = None
) -> Path:
    """Save a small GPT (as a plain HF directory) or LSTM (safetensors + manifest) with its tokenizer.

    The GPT is written with ``save_pretrained`` so that ``AutoModelForCausalLM`` loads it without
    lmleak; both kinds get ``lmleak_model.json`` describing the architecture.
    """
    from safetensors.torch import save_file

    out = Path(out_dir)
    secure_dir(out)  # owner-only (umask 0o077): the weights memorise training data
    tokenizer.save_pretrained(out)
    if isinstance(module, SmallLSTM):
        state = {k: v.detach().contiguous() for k, v in module.state_dict().items()}
        save_file(state, str(out / "model.safetensors"))
        manifest: dict[str, Any] = {"arch": "lstm", "config": asdict(module.config)}
    else:
        _quiet_transformers()
        module.save_pretrained(out, safe_serialization=True)
        manifest = {"arch": "gpt", "max_length": int(module.config.n_positions)}
    manifest.update(extra or {})
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return out


def _quiet_transformers() -> None:
    """No per-file progress bars from transformers for these small models (lmleak shows its own)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


def load_small_model(model_dir: str | Path, *, name: str | None = None, batch_tokens: int = 4096) -> Any:
    """Load a directory written by :func:`save_small_model` as a :class:`TorchCausalLM`."""
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    d = Path(model_dir)
    manifest = json.loads((d / MANIFEST).read_text())
    hf_tok = AutoTokenizer.from_pretrained(d)
    if manifest["arch"] == "lstm":
        cfg = SmallLSTMConfig(**manifest["config"])
        module: torch.nn.Module = SmallLSTM(cfg)
        module.load_state_dict(load_file(str(d / "model.safetensors")))
        max_length = cfg.max_length
    else:
        _quiet_transformers()
        module = AutoModelForCausalLM.from_pretrained(d, trust_remote_code=False)
        max_length = int(manifest.get("max_length", module.config.n_positions))
    return TorchCausalLM(
        module, HFTokenizer(hf_tok), name=name or d.name, max_length=max_length, batch_tokens=batch_tokens
    )
