"""The tokenizer of a model behind an HTTP API: a local one (``tokenizer=DIR``, ``lmleak --tokenizer``)
or the server's own through ``POST /tokenize`` and ``/detokenize`` (vLLM and ``lmleak serve``).

lmleak scores token ids, so :class:`~lmleak.models.http.HTTPModel` needs the served model's
tokenizer; :func:`load_tokenizer` loads a folder's (a LoRA fine-tune's is its base's, with the start
token it was trained after), :class:`RemoteTokenizer` asks the server, learning the BOS id from
``lmleak serve``'s model card or, for vLLM, from ``/tokenize`` with special tokens.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lmleak import progress
from lmleak.errors import ModelError
from lmleak.models import http_answers as answers
from lmleak.models.http_client import HTTPClient, Unsupported, wrong_model
from lmleak.models.tokenizer import HFTokenizer

#: From this many distinct rows in one :meth:`RemoteTokenizer.decode_many`, say that a local tokenizer
#: would be faster (a 150-document report decodes ~21,000 spans: 4.6 min through lmleak serve on two
#: shared cores, 26 s with tokenizer=DIR).
MANY_DECODES = 1000
#: The fixed text a local tokenizer and the server's ``/tokenize`` must agree on (words, digits,
#: punctuation, an e-mail address, accents, a symbol): two tokenizers of one vocabulary size differ here.
TOKENIZER_PROBE = (
    "The capital of France is Paris. Call 555-0100 or write to ada.lovelace@example.org; "
    "José paid 42.50 € at 09:30, thank you!"
)
#: How much of the corpus is also tokenised both ways before the ledger pass: the first documents,
#: each cut to its first characters (a word-level tokenizer maps the probe's words to its unknown
#: token whichever vocabulary it has; the corpus's own words tell two such tokenizers apart).
CORPUS_SAMPLE_DOCS = 8
CORPUS_SAMPLE_CHARS = 2000


def tokenize(
    client: HTTPClient, model: str, text: str, *, special: bool = False, cache: bool = True
) -> list[int]:
    """The server's ``POST /tokenize`` of ``text`` (``special``: with the special tokens it adds).

    Raises:
        Unsupported: the server does not tokenize; BadAnswer: its answer holds no token ids.
    """
    return list(
        client.post(
            "/tokenize",
            {"model": model, "prompt": text, "add_special_tokens": special},
            parse=lambda a: answers.token_ids(
                a.get("tokens") if isinstance(a, dict) else None, client.name, "/tokenize tokens"
            ),
            cache=cache,
        )
    )


class RemoteTokenizer:
    """The server's tokenizer through ``POST /tokenize`` and ``/detokenize`` (cached like every
    request once the model's fingerprint is known; the BOS lookup before it is never cached)."""

    def __init__(self, client: HTTPClient, model: str, card: dict[str, Any]) -> None:
        self.client = client
        self.model = model
        meta = card.get("lmleak") or {}
        bos = meta.get("bos_id")
        if bos is None:  # vLLM: the tokenizer's BOS is what it adds as a special token to an empty text
            try:
                toks = tokenize(client, model, "", special=True, cache=False)
            except Unsupported as e:
                if (err := wrong_model(e, client.base_url, model)) is not None:
                    raise err from None
                toks = []
            except answers.BadAnswer:
                toks = []
            bos = toks[0] if toks else None
        if bos is None:
            raise ModelError(
                f"{client.base_url}#{model}: cannot learn the server's BOS token id from /tokenize; "
                "give its tokenizer: tokenizer=DIR in the URL query or lmleak --tokenizer DIR"
            )
        self.bos_id = int(bos)
        self.eos_id = None if meta.get("eos_id") is None else int(meta["eos_id"])
        self.pad_id = int(meta.get("pad_id", self.bos_id))
        self.vocab_size = int(meta.get("vocab_size") or 0)  # 0: unknown (vLLM does not say)
        self._said_many = False  # the line about many /detokenize requests is said once

    def _text(self, answer: Any) -> str:
        text = answer.get("prompt") if isinstance(answer, dict) else None
        if not isinstance(text, str):
            raise answers.bad(self.client.name, "/detokenize prompt", text, "the decoded text")
        return text

    def encode(self, text: str) -> list[int]:
        return list(self._encode(text))

    @functools.lru_cache(maxsize=4096)  # noqa: B019 (one tokenizer per model; the decoded keys of top-k answers repeat)
    def _encode(self, text: str) -> tuple[int, ...]:
        try:
            return tuple(tokenize(self.client, self.model, text))
        except Unsupported as e:
            raise ModelError(
                f"{self.client.url('/tokenize')}: the server does not tokenize ({e}); give its "
                "tokenizer: tokenizer=DIR in the URL query or lmleak --tokenizer DIR"
            ) from None

    def decode(self, ids: Sequence[int]) -> str:
        return str(
            self.client.post(
                "/detokenize", {"model": self.model, "tokens": [int(i) for i in ids]}, parse=self._text
            )
        )

    def decode_many(self, rows: Sequence[Sequence[int]]) -> list[str]:
        """``[decode(r) for r in rows]`` with each distinct row asked once and ``concurrency``
        requests in flight; an empty row is ``""`` without a request.

        The leakage report decodes two windows per leaked sequence (thousands of spans, many of them
        the same); one ``/detokenize`` after another kept a 150-document report in its features stage
        for minutes while the in-process report took a second."""
        keys = [tuple(int(i) for i in r) for r in rows]
        distinct = list(dict.fromkeys(k for k in keys if k))
        if len(distinct) >= MANY_DECODES and not self._said_many:
            self._said_many = True
            progress.log(
                f"{self.client.name}: decoding {len(distinct):,} spans through the server's /detokenize, "
                "one request each; the served model's tokenizer folder decodes them here in a second "
                "(tokenizer=DIR in the URL query, or lmleak --tokenizer DIR)"
            )
        texts = dict(zip(distinct, self.client.map(self.decode, distinct), strict=True))
        return [texts[k] if k else "" for k in keys]


