"""The audit config: one YAML file that names the corpus, the models, and the analyses to run.

Unknown keys are rejected with the field path and a "did you mean" suggestion; every value is
type-checked before anything runs. The resolved config (defaults filled in) is written into the
run directory so the run is a complete record of what was done.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lmleak.errors import ConfigError, did_you_mean
from lmleak.models.device import check_device_name

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

public_model: null              # a reference model for leakage epsilon: a path, smollm2-135m, or leave-out
device: auto                    # where models run: auto (a GPU when torch sees one), cpu, cuda, cuda:N

analyses:
  report:                       # training data leakage report (Inan et al.)
    k: [1, 3]                   # top-k of the tab attack
    t: 1.0                      # curated = unique sequences with PP_public / PP_model >= t (paper 001 §5)
    p: 5                        # k-anonymity filter: user count in S < p
    pii_policy: regex           # leaked PII = user-unique sequences overlapping this policy's detections
    min_tokens: 5               # ...headlined when at least this many tokens long (shorter ones counted apart)
    public_context_tokens: null # context the public model sees per sequence (null: ledger overlap, <= 128)
    public_occurrences: 8       # occurrences per sequence the public model scores (the most confident ones)
  exposure:                     # canary exposure (Carlini et al.); needs a canaries file
    canaries: null              # canaries.jsonl (text, secret, prefix, ...)
  mia:                          # membership inference; needs member / non-member files. The public model
                                # is the reference of its calibrated score: it must not have seen the non-members
    members: null
    non_members: null
    group_size: 20
  probe:                        # PII probing (ProPILE); needs a subjects file
    subjects: null
    level: triplet              # twin | triplet | quadruplet
    templates: 5                # 5: the paper's first 5 templates; mined: mine them from the corpus
                                # (`From: {name} <`...); or a templates YAML file
    shots: 5                    # templates per target when `templates` is mined or a file
    beams: 3
  kart: true                    # the KART scenario table over every stage

render:
  show_text: false              # the report shows leaked text only when true (redacted by default)
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


@dataclass(frozen=True, slots=True)
class ReportSpec:
    k: list[int] = field(default_factory=lambda: [1, 3])
    t: float = 1.0
    p: int = 5
    public_context_tokens: int | None = None  # None: the ledger's window overlap, at most 128
    public_occurrences: int = 8
    pii_policy: str | None = "regex"
    min_tokens: int = 5


@dataclass(frozen=True, slots=True)
class ExposureSpec:
    canaries: str | None = None


@dataclass(frozen=True, slots=True)
class MiaSpec:
    members: str | None = None
    non_members: str | None = None
    group_size: int = 20


@dataclass(frozen=True, slots=True)
class ProbeSpec:
    subjects: str | None = None
    level: str = "triplet"
    templates: int | str = 5  # an int: the first k appendix templates; "mined" or a path: a template source
    shots: int = 5  # with a template source: templates used per target (k-shot)
    beams: int = 3


@dataclass(frozen=True, slots=True)
class AnalysesSpec:
    report: ReportSpec | None = None
    exposure: ExposureSpec | None = None
    mia: MiaSpec | None = None
    probe: ProbeSpec | None = None
    kart: bool = True


@dataclass(frozen=True, slots=True)
class RenderSpec:
    show_text: bool = False


@dataclass(frozen=True, slots=True)
class AuditConfig:
    corpus: CorpusSpec
    models: list[ModelSpec]
    out: str = "audit-run"
    public_model: str | None = None
    device: str | None = None  # None/auto: a GPU when torch sees one (lmleak.models.device)
    analyses: AnalysesSpec = field(default_factory=AnalysesSpec)
    render: RenderSpec = field(default_factory=RenderSpec)
    base_dir: str = "."  # the config file's folder; relative paths resolve against it

    @typing.overload
    def resolve(self, path: str) -> str: ...
    @typing.overload
    def resolve(self, path: None) -> None: ...
    def resolve(self, path: str | None) -> str | None:
        """A path from the config, made absolute against the config file's folder."""
        if path is None or path in ("leave-out", "smollm2-135m") or ":" in path.split("/")[0]:
            return path
        p = Path(path)
        return str(p if p.is_absolute() else Path(self.base_dir) / p)


def _type_ok(value: Any, tp: Any) -> bool:
    origin = typing.get_origin(tp)
    if tp is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, a) for a in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if origin is list:
        (inner,) = typing.get_args(tp)
        return isinstance(value, list) and all(_type_ok(v, inner) for v in value)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, tp)


