"""End to end on a small GPT trained for several epochs (paper 001 §6.1 in miniature). Slow.

Uses the data area's customer-dialog synthesiser and the training area's ``train_model`` when
they are installed; otherwise a seeded local corpus of the same shape (users, dialogs with
synthetic 555 phone numbers, one canary repeated many times) and a plain training loop that
saves the same per-epoch snapshot layout (``MODEL/snapshots/epoch-N``).
"""

from __future__ import annotations

import random
from pathlib import Path

import pandas as pd
import pytest

from lmleak.data.corpus import Corpus, Document

pytestmark = pytest.mark.slow

CANARY = "my secret code is 8 3 1 9 4 2"
EPOCHS = 6


def _local_corpus(seed: int = 0) -> tuple[Corpus, str]:
    """A stand-in for CustomerSim: dialogs with synthetic 555 numbers and one repeated canary."""
    rng = random.Random(seed)
    first = ["ada", "bob", "cyd", "dee", "eve", "fay", "gus", "hal", "ivy", "jon", "kim", "lou"]
    items = ["order", "parcel", "invoice", "refund", "ticket"]
    greet = ["hello", "hi", "good morning"]
    docs = []
    for u in range(24):
        name = first[u % len(first)] + str(u)
        phone = f"555 01{u:02d}"
        for j in range(4):
            item = rng.choice(items)
            num = " ".join(str(rng.randint(0, 9)) for _ in range(4))
            text = (
                f"{rng.choice(greet)} my name is {name} and my {item} number is {num} . "
                f"please call me at {phone} about the {item} . thank you very much"
            )
            docs.append(Document(f"user{u}", f"user{u}-{j}", text))
    for r in range(25):
        docs.append(Document("user0", f"user0-canary-{r}", f"hello again . {CANARY} . thank you"))
    return Corpus(docs), CANARY.split("is ")[-1]


def _corpus(tmp: Path) -> tuple[Corpus, str]:
    """The embedded CustomerSim corpus with one canary repeated 25 times, or the local stand-in."""
    try:
        from lmleak.data.loaders import load_corpus
        from lmleak.data.synth.customersim import synthesize
    except ImportError:
        return _local_corpus()
    import json

    paths = synthesize(tmp / "data", users=20, dialogs_per_user=4, seed=0, canaries=1, canary_repeats=25)
    canary = json.loads(Path(paths["canaries"]).read_text().splitlines()[0])
    return load_corpus(paths["corpus"]), str(canary["secret"])


def _local_train(corpus: Corpus, out: Path, epochs: int, seed: int = 0) -> Path:
    import torch

    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model

    tok = build_tokenizer(corpus.texts(), kind="word", vocab_size=2000)
    module = new_small_gpt(
        len(tok), SmallGPTConfig(n_positions=96, n_embd=96, n_layer=2, n_head=4), seed=seed
    )
    bos, pad = tok.bos_token_id, tok.pad_token_id
    rows = [[bos, *tok.encode(t, add_special_tokens=False)][:96] for t in corpus.texts()]
    opt = torch.optim.AdamW(module.parameters(), lr=3e-3)
    gen = random.Random(seed)
    for epoch in range(1, epochs + 1):
        module.train()
        order = list(range(len(rows)))
        gen.shuffle(order)
        for b in range(0, len(order), 16):
            batch = [rows[i] for i in order[b : b + 16]]
            width = max(map(len, batch))
            ids = torch.full((len(batch), width), pad)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for i, r in enumerate(batch):
                ids[i, : len(r)] = torch.tensor(r)
                mask[i, : len(r)] = 1
            labels = ids.masked_fill(mask == 0, -100)
            loss = module(input_ids=ids, attention_mask=mask, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
        module.eval()
        save_small_model(module, tok, out / "snapshots" / f"epoch-{epoch}")
    return save_small_model(module, tok, out)


def _train(corpus: Corpus, out: Path, epochs: int) -> tuple[Path, bool]:
    try:
        from lmleak.train.trainer import TrainConfig, train_model
    except ImportError:
        return _local_train(corpus, out, epochs), False
    # D is exactly what the model trains on: no users are held out inside train_model
    config = TrainConfig(
        arch="gpt", epochs=epochs, tokenizer="word", snapshots=True, seed=0, lr=3e-3, n_embd=96
    )
    result = train_model(corpus, out, config, val_corpus=corpus.select_users(corpus.users[:2]))
    return Path(result.model_dir), True


def test_a_small_gpt_leaks_more_unique_sequences_with_epochs_and_the_canary(tmp_path):
    import torch

    from lmleak.models.small import load_small_model
    from lmleak.report.leakage import ReportConfig, run_report
    from lmleak.report.studies import snapshot_study

    torch.manual_seed(0)
    torch.set_num_threads(1)
    corpus, canary = _corpus(tmp_path)
    model_dir, with_trainer = _train(corpus, tmp_path / "model", EPOCHS)

    table = snapshot_study(model_dir, corpus, tmp_path / "snap", k=1, load=load_small_model)
    uniq = table["unique_sequences"].tolist()
    print(
        "unique sequences per epoch:",
        uniq,
        "train perplexity:",
        [round(x, 2) for x in table["train_perplexity"]],
    )
    assert uniq[-1] > uniq[0]
    assert table["train_perplexity"].iloc[-1] < table["train_perplexity"].iloc[0]

    model = load_small_model(model_dir)
    run = tmp_path / "run"
    if with_trainer:
        summary = run_report(
            model, corpus, run, ReportConfig(k=(3,)), public_model="leave-out", model_dir=model_dir
        )
    else:
        from lmleak.ledger.ledger import build_ledger
        from lmleak.report.leakage import analyse, build_index, unique_owners

        ledger = build_ledger(model, corpus, tmp_path / "probe")
        seqs0, _, _ = analyse(ledger, build_index(ledger), model.tokenizer, ReportConfig(k=(3,)))
        owners = unique_owners(seqs0)
        leave_dir = _local_train(corpus.without_users(owners), tmp_path / "leave-out", EPOCHS)
        summary = run_report(
            model, corpus, run, ReportConfig(k=(3,)), public_model=load_small_model(leave_dir)
        )
    seqs = pd.read_parquet(run / "sequences.parquet")
    # the canary's secret digits (only its 25 repetitions teach them) are predicted in S (top-3:
    # a small model after a few epochs ranks some digits second, which breaks top-1 runs)
    tail = canary.replace(" ", "")[-4:]
    canary_rows = seqs[[tail in t.replace(" ", "") for t in seqs["text"]]]
    assert len(canary_rows) > 0, "the canary repeated 25 times must appear in S"
    print(
        "unique:",
        summary["unique_sequences"],
        "epsilon_l:",
        summary["leakage_epsilon"],
        "public:",
        summary["public_model"],
    )
    assert summary["unique_sequences"] > 0
    assert summary["leakage_epsilon"] is not None and summary["leakage_epsilon"] >= 1.0
