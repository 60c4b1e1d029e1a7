"""Black-box probing by generation (paper 003 §3.3.1, appendix A.3): beam search or N samples, then
exact match and the string metrics of B.1.2."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lmleak.models.base import Capability, require
from lmleak.probe.metrics import email_id_match, exact_match, phone_metrics
from lmleak.probe.settings import ProbeSettings
from lmleak.probe.templates import Probe, max_new_tokens
from lmleak.progress import track
from lmleak.shards import ModelWork, ShardEngine, Shipped, fingerprint_of, run_rows

#: Probes whose beams advance together in one batched forward pass per step.
GENERATE_BATCH = 32


def _generate_chunk(chunk: list[Probe], *, model: Any, **options: Any) -> list[dict[str, Any]]:
    return generate_probes(model, chunk, **options)


def generate_probes(
    model: Any,
    probes: Sequence[Probe],
    settings: ProbeSettings = ProbeSettings(),  # noqa: B008 - frozen, so shared safely
    *,
    budgets: Mapping[str, int] | None = None,
    work_dir: str | Path | None = None,
    shard_size: int = 128,
    engine: ShardEngine | None = None,
    model_spec: Any = None,
) -> list[dict[str, Any]]:
    """One row per (probe, returned sequence): generated text, exact match and string metrics.

    Beam search with ``settings.beams`` beams (A.3; the best beam is kept), or ``settings.samples``
    > 0 sampled continuations per prompt (§3.3.1 "sends the prompts N times", seeded by
    ``settings.seed``); ``budgets`` overrides A.3's maximum new tokens per target type. With
    ``work_dir``, in resumable shards of ``shard_size`` probes there (:func:`lmleak.shards.run_rows`),
    on ``engine`` (Ray actors load ``model_spec``, or receive ``model`` pickled when it is None).
    """
    require(model, Capability.GENERATE, attack="probe generation (paper 003)")
    if work_dir is not None:
        return _generate_sharded(
            model,
            list(probes),
            work_dir,
            settings,
            budgets=budgets,
            shard_size=shard_size,
            engine=engine,
            model_spec=model_spec,
        )
    probes = list(probes)
    if settings.samples > 0:
        generated = _sample_all(model, probes, samples=settings.samples, seed=settings.seed, budgets=budgets)
    else:
        generated = _beam_search_all(model, probes, beams=settings.beams, budgets=budgets)
    return [row for p, outs in zip(probes, generated, strict=True) for row in _generation_rows(p, outs)]


def _generate_sharded(
    model: Any,
    probes: list[Probe],
    work_dir: str | Path,
    settings: ProbeSettings,
    *,
    budgets: Mapping[str, int] | None,
    shard_size: int,
    engine: ShardEngine | None,
    model_spec: Any,
) -> list[dict[str, Any]]:
    """:func:`generate_probes` in resumable shards under ``work_dir`` (locally or on Ray actors)."""
    fp = fingerprint_of(
        "probe-generate",
        getattr(model, "name", ""),
        type(model).__name__,
        probes,
        settings.beams,
        settings.samples,
        settings.seed,
        sorted((budgets or {}).items()),
    )
    factory = ModelWork(
        _generate_chunk, {"model": model_spec or Shipped(model)}, settings=settings, budgets=budgets
    )
    return run_rows(
        probes,
        lambda chunk: generate_probes(model, chunk, settings, budgets=budgets),
        work_dir,
        fingerprint=fp,
        shard_size=shard_size,
        description="probing (generate)",
        engine=engine,
        factory=factory,
    )


def _sample_all(
    model: Any, probes: list[Probe], *, samples: int, seed: int, budgets: Mapping[str, int] | None
) -> list[list[str]]:
    """``samples`` sampled continuations of every probe's prompt (§3.3.1), one prompt at a time."""
    generated: list[list[str]] = [[] for _ in probes]
    for i in track(range(len(probes)), description="probing (generate)"):
        p = probes[i]
        generated[i] = model.generate(
            [p.prompt.rstrip()],
            max_new_tokens=max_new_tokens(p.target_type, budgets),
            do_sample=True,
            num_return_sequences=samples,
            seed=seed,
        )[0]
    return generated


def _beam_search_all(
    model: Any, probes: list[Probe], *, beams: int, budgets: Mapping[str, int] | None
) -> list[list[str]]:
    """The best beam of every probe (A.3), batched over probes that share a token budget."""
    generated: list[list[str]] = [[] for _ in probes]
    # beam search batched over probes with the same budget: one forward pass per step for all
    by_budget: dict[int, list[int]] = {}
    for i, p in enumerate(probes):
        by_budget.setdefault(max_new_tokens(p.target_type, budgets), []).append(i)
    chunks = [
        (n, idx[s : s + GENERATE_BATCH])
        for n, idx in by_budget.items()
        for s in range(0, len(idx), GENERATE_BATCH)
    ]
    for n, idx in track(chunks, description="probing (generate)", unit="batches"):
        # same text; a trailing space would be a lone token for BPE
        outs = model.generate([probes[i].prompt.rstrip() for i in idx], max_new_tokens=n, num_beams=beams)
        for i, o in zip(idx, outs, strict=True):
            generated[i] = o[:1]
    return generated


def _generation_rows(p: Probe, outs: list[str]) -> list[dict[str, Any]]:
    """One row per generated text of probe ``p``: exact match and the B.1.2 string metrics."""
    rows: list[dict[str, Any]] = []
    for j, text in enumerate(outs):
        # a hit on any of the person's values (every address of someone with several): which one
        matched = next((t for t in p.targets if exact_match(text, t)), None)
        row: dict[str, Any] = {
            "subject_id": p.subject_id,
            "target_type": p.target_type,
            "template": p.template_index,
            "prompt": p.prompt,
            "target": p.target,
            "sample": j,
            "generated": text,
            "exact_match": matched is not None,
            "matched": matched,
        }
        if p.target_type == "phone":
            row.update(phone_metrics(text, p.target))
        if p.target_type == "email":
            row["email_id"] = any(email_id_match(text, t) for t in p.targets)
        rows.append(row)
    return rows
