"""The audit config: one YAML file that names the corpus, the models, and the analyses to run.

Unknown keys are rejected with the field path and a "did you mean" suggestion; every value is
type-checked and range-checked (``k >= 1``, ``t, p >= 0``...), and every file and model the config
names must exist, all before anything runs: an error names the file, the key and the rule. The YAML
is parsed with alias bounds (:mod:`lmleak.safe_yaml`). The resolved config (defaults filled in) is
written into the run directory so the run is a complete record of what was done.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmleak.attacks.dp_audit import DPAuditSettings
from lmleak.attacks.exposure import ExposureSettings
from lmleak.attacks.extraction import ExtractSettings
from lmleak.attacks.mia_methods import parse_methods
from lmleak.attacks.mia_settings import MembershipSettings
from lmleak.data.loaders import FORMATS
from lmleak.errors import ConfigError, did_you_mean
from lmleak.models.device import check_device_name
from lmleak.probe.settings import ProbeSettings
from lmleak.render.limits import GateSettings
from lmleak.report.leakage import ReportSettings
from lmleak.safe_yaml import load_yaml_file
from lmleak.settings import Settings, build, commented, noted_lines, setting, yaml_scalar

EXAMPLE = """\
# lmleak audit config: `lmleak audit THIS_FILE` runs every analysis listed under `analyses`.
# Paths are relative to this file. Stages whose results are complete are skipped on a rerun.
out: audit-run                  # run directory (created owner-only)

corpus:                         # the training data of the audited model(s)
  path: corpus.jsonl            # JSONL/CSV/Parquet, a folder of <user>/*.txt, or a saved HF dataset
  text_field: text
  user_field: user_id
  doc_field: doc_id             # optional in the data: derived stably when absent
  skip_bad_rows: false          # true: count and report bad rows instead of failing

models:                         # the model(s) under audit
  - name: my-model
    path: path/to/hf-model-dir  # an HF causal LM directory, a .gguf file, an lmleak model, or smollm2-135m

public_model: null              # a reference model for leakage epsilon: a path, smollm2-135m, leave-out, or base
                                # (a fine-tune's recorded base)
device: auto                    # where models run: auto (a GPU when torch sees one), cpu, cuda, cuda:N
redact: false                   # true: every stage writes only numbers, labels and keyed-hash ids (no text,
                                # token ids, secrets or plain ids; key: --redact-key-file, $LMLEAK_REDACT_KEY
                                # or random and discarded); same as `lmleak audit --redact`

