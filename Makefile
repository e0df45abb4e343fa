# goodput: `make run` (set up, run the pipeline on the bundled data, serve the dashboard) and
# `make test` (set up and run every test). Both create .venv and install what is missing.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
ROOT := $(abspath .)
export DAGSTER_HOME := $(ROOT)
export GOODPUT_DAGSTER_DIR := $(ROOT)/.dagster
export GOODPUT_DAGSTER_LOGS := $(ROOT)/.dagster/logs
PORT ?= 8501

.PHONY: run test dev install system-deps lint typecheck pytest fuzz sample clean

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

install: $(BIN)/.installed

# System packages the integration tests need (Slurm, MariaDB, Prometheus, Chromium); root only.
system-deps:
	bash scripts/install-system-deps.sh

# The bundled sample fleet, written when data/inputs/ is empty.
sample: install
	@if [ -z "$$(ls -A data/inputs 2>/dev/null)" ]; then $(BIN)/goodput generate; else echo "data/inputs/ has input: using it"; fi

run: sample
	mkdir -p $(GOODPUT_DAGSTER_DIR)
	$(BIN)/goodput materialize
	$(BIN)/goodput report $$(command -v chromium >/dev/null || echo --no-pdf)
	@echo "Dashboard: http://127.0.0.1:$(PORT)"
	$(BIN)/goodput app --port $(PORT)

dev: install
	mkdir -p $(GOODPUT_DAGSTER_DIR)
	$(BIN)/dagster dev -m pipelines.definitions

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

# The long runs: the parser fuzzer (4,000 mutated real inputs per kind, 20,000 in all, seeded) and 20 kills.
fuzz: install
	GOODPUT_FUZZ_N=4000 GOODPUT_CRASH_KILLS=20 $(BIN)/python -m pytest -q tests/fuzz tests/pipelines/test_crash_safety.py

# Two pytest-xdist workers by default (CI's machine has 2 cores; much of the suite waits on Slurm,
# Chromium and subprocesses): each test file runs in one worker, the files that start a Slurm
# cluster in the same one (tests/conftest.py: pytest_xdist_make_scheduler).
# PYTEST_WORKERS=0 runs everything in one process.
PYTEST_WORKERS ?= 2

pytest: install
	GOODPUT_REQUIRE_SLURM=1 GOODPUT_REQUIRE_PROMETHEUS=1 GOODPUT_REQUIRE_BROWSER=1 GOODPUT_REQUIRE_MOTO=1 $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --durations=25

test: install system-deps lint typecheck pytest

clean:
	rm -rf .dagster data/warehouse.duckdb* data/serving.duckdb* .pytest_cache .mypy_cache .ruff_cache
