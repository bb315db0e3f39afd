# Two commands: `make run` starts the whole system with demo models; `make test` runs the suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --quiet

# The locks (`make lock` writes them from pyproject.toml, with every file's hash):
#   requirements/runtime.txt  what `make run` needs
#   requirements/dev.txt      the runtime and the `dev` extra: what `make test` and `make lint` need
#   requirements/gpu.txt      the runtime and the `gpu` extra, added where `nvidia-smi` is found
# Every version in them is the same where they overlap, so they install on top of each other.
RUNTIME_LOCK := requirements/runtime.txt
DEV_LOCK := requirements/dev.txt
GPU_LOCK := requirements/gpu.txt
GPU := $(shell command -v nvidia-smi >/dev/null 2>&1 && echo yes)
# An unchanged lock installs nothing: each install leaves a stamp newer than its lock.
RUNTIME_STAMP := $(VENV)/.runtime-stamp
DEV_STAMP := $(VENV)/.dev-stamp
# The pip of the last green run; the venv's own (Python's bundled one) may be years older.
PIP_VERSION := 26.3
# torch is kept out of the locks (pip-compile's --unsafe-package torch) and installed after them, pinned
# as pyproject.toml pins it: where pip finds a local CPU wheel of 2.13.0 (2.13.0+cpu) it takes that one,
# elsewhere the default index's 2.13.0, a CUDA build that brings its CUDA libraries. A lock can pin only
# one of the two: they differ in version label, hash and dependencies (the CUDA build's nvidia-* and
# triton), and a lock made here would refuse the other. The dependencies the two share (sympy,
# networkx, filelock, ...) are in the locks, hashed; pip finds them installed and adds only torch.
TORCH := torch==2.13.0

.PHONY: install install-dev run test test-fast lint format clean sdk lock

# $(1): the lock. The project itself goes in last, editable, with nothing resolved: the lock has all it
# needs, its build backend (setuptools) included.
define install_from
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install pip==$(PIP_VERSION)
	$(PIP) install --require-hashes -r $(1)
	# A machine with an NVIDIA driver gets the `gpu` extra too: `make run` then starts a CUDA executor
	# per GPU and the profiler's CUDA queue (infaas_cli/launcher.py).
	$(if $(GPU),$(PIP) install --require-hashes -r $(GPU_LOCK))
	$(PIP) install $(TORCH)
	$(PIP) install --no-deps --no-build-isolation -e .
endef

$(RUNTIME_STAMP): $(RUNTIME_LOCK) $(GPU_LOCK) pyproject.toml
	$(call install_from,$(RUNTIME_LOCK))
	touch $@

# The dev lock holds the runtime's pins too: a dev install is a runtime install as well.
$(DEV_STAMP): $(DEV_LOCK) $(RUNTIME_LOCK) $(GPU_LOCK) pyproject.toml
	$(call install_from,$(DEV_LOCK))
	touch $@ $(RUNTIME_STAMP)

install: $(RUNTIME_STAMP)

install-dev: $(DEV_STAMP)

run: $(RUNTIME_STAMP)
	$(VENV)/bin/infaas run

test: $(DEV_STAMP)
	$(VENV)/bin/pytest

# The unit tests alone: no servers, no network, no model trained (tests/unit/conftest.py).
test-fast: $(DEV_STAMP)
	$(VENV)/bin/pytest tests/unit -q

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check --no-cache .
	$(VENV)/bin/ruff format --no-cache --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

format: $(DEV_STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Regenerate the Python SDK (sdk/python) from the gateway's OpenAPI; no server needed.
sdk: $(DEV_STAMP)
	$(PY) sdk/generate.py

# Rewrite the locks from pyproject.toml. Pins already in a lock are kept while pyproject.toml allows
# them; `make lock LOCK_ARGS=--upgrade` takes the newest releases, `LOCK_ARGS='-P fastapi'` one package.
# The dev lock is solved first; the runtime's is held to its versions, the GPU one to the runtime's.
# pip-tools runs from a venv of its own: its packages (click, build, ...) stay out of the project's.
LOCK_VENV ?= .lock-venv
PIP_TOOLS_VERSION := 7.7.0
LOCK_ARGS ?=
COMPILE = CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --strip-extras --all-build-deps \
	--unsafe-package torch --no-emit-index-url --no-emit-find-links $(LOCK_ARGS)

lock:
	test -x $(LOCK_VENV)/bin/pip-compile || { $(PYTHON) -m venv $(LOCK_VENV) \
		&& $(LOCK_VENV)/bin/python -m pip --quiet install pip==$(PIP_VERSION) pip-tools==$(PIP_TOOLS_VERSION); }
	$(COMPILE) --extra dev -o $(DEV_LOCK) pyproject.toml
	$(COMPILE) -c $(DEV_LOCK) -o $(RUNTIME_LOCK) pyproject.toml
	$(COMPILE) --extra gpu -c $(RUNTIME_LOCK) -o $(GPU_LOCK) pyproject.toml

clean:
	rm -rf $(VENV) $(LOCK_VENV) var .pytest_cache .mypy_cache .ruff_cache
