# Two commands do everything: `make demo` (set up, then run ptxls on examples/) and `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint bench e2e-vscode

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,triton]'
	touch $@

demo: setup
	$(BIN)/ptxls doctor
	$(BIN)/ptxls demo

test: setup
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
	$(BIN)/python scripts/typecheck.py

bench: setup
	$(BIN)/python bench/diagnostics_latency.py

e2e-vscode: setup
	bash .ci/vscode-e2e.sh
