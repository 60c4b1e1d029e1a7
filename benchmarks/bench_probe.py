"""Batched beam-search probing vs one probe at a time (issue 19 item 7).

Prints ``batched_vs_serial_probe: X`` (goal >= 4): the time of
:func:`lmleak.probe.blackbox.generate_probes` over every probe of a run (the probes of all subjects
and templates that share a generation budget advance together, one forward pass per step) against
the same function called with one probe at a time, on the same model and probes, timed
interleaved (min over rounds; the median round ratio beside it). The work count (forward passes
and input tokens, padding included) is printed too. Both sides run the same search (with the key/value
cache where the model has one), so the ratio is what batching across probes buys. Correctness in the same run: the generated rows must be equal, or
the script exits 1. A check that chunks mix subjects and templates is printed as
``batch_mixes_subjects_templates``.

Usage: ``python benchmarks/bench_probe.py [--subjects 24] [--templates 3] [--beams 3] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from lmleak.data.synth.customersim import synthesize  # noqa: E402
from lmleak.models.small import SmallGPTConfig, build_tokenizer, new_small_gpt, save_small_model  # noqa: E402
from lmleak.probe.blackbox import generate_probes  # noqa: E402
from lmleak.probe.probing import collect_probes  # noqa: E402
from lmleak.probe.settings import ProbeSettings  # noqa: E402
from lmleak.probe.subjects import read_subjects  # noqa: E402
from lmleak.progress import set_enabled  # noqa: E402


class Counted:
    """Counts the model's forward passes and the input tokens they carry (a forward pre-hook)."""

    def __init__(self, module):
        self.calls = self.tokens = 0
        module.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, _module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        self.calls += 1
        self.tokens += 0 if ids is None else int(ids.numel())

    def reset(self):
        self.calls = self.tokens = 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subjects", type=int, default=24)
    ap.add_argument("--templates", type=int, default=3)
    ap.add_argument("--beams", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    set_enabled(False)
    torch.set_num_threads(args.threads)
    root = Path(tempfile.mkdtemp())
    paths = synthesize(root / "syn", users=args.subjects, dialogs_per_user=2, seed=0)
    texts = [json.loads(line)["text"] for line in paths["corpus"].read_text().splitlines() if line.strip()]
    tok = build_tokenizer(texts, kind="word", vocab_size=4000)
    module = new_small_gpt(len(tok), SmallGPTConfig(n_positions=256, n_embd=128, n_layer=2, n_head=4), seed=0)
    from lmleak.models.loading import load_model

    lm = load_model(str(save_small_model(module, tok, root / "model")))
    subjects = read_subjects(paths["subjects"])[: args.subjects]
    probes = [
        p for t in ("phone", "email") for p in collect_probes(subjects, t, level="twin", k=args.templates)
    ]
    budgets = {"phone": 12, "email": 20}  # A.3's budgets
    counter = Counted(lm.module)

    def batched():
        return generate_probes(lm, probes, ProbeSettings(beams=args.beams), budgets=budgets)

    def serial():
        rows = []
        for p in probes:
            rows.extend(generate_probes(lm, [p], ProbeSettings(beams=args.beams), budgets=budgets))
        return rows

    print(
        f"threads: {torch.get_num_threads()}  load: {os.getloadavg()[0]:.2f}  torch: {torch.__version__}  dtype: float32"
    )
    print(
        f"model_params: {sum(p.numel() for p in module.parameters())}  probes: {len(probes)}  "
        f"subjects: {len({p.subject_id for p in probes})}  templates: {args.templates}  beams: {args.beams}  "
        f"budgets: {budgets}"
    )
    want, got = serial(), batched()  # warm-up, and the correctness check
    if got != want:
        print("FAIL: batched probing generated other rows than one probe at a time")
        return 1
    # the first batch of a budget holds probes of several subjects and templates
    first = [p for p in probes if p.target_type == "phone"][:32]
    mixes = len({p.subject_id for p in first}) > 1 and len({p.template_index for p in first}) > 1
    print(f"batch_mixes_subjects_templates: {mixes}")
    tb, ts, ratios = [], [], []
    work = {}
    for _ in range(args.rounds):
        counter.reset()
        t = time.perf_counter()
        serial()
        ts.append(time.perf_counter() - t)
        work["serial"] = (counter.calls, counter.tokens)
        counter.reset()
        t = time.perf_counter()
        batched()
        tb.append(time.perf_counter() - t)
        work["batched"] = (counter.calls, counter.tokens)
        ratios.append(ts[-1] / tb[-1])
    print(f"serial_s: {min(ts):.2f}  batched_s: {min(tb):.2f}  rounds: {args.rounds}")
    print(
        f"forward_passes: serial {work['serial'][0]}  batched {work['batched'][0]}  "
        f"ratio {work['serial'][0] / work['batched'][0]:.1f}"
    )
    print(f"input_tokens (padding included): serial {work['serial'][1]}  batched {work['batched'][1]}")
    print(f"median_round_ratio: {statistics.median(ratios):.2f}")
    print(f"batched_vs_serial_probe: {min(ts) / min(tb):.2f}")
    return 0 if mixes else 1


if __name__ == "__main__":
    sys.exit(main())