analyses:
"""


@dataclass(frozen=True, slots=True)
class CorpusSpec:
    path: str
    format: str | None = None
    text_field: str = "text"
    user_field: str = "user_id"
    doc_field: str = "doc_id"
    skip_bad_rows: bool = False


@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str
    path: str


@dataclass(frozen=True)
class ExposureSpec(ExposureSettings):
    """``analyses.exposure``: the settings of ``lmleak exposure`` and the canaries file they rank."""

    canaries: str | None = setting(
        None,
        help="canaries.jsonl (null: no exposure stage).",
        cli=False,
        note="canaries.jsonl (text, secret, prefix, ...)",
    )


#: ``analyses.mia`` (and its older spelling ``analyses.membership``, merged into it): the one settings
#: class of membership inference, :class:`~lmleak.attacks.mia_settings.MembershipSettings`
MiaSpec = MembershipSettings


@dataclass(frozen=True, slots=True)
class AnalysesSpec:
    report: ReportSettings | None = None
    exposure: ExposureSpec | None = None
    mia: MembershipSettings | None = None
    # the older section of the mia stage's methods: merged into mia (keys given in mia win)
    membership: MembershipSettings | None = None
    probe: ProbeSettings | None = None  # the same class as `lmleak probe run`'s options
    dp_audit: DPAuditSettings | None = None
    extract: ExtractSettings | None = None
    kart: bool = True


@dataclass(frozen=True, slots=True)
class RenderSpec:
    show_text: bool = False


#: ``gate:``: the limits of the release verdict, the same class ``lmleak gate``'s options come from
GateSpec = GateSettings

#: the comments beside the keys after ``analyses:`` that are no settings field's (EXAMPLE's and the
#: quick audit's config's)
KEY_NOTES = {
    "render.show_text": "the report shows leaked text only when true (redacted by default)",
    "gate": "the release verdict: the HTML opens with it, `lmleak gate RUN` exits by it",
}

#: the comment beside each analysis under ``analyses:`` (the EXAMPLE config's and the config a
#: quick audit writes); the keys inside a section carry their own, their fields' notes
SECTION_NOTES = {
    "report": "training data leakage report (Inan et al.)",
    "exposure": "canary exposure (Carlini et al.); needs a canaries file",
    "mia": "membership inference. `mia: {}` works from the model's held-out users (holdout.json of "
    "`lmleak train --holdout-users`): they are the non-members, the documents of the users it was "
    "trained on the members. The public model is the reference of its calibrated score: it must not "
    "have seen the non-members",
    "membership": "the older spelling of mia's methods, mlm and recall_prefix (merged into mia)",
    "probe": "PII probing (ProPILE); needs a subjects file; every option of `lmleak probe run` is a "
    "key (targets, samples, made_up, ...)",
    "dp_audit": "one-run DP audit (Steinke et al. 2023): retrains the model's own recipe (train.json) "
    "with m canaries, e.g. {m: 256, confidence: 0.95}; per person: {m: 256, privacy_unit: user, "
    "canary_documents: 4} (canary people, docs/dp-audit.md)",
    "extract": "untargeted extraction (Carlini et al. 2021), e.g. {num_samples: 1000}",
    "kart": "the KART scenario table over every stage",
}


def _example_tail() -> str:
    """``analyses:`` and what follows it in :data:`EXAMPLE`: each analysis with its settings
    class's noted keys at their defaults (a new field with a note appears here by itself)."""
    col = 32
    shown: dict[str, Settings] = {
        "report": ReportSettings(),
        "exposure": ExposureSpec(),
        "mia": MembershipSettings(),
        "probe": ProbeSettings(),
    }
    lines: list[str] = []
    for f in dataclasses.fields(AnalysesSpec):
        if f.name == "membership":  # the older spelling: its keys are mia's
            continue
        if f.name in shown:
            lines.extend(commented(f"  {f.name}:", SECTION_NOTES[f.name], col))
            lines.extend(noted_lines(shown[f.name], "    ", col))
        else:
            lines.extend(commented(f"  {f.name}: {yaml_scalar(f.default)}", SECTION_NOTES[f.name], col))
    limits = ", ".join(GateSettings().limits())
    gate = noted_lines(GateSettings(profile="release"), "  ", col)  # profile first
    lines += [
        "",
        "render:",
        *commented("  show_text: false", KEY_NOTES["render.show_text"], col),
        "",
        *commented("gate:", KEY_NOTES["gate"], col),
        *gate[:1],
        *commented(
            "  max_mia_auc: null",
            f"any limit of `lmleak gate` ({limits}) sets or overrides one; each is decided on its 95 % interval",
            col,
        ),
        *gate[1:],
    ]
    return "\n".join(lines) + "\n"


EXAMPLE += _example_tail()


@dataclass(frozen=True, slots=True)
class AuditConfig:
    corpus: CorpusSpec
    models: list[ModelSpec]
    out: str = "audit-run"
    public_model: str | None = None
    device: str | None = None  # None/auto: a GPU when torch sees one (lmleak.models.device)
    analyses: AnalysesSpec = field(default_factory=AnalysesSpec)
    render: RenderSpec = field(default_factory=RenderSpec)
    gate: GateSpec | None = None  # the release verdict's limits (None: no limits, no verdict)
    redact: bool = False  # every stage's output redacted (lmleak.report.redaction)
    base_dir: str = "."  # the config file's folder; relative paths resolve against it

    @typing.overload
    def resolve(self, path: str) -> str: ...
    @typing.overload
    def resolve(self, path: None) -> None: ...
    def resolve(self, path: str | None) -> str | None:
        """A path from the config, made absolute against the config file's folder."""
        if path is None or path in ("leave-out", "smollm2-135m", "base") or ":" in path.split("/")[0]:
            return path
        p = Path(path)
        return str(p if p.is_absolute() else Path(self.base_dir) / p)


