"""Subjects files: JSONL or one (pretty-printed) object, ids filled in, errors naming the line."""

from __future__ import annotations

import json

import pytest

from lmleak.data.holdout import Holdout, write_holdout
from lmleak.errors import DataFileError
from lmleak.probe.subjects import control_users, count_controls, read_subjects, write_subjects

ANN = {"name": "Ann Example", "email": "ann@example.org", "relations": {"father": "Bob Example"}}


def test_jsonl_round_trip_fills_ids_from_user_id_or_position(tmp_path):
    subjects = [
        ANN,
        {"name": "Bob Example", "user_id": 7},
        {"name": "Cy", "subject_id": 3, "x_extra": "kept"},
    ]
    p = write_subjects(subjects, tmp_path / "s.jsonl")
    back = read_subjects(p)
    assert [s["subject_id"] for s in back] == ["s1", "7", "3"]
    assert back[2]["x_extra"] == "kept" and back[0]["relations"] == ANN["relations"]


def test_one_pretty_printed_object_is_one_subject(tmp_path):
    p = tmp_path / "me.json"
    p.write_text(json.dumps(ANN, indent=2))
    assert read_subjects(p) == [{**ANN, "subject_id": "s1"}]
    p.write_text(json.dumps(ANN))  # one line, no newline
    assert len(read_subjects(p)) == 1


@pytest.mark.parametrize(
    "text,line,message",
    [
        ('{"name": "A"}\n\n{"name": \n', 3, "not valid JSON"),
        ('{"name": "A"}\n[1, 2]\n', 2, "expected a JSON object"),
        ('{"name": "A"}\n{"email": "x@example.org"}\n', 2, "has no name"),
        ("\n\n", None, "no subjects"),
        ('{"name": "A"}\n{"name": "B", "emails": "b@example.org"}\n', 2, "emails must be a list"),
        ('{"name": "A", "emails": ["a@example.org", ""]}\n', 1, "emails must be a list"),
    ],
)
def test_bad_files_name_the_line(tmp_path, text, line, message):
    p = tmp_path / "s.jsonl"
    p.write_text(text)
    with pytest.raises(DataFileError, match=message) as e:
        read_subjects(p)
    assert (f"s.jsonl:{line}:" in str(e.value)) if line else "s.jsonl" in str(e.value)


def test_subjects_file_errors_name_the_line(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text('{"name": "Ann", "x_zodiac": "leo"}\n{"phone": "1"}\n')
    with pytest.raises(DataFileError) as e:
        read_subjects(p)
    assert "s.jsonl:2" in str(e.value) and "name" in str(e.value)
    p.write_text('{"name": "Ann", "x_zodiac": "leo"}\nnot json\n')
    with pytest.raises(DataFileError, match="s.jsonl:2"):
        read_subjects(p)
    p.write_text('{"name": "Ann", "x_zodiac": "leo"}\n')
    assert read_subjects(p)[0]["x_zodiac"] == "leo"  # a field of one's own (x_...) is kept


def test_an_unknown_field_is_an_error_naming_line_field_and_the_likely_fix(tmp_path):
    """Regression: a subject file with "mail" instead of "email" probed nothing and exited 0, which a
    person reads as "nothing leaked"."""
    p = tmp_path / "s.jsonl"
    p.write_text('{"name": "Ann", "email": "ann@example.org"}\n{"name": "Bob", "mail": "bob@example.org"}\n')
    with pytest.raises(DataFileError) as e:
        read_subjects(p)
    msg = str(e.value)
    assert "s.jsonl:2" in msg and "field 'mail'" in msg and "Did you mean 'email'" in msg
    assert "x_" in msg  # how to keep a field of one's own


def test_the_synthetic_corpora_subject_files_read_without_error(synth_corpus, tmp_path):
    from lmleak.data.synth.mail import synthesize as synth_mail

    assert read_subjects(synth_corpus["paths"]["subjects"])  # customersim: orders, tracking numbers...
    mail = synth_mail(tmp_path / "mail", scale=0.02, seed=1)
    assert read_subjects(mail["subjects"])  # synth mail: company, messages


def test_controls_are_the_subjects_of_the_users_a_model_never_saw(tmp_path):
    write_holdout(tmp_path, Holdout(users=("u2", "u3"), fraction=0.5, seed=0))
    controls = control_users(tmp_path)
    assert controls == {"u2", "u3"}
    subjects = [
        {"subject_id": "s1", "user_id": "u1"},
        {"subject_id": "s2", "user_id": "u2"},
        {"subject_id": "u3"},  # no user_id: the subject id stands for the user
        {"subject_id": "s4", "user_id": "u3"},
    ]
    assert count_controls(subjects, controls) == 3
    assert control_users(tmp_path / "no-model-here") == set() and control_users("smollm2-135m") == set()


def test_every_address_is_kept_and_the_first_stands_in_for_a_missing_email(tmp_path):
    p = write_subjects(
        [{"name": "Ann", "emails": ["a@example.org", "ann@example.com"]},
         {"name": "Bo", "email": "bo@example.org", "emails": ["b@example.net", "bo@example.org"]}],
        tmp_path / "s.jsonl",
    )  # fmt: skip
    ann, bo = read_subjects(p)
    assert ann["email"] == "a@example.org" and ann["emails"] == ["a@example.org", "ann@example.com"]
    assert bo["email"] == "bo@example.org"  # an explicit email is kept as written


def test_a_subject_file_saved_with_a_byte_order_mark_is_read(tmp_path):
    """me.json saved as "UTF-8 with BOM" (Notepad) was refused with 'Unexpected UTF-8 BOM' and the
    fix 'one JSON object per line', which it already was."""
    me = {"name": "田中 明美", "emails": ["tanaka37@example.net", "akemi.t@example.net"]}
    for text in (json.dumps(me, ensure_ascii=False), json.dumps(me, ensure_ascii=False, indent=2)):
        p = tmp_path / "me.json"
        p.write_bytes(b"\xef\xbb\xbf" + text.encode())
        assert read_subjects(p)[0]["name"] == "田中 明美"
        assert read_subjects(p)[0]["emails"] == me["emails"]
