"""The CI gate: block a release when a headline metric exceeds its limit.

``lmleak gate RUN --max-unique N --max-leakage-epsilon X --max-exposure B --max-mia-auc A`` exits 0
when every given limit holds for every audited model, 1 otherwise. The table it prints is the
verdict of :mod:`lmleak.render.verdict` — the same function computes the verdict card that opens
the HTML report — with one of Pass / Fail / Inconclusive / Not evaluable per limit, each decided on
its 95 % interval (:mod:`lmleak.render.decision`): an interval that straddles its limit is
*inconclusive*, with the sample size that would settle it, and fails the gate unless
``--allow-inconclusive`` is given. A limit on a metric the run did not measure is *not evaluable*,
with the reason and the line that would measure it, and fails the gate (a gate must not pass because
a stage was skipped) unless ``--allow-not-evaluable`` is given or a profile marks that limit as
applying only where its analysis exists.

Limits come from the options, ``--profile release`` (each limit with its rationale:
:data:`~lmleak.render.verdict.PROFILES`), or, with neither, the ``gate:`` section of the audit config
that wrote the run.

The one-run DP audit (issue 20) adds two checks. Wherever a run measured ``epsilon_lower_bound``
for a model that claims a DP ``ε``, the gate checks the claim itself, at the claimed δ: it fails when
the measured lower bound exceeds the claimed ε (the DP guarantee is then refuted at the audit's
confidence), whatever limits were given. ``--min-epsilon-lower-bound X`` is a floor, not a ceiling:
it fails when the bound is *below* X, and it applies to the models that claim no DP (plain-trained
controls, on which the audit must show its power: a weak audit proves nothing); a positive floor
fails a run without such a model, and ``--min-epsilon-lower-bound 0`` on a DP model's run checks
only its claim.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from lmleak.audit.provenance import refuse_changed_inputs
from lmleak.errors import ConfigError
from lmleak.render.headline import collect_headlines
from lmleak.render.verdict import (
    LIMIT_OPTIONS,
    GateCheck,
    Limit,
    Verdict,
    configured_verdict,
    gate_section,
    limits_from_config,
    resolve_limits,
    verdict_of,
)
from lmleak.runs import check_run, read_summary

__all__ = ["GateCheck", "GateResult", "check_gate", "gate_run", "run_gate"]

#: ``lmleak gate`` result (the verdict table); kept under its old name
GateResult = Verdict

#: the metric names :func:`check_gate` has always taken, as limit options
_METRIC_OPTION = {metric: option for option, (metric, _) in LIMIT_OPTIONS.items()}
_METRIC_OPTION["min_epsilon_lower_bound"] = "min_epsilon_lower_bound"


def _as_limits(limits: Mapping[str, float]) -> tuple[Limit, ...]:
    """Limits keyed by metric (``unique_sequences``) or by option (``max_unique``)."""
    options = {_METRIC_OPTION.get(k, k): v for k, v in limits.items()}
    return resolve_limits(options)


def check_gate(run_dir: str | Path, limits: Mapping[str, float]) -> list[GateCheck]:
    """One check per (model, limited metric) — per (model, metric, k) for the report's metrics, so
    the verdict covers every k of the run, in any order. ``limits`` are keyed by metric
    (``unique_sequences``, ``mia_auc``, ``min_epsilon_lower_bound``...) or by option (``max_unique``).

    Example:
        >>> import tempfile, json, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> api = {"model": {"hash": "probe"}}  # provenance: a model behind an API, nothing to re-hash
        >>> _ = (d / "summary.json").write_text(json.dumps({"unique_sequences": 4, "provenance": api}))
        >>> [c.verdict for c in check_gate(d, {"unique_sequences": 3, "max_exposure": 10})]
        ['fail', 'not_evaluable']
    """
    return list(run_gate(run_dir, limits).checks)


def run_gate(
    run_dir: str | Path,
    limits: Mapping[str, float],
    *,
    allow_not_evaluable: bool = False,
    profile: str | None = None,
    allow_changed: bool = False,
    echo: Callable[[str], None] | None = None,
    allow_inconclusive: bool = False,
) -> GateResult:
    """:func:`check_gate` as one result (``lmleak gate``), under ``profile``'s limits as well;
    an inconclusive limit fails it unless ``allow_inconclusive``;
    refused when the run's model or corpus files changed since it was written
    (:mod:`lmleak.audit.provenance`; ``allow_changed`` overrides and says each change through ``echo``).

    Example:
        >>> import tempfile, json, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> api = {"model": {"hash": "probe"}}  # provenance: a model behind an API, nothing to re-hash
        >>> _ = (d / "summary.json").write_text(json.dumps({"unique_sequences": 4, "provenance": api}))
        >>> r = run_gate(d, {"unique_sequences": 5})
        >>> r.passed, r.status, r.to_dict()["checks"][0]["value"]
        (True, 'pass', 4.0)
        >>> _ = (d / "summary.json").write_text(json.dumps({"mia_auc": 0.55, "mia_auc_ci": [0.4, 0.7], "provenance": api}))
        >>> [run_gate(d, {"mia_auc": 0.6}, allow_inconclusive=a).status for a in (False, True)]
        ['inconclusive', 'pass']
    """
    check_run(run_dir)
    chosen = _as_limits(limits)
    if profile is not None:
        chosen = resolve_limits({lim.option: lim.value for lim in chosen}, profile)
    verdict = verdict_of(
        read_summary(run_dir),
        collect_headlines(run_dir),
        chosen,
        allow_not_evaluable=allow_not_evaluable,
        profile=profile,
        allow_inconclusive=allow_inconclusive,
    )
    refuse_changed_inputs(run_dir, allow_changed=allow_changed, echo=echo)
    return verdict


def gate_run(
    run_dir: str | Path,
    options: Mapping[str, float | None],
    *,
    profile: str | None = None,
    allow_not_evaluable: bool = False,
    allow_changed: bool = False,
    echo: Callable[[str], None] | None = None,
    allow_inconclusive: bool = False,
) -> GateResult:
    """``lmleak gate``: the verdict under the given options and profile, or — with neither — under
    the ``gate:`` section of the audit config that wrote the run (its ``allow_not_evaluable`` and
    ``allow_inconclusive`` too).

    Raises:
        ConfigError: no limit anywhere (exit 2: a gate without limits would pass everything).
    """
    check_run(run_dir)
    given = {k: v for k, v in options.items() if v is not None}
    if given or profile:
        return run_gate(
            run_dir,
            given,
            allow_not_evaluable=allow_not_evaluable,
            profile=profile,
            allow_changed=allow_changed,
            echo=echo,
            allow_inconclusive=allow_inconclusive,
        )
    summary: dict[str, Any] = read_summary(run_dir)
    if not limits_from_config(gate_section(summary))[0]:
        raise ConfigError(
            "no limits given",
            field="limits",
            hint="pass --profile release or at least one of "
            + ", ".join("--" + o.replace("_", "-") for o in LIMIT_OPTIONS)
            + ", or add a `gate:` section to the audit config",
        )
    verdict = configured_verdict(
        summary,
        collect_headlines(run_dir),
        allow_not_evaluable=allow_not_evaluable,
        allow_inconclusive=allow_inconclusive,
    )
    refuse_changed_inputs(run_dir, allow_changed=allow_changed, echo=echo)
    return verdict
