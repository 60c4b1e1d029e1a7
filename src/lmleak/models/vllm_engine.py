"""``--engine vllm``: the ledger's teacher-forced scoring through vLLM, for corpus-scale ledgers.

The ledger needs, for every token, its rank, log-probability and the top-1 log-probability
(:class:`~lmleak.models.base.TokenStats`); vLLM's ``prompt_logprobs`` give exactly these for a
prompt of token ids in one prefill. :class:`VllmScorer` is a score-only model with the same
``token_stats`` as :class:`~lmleak.models.torch_causal.TorchCausalLM`: lmleak tokenises (with
its own BOS rule), cuts long documents into the same sliding windows
(:func:`lmleak.models.windows.windows`), and vLLM scores every window; the windows of a
shard go to vLLM in one ``generate`` call, which batches them itself.

Where vLLM runs (:func:`open_backend`):

- **in-process** when ``import vllm`` works in this interpreter (a GPU machine where vLLM was
  installed beside lmleak): ``vllm.LLM(...).generate(prompts, SamplingParams(max_tokens=1,
  prompt_logprobs=1))``;
- otherwise a **worker process** run by the vLLM environment's Python
  (:func:`lmleak.models.vllm_env.vllm_python`: ``$LMLEAK_VLLM_PYTHON``, ``$VLLM_VENV`` or
  ``.venv-vllm``), which is how it runs wherever vLLM's pins (torch, transformers < 5.20) conflict
  with lmleak's: it reads token ids and writes per-token rank/logprob as JSON lines
  (:mod:`lmleak.models.vllm_worker`). The worker is started once per pass and loads the model
  once; start-up takes minutes on a CPU.

vLLM refuses a prompt as long as its ``max_model_len`` (it must leave room for one generated
token), so the engine asks for ``max_length + 1``; where that exceeds the model's own context, as
for a small GPT whose lmleak window equals its position table, ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` is
set: the extra position is never run through the model (``max_tokens=1`` samples from the last
prompt position's logits).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lmleak.errors import ModelError
from lmleak.models import vllm_worker
from lmleak.models.base import Capability, TokenStats
from lmleak.models.vllm_env import vllm_python
from lmleak.models.windows import stats_buffers, window_rows

WORKER = Path(__file__).with_name("vllm_worker.py")


def vllm_importable() -> bool:
    """Whether ``import vllm`` works in this interpreter (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


class InProcessBackend:
    """vLLM in this interpreter."""

    mode = "in-process"

    def __init__(self, model_dir: str, *, dtype: str, max_model_len: int, extra: dict[str, Any]) -> None:
        os.environ.setdefault("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
        self._worker = vllm_worker
        self.llm = vllm_worker.make_llm(model_dir, dtype=dtype, max_model_len=max_model_len, extra=extra)

    def score(self, prompts: list[list[int]]) -> list[dict[str, Any]]:
        return self._worker.score_prompts(self.llm, prompts)

    def close(self) -> None:
        self.llm = None


class SubprocessBackend:
    """vLLM in a worker process run by another Python (the vLLM venv)."""

    mode = "subprocess"

    def __init__(
        self, python: Path, model_dir: str, *, dtype: str, max_model_len: int, extra: dict[str, Any]
    ) -> None:
        env = dict(os.environ)
        env.setdefault("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1")
        env.setdefault("HF_HUB_OFFLINE", "1")
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; vLLM's CPU default reserves far more
        env.setdefault("VLLM_NO_USAGE_STATS", "1")
        env.pop("PYTHONPATH", None)  # lmleak's path would shadow the venv's own packages
        cmd = [
            str(python),
            "-P",  # not the script's folder on sys.path: lmleak/models holds names like tokenizer.py
            str(WORKER),
            "--model",
            model_dir,
            "--dtype",
            dtype,
            "--max-model-len",
            str(max_model_len),
            "--extra",
            json.dumps(extra),
        ]
        # vLLM logs a lot: keep it in a file and show its tail only when something fails
        self.log = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
            start_new_session=True,  # its own process group: vLLM's engine processes go with it on kill
        )
        first = self._read()
        if "error" in first:
            self.close()
            raise ModelError(
                f"the vLLM worker ({python}) could not load {model_dir}: {first['error']}\n{self.log_tail()}"
            )
        self.load_s = first.get("load_s")

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            raise ModelError(
                f"the vLLM worker exited (status {code}) without answering; its log ends:\n{self.log_tail()}"
            )
        return json.loads(line)

    def log_tail(self, chars: int = 3000) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-chars:]

    def score(self, prompts: list[list[int]]) -> list[dict[str, Any]]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"prompts": prompts}) + "\n")
        self.proc.stdin.flush()
        reply = self._read()
        if "error" in reply:
            raise ModelError(f"the vLLM worker failed to score a shard: {reply['error']}")
        return reply["results"]

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def open_backend(
    model_dir: str | Path, *, dtype: str = "float32", max_model_len: int, extra: dict[str, Any] | None = None
) -> InProcessBackend | SubprocessBackend:
    """vLLM in-process if importable here, else the worker in the vLLM venv; refuse when neither."""
    extra = dict(extra or {})
    if vllm_importable():
        return InProcessBackend(str(model_dir), dtype=dtype, max_model_len=max_model_len, extra=extra)
    py = vllm_python()
    if py is None or not py.exists():
        raise ModelError(
            "--engine vllm needs vLLM: install it beside lmleak (GPU), or create its own venv with "
            "`make vllm-env` (or point LMLEAK_VLLM_PYTHON / VLLM_VENV at one)"
        )
    return SubprocessBackend(py, str(model_dir), dtype=dtype, max_model_len=max_model_len, extra=extra)


class VllmScorer:
    """A score-only lmleak model whose ``token_stats`` come from vLLM.

    Args:
        backend: from :func:`open_backend` (or any object with ``score(prompts)``).
        tokenizer: lmleak's tokenizer of the same model (its ``bos_id`` starts every window).
        name, max_length, overlap: as the in-process model's, so windows and fingerprints agree.
    """

    def __init__(self, backend: Any, tokenizer: Any, *, name: str, max_length: int, overlap: int) -> None:
        self.backend = backend
        self.tokenizer = tokenizer
        self.name = name
        self.max_length = int(max_length)
        self.overlap = int(overlap)
        self.capabilities = frozenset({Capability.SCORE})

    @property
    def bos_token_id(self) -> int:
        """The start token every scored text follows (the tokenizer's ``bos_id``)."""
        return int(self.tokenizer.bos_id)

    def token_stats(self, sequences: Sequence[Sequence[int]]) -> list[TokenStats]:
        rows, owners = window_rows(sequences, self.tokenizer.bos_id, self.max_length, self.overlap)
        ranks, lps, top1 = stats_buffers(sequences)
        results = self.backend.score(rows) if rows else []
        for (s, first, start), row, res in zip(owners, rows, results, strict=True):
            # result column c is input position start + c + 1 (a target index into `full`);
            # target t of `full` is token t - 1 of the sequence
            c0 = first - start - 1
            t0, t1 = first - 1, start + len(row) - 1
            ranks[s][t0:t1] = np.asarray(res["ranks"][c0:], dtype=np.int32)
            lps[s][t0:t1] = np.asarray(
                [-np.inf if x is None else x for x in res["logprobs"][c0:]], dtype=np.float32
            )
            top1[s][t0:t1] = np.asarray(
                [-np.inf if x is None else x for x in res["top1"][c0:]], dtype=np.float32
            )
        return [TokenStats(r, lp, t) for r, lp, t in zip(ranks, lps, top1, strict=True)]

    def close(self) -> None:
        self.backend.close()
