"""The HTML audit report: one self-contained file (plotly.js and every plot inlined, no network).

It reads a run directory — an audit (``summary.json`` with ``models``) or a single stage's output —
and presents what the stages computed. It never computes a metric; the only arithmetic here is
binning values for a histogram. Leaked text is left out unless ``show_text`` is set; then the
page shows it behind a switch and says so in a banner. The file is written owner-only.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lmleak._version import __version__
from lmleak.errors import ConfigError, RunError
from lmleak.render.cards import (
    LABELS,
    card_detail,
    card_interval,
    card_null,
    card_value,
    describe_scenario,
    k_note,
)
from lmleak.render.headline import EXPLANATIONS, collect_headlines
from lmleak.render.plots import plots_of
from lmleak.render.tables import (
    comparison_table,
    read_parquet_or_none,
    report_k,
    scenarios_table,
    sequence_table,
    skipped_table,
    summary_of,
)
from lmleak.render.users import people_at_risk
from lmleak.render.verdict import (
    METRIC_STAGE,
    STATUS_WORDS,
    Limit,
    Verdict,
    configured_verdict,
    verdict_of,
    verdict_rows,
)
from lmleak.runs import atomic_write_text, check_run, read_summary
from lmleak.words import plural


@dataclass
class ModelView:
    name: str
    headline: list[dict[str, Any]]
    sequences: str | None
    sequences_note: str
    skipped: tuple[str, ...] = ()  # the stages the audit skipped for this model (reasons: the Skipped table)


def _stage_dirs(run_dir: Path, summary: dict[str, Any]) -> dict[str, dict[str, Path]]:
    """Model name -> stage name -> folder of that stage's results."""
    models = summary.get("models")
    if isinstance(models, dict) and models:
        return {
            name: {stage: run_dir / rel for stage, rel in (m.get("stages") or {}).items()}
            for name, m in models.items()
        }
    single: dict[str, Path] = {}
    for stage, marker in (
        ("report", "sequences.parquet"),
        ("exposure", "exposure.parquet"),
        ("mia", "mia.parquet"),
        ("probe", "likelihoods.parquet"),
    ):
        if (run_dir / marker).exists():
            single[stage] = run_dir
    return {"run": single}


def _release_views(
    summary: dict[str, Any], verdict: Verdict, headlines: dict[str, Any]
) -> list[dict[str, Any]]:
    """One release card per model: its verdict, the people affected, and the analyses that did not run."""
    releases = (summary.get("release") or {}).get("models") or {}
    rows = verdict_rows(verdict)
    seen: set[str] = set()
    for r in rows:  # a limit's rationale once per page, under its first row
        if r["rationale"] in seen:
            r["rationale"] = ""
        seen.add(r["rationale"])
    views = []
    for name in headlines:
        rel = releases.get(name) or {}
        status = verdict.model_status(name)
        views.append(
            {
                "name": name,
                "status": status,
                "status_word": STATUS_WORDS[status],
                "rows": [r for r in rows if r["model"] == name],
                "people": people_lines(rel.get("people_affected")),
                "not_run": rel.get("not_run") or [],
            }
        )
    return views


def code_spans(text: str) -> Any:
    """``text`` escaped, with each `backticked` part as ``<code>`` (the fixes name config keys and commands).

    Example:
        >>> str(code_spans("set `level: twin` <now>"))
        'set <code>level: twin</code> &lt;now&gt;'
    """
    from markupsafe import Markup

    parts = html.escape(str(text), quote=False).split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick stays a backtick
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    return Markup("".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts)))


def _of(n: int, total: int | None) -> str:
    return f"{n}" if total is None else f"{n} of {total}"


