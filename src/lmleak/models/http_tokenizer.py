"""The tokenizer of a model behind an HTTP API: a local one (``tokenizer=DIR``, ``lmleak --tokenizer``)
or the server's own through ``POST /tokenize`` and ``/detokenize`` (vLLM and ``lmleak serve``).

lmleak scores token ids, so :class:`~lmleak.models.http.HTTPModel` needs the served model's
tokenizer; :func:`load_tokenizer` loads a folder's (a LoRA fine-tune's is its base's, with the start
token it was trained after), :class:`RemoteTokenizer` asks the server, learning the BOS id from
``lmleak serve``'s model card or, for vLLM, from ``/tokenize`` with special tokens.
"""

from __future__ import annotations

import functools
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
                toks = self.client.post(
                    "/tokenize",
                    {"model": model, "prompt": "", "add_special_tokens": True},
                    parse=self._ids,
                    cache=False,
                )
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

    def _ids(self, answer: Any) -> list[int]:
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        return answers.token_ids(tokens, self.client.name, "/tokenize tokens")

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
            return tuple(
                self.client.post(
                    "/tokenize",
                    {"model": self.model, "prompt": text, "add_special_tokens": False},
                    parse=self._ids,
                )
            )
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
