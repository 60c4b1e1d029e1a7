"""CLI of the attacks area: ``lmleak exposure``, ``lmleak mia``, ``lmleak experiment crt`` (paper 002 §5).

Thin: parse, load, call one library function, write the run directory, print a summary table.
Heavy imports live inside the commands so ``lmleak --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lmleak.cli.common import info, out, print_json, quiet


def load_scoring_model(spec: str) -> Any:
    """Load a model for scoring: the models helper's ``load_model`` when present, else a small-model dir
    or ``fake:<corpus.jsonl>``."""
    try:
        from lmleak.models.loading import load_model
    except ImportError:  # until the models area lands
        load_model = None
    if load_model is not None:
        return load_model(spec)
    from lmleak.errors import ModelError

    if spec.startswith("fake:"):
        import json

        from lmleak.models.fake import FakeLM

        p = Path(spec[5:])
        if not p.is_file():
            raise ModelError(f"{p}: corpus for the fake model not found")
        texts = [json.loads(ln)["text"] for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
        return FakeLM.from_texts(texts, order=4, name=f"fake:{p.name}")
    p = Path(spec)
    if (p / "lmleak_model.json").is_file():
        from lmleak.models.small import load_small_model

        return load_small_model(p)
    raise ModelError(
        f"cannot load model {spec!r}: expected a directory written by `lmleak train` or fake:<corpus.jsonl>"
    )


def scenario(
    *,
    attack: str,
    access: str,
    target: str,
    knowledge: tuple[str, ...] = (),
    resources: tuple[str, ...] = (),
    anonymization: str = "identity",
    notes: str | None = None,
) -> dict[str, Any]:
    """The KART scenario record of a run (``lmleak.scenarios.scenario_record`` when it exists)."""
    try:
        from lmleak.scenarios import scenario_record
    except ImportError:
        scenario_record = None
    if scenario_record is not None:
        return dict(
            scenario_record(
                attack=attack,
                knowledge=knowledge,
                anonymization=anonymization,
                resources=resources,
                access=access,
                target=target,
                notes=notes,
            )
        )
    return {
        "attack": attack,
        "knowledge": list(knowledge),
        "anonymization": anonymization,
        "resources": list(resources),
        "access": access,
        "target": target,
        "notes": notes,
    }


def parse_list_options(args: list[str], names: set[str]) -> dict[str, list[str]]:
    """Greedy multi-value options: ``--gammas 0 0.1 --archs lstm gpt`` (or ``--gammas=0,0.1``).

    Example:
        >>> parse_list_options(["--gammas", "0", "0.1", "--archs=lstm,gpt"], {"--gammas", "--archs"})
        {'--gammas': ['0', '0.1'], '--archs': ['lstm', 'gpt']}
    """
    from lmleak.errors import ConfigError, did_you_mean

    out: dict[str, list[str]] = {}
    cur: str | None = None
    for a in args:
        if a.startswith("--"):
            name, _, val = a.partition("=")
            if name not in names:
                raise ConfigError(f"unknown option {name!r}.{did_you_mean(name, names)}")
            cur = name
            out[cur] = [v for v in val.split(",") if v] if val else []
        elif cur is None:
            raise ConfigError(f"unexpected argument {a!r}")
        else:
            out[cur].extend(v for v in a.split(",") if v)
    for k, v in out.items():
        if not v:
            raise ConfigError(f"{k} needs at least one value")
    return out


def register(app: typer.Typer, groups: dict[str, typer.Typer]) -> None:
    """Add ``exposure``, ``mia`` and the ``experiment`` group with ``crt``."""
    app.command("exposure")(exposure_cmd)
    app.command("mia")(mia_cmd)
    if "experiment" not in groups:
        groups["experiment"] = typer.Typer(
            help="Reproduce the papers' experiments end to end.", no_args_is_help=True
        )
        app.add_typer(groups["experiment"], name="experiment")
    # --gammas / --archs take several values each (as the paper's sweep is written), which click
    # options cannot; they arrive as extra args and are parsed by parse_list_options.
    groups["experiment"].command(
        "crt", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
    )(crt_cmd)


def exposure_cmd(
    model: Annotated[
        str, typer.Option("--model", "-m", help="Model directory, GGUF, smollm2-135m or fake:<corpus.jsonl>.")
    ],
    canaries: Annotated[
        Path, typer.Option("--canaries", help="canaries.jsonl (secret, prefix, repeats, user_id).")
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Run directory to write exposure.parquet and summary.json.")
    ],
    alphabet: Annotated[str | None, typer.Option(help="Alphabet of the secrets (default: digits).")] = None,
    extrapolate: Annotated[
        bool, typer.Option("--extrapolate", help="Add the skew-normal estimate (Carlini et al. §4.3).")
    ] = False,
    sample_size: Annotated[int, typer.Option(help="Candidates sampled for the skew-normal fit.")] = 5000,
    max_candidates: Annotated[
        int, typer.Option(help="Largest |R| ranked exactly; larger formats are extrapolated.")
    ] = 10_000_000,
    seed: Annotated[int, typer.Option()] = 0,
    quiet_: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Canary exposure (Carlini et al. 2019; paper 002 §5.1): exact rank of each canary among all candidates."""
    import math
    import time

    from lmleak.attacks.exposure import exposure_table, measure_exposure, read_canaries
    from lmleak.attacks.trie import SearchStats
    from lmleak.runs import secure_dir, write_parquet, write_summary

    quiet(quiet_ or as_json)
    records = read_canaries(canaries)
    lm = load_scoring_model(model)
    info(f"ranking {len(records)} canaries with {lm.name}")
    stats = SearchStats()
    t0 = time.perf_counter()
    results = measure_exposure(
        lm,
        records,
        alphabet=alphabet,
        max_enumerable=max_candidates,
        extrapolate=extrapolate,
        sample_size=sample_size,
        seed=seed,
        stats=stats,
        work_dir=Path(out_dir) / "passes" / "exposure",
    )
    seconds = time.perf_counter() - t0
    table = exposure_table(results)
    run = secure_dir(out_dir)
    write_parquet(table, run / "exposure.parquet")
    best = max(results, key=lambda r: r.exposure_bits)
    summary = {
        "attack": "canary_exposure",
        "model": lm.name,
        "canaries": str(canaries),
        "num_canaries": len(results),
        "max_exposure": best.exposure_bits,
        "max_exposure_secret_rank": best.rank,
        "max_possible_exposure": max(math.log2(r.num_candidates) for r in results),
        "mean_exposure": float(table["exposure_bits"].mean()),
        "methods": sorted(set(table["method"])),
        "rank_rule": "1 + #strictly more likely (beyond 1e-4 nats) + floor(#other ties / 2)",
        "search": {
            "nodes_scored": stats.nodes_scored,
            "model_calls": stats.model_calls,
            "tokens_fed": stats.tokens_fed,
        },
        "seconds": seconds,
        "scenario": scenario(
            attack="canary_exposure",
            access="scores",
            target="canary_secret",
            knowledge=("canary_prefix", "secret_format"),
            notes="rank of each inserted canary among all candidates of its format (Carlini et al. 2019)",
        ),
    }
    write_summary(run, summary)
    if as_json:
        print_json(summary)
        return
    from rich.table import Table

    t = Table(title=f"Canary exposure — {lm.name}")
    for col in ("secret", "repeats", "rank", "exposure (bits)", "method"):
        t.add_column(col)
    for r in results:
        t.add_row(
            r.secret,
            str(r.repeats or ""),
            "" if r.rank is None else str(r.rank),
            f"{r.exposure_bits:.2f}",
            r.method,
        )
    out.print(t)
    out.print(
        f"max exposure {best.exposure_bits:.2f} of {summary['max_possible_exposure']:.2f} bits -> {run}"
    )


