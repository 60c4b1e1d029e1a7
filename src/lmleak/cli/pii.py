"""CLI of the PII / CRT pre-processing area (paper 002): ``lmleak pii evaluate|detect`` and
``lmleak dedup|redact|split``. Thin: parse, call one library function, write files, print a table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lmleak.cli.common import (
    OPEN_UNIT,
    CorpusOpt,
    JsonOpt,
    OutDirOpt,
    QuietOpt,
    number,
    out,
    print_json,
    quiet,
)
from lmleak.cli.options import takes
from lmleak.pii.policies import PolicyChoice
from lmleak.render.terminal import policy_lines, step_table, table
from lmleak.words import plural

pii_app = typer.Typer(
    help="PII detection policies: detect spans, evaluate against ground truth.\n\n"
    "Example: lmleak pii detect --corpus data/corpus.jsonl --policy regex",
    no_args_is_help=True,
)


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add the ``pii`` group and the top-level ``dedup``, ``redact`` and ``split`` commands."""
    if "pii" not in groups:
        groups["pii"] = pii_app
        app.add_typer(pii_app, name="pii")
    else:  # another area created the group first: add our commands to it
        groups["pii"].command("evaluate")(evaluate_cmd)
        groups["pii"].command("detect")(detect_cmd)
    app.command("dedup")(dedup_cmd)
    app.command("redact")(redact_cmd)
    app.command("split")(split_cmd)


#: ``--fp-rate`` of dedup and split
FpRateOpt = Annotated[
    float, typer.Option("--fp-rate", help="Configured Bloom false-positive rate.", parser=OPEN_UNIT)
]


@pii_app.command("evaluate")
@takes(policy=PolicyChoice)
def evaluate_cmd(
    corpus: CorpusOpt,
    secrets: Annotated[
        Path,
        typer.Option("--secrets", help="secrets.jsonl ground truth (doc_id, start, end, entity, value)."),
    ],
    policy: PolicyChoice,
    min_overlap: Annotated[
        float,
        typer.Option(
            help="Fraction of a span that must be covered to count as matched.", parser=number(gt=0, le=1)
        ),
    ] = 0.5,
    save: Annotated[Path | None, typer.Option("--save", help="Also write the table as JSON here.")] = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by", help="shape: recall and γ per name shape too, and the shapes the policy misses."
        ),
    ] = None,
    as_json: JsonOpt = False,
    q: QuietOpt = False,
) -> None:
    """Per-entity precision, recall and γ = 1 − recall of a policy (paper 002, Prop. 6 / Thm. 8).

    Example: lmleak pii evaluate --corpus data/corpus.jsonl --secrets data/secrets.jsonl --policy regex
    """
    # lazy: the evaluation imports numpy (its intervals)
    from lmleak.pii.evaluate import evaluate_policy_files
    from lmleak.train.sentences import sentence_spans

    quiet(q or as_json)
    result = evaluate_policy_files(
        corpus, secrets, policy, min_overlap=min_overlap, splitter=sentence_spans, save=save, by=by
    )
    if as_json:
        print_json(result.to_dict())
        return
    for shown in policy_lines(result, corpus):
        out.print(shown)


@pii_app.command("detect")
@takes(policy=(PolicyChoice, ("base_recall",)))
def detect_cmd(
    corpus: Annotated[Path | None, typer.Option("--corpus", help="Corpus file to scan.")] = None,
    text: Annotated[str | None, typer.Option("--text", help="Scan this text instead of a corpus.")] = None,
    *,
    policy: PolicyChoice,
    save: Annotated[Path | None, typer.Option("--save", help="Write the spans as JSONL here.")] = None,
    as_json: JsonOpt = False,
    q: QuietOpt = False,
) -> None:
    """Print (or save) the PII spans a policy detects, and the counts per entity.

    Example: lmleak pii detect --text "write to ann.lee@example.org or call (555) 555-0100"
    """
    # lazy: the detectors load only when the command runs
    from lmleak.pii.detect import detect_pii

    quiet(q or as_json)
    result = detect_pii(
        policy.policy, corpus=corpus, text=text, recall=policy.recall, seed=policy.seed, save=save
    )
    if as_json:
        print_json(result.summary(spans=text is not None or save is None))
        return
    from rich.text import Text

    if text is not None:  # a span's value is the corpus's text, never Rich markup ('[proj-dev]' would vanish)
        rows = [
            (r["start"], r["end"], r["entity"], f"{r['score']:.2f}", Text(str(r["value"])))
            for r in result.rows()
        ]
        out.print(
            table(f"spans found by {result.policy}", ("start", "end", "entity", "score", "value"), rows)
        )
    title = f"detections per entity ({plural(result.documents, 'document')})"
    out.print(table(title, ("entity", "count"), result.counts.items(), right=1))


