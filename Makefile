# Two commands do everything: `make demo` (set up, then run ptxls on examples/) and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test test-fast lint bench e2e-vscode

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,triton]'
	touch $@

demo: setup
	$(BIN)/ptxls doctor
	$(BIN)/ptxls demo

# Bytecode is written even where the environment turns it off (PYTHONDONTWRITEBYTECODE=1): pytest
# keeps each test module's rewritten asserts there (seconds of collection on every worker), and
# each server or CLI a test starts compiles only the modules that changed.
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/pytest
# pytest-xdist workers: one per core by default; `make test TEST_WORKERS=3` tries more (many
# tests wait on a server, a CLI or a scripted endpoint; bench/test_times.py --workers 3).
TEST_WORKERS ?= auto

# Everything (what CI runs), spread over the cores by pytest-xdist, a file at a time: a module
# whose tests share one server (tests/conftest.py, `shared_client`) starts it once.
test: setup
	$(PYTEST) -n $(TEST_WORKERS) --dist loadfile

# The inner loop: every test that starts no process (tests/conftest.py marks the others
# `process` from what they use); the slowest are listed so a new slow test shows. No server
# is shared here, so the tests are spread one by one (a big file does not end the run alone).
test-fast: setup
	$(PYTEST) -n $(TEST_WORKERS) -q -m "not process" --durations=10

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
	$(BIN)/python scripts/typecheck.py

bench: setup
	$(BIN)/python bench/diagnostics_latency.py

e2e-vscode: setup
	bash .ci/vscode-e2e.sh
