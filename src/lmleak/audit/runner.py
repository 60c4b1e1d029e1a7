"""Run an audit: every configured analysis for every model, into one run directory.

Layout of a run directory::

    RUN/
      config.resolved.yaml          the config with defaults filled in
      audit.log                     what ran, what was skipped, how long each stage took
      summary.json                  schema_version, per model: headline, stages, scenarios, privacy
      models/<name>/<stage>/        each stage's own results (summary.json + Parquet)
      models/<name>/users.parquet   risk per person from those results (lmleak.report.users)
      kart/scenarios.parquet        every stage's KART scenario, one row each
      report.html                   the self-contained report (owner-only)

A redacted audit (``redact: true`` or ``lmleak audit --redact``) runs every stage into a private
temporary folder outside the run and copies only its Parquet tables (through
:func:`~lmleak.report.redaction.redact_table`: numbers, fixed labels and keyed-hash ids) and JSON
summaries (through :func:`~lmleak.report.redaction.redact_json`) into ``models/<name>/<stage>/``;
the report stage runs with its own redaction (no ledger kept), figures, shards, mined templates and
retrained models stay in the temporary folder and are deleted. One key hashes every id of the run;
it comes from the key file, ``$LMLEAK_REDACT_KEY`` or is random and discarded, and is never written.

A stage is skipped on a rerun when its folder holds ``.complete.json`` with the same fingerprint
(the stage's options, the model, the corpus path); change an option and that stage runs again.
"""

# long: the Auditor's stage methods share its loaded corpus, models, redactor and scratch folder, which a split would pass around
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lmleak.attacks.exposure import run_exposure
from lmleak.attacks.extraction import run_extraction
from lmleak.attacks.membership import run_membership
from lmleak.attacks.mia_methods import TEXT_ONLY_METHODS
from lmleak.attacks.mia_settings import method_options
from lmleak.attacks.mia_texts import membership_texts
from lmleak.audit.config import AuditConfig, enabled_stages, mia_settings, to_dict, validate_config
from lmleak.audit.dp_audit import DPAuditSettings, run_dp_audit
from lmleak.audit.nonmembers import NO_NON_MEMBERS
from lmleak.audit.release import release_summary
from lmleak.data.holdout import read_holdout
from lmleak.data.loaders import load_corpus
from lmleak.errors import CapabilityError, ConfigError
from lmleak.fingerprints import cache_record, model_record, run_provenance
from lmleak.models.adapters import recorded_base
from lmleak.models.base import Capability, require
from lmleak.models.device import requested_device, use_device
from lmleak.models.loading import load_model
from lmleak.probe.commands import choose_level, eligible_by_level
from lmleak.probe.mining import mine_templates, write_templates
from lmleak.probe.probing import run_probe
from lmleak.probe.settings import ProbeSettings
from lmleak.probe.subjects import control_users, read_subjects
from lmleak.render.headline import headline_from_summary
from lmleak.render.html import render_report
from lmleak.report.leakage import never_seen_null, run_report
from lmleak.report.redaction import (
    Redactor,
    private_scratch,
    redact_stage_dir,
    redactor_from,
    unredacted_leftovers,
)
from lmleak.report.users import USER_STAGES, users_of_model
from lmleak.runs import (
    INCOMPLETE,
    atomic_write_json,
    atomic_write_text,
    open_run,
    read_summary,
    write_parquet,
    write_summary,
)
from lmleak.scenarios import scenario_record
from lmleak.scenarios.describe import anonymization_of, privacy_unit_of
from lmleak.train.confidentiality import measured_bayesian_confidentiality
from lmleak.train.trainer import load_train_config

log = logging.getLogger("lmleak.audit")
COMPLETE = ".complete.json"
SCORING_KEYS = ("bos_token_id", "scoring_convention")  # as lmleak.models.base.scoring_convention writes them


