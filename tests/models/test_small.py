"""models.small: the tokenizers, the small GPT and LSTM lmleak trains, and their save/load round trip."""

from __future__ import annotations

import json
import stat

import pytest
import torch

from lmleak.models.small import (
    MANIFEST,
    SmallGPTConfig,
    SmallLSTM,
    SmallLSTMConfig,
    build_tokenizer,
    load_small_model,
    new_small_gpt,
    save_small_model,
)

TEXTS = ["My ID is: 123456", "hello there <MASK> friend", "refund my order 42 please"]


@pytest.mark.parametrize("kind", ["word", "bpe"])
def test_tokenizers_round_trip_and_keep_the_mask_and_digits_apart(kind):
    tok = build_tokenizer(TEXTS, kind=kind, vocab_size=300)
    for text in TEXTS:
        assert tok.decode(tok.encode(text, add_special_tokens=False)) == text
    mask = tok.convert_tokens_to_ids("<MASK>")
    ids = tok.encode("a <MASK> b", add_special_tokens=False)
    assert ids.count(mask) == 1  # one token, in both kinds (paper 002's redaction token)
    digits = tok.convert_ids_to_tokens(tok.encode("123456", add_special_tokens=False))
    assert len(digits) == 6  # digits are split one by one
    assert [tok.pad_token_id, tok.bos_token_id, tok.eos_token_id] == [0, 1, 2]


def test_an_unknown_tokenizer_kind_is_refused():
    with pytest.raises(ValueError, match="word' or 'bpe"):
        build_tokenizer(TEXTS, kind="char")  # type: ignore[arg-type]


def test_new_small_gpt_has_the_asked_shape_untied_and_seeded():
    cfg = SmallGPTConfig(n_positions=16, n_embd=16, n_layer=1, n_head=2)
    a, b = new_small_gpt(50, cfg, seed=3), new_small_gpt(50, cfg, seed=3)
    assert (a.config.n_positions, a.config.n_embd, a.config.n_layer, a.config.vocab_size) == (16, 16, 1, 50)
    assert a.get_input_embeddings().weight.data_ptr() != a.get_output_embeddings().weight.data_ptr()
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def test_the_lstm_ignores_later_tokens_so_right_padding_needs_no_mask():
    torch.manual_seed(0)
    lstm = SmallLSTM(SmallLSTMConfig(vocab_size=20, embed_dim=8, hidden_dim=8))
    short = lstm(input_ids=torch.tensor([[1, 5, 6]])).logits
    padded = lstm(
        input_ids=torch.tensor([[1, 5, 6, 0, 0]]), attention_mask=torch.tensor([[1, 1, 1, 0, 0]])
    ).logits
    torch.testing.assert_close(padded[:, :3], short)
    embeds = lstm.get_input_embeddings()(torch.tensor([[1, 5, 6]]))
    torch.testing.assert_close(lstm(inputs_embeds=embeds).logits, short)


@pytest.mark.parametrize("arch", ["gpt", "lstm"])
def test_save_and_load_give_the_same_scores(tmp_path, arch):
    tok = build_tokenizer(TEXTS, kind="word", vocab_size=100)
    torch.manual_seed(0)
    module = (
        new_small_gpt(len(tok), SmallGPTConfig(n_positions=16, n_embd=16, n_layer=1, n_head=2))
        if arch == "gpt"
        else SmallLSTM(SmallLSTMConfig(vocab_size=len(tok), embed_dim=8, hidden_dim=8, max_length=16))
    )
    out = save_small_model(module, tok, tmp_path / arch, extra={"mode": "nodp"})
    assert stat.S_IMODE(out.stat().st_mode) == 0o700  # the weights memorise training data
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["arch"] == arch and manifest["mode"] == "nodp"
    lm = load_small_model(out, name="m")
    assert (lm.name, lm.max_length) == ("m", 16)
    ids = lm.tokenizer.encode(TEXTS[0])
    module.eval()
    with torch.no_grad():
        logits = module(input_ids=torch.tensor([[lm.tokenizer.bos_id, *ids]])).logits[0].log_softmax(-1)
    expected = [float(logits[j, t]) for j, t in enumerate(ids)]
    torch.testing.assert_close(
        torch.as_tensor(lm.token_stats([ids])[0].logprobs), torch.tensor(expected), rtol=1e-4, atol=1e-5
    )
