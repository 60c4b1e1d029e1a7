"""models.vllm_worker without vLLM: the statistics it reads from vLLM's answer, and the worker protocol.

A stand-in ``vllm`` package (``LLM``, ``SamplingParams``, ``inputs.TokensPrompt``) is put first on
the worker's path; it answers ``prompt_logprobs`` by a rule this test recomputes. The real vLLM
runs in ``test_vllm_engine.py`` (skipped where no vLLM environment exists).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from lmleak.models import vllm_worker
from lmleak.models.vllm_worker import _clean, _position_stats

WORKER = Path(vllm_worker.__file__)

FAKE_VLLM = """
from types import SimpleNamespace


class SamplingParams:
    def __init__(self, **kw):
        self.kw = kw


class LLM:
    def __init__(self, **kw):
        if kw["model"] == "broken":
            raise RuntimeError("no such model")
        print("vllm chatter on stdout")  # must not reach the protocol
        self.kw = kw

    def generate(self, prompts, params, use_tqdm=False):
        assert params.kw["prompt_logprobs"] == 1 and not use_tqdm
        outs = []
        for p in prompts:
            ids = p["prompt_token_ids"]
            plp = [None]
            for t in ids[1:]:
                lp = float("-inf") if t == 99 else -float(t % 3)
                plp.append({t: SimpleNamespace(logprob=lp, rank=t % 3 + 1), -1: SimpleNamespace(logprob=0.0, rank=1)})
            outs.append(SimpleNamespace(prompt_logprobs=plp))
        return outs
"""


def _expected(prompt):
    rest = prompt[1:]
    return {
        "ranks": [t % 3 + 1 for t in rest],
        "logprobs": [None if t == 99 else -float(t % 3) for t in rest],
        "top1": [0.0 for _ in rest],
    }


@pytest.fixture
def fake_vllm(tmp_path):
    pkg = tmp_path / "vllm"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent(FAKE_VLLM))
    (pkg / "inputs.py").write_text(
        "def TokensPrompt(prompt_token_ids):\n    return {'prompt_token_ids': prompt_token_ids}\n"
    )
    return tmp_path


def _run(fake_vllm, model, stdin):
    return subprocess.run(
        [sys.executable, str(WORKER), "--model", model, "--extra", '{"gpu_memory_utilization": 0.5}'],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(fake_vllm), "PATH": "/usr/bin:/bin"},
    )


def test_position_stats_reads_the_actual_token_and_the_best_one():
    entry = {5: SimpleNamespace(logprob=-2.5, rank=3), 7: SimpleNamespace(logprob=-0.1, rank=1)}
    assert _position_stats(entry, 5) == (3, -2.5, -0.1)
    entry = {5: SimpleNamespace(logprob=-0.2, rank=None)}  # vLLM leaves the rank out for the top token
    assert _position_stats(entry, 5) == (1, -0.2, -0.2)


def test_clean_turns_non_finite_numbers_into_null():
    assert _clean(-1.5) == -1.5 and _clean(-math.inf) is None and _clean(math.nan) is None


def test_the_worker_answers_one_line_per_request_and_survives_a_bad_one(fake_vllm):
    prompts = [[1, 4, 5, 99], [1, 3]]
    stdin = (
        json.dumps({"prompts": prompts})
        + "\n\n"
        + '{"no prompts": 1}\n'
        + json.dumps({"prompts": [[1, 2]]})
        + "\n"
    )
    r = _run(fake_vllm, "some/model", stdin)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert lines[0]["ready"] is True and "vllm chatter" in r.stderr
    assert lines[1] == {"results": [_expected(p) for p in prompts]}
    assert lines[2]["error"].startswith("KeyError")
    assert lines[3] == {"results": [_expected([1, 2])]}
    assert len(lines) == 4  # the blank line got no answer


def test_a_start_up_failure_is_one_error_line_and_exit_1(fake_vllm):
    r = _run(fake_vllm, "broken", "")
    assert r.returncode == 1
    assert [json.loads(x) for x in r.stdout.splitlines()] == [{"error": "RuntimeError: no such model"}]
