"""DP-SGD, CRT and selective DP: clipping by hand, batches never mixed, accounting recorded."""

from __future__ import annotations

import copy
import json
import math

import pytest
import torch

from lmleak.data.corpus import Corpus, Document
from lmleak.train.config import TrainConfig
from lmleak.train.plain import batch_tensors, encode_chunks, forward_logits, sequence_losses
from lmleak.train.trainer import build_module, train_model
from tests.train.test_trainer import tiny_corpus


@pytest.mark.parametrize(
    ("arch", "clipping"), [("gpt", "bookkeeping"), ("gpt", "ghost"), ("lstm", "bookkeeping")]
)
def test_the_dp_gradient_is_per_sequence_clipping_by_hand(arch, clipping):
    """Noise 0: the DP update must equal sum_i clip_C(grad L_i) / expected batch size (Abadi et al.)."""
    from lmleak.models.small import build_tokenizer
    from lmleak.train.dp import DPStrategy

    texts = tiny_corpus(4, 2).texts()
    cfg = TrainConfig(
        arch=arch,
        mode="dp",
        noise_multiplier=0.0,
        max_grad_norm=0.05,
        lr=0.0,
        batch_size=4,
        seq_len=12,
        vocab_size=40,
        n_embd=16,
        n_head=2,
        epochs=1,
        dp_clipping=clipping,
    )
    tok = build_tokenizer(texts, kind=cfg.tokenizer_kind, vocab_size=40)
    chunks = encode_chunks(texts, tok, cfg.seq_len)
    module = build_module(cfg, len(tok), tok)
    ref = copy.deepcopy(module)
    if arch == "lstm":
        from opacus.validators import ModuleValidator

        ref = ModuleValidator.fix(ref)
    strategy = DPStrategy(cfg)
    strategy.setup(module, chunks, {})
    ids, lengths = chunks.ids[:5], chunks.lengths[:5]
    strategy.dp_step(ids, lengths)
    got = [
        p.grad.clone()
        for p in getattr(strategy.module, "_module", strategy.module).parameters()
        if p.requires_grad
    ]

    x, m, y = batch_tensors(ids, lengths)
    params = [p for p in ref.parameters() if p.requires_grad]
    total = [torch.zeros_like(p) for p in params]
    clipped_any = False
    for i in range(len(ids)):
        loss = sequence_losses(forward_logits(ref, x[i : i + 1], m[i : i + 1]), y[i : i + 1]).sum()
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads, strict=True)]
        norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))
        factor = min(1.0, cfg.max_grad_norm / (float(norm) + 1e-6))
        clipped_any |= factor < 1.0
        for t, g in zip(total, grads, strict=True):
            t += factor * g
    expected = [t / strategy.expected_batch_size for t in total]
    assert clipped_any  # the check is meaningless unless clipping is active
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("arch", ["gpt", "lstm"])
def test_dp_training_records_an_accounted_epsilon(tmp_path, arch):
    cfg = TrainConfig(
        arch=arch,
        mode="dp",
        tokenizer_from_private=True,
        noise_multiplier=1.0,
        epochs=1,
        batch_size=8,
        seq_len=16,
        vocab_size=50,
        n_embd=16,
        n_head=2,
    )
    res = train_model(tiny_corpus(8, 2), tmp_path, cfg)
    priv = json.loads((tmp_path / "privacy.json").read_text())
    assert (
        priv["mode"] == "dp"
        and priv["accountant"] == "prv"
        and math.isfinite(priv["epsilon"])
        and priv["epsilon"] > 0
    )
    assert priv["steps"] == res.privacy["steps"] >= 1 and 0 < priv["sample_rate"] <= 1
    from lmleak.train.accounting import epsilon_opacus

    again = epsilon_opacus(
        priv["noise_multiplier"], priv["sample_rate"], priv["steps"], priv["delta"], accountant="prv"
    )
    assert again == pytest.approx(priv["epsilon"], rel=1e-3)
    from lmleak.models.small import load_small_model

    assert load_small_model(tmp_path).token_stats([[3, 4, 5]])[0].logprobs.shape == (3,)


def _crt_corpora() -> tuple[Corpus, Corpus]:
    base = tiny_corpus(6, 2)
    public = Corpus([Document(d.user_id, d.doc_id + "-pub", d.text.split(" My ID")[0]) for d in base])
    private = Corpus(
        [Document(d.user_id, d.doc_id + "-pri", "My ID is: <MASK> and " + d.text[:30]) for d in base]
    )
    return public, private


