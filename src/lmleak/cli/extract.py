"""CLI: ``lmleak extract`` — untargeted training-data extraction (Carlini et al. 2021)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lmleak.attacks.settings import ExtractSettings
from lmleak.cli.common import RedactRun, hide_ids_when_redacted, info, out, print_json, quiet
from lmleak.cli.options import takes
from lmleak.render.printouts import print_extraction


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    app.command("extract")(extract)


@takes(settings=ExtractSettings, redact=RedactRun)
def extract(
    ctx: typer.Context,
    model: Annotated[
        str, typer.Option(help="The audited model (a folder, .gguf, smollm2-135m, fake:CORPUS).")
    ],
    corpus: Annotated[Path, typer.Option(help="Its training corpus (candidates are verified against it).")],
    out_dir: Annotated[
        Path,
        typer.Option("--out", help="Run directory: extract.parquet, discoverable.parquet, summary.json."),
    ],
    settings: ExtractSettings,
    redact: RedactRun,
    public_model: Annotated[
        str | None, typer.Option("--public-model", help="A public reference model for the 'small' ratio.")
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet_: Annotated[bool, typer.Option("--quiet", help="No messages.", hidden=True)] = False,
) -> None:
    """Generate samples, rank them by six membership metrics, verify the top ones against the corpus.

    Example: lmleak extract --model runs/model --corpus data/corpus.jsonl --out runs/extract --num-samples 200
    """
    # lazy: the extraction attack imports numpy and the model backends
    from lmleak.attacks.extraction import extract_from_model
    from lmleak.report.redaction import write_run

    quiet(quiet_ or json_out)
    hide_ids_when_redacted(ctx, redact.redact)
    summary = write_run(
        out_dir,
        lambda d: extract_from_model(model, corpus, d, settings, public_model=public_model, echo=info),
        redact=redact.redact,
        key_file=redact.redact_key_file,
    )
    if json_out:
        print_json(summary)
        return
    print_extraction(out, summary, out_dir)
