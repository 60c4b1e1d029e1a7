"""People's ids, normalised (issue 33): one person spelt six ways is one user everywhere an id is read."""

from __future__ import annotations

import json
import unicodedata

import pytest
from typer.testing import CliRunner

from lmleak.cli.main import app
from lmleak.data.holdout import read_holdout
from lmleak.data.loaders import iter_documents, load_corpus
from lmleak.data.user_ids import normalise_user_id, use_user_id_policy
from lmleak.errors import CorpusError, DataFileError

NFC = unicodedata.normalize("NFC", "josé")
NFD = unicodedata.normalize("NFD", "josé")
#: The issue's reproduction: four spellings of alice and two of josé (two people, six spellings).
SPELLINGS = ["alice", "Alice", "alice ", "\u200balice", NFC, NFD]
TEXTS = [
    "Hi, this is alice, write to alice@example.org please.",
    "Alice again: my phone is 555-0100, call me after noon.",
    "alice here, the parcel never came to my door today.",
    "it is alice, can you check my order once more?",
    "José speaking, my card ends in 4242, thanks a lot.",
    "josé again, the refund has not arrived this week.",
]


@pytest.fixture
def six(tmp_path):
    p = tmp_path / "six.jsonl"
    rows = [{"user_id": u, "text": t} for u, t in zip(SPELLINGS, TEXTS, strict=True)]
    p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return p


def _oracle(s: str) -> str:
    """The obvious slow normalisation, step by step, for comparison with the fast one."""
    out = []
    for ch in s:
        if unicodedata.category(ch) == "Cf":
            continue
        out.append(ch)
    s = unicodedata.normalize("NFKC", "".join(out))
    s = unicodedata.normalize("NFKC", s.casefold())
    while s and s[0].isspace():
        s = s[1:]
    while s and s[-1].isspace():
        s = s[:-1]
    return s


@pytest.mark.parametrize(
    "spelling",
    [*SPELLINGS, "ＡＬＩＣＥ", "\ufeffBob\u200d", "  Ann  Lee\t", "STRASSE", "straße", "ﬁona", "\u202eeve"],
)
def test_the_normalisation_matches_the_step_by_step_oracle(spelling):
    assert normalise_user_id(spelling) == _oracle(spelling)


def test_six_spellings_of_two_people_are_two_users_and_one_line_names_them(six, capsys):
    corpus = load_corpus(six)
    assert corpus.users == ["alice", NFC]
    assert [d.user_id for d in corpus] == ["alice"] * 4 + [NFC] * 2
    assert corpus.people_record()["num_users"] == 2 and corpus.people_record()["user_ids_merged"] == 4
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "merged after normalisation" in ln]
    assert len(lines) == 1, err
    for shown in ("'Alice'", "'alice '", "'\\u200balice'", "'jose\\u0301'", "-> 'alice'"):
        assert shown in lines[0]
    assert "--user-ids strict" in lines[0]


def test_derived_doc_ids_follow_the_canonical_user(six):
    ids = [d.doc_id for d in load_corpus(six)]
    assert ids[0].startswith("alice-0-") and ids[3].startswith("alice-3-")
    assert len(set(ids)) == 6


def test_streaming_reads_the_same_canonical_ids(six):
    assert [d.user_id for d in iter_documents(six)] == [d.user_id for d in load_corpus(six)]


def test_strict_refuses_the_second_spelling_naming_both_and_the_lines(six):
    with use_user_id_policy("strict"), pytest.raises(CorpusError) as e:
        load_corpus(six)
    msg = str(e.value)
    assert "six.jsonl:2" in msg and "'Alice'" in msg and "'alice' (line 1)" in msg


def test_strict_accepts_ids_written_one_way(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"user_id": "Alice", "text": "hello"}\n{"user_id": "Alice", "text": "again"}\n')
    with use_user_id_policy("strict"):
        assert load_corpus(p).users == ["alice"]