def mia_cmd(
    model: Annotated[str, typer.Option("--model", "-m", help="Target model.")],
    members: Annotated[
        Path, typer.Option("--members", help="Texts that were in training (JSONL with 'text', or lines).")
    ],
    non_members: Annotated[
        Path, typer.Option("--non-members", help="Same-format texts that were not in training.")
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Run directory.")],
    group_size: Annotated[int, typer.Option(help="Texts per group for the group attack (0: skip it).")] = 20,
    num_groups: Annotated[
        int | None, typer.Option(help="Draw this many groups per side (A.4) instead of disjoint groups.")
    ] = None,
    reference: Annotated[
        str | None, typer.Option("--reference", help="Public reference model for calibration.")
    ] = None,
    num_per_side: Annotated[
        int, typer.Option("--n", help="Texts per side (balanced; A.4 uses 1000).")
    ] = 1000,
    min_k: Annotated[float, typer.Option(help="Fraction of least likely tokens for Min-K% Prob.")] = 0.2,
    field: Annotated[str, typer.Option(help="JSONL field holding the text.")] = "text",
    seed: Annotated[int, typer.Option()] = 0,
    quiet_: Annotated[bool, typer.Option("--quiet", "-q")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Membership inference (paper 002 A.4): individual and group attacks, AUC, TPR at low FPR, ROC plot."""
    import pandas as pd

    from lmleak.attacks.membership import evaluate_membership, read_texts
    from lmleak.attacks.roc import plot_roc
    from lmleak.errors import ConfigError
    from lmleak.runs import secure_dir, write_parquet, write_summary

    quiet(quiet_ or as_json)
    if not 0 < min_k <= 1:
        raise ConfigError(f"--min-k must be in (0, 1], got {min_k}", field="min_k")
    if group_size < 0:
        raise ConfigError("--group-size must be >= 0", field="group_size")
    mem = read_texts(members, field=field)
    non = read_texts(non_members, field=field)
    lm = load_scoring_model(model)
    ref = load_scoring_model(reference) if reference else None
    info(f"scoring {min(len(mem), len(non), num_per_side)} texts per side with {lm.name}")
    res = evaluate_membership(
        lm,
        mem,
        non,
        num_per_side=num_per_side,
        group_size=group_size,
        num_groups=num_groups,
        reference=ref,
        min_k=min_k,
        seed=seed,
        work_dir=Path(out_dir) / "passes" / "mia-scores",
    )
    run = secure_dir(out_dir)
    write_parquet(res.scores, run / "mia_scores.parquet")
    write_parquet(res.metrics, run / "mia_metrics.parquet")
    curves = pd.DataFrame(
        [
            {"curve": name, "fpr": float(f), "tpr": float(tp), "threshold": float(th)}
            for name, c in res.curves.items()
            for f, tp, th in zip(c.fpr, c.tpr, c.thresholds, strict=True)
        ]
    )
    write_parquet(curves, run / "roc.parquet")
    plot_roc(res.curves, str(run / "roc.png"), title=f"Membership inference — {lm.name}")
    rows = res.metrics.to_dict(orient="records")
    ind = next(r for r in rows if r["level"] == "individual" and r["feature"] == "perplexity")
    grp = next((r for r in rows if r["level"] != "individual" and r["feature"] == "perplexity"), None)
    summary = {
        "attack": "membership_inference",
        "model": lm.name,
        "reference": None if ref is None else ref.name,
        "num_per_side": res.num_per_side,
        "group_size": group_size,
        "accuracy": ind["accuracy"],
        "auc": ind["auc"],
        "mia_accuracy": ind["accuracy"],
        "mia_auc": ind["auc"],
        "group_accuracy": None if grp is None else grp["accuracy"],
        "metrics": rows,
        "scenario": scenario(
            attack="membership_inference",
            access="scores",
            target="membership",
            knowledge=("candidate_texts",),
            resources=("reference_model",) if ref is not None else (),
            notes="balanced members vs same-format non-members (paper 002 A.4)",
        ),
    }
    write_summary(run, summary)
    if as_json:
        print_json(summary)
        return
    from rich.table import Table

    t = Table(title=f"Membership inference — {lm.name} ({res.num_per_side} per side)")
    for col in ("level", "score", "accuracy", "AUC", "TPR@1%FPR", "TPR@0.1%FPR"):
        t.add_column(col)
    for r in rows:
        t.add_row(
            r["level"],
            r["feature"],
            f"{r['accuracy']:.3f}",
            f"{r['auc']:.3f}",
            f"{r['tpr_at_1pct_fpr']:.3f}",
            f"{r['tpr_at_0.1pct_fpr']:.3f}",
        )
    out.print(t)
    out.print(f"-> {run}")


def crt_cmd(
    ctx: typer.Context,
    out_dir: Annotated[Path, typer.Option("--out", help="Run directory.")],
    corpus: Annotated[
        Path | None, typer.Option("--corpus", help="Corpus JSONL (default: synthesise CustomerSim).")
    ] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Tiny sizes: finishes in a few minutes.")] = False,
    seed: Annotated[int, typer.Option()] = 0,
    epochs: Annotated[int | None, typer.Option("--epochs", help="Training epochs of every model (default 2; --quick 1).")] = None,
    users: Annotated[int | None, typer.Option("--users", help="Synthetic users (default 60; --quick 24).")] = None,
    lr: Annotated[float | None, typer.Option("--lr", help="Learning rate (default: the trainer's per-architecture one).")] = None,
    quiet_: Annotated[bool, typer.Option("--quiet", "-q")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Paper 002 Figs. 2-6: No-DP, redaction, DP-SGD, CRT and selective DP across policy recall γ.

    Also takes --gammas G [G ...] (policy false-negative rates; default 0 0.1 0.2 0.3 0.4 0.5,
    --quick: 0 0.5) and --archs A [A ...] (lstm, gpt; default both), each followed by its values.
    """
    from lmleak.experiments.crt import CRTExperimentConfig, run_crt_experiment

    quiet(quiet_ or as_json)
    lists = parse_list_options(ctx.args, {"--gammas", "--archs"})
    try:
        gammas = tuple(float(g) for g in lists["--gammas"]) if "--gammas" in lists else None
    except ValueError:
        from lmleak.errors import ConfigError

        raise ConfigError(f"--gammas takes numbers, got {lists['--gammas']}", field="gammas") from None
    archs = tuple(lists["--archs"]) if "--archs" in lists else None
    cfg = CRTExperimentConfig.quick() if quick else CRTExperimentConfig()
    cfg = cfg.with_options(gammas=gammas, archs=archs, seed=seed, epochs=epochs, users=users, lr=lr)
    result = run_crt_experiment(out_dir, cfg, corpus=corpus)
    if as_json:
        print_json(result["summary"])
        return
    from rich.table import Table

    table = result["table"]
    t = Table(title="CRT experiment (paper 002 §5)")
    cols = [
        "arch",
        "method",
        "gamma",
        "ppl",
        "acc_top1",
        "epsilon",
        "bayes_epsilon",
        "max_exposure",
        "mia_accuracy",
        "group_mia_accuracy",
    ]
    for c in cols:
        t.add_column(c)
    for _, r in table.iterrows():
        t.add_row(*[f"{r[c]:.3g}" if isinstance(r[c], float) else str(r[c]) for c in cols])
    out.print(t)
    out.print(f"-> {out_dir}")