def _build(cls: type, data: Any, where: str, path: str | None) -> Any:
    """Build dataclass ``cls`` from a mapping, rejecting unknown keys and wrong types."""
    if not isinstance(data, dict):
        raise ConfigError(f"expected a mapping, got {type(data).__name__}", path=path, field=where or None)
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.name != "base_dir"}
    for key in data:
        if key not in names:
            raise ConfigError(
                f"unknown key '{key}'." + did_you_mean(str(key), names),
                path=path,
                field=f"{where}.{key}" if where else str(key),
                hint=f"allowed keys here: {', '.join(sorted(names))}",
            )
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:  # type: ignore[misc]
                if f.name == "base_dir":
                    continue
                raise ConfigError("required key is missing", path=path, field=f"{where}.{f.name}".strip("."))
            continue
        value, tp, name = data[f.name], hints[f.name], f"{where}.{f.name}".strip(".")
        kwargs[f.name] = _convert(value, tp, name, path)
    return cls(**kwargs)


def _convert(value: Any, tp: Any, name: str, path: str | None) -> Any:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    target = args[0] if typing.get_origin(tp) in (typing.Union, types.UnionType) and len(args) == 1 else tp
    if isinstance(target, type) and dataclasses.is_dataclass(target):
        if value is None and target is not tp:
            return None
        if value is True and target is not tp:  # `report: true` means "with defaults"
            return target()
        if value is False and target is not tp:
            return None
        return _build(target, {} if value is None else value, name, path)
    if typing.get_origin(target) is list and dataclasses.is_dataclass(typing.get_args(target)[0]):
        if not isinstance(value, list) or not value:
            raise ConfigError("expected a non-empty list", path=path, field=name)
        inner = typing.get_args(target)[0]
        return [_build(inner, v, f"{name}[{i}]", path) for i, v in enumerate(value)]
    if typing.get_origin(target) is list and isinstance(value, int | str) and not isinstance(value, bool):
        value = [value]  # `k: 1` means `k: [1]`
    if not _type_ok(value, tp):
        raise ConfigError(f"expected {getattr(tp, '__name__', str(tp))}, got {value!r}", path=path, field=name)
    return value


def parse_config(data: Any, *, path: str | None = None, base_dir: str = ".") -> AuditConfig:
    """Build an :class:`AuditConfig` from parsed YAML.

    Example:
        >>> cfg = parse_config({"corpus": {"path": "c.jsonl"}, "models": [{"name": "m", "path": "m"}]})
        >>> cfg.analyses.kart, cfg.out
        (True, 'audit-run')
        >>> parse_config({"corpus": {"path": "c"}, "models": [{"name": "m", "path": "m"}], "analysis": {}})
        Traceback (most recent call last):
        ...
        lmleak.errors.ConfigError: field 'analysis': unknown key 'analysis'. Did you mean 'analyses'?. Fix: allowed keys here: analyses, corpus, device, models, out, public_model, render
    """
    cfg = _build(AuditConfig, data, "", path)
    names = [m.name for m in cfg.models]
    if len(set(names)) != len(names):
        raise ConfigError("model names must be unique", path=path, field="models")
    if cfg.analyses.probe is not None and cfg.analyses.probe.level not in ("twin", "triplet", "quadruplet"):
        raise ConfigError(
            f"unknown level {cfg.analyses.probe.level!r}."
            + did_you_mean(cfg.analyses.probe.level, ["twin", "triplet", "quadruplet"]),
            path=path,
            field="analyses.probe.level",
        )
    probe = cfg.analyses.probe
    if probe is not None and isinstance(probe.templates, str) and probe.templates != "mined":
        templates_path = Path(base_dir) / probe.templates
        if not templates_path.is_file():
            raise ConfigError(f"templates file {probe.templates!r} does not exist", path=path,
                              field="analyses.probe.templates", hint="give an int, 'mined', or a templates YAML file")
    if cfg.device is not None:
        try:
            check_device_name(cfg.device)
        except ConfigError as e:
            raise ConfigError(e.reason, path=path, field="device") from None
    return dataclasses.replace(cfg, base_dir=base_dir)


def load_config(path: str | Path) -> AuditConfig:
    """Read and validate an audit YAML file."""
    import yaml

    p = Path(path)
    if not p.exists():
        raise ConfigError("file does not exist", path=p, hint="write one with `lmleak audit --example > audit.yaml`")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        line = getattr(getattr(e, "problem_mark", None), "line", None)
        raise ConfigError(f"not valid YAML: {e}", path=p, line=None if line is None else line + 1) from None
    return parse_config(data, path=str(p), base_dir=str(p.parent.resolve()))


def to_dict(cfg: AuditConfig) -> dict[str, Any]:
    d = dataclasses.asdict(cfg)
    d.pop("base_dir", None)
    return d