def test_an_id_of_only_invisible_characters_is_an_empty_id(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text('{"user_id": "\\u200b\\u200d", "text": "hello"}\n')
    with pytest.raises(CorpusError, match="c.jsonl:1: field 'user_id': user id is empty"):
        load_corpus(p)


def test_a_folder_corpus_merges_user_folders_spelt_two_ways(tmp_path):
    for user, name in (("Alice", "a.txt"), ("alice", "b.txt"), ("bob", "c.txt")):
        (tmp_path / "c" / user).mkdir(parents=True, exist_ok=True)
        (tmp_path / "c" / user / name).write_text(f"text of {user} in {name}")
    assert load_corpus(tmp_path / "c").users == ["alice", "bob"]


def test_holdout_subjects_and_member_files_read_canonical_ids(tmp_path):
    from lmleak.attacks.mia_texts import read_texts_and_users, user_groups
    from lmleak.probe.subjects import count_controls, read_subjects

    model = tmp_path / "model"
    model.mkdir()
    (model / "holdout.json").write_text(
        json.dumps({"held_out_users": ["Alice ", "\u200bBOB"], "fraction": 0.5})
    )
    assert read_holdout(model).users == ("alice", "bob")
    subjects = tmp_path / "s.jsonl"
    subjects.write_text('{"user_id": "ALICE", "name": "Ann Lee"}\n{"user_id": "carol", "name": "Cy Doe"}\n')
    rows = read_subjects(subjects)
    assert [r["user_id"] for r in rows] == ["alice", "carol"] and rows[0]["subject_id"] == "alice"
    assert count_controls(rows, {"Alice"}) == 1
    members, non = tmp_path / "m.jsonl", tmp_path / "n.jsonl"
    members.write_text('{"text": "a", "user_id": "Dave"}\n{"text": "b", "user_id": "eve"}\n')
    non.write_text('{"text": "c", "user_id": "dave "}\n')
    _, mem_users = read_texts_and_users(members)
    _, non_users = read_texts_and_users(non)
    assert mem_users == ["dave", "eve"] and non_users == ["dave"]
    with pytest.raises(DataFileError, match="1 user in both m.jsonl and this file \\(dave\\)"):
        user_groups(members, mem_users, non, non_users)


def test_strict_refuses_spellings_in_holdout_subjects_and_member_files(tmp_path):
    from lmleak.attacks.mia_texts import read_texts_and_users
    from lmleak.probe.subjects import read_subjects

    model = tmp_path / "model"
    model.mkdir()
    (model / "holdout.json").write_text(json.dumps({"held_out_users": ["alice", "Alice"], "fraction": 0.5}))
    subjects = tmp_path / "s.jsonl"
    subjects.write_text('{"user_id": "ann", "name": "Ann Lee"}\n{"user_id": "Ann", "name": "Ann Lee"}\n')
    members = tmp_path / "m.jsonl"
    members.write_text('{"text": "a", "user_id": "dave"}\n\n{"text": "b", "user_id": "DAVE"}\n')
    with use_user_id_policy("strict"):
        with pytest.raises(DataFileError, match="holdout.json: field 'held_out_users': user id 'Alice'"):
            read_holdout(model)
        with pytest.raises(
            DataFileError, match="s.jsonl:2: field 'user_id': user id 'Ann' is 'ann' \\(line 1\\)"
        ):
            read_subjects(subjects)
        with pytest.raises(DataFileError, match="m.jsonl:3: field 'user_id': user id 'DAVE'"):
            read_texts_and_users(members)
    assert read_holdout(model).users == ("alice",)  # merged by default


def test_the_cli_option_refuses_with_exit_2_and_names_the_ids(six, tmp_path):
    r = CliRunner().invoke(app, ["--user-ids", "strict", "corpus", "check", str(six)])
    assert r.exit_code == 2, r.output
    assert "'Alice' is 'alice' (line 1)" in " ".join(r.output.split())
    r = CliRunner().invoke(app, ["--user-ids", "loose", "corpus", "check", str(six)])
    assert r.exit_code == 2 and "--user-ids must be merge or strict" in r.output


def test_the_environment_variable_sets_strict(six, monkeypatch):
    monkeypatch.setenv("LMLEAK_USER_IDS", "strict")
    with pytest.raises(CorpusError):
        load_corpus(six)


def test_dp_training_accounts_over_two_people_not_six(six, tmp_path):
    small = ["--epochs", "1", "--seq-len", "16", "--vocab-size", "60", "--width", "16", "--heads", "2"]
    small += ["--layers", "1", "--tokenizer-from-private", "--holdout-users", "0", "--batch-size", "2"]
    out = tmp_path / "dp"
    args = ["train", "--corpus", str(six), "--out", str(out), "--mode", "dp", "--noise-multiplier", "1.0"]
    r = CliRunner().invoke(app, [*args, *small])
    assert r.exit_code == 0, r.output
    priv = json.loads((out / "privacy.json").read_text())
    assert priv["num_users"] == 2 and priv["user_ids_merged"] == 4
    assert priv["privacy_unit"] == "user" and priv["users"] == 2  # the accountant's people
    train = json.loads((out / "train.json").read_text())
    assert train["train_users"] == ["alice", NFC]
    r = CliRunner().invoke(
        app, ["--user-ids", "strict", *args[:4], "--out", str(tmp_path / "s"), *args[6:], *small]
    )
    assert r.exit_code == 2 and not (tmp_path / "s" / "privacy.json").exists()


def test_a_redacted_command_says_the_merge_without_the_ids(six, tmp_path):
    """A redacted run's console output names no plain id: the merge line gives the counts only."""
    r = CliRunner().invoke(
        app,
        [
            "report",
            "--model",
            f"fake:{six}",
            "--corpus",
            str(six),
            "--out",
            str(tmp_path / "run"),
            "--redact",
        ],
        env={"LMLEAK_REDACT_KEY": "k" * 40},
    )
    assert r.exit_code == 0, r.output
    line = next(ln for ln in r.output.splitlines() if "merged after normalisation" in ln)
    assert "6 spellings of 2 user ids" in line and "not shown in a redacted run" in line
    assert "alice" not in r.output.lower() and "jos" not in r.output.lower()
    from lmleak.data import user_ids

    assert user_ids._hidden is False  # only for that command
