"""train records the users it held out (issue 14): holdout.json, --holdout-users, larger small GPTs."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.data.holdout import read_holdout
from lmleak.data.synth.mail import synthesize


def test_train_writes_and_prints_the_held_out_users_and_builds_the_asked_shape(tmp_path):
    paths = synthesize(tmp_path / "mail", scale=0.03, seed=4)
    users = sorted({json.loads(line)["user_id"] for line in paths["corpus"].read_text().splitlines()})
    res = CliRunner().invoke(
        app,
        [
            "train",
            "--corpus",
            str(paths["corpus"]),
            "--out",
            str(tmp_path / "m"),
            "--epochs",
            "1",
            "--holdout-users",
            "0.25",
            "--layers",
            "3",
            "--width",
            "48",
            "--heads",
            "3",
            "--context",
            "32",
            "--vocab-size",
            "400",
        ],
    )
    assert res.exit_code == 0, res.output
    held = read_holdout(tmp_path / "m")
    assert held is not None and held.fraction == 0.25
    assert len(held.users) == round(0.25 * len(users)) and set(held.users) <= set(users)
    assert "holdout.json" in " ".join(res.output.split())
    info = json.loads((tmp_path / "m" / "train.json").read_text())
    assert sorted(info["val_users"]) == list(held.users)
    assert not set(info["train_users"]) & set(held.users)
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    assert (cfg["n_layer"], cfg["n_embd"], cfg["n_head"], cfg["n_positions"]) == (3, 48, 3, 33)


def test_no_holdout_is_allowed_and_recorded(tmp_path):
    paths = synthesize(tmp_path / "mail", scale=0.03, seed=4)
    res = CliRunner().invoke(
        app,
        [
            "train",
            "--corpus",
            str(paths["corpus"]),
            "--out",
            str(tmp_path / "m"),
            "--epochs",
            "1",
            "--holdout-users",
            "0",
            "--vocab-size",
            "400",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    held = read_holdout(tmp_path / "m")
    assert held is not None and held.users == () and held.fraction == 0.0
    assert json.loads(res.stdout)["held_out_users"] == []


def test_a_width_that_the_heads_do_not_divide_is_a_clear_error(tmp_path):
    paths = synthesize(tmp_path / "mail", scale=0.03, seed=4)
    res = CliRunner().invoke(
        app,
        [
            "train",
            "--corpus",
            str(paths["corpus"]),
            "--out",
            str(tmp_path / "m"),
            "--width",
            "50",
            "--heads",
            "3",
        ],
    )
    assert res.exit_code == 2 and "width" in res.output


def test_mia_takes_its_non_members_from_the_held_out_users(tmp_path):
    paths = synthesize(tmp_path / "mail", scale=0.05, seed=4)
    res = CliRunner().invoke(
        app,
        [
            "train",
            "--corpus",
            str(paths["corpus"]),
            "--out",
            str(tmp_path / "m"),
            "--epochs",
            "1",
            "--holdout-users",
            "0.3",
            "--vocab-size",
            "400",
            "--quiet",
        ],
    )
    assert res.exit_code == 0, res.output
    held = set(read_holdout(tmp_path / "m").users)
    res = CliRunner().invoke(
        app,
        [
            "mia",
            "--model",
            str(tmp_path / "m"),
            "--corpus",
            str(paths["corpus"]),
            "--out",
            str(tmp_path / "run"),
            "--n",
            "10",
            "--group-size",
            "0",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert "held out of training" in summary["source"]
    scores = __import__("pandas").read_parquet(tmp_path / "run" / "mia_scores.parquet")
    docs = [json.loads(line) for line in paths["corpus"].read_text().splitlines()]
    held_docs = [d["text"] for d in docs if d["user_id"] in held]

    def opens_a_held_out_document(t: str) -> bool:  # candidates are openings as written, newlines kept
        return any(d.startswith(t) for d in held_docs)

    assert all(opens_a_held_out_document(t) for t in scores.loc[scores["member"] == 0, "text"])
    assert not any(opens_a_held_out_document(t) for t in scores.loc[scores["member"] == 1, "text"] if t)


def test_a_separate_validation_corpus_that_reuses_training_ids_holds_out_nobody_it_trained_on(tmp_path):
    """The demo validates on another synthetic population whose ids (``u0``…) collide with the training
    corpus's: holdout.json listed trained people, so probing counted every probed member as a control."""
    from lmleak.data.corpus import Corpus, Document
    from lmleak.train.config import TrainConfig
    from lmleak.train.trainer import train_model
    from tests.train.test_trainer import tiny_corpus

    train = tiny_corpus(6, 2)  # users u0..u5
    val = Corpus([Document(f"u{u}", f"v{u}", "a different person's text") for u in (4, 5, 6, 7)])
    cfg = TrainConfig(epochs=1, batch_size=4, seq_len=16, vocab_size=60, n_embd=16, n_head=2, n_layer=1)
    res = train_model(train, tmp_path / "m", cfg, val_corpus=val, progress=False)
    assert sorted(res.val_users) == ["u4", "u5", "u6", "u7"]  # validation itself is unchanged
    held = read_holdout(tmp_path / "m")
    assert held is not None and held.users == ("u6", "u7")
    assert not set(held.users) & set(train.users)