def parse_config(data: Any, *, path: str | None = None, base_dir: str = ".") -> AuditConfig:
    """Build an :class:`AuditConfig` from parsed YAML.

    Example:
        >>> cfg = parse_config({"corpus": {"path": "c.jsonl"}, "models": [{"name": "m", "path": "m"}]})
        >>> cfg.analyses.kart, cfg.out
        (True, 'audit-run')
        >>> parse_config({"corpus": {"path": "c"}, "models": [{"name": "m", "path": "m"}], "analysis": {}})
        Traceback (most recent call last):
        ...
        lmleak.errors.ConfigError: field 'analysis': unknown key 'analysis'. Did you mean 'analyses'? Fix: allowed keys here: analyses, corpus, device, gate, models, out, public_model, redact, render
    """
    cfg = build(AuditConfig, data, "", path)
    names = [m.name for m in cfg.models]
    if len(set(names)) != len(names):
        raise ConfigError("model names must be unique", path=path, field="models")
    _check_names(cfg, path, base_dir)
    _check_membership(cfg, path)
    if cfg.device is not None:
        try:
            check_device_name(cfg.device)
        except ConfigError as e:
            raise ConfigError(e.reason, path=path, field="device") from None
    return dataclasses.replace(cfg, base_dir=base_dir)


def _check_names(cfg: AuditConfig, path: str | None, base_dir: str) -> None:
    """The templates file exists, and the PII policy and corpus format are ones lmleak knows."""
    probe = cfg.analyses.probe
    if probe is not None and probe.template_file not in (None, "mined"):
        templates_path = Path(base_dir) / probe.template_file
        if not templates_path.is_file():
            raise ConfigError(
                f"templates file {probe.template_file!r} does not exist",
                path=path,
                field="analyses.probe.template_file",
                hint="give 'mined' or a templates YAML file",
            )
    if cfg.corpus.format is not None and cfg.corpus.format not in FORMATS:
        raise ConfigError(
            f"unknown format {cfg.corpus.format!r}." + did_you_mean(cfg.corpus.format, FORMATS),
            path=path,
            field="corpus.format",
            hint=f"use one of {', '.join(FORMATS)}, or leave it out",
        )


def mia_settings(cfg: AuditConfig) -> MembershipSettings | None:
    """The mia stage's settings: ``analyses.mia`` with the keys of the older ``analyses.membership``
    section merged in (a key given in ``mia`` wins); ``membership:`` alone asks for the stage."""
    mia, old = cfg.analyses.mia, cfg.analyses.membership
    if old is None:
        return mia
    if mia is None:
        return old
    default = MembershipSettings()

    def given(spec: MembershipSettings) -> dict[str, Any]:
        return {
            f.name: v
            for f in dataclasses.fields(spec)
            if (v := getattr(spec, f.name)) != getattr(default, f.name)
        }

    return dataclasses.replace(default, **{**given(old), **given(mia)})


#: the audit's stages, in the order they run
STAGES = ("report", "exposure", "mia", "probe", "dp_audit", "extract")


def enabled_stages(cfg: AuditConfig) -> list[tuple[str, Any]]:
    """The stages the config asks for, in order, each with its settings: the mia stage's with the
    older ``membership:`` section merged in (alone, it asks for the stage); exposure only with a
    canaries file, probing only with a subjects file."""
    out = []
    for stage in STAGES:
        spec: Any = mia_settings(cfg) if stage == "mia" else getattr(cfg.analyses, stage)
        needs = {"exposure": "canaries", "probe": "subjects"}.get(stage)  # the file it cannot run without
        if spec is not None and (needs is None or getattr(spec, needs)):
            out.append((stage, spec))
    return out


def _check_membership(cfg: AuditConfig, path: str | None) -> None:
    """The mia stage's methods are ones whose models the config names (the reference: ``public_model``)."""
    for where in ("analyses.mia", "analyses.membership"):
        spec = getattr(cfg.analyses, where.split(".")[1])
        if spec is None or spec.methods is None:
            continue
        try:
            parse_methods(
                spec.methods, reference=cfg.public_model not in (None, "leave-out"), mlm=spec.mlm is not None
            )
        except ConfigError as e:
            raise ConfigError(e.reason, path=path, field=f"{where}.methods", hint=e.hint) from None


