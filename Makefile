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

native-up: setup ## Start QuestDB (release jar, conf/server.conf) and the socat sink natively, no Docker
	$(PY) -m harness.native up

native-down: ## Stop the native QuestDB and sink
	$(PY) -m harness.native down

native-status: ## Show whether the native QuestDB and sink run
	$(PY) -m harness.native status

# --- benchmarks ----------------------------------------------------------------------------

# --- docker compose ------------------------------------------------------------------------

# --- metrics, prometheus, grafana ----------------------------------------------------------
