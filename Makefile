# Verbs of the harness. `make` alone lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: help setup test lint

help: ## List every target and variable
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo
	@echo "Variables (make VAR=value target):"
	@awk 'BEGIN {FS = " *[?]= *| *## *"} /^[A-Z_]+ *[?]=.*## / {printf "  %-16s %s (default: %s)\n", $$1, $$3, $$2}' $(MAKEFILE_LIST)

setup: $(VENV)/.installed ## Create .venv/ with the locked Python dependencies

$(VENV)/.installed: requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements.lock
	$(VENV)/bin/pip install --quiet --no-deps -e .
	touch $@

test: setup ## Run every test (native QuestDB, socat, Prometheus, Docker where available)
	$(PY) -m pytest -v

# --- native servers (QuestDB jar, socat sink) -------------------------------------------
.PHONY: native-up native-down native-status

NATIVE_ARGS ?= ## harness.native options, e.g. "--root DIR --http-port 19000 --ilp-port 19009 --pg-port 18812 --min-port 19003 --sink-port 19010"

native-up: setup ## Start QuestDB (release jar, conf/server.conf) and the socat sink natively, no Docker
	$(PY) -m harness.native up $(NATIVE_ARGS)

native-down: setup ## Stop the native QuestDB (SIGTERM, then SIGKILL after 30 s) and the sink
	$(PY) -m harness.native down $(NATIVE_ARGS)

native-status: setup ## Show whether the native QuestDB and sink run (exit 3 if QuestDB does not)
	$(PY) -m harness.native status $(NATIVE_ARGS)

# --- benchmarks ----------------------------------------------------------------------------
# Run parameters shared by `bench` (Docker) and `bench-native`; empty means the harness default.
WORKERS ?= ## Sender/serializer threads (empty: single-threaded)
ROWS ?= 10000000## Rows to generate and send
SCALE ?= 4000## TSBS hosts
SEED ?= ## PRNG seed (empty: random, recorded in the results)
FIELDS ?= double## double or long
TRANSPORT ?= tcp## tcp or http
PROTOCOL ?= auto## ILP protocol version: 1, 2, 3 or auto
CHUNK ?= 10000## Rows per chunk (--worker-chunk-row-count)
OP ?= dataframe## dataframe, iterrows or itertuples
ARGS ?= ## Extra `harness bench` options, e.g. ARGS="--stream --keep-table"

BENCH_ARGS = --row-count $(ROWS) --scale $(SCALE) --fields $(FIELDS) --transport $(TRANSPORT) \
	--protocol-version $(PROTOCOL) --worker-chunk-row-count $(CHUNK) --op $(OP) \
	$(if $(strip $(WORKERS)),--workers $(WORKERS)) $(if $(strip $(SEED)),--seed $(SEED)) $(ARGS)

.PHONY: bench-native bench-generate bench-table bench-overhead

bench-native: setup ## Without Docker: start native QuestDB, send ROWS rows with WORKERS threads, validate, record
	@$(PY) -m harness.native up --questdb-only
	$(PY) -m harness bench --send $(BENCH_ARGS)

bench-generate: setup ## Print the generator's DataFrame and ILP output rates and peak RSS
	$(PY) bench/generate_rate.py

bench-table: setup ## Reproduce the original results table (serialize/send, 1 and N workers, iterrows) natively
	@$(PY) -m harness.native up --questdb-only
	$(PY) bench/original_table.py --row-count $(ROWS) --workers $(or $(strip $(WORKERS)),2)

bench-overhead: setup ## Runner vs bare client loop, and client send vs raw replay to the socat sink
	$(PY) bench/runner_overhead.py

# --- docker compose ------------------------------------------------------------------------

# --- metrics, prometheus, grafana ----------------------------------------------------------
