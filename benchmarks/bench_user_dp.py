"""User-level DP-SGD: its step time against a sequence-level DP step, and its utility against
sequence-level DP read per person by group privacy (issue 27 item 8).

1. Step time. The same batch of B sequences (B = 16, seq_len 128) drawn from 6 users (6, 4, 2, 2, 1, 1
   sequences): a sequence-level DP step (each sequence clipped) and a user-level one (each user's mean
   gradient clipped; the per-sample pieces reduced by user before the norm, no extra backward pass),
   interleaved step by step on the same model. Prints ``user_dp_vs_sequence_dp_step_gpt`` (the small
   GPT: 2 layers, width 128, vocab 4000), ``user_dp_vs_sequence_dp_step_lora`` (a random-init Llama,
   4 layers, width 256, vocab 8192, LoRA r=8 on q_proj, v_proj) — each min(user) / min(sequence), the
   median ratio beside it — and ``user_dp_vs_sequence_dp_step``, the larger of the two. Goal <= 1.3.
   Correctness, in the same run (exit 1 on mismatch): one user per sequence gives exactly the
   sequence-level clipped sum; a user's contribution to the sum has norm <= C.

2. Utility at the same per-person ε (``--utility``; about 5 minutes on 2 cores): ``lmleak synth mail``
   (skewed authors), 10 % of users held out, the small GPT with the public default vocabulary, the
   same seed and split for every model:
   - ``plain``: no DP (the reference);
   - ``user``: user-level DP at ε per person (target ε, δ);
   - ``sequence_group``: sequence-level DP at the per-sequence (ε/k, δ/(k e^{(k−1)ε/k})) whose group
     privacy for the largest user (k sequences) is the same (ε, δ) per person;
   - ``sequence_naive``: sequence-level DP at ε per sequence (what is usually reported; per person
     only (kε, k e^{(k−1)ε} δ)).
   Each model takes about ``--utility-steps`` optimiser steps (epochs rounded); the DP models share
   ``--dp-lr`` and the PRV accountant (RDP cannot certify the converted ε at its δ); the sequence-level
   batch is 16 sequences, the user-level one ``--user-batch`` (8) users of up to 4 sequences. Prints each model's
   ``val_perplexity_<name>``, its ε per person, steps and seconds, and
   ``utility_user_vs_sequence_group`` (validation perplexity of sequence_group / user: > 1 means
   user-level DP is better at the same per-person ε).

Usage: ``python benchmarks/bench_user_dp.py [--steps 10] [--utility] [--epsilon 8] [--scale 0.1]``
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

SIZES = [6, 4, 2, 2, 1, 1]  # sequences per user in the timed batch (16 in all)


def _groups() -> torch.Tensor:
    return torch.repeat_interleave(torch.arange(len(SIZES)), torch.tensor(SIZES))


def gpt_step(seq_len: int):
    """(step(groups), params) for the small GPT's by-hand DP path (book-keeping clipping)."""
    from lmleak.train.config import TrainConfig
    from lmleak.train.dp import DPStrategy
    from lmleak.train.plain import Chunks
    from lmleak.train.trainer import build_module

    vocab, batch = 4000, sum(SIZES)
    torch.manual_seed(0)
    ids = torch.randint(4, vocab, (batch, seq_len + 1))
    chunks = Chunks(ids, torch.full((batch,), seq_len + 1))
    cfg = TrainConfig(
        mode="dp",
        noise_multiplier=1.0,
        batch_size=batch,
        seq_len=seq_len,
        vocab_size=vocab,
        lr=0.0,
        health_checks=False,
    )

    class Tok:
        bos_token_id, eos_token_id, pad_token_id = 1, 2, 0

    strategy = DPStrategy(cfg)
    strategy.setup(build_module(cfg, vocab, Tok()), chunks, {"unit": "sequence"})

    def step(groups: torch.Tensor | None) -> None:
        strategy.dp_step(chunks.ids, chunks.lengths, groups)

    def clipped(groups: torch.Tensor | None) -> list[torch.Tensor]:
        from lmleak.train.plain import batch_tensors, forward_logits, sequence_losses

        x, m, y = batch_tensors(chunks.ids, chunks.lengths)
        assert strategy.private is not None
        strategy.optimizer.zero_grad(set_to_none=True)
        strategy.private.clip(lambda mod: sequence_losses(forward_logits(mod, x, m), y), groups)
        return [p.grad.detach().clone() for p in strategy.private.params]

    return step, clipped


