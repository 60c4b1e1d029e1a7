"""privacy.json tells the truth (issue 15): measured gamma, tokenizer source, the gamma = 0 bound."""

from __future__ import annotations

import json

import pytest

from lmleak.data.corpus import Corpus, Document
from lmleak.errors import ConfigError
from lmleak.train.confidentiality import delta2_upper_bound, measured_bayesian_confidentiality
from lmleak.train.config import TrainConfig
from lmleak.train.trainer import train_model

TINY = dict(
    epochs=1, batch_size=4, seq_len=24, vocab_size=120, n_embd=16, n_head=2, n_layer=1, holdout_users=0.0
)
# four secrets: three e-mails the regex policy finds, one name it cannot ("Kim Lo" has no cue word)
DOCS = [
    ("u1", "d1", "Write to ann.lee@example.org about the build."),
    ("u2", "d2", "Kim Lo fixed the parser yesterday."),
    ("u3", "d3", "Mail bob@example.com or cy@example.net today."),
    ("u4", "d4", "The weather is nice and the tests pass."),
]


def _corpus() -> Corpus:
    return Corpus([Document(u, f"{d}-{i}", t) for i in range(3) for u, d, t in DOCS])


def _secrets(tmp_path):
    rows = []
    for u, d, t in DOCS:
        for value, entity in (
            ("ann.lee@example.org", "EMAIL"),
            ("Kim Lo", "PERSON"),
            ("bob@example.com", "EMAIL"),
            ("cy@example.net", "EMAIL"),
        ):
            if value in t:
                i = t.index(value)
                rows.append(
                    {
                        "doc_id": d,
                        "user_id": u,
                        "start": i,
                        "end": i + len(value),
                        "entity": entity,
                        "value": value,
                    }
                )
    p = tmp_path / "secrets.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_crt_measures_gamma_against_the_secrets_and_learns_its_tokenizer_on_d_pub(tmp_path):
    corpus = Corpus([Document(u, d, t) for u, d, t in DOCS])
    cfg = TrainConfig(
        mode="crt", noise_multiplier=1.0, policy="regex", secrets=str(_secrets(tmp_path)), **TINY
    )
    res = train_model(corpus, tmp_path / "m", cfg, progress=False)
    priv = json.loads((tmp_path / "m" / "privacy.json").read_text())
    # by hand: 1 of the 4 secret spans is missed (the name) -> gamma = 0.25, measured on 4 secrets
    assert (priv["gamma"], priv["gamma_source"], priv["gamma_support"]) == (0.25, "measured", 4)
    assert priv["gamma_nominal"] is None and priv["gamma_upper95"] == pytest.approx(delta2_upper_bound(1, 4))
    # Theorem 8.3's delta2: the secrets whose sentence the conservative policy does not flag, bounded
    assert priv["delta2_policy"] == "conservative" and priv["delta2_support"] == 4
    assert priv["delta2_upper95"] == pytest.approx(delta2_upper_bound(priv["delta2_misses"], 4))
    assert priv["delta2"] == priv["delta2_misses"] / 4
    assert priv["tokenizer_source"] == "public"
    split = priv["split"]
    assert 0 < split["public_sentence_share"] < 1 and split["private_reasons"]
    assert res.privacy["tokenizer_source"] == "public"


def test_a_dp_model_refuses_a_tokenizer_learnt_from_private_text_unless_asked(tmp_path):
    # no flag: the public default vocabulary (issue 29: DP training works without flags)
    res = train_model(
        _corpus(),
        tmp_path / "a",
        TrainConfig(mode="dp", noise_multiplier=1.0, **{**TINY, "vocab_size": 300}),
        progress=False,
    )
    assert res.privacy["tokenizer_source"] == "public:smollm2-bpe-300"
    with pytest.raises(ConfigError, match="tokenizer"):  # a word vocabulary would be learnt on private text
        train_model(
            _corpus(),
            tmp_path / "w",
            TrainConfig(mode="dp", noise_multiplier=1.0, tokenizer="word", **{**TINY, "vocab_size": 300}),
            progress=False,
        )
    res = train_model(
        _corpus(),
        tmp_path / "b",
        TrainConfig(mode="dp", noise_multiplier=1.0, tokenizer_from_private=True, **TINY),
        progress=False,
    )
    assert res.privacy["tokenizer_source"] == "private"
    public = tmp_path / "public.jsonl"
    public.write_text(
        "".join(json.dumps({"user_id": "p", "text": f"public text number {i}"}) + "\n" for i in range(20))
    )
    res = train_model(
        _corpus(),
        tmp_path / "c",
        TrainConfig(mode="dp", noise_multiplier=1.0, tokenizer_from=str(public), **TINY),
        progress=False,
    )
    assert res.privacy["tokenizer_source"] == "public"
    res = train_model(
        _corpus(),
        tmp_path / "d",
        TrainConfig(mode="dp", noise_multiplier=1.0, tokenizer_from=str(tmp_path / "c"), **TINY),
        progress=False,
    )
    assert res.privacy["tokenizer_source"] == "pretrained:c"
    assert (tmp_path / "d" / "tokenizer.json").read_text() == (tmp_path / "c" / "tokenizer.json").read_text()
    # b's own record says its vocabulary was learnt from private text: taken from b it stays private
    with pytest.raises(ConfigError, match="private text"):
        train_model(
            _corpus(),
            tmp_path / "e",
            TrainConfig(mode="dp", noise_multiplier=1.0, tokenizer_from=str(tmp_path / "b"), **TINY),
            progress=False,
        )
    res = train_model(
        _corpus(),
        tmp_path / "f",
        TrainConfig(
            mode="dp",
            noise_multiplier=1.0,
            tokenizer_from=str(tmp_path / "b"),
            tokenizer_from_private=True,
            **TINY,
        ),
        progress=False,
    )
    assert res.privacy["tokenizer_source"] == "private (inherited from b: private)"


def test_a_measured_gamma_of_zero_gives_no_finite_bound():
    bound = measured_bayesian_confidentiality(2.0, 1e-5, 0.0)
    assert bound["epsilon"] == float("inf") and "gamma" in bound["reason"]
    assert measured_bayesian_confidentiality(2.0, 1e-5, None)["epsilon"] is None
    # by hand, Prop. 6: log(1 + 0.1 (e^2 - 1))
    import math

    assert measured_bayesian_confidentiality(2.0, 1e-5, 0.1)["epsilon"] == pytest.approx(
        math.log(1 + 0.1 * (math.e**2 - 1))
    )


def test_the_leave_out_public_model_reuses_the_audited_models_tokenizer(tmp_path):
    from lmleak.report.public import train_leave_out

    train_model(_corpus(), tmp_path / "audited", TrainConfig(**TINY), progress=False)
    model, info = train_leave_out(_corpus(), ["u1"], tmp_path / "leave-out", model_dir=tmp_path / "audited")
    assert (tmp_path / "leave-out" / "tokenizer.json").read_text() == (
        tmp_path / "audited" / "tokenizer.json"
    ).read_text()
    assert (
        json.loads((tmp_path / "leave-out" / "privacy.json").read_text())["tokenizer_source"]
        == "pretrained:audited"
    )
