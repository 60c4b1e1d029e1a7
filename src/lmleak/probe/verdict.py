"""The data subject's view in the terminal (``lmleak probe --model M --subject me.json``; paper 003
§1/§3.4): one row per probed item of the person, from the same probe as the person's page
(:func:`lmleak.probe.person.person_report`), so the table and the page give the same numbers.

Per item: in how many answers the model wrote it out verbatim, its likelihood after the most
revealing prompt and the expected tries to get it (1/likelihood), and how it ranks against the
same prompts for :data:`~lmleak.probe.person.MADE_UP_PEOPLE` made-up people — the exact rank test
of the page (``rank_p``), said in words. No likelihood ratio is printed: with ``n`` made-up people
the test can say at most "above all ``n``" (``rank_p = 1/(n+1)``), and a ratio against one made-up
value (once "3.5e96x more likely") claims far more than that.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from lmleak.probe.person import MADE_UP_PEOPLE, PersonReport, person_report
from lmleak.words import plural


@dataclass(frozen=True)
class SubjectView:
    """What a model reveals about one data subject: one row per probed item (see :func:`item_row`),
    the made-up people compared, and the chance that a person the model never saw has one item
    (``false_alarm``) or any (``any_false_alarm_at_most``, the union bound) come out linked."""

    subject: str
    model: str
    items: list[dict[str, Any]]
    made_up: int = 0
    singled_out_at: float | None = None
    false_alarm: float | None = None
    any_false_alarm_at_most: float | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def rank_in_words(f: Any) -> str:
    """The rank test of one finding (:class:`~lmleak.probe.person.ItemFinding`) in words.

    Example:
        >>> from types import SimpleNamespace as F
        >>> rank_in_words(F(rank_p=0.05, made_up=19, made_up_at_least=0, made_up_tied=0))
        'higher than all 19 made-up people (rank p = 0.05, the smallest 19 can give)'
        >>> rank_in_words(F(rank_p=0.3, made_up=19, made_up_at_least=5, made_up_tied=1))
        'higher than 14 of 19 made-up people, tied with 1 (rank p = 0.3)'
        >>> rank_in_words(F(rank_p=1.0, made_up=19, made_up_at_least=19, made_up_tied=19))
        'the same as all 19 made-up people: the model does not go by the name here (rank p = 1)'
    """
    if f.rank_p is None or not f.made_up:
        return "no comparison (the model gives no likelihoods)"
    n, at_least, tied = f.made_up, f.made_up_at_least or 0, f.made_up_tied or 0
    if tied == n:
        return f"the same as all {plural(n, 'made-up person')}: the model does not go by the name here (rank p = 1)"
    if at_least == 0:
        return f"higher than all {plural(n, 'made-up person')} (rank p = {f.rank_p:.2g}, the smallest {n} can give)"
    ties = f", tied with {tied}" if tied else ""
    return f"higher than {n - at_least} of {plural(n, 'made-up person')}{ties} (rank p = {f.rank_p:.2g})"


def verdict_words(f: Any) -> str:
    """A short plain-language judgement of one finding: the page's verdict, with its evidence.

    Example:
        >>> from types import SimpleNamespace as F
        >>> verdict_words(F(verdict="written_out", written_out=2, asked=5))
        'LEAKED: the model wrote it out verbatim (2 of 5 answers).'
        >>> verdict_words(F(verdict="singled_out", written_out=0, asked=5, rank_p=0.05, made_up=19,
        ...                 made_up_at_least=0, made_up_tied=0))
        'LINKED TO YOU: higher than all 19 made-up people (rank p = 0.05, the smallest 19 can give); chance does this at most 5% of the time.'
        >>> verdict_words(F(verdict="no_sign", written_out=0, asked=5, rank_p=0.4, made_up=19))
        'no sign of leakage: not written out, and no more likely after your name than chance explains.'
    """
    if f.verdict == "written_out":
        return f"LEAKED: the model wrote it out verbatim ({f.written_out} of {plural(f.asked, 'answer')})."
    if f.verdict == "singled_out":
        # a valid p-value: a person the model never saw gets rank_p <= p at most a share p of the time
        return f"LINKED TO YOU: {rank_in_words(f)}; chance does this at most {f.rank_p:.0%} of the time."
    if f.rank_p is None:
        return "not written out by any prompt (the model gives no likelihoods, so no comparison)."
    return "no sign of leakage: not written out, and no more likely after your name than chance explains."


def item_row(f: Any) -> dict[str, Any]:
    """One row of the table (and of ``--json``'s ``items``) from one finding of the person's page.

    ``item`` (the kind: ``email``, ``relationship:father``), ``likelihood``, ``expected_queries``
    (1/likelihood), ``null_likelihood`` (the median made-up person's likelihood), ``reproduced``
    and ``verdict`` (words) as before; beside them ``field``, ``asked``, ``written_out``,
    ``made_up``, ``made_up_at_least``, ``made_up_tied``, ``rank_p``, ``rank_words`` and
    ``finding`` (``written_out``, ``singled_out`` or ``no_sign``).
    """
    return {
        "item": f.kind,
        "field": f.field,
        "likelihood": f.likelihood,
        "expected_queries": f.tries,
        "null_likelihood": f.typical_made_up_likelihood,
        "reproduced": None if f.written_out is None else f.written_out > 0,
        "verdict": verdict_words(f),
        "asked": f.asked,
        "written_out": f.written_out,
        "made_up": f.made_up,
        "made_up_at_least": f.made_up_at_least,
        "made_up_tied": f.made_up_tied,
        "rank_p": f.rank_p,
        "rank_words": rank_in_words(f),
        "finding": f.verdict,
    }


def view_of_report(report: PersonReport) -> SubjectView:
    """The terminal table of a person's page (:class:`~lmleak.probe.person.PersonReport`): the same
    findings, one row each (:func:`item_row`)."""
    several = sorted({f.kind for f in report.findings if sum(g.kind == f.kind for g in report.findings) > 1})
    notes = [
        f"several {kind} values: each is scored and compared on its own; the most revealing one counts for you"
        for kind in several
    ]
    return SubjectView(
        subject=report.name,
        model=report.model,
        items=[item_row(f) for f in report.findings],
        made_up=report.made_up,
        singled_out_at=report.singled_out_at,
        false_alarm=report.false_alarm,
        any_false_alarm_at_most=report.any_false_alarm_at_most,
        notes=notes,
    )


def subject_view(
    model: Any, subject: dict[str, Any], *, templates: int = 5, beams: int = 3, made_up: int = MADE_UP_PEOPLE
) -> SubjectView:
    """Probe ``model`` for one subject's own PII (``lmleak probe --subject me.json``): the person's
    page's probe (:func:`~lmleak.probe.person.person_report`: the answers, and the comparison with
    ``made_up`` made-up people by an exact rank test) as a table (:func:`view_of_report`)."""
    return view_of_report(person_report(model, subject, templates=templates, beams=beams, made_up=made_up))
