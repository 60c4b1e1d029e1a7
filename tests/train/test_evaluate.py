"""lmleak.train.evaluate: ``lmleak eval``'s record, against evaluate_model on the loaded model."""

from __future__ import annotations

import json

import pytest

from lmleak.data.loaders import load_corpus
from lmleak.errors import CapabilityError
from lmleak.models.evaluation import evaluate_model
from lmleak.models.loading import load_model
from lmleak.train.evaluate import evaluate_on_corpus


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "c.jsonl"
    rows = [{"user_id": f"u{i}", "text": f"my address is {100 + i} oak street"} for i in range(6)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_record_names_the_model_and_corpus_and_holds_evaluate_models_metrics(corpus, tmp_path):
    record = evaluate_on_corpus(f"fake:{corpus}", corpus, ks=(1, 5), out_path=tmp_path / "e.json")
    lm = load_model(f"fake:{corpus}")
    metrics = evaluate_model(lm, load_corpus(corpus), ks=(1, 5))
    start = {
        "bos_token_id": lm.tokenizer.bos_id,
        "scoring_convention": "every token after the start token is scored",
    }
    assert record == {"model": f"fake:{corpus}", "corpus": str(corpus), **start, **metrics}
    assert set(metrics) >= {"perplexity", "top1_accuracy", "top5_accuracy"}
    assert json.loads((tmp_path / "e.json").read_text()) == record


def test_no_file_is_written_without_out_path_and_a_top_k_model_is_refused(corpus, tmp_path):
    evaluate_on_corpus(f"fake:{corpus}", corpus)
    assert list(tmp_path.iterdir()) == [corpus]
    with pytest.raises(CapabilityError, match="eval needs 'score' access"):
        evaluate_on_corpus(f"topk:1:fake:{corpus}", corpus)
