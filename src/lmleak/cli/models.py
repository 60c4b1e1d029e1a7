"""CLI: ``lmleak train`` and ``lmleak eval``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperOption

from lmleak.cli.common import COUNT, JsonOpt, QuietOpt, out, print_json, quiet
from lmleak.cli.options import takes
from lmleak.errors import ConfigError
from lmleak.render.terminal import table, train_lines
from lmleak.settings import Settings, setting
from lmleak.train.config import TrainSettings


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    app.command("train", cls=_TrainCommand)(train)
    app.command("eval")(evaluate_cmd)


#: The panels of ``lmleak train --help`` (issue 29), in the order shown: each setting's panel is its
#: field's (:class:`~lmleak.train.config.TrainSettings`), the command's own options say theirs, the
#: rest (--json, --help ...) are Output. A hidden field is the long tail ``--help-all`` shows.
TRAIN_PANELS = ("Model", "Data", "Privacy", "Schedule", "Output")


class _TrainCommand(TyperCommand):
    """``lmleak train``: its options grouped by panel, in :data:`TRAIN_PANELS`' order."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if isinstance(param, TyperOption):
                param.rich_help_panel = param.rich_help_panel or "Output"
        # the panels come out in the order of their first option; within one, the signature's order
        self.params.sort(key=lambda p: TRAIN_PANELS.index(getattr(p, "rich_help_panel", None) or "Output"))

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)
        if option is not None:
            option.rich_help_panel = "Output"
        return option


def _show_every_option(ctx: typer.Context, value: bool) -> None:
    """``--help-all``: the help with every option, then exit."""
    if not value or ctx.resilient_parsing:
        return
    for param in ctx.command.params:
        if isinstance(param, TyperOption):
            param.hidden = False
    typer.echo(ctx.get_help(), color=ctx.color)
    raise typer.Exit()


def _option_keys(command: Any) -> dict[str, str]:
    """Every key a ``--config`` file may use -> the parameter it sets: each long option's name without
    its dashes, with ``-`` or ``_`` (``batch-size``, ``batch_size``; aliases such as ``context`` too)."""
    keys = {}
    for param in command.params:
        if param.name in ("config", "help_all") or not param.opts:
            continue
        for opt in param.opts:
            if opt.startswith("--"):
                keys[opt[2:]] = keys[opt[2:].replace("-", "_")] = param.name
    return keys


def _read_train_config(ctx: typer.Context, value: Path | None) -> Path | None:
    """``--config train.yaml``: its keys are the options' names (``epochs: 3``, ``batch-size: 32``);
    each value is checked as the option checks it, and the command line overrides the file."""
    if value is None or ctx.resilient_parsing:
        return value
    from lmleak.errors import ConfigError, did_you_mean
    from lmleak.safe_yaml import load_yaml_file

    data = load_yaml_file(value)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            "a train config is a mapping of option: value", path=value, hint="write e.g. epochs: 3"
        )
    keys = _option_keys(ctx.command)
    params: dict[str | None, Any] = {p.name: p for p in ctx.command.params}
    defaults: dict[str, Any] = {}
    set_by: dict[str, str] = {}
    for key, raw in data.items():
        name = keys.get(str(key))
        if name is None:
            raise ConfigError(
                f"unknown key {key!r}.{did_you_mean(str(key), [k for k in keys if '_' not in k])}",
                path=value,
                field=str(key),
                hint="use the names of lmleak train's options (lmleak train --help-all), without the dashes",
            )
        if name in set_by:
            raise ConfigError(
                f"{key!r} sets the same option as {set_by[name]!r}",
                path=value,
                field=str(key),
                hint="keep one",
            )
        set_by[name] = str(key)
        param = params[name]
        try:
            defaults[name] = param.process_value(ctx, raw)  # the option's own parser and checks
        except (typer.BadParameter, ValueError, TypeError) as e:
            message = e.message if isinstance(e, typer.BadParameter) else str(e)
            raise ConfigError(message, path=value, field=str(key)) from None
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return value