#: files that make a folder a model lmleak loads: its own small models, a Hugging Face folder, a
#: fine-tune (`lmleak train --base`: adapters or a full copy, with their manifest)
MODEL_MARKERS = ("lmleak_model.json", "config.json", "lmleak_finetune.json", "adapter_config.json")


def check_model_folder(p: Path, spec: str, field: str, path: str | None = None) -> None:
    """Refuse a folder that is not a model lmleak loads (none of :data:`MODEL_MARKERS`, no .gguf)."""
    if p.is_dir() and not any((p / m).exists() for m in MODEL_MARKERS) and not any(p.glob("*.gguf")):
        raise ConfigError(
            f"{spec!r} is a folder but not a model (no {', '.join(MODEL_MARKERS)} or .gguf)",
            path=path,
            field=field,
            hint="point at the folder `lmleak train` or save_pretrained wrote",
        )


def _check_paths(cfg: AuditConfig, path: str | None) -> None:
    """Every file and model the config names exists (named models, ``leave-out``, ``base`` and
    ``fake:``/``topk:`` specs are checked by the model loader); a model folder may be a fine-tune
    folder of ``lmleak train --base`` (manifest and/or peft adapters, no ``config.json``)."""

    def need(value: str | None, name: str, what: str) -> None:
        if value is None:
            return
        resolved = cfg.resolve(value)
        if resolved in ("smollm2-135m", "leave-out", "base") or ":" in value.split("/")[0]:
            return
        if not Path(resolved or value).exists():
            raise ConfigError(
                f"{what} {value!r} does not exist (resolved against the config's folder: {resolved!r})",
                path=path,
                field=name,
                hint="fix the path; relative paths start at the config file's folder",
            )

    def model(value: str | None, name: str) -> None:
        need(value, name, "model")
        if value:
            check_model_folder(Path(cfg.resolve(value) or ""), value, name, path)

    need(cfg.corpus.path, "corpus.path", "corpus")
    for i, m in enumerate(cfg.models):
        model(m.path, f"models[{i}].path")
    model(cfg.public_model, "public_model")
    a = cfg.analyses
    if a.exposure is not None:
        need(a.exposure.canaries, "analyses.exposure.canaries", "canaries file")
    if a.mia is not None:
        need(a.mia.members, "analyses.mia.members", "members file")
        need(a.mia.non_members, "analyses.mia.non_members", "non-members file")
    if a.probe is not None:
        need(a.probe.subjects, "analyses.probe.subjects", "subjects file")
    out = Path(cfg.resolve(cfg.out) or cfg.out)
    if out.exists() and not out.is_dir():
        raise ConfigError(
            f"{cfg.out!r} is a file, not a run directory",
            path=path,
            field="out",
            hint="give a folder path for the run",
        )


def validate_config(cfg: AuditConfig, *, path: str | None = None) -> AuditConfig:
    """Everything :func:`parse_config` checks on values, plus: every file and model the config names
    exists and ``out`` is not a file. Run before any work starts (:func:`lmleak.audit.runner.run_audit`)."""
    _check_paths(cfg, path)
    if cfg.redact and cfg.render.show_text:
        raise ConfigError(
            "a redacted audit is rendered without text",
            path=path,
            field="render.show_text",
            hint="set render.show_text: false, or redact: false",
        )
    return cfg


def load_config(path: str | Path) -> AuditConfig:
    """Read and validate an audit YAML file (alias-bounded; every key, range, file and model checked)."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(
            "file does not exist", path=p, hint="write one with `lmleak audit --example > audit.yaml`"
        )
    data = load_yaml_file(p)
    cfg = parse_config(data, path=str(p), base_dir=str(p.parent.resolve()))
    return validate_config(cfg, path=str(p))


def to_dict(cfg: AuditConfig) -> dict[str, Any]:
    """The config as YAML reads it back (``config.resolved.yaml``): a settings section as its YAML
    keys (issue 34), no base_dir."""
    d = _plain(cfg)
    d.pop("base_dir", None)
    return d


def _plain(v: Any) -> Any:
    if isinstance(v, Settings):  # an analysis's settings: its YAML keys (issue 34)
        return v.to_dict()
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return [_plain(x) for x in v] if isinstance(v, list | tuple) else v