def _fingerprint(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


def stage_done(stage_dir: Path, fingerprint: str) -> bool:
    marker = stage_dir / COMPLETE
    if not marker.exists() or not (stage_dir / "summary.json").exists():
        return False
    try:
        return json.loads(marker.read_text()).get("fingerprint") == fingerprint
    except json.JSONDecodeError:
        return False


def with_anonymization(
    record: dict[str, Any] | None, anonymization: str, *, access: str | None = None, note: str | None = None
) -> dict[str, Any] | None:
    """The same KART record with the A factor the audit knows from the model's training (and, for a model
    behind an API, the access the API grants and a note naming its tier)."""
    if not record:
        return record

    try:
        return scenario_record(
            attack=record["attack"],
            knowledge=record.get("knowledge", ()),
            anonymization=anonymization,
            resources=record.get("resources", ()),
            access=access or record["access"],
            target=record["target"],
            notes="; ".join(x for x in (record.get("notes"), note) if x) or None,
        )
    except Exception:  # a record from an older schema: keep it as written
        return record


#: What a model's ``privacy.json`` (through :meth:`AuditRunner._privacy`) adds to its headline: the DP
#: budget with its unit, and for a sequence-level model the bound it gives its largest user by group
#: privacy (issue 27); CRT's confidentiality bound and what it assumed (issue 26).
PRIVACY_HEADLINE_KEYS = (
    "dp_epsilon",
    "dp_delta",
    "privacy_unit",
    "group_privacy_epsilon_largest_user",
    "largest_user_sequences",
    "confidentiality_epsilon",
    "confidentiality_gamma",
    "confidentiality_gamma_basis",
    "confidentiality_delta2_assumed",
)


class Auditor:
    """Runs the stages of one config; see the module docstring."""

    def __init__(
        self,
        cfg: AuditConfig,
        *,
        force: bool = False,
        echo: Callable[[str], None] | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.cfg = cfg
        self.force = force
        self.echo = echo or (lambda s: None)
        # not created here: run_audit loads the corpus first, so a bad corpus leaves no run behind
        self.run = Path(cfg.resolve(cfg.out) or cfg.out)
        self.redactor = redactor
        self._corpus: Any = None
        self._scratch: Path | None = None  # a redacted run's private folder outside the run

    # ------------------------------------------------------------------ helpers
    def corpus(self) -> Any:
        if self._corpus is None:
            c = self.cfg.corpus
            self._corpus = load_corpus(
                self.cfg.resolve(c.path),
                format=c.format,
                text_field=c.text_field,
                user_field=c.user_field,
                doc_field=c.doc_field,
                skip_bad_rows=c.skip_bad_rows,
            )
        return self._corpus

    def enabled(self) -> list[tuple[str, Any]]:
        return enabled_stages(self.cfg)

    # ------------------------------------------------------------------ stages
    def stage_report(self, model: Any, model_path: str, spec: Any, out: Path) -> None:
        public = self.cfg.public_model
        # the null of leaked PII: the model's held-out users (holdout.json, read by run_report from
        # the model folder), else the people it never saw (analyses.mia.non_members alone, --holdout)
        model_dir = model_path if Path(model_path).is_dir() else None
        mia, c, people = self.cfg.analyses.mia, self.cfg.corpus, None
        if mia is not None and mia.non_members and not mia.members:
            people = load_corpus(
                self.cfg.resolve(mia.non_members),
                text_field=c.text_field,
                user_field=c.user_field,
                doc_field=c.doc_field,
            )
        run_report(
            model,
            self.corpus(),
            out,
            dataclasses.replace(spec, redact=self.redactor is not None),
            public_model=self.cfg.resolve(public) if public else None,
            model_dir=model_dir,
            redactor=self.redactor,
            never_seen=never_seen_null(model_dir, self.corpus(), people),  # as `lmleak report --holdout`
        )

    def stage_exposure(self, model: Any, model_path: str, spec: Any, out: Path) -> None:
        # placebo canaries beside the real ones: never a secret that follows a prefix in the corpus
        canaries = self.cfg.resolve(spec.canaries) or ""
        run_exposure(model, canaries, out, spec, corpus_texts=self.corpus().texts())

    def stage_mia(self, model: Any, model_path: str, spec: Any, out: Path) -> None:
        ref = self.cfg.public_model if self.cfg.public_model not in (None, "leave-out") else None
        if ref == "base":  # the fine-tuned model's recorded base (lmleak train --base)
            ref = recorded_base(model_path)
        c = self.cfg.corpus
        texts = membership_texts(  # the one builder of the two sides, as `lmleak mia` (issue 34)
            model_path,
            members=self.cfg.resolve(spec.members),
            non_members=self.cfg.resolve(spec.non_members),
            corpus=self.corpus(),
            field=spec.field,
            corpus_name=str(self.cfg.resolve(c.path)),
            load=lambda path: load_corpus(
                path, text_field=c.text_field, user_field=c.user_field, doc_field=c.doc_field
            ),
            where="analyses.mia.non_members" if spec.non_members else "corpus.path",
        )
        if texts.source is not None:
            self.echo(f"  {texts.source}")
        reference = load_model(self.cfg.resolve(ref)) if ref else None
        options = method_options(spec, reference=reference, resolve=lambda p: self.cfg.resolve(p) or p)
        # groups: users (held-out split, or files naming user_id); None: grouped by shared PII
        run_membership(model, texts, out, spec, options=options)

    def _extra_fingerprint(self, stage: str) -> tuple[Any, ...]:
        """Options another config section adds to a stage (so changing them reruns it)."""
        m = self.cfg.analyses.membership
        return (dataclasses.asdict(m),) if stage == "mia" and m is not None else ()

    @staticmethod
    def check_access(model: Any, stage: str, spec: Any) -> None:
        """Raise :class:`CapabilityError` when a top-k-limited model cannot give the report's largest k
        (its ranks beyond k are unknown, so "in the top k'" for k' > k would be wrong)."""
        caps: frozenset[Any] = getattr(model, "capabilities", frozenset())
        k_max = getattr(model, "k", None)
        if stage == "report" and Capability.SCORE not in caps and isinstance(k_max, int) and k_max:
            if max(spec.k) > k_max:
                raise CapabilityError(
                    f"the tab attack at k = {max(spec.k)} needs the top {max(spec.k)} tokens, but "
                    f"model '{model.name}' returns only its top {k_max}; use report k <= {k_max}"
                )

    def mia_source(self, model_path: str, model: Any = None) -> str | None:
        """Why the MIA stage cannot run for this model (None when it can). ``model``, when already
        loaded (a model behind an HTTP API is), is checked first: a tier without per-token scores
        cannot run it whatever the member files."""
        spec = mia_settings(self.cfg)
        if spec is None:
            return None
        if model is not None:
            text_only = spec.methods is not None and set(spec.methods) <= set(TEXT_ONLY_METHODS)
            try:  # SaMIA alone needs generated text only; every other method per-token scores
                require(
                    model,
                    Capability.GENERATE if text_only else Capability.SCORE,
                    attack="membership inference",
                )
            except CapabilityError as e:
                return str(e)
        if spec is not None and spec.non_members:  # with members: two files; alone: people never seen
            return None
        holdout = read_holdout(model_path)
        if holdout is None or not holdout.users:
            return NO_NON_MEMBERS
        return None

    def stage_probe(self, model: Any, model_path: str, spec: ProbeSettings, out: Path) -> None:
        assert spec.subjects is not None  # a probe without subjects is skipped before its stage
        # the first `limit` subjects, as `probe run` reads them: the level is chosen from those probed
        subjects = read_subjects(self.cfg.resolve(spec.subjects))[: spec.limit]
        if spec.template_file is not None:  # the file (relative to the config), or mined from the corpus
            spec = dataclasses.replace(spec, template_file=self._template_file(spec, subjects))
        level, warning = choose_level(
            subjects, spec.level, spec.targets
        )  # issue 26: none that probes nothing silently
        if warning:
            self.echo(f"[yellow]warning:[/] {warning}")
            log.warning("%s", warning)
        run_probe(
            model,
            subjects,
            out,
            dataclasses.replace(spec, level=level),
            controls=control_users(model_path, subjects),  # probe run's reader of holdout.json
        )

    # ------------------------------------------------------------------ issue 20 stages
    def dp_audit_source(self, model_path: str) -> str | None:
        """Why the DP audit cannot run for this model (None when it can): it re-runs the model's own
        training recipe with canaries, so it needs the ``train.json`` of an lmleak-trained model."""
        if Path(model_path).is_dir() and load_train_config(model_path) is not None:
            return None
        return (
            "a one-run DP audit retrains the model's recipe with canaries, and this model records none "
            "(train.json of `lmleak train`); audit the training algorithm with `lmleak dp-audit run`"
        )

    def stage_dp_audit(self, model: Any, model_path: str, settings: DPAuditSettings, out: Path) -> None:
        train_cfg = load_train_config(model_path)
        assert train_cfg is not None  # checked by dp_audit_source() before the stage runs
        run_dp_audit(self.cfg.resolve(self.cfg.corpus.path) or "", out, train_cfg, settings, progress=False)

    def stage_extract(self, model: Any, model_path: str, spec: Any, out: Path) -> None:
        ref = self.cfg.public_model if self.cfg.public_model not in (None, "leave-out") else None
        run_extraction(
            model,
            self.corpus(),
            out,
            dataclasses.replace(spec, prefixes=self.cfg.resolve(spec.prefixes)),
            public_model=load_model(self.cfg.resolve(ref)) if ref else None,
            anonymization=anonymization_of(model_path if Path(model_path).is_dir() else None),
        )

    def _template_file(self, spec: Any, subjects: list[dict[str, Any]]) -> str:
        """The probe's templates: a file named in the config, or mined once per run from its corpus."""
        if spec.template_file != "mined":
            return str(self.cfg.resolve(spec.template_file))
        # mined templates quote the corpus: a redacted run keeps them in its private folder
        path = (self._scratch or self.run) / "probe-templates.yaml"
        if not path.exists():
            write_templates(mine_templates(self.corpus(), subjects), path)
            log.info("probe templates mined from the corpus into %s", path)
        return str(path)

    # ------------------------------------------------------------------ the run
    def __call__(self) -> Path:
        import yaml

        handler = logging.FileHandler(self.run / "audit.log")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        try:
            atomic_write_text(
                self.run / "config.resolved.yaml", yaml.safe_dump(to_dict(self.cfg), sort_keys=False)
            )
            summary: dict[str, Any] = {
                "title": Path(self.run).name,
                "config": to_dict(self.cfg),
                "models": {},
                "redacted": self.redactor is not None,
                **({"redaction": self.redactor.describe()} if self.redactor is not None else {}),
            }
            records: dict[str, Any] = {}
            for m in self.cfg.models:
                summary["models"][m.name] = self._audit_model(
                    m.name, self.cfg.resolve(m.path) or m.path, records
                )
            # issue 26: people affected and every analysis that did not run, for the release summary
            summary["release"] = release_summary(
                self.cfg, self.run, summary["models"], self._subjects_of, self._probe_levels()
            )
            self._kart_table(summary)
            corpus = self.cfg.resolve(self.cfg.corpus.path)
            summary["provenance"] = {**run_provenance(corpus=corpus), "models": records}
            write_summary(self.run, summary)

            render_report(self.run, show_text=self.cfg.render.show_text)
            log.info("report written to %s", self.run / "report.html")
        finally:
            log.removeHandler(handler)
            handler.close()
        return self.run

    def _subjects_of(self, name: str) -> tuple[dict[str, str], set[str]]:
        """The probed subjects' users (subject id -> user id) and the model's held-out users, as the
        run's tables name them (keyed hashes in a redacted run): probing's members vs controls."""
        spec = self.cfg.analyses.probe
        if spec is None or not spec.subjects:
            return {}, set()
        path = next(self.cfg.resolve(m.path) or m.path for m in self.cfg.models if m.name == name)
        holdout = read_holdout(path) if Path(path).is_dir() else None
        redactor = self.redactor

        def ids(x: str) -> str:
            return x if redactor is None else redactor.hash(x, kind="user_id")

        subjects = read_subjects(self.cfg.resolve(spec.subjects))
        user_of = {ids(s["subject_id"]): ids(str(s.get("user_id", s["subject_id"]))) for s in subjects}
        return user_of, {ids(u) for u in (holdout.users if holdout else ())}

    def _probe_levels(self) -> dict[str, int] | None:
        """Subjects eligible at each probing level (None without probing): what a probe that ran on
        nothing could have probed instead."""
        spec = self.cfg.analyses.probe
        if spec is None or not spec.subjects:
            return None
        return eligible_by_level(read_subjects(self.cfg.resolve(spec.subjects)))

    def _run_stage(self, stage: str, model: Any, path: str, spec: Any, out: Path) -> None:
        """One stage into ``out``; redacted: into the private folder, then copied redacted."""
        run_stage = getattr(self, f"stage_{stage}")
        if self.redactor is None or stage == "report":  # the report redacts itself (no ledger kept)
            run_stage(model, path, spec, out)
            return
        assert self._scratch is not None
        work = self._scratch / "stages" / out.relative_to(self.run)
        try:
            run_stage(model, path, spec, work)
            redact_stage_dir(work, out, self.redactor)
        finally:
            shutil.rmtree(work, ignore_errors=True)  # texts, shards, a retrained model: gone now

    def _audit_model(self, name: str, path: str, records: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run (or reuse) every enabled stage for one model; returns its entry of ``summary.json`` and
        puts its provenance record (:func:`~lmleak.fingerprints.model_record`) in ``records``."""
        stages: dict[str, str] = {}
        skipped: dict[str, str] = {}
        headline: dict[str, Any] = {}
        scenarios: dict[str, Any] = {}
        anon = anonymization_of(path if Path(path).is_dir() else None)
        model, api = self._load_api_model(name, path)
        membership: dict[str, Any] | None = None
        scoring: dict[str, Any] = {}  # the start token the stages scored after (docs/membership.md)
        for stage, spec in self.enabled():
            out = self.run / "models" / name / stage
            why_not = self._why_not(stage, path, model)  # known before loading the model, else from its run
            if not why_not:
                model, why_not = self._run_or_reuse(name, stage, spec, path, out, model)
            if why_not:
                self._skip(name, stage, why_not, skipped)
                continue
            stages[stage] = str(out.relative_to(self.run))
            stage_summary = read_summary(out)
            headline.update(headline_from_summary(stage_summary))
            scoring.update({k: stage_summary[k] for k in SCORING_KEYS if k in stage_summary})
            if stage == "mia":  # every method's AUC and the blind baseline beside them (docs/membership.md)
                membership = {
                    k: stage_summary.get(k)
                    for k in ("mia_auc_by_attack", "blind_baseline_auc", "blind_baseline_warning")
                }
            scenarios[stage] = with_anonymization(stage_summary.get("scenario"), anon, **api)
        privacy = self._privacy(path)
        headline.update({k: v for k, v in privacy.items() if k in PRIVACY_HEADLINE_KEYS and v is not None})
        out_model: dict[str, Any] = {
            "path": path,
            "headline": headline,
            "stages": stages,
            "skipped": skipped,
            "scenarios": scenarios,
            "privacy": privacy,
            **scoring,
            **({"membership": membership} if membership else {}),
        }
        self._add_users(name, path, out_model)  # issue 27: users.parquet, risk per person
        if api and model is not None:  # the tier and what this run asked of the API (never the key)
            out_model["access"] = model.describe()
            out_model["cache"] = cache_record(model)
            log.info("%s: %s", name, out_model["access"])
        if records is not None:
            records[name] = model_record(model if model is not None else path)
        return out_model

    def _load_api_model(self, name: str, path: str) -> tuple[Any, dict[str, Any]]:
        """A model behind an HTTP API, loaded first (its tier decides what can run), and its access note."""
        if not path.startswith(("http://", "https://")):
            return None, {}  # a local model loads on its first stage that is not complete
        model = load_model(path)
        api = {"access": model.access, "note": f"model behind an HTTP API, tier '{model.tier}'"}
        self.echo(f"{name}: HTTP API tier '{model.tier}' (grants {model.access} access)")
        log.info("%s: HTTP API %s, tier %s", name, model.base_url, model.tier)
        return model, api

    def _why_not(self, stage: str, path: str, model: Any) -> str | None:
        """Why ``stage`` cannot run for this model, known before loading it (None when it can)."""
        if stage == "mia":
            return self.mia_source(path, model)
        if stage == "dp_audit":
            return self.dp_audit_source(path)
        return None

    def _skip(self, name: str, stage: str, why_not: str, skipped: dict[str, str]) -> None:
        """Say and log in one line why a stage was skipped, and record it in ``skipped``."""
        self.echo(f"[yellow]{name}/{stage}: skipped[/] — {why_not}")
        log.warning("%s/%s: skipped: %s", name, stage, why_not)
        skipped[stage] = why_not

    def _stage_fingerprint(self, stage: str, spec: Any, path: str) -> str:
        """What makes a stage's results complete: its options, the model, the corpus, the public model."""
        return _fingerprint(
            stage,
            dataclasses.asdict(spec),
            path,
            self.cfg.corpus.path,
            self.cfg.public_model,
            *self._extra_fingerprint(stage),
            # a redacted stage is complete only under the same key (its ids must join the others');
            # an HMAC of a constant names the key without revealing it
            *(() if self.redactor is None else ("redacted", self.redactor.hash("", kind="run-key"))),
        )

    def _run_or_reuse(
        self, name: str, stage: str, spec: Any, path: str, out: Path, model: Any
    ) -> tuple[Any, str | None]:
        """Run one stage into ``out`` unless it is complete; returns the (maybe now loaded) model and
        why the stage was skipped (None when its results are there)."""
        fp = self._stage_fingerprint(stage, spec, path)
        if getattr(model, "fingerprint", None) is not None:  # an API: its URL may now serve another model
            fp = _fingerprint(fp, model.fingerprint)
        if not self.force and stage_done(out, fp):
            self.echo(f"[dim]{name}/{stage}: complete, skipped[/]")
            log.info("%s/%s: complete (fingerprint %s), skipped", name, stage, fp)
            return model, None
        if model is None:
            model = load_model(path)
        self.echo(f"[bold]{name}/{stage}[/]: running")
        t0 = time.perf_counter()
        try:
            self.check_access(model, stage, spec)
            self._run_stage(stage, model, path, spec, out)
        except CapabilityError as e:  # raised before any work: the model's access cannot support it
            (out / INCOMPLETE).unlink(missing_ok=True)  # nothing half-written; else the run is refused
            return model, str(e)
        seconds = time.perf_counter() - t0
        atomic_write_json(out / COMPLETE, {"fingerprint": fp, "seconds": seconds})
        log.info("%s/%s: done in %.1f s", name, stage, seconds)
        return model, None

    def _add_users(self, name: str, path: str, out_model: dict[str, Any]) -> None:
        """``models/<name>/users.parquet`` from the finished stages' files (no model runs); its
        summary record (``path`` relative to the run) as the model's ``users``, and ``users_at_risk``
        and ``users_total`` in its headline. Nothing when no stage it reads ran."""
        stages = out_model["stages"]
        if not set(stages) & set(USER_STAGES):
            return
        probe = self.cfg.analyses.probe
        record = users_of_model(
            self.run / "models" / name,
            {stage: self.run / rel for stage, rel in stages.items()},
            corpus=self.corpus(),
            model_dir=path,
            subjects=self.cfg.resolve(probe.subjects) if probe is not None and probe.subjects else None,
            redactor=self.redactor,
        )
        if record is not None:
            out_model["users"] = {**record, "path": f"models/{name}/users.parquet"}
            out_model["headline"].update({k: record[k] for k in ("users_at_risk", "users_total")})

    def _privacy(self, path: str) -> dict[str, Any]:
        """The model's ``privacy.json`` as the summary's ``privacy``: its DP ε with the privacy unit, and
        for CRT / selective DP the Bayesian confidentiality bound at the recorded 95 % upper bound of
        γ (Proposition 6; :func:`~lmleak.train.confidentiality.measured_bayesian_confidentiality`)."""
        p = Path(path) / "privacy.json"
        if not p.exists():
            return {}
        priv = json.loads(p.read_text())
        out = {
            "mode": priv.get("mode"),
            "dp_epsilon": priv.get("epsilon"),
            "dp_delta": priv.get("delta"),
            "privacy_unit": privacy_unit_of(priv),
            "gamma": priv.get("gamma"),
            "tokenizer_source": priv.get("tokenizer_source"),
            # issue 27: the unit the ε protects (one person, one sequence) and how batches were drawn
            **{k: priv[k] for k in ("privacy_unit", "max_sequences_per_user", "sampler") if k in priv},
            # a sequence-level ε is, per person, only a group-privacy bound over their k sequences
            **{k: priv[k] for k in priv if k.startswith("group_privacy_") or k == "largest_user_sequences"},
        }
        # Prop. 6 needs detected secrets removed (CRT); selective DP keeps them under DP only (issue 26)
        if priv.get("epsilon") is not None and priv.get("mode") == "crt":
            bound = measured_bayesian_confidentiality(
                float(priv["epsilon"]),
                float(priv.get("delta") or 0.0),
                priv.get("gamma"),
                gamma_upper=priv.get("gamma_upper95") if priv.get("gamma_source") == "measured" else None,
                support=priv.get("gamma_support"),
            )
            out["confidentiality_epsilon"], out["confidentiality_delta"] = bound["epsilon"], bound["delta"]
            out["confidentiality_reason"] = bound["reason"]
            out["confidentiality_gamma"] = bound["gamma_used"]
            out["confidentiality_gamma_basis"] = bound["gamma_basis"]
            out["gamma_source"] = priv.get("gamma_source")
            delta2 = priv.get(
                "delta2_upper95"
            )  # Theorem 8.3 adds δ₂, π_c's miss rate (trained with --secrets)
            if delta2 is not None and bound["delta"] is not None:
                out["confidentiality_delta"] = min(1.0, bound["delta"] + float(delta2))
                out["confidentiality_delta2"], out["confidentiality_delta2_assumed"] = float(delta2), False
                out["confidentiality_note"] = (
                    f"Theorem 8.3 adds delta2 = {float(delta2):.3g} to delta: the 95% upper bound of the "
                    f"conservative policy's misses ({priv.get('delta2_misses')} of {priv.get('delta2_support')} secrets)"
                )
            else:
                out["confidentiality_delta2_assumed"] = True
                out["confidentiality_note"] = (
                    "Theorem 8.3 adds delta2 (the conservative policy's miss rate) to delta; it is not measured "
                    "and 0 is assumed: measure it with `lmleak pii evaluate --policy conservative --secrets ...` "
                    "(1 - sentence_recall), or train with --secrets"
                )
        return out

    def _kart_table(self, summary: dict[str, Any]) -> None:
        import pandas as pd

        rows = []
        for name, m in summary["models"].items():
            for stage, rec in (m.get("scenarios") or {}).items():
                if rec:
                    rows.append(
                        {
                            "model": name,
                            "stage": stage,
                            "attack": rec.get("attack"),
                            "knowledge": ", ".join(rec.get("knowledge") or []) or "∅",
                            "anonymization": rec.get("anonymization"),
                            "resources": ", ".join(rec.get("resources") or []) or "∅",
                            "access": rec.get("access"),
                            "target": str(rec.get("target")),
                            "notation": rec.get("notation"),
                        }
                    )
        if rows and self.cfg.analyses.kart:
            write_parquet(pd.DataFrame(rows), self.run / "kart" / "scenarios.parquet")


def run_audit(
    cfg: AuditConfig,
    *,
    force: bool = False,
    echo: Callable[[str], None] | None = None,
    redact: bool = False,
    redact_key_file: str | Path | None = None,
) -> Path:
    """Run every configured stage (skipping complete ones) and write the report; returns the run dir.

    ``redact`` (or the config's ``redact: true``) writes a redacted run (module docstring), its ids
    hashed under the key of ``redact_key_file``, else ``$LMLEAK_REDACT_KEY``, else a random one.
    The corpus is loaded and the key read before the run directory is created.

    Models load onto ``cfg.device`` (by default a GPU when torch sees one), unless ``lmleak --device``
    or a caller's :func:`~lmleak.models.device.use_device` already chose.
    """

    validate_config(cfg)  # every range, file and model, before the run directory is touched
    redact = redact or cfg.redact
    if redact_key_file is not None and not redact:
        raise ConfigError("--redact-key-file needs --redact (or redact: true)", field="--redact-key-file")
    if redact and cfg.render.show_text:  # --redact over a config that asks for text
        raise ConfigError(
            "a redacted audit is rendered without text",
            field="render.show_text",
            hint="set render.show_text: false, or run without --redact",
        )
    run_dir = Path(cfg.resolve(cfg.out) or cfg.out)
    redactor = redactor_from(redact_key_file, run_dir=run_dir) if redact else None
    if redactor is not None:
        leftovers = unredacted_leftovers(run_dir) + [
            str(p.relative_to(run_dir)) for p in _unredacted_stages(run_dir)
        ]
        if leftovers:
            raise ConfigError(
                f"{run_dir} already holds unredacted results ({', '.join(leftovers[:3])})",
                field="out",
                hint="give a new, empty run directory for a redacted audit",
            )
    explicit = requested_device() != "auto"  # the command line wins over the config file
    auditor = Auditor(cfg, force=force, echo=echo, redactor=redactor)
    auditor.corpus()  # a corpus that cannot be read fails here, before the run directory exists
    with (
        use_device(None if explicit else cfg.device),
        open_run(auditor.run, redacted=redactor is not None),
    ):  # locked, marked incomplete until done
        if redactor is None:
            return auditor()
        with private_scratch(auditor.run) as scratch:  # inside the run, owner-only (issue 33)
            auditor._scratch = scratch
            try:
                return auditor()
            finally:
                auditor._scratch = None


def _unredacted_stages(run_dir: Path) -> list[Path]:
    """Stage summaries of an earlier unredacted audit in ``run_dir``."""
    found = []
    for p in sorted(run_dir.glob("models/*/*/summary.json")):
        try:
            redacted = json.loads(p.read_text(encoding="utf-8")).get("redacted")
        except (OSError, ValueError):
            redacted = None
        if redacted is not True:
            found.append(p.parent)
    return found