@dataclass(frozen=True)
class PresplitCorpus(Settings):
    """``--public`` / ``--private``: CRT's corpus split beforehand (both or neither)."""

    public: Path | None = setting(
        None, help="crt: a pre-split public corpus (with --private).", panel="Data", hidden=True
    )
    private: Path | None = setting(
        None, help="crt: a pre-split private corpus (with --public).", panel="Data", hidden=True
    )

    def check(self) -> None:
        if (self.public is None) != (self.private is None):
            raise ConfigError("give both --public and --private, or neither", field="public")


# long: the signature declares the options that are not training settings (files, --config, --help-all)
@takes(settings=TrainSettings, presplit=PresplitCorpus)
def train(
    corpus: Annotated[
        Path,
        typer.Option(
            help="Training corpus (JSONL, CSV, Parquet, folder, HF dataset).", rich_help_panel="Data"
        ),
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder for the model, train.json and privacy.json.")
    ],
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="Read options from this YAML file (keys as the option names: `epochs: 3`, `batch-size: 32`; "
            "unknown keys are refused); options on the command line win.",
            is_eager=True,
            callback=_read_train_config,
        ),
    ] = None,
    *,
    presplit: PresplitCorpus,
    settings: TrainSettings,
    replaces: Annotated[
        Path | None,
        typer.Option(
            "--replaces",
            help="The model this one is meant to replace: its validation perplexity is compared, and OUT/reaudit.yaml audits both.",
            hidden=True,
        ),
    ] = None,
    json_out: JsonOpt = False,
    quiet_: QuietOpt = False,
    help_all: Annotated[
        bool,
        typer.Option(
            "--help-all",
            help="Show every option (the long tail too) and exit.",
            is_eager=True,
            callback=_show_every_option,
        ),
    ] = False,
) -> None:
    """Train a small GPT or LSTM on a corpus, or fine-tune a pretrained model (--base), plainly or with DP-SGD / CRT / selective DP.

    Example: lmleak train --corpus data/corpus.jsonl --out runs/model --holdout-users 0.2

    The common options are below; --help-all shows every one. --config train.yaml takes the same
    options from a file, keyed by their names without the dashes.
    """
    # lazy: lmleak.train.run imports torch, which `lmleak --help` must not load
    from lmleak.train.run import train_and_summarise

    quiet(quiet_ or json_out)
    progress = not (quiet_ or json_out)
    run = train_and_summarise(
        corpus,
        out_dir,
        settings,
        public=presplit.public,
        private=presplit.private,
        progress=progress,
        replaces=replaces,
    )
    _print_result(run, out_dir, json_out)


def _print_result(run: Any, out_dir: Path, json_out: bool) -> None:
    """Print the training summary: as JSON, or as a per-epoch table and the privacy notes
    (:func:`lmleak.render.terminal.train_lines`)."""
    if json_out:
        print_json(run.summary)
        return
    # lazy: the CLI imports the library only when a command runs (`lmleak --help` stays light)
    from lmleak.train.release import epsilon_statement

    privacy = run.result.privacy
    dp = epsilon_statement(privacy) if privacy.get("epsilon") is not None else None
    for shown in train_lines(run, out_dir, dp):
        out.print(shown, soft_wrap=isinstance(shown, str))  # whole lines: they are copied


def evaluate_cmd(
    model: Annotated[str, typer.Option(help="Model: a folder, a .gguf file, smollm2-135m, ...")],
    corpus: Annotated[Path, typer.Option(help="Corpus to evaluate on.")],
    k: Annotated[list[int], typer.Option(help="Top-k accuracies to report (repeatable).", parser=COUNT)] = [  # noqa: B006
        1,
        3,
    ],
    out_path: Annotated[
        Path | None, typer.Option("--out", help="Also write the metrics to this JSON file.")
    ] = None,
    json_out: JsonOpt = False,
    quiet_: QuietOpt = False,
) -> None:
    """Perplexity (per token and per word) and top-k accuracy of a model on a corpus (teacher forcing).

    Example: lmleak eval --model runs/model --corpus data/corpus.jsonl
    """
    from lmleak.train.evaluate import evaluate_on_corpus  # lazy: imports torch

    quiet(quiet_ or json_out)
    record = evaluate_on_corpus(model, corpus, ks=tuple(k), out_path=out_path)
    if json_out:
        print_json(record)
        return
    rows = [(key, f"{v:.4f}") for key, v in record.items() if isinstance(v, float)]
    out.print(table(f"{model} on {corpus}", ("metric", "value"), rows, right=1))
