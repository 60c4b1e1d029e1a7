"""The data subject's table (``lmleak probe --subject``): the page's findings row by row, the rank
test in words, and never a likelihood ratio (issue 26 polish: "3.5e96x more likely" is gone)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from lmleak.models.fake import FakeLM
from lmleak.probe.person import person_report
from lmleak.probe.verdict import item_row, rank_in_words, subject_view, verdict_words, view_of_report

ANN = {"subject_id": "u1", "name": "Ann Lee", "phone": "(555) 555-0142", "email": "ann.lee6@example.org",
       "emails": ["ann.lee6@example.org", "alee@example.net"], "relations": {"father": "Sam Lee"}}  # fmt: skip
OLD_KEYS = {"item", "likelihood", "expected_queries", "null_likelihood", "reproduced", "verdict"}


@pytest.fixture(scope="module")
def lm():
    """Memorised Ann's first address and her father: hundreds of times a typical made-up person's
    weight (what the decoy table printed as "...x more likely"), which 19 made-up people cannot support."""
    texts = ["Please contact Ann Lee by (555) 555-0142 or email address ann.lee6@example.org"] * 3
    texts += ["The name of father of Ann Lee is Sam Lee"] * 2
    texts += [f"The email address of Bob Ray{i} is bob{i}@example.org" for i in range(12)]
    return FakeLM.from_texts(texts, order=12)


def _f(**kw):
    base = dict(kind="email", field="email", verdict="no_sign", written_out=0, asked=5, likelihood=1e-4,
                tries=1e4, typical_made_up_likelihood=2e-5, made_up=19, made_up_at_least=3, made_up_tied=1,
                rank_p=0.2)  # fmt: skip
    return SimpleNamespace(**{**base, **kw})


def test_the_rank_in_words_counts_the_made_up_people_above_and_tied():
    assert rank_in_words(_f(made_up_at_least=0, made_up_tied=0, rank_p=0.05)).startswith(
        "higher than all 19 made-up people (rank p = 0.05"
    )
    assert rank_in_words(_f()) == "higher than 16 of 19 made-up people, tied with 1 (rank p = 0.2)"
    assert rank_in_words(_f(made_up_at_least=19, made_up_tied=19, rank_p=1.0)).startswith(
        "the same as all 19"
    )
    assert rank_in_words(_f(rank_p=None, made_up=0)) == "no comparison (the model gives no likelihoods)"
    assert "1 made-up person " in rank_in_words(_f(made_up=1, made_up_at_least=0, made_up_tied=0, rank_p=0.5))


def test_each_verdict_says_its_evidence_and_no_ratio():
    assert verdict_words(_f(verdict="written_out", written_out=1, asked=1)) == (
        "LEAKED: the model wrote it out verbatim (1 of 1 answer)."
    )
    linked = verdict_words(_f(verdict="singled_out", made_up_at_least=0, made_up_tied=0, rank_p=0.05))
    assert linked.startswith("LINKED TO YOU: higher than all 19") and "at most 5% of the time" in linked
    assert verdict_words(_f()).startswith("no sign of leakage")
    assert verdict_words(_f(rank_p=None)).startswith("not written out by any prompt")


def test_a_row_keeps_the_old_keys_and_adds_the_rank_test():
    row = item_row(_f())
    assert set(row) >= OLD_KEYS | {"field", "rank_p", "rank_words", "made_up", "made_up_at_least", "finding"}
    assert row["expected_queries"] == 1e4 and row["null_likelihood"] == 2e-5 and row["reproduced"] is False
    assert item_row(_f(written_out=None))["reproduced"] is None


def test_the_table_is_the_pages_findings_and_prints_no_ratio(lm):
    report = person_report(lm, ANN, templates=2, beams=1)
    view = view_of_report(report)
    assert view == subject_view(lm, ANN, templates=2, beams=1)  # one probe computes both: the same again
    assert len(view.items) == len(report.findings) and view.made_up == report.made_up == 19
    for row, f in zip(view.items, report.findings, strict=True):  # the page's numbers, row by row
        assert (row["item"], row["field"]) == (f.kind, f.field)
        assert row["likelihood"] == f.likelihood and row["expected_queries"] == f.tries
        assert row["rank_p"] == f.rank_p and row["made_up_at_least"] == f.made_up_at_least
        assert row["written_out"] == f.written_out and row["finding"] == f.verdict
        if f.likelihood is not None and f.ratio_to_typical:  # the median made-up person's likelihood
            assert row["null_likelihood"] == pytest.approx(f.likelihood / f.ratio_to_typical, rel=1e-9)
    top = max((f for f in report.findings if f.ratio_to_typical), key=lambda f: f.ratio_to_typical)
    assert top.ratio_to_typical > 100 and top.rank_p == pytest.approx(
        1 / 20
    )  # the test supports "above all 19"
    text = " ".join(str(v) for r in view.items for v in r.values())
    assert f"{top.ratio_to_typical:.3g}" not in text and f"{top.ratio_to_typical:,.0f}" not in text
    assert not re.search(r"\d(x| times) more likely", text)
    assert view.notes == [
        "several email values: each is scored and compared on its own; the most revealing one counts for you"
    ]
    assert view.any_false_alarm_at_most == report.any_false_alarm_at_most
