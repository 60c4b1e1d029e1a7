"""`synth customersim|mail --canary-design crafted`: the same draws as the random design written in
runes behind the designed prefix, recorded per canary and in the summary; random files unchanged."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from lmleak.data.canaries import CRAFTED_ALPHABET, CRAFTED_PREFIX, CanaryDesign, craft_secret
from lmleak.data.synth import customersim, mail
from lmleak.errors import ConfigError


def _rows(path):
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def test_customersim_crafted_canaries_are_the_random_ones_in_runes(tmp_path):
    rnd = customersim.synthesize(tmp_path / "r", users=6, dialogs_per_user=1, seed=2, canaries=4)
    cft = customersim.synthesize(
        tmp_path / "c", users=6, dialogs_per_user=1, seed=2, canaries=4, canary_design="crafted"
    )
    r, c = _rows(rnd["canaries"]), _rows(cft["canaries"])
    assert [x["user_id"] for x in c] == [x["user_id"] for x in r]
    assert [x["secret"] for x in c] == [craft_secret(x["secret"]) for x in r]
    assert all(x["prefix"] == CRAFTED_PREFIX and x["canary_design"] == "crafted" for x in c)
    assert all(x["alphabet"] == CRAFTED_ALPHABET[:10] for x in c)
    assert "canary_design" not in r[0]  # a random row is written as before designs existed
    texts = [json.loads(line)["text"] for line in open(cft["corpus"], encoding="utf-8")]
    assert sum(CRAFTED_PREFIX + x["secret"] in t for t in texts for x in c) == 4
    # everything but the canaries is the same corpus
    other = [t for t in texts if CRAFTED_PREFIX not in t]
    assert other == [
        json.loads(line)["text"] for line in open(rnd["corpus"], encoding="utf-8") if "My ID is" not in line
    ]


def test_mail_crafted_canaries_map_the_hex_tokens_to_sixteen_runes(tmp_path):
    rnd = mail.synthesize(tmp_path / "r", scale=0.02, seed=1, canaries=2)
    cft = mail.synthesize(tmp_path / "c", scale=0.02, seed=1, canaries=2, canary_design="crafted")
    r, c = _rows(rnd["canaries"]), _rows(cft["canaries"])
    assert [x["secret"] for x in c] == [craft_secret(x["secret"], "0123456789abcdef") for x in r]
    assert all(x["alphabet"] == CRAFTED_ALPHABET and x["canary_design"] == "crafted" for x in c)


def test_the_summaries_and_the_cli_record_the_design(tmp_path):
    from lmleak.cli.main import app

    s = customersim.synthesize_corpus(
        tmp_path / "a", users=3, dialogs_per_user=1, canaries=1, canary_design="crafted"
    )
    assert s.to_dict()["canary_design"] == "crafted"
    assert (
        mail.synthesize_corpus(tmp_path / "b", scale=0.02, canaries=1).to_dict()["canary_design"] == "random"
    )
    args = ["synth", "customersim", "--out", str(tmp_path / "c"), "--users", "3", "--dialogs-per-user", "1"]
    res = CliRunner().invoke(app, [*args, "--canaries", "1", "--canary-design", "crafted", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["canary_design"] == "crafted"
    res = CliRunner().invoke(app, [*args, "--canaries", "1", "--canary-design", "fancy"])
    assert res.exit_code == 2 and "canary design" in res.output


def test_a_corpus_that_uses_the_runes_cannot_get_crafted_canaries():
    with pytest.raises(ConfigError, match="would not be new tokens"):
        CanaryDesign("crafted", ["a rune ᚠ in the text"])
    CanaryDesign("random", ["a rune ᚠ in the text"])  # the random design does not care
