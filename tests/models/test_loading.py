"""load_model: every spec kind, clear errors, pickles refused, black-box views honest."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lmleak.errors import CapabilityError, ModelError
from lmleak.models.blackbox import TextOnly, TopKOnly
from lmleak.models.fake import FakeLM
from lmleak.models.loading import load_model

TEXTS = ["my id is 123456", "my id is 654321", "the order arrived late today"]


def test_a_hub_id_is_refused_with_what_is_accepted():
    with pytest.raises(ModelError, match="never downloaded"):
        load_model("HuggingFaceTB/SmolLM2-135M")
    with pytest.raises(ModelError, match="Did you mean 'smollm2-135m'"):
        load_model("smollm2-135")


def test_fake_and_wrapper_specs(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text("".join(json.dumps({"user_id": "u", "text": t}) + "\n" for t in TEXTS))
    fake = load_model(f"fake:{p}")
    assert isinstance(fake, FakeLM)
    top = load_model(f"topk:2:fake:{p}")
    assert isinstance(top, TopKOnly) and top.k == 2
    hardened = load_model(f"topk:1:0.9:fake:{p}")
    assert hardened.min_top1_prob == 0.9
    assert isinstance(load_model(f"text:fake:{p}"), TextOnly)


def test_pickled_checkpoints_are_refused_unless_allowed(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    (tmp_path / "pytorch_model.bin").write_bytes(b"not really a pickle")
    with pytest.raises(ModelError, match="allow-pickle"):
        load_model(str(tmp_path))


def test_a_folder_that_is_not_a_model_is_explained(tmp_path):
    with pytest.raises(ModelError, match="not a model"):
        load_model(str(tmp_path))


def per_prefix_api_ranks(api: TopKOnly, seq: list[int]) -> np.ndarray:
    """The slow obvious oracle: call the API once per prefix, as an attacker would."""
    out = []
    for i in range(len(seq)):
        ids, _ = api.top_k([seq[:i]], api.k)[0]
        hit = np.nonzero(ids == seq[i])[0]
        out.append(int(hit[0]) + 1 if hit.size else api.k + 1)
    return np.array(out)


@pytest.mark.parametrize("k, p", [(1, None), (3, None), (2, 0.02)])
def test_topk_ranks_equal_querying_the_api_once_per_prefix(tiny_gpt2, id_tokenizer, k, p):
    # a real-valued model: exact ties between tokens (where an API's order is arbitrary) do not occur
    from lmleak.models.torch_causal import TorchCausalLM

    api = TopKOnly(TorchCausalLM(tiny_gpt2, id_tokenizer, name="t", max_length=64), k, min_top1_prob=p)
    rng = np.random.default_rng(k)
    for n in (1, 5, 20):
        seq = rng.integers(3, 64, size=n).tolist()
        np.testing.assert_array_equal(api.topk_ranks([seq])[0], per_prefix_api_ranks(api, seq))


def test_the_api_reveals_no_probabilities_and_no_more_than_k():
    api = TopKOnly(FakeLM.from_texts(TEXTS), 2)
    ids, lps = api.top_k([api.tokenizer.encode("my id")], 2)[0]
    assert len(ids) == 2 and np.isnan(lps).all()
    with pytest.raises(CapabilityError, match="at most the top 2"):
        api.top_k([[1]], 3)
