"""The studies of paper 001 §6 as functions that write tables and plots into a run directory.

- :func:`snapshot_study` (§6.1, Fig. 5): the report over a model's per-epoch checkpoints
  (``MODEL/snapshots/epoch-N``): train/validation perplexity per epoch, the histogram of unique
  sequence lengths per epoch, the perplexity distribution of the unique sequences.
- :func:`compare_models` (§6.2, Table 2): several models trained on the same data: validation
  perplexity and accuracy, number of unique sequences, ε_l.
- :func:`hardening_curve` (§6.1, last bullet): "no prediction when the model's top-1 perplexity is
  above a threshold" — accuracy and unique sequences per threshold, from the ledger alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lmleak.data.corpus import Corpus
from lmleak.data.loaders import load_corpus
from lmleak.errors import InputError
from lmleak.figures import pyplot, save_figure
from lmleak.ledger.index import CorpusIndex
from lmleak.ledger.ledger import Ledger, build_ledger, read_ledger
from lmleak.report.leakage import ReportSettings, analyse, build_index, run_report
from lmleak.report.metrics import corpus_perplexity, top_k_accuracy, unique_sequences
from lmleak.report.public import load_any_model
from lmleak.runs import secure_dir, write_parquet, write_summary, writes_run


def snapshot_dirs(model_dir: str | Path) -> list[tuple[int, Path]]:
    """``(epoch, path)`` of every ``MODEL/snapshots/epoch-N`` folder, by epoch.

    Raises :class:`~lmleak.errors.InputError` when there is none.
    """

    root = Path(model_dir) / "snapshots"
    found = []
    for p in root.glob("epoch-*") if root.is_dir() else []:
        m = re.fullmatch(r"epoch-(\d+)", p.name)
        if m and p.is_dir():
            found.append((int(m.group(1)), p))
    if not found:
        raise InputError(
            "no per-epoch snapshots found",
            path=root,
            hint="train with snapshots enabled (TrainConfig(snapshots=True))",
        )
    return sorted(found)


def evaluate(model: Any, corpus: Corpus, run_dir: Path, k: int) -> dict[str, float | None]:
    """Perplexity and top-k accuracy of ``model`` on ``corpus`` through a ledger (validation sets)."""
    led = build_ledger(model, corpus, run_dir)
    return {"perplexity": corpus_perplexity(led.logprobs), "accuracy": top_k_accuracy(led.ranks, k)}


def hardening_curve(
    ledger: Ledger,
    index: CorpusIndex,
    tokenizer: Any,
    thresholds: Sequence[float],
    *,
    k: int = 1,
    val_ledger: Ledger | None = None,
) -> Any:
    """Accuracy and unique leaked sequences as the abstention threshold varies (§6.1).

    The model returns no prediction at a position whose top-1 perplexity ``exp(-top1_logprob)``
    exceeds the threshold, so that position is neither a correct prediction nor part of a run.
    ``inf`` is the unhardened model. Accuracy is measured on ``val_ledger`` when given (the paper
    reports validation accuracy), else on the training ledger.
    """
    import pandas as pd

    rows = []
    cfg = ReportSettings(k=(k,))
    for thr in thresholds:
        limit = None if not np.isfinite(thr) else float(thr)
        seqs, _, _ = analyse(ledger, index, tokenizer, cfg, max_top1_perplexity=limit)
        acc_led = val_ledger if val_ledger is not None else ledger
        with np.errstate(over="ignore", invalid="ignore"):
            answered = np.exp(-acc_led.top1_logprobs.astype(np.float64)) <= (
                np.inf if limit is None else limit
            )
        correct = (acc_led.ranks <= k) & answered
        rows.append(
            {
                "threshold": float(thr),
                "accuracy": float(correct.mean()) if correct.size else None,
                "answered": float(answered.mean()) if answered.size else None,
                "num_sequences": int(len(seqs)),
                "unique_sequences": unique_sequences(seqs["users_in_d"].to_numpy()) if len(seqs) else 0,
            }
        )
    return pd.DataFrame(rows)


def _plot(path: Path, draw: Any) -> Path:
    fig, ax = pyplot().subplots(figsize=(6.4, 4.0))
    draw(ax)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    return path


def _snapshot_figures(out: Path, table: Any, useqs: Any) -> None:
    """Fig. 5 a-c of paper 001 from the per-epoch table and the unique sequences of every epoch."""
    epochs = table["epoch"].tolist()

    def fig_a(ax: Any) -> None:
        ax.plot(epochs, table["train_perplexity"], marker="o", label="train")
        if table["val_perplexity"].notna().any():
            ax.plot(epochs, table["val_perplexity"], marker="o", label="validation")
        ax.set(xlabel="epoch", ylabel="perplexity (per token)", title="Perplexity per epoch")
        ax.legend()

    def fig_b(ax: Any) -> None:
        if len(useqs):
            lengths = sorted(useqs["length_tokens"].unique())
            width = 0.8 / max(len(epochs), 1)
            for j, e in enumerate(epochs):
                cnt = useqs[useqs["epoch"] == e]["length_tokens"].value_counts()
                ax.bar(
                    np.arange(len(lengths)) + j * width,
                    [int(cnt.get(x, 0)) for x in lengths],
                    width,
                    label=f"epoch {e}",
                )
            ax.set_xticks(np.arange(len(lengths)) + 0.4 - width / 2, [str(x) for x in lengths])
            ax.legend(fontsize=7)
        ax.set(
            xlabel="unique sequence length (tokens)",
            ylabel="# unique sequences",
            title="Unique sequence lengths per epoch",
        )

    def fig_c(ax: Any) -> None:
        data = [useqs[useqs["epoch"] == e]["perplexity"].dropna().to_numpy() for e in epochs]
        keep = [(e, d) for e, d in zip(epochs, data, strict=True) if d.size]
        if keep:
            ax.violinplot([d for _, d in keep], positions=[e for e, _ in keep], showmedians=True)
            ax.set_yscale("log")
        ax.set(xlabel="epoch", ylabel="perplexity (per word)", title="Perplexity of unique sequences")

    _plot(out / "fig5a_perplexity.png", fig_a)
    _plot(out / "fig5b_unique_lengths.png", fig_b)
    _plot(out / "fig5c_unique_perplexity.png", fig_c)


def _as_corpus(corpus: Corpus | str | Path) -> Corpus:
    """A corpus, or the corpus file it names (loaded with :func:`~lmleak.data.loaders.load_corpus`)."""
    return corpus if isinstance(corpus, Corpus) else load_corpus(corpus)


@writes_run("out_dir")
def snapshot_study(
    model_dir: str | Path,
    corpus: Corpus | str | Path,
    out_dir: str | Path,
    *,
    k: int = 1,
    val_corpus: Corpus | str | Path | None = None,
    load: Any = None,
) -> Any:
    """Run the report on every snapshot epoch and write the Fig. 5 tables and plots.

    ``corpus`` and ``val_corpus`` may be corpus files (loaded first, in that order).

    Writes ``snapshots.parquet`` (epoch, train/val perplexity, val accuracy, #sequences,
    #unique), ``snapshot_sequences.parquet`` (epoch, length and perplexity of every unique
    sequence), ``fig5a_perplexity.png``, ``fig5b_unique_lengths.png``,
    ``fig5c_unique_perplexity.png`` and ``summary.json``; each epoch's report goes to
    ``out_dir/epoch-N``.
    """
    import pandas as pd

    corpus = _as_corpus(corpus)
    val_corpus = None if val_corpus is None else _as_corpus(val_corpus)
    load = load or load_any_model
    out = secure_dir(out_dir)
    rows, uniq = [], []
    for epoch, path in snapshot_dirs(model_dir):
        model = load(path)
        run = out / f"epoch-{epoch}"
        summary = run_report(
            model, corpus, run, ReportSettings(k=(k,), index_cache=str(out / ".index-cache"))
        )
        seqs = pd.read_parquet(run / "sequences.parquet")
        u = seqs[seqs["users_in_d"] == 1]
        for length, pp in zip(u["length_tokens"], u["perplexity"], strict=True):
            uniq.append({"epoch": epoch, "length_tokens": int(length), "perplexity": float(pp)})
        row = {
            "epoch": epoch,
            "train_perplexity": summary["perplexity"],
            "train_accuracy": summary["top_k_accuracy"],
            "num_sequences": summary["num_sequences"],
            "unique_sequences": summary["unique_sequences"],
            "val_perplexity": None,
            "val_accuracy": None,
        }
        if val_corpus is not None:
            ev = evaluate(model, val_corpus, run / "val", k)
            row["val_perplexity"], row["val_accuracy"] = ev["perplexity"], ev["accuracy"]
        rows.append(row)
    table = pd.DataFrame(rows)
    useqs = pd.DataFrame(uniq, columns=["epoch", "length_tokens", "perplexity"])
    write_parquet(table, out / "snapshots.parquet")
    write_parquet(useqs, out / "snapshot_sequences.parquet")
    _snapshot_figures(out, table, useqs)
    write_summary(out, {"stage": "report_snapshots", "k": k, "epochs": table.to_dict("records")})
    return table


@writes_run("out_dir")
def compare_models(
    models: Mapping[str, str | Path],
    corpus: Corpus | str | Path,
    out_dir: str | Path,
    *,
    k: int = 1,
    val_corpus: Corpus | str | Path | None = None,
    public_model: str | Path | None = None,
    load: Any = None,
) -> Any:
    """The Table-2 comparison: one report per model (``out_dir/<name>``) and ``compare.parquet``.

    ``corpus`` and ``val_corpus`` may be corpus files (loaded first, in that order)."""
    import pandas as pd

    corpus = _as_corpus(corpus)
    val_corpus = None if val_corpus is None else _as_corpus(val_corpus)
    load = load or load_any_model
    out = secure_dir(out_dir)
    rows = []
    for name, spec in models.items():
        model = load(spec)
        run = out / name
        model_dir = Path(spec) if Path(spec).is_dir() else None
        s = run_report(
            model, corpus, run, ReportSettings(k=(k,)), public_model=public_model, model_dir=model_dir
        )
        row = {
            "model": name,
            "val_perplexity": None,
            "val_accuracy": None,
            "unique_sequences": s["unique_sequences"],
            "leakage_epsilon": s["leakage_epsilon"],
            "train_perplexity": s["perplexity"],
        }
        if val_corpus is not None:
            ev = evaluate(model, val_corpus, run / "val", k)
            row["val_perplexity"], row["val_accuracy"] = ev["perplexity"], ev["accuracy"]
        rows.append(row)
    table = pd.DataFrame(rows)
    write_parquet(table, out / "compare.parquet")
    write_summary(out, {"stage": "report_compare", "k": k, "models": table.to_dict("records")})
    return table


def hardening_study(
    run_dir: str | Path,
    tokenizer_model: Any | None,
    thresholds: Sequence[float],
    *,
    k: int = 1,
    val_run: str | Path | None = None,
) -> Any:
    """:func:`hardening_curve` over a finished report's ledger; writes ``hardening.parquet`` and a plot.

    ``tokenizer_model`` is unused by the counts (sequences are compared by token ids) and may be
    None; texts are not needed for the curve.
    """

    run = Path(run_dir)
    ledger = read_ledger(run)
    val = read_ledger(val_run) if val_run else None
    index = build_index(ledger)
    tok = tokenizer_model.tokenizer if tokenizer_model is not None else _NullTokenizer()
    table = hardening_curve(ledger, index, tok, list(thresholds) + [float("inf")], k=k, val_ledger=val)
    write_parquet(table, run / "hardening.parquet")

    def draw(ax: Any) -> None:
        fin = table[np.isfinite(table["threshold"])]
        ax.plot(fin["threshold"], fin["unique_sequences"], marker="o", color="C3", label="# unique")
        ax.set(xlabel="top-1 perplexity threshold (abstain above)", ylabel="# unique sequences")
        ax2 = ax.twinx()
        ax2.plot(fin["threshold"], fin["accuracy"], marker="s", color="C0", label="accuracy")
        ax2.set_ylabel("top-k accuracy")
        ax.set_title("API hardening")

    _plot(run / "hardening.png", draw)
    return table


class _NullTokenizer:
    """Decodes token ids as their numbers (the hardening curve needs no text)."""

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(str(int(i)) for i in ids)
