# Two commands: `make run` starts the whole system with demo models; `make test` runs the suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test lint format clean sdk

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first and pinned: where pip has a local CPU wheel for 2.13.0 it is used, and the
	# project install below then finds torch satisfied instead of pulling a CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev]'
	# A machine with an NVIDIA driver gets the `gpu` extra too: `make run` then starts a CUDA executor
	# per GPU and the profiler's CUDA queue (infaas_cli/launcher.py).
	if command -v nvidia-smi >/dev/null 2>&1; then $(PY) -m pip install --quiet -e '.[dev,gpu]'; fi
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/infaas run

test: $(STAMP)
	$(VENV)/bin/pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check --no-cache .
	$(VENV)/bin/ruff format --no-cache --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Regenerate the Python SDK (sdk/python) from the gateway's OpenAPI; no server needed.
sdk: $(STAMP)
	$(PY) sdk/generate.py

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