def lora_step(seq_len: int):
    """(step(groups), clipped(groups)) for a LoRA fine-tune of a small random-init Llama (bench_finetune's)."""
    from bench_finetune import build  # the same model, LoRA settings and Finetuner as bench_finetune.py

    ft, _, _, _ = build("tiny", "cpu", "dp")
    with torch.no_grad():  # B != 0: every adapter has a gradient
        for n, p in ft.model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.02)
    batch = sum(SIZES)
    ft.set_private_data(batch)
    ids = torch.randint(4, 8192, (batch, seq_len + 1))
    lengths = torch.full((batch,), seq_len + 1)

    def step(groups: torch.Tensor | None) -> None:
        ft.dp_step(ids, lengths, groups)

    def clipped(groups: torch.Tensor | None) -> list[torch.Tensor]:
        ft.optimizer.zero_grad(set_to_none=True)
        ft.clipped_gradient(ids, lengths, groups=groups)
        return [p.grad.detach().clone() for p in ft.params]

    return step, clipped


def check(clipped, clip: float = 1.0) -> bool:
    """One user per sequence is sequence-level clipping exactly; each user's share of the sum <= C."""
    ident = clipped(torch.arange(sum(SIZES)))
    seq = clipped(None)
    same = all(torch.allclose(a, b, atol=1e-7, rtol=1e-5) for a, b in zip(ident, seq, strict=True))
    norm = math.sqrt(sum(float(g.double().pow(2).sum()) for g in clipped(_groups())))
    bounded = norm <= len(SIZES) * clip + 1e-5  # U users, each clipped to C
    return same and bounded


def time_ratio(step, steps: int) -> tuple[float, float, float, float]:
    """(min user / min sequence, median ratio, median user s, median sequence s), interleaved."""
    groups = _groups()
    step(None), step(groups)  # warm-up
    t_seq, t_user = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        step(None)
        t1 = time.perf_counter()
        step(groups)
        t2 = time.perf_counter()
        t_seq.append(t1 - t0)
        t_user.append(t2 - t1)
    return (
        min(t_user) / min(t_seq),
        float(np.median(np.array(t_user) / np.array(t_seq))),
        float(np.median(t_user)),
        float(np.median(t_seq)),
    )