def dedup_cmd(
    corpus: CorpusOpt,
    out_dir: OutDirOpt,
    mode: Annotated[str, typer.Option("--mode", help="exact (SHA-1) | bloom (one pass, rbloom).")] = "exact",
    fp_rate: FpRateOpt = 1e-6,
    as_json: JsonOpt = False,
    q: QuietOpt = False,
) -> None:
    """Sentence-split, then mask every repeated sentence from its second occurrence (paper 002, Dedup).

    Example: lmleak dedup --corpus data/corpus.jsonl --out runs/dedup

    Writes ``deduped.jsonl`` (sentence documents ``<doc_id>#s<i>``) and ``dedup.json``.
    """
    # lazy: the pre-processing loads only when the command runs
    from lmleak.train.preprocess import dedup_to_dir

    quiet(q or as_json)
    result = dedup_to_dir(corpus, out_dir, mode=mode, fp_rate=fp_rate)
    _print_summary(result.to_dict(), as_json, "dedup")


@takes(policy=PolicyChoice)
def redact_cmd(
    corpus: CorpusOpt,
    out_dir: OutDirOpt,
    policy: PolicyChoice,
    as_json: JsonOpt = False,
    q: QuietOpt = False,
) -> None:
    """Sentence-split (if not yet), then replace every detected span with <MASK> (paper 002, Redact_π).

    Example: lmleak redact --corpus data/corpus.jsonl --out runs/redacted --policy regex

    Writes ``redacted.jsonl`` and ``redaction.json`` (what was removed, counted per entity).
    """
    # lazy: the pre-processing loads only when the command runs
    from lmleak.train.preprocess import redact_to_dir

    quiet(q or as_json)
    result = redact_to_dir(corpus, out_dir, policy.detector())
    _print_summary(result.to_dict(), as_json, "redact")


@takes(policy=PolicyChoice)
def split_cmd(
    corpus: CorpusOpt,
    out_dir: OutDirOpt,
    policy: PolicyChoice,
    conservative: Annotated[
        str | None, typer.Option("--conservative", help="π_c policy name (e.g. conservative).")
    ] = None,
    dedup: Annotated[str, typer.Option("--dedup", help="exact | bloom | none.")] = "exact",
    fp_rate: FpRateOpt = 1e-6,
    as_json: JsonOpt = False,
    q: QuietOpt = False,
) -> None:
    """CRT pre-processing (paper 002, Algorithm 1 lines 1-4): split, Dedup, Redact_π, D_pub / D_pri.

    Example: lmleak split --corpus data/corpus.jsonl --out runs/split

    Writes ``redacted.jsonl`` (D''), ``public.jsonl``, ``private.jsonl`` and ``split.json``.
    """
    # lazy: the pre-processing loads only when the command runs
    from lmleak.train.preprocess import split_to_dir

    quiet(q or as_json)
    result = split_to_dir(
        corpus, out_dir, policy.detector(), conservative=conservative, dedup=dedup, fp_rate=fp_rate
    )
    _print_summary(result.to_dict(), as_json, "split")


def _print_summary(summary: dict[str, Any], as_json: bool, stage: str) -> None:
    if as_json:
        print_json(summary)
        return
    out.print(step_table(summary, stage, Path(next(iter(summary["files"].values()))).parent))
