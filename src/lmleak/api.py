"""The public entry points: one ``run_*`` function per analysis, each returning a typed result.

Every function writes a run directory (``summary.json`` beside its Parquet tables) and returns a
frozen dataclass holding:

- ``summary``: the ``summary.json`` it wrote, read back from disk (so ``result.summary`` is exactly
  what a later ``lmleak gate`` or ``lmleak render`` reads: JSON types, ``schema_version`` and
  ``provenance`` included);
- ``run_dir`` and the paths of the files a caller reads next (``ReportResult.sequences``, ...);
- a few typed views of the summary's headline (``AuditResult.headlines``, ...).

Rules this module keeps:

- thin: each function checks its options, calls the one library function that does the work
  (:func:`lmleak.report.leakage.run_report`, :func:`lmleak.attacks.exposure.run_exposure`,
  :func:`lmleak.attacks.membership.run_membership`, :func:`lmleak.probe.probing.run_probe`,
  :func:`lmleak.audit.runner.run_audit`) and wraps what it wrote; no metric is computed here;
- options come in one frozen dataclass per analysis (:class:`ExposureOptions`,
  :class:`MembershipOptions`, :class:`ProbeOptions`; the report's is
  :class:`~lmleak.report.leakage.ReportSettings`, also named ``ReportConfig``), never as twenty keyword arguments;
- a result's fields are pinned by ``tests/test_public_api.py``: add beside them, rename none.

Example (the fake model memorises the corpus it is given, so it leaks; no torch model is trained)::

    >>> import tempfile, pathlib
    >>> from lmleak import load_corpus, load_model, run_report
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "c.jsonl").write_text(
    ...     '{"user_id": "u1", "text": "call alice at 555-0100 today"}\\n'
    ...     '{"user_id": "u2", "text": "the weather is fine today"}\\n'
    ... )
    >>> result = run_report(load_model(f"fake:{d / 'c.jsonl'}"), load_corpus(d / "c.jsonl"), d / "run")
    >>> result.summary["num_documents"], result.sequences.name, result.sequences.exists()
    (2, 'sequences.parquet', True)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# the library's functions under the public names' prefix: the public ones below wrap them
from lmleak.attacks.exposure import ExposureSettings
from lmleak.attacks.exposure import run_exposure as _run_exposure
from lmleak.attacks.membership import run_membership as _run_membership
from lmleak.attacks.mia_settings import MembershipSettings, method_options
from lmleak.attacks.mia_texts import MembershipTexts
from lmleak.audit.config import AuditConfig, load_config
from lmleak.audit.runner import run_audit as _run_audit
from lmleak.data.corpus import Corpus
from lmleak.errors import ConfigError
from lmleak.probe.probing import run_probe as _run_probe
from lmleak.probe.settings import ProbeSettings
from lmleak.probe.subjects import read_subjects
from lmleak.render.headline import collect_headlines
from lmleak.render.verdict import Verdict, configured_verdict, gate_section, limits_from_config
from lmleak.report.leakage import ReportConfig
from lmleak.report.leakage import run_report as _run_report
from lmleak.runs import read_summary
from lmleak.words import plural

__all__ = [
    "AuditResult",
    "ExposureOptions",
    "ExposureResult",
    "MembershipOptions",
    "MembershipResult",
    "ProbeOptions",
    "ProbeResult",
    "ReportResult",
    "RunResult",
    "run_audit",
    "run_exposure",
    "run_membership",
    "run_probe",
    "run_report",
]


def _present(path: Path) -> Path | None:
    return path if path.exists() else None


def _strings(name: str, value: Collection[str] | None) -> None:
    """Refuse one string where a collection of strings belongs (it would be read letter by letter)."""
    if isinstance(value, str):
        raise ConfigError(
            f"{name} takes a collection of strings, got the string {value!r}",
            field=name,
            hint=f"write {name}=({value!r},)",
        )


# --- results ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunResult:
    """What every ``run_*`` function returns at least.

    Attributes:
        summary: ``run_dir/summary.json`` as written (read back from disk).
        run_dir: the run directory.
    """

    summary: dict[str, Any] = field(repr=False)
    run_dir: Path

    @property
    def summary_path(self) -> Path:
        """``run_dir/summary.json``."""
        return self.run_dir / "summary.json"


@dataclass(frozen=True)
class ReportResult(RunResult):
    """The training data leakage report (paper 001) of one model.

    Attributes:
        sequences: ``sequences.parquet``, one row per distinct sequence of S per k, with its features.
        occurrences: ``occurrences.parquet``, one row per occurrence of a sequence in the corpus.
    """

    sequences: Path
    occurrences: Path

    @classmethod
    def from_run(cls, run_dir: str | Path) -> ReportResult:
        """The result of a report already written to ``run_dir``."""
        run = Path(run_dir)
        return cls(read_summary(run), run, run / "sequences.parquet", run / "occurrences.parquet")


@dataclass(frozen=True)
class ExposureResult(RunResult):
    """Canary exposure (Carlini et al. 2019) of one model.

    Attributes:
        exposure: ``exposure.parquet``, one row per canary (rank, ``exposure_bits``, method).
        placebo_exposure: ``placebo_exposure.parquet``, the never-inserted secrets ranked beside the
            canaries (their null); None when no placebo was drawn (``placebos=0``).
        canaries: each canary's :class:`~lmleak.attacks.exposure.CanaryExposure`, in file order.
    """

    exposure: Path
    placebo_exposure: Path | None
    canaries: tuple[Any, ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class MembershipResult(RunResult):
    """Membership inference against one model.

    Attributes:
        scores: ``mia_scores.parquet``, one row per scored text (every method's score, its label).
        metrics: ``mia_metrics.parquet``, one row per (level, method): AUC, accuracy, TPR at low FPR.
        roc: ``roc.parquet``, one row per (curve, threshold).

    The headline is :attr:`auc` (``mia_auc``: 0.5 is chance) with its 95 % interval :attr:`auc_ci`;
    ``summary["placebo_auc"]`` is the same attack between two halves of the non-members (its null).
    """

    scores: Path
    metrics: Path
    roc: Path

    @property
    def auc(self) -> float | None:
        """``summary["mia_auc"]``: the headline attack's AUC (None when the summary holds none)."""
        value = self.summary.get("mia_auc")
        return None if value is None else float(value)

    @property
    def auc_ci(self) -> tuple[float, float] | None:
        """``summary["mia_auc_ci"]``: its 95 % interval (None when too few users to resample)."""
        ci = self.summary.get("mia_auc_ci")
        return None if ci is None else (float(ci[0]), float(ci[1]))


@dataclass(frozen=True)
class ProbeResult(RunResult):
    """PII probing (ProPILE, paper 003) of one model.

    Attributes:
        likelihoods: ``likelihoods.parquet`` (None when no likelihood was scored: a generation-only
            model, or ``likelihood=False``).
        generations: ``generations.parquet`` (None with ``generate=False``).
    """

    likelihoods: Path | None
    generations: Path | None


@dataclass(frozen=True)
class AuditResult(RunResult):
    """A whole audit: every analysis of a config, for every model, and the HTML report.

    Attributes:
        report_html: ``report.html``, the self-contained report.
        headlines: per model, its headline metrics (``summary["models"][name]["headline"]``:
            ``unique_sequences``, ``max_exposure``, ``mia_auc``, ``dp_epsilon`` ...).
        stage_dirs: per model, each stage that ran and its folder (``models/<name>/<stage>``), where
            the stage's own ``summary.json`` and Parquet tables are.
        verdict: the release verdict under the limits of the config's ``gate:`` section (a
            :class:`~lmleak.render.verdict.Verdict`: ``.passed``, one check per limit and model, each
            pass / fail / inconclusive / not evaluable, decided on its 95 % interval) — the table ``report.html`` opens with and ``lmleak gate RUN``
            exits by; None when the config sets no limits.
    """

    report_html: Path
    headlines: dict[str, dict[str, Any]] = field(repr=False)
    stage_dirs: dict[str, dict[str, Path]] = field(repr=False)
    verdict: Verdict | None = field(default=None, repr=False)

    @classmethod
    def from_run(cls, run_dir: str | Path) -> AuditResult:
        """The result of an audit already written to ``run_dir``."""
        run = Path(run_dir)
        summary = read_summary(run)
        models: Mapping[str, Any] = summary.get("models") or {}
        limited = bool(limits_from_config(gate_section(summary))[0])
        verdict = configured_verdict(summary, collect_headlines(run)) if limited else None
        return cls(
            summary,
            run,
            run / "report.html",
            headlines={name: dict(m.get("headline") or {}) for name, m in models.items()},
            stage_dirs={
                name: {stage: run / rel for stage, rel in (m.get("stages") or {}).items()}
                for name, m in models.items()
            },
            verdict=verdict,
        )


# --- options ------------------------------------------------------------------------------------


#: Settings of :func:`run_exposure`: the one class of ``lmleak exposure``'s options and the audit's
#: ``analyses.exposure`` (:class:`lmleak.attacks.exposure.ExposureSettings`).
ExposureOptions = ExposureSettings


#: Settings of :func:`run_membership`: the one settings class of membership inference (``lmleak mia``'s
#: options and the audit's ``analyses.mia``), :class:`~lmleak.attacks.mia_settings.MembershipSettings`.
MembershipOptions = MembershipSettings


#: Settings of :func:`run_probe`: :class:`lmleak.probe.settings.ProbeSettings`, the fields of
#: ``lmleak probe run``'s options and of the audit YAML's ``analyses.probe``.
ProbeOptions = ProbeSettings


# --- the functions ------------------------------------------------------------------------------


def run_report(
    model: Any,
    corpus: Corpus,
    out_dir: str | Path,
    config: ReportConfig | None = None,
    *,
    public_model: Any | str | None = None,
    model_dir: str | Path | None = None,
) -> ReportResult:
    """The training data leakage report of paper 001: which sequences of the corpus the model
    reproduces that only one user wrote (``unique_sequences``), with PII, and the leakage ε against a
    public model.

    Args:
        model: the audited model (:func:`lmleak.load_model`; SCORE access, or a top-k black box).
        corpus: its training data (:func:`lmleak.load_corpus`).
        out_dir: the run directory (created owner-only; refused when another run holds its lock).
        config: the report's settings (:class:`~lmleak.report.leakage.ReportSettings`, the options of
            ``lmleak report`` and the audit's ``analyses.report``; None: its defaults).
        public_model: a loaded model or a model spec the public reference is read from,
            ``"leave-out"`` (retrain without the owners of unique sequences), ``"base"`` (the base a
            fine-tune recorded) or None (no leakage ε).
        model_dir: the audited model's folder, when ``model`` was loaded from one (``"leave-out"``
            and ``"base"`` read its ``train.json``).

    Returns:
        :class:`ReportResult`; the headline is ``summary["unique_sequences"]`` (at the first k).
    """
    _run_report(
        model, corpus, out_dir, config or ReportConfig(), public_model=public_model, model_dir=model_dir
    )
    return ReportResult.from_run(out_dir)


def run_exposure(
    model: Any,
    canaries: str | Path,
    out_dir: str | Path,
    options: ExposureOptions | None = None,
    *,
    corpus_texts: Iterable[str] | None = None,
) -> ExposureResult:
    """Canary exposure (Carlini et al. 2019 §4): the exact rank of each planted secret among every
    secret of its format, in bits (``log2 |R| - log2 rank``), beside placebo secrets never planted.

    Args:
        model: a model with SCORE access (:func:`lmleak.load_model`).
        canaries: ``canaries.jsonl`` (``secret``, ``prefix``, ``repeats``, ``user_id``), as
            ``lmleak synth customersim --canaries N`` writes it.
        out_dir: the run directory.
        options: :class:`ExposureOptions` (None: the defaults).
        corpus_texts: the training texts, so that no placebo is a secret that follows its prefix
            there (None: not checked).

    Returns:
        :class:`ExposureResult`; the headline is ``summary["max_exposure"]`` (bits).
    """
    _, canary_results = _run_exposure(
        model, canaries, out_dir, options or ExposureOptions(), corpus_texts=corpus_texts
    )
    run = Path(out_dir)
    return ExposureResult(
        read_summary(run),
        run,
        run / "exposure.parquet",
        _present(run / "placebo_exposure.parquet"),
        tuple(canary_results),
    )


def run_membership(
    model: Any,
    members: Sequence[str],
    non_members: Sequence[str],
    out_dir: str | Path,
    options: MembershipSettings | None = None,
    *,
    reference: Any = None,
    mlm: Any = None,
    users: tuple[Sequence[str], Sequence[str]] | None = None,
) -> MembershipResult:
    """Membership inference: how well each attack tells texts the model was trained on
    (``members``) from texts it never saw (``non_members``), as AUC and TPR at low FPR, beside a
    blind baseline that never sees the model.

    Args:
        model: the audited model (:func:`lmleak.load_model`).
        members: training texts.
        non_members: texts from the same distribution the model never saw (best: the held-out
            users' texts, ``holdout.json``).
        out_dir: the run directory.
        options: :class:`MembershipOptions` (the settings of ``lmleak mia``; a ``reference`` path
            there is not loaded here: give the loaded model as ``reference``).
        reference: a loaded reference model (the reference-calibrated attack; Carlini et al. 2021).
        mlm: a loaded masked LM that makes the neighbourhood attack's neighbours.
        users: each text's user, members first: ``(member_users, non_member_users)``, so that the
            intervals, the blind baseline's folds and the placebo keep each user whole.

    Returns:
        :class:`MembershipResult`; the headline is ``summary["mia_auc"]`` (0.5: chance).

    Raises:
        ConfigError: an unknown method, one whose model is missing, or ``users`` not one per text.
    """
    o = options or MembershipSettings()
    if users is not None and (len(users[0]) != len(members) or len(users[1]) != len(non_members)):
        raise ConfigError(
            f"users names {len(users[0])} + {plural(len(users[1]), 'user')} for {len(members)} + "
            f"{plural(len(non_members), 'text')}",
            field="users",
            hint="give one user per text, members first",
        )
    opts = method_options(o, reference=reference, mlm=mlm)
    groups = None if users is None else (list(users[0]), list(users[1]))
    texts = MembershipTexts(list(members), list(non_members), None, groups)
    _run_membership(model, texts, out_dir, o, options=opts)
    run = Path(out_dir)
    return MembershipResult(
        read_summary(run), run, run / "mia_scores.parquet", run / "mia_metrics.parquet", run / "roc.parquet"
    )


def run_probe(
    model: Any,
    subjects: str | Path | Sequence[Mapping[str, Any]],
    out_dir: str | Path,
    options: ProbeOptions = ProbeOptions(),  # noqa: B008 - frozen, so shared safely
    *,
    templates: dict[str, Any] | None = None,
    controls: Collection[str] | None = None,
) -> ProbeResult:
    """PII probing (ProPILE, paper 003): prompt the model with what is known about each person and
    see whether it completes their phone, e-mail or address (exact match) and how likely it finds them.

    Args:
        model: the probed model (:func:`lmleak.load_model`; generation, and SCORE for likelihoods).
        subjects: a subjects JSONL file or ``me.json`` (``lmleak probe build`` writes one), or the
            subjects as dicts (``subject_id``, ``name``, ``email``, ``phone``, ``address`` ...).
        out_dir: the run directory.
        options: :class:`ProbeOptions`.
        templates: mined templates (:func:`lmleak.probe.mining.mine_templates`); None: the options'
            ``template_file``, else the built-in ones.
        controls: user ids the model never saw (``holdout.json``), reported apart as controls.

    Returns:
        :class:`ProbeResult`; the headline is ``summary["exact_match"]`` (the share of items generated
        verbatim).
    """
    _strings("controls", controls)
    people = read_subjects(subjects) if isinstance(subjects, (str, Path)) else [dict(s) for s in subjects]
    _run_probe(model, people, out_dir, options, templates=templates, controls=controls)
    run = Path(out_dir)
    return ProbeResult(
        read_summary(run), run, _present(run / "likelihoods.parquet"), _present(run / "generations.parquet")
    )


def run_audit(
    config: str | Path | AuditConfig,
    *,
    force: bool = False,
    echo: Callable[[str], None] | None = None,
    redact: bool = False,
    redact_key_file: str | Path | None = None,
) -> AuditResult:
    """Every analysis an audit config names, for every model, and the HTML report (``lmleak audit``).

    Args:
        config: an audit YAML file (``lmleak audit --example`` writes a commented one) or a parsed
            :class:`~lmleak.audit.config.AuditConfig`.
        force: rerun stages whose results are complete (by default they are reused).
        echo: receives the progress lines.
        redact: write a redacted run (numbers, labels and keyed-hash ids only; ``lmleak audit --redact``).
        redact_key_file: the HMAC key of the redacted ids (None: ``$LMLEAK_REDACT_KEY``, else random).

    Returns:
        :class:`AuditResult`.
    """
    cfg = config if isinstance(config, AuditConfig) else load_config(config)
    run = _run_audit(cfg, force=force, echo=echo, redact=redact, redact_key_file=redact_key_file)
    return AuditResult.from_run(run)
