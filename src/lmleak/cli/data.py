"""CLI: ``lmleak synth customersim`` and ``lmleak corpus check``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import typer

from lmleak.cli.common import JsonOpt, SeedOpt, out, print_json, quiet
from lmleak.data.loaders import load_corpus_with_report
from lmleak.data.stats import corpus_stats
from lmleak.data.synth.customersim import synthesize as synthesize_customersim
from lmleak.jsonl import read_jsonl
from lmleak.pii.regex import RegexDetector


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    groups["synth"].command("customersim")(customersim)
    groups["synth"].command("mail")(mail)
    corpus = typer.Typer(help="Inspect and validate corpora.", no_args_is_help=True)
    corpus.command("check")(check)
    app.add_typer(corpus, name="corpus")


def customersim(
    out_dir: Annotated[
        Path,
        typer.Option("--out", help="Folder for corpus.jsonl, subjects.jsonl, canaries.jsonl, secrets.jsonl."),
    ],
    users: Annotated[int, typer.Option(help="Number of users (each a Faker profile).")] = 100,
    dialogs_per_user: Annotated[int, typer.Option(help="Dialogues per user.")] = 5,
    seed: SeedOpt = 0,
    canaries: Annotated[int, typer.Option(help="Number of 'My ID is: <6 digits>' canaries to insert.")] = 0,
    canary_repeats: Annotated[int, typer.Option(help="Copies of each canary in its user's documents.")] = 1,
    json_out: JsonOpt = False,
) -> None:
    """Synthesise customer-service dialogues with known PII (paper 002's CustomerSim, offline)."""

    quiet(json_out)
    paths = synthesize_customersim(
        out_dir,
        users=users,
        dialogs_per_user=dialogs_per_user,
        seed=seed,
        canaries=canaries,
        canary_repeats=canary_repeats,
    )
    docs = read_jsonl(paths["corpus"])
    entities = Counter(row["entity"] for row in read_jsonl(paths["secrets"]))
    summary: dict[str, Any] = {
        "documents": len(docs),
        "users": users,
        "words": sum(len(d["text"].split()) for d in docs),
        "canaries": canaries,
        "canary_repeats": canary_repeats,
        "secrets_per_entity": dict(sorted(entities.items())),
        "files": {k: str(v) for k, v in paths.items()},
    }
    if json_out:
        print_json(summary)
        return
    from rich.table import Table

    t = Table(title=f"CustomerSim corpus in {out_dir}")
    t.add_column("what")
    t.add_column("count", justify="right")
    for k in ("documents", "users", "words", "canaries", "canary_repeats"):
        t.add_row(k, str(summary[k]))
    for k, v in summary["secrets_per_entity"].items():
        t.add_row(f"PII spans: {k}", str(v))
    out.print(t)


def mail(
    out_dir: Annotated[
        Path,
        typer.Option("--out", help="Folder for corpus.jsonl, subjects.jsonl, canaries.jsonl, secrets.jsonl."),
    ],
    scale: Annotated[float, typer.Option(help="1.0 is about 10^6 tokens; the size grows linearly.")] = 1.0,
    seed: SeedOpt = 0,
    canaries: Annotated[
        int, typer.Option(help="Number of 'My access token is: <8 hex digits>' canaries to insert.")
    ] = 0,
    canary_repeats: Annotated[
        int, typer.Option(help="Copies of each canary, each a message of its own.")
    ] = 1,
    json_out: JsonOpt = False,
) -> None:
    """Synthesise a mailing-list archive with known PII: headers, quoted replies, signatures, digests."""

    # lazy: lmleak.data.synth.mail imports faker at module level (a third-party import `--help` need not pay)
    from lmleak.data.synth.mail import TOKENS_PER_WORD, synthesize

    quiet(json_out)
    paths = synthesize(out_dir, scale=scale, seed=seed, canaries=canaries, canary_repeats=canary_repeats)
    summary = _mail_summary(paths, canaries, canary_repeats, TOKENS_PER_WORD)
    if json_out:
        print_json(summary)
        return
    _print_mail(summary, out_dir)


def _mail_summary(
    paths: dict[str, Path], canaries: int, canary_repeats: int, tokens_per_word: float
) -> dict[str, Any]:
    """Sizes, repeated-line share and PII spans per entity of a written mailing-list archive."""
    docs = read_jsonl(paths["corpus"])
    entities = Counter(row["entity"] for row in read_jsonl(paths["secrets"]))
    words = sum(len(d["text"].split()) for d in docs)
    lines = Counter(ln for d in docs for ln in d["text"].split("\n") if ln.strip())
    return {
        "documents": len(docs),
        "authors": len({d["user_id"] for d in docs}),
        "words": words,
        "tokens_estimate": round(words * tokens_per_word),
        "duplicate_line_share": round(
            sum(c for c in lines.values() if c > 1) / max(sum(lines.values()), 1), 4
        ),
        "longest_document_words": max(len(d["text"].split()) for d in docs),
        "canaries": canaries,
        "canary_repeats": canary_repeats,
        "secrets_per_entity": dict(sorted(entities.items())),
        "files": {k: str(v) for k, v in paths.items()},
    }


def _print_mail(summary: dict[str, Any], out_dir: Path) -> None:
    """The mailing-list summary as a table."""
    from rich.table import Table

    t = Table(title=f"Mailing-list corpus in {out_dir}")
    t.add_column("what")
    t.add_column("value", justify="right")
    for k in (
        "documents",
        "authors",
        "words",
        "tokens_estimate",
        "duplicate_line_share",
        "longest_document_words",
        "canaries",
        "canary_repeats",
    ):
        t.add_row(k.replace("_", " "), str(summary[k]))
    for k, v in summary["secrets_per_entity"].items():
        t.add_row(f"PII spans: {k}", str(v))
    out.print(t)


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
    """Validate a corpus and print its size, repeated-line share, user concentration and PII density."""
    quiet(json_out)
    corpus, report = load_corpus_with_report(
        path,
        format=format,
        text_field=text_field,
        user_field=user_field,
        doc_field=doc_field,
        skip_bad_rows=skip_bad_rows,
    )
    stats = corpus_stats(corpus, detector=RegexDetector())
    summary = _check_summary(path, corpus, stats, report)
    if json_out:
        print_json(summary)
        return
    _print_check(path, summary, stats, report)


def _check_summary(path: Path, corpus: Any, stats: Any, report: Any) -> dict[str, Any]:
    """The ``corpus check --json`` object: sizes, users, repetition, concentration, PII, skipped rows."""
    per_user = [len(v) for v in corpus.by_user().values()]
    return {
        "path": str(path),
        "documents": len(corpus),
        "users": len(per_user),
        "docs_per_user_min": min(per_user),
        "docs_per_user_max": max(per_user),
        "words": stats.words,
        "longest_document_words": stats.longest_document_words,
        "duplicate_line_share": stats.duplicate_line_share,
        "top1pct_users": stats.top1pct_users,
        "top1pct_user_share": stats.top1pct_user_share,
        "top1pct_document_share": stats.top1pct_document_share,
        "pii_per_1k_words": stats.pii_per_1k_words,
        "pii_per_entity": stats.pii_per_entity,
        "warnings": list(stats.warnings),
        "skipped_rows": [{"line": line, "reason": reason} for line, reason in report.skipped],
    }


def _print_check(path: Path, summary: dict[str, Any], stats: Any, report: Any) -> None:
    """The corpus check as a few lines, then each skipped row and each warning."""
    out.print(
        f"[bold]{path}[/]: {summary['documents']} documents from {summary['users']} users "
        f"({summary['docs_per_user_min']}-{summary['docs_per_user_max']} per user), {stats.words:,} words"
    )
    out.print(f"  repeated lines: {stats.duplicate_line_share:.1%} of non-empty lines occur more than once")
    out.print(
        f"  top 1% of users ({stats.top1pct_users}): {stats.top1pct_user_share:.1%} of the words, "
        f"{stats.top1pct_document_share:.1%} of the documents"
    )
    entities = ", ".join(f"{k} {v}" for k, v in stats.pii_per_entity.items()) or "none"
    out.print(f"  PII density (regex detectors): {stats.pii_per_1k_words} spans per 1,000 words ({entities})")
    for line, reason in report.skipped:
        out.print(f"  [yellow]skipped[/] line {line}: {reason}")
    for w in stats.warnings:
        out.print(f"  [yellow]warning:[/] {w}")
