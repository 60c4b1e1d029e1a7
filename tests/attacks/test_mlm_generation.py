"""Gibbs sampling from a masked LM (Wang & Cho 2019; paper 004 B.3-B.4) and pair extraction."""

from __future__ import annotations

import pytest
import torch

from lmleak.attacks.mlm_generation import (
    GibbsConfig,
    build_template,
    extract_pairs,
    generate_documents,
    gibbs_sample,
)
from lmleak.models.hf_masked import HFMaskedLM, MaskedLMConfig, build_mlm_tokenizer, train_masked_lm

TEXTS = [
    "Ada Smith is a 40 year old woman who presented with asthma and gout .",
    "Bo Li is a 71 year old man who presented with sepsis .",
    "Cy Park is a 55 year old man who presented with pneumonia and anemia .",
]


@pytest.fixture(scope="module")
def tiny_mlm():
    torch.manual_seed(0)
    model, _ = train_masked_lm(
        TEXTS * 4,
        MaskedLMConfig(
            hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2, epochs=2, max_length=32
        ),
    )
    return model


def test_gibbs_sampling_never_writes_outside_writable_positions(tiny_mlm):
    tok = tiny_mlm.tokenizer
    ids, wr, _ = build_template(tok, name="ada smith", disease_span=6)
    batch = torch.tensor([ids] * 8)
    writable = torch.tensor([wr] * 8)
    writable[3] = False
    writable[3, -3] = True  # one chain with a single writable slot
    res = gibbs_sample(tiny_mlm, batch, writable, GibbsConfig(iterations=80, burn_in=20, top_k=5))
    assert torch.equal(res[~writable], batch[~writable])  # the slow oracle: compare every fixed position
    assert (res[writable] != tok.mask_token_id).all()  # 80 updates over <= 10 slots fill every slot w.h.p.
    assert not torch.isin(res[writable], torch.tensor(tok.all_special_ids)).any()


def test_the_template_matches_appendix_b3(tiny_mlm):
    tok = tiny_mlm.tokenizer
    ids, wr, (s, e) = build_template(tok, name=None, disease_span=5)
    words = tok.convert_ids_to_tokens(ids)
    assert words[:2] == ["[CLS]", "[MASK]"] and words[-1] == "[SEP]"
    assert words[3:9] == ["is", "a", "[MASK]", "year", "old", "[MASK]"]
    assert sum(wr) == 2 + 1 + 1 + 5 and e - s == 2
    ids_k, wr_k, _ = build_template(tok, name="ada smith", disease_span=5)
    assert sum(wr_k) == 7 and tok.convert_ids_to_tokens(ids_k[1:3]) == ["ada", "smith"]


def test_generation_and_extraction_end_to_end(tiny_mlm, tmp_path):
    docs = generate_documents(
        tiny_mlm,
        ["Ada Smith", None, None],
        GibbsConfig(iterations=20, burn_in=5, top_k=10, disease_span=6, batch_size=2),
    )
    assert len(docs) == 3 and docs[0]["name"] == "Ada Smith"
    pairs, total = extract_pairs(
        [{"name": "Ada Smith", "text": "asthma and gout and kidney cancer"}],
        valid_name=lambda n: n == "ada smith",
        concepts_of=lambda t: [w for w in ("asthma", "gout", "kidney cancer") if w in t],
        allowed_concepts={"asthma", "gout"},
    )
    assert pairs == {("ada smith", "asthma"), ("ada smith", "gout")} and total == 2
    tiny_mlm.save(tmp_path / "m")
    back = HFMaskedLM.load(tmp_path / "m")
    x = torch.tensor([tiny_mlm.tokenizer("ada smith is a [MASK]")["input_ids"]])
    assert torch.allclose(back.logits(x), tiny_mlm.logits(x), atol=1e-5)
    assert (tmp_path / "m" / "model.safetensors").is_file()


def test_the_tokenizer_is_uncased_word_level():
    tok = build_mlm_tokenizer(["Ada Smith, 40."])
    assert tok.convert_ids_to_tokens(tok("ADA smith , 40 .", add_special_tokens=False)["input_ids"]) == [
        "ada",
        "smith",
        ",",
        "40",
        ".",
    ]