def tokenizer_sha256(tokenizer: Any) -> str | None:
    """SHA-256 of what a tokenizer maps text to: its ``tokenizer.json`` (vocabulary, merges, normaliser)
    without its padding and truncation settings, else its sorted vocabulary; and its start token.
    None when the object shows neither (a tokenizer given as a library object of another kind).

    Example:
        >>> class Tok:
        ...     bos_id = 0
        ...     def get_vocab(self): return {"a": 1, "<s>": 0}
        >>> len(tokenizer_sha256(Tok())), tokenizer_sha256(object()) is None
        (64, True)
    """
    hf = getattr(tokenizer, "hf", tokenizer)
    backend = getattr(hf, "backend_tokenizer", None)
    if backend is not None:
        spec = json.loads(backend.to_str())
        what: Any = {k: v for k, v in spec.items() if k not in ("padding", "truncation")}
    elif callable(getattr(hf, "get_vocab", None)):
        what = sorted(hf.get_vocab().items())
    else:
        return None
    blob = json.dumps([what, getattr(tokenizer, "bos_id", None)], sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def check_tokenizer(
    client: HTTPClient, model: str, tokenizer: Any, source: str, texts: Sequence[str]
) -> bool:
    """Whether the server's ``/tokenize`` was asked and agrees with ``tokenizer`` on every text (True);
    False when the server does not tokenize (the tokenizer is then unverified).

    Raises:
        ModelError: on the first text where the two give other token ids, naming both tokenizers and
            the fix: a wrong tokenizer turns every score into noise, and a leaking model looks clean.
    """
    try:
        theirs = client.map(lambda text: tokenize(client, model, text, cache=False), list(texts))
    except Unsupported as e:
        if (err := wrong_model(e, client.base_url, model)) is not None:
            raise err from None
        return False
    for text, ids in zip(texts, theirs, strict=True):
        mine = [int(i) for i in tokenizer.encode(text)]
        if mine != ids:
            at = next(
                (i for i, (a, b) in enumerate(zip(mine, ids, strict=False)) if a != b),
                min(len(mine), len(ids)),
            )
            raise ModelError(
                f"{client.name}: the tokenizer {source} is not the served model's: on {text[:40]!r} it gives "
                f"{len(mine)} tokens {mine[at : at + 4]}... from token {at}, the server's /tokenize "
                f"{len(ids)} tokens {ids[at : at + 4]}...; give the served model's own tokenizer folder "
                "(tokenizer=DIR in the URL query, or lmleak --tokenizer DIR), or leave it out to use the "
                "server's /tokenize"
            )
    return True


def load_tokenizer(spec: str) -> Any:
    """A local tokenizer: ``smollm2-135m``, or a Hugging Face / lmleak model folder (tokenizer files only)."""
    # lazy: lmleak.models.hf_causal imports torch; the HTTP client runs without it
    from lmleak.models.hf_causal import SMOLLM2, smollm2_plain_dir

    # the start token is HFTokenizer's (lmleak.models.tokenizer.start_token_id): the in-process loader's
    if spec == SMOLLM2:
        return HFTokenizer(_auto_tokenizer(smollm2_plain_dir()))
    p = Path(spec).expanduser()
    if not p.is_dir():
        raise ModelError(
            f"tokenizer {spec!r} is not a folder; give the served model's folder (its tokenizer files)"
        )
    # lazy: lmleak.models.adapters imports the torch loaders, as hf_causal above
    from lmleak.models.adapters import MANIFEST

    manifest = json.loads((p / MANIFEST).read_text(encoding="utf-8")) if (p / MANIFEST).is_file() else {}
    # a LoRA fine-tune folder holds no tokenizer: its base's, as the in-process loader takes it
    has_own = any((p / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json"))
    tok = (
        HFTokenizer(_auto_tokenizer(p))
        if has_own or not manifest.get("base")
        else load_tokenizer(manifest["base"])
    )
    if manifest.get("bos_id") is not None:  # the start token the fine-tune was trained after
        tok.bos_id = int(manifest["bos_id"])
    return tok


def _auto_tokenizer(path: Path) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(path, local_files_only=True, trust_remote_code=False)
    except Exception as e:  # transformers raises many types for a folder without tokenizer files
        raise ModelError(
            f"{path}: cannot load a tokenizer from this folder ({type(e).__name__}: {e})"
        ) from None
