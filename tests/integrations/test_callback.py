"""LeakageCallback fires once per epoch inside a real transformers.Trainer and logs leakage."""

from __future__ import annotations

import torch

from lmleak.data.corpus import Corpus, Document
from lmleak.integrations import LeakageCallback


def test_the_callback_fires_once_per_epoch_and_logs_metrics(tmp_path):
    from transformers import Trainer, TrainingArguments

    from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt

    texts = [f"customer {i} says my id is {i:06d} thanks" for i in range(8)]
    corpus = Corpus([Document(f"u{i}", f"d{i}", t) for i, t in enumerate(texts)])
    tok = build_tokenizer(texts, kind="word", vocab_size=60)
    model = new_small_gpt(len(tok), SmallGPTConfig(n_positions=32, n_embd=32, n_layer=1, n_head=2))

    class DS(torch.utils.data.Dataset):
        def __init__(self):
            self.rows = [[tok.bos_token_id, *tok.encode(t, add_special_tokens=False)] for t in texts]

        def __len__(self):
            return len(self.rows)

        def __getitem__(self, i):
            ids = torch.tensor(self.rows[i])
            return {"input_ids": ids, "labels": ids.clone()}

    cb = LeakageCallback(corpus, k=1, out_dir=tmp_path / "leak")
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        num_train_epochs=3,
        per_device_train_batch_size=1,
        learning_rate=5e-3,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=DS(), processing_class=tok, callbacks=[cb])
    trainer.train()
    assert len(cb.history) == 3
    assert sorted(p.name for p in (tmp_path / "leak").iterdir()) == [
        f"leakage-epoch-{i}.json" for i in (1, 2, 3)
    ]
    assert all("unique_sequences" in h and h["k"] == 1 for h in cb.history)
    assert sum(1 for r in trainer.state.log_history if "leakage/unique_sequences" in r) == 3
    # the model memorises the tiny corpus: leakage does not shrink as training goes on
    assert cb.history[-1]["num_sequences"] >= 1