def _probe_split(probing: dict[str, Any]) -> str:
    """ ": 3 of 37 trained on, 0 of 8 held-out controls (what guessing gives)" — or that no control was
    probed, rather than "0 held-out controls" that reads like a measurement."""
    if "members" not in probing:
        return ""
    members = f"{_of(probing['members'], probing.get('members_probed'))} trained on"
    if probing.get("controls_probed") == 0:
        return f": {members}; no held-out control was probed, so nothing shows what guessing gives"
    n, of = probing["controls"], probing.get("controls_probed")
    controls = plural(n, "held-out control") if of is None else f"{n} of {plural(of, 'held-out control')}"
    return f": {members}, {controls} (what guessing gives)"


def leaked_pii_line(leaked: dict[str, Any]) -> str:
    """The leakage report's "people affected" sentence: trained-on people against held-out people
    (issue 32), or everyone for a report from before the null.

    Example:
        >>> print(leaked_pii_line({"people": 2, "by_type": {"EMAIL": 2}, "k": 1, "min_tokens": 5,
        ...     "members_n": 8, "held_out": 1, "held_out_n": 2, "null_kind": "held_out",
        ...     "owners": {"own": 1, "third_party": 2}}))  # doctest: +NORMALIZE_WHITESPACE
        2 of 8 trained-on people whose PII the model reproduces verbatim in text only they wrote
        (EMAIL 2; 1 sequence holds the writer's own PII, 2 a third party's); 1 of 2 held-out people,
        what the model generalises — leakage report at k = 1, sequences of at least 5 tokens.
    """
    by_type = ", ".join(f"{t} {n}" for t, n in sorted(leaked["by_type"].items(), key=lambda kv: -kv[1]))
    owners = leaked.get("owners") or {}
    whose = ""
    if owners.get("own") or owners.get("third_party"):
        own = owners.get("own", 0)
        whose = (
            f"{plural(own, 'sequence')} {'holds' if own == 1 else 'hold'} the writer's own PII, "
            f"{owners.get('third_party', 0)} a third party's"
        )
    detail = "; ".join(x for x in (by_type, whose) if x)
    tail = f" — leakage report at k = {leaked.get('k')}, sequences of at least {plural(leaked.get('min_tokens'), 'token')}."
    if "null_kind" not in leaked:
        return (
            f"{plural(leaked['people'], 'person')} whose PII the model reproduces verbatim in text only they wrote"
            + (f" ({detail})" if detail else "")
            + tail
        )
    who = f"{leaked['people']} of {plural(leaked.get('members_n'), 'trained-on person')}"
    line = f"{who} whose PII the model reproduces verbatim in text only they wrote" + (
        f" ({detail})" if detail else ""
    )
    kind = leaked.get("null_kind")
    if kind == "held_out":
        line += f"; {leaked.get('held_out')} of {plural(leaked.get('held_out_n'), 'held-out person')}, what the model generalises"
    elif kind == "public_model":
        line += " (counted where the public model finds the text unlikely: the public model is the null)"
    else:
        line += f"; no null, so this cannot be told from what any model would generate: {leaked.get('fix')}"
    return line + tail


def people_lines(people: dict[str, Any] | None) -> list[str]:
    """The release summary's "people affected", one sentence per source."""
    if people is None:
        return []
    lines = []
    leaked = people.get("leaked_pii")
    if leaked is not None:
        lines.append(leaked_pii_line(leaked))
    probing = people.get("probing")
    if probing is not None:
        by_type = ", ".join(f"{t} {n}" for t, n in probing["by_type"].items())
        lines.append(
            (
                f"{probing['people']} of {plural(probing['probed'], 'probed person')}"
                if probing.get("probed") is not None
                else plural(probing["people"], "probed person")
            )
            + " whose PII the model generated verbatim"
            + (f" ({by_type})" if by_type else "")
            + _probe_split(probing)
            + "."
        )
    if not lines:
        lines.append("Not measured: no leakage report with a PII policy and no PII probing ran.")
    return lines