def test_crt_batches_are_all_public_or_all_private(tmp_path, monkeypatch):
    """Paper 002 A.5 rule 6, checked on the actual rows of every batch, plus private-only accounting."""
    from lmleak.train import dp

    seen: list[tuple[str, str]] = []
    original = dp.CRTStrategy.step

    def recording_step(self, kind, ids, lengths, *rest):
        pub = {tuple(r.tolist()) for r in self.public.ids}
        pri = {tuple(r.tolist()) for r in self.private_chunks.ids}
        rows = [tuple(r.tolist()) for r in ids]
        origin = {
            "public" if r in pub and r not in pri else "private" if r in pri and r not in pub else "both"
            for r in rows
        }
        seen.append((kind, ",".join(sorted(origin))))
        return original(self, kind, ids, lengths, *rest)

    monkeypatch.setattr(dp.CRTStrategy, "step", recording_step)
    public, private = _crt_corpora()
    cfg = TrainConfig(
        arch="gpt",
        mode="crt",
        privacy_unit="sequence",
        noise_multiplier=1.0,
        epochs=2,
        batch_size=4,
        seq_len=16,
        vocab_size=60,
        n_embd=16,
        n_head=2,
    )
    res = train_model(public, tmp_path, cfg, val_corpus=Corpus([]), split=(public, private))
    nonempty = [s for s in seen if s[1]]
    assert nonempty and all(kind == origin for kind, origin in nonempty)
    # Algorithm 1 order: per epoch every public batch, then every private batch
    kinds = [k for k, _ in seen]
    half = len(kinds) // 2
    for epoch_kinds in (kinds[:half], kinds[half:]):
        assert epoch_kinds == sorted(epoch_kinds, key=lambda k: k != "public")
    priv = res.privacy
    assert priv["steps"] == kinds.count("private") and priv["public_steps"] == kinds.count("public")
    n_private = json.loads((tmp_path / "train.json").read_text())["num_train_sequences"]  # D_pri chunks
    assert priv["sample_rate"] == pytest.approx(1 / math.ceil(n_private / cfg.batch_size), rel=1e-6)


def test_selective_dp_marks_digits_and_masks_and_trains(tmp_path):
    from lmleak.models.small import build_tokenizer
    from lmleak.train.dp import sensitive_token_mask

    corpus = tiny_corpus(6, 2)
    cfg = TrainConfig(
        arch="lstm",
        mode="sdp",
        tokenizer_from_private=True,
        noise_multiplier=1.0,
        epochs=2,
        batch_size=4,
        seq_len=24,
        vocab_size=60,
    )
    tok = build_tokenizer(corpus.texts(), kind="word", vocab_size=60)
    mask = sensitive_token_mask(corpus, tok, cfg)
    chunks = encode_chunks(corpus.texts(), tok, cfg.seq_len)
    marked = {tok.decode([int(i)]).strip() for i in chunks.ids[mask]}
    assert marked and all(t.isdigit() for t in marked)
    res = train_model(corpus, tmp_path, cfg)
    assert all(math.isfinite(h["train_loss"]) for h in res.history)
    assert res.privacy["mode"] == "sdp" and math.isfinite(res.privacy["epsilon"])


@pytest.mark.parametrize(
    ("arch", "clipping", "mode"),
    [
        ("gpt", "bookkeeping", "dp"),
        ("gpt", "ghost", "dp"),
        ("lstm", "bookkeeping", "dp"),
        ("lstm", "bookkeeping", "sdp"),
    ],
)
def test_an_empty_poisson_batch_takes_a_noise_only_step_and_every_accounted_step_drew_noise(
    arch, clipping, mode
):
    from lmleak.models.small import build_tokenizer
    from lmleak.train.dp import make_strategy

    texts = tiny_corpus(4, 2).texts()
    cfg = TrainConfig(
        arch=arch,
        mode=mode,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
        lr=1e-2,
        batch_size=1,
        seq_len=12,
        vocab_size=40,
        n_embd=16,
        n_head=2,
        epochs=1,
        dp_clipping=clipping,
        policy="regex",
    )
    tok = build_tokenizer(texts, kind=cfg.tokenizer_kind, vocab_size=40)
    chunks = encode_chunks(texts, tok, cfg.seq_len)
    strategy = make_strategy(cfg)
    extra = {}
    if mode == "sdp":
        extra["sensitive"] = torch.zeros((len(chunks), chunks.ids.shape[1]), dtype=torch.bool)
    module = strategy.setup(build_module(cfg, len(tok), tok), chunks, extra)
    inner = getattr(module, "_module", module)
    before = [p.detach().clone() for p in inner.parameters() if p.requires_grad]
    strategy.step("private", chunks.ids[:0], chunks.lengths[:0])  # Poisson sampling drew nobody
    after = [p.detach() for p in inner.parameters() if p.requires_grad]
    assert strategy.empty_steps == 1
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))  # noise moved the weights
    ids = torch.cat([chunks.ids, extra["sensitive"].long()], dim=1) if mode == "sdp" else chunks.ids
    torch.manual_seed(3)
    for _ in range(5):  # real batches too: each draws noise once and is counted once
        idx = (torch.rand(len(chunks)) < 0.5).nonzero().reshape(-1)
        strategy.step("private", ids[idx], chunks.lengths[idx])
    assert strategy.noise_draws == strategy.accounted_steps() == strategy.steps == 6
