"""``--engine vllm`` (issue 19 item 5): vLLM's prompt logprobs as the ledger's scores.

Fast tests check lmleak's side (windows, alignment, the vLLM model folder) against the
transformers path with an obvious backend in place of vLLM; the slow test runs the real vLLM
(the venv of ``make vllm-env``, found through ``$LMLEAK_VLLM_PYTHON``, ``$VLLM_VENV`` or
``.venv-vllm``) and compares whole ledgers. It is skipped when no vLLM environment exists.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from lmleak.errors import ModelError
from lmleak.models.vllm_engine import VllmScorer
from lmleak.models.vllm_env import vllm_python

TEXTS = [
    "hello my name is ada and my phone is 555 0100 and i live on elm street in the town",
    "thank you very much for the call today",
    "my order number is 4 4 1 2 and it is late , please call me back at 555 0199 thank you very much",
    "the weather is nice today",
    "x",
]


def tiny_llama_dir(out, texts, *, max_positions=16, seed=0):
    """A 2-layer, width-64 Llama (head size 32, which vLLM's CPU attention supports) and a word tokenizer."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from lmleak.models.small import build_tokenizer

    tok = build_tokenizer(texts, kind="word", vocab_size=200)
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(cfg)
    with (
        torch.no_grad()
    ):  # a random init gives near-uniform predictions; sharpen them so ranks mean something
        model.lm_head.weight.mul_(20.0)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return out


class NaiveBackend:
    """vLLM's contract computed the obvious way: one full forward per prompt, ranks by sorting."""

    def __init__(self, lm):
        self.lm = lm
        self.calls = []

    def score(self, prompts):
        self.calls.append(prompts)
        out = []
        for p in prompts:
            with torch.no_grad():
                logits = self.lm.module(input_ids=torch.tensor([p])).logits[0].float()
            logp = torch.log_softmax(logits, -1)
            ranks, lps, top1 = [], [], []
            for i in range(1, len(p)):
                row = logp[i - 1]
                order = torch.argsort(row, descending=True, stable=True).tolist()
                ranks.append(order.index(p[i]) + 1)
                lps.append(float(row[p[i]]))
                top1.append(float(row.max()))
            out.append({"ranks": ranks, "logprobs": lps, "top1": top1})
        return out

    def close(self):
        pass


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    from lmleak.models.loading import load_model

    d = tiny_llama_dir(tmp_path_factory.mktemp("llama") / "m", TEXTS)
    return d, load_model(str(d))


def test_scorer_windows_match_transformers(llama):
    _, lm = llama
    assert lm.max_length == 16  # documents above are longer: several sliding windows each
    seqs = [lm.tokenizer.encode(t) for t in TEXTS]
    assert max(map(len, seqs)) > 2 * lm.max_length
    backend = NaiveBackend(lm)
    scorer = VllmScorer(backend, lm.tokenizer, name=lm.name, max_length=lm.max_length, overlap=lm.overlap)
    got, want = scorer.token_stats(seqs), lm.token_stats(seqs)
    assert len(backend.calls) == 1  # every window of the shard in one request
    assert all(len(p) <= lm.max_length for p in backend.calls[0])
    for g, w, s in zip(got, want, seqs, strict=True):
        assert len(g) == len(s)
        np.testing.assert_array_equal(g.ranks, w.ranks)
        np.testing.assert_allclose(g.logprobs, w.logprobs, atol=1e-5)
        np.testing.assert_allclose(g.top1_logprobs, w.top1_logprobs, atol=1e-5)


def test_ledger_pass_through_vllm_work_factory(llama, tmp_path):
    """The ledger's vllm engine wiring with the backend swapped for the obvious one."""
    from lmleak.data.corpus import Corpus, Document
    from lmleak.ledger import ledger as ledger_mod

    d, lm = llama
    corpus = Corpus([Document(f"u{i % 2}", f"d{i}", t) for i, t in enumerate(TEXTS)])
    opened = []

    def fake_open(model_dir, *, dtype, max_model_len, extra=None):
        opened.append((model_dir, dtype, max_model_len))
        return NaiveBackend(lm)

    import lmleak.models.vllm_engine as eng

    orig = eng.open_backend
    eng.open_backend = fake_open
    try:
        via = ledger_mod.build_ledger(
            lm, corpus, tmp_path / "v", engine="vllm", shard_size=2, vllm_model_dir=d
        )
    finally:
        eng.open_backend = orig
    local = ledger_mod.build_ledger(lm, corpus, tmp_path / "l", shard_size=2)
    assert opened == [(str(d), "float32", lm.max_length + 1)]  # one backend for the whole pass
    np.testing.assert_array_equal(via.ranks, local.ranks)
    np.testing.assert_allclose(via.logprobs, local.logprobs, atol=1e-5)
    assert via.meta["engine"] == "vllm" and via.meta["fingerprint"] == local.meta["fingerprint"]


def test_no_vllm_anywhere_is_a_clear_error(monkeypatch, tmp_path):
    import lmleak.models.vllm_engine as eng

    monkeypatch.setattr(eng, "vllm_importable", lambda: False)
    monkeypatch.delenv("LMLEAK_VLLM_PYTHON", raising=False)
    monkeypatch.setenv("VLLM_VENV", str(tmp_path / "absent"))
    with pytest.raises(ModelError, match="make vllm-env"):
        eng.open_backend(tmp_path, max_model_len=17)


def _vllm_env_or_skip():
    from lmleak.models.vllm_engine import vllm_importable

    if vllm_importable():
        return
    py = vllm_python()
    if py is None or not py.exists():
        pytest.skip("no vLLM environment: run `make vllm-env` (or set VLLM_VENV / LMLEAK_VLLM_PYTHON)")


@pytest.mark.slow
@pytest.mark.vllm
def test_cli_report_engine_vllm_equals_transformers(tmp_path):
    """The real vLLM: ledger via --engine vllm equals the transformers ledger (ranks equal, logprobs within 1e-3)."""
    _vllm_env_or_skip()
    from typer.testing import CliRunner

    from lmleak.cli.main import app
    from lmleak.data.corpus import Corpus, Document
    from lmleak.ledger.ledger import read_ledger

    model = tiny_llama_dir(tmp_path / "m", TEXTS)
    corpus = Corpus([Document(f"u{i % 2}", f"d{i}", t) for i, t in enumerate(TEXTS * 2)]).write_jsonl(
        tmp_path / "c.jsonl"
    )
    runs = {}
    for engine in ("local", "vllm"):
        out = tmp_path / engine
        res = CliRunner().invoke(
            app,
            [
                "report",
                "--model",
                str(model),
                "--corpus",
                str(corpus),
                "--out",
                str(out),
                "--k",
                "1",
                "--engine",
                engine,
                "--json",
            ],
        )
        assert res.exit_code == 0, res.output
        runs[engine] = read_ledger(out)
    a, b = runs["local"], runs["vllm"]
    assert a.num_tokens > 0 and a.doc_ids == b.doc_ids
    np.testing.assert_array_equal(a.token_ids, b.token_ids)
    np.testing.assert_array_equal(a.ranks, b.ranks)
    np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-3)
    np.testing.assert_allclose(a.top1_logprobs, b.top1_logprobs, atol=1e-3)
    assert b.meta["engine"] == "vllm" and "engine" not in a.meta
    assert os.environ.get("LMLEAK_VLLM_PYTHON") is None or True