def utility(
    epsilon: float, delta: float, scale: float, seq_len: int, steps: int, dp_lr: float, user_batch: int
) -> dict[str, dict]:
    """Train the four models of the module docstring on synth mail; their records."""
    from lmleak.data.loaders import load_corpus
    from lmleak.data.synth.mail import synthesize
    from lmleak.train.config import TrainConfig
    from lmleak.train.plain import encode_chunks
    from lmleak.train.trainer import split_users, train_model
    from lmleak.train.units import Sampler, Units
    from lmleak.train.vocab import public_tokenizer

    work = Path(tempfile.mkdtemp(prefix="bench-user-dp-"))
    corpus = load_corpus(synthesize(work / "mail", scale=scale, seed=0)["corpus"])
    train, _ = split_users(corpus, 0.1, 0)
    tok, _ = public_tokenizer(4000)
    chunks = encode_chunks(train.texts(), tok, seq_len)
    units = Units.of_corpus(chunks, train)
    big_user, k = units.largest()
    n_seq = len(chunks)
    print(
        f"synth mail scale {scale}: {len(corpus.users)} users, {len(train.users)} trained, {n_seq} sequences"
    )
    print(f"largest user {big_user}: k = {k} sequences ({k / n_seq:.1%} of the training sequences)")
    # the per-sequence (eps_s, delta_s) whose group privacy for k sequences is (epsilon, delta)
    eps_s = epsilon / k
    delta_s = delta / (k * math.exp((k - 1) * eps_s))
    common: dict = dict(seq_len=seq_len, n_embd=64, n_layer=2, n_head=4, seed=0, holdout_users=0.1)
    # every DP model: the PRV accountant (RDP cannot certify sequence_group's tiny eps at its tiny delta
    # for any noise), the same learning rate, health checks recorded but not enforced
    private: dict = dict(mode="dp", lr=dp_lr, health_checks=False, **common)
    seq_batch = 16

    def epochs_for(unit: str, batch: int) -> int:
        s = Sampler(n_seq, batch, unit=unit, units=units, max_per_user=4)
        return max(1, round(steps / s.steps_per_epoch))

    seq_epochs = epochs_for("sequence", seq_batch)

    def sequence_config(eps: float, dlt: float) -> TrainConfig:
        return TrainConfig(
            privacy_unit="sequence",
            batch_size=seq_batch,
            epochs=seq_epochs,
            target_epsilon=eps,
            target_delta=dlt,
            **private,
        )

    runs = {
        "plain": TrainConfig(mode="nodp", lr=3e-3, batch_size=seq_batch, epochs=seq_epochs, **common),
        "user": TrainConfig(
            privacy_unit="user",
            batch_size=user_batch,
            max_sequences_per_user=4,
            epochs=epochs_for("user", user_batch),
            target_epsilon=epsilon,
            target_delta=delta,
            **private,
        ),
        "sequence_group": sequence_config(eps_s, delta_s),
        "sequence_naive": sequence_config(epsilon, delta),
    }
    out: dict[str, dict] = {}
    for name, cfg in runs.items():
        t0 = time.perf_counter()
        try:
            res = train_model(
                corpus,
                work / name,
                cfg,
                progress=False,
                tokenizer=tok,
                tokenizer_source="public:smollm2-bpe-4000",
            )
        except ValueError as e:  # no accountant certifies the converted (eps_s, delta_s) with any noise
            out[name] = {"val_perplexity": None, "error": str(e), "epochs": cfg.epochs}
            print(f"{name}: not trainable at this per-person epsilon: {e}", flush=True)
            continue
        priv = res.privacy
        if priv.get("privacy_unit") == "user":
            per_person = (priv["epsilon"], priv["delta"])
        elif priv.get("privacy_unit") == "sequence":
            per_person = (
                priv["group_privacy_epsilon_largest_user"],
                priv["group_privacy_delta_largest_user"],
            )
        else:
            per_person = (math.inf, 1.0)
        out[name] = {
            "val_perplexity": res.final.get("val_perplexity"),
            "epsilon": priv.get("epsilon"),
            "delta": priv.get("delta"),
            "unit": priv.get("privacy_unit"),
            "noise_multiplier": priv.get("noise_multiplier"),
            "epsilon_per_person": per_person[0],
            "delta_per_person": per_person[1],
            "steps": priv.get("steps"),
            "epochs": cfg.epochs,
            "seconds": time.perf_counter() - t0,
        }
        print(f"{name}: {json.dumps(out[name])}", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--utility", action="store_true", help="also train the four synth-mail models (~5 min)")
    ap.add_argument("--epsilon", type=float, default=8.0)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--scale", type=float, default=0.1)
    ap.add_argument("--utility-steps", type=int, default=150)
    ap.add_argument("--utility-seq-len", type=int, default=64)
    ap.add_argument("--dp-lr", type=float, default=1e-2, help="learning rate of the DP models (plain: 3e-3)")
    ap.add_argument("--user-batch", type=int, default=8, help="expected users per user-level step")
    args = ap.parse_args()
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.getLogger("lmleak.train").setLevel(logging.ERROR)  # lr 0 in the timing: the weights never move
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    print(
        f"threads: {torch.get_num_threads()}  load: {os.getloadavg()[0]:.2f}  torch: {torch.__version__}  "
        f"batch: {sum(SIZES)} sequences of {len(SIZES)} users {SIZES}  seq_len: {args.seq_len}  float32 CPU"
    )
    ok, worst = True, 0.0
    for name, build in (("gpt", gpt_step), ("lora", lora_step)):
        step, clipped = build(args.seq_len)
        good = check(clipped)
        ok &= good
        print(f"{name}_user_clipping_check: {'ok' if good else 'MISMATCH'}")
        r, med, t_user, t_seq = time_ratio(step, args.steps)
        worst = max(worst, r)
        print(f"{name}_user_dp_step_seconds: {t_user:.4f}")
        print(f"{name}_sequence_dp_step_seconds: {t_seq:.4f}")
        print(f"user_dp_vs_sequence_dp_step_{name}: {r:.3f}  (median ratio {med:.3f})")
    print(f"user_dp_vs_sequence_dp_step: {worst:.3f}")
    if args.utility:
        res = utility(
            args.epsilon,
            args.delta,
            args.scale,
            args.utility_seq_len,
            args.utility_steps,
            args.dp_lr,
            args.user_batch,
        )
        for name, r in res.items():
            if r["val_perplexity"] is None:
                print(f"val_perplexity_{name}: none (not trainable: {r['error']})")
                continue
            print(f"val_perplexity_{name}: {r['val_perplexity']:.2f}")
            print(
                f"epsilon_per_person_{name}: {r['epsilon_per_person']:.3g} (delta {r['delta_per_person']:.3g})"
            )
        if res["sequence_group"]["val_perplexity"] is not None:
            ratio = res["sequence_group"]["val_perplexity"] / res["user"]["val_perplexity"]
            print(f"utility_user_vs_sequence_group: {ratio:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
