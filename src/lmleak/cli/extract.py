"""CLI: ``lmleak extract`` — untargeted training-data extraction (Carlini et al. 2021)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lmleak.cli.common import (
    COUNT,
    COUNT0,
    POSITIVE,
    SEED,
    RedactKeyFileOpt,
    RedactRunOpt,
    info,
    number,
    out,
    print_json,
    quiet,
)
from lmleak.words import plural


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    app.command("extract")(extract)


# long: the Typer signature declares 21 options; the body only builds the config, runs, prints
def extract(
    model: Annotated[
        str, typer.Option(help="The audited model (a folder, .gguf, smollm2-135m, fake:CORPUS).")
    ],
    corpus: Annotated[Path, typer.Option(help="Its training corpus (candidates are verified against it).")],
    out_dir: Annotated[
        Path,
        typer.Option("--out", help="Run directory: extract.parquet, discoverable.parquet, summary.json."),
    ],
    num_samples: Annotated[
        int, typer.Option("--num-samples", help="Samples to generate.", parser=COUNT)
    ] = 1000,
    max_new_tokens: Annotated[
        int, typer.Option("--max-new-tokens", help="Tokens generated per sample.", parser=COUNT)
    ] = 64,
    top_k: Annotated[int, typer.Option("--top-k", help="Top-k sampling.", parser=COUNT)] = 40,
    temperature_start: Annotated[
        float,
        typer.Option(
            "--temperature-start", help="Initial softmax temperature (1: no decay).", parser=POSITIVE
        ),
    ] = 10.0,
    temperature_decay: Annotated[
        int,
        typer.Option(
            "--temperature-decay",
            help="Generated tokens over which the temperature decays linearly to 1.",
            parser=COUNT0,
        ),
    ] = 20,
    prefixes: Annotated[
        str,
        typer.Option("--prefixes", help="A public text file (one prompt per line), or 'empty' (BOS only)."),
    ] = "empty",
    public_model: Annotated[
        str | None, typer.Option("--public-model", help="A public reference model for the 'small' ratio.")
    ] = None,
    window: Annotated[
        int, typer.Option(help="Sliding-window size (tokens) of the window metric.", parser=COUNT)
    ] = 50,
    top_n: Annotated[
        int, typer.Option("--top-n", help="Deduplicated candidates verified per metric.", parser=COUNT)
    ] = 100,
    min_match_tokens: Annotated[
        int,
        typer.Option(
            "--min-match-tokens", help="Longest corpus match (tokens) that counts as memorised.", parser=COUNT
        ),
    ] = 32,
    discoverable_docs: Annotated[
        int,
        typer.Option(
            "--discoverable-docs",
            help="Training documents for (n,p)-discoverable extraction (0: skip).",
            parser=COUNT0,
        ),
    ] = 100,
    prefix_tokens: Annotated[
        int, typer.Option("--prefix-tokens", help="Discoverable: prefix length.", parser=COUNT)
    ] = 32,
    suffix_tokens: Annotated[
        int, typer.Option("--suffix-tokens", help="Discoverable: suffix length.", parser=COUNT)
    ] = 32,
    n: Annotated[
        int, typer.Option("--n", help="Discoverable: samples an attacker draws.", parser=COUNT)
    ] = 100,
    p: Annotated[
        float, typer.Option("--p", help="Discoverable: probability threshold.", parser=number(gt=0, le=1))
    ] = 0.5,
    seed: Annotated[int, typer.Option(help="Sampling seed.", parser=SEED)] = 0,
    redact: RedactRunOpt = False,
    redact_key_file: RedactKeyFileOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet_: Annotated[bool, typer.Option("--quiet", help="No messages.", hidden=True)] = False,
) -> None:
    """Generate samples, rank them by six membership metrics, verify the top ones against the corpus.

    Example: lmleak extract --model runs/model --corpus data/corpus.jsonl --out runs/extract --num-samples 200
    """
    from lmleak.attacks.extraction import ExtractConfig, extract_from_model  # lazy: numpy and torch
    from lmleak.report.redaction import write_run

    quiet(quiet_ or json_out)
    cfg = ExtractConfig(
        num_samples=num_samples,
        max_new_tokens=max_new_tokens,
        top_k=top_k,
        temperature_start=temperature_start,
        decay_tokens=temperature_decay,
        window=window,
        top_n=top_n,
        min_match_tokens=min_match_tokens,
        seed=seed,
        discoverable_docs=discoverable_docs,
        prefix_tokens=prefix_tokens,
        suffix_tokens=suffix_tokens,
        n=n,
        p_threshold=p,
    )
    summary = write_run(
        out_dir,
        lambda d: extract_from_model(
            model,
            corpus,
            d,
            cfg,
            prefixes=None if prefixes == "empty" else prefixes,
            public_model=public_model,
            echo=info,
        ),
        redact=redact,
        key_file=redact_key_file,
    )
    if json_out:
        print_json(summary)
        return
    print_extraction(summary, out_dir)


def print_extraction(summary: dict[str, Any], out_dir: Path) -> None:
    """Verified counts per metric, the discoverable fraction, and the memorised samples found."""
    top_n = summary["config"]["top_n"]
    min_match_tokens = summary["config"]["min_match_tokens"]
    for metric, count in summary[f"verified_at_{top_n}"].items():
        out.print(f"verified_at_{top_n} {metric}: {count}")
    d = summary["discoverable"]
    if d["documents"]:
        out.print(
            f"discoverable ({d['n']}, {d['p']:g}): {d['discoverable_fraction']:.3f} of {d['documents']} training prefixes"
        )
    out.print(
        f"extracted: {plural(summary['extracted'], 'memorised sample')} (>= {plural(min_match_tokens, 'token')} verbatim), "
        f"{summary['extracted_with_pii']} with PII; run: {out_dir}"
    )