def render_report(
    run_dir: str | Path,
    out_path: str | Path | None = None,
    *,
    show_text: bool = False,
    max_rows: int = 2000,
    limits: tuple[Limit, ...] | None = None,
    allow_not_evaluable: bool = False,
    allow_inconclusive: bool = False,
) -> Path:
    """Write ``report.html`` for a run directory and return its path (owner-only permissions).

    The page opens with the release summary: per model the verdict under ``limits`` (default: the
    ``gate:`` section of the audit config that wrote the run; :mod:`lmleak.render.verdict`, the table
    ``lmleak gate`` prints), the people affected, and every analysis that did not run."""
    import plotly.offline  # lazy: optional [report] extra, and a 0.3 s import
    from jinja2 import Environment, PackageLoader, select_autoescape

    run = Path(run_dir)
    summary = read_summary(run)
    headlines = collect_headlines(run)
    stage_dirs = _stage_dirs(run, summary)
    _refuse_text_of_redacted(run, summary, stage_dirs, show_text)
    views = _model_views(summary, headlines, stage_dirs, show_text, max_rows)
    verdict = (
        configured_verdict(summary, headlines)
        if limits is None
        else verdict_of(
            summary,
            headlines,
            limits,
            allow_not_evaluable=allow_not_evaluable,
            allow_inconclusive=allow_inconclusive,
        )
    )
    env = Environment(
        loader=PackageLoader("lmleak.render", "templates"), autoescape=select_autoescape(["html", "j2"])
    )
    env.filters["code"] = code_spans
    page = env.get_template("report.html.j2").render(
        title=summary.get("title") or run.name,
        subtitle=summary.get("subtitle") or f"{len(views)} model(s) audited",
        show_text=show_text,
        models=views,
        release=_release_views(summary, verdict, headlines),
        verdict_passed=verdict.passed if verdict.checks else None,
        verdict_profile=verdict.profile,
        verdict_allow=verdict.allow_not_evaluable,
        verdict_allow_inconclusive=verdict.allow_inconclusive,
        comparison=comparison_table(headlines),
        plots=plots_of(stage_dirs, run, show_text),
        scenarios=scenarios_table(summary),
        skipped=skipped_table(summary),
        people=people_at_risk(run, summary),  # issue 27: templates/people_at_risk.html.j2
        plotly_js=plotly.offline.get_plotlyjs(),
        version=__version__,
        run_dir=str(run),
        provenance=provenance_lines(summary),
    )
    return atomic_write_text(Path(out_path) if out_path else run / "report.html", page)


def _model_line(name: str, rec: dict[str, Any], cache: dict[str, Any] | None) -> str:
    parts = [f"model {name}"]
    if rec.get("backend") == "http":
        parts.append(f"server {rec.get('server')}, model id {rec.get('model_id')}, tier {rec.get('tier')}")
    else:
        parts.append(
            f"{rec.get('backend') or 'backend not recorded'} on {rec.get('device') or '?'}, {rec.get('dtype') or '?'}"
        )
    fp = rec.get("fingerprint")
    parts.append(
        f"fingerprint {str(fp)[:16]} ({rec.get('hash')})" if fp else "no fingerprint (no local files)"
    )
    if cache:
        parts.append(f"cache: {plural(cache.get('hits'), 'hit')}, {plural(cache.get('misses'), 'miss')}")
    return " · ".join(parts)


def provenance_lines(summary: dict[str, Any]) -> list[str]:
    """The report footer's provenance: each model's backend, device, dtype and fingerprint (an API's
    server, model id and cache use), and the corpus file's size and SHA-256 (``provenance`` in
    ``summary.json``; nothing is computed here).

    Example:
        >>> provenance_lines({"provenance": {"corpus": {"path": "/d/c.jsonl", "size": 1200, "sha256": "ab" * 32}}})
        ['corpus /d/c.jsonl: 1,200 bytes, sha256 abababababababab…']
    """
    prov = summary.get("provenance") or {}
    models = dict(prov.get("models") or {})
    if isinstance(prov.get("model"), dict):
        models[str(summary.get("model") or "model")] = prov["model"]
    caches = {name: (m or {}).get("cache") for name, m in (summary.get("models") or {}).items()}
    lines = [_model_line(name, rec, caches.get(name) or summary.get("cache")) for name, rec in models.items()]
    corpus = prov.get("corpus")
    if isinstance(corpus, dict):
        size = corpus.get("size")
        sha = corpus.get("sha256")
        lines.append(
            f"corpus {corpus.get('path')}: "
            + (f"{size:,} bytes, sha256 {str(sha)[:16]}…" if size is not None and sha else "not hashed")
        )
    return lines


