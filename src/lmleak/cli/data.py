"""CLI: ``lmleak synth customersim``, ``lmleak synth mail`` and ``lmleak corpus check``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lmleak.cli.common import COUNT, COUNT0, POSITIVE, JsonOpt, SeedOpt, out, print_json, quiet
from lmleak.data.synth import DEFAULT_LOCALES
from lmleak.render.terminal import corpus_check_lines, table

LocalesOpt = Annotated[
    str,
    typer.Option(
        "--locales",
        help="Comma-separated Faker locales of the people's names (every name shape); "
        "'en_US' alone writes the English-only corpus of earlier versions.",
    ),
]


_DEFAULT_LOCALES = ",".join(DEFAULT_LOCALES)


def _locales(spec: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in spec.split(",") if x.strip())


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    groups["synth"].command("customersim")(customersim)
    groups["synth"].command("mail")(mail)
    corpus = typer.Typer(
        help="Inspect and validate corpora.\n\nExample: lmleak corpus check data/corpus.jsonl",
        no_args_is_help=True,
    )
    corpus.command("check")(check)
    app.add_typer(corpus, name="corpus")


#: ``--out`` of both synthesisers
SynthOutOpt = Annotated[
    Path,
    typer.Option("--out", help="Folder for corpus.jsonl, subjects.jsonl, canaries.jsonl, secrets.jsonl."),
]

#: ``--canary-design`` of both synthesisers (lmleak.data.canaries)
CanaryDesignOpt = Annotated[
    str,
    typer.Option(
        "--canary-design",
        help="random (the format above) or crafted (Panda et al. 2025: the same draws as rune "
        "secrets, rare tokens, behind the designed prefix 'Canary ᛝ key: ').",
    ),
]


def customersim(
    out_dir: SynthOutOpt,
    users: Annotated[int, typer.Option(help="Number of users (each a Faker profile).", parser=COUNT)] = 100,
    dialogs_per_user: Annotated[int, typer.Option(help="Dialogues per user.", parser=COUNT)] = 5,
    seed: SeedOpt = 0,
    canaries: Annotated[
        int, typer.Option(help="Number of 'My ID is: <6 digits>' canaries to insert.", parser=COUNT0)
    ] = 0,
    canary_repeats: Annotated[
        int, typer.Option(help="Copies of each canary in its user's documents.", parser=COUNT)
    ] = 1,
    canary_design: CanaryDesignOpt = "random",
    locales: LocalesOpt = _DEFAULT_LOCALES,
    json_out: JsonOpt = False,
) -> None:
    """Synthesise customer-service dialogues with known PII (paper 002's CustomerSim, offline).

    Example: lmleak synth customersim --out data --users 50 --canaries 10
    """
    # lazy: the synthesiser loads only when the command runs
    from lmleak.data.synth.customersim import synthesize_corpus as synthesize_customersim

    quiet(json_out)
    summary = synthesize_customersim(
        out_dir,
        users=users,
        dialogs_per_user=dialogs_per_user,
        seed=seed,
        canaries=canaries,
        canary_repeats=canary_repeats,
        locales=_locales(locales),
        canary_design=canary_design,
    ).to_dict()
    if json_out:
        print_json(summary)
        return
    keys = ("documents", "users", "words", "canaries", "canary_repeats", "canary_design")
    _print_synth(f"CustomerSim corpus in {out_dir}", "count", [(k, summary[k]) for k in keys], summary)


def mail(
    out_dir: SynthOutOpt,
    scale: Annotated[
        float, typer.Option(help="1.0 is about 10^6 tokens; the size grows linearly.", parser=POSITIVE)
    ] = 1.0,
    seed: SeedOpt = 0,
    canaries: Annotated[
        int,
        typer.Option(
            help="Number of 'My access token is: <8 hex digits>' canaries to insert.", parser=COUNT0
        ),
    ] = 0,
    canary_repeats: Annotated[
        int, typer.Option(help="Copies of each canary, each a message of its own.", parser=COUNT)
    ] = 1,
    canary_design: CanaryDesignOpt = "random",
    locales: LocalesOpt = _DEFAULT_LOCALES,
    json_out: JsonOpt = False,
) -> None:
    """Synthesise a mailing-list archive with known PII: headers, quoted replies, signatures, digests.

    Example: lmleak synth mail --out mail
    """

    # lazy: lmleak.data.synth.mail imports faker at module level (a third-party import `--help` need not pay)
    from lmleak.data.synth.mail import synthesize_corpus

    quiet(json_out)
    summary = synthesize_corpus(
        out_dir,
        scale=scale,
        seed=seed,
        canaries=canaries,
        canary_repeats=canary_repeats,
        locales=_locales(locales),
        canary_design=canary_design,
    ).to_dict()
    if json_out:
        print_json(summary)
        return
    keys = ("documents", "authors", "words", "tokens_estimate", "duplicate_line_share",
            "longest_document_words", "canaries", "canary_repeats", "canary_design")  # fmt: skip
    rows = [(k.replace("_", " "), summary[k]) for k in keys]
    _print_synth(f"Mailing-list corpus in {out_dir}", "value", rows, summary)


def _print_synth(title: str, header: str, rows: list[tuple[str, Any]], summary: dict[str, Any]) -> None:
    """A synthesiser's summary: its ``rows``, then the PII spans per entity and the people per name shape."""
    rows += [(f"PII spans: {k}", v) for k, v in summary["secrets_per_entity"].items()]
    rows += [(f"people: {k}", v) for k, v in summary["subjects_per_shape"].items()]
    out.print(table(title, ("what", header), rows, right=1))


def check(
    path: Annotated[
        Path,
        typer.Argument(help="A corpus: JSONL, CSV, Parquet, a <user>/*.txt folder, or a saved HF dataset."),
    ],
    format: Annotated[
        str | None, typer.Option(help="Force the format: jsonl, csv, parquet, folder, hf.")
    ] = None,
    text_field: Annotated[str, typer.Option(help="Column holding the text.")] = "text",
    user_field: Annotated[str, typer.Option(help="Column holding the user id.")] = "user_id",
    doc_field: Annotated[
        str, typer.Option(help="Column holding the document id (optional in the data).")
    ] = "doc_id",
    skip_bad_rows: Annotated[
        bool, typer.Option(help="Count and report bad rows instead of failing on the first.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Validate a corpus and print its size, repeated-line share, user concentration and PII density.

    Example: lmleak corpus check data/corpus.jsonl
    """
    # lazy: the corpus loaders and the detector load only when the command runs
    from lmleak.data.stats import check_corpus
    from lmleak.pii.regex import RegexDetector

    quiet(json_out)
    result = check_corpus(
        path,
        detector=RegexDetector(),
        format=format,
        text_field=text_field,
        user_field=user_field,
        doc_field=doc_field,
        skip_bad_rows=skip_bad_rows,
    )
    if json_out:
        print_json(result.to_dict())
        return
    for line in corpus_check_lines(path, result):
        out.print(line)
