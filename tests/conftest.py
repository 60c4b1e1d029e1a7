"""Shared fixtures. The whole suite runs offline: hub look-ups are switched off before any import."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import logging  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402


class _CurrentStderr:
    """A stream that writes to whatever ``sys.stderr`` is now. transformers' log handler keeps the
    stderr of the moment it was created; created inside a ``CliRunner.invoke`` that is the runner's
    capture (and its ``flush`` to that capture's), closed when the invoke ends, so a later test's
    warning printed "--- Logging error ---"
    with a traceback (a test artefact: a real process keeps one stderr)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


@pytest.fixture(autouse=True)
def _transformers_logs_to_the_current_stderr():
    yield
    hf = sys.modules.get("transformers.utils.logging")
    handler = getattr(hf, "_default_handler", None)
    if isinstance(handler, logging.StreamHandler) and not isinstance(handler.stream, _CurrentStderr):
        handler.stream = _CurrentStderr()  # not setStream: it flushes the old, possibly closed stream
        handler.__dict__.pop("flush", None)  # transformers binds flush to the stderr of its creation


@pytest.fixture(scope="session")
def tiny_gpt2():
    """A randomly initialised 2-layer GPT-2 with a 64-token vocabulary (seeded)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(
        vocab_size=64, n_positions=64, n_embd=32, n_layer=2, n_head=2, bos_token_id=1, eos_token_id=2
    )
    return GPT2LMHeadModel(cfg).eval()


class IdTokenizer:
    """Token ids written as decimal words: "5 7 9" <-> [5, 7, 9]."""

    vocab_size = 64
    bos_id = 1
    eos_id = 2
    pad_id = 0

    def encode(self, text: str) -> list[int]:
        return [int(w) for w in text.split()]

    def decode(self, ids) -> str:
        return " ".join(str(int(i)) for i in ids)


@pytest.fixture(scope="session")
def id_tokenizer():
    return IdTokenizer()


# --- no network: every test runs with outbound connections refused (secure defaults, issue 9) ---
import ipaddress  # noqa: E402
import socket  # noqa: E402


def _local_addresses() -> set[str]:
    names = {"localhost", socket.gethostname()}
    addrs = set()
    for name in names:
        try:
            addrs.update(info[4][0] for info in socket.getaddrinfo(name, None))
        except OSError:
            pass
    return addrs | names


_LOCAL = _local_addresses()
_real_connect = socket.socket.connect
_real_getaddrinfo = socket.getaddrinfo


def _is_local(host: object) -> bool:
    if not isinstance(host, str):
        return True  # AF_UNIX paths and the like
    if host in _LOCAL:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class NetworkBlocked(RuntimeError):
    """Raised when code under test tries to reach another machine."""


def _guarded_connect(self, address):  # type: ignore[no-untyped-def]
    host = address[0] if isinstance(address, tuple) else address
    if not _is_local(host):
        raise NetworkBlocked(f"network access attempted during tests: {address!r}")
    return _real_connect(self, address)


def _guarded_getaddrinfo(host, *args, **kwargs):  # type: ignore[no-untyped-def]
    if host is not None and not _is_local(host if isinstance(host, str) else host.decode()):
        raise NetworkBlocked(f"DNS lookup attempted during tests: {host!r}")
    return _real_getaddrinfo(host, *args, **kwargs)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.getaddrinfo = _guarded_getaddrinfo


def pytest_collection_modifyitems(config, items):
    """vLLM tests start a vLLM server or engine from its separate venv (minutes on a CPU, and the venv
    may exist on the machine by chance): they run only through ``make test-vllm`` (LMLEAK_TEST_VLLM=1)."""
    if os.environ.get("LMLEAK_TEST_VLLM") == "1":
        return
    skip = pytest.mark.skip(reason="vLLM tests run with `make test-vllm` (LMLEAK_TEST_VLLM=1)")
    for item in items:
        if "vllm" in item.keywords and item.get_closest_marker("vllm") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def synth_corpus(tmp_path_factory):
    """A small synthetic CustomerSim corpus with its ground truth (the PII tests and ``tests/cli/test_pii.py``)."""
    from lmleak.data.loaders import load_corpus
    from lmleak.data.synth.customersim import synthesize
    from lmleak.pii.evaluate import load_secrets

    paths = synthesize(tmp_path_factory.mktemp("synth"), users=30, dialogs_per_user=4, seed=3)
    corpus = load_corpus(paths["corpus"])
    return {"paths": paths, "corpus": corpus, "secrets": load_secrets(paths["secrets"], corpus)}
