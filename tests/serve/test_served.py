"""lmleak.serve.served: the model card, /v1/models/{id}, /tokenize and /detokenize."""

from __future__ import annotations

from tests.serve.tiny import TEXTS, client, openai_error, row


def test_models_card_and_tokenizer_routes(model):
    c = client(model, "echo")
    card = c.get("/v1/models").json()["data"][0]
    tok = model.tokenizer
    assert card["id"] == "tiny" and card["max_model_len"] == model.max_length
    assert card["lmleak"] == {
        "bos_id": tok.bos_id,
        "eos_id": tok.eos_id,
        "pad_id": tok.pad_id,
        "vocab_size": tok.vocab_size,
        "max_length": model.max_length,
        "tier": "echo",
    }
    assert c.get("/v1/models/tiny").json() == card
    openai_error(c.get("/v1/models/other"), 404, code="model_not_found")
    ids = c.post("/tokenize", json={"prompt": TEXTS[1]}).json()
    assert ids["tokens"] == row(model, TEXTS[1]) and ids["count"] == len(ids["tokens"])
    bare = c.post("/tokenize", json={"prompt": TEXTS[1], "add_special_tokens": False}).json()["tokens"]
    assert c.post("/detokenize", json={"tokens": bare}).json()["prompt"] == tok.decode(bare)


def test_tokenize_takes_documents_longer_than_the_context(model):
    long = " ".join(["thank you"] * 100)
    ids = client(model).post("/tokenize", json={"prompt": long}).json()["tokens"]
    assert len(ids) == 201 > model.max_length


def test_tokenizer_routes_refuse_bad_fields(model):
    c = client(model)
    openai_error(c.post("/tokenize", json={"prompt": 5}), 400, param="prompt")
    openai_error(
        c.post("/tokenize", json={"prompt": "x", "add_special_tokens": "no"}), 400, param="add_special_tokens"
    )
    openai_error(c.post("/detokenize", json={"tokens": [1, "2"]}), 400, param="tokens", code="invalid_type")
    openai_error(c.post("/detokenize", json={"tokens": [10**9]}), 400, param="tokens", code="out_of_range")
    openai_error(c.post("/tokenize", json={"prompt": "x", "model": "other"}), 404)
