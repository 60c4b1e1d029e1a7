"""Teacher-forced token statistics from vLLM: the code that runs next to ``vllm``.

This file imports nothing from lmleak (only the standard library and, when used, vLLM), so the
same code serves both ways :mod:`lmleak.models.vllm_engine` reaches vLLM:

- in-process, when ``import vllm`` works in lmleak's interpreter: :func:`make_llm` and
  :func:`score_prompts` are called directly;
- as a worker process run by the vLLM environment's Python (``python vllm_worker.py --model DIR
  ...``), when vLLM lives in a venv of its own because its pins conflict with lmleak's. The worker
  loads the model once, prints ``{"ready": ...}`` and then answers one JSON line per request line
  on stdin: ``{"prompts": [[id, ...], ...]}`` -> ``{"results": [{"ranks", "logprobs", "top1"}, ...]}``.
  Anything vLLM itself prints goes to stderr; stdout carries only the protocol.

For a prompt ``p`` of ``n`` token ids, position ``i = 1..n-1`` gives the rank of ``p[i]`` among the
model's predictions after ``p[:i]``, its log-probability, and the top-1 log-probability — vLLM's
``prompt_logprobs=1`` returns exactly these (the actual token with its rank, plus the top-1 token).
vLLM ranks a token by how many vocabulary entries have a log-probability ``>=`` its own; lmleak's
transformers path counts ``>`` and adds one. The two differ only on exact float ties.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from typing import Any


def make_llm(
    model: str,
    *,
    dtype: str = "float32",
    max_model_len: int | None = None,
    seed: int = 0,
    extra: dict[str, Any] | None = None,
) -> Any:
    """A ``vllm.LLM`` for scoring token ids (no tokenizer: lmleak tokenises)."""
    from vllm import LLM

    kwargs: dict[str, Any] = {
        "model": model,
        "dtype": dtype,
        "skip_tokenizer_init": True,
        "seed": seed,
        "enable_prefix_caching": False,  # cached prefixes return no prompt logprobs for their tokens
    }
    if max_model_len is not None:
        kwargs["max_model_len"] = int(max_model_len)
    kwargs.update(extra or {})
    return LLM(**kwargs)


def _position_stats(entry: Any, actual: int) -> tuple[int, float, float]:
    """(rank, logprob, top-1 logprob) of the ``actual`` token from one position's logprob dict."""
    mine = entry[actual]
    top1 = max(lp.logprob for lp in entry.values())
    rank = mine.rank if mine.rank is not None else 1
    return int(rank), float(mine.logprob), float(top1)


def score_prompts(llm: Any, prompts: list[list[int]]) -> list[dict[str, list[float] | list[int]]]:
    """Per-position (rank, logprob, top-1 logprob) of every token after the first, for each prompt."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    params = SamplingParams(max_tokens=1, prompt_logprobs=1, temperature=0.0, detokenize=False)
    outputs = llm.generate(
        [TokensPrompt(prompt_token_ids=list(map(int, p))) for p in prompts], params, use_tqdm=False
    )
    results: list[dict[str, Any]] = []
    for prompt, out in zip(prompts, outputs, strict=True):
        plp = out.prompt_logprobs or []
        ranks: list[int] = []
        lps: list[float] = []
        top1: list[float] = []
        for i in range(1, len(prompt)):
            r, lp, t = _position_stats(plp[i], int(prompt[i]))
            ranks.append(r)
            lps.append(lp)
            top1.append(t)
        results.append({"ranks": ranks, "logprobs": lps, "top1": top1})
    return results


def _clean(x: float) -> float | None:
    return x if math.isfinite(x) else None  # JSON has no -inf


def serve(argv: list[str]) -> int:
    """The worker loop (see the module docstring)."""
    import argparse

    parser = argparse.ArgumentParser(prog="vllm_worker")
    parser.add_argument("--model", required=True)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--max-model-len", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--extra", default="{}", help="JSON of further vllm.LLM arguments")
    args = parser.parse_args(argv)
    # The protocol owns the real stdout; everything else that writes to fd 1 lands on stderr.
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    t0 = time.perf_counter()
    try:
        llm = make_llm(
            args.model,
            dtype=args.dtype,
            max_model_len=args.max_model_len,
            seed=args.seed,
            extra=json.loads(args.extra),
        )
    except Exception as e:  # report any start-up failure to the parent as one line, then exit
        proto.write(json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n")
        return 1
    proto.write(json.dumps({"ready": True, "load_s": round(time.perf_counter() - t0, 2)}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            prompts = json.loads(line)["prompts"]
            res: list[dict[str, Any]] = list(score_prompts(llm, prompts))
            for r in res:
                r["logprobs"] = [_clean(x) for x in r["logprobs"]]
                r["top1"] = [_clean(x) for x in r["top1"]]
            proto.write(json.dumps({"results": res}) + "\n")
        except Exception as e:  # one bad request must not kill a worker that took minutes to start
            proto.write(json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1:]))
