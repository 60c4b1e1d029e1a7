"""TrainConfig: every rule of __post_init__ names its field, defaults follow paper 001 §6.1."""

from __future__ import annotations

import pytest

from lmleak.errors import ConfigError
from lmleak.train.config import MODES, TrainConfig


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"mode": "fast"}, "mode"),
        ({"arch": "rnn"}, "arch"),
        ({"epochs": 0}, "epochs"),
        ({"batch_size": 0}, "epochs"),
        ({"seq_len": 1}, "epochs"),
        ({"holdout_users": 1.0}, "holdout_users"),
        ({"holdout_users": -0.1}, "holdout_users"),
        ({"mode": "dp"}, "noise_multiplier"),  # neither
        ({"mode": "crt", "noise_multiplier": 1.0, "target_epsilon": 8.0}, "noise_multiplier"),  # both
        ({"n_embd": 130, "n_head": 4}, "width"),
        ({"n_layer": 0}, "width"),
        ({"dp_clipping": "flat"}, "dp_clipping"),
        ({"mode": "sdp", "noise_multiplier": 1.0}, "arch"),  # sdp is the LSTM baseline
    ],
)
def test_each_bad_setting_is_refused_naming_its_field(kw, field):
    with pytest.raises(ConfigError) as e:
        TrainConfig(**kw)
    assert e.value.field == field


def test_good_settings_and_the_tokenizer_default_of_each_architecture():
    for mode in MODES:
        dp = {} if mode == "nodp" else {"target_epsilon": 8.0}
        arch = "lstm" if mode == "sdp" else "gpt"
        assert TrainConfig(mode=mode, arch=arch, **dp).mode == mode
    assert TrainConfig().tokenizer_kind == "bpe" and TrainConfig(arch="lstm").tokenizer_kind == "word"
    assert TrainConfig(arch="lstm", tokenizer="bpe").tokenizer_kind == "bpe"
    d = TrainConfig(epochs=3).to_dict()
    assert d["epochs"] == 3 and TrainConfig(**d) == TrainConfig(epochs=3)