def _refuse_text_of_redacted(
    run: Path, summary: dict[str, Any], stage_dirs: dict[str, dict[str, Path]], show_text: bool
) -> None:
    """Raise ConfigError when ``show_text`` is asked of a run (or a model's stage) that is redacted."""
    redacted = [
        name
        for name, stages in stage_dirs.items()
        if summary.get("redacted") is True or any(summary_of(d).get("redacted") for d in stages.values())
    ]
    if summary.get("redacted") is True and not redacted:
        redacted = [str(summary.get("title") or run.name)]
    if show_text and redacted:
        raise ConfigError(
            f"the report of {', '.join(redacted)} is redacted; a redacted run is rendered without text",
            field="--show-text",
            hint="render without --show-text, or render an unredacted run",
        )


def _model_views(
    summary: dict[str, Any],
    headlines: dict[str, dict[str, Any]],
    stage_dirs: dict[str, dict[str, Path]],
    show_text: bool,
    max_rows: int,
) -> list[ModelView]:
    """One view per audited model: its headline cards and its leaked-sequences table."""
    models_meta = summary.get("models") or {}
    views = []
    for i, (name, headline) in enumerate(headlines.items(), start=1):
        scen = (models_meta.get(name) or {}).get("scenarios") or {}
        k_line = report_k(stage_dirs.get(name, {}).get("report"))
        first_k = _first_k(stage_dirs.get(name, {}).get("report"))
        cards = [
            {
                "label": LABELS[k],
                "value": card_value(k, headline),
                "explanation": EXPLANATIONS[k]
                + card_detail(k, headline)
                + (k_note(k, headline, first_k) or (k_line if METRIC_STAGE.get(k) == "report" else "")),
                "scenario": describe_scenario(
                    scen.get(METRIC_STAGE.get(k, ""), summary.get("scenario") if name == "run" else None)
                ),
                "interval": card_interval(k, headline),
                "null": card_null(k, headline),
            }
            for k in LABELS
            if k in headline or (k == "leakage_epsilon" and "log_leakage_epsilon" in headline)
        ]
        seq_html, note = None, ""
        report_dir = stage_dirs.get(name, {}).get("report")
        seqs = read_parquet_or_none(report_dir / "sequences.parquet") if report_dir else None
        if seqs is not None and len(seqs):
            seq_html, note = sequence_table(seqs, f"seq-{i}", show_text, max_rows)
        skipped = tuple((models_meta.get(name) or {}).get("skipped") or {})
        views.append(ModelView(name, cards, seq_html, note, skipped))
    return views


def _first_k(report_dir: Path | None) -> int | None:
    """The leakage report's headline k (its summary's ``k``), which people at risk are counted at."""
    try:
        k = read_summary(report_dir).get("k") if report_dir is not None else None
    except RunError:
        return None
    return k if isinstance(k, int) and not isinstance(k, bool) else None


def render_run(run_dir: str | Path, out_path: str | Path | None = None, *, show_text: bool = False) -> Path:
    """``lmleak render``: refuse an interrupted or inconsistent run (:func:`~lmleak.runs.check_run`),
    then :func:`render_report`; returns the HTML's path."""
    check_run(run_dir)  # never render an interrupted or inconsistent run as if it were complete
    return render_report(run_dir, out_path, show_text=show_text)
