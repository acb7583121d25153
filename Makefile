# Verbs of the harness. `make` alone lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: help setup test test-fast test-deps docs check-reference

help: ## List every target and variable
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-24s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
	@echo
	@echo "Variables (make VAR=value target):"
	@awk 'BEGIN {FS = " *[?]= *| *## *"} /^[A-Z_]+ *[?]=.*## / {printf "  %-24s %s%s\n", $$1, $$3, ($$2 == "" ? "" : " (default: " $$2 ")")}' $(MAKEFILE_LIST)
	@echo
	@echo "Pinned versions (.env; make VAR=value overrides):"
	@grep -v '^#' .env | sed 's/^/  /'

setup: $(VENV)/.installed ## Create .venv/ with the locked Python dependencies; build the generator's kernels
	$(PY) -m harness.tsbs.kernel_cache

$(VENV)/.installed: requirements.lock requirements-test.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements-test.lock
	$(VENV)/bin/pip install --quiet --no-deps -e .
	touch $@

TEST_WORKERS ?= 2 ## pytest-xdist workers of the tests' parallel part (make test, make test-fast)
# The parallel part of make test and all of make test-fast: a module to a worker (its module fixtures, a
# loaded data set or a batch of the audit's columns, made once, and a server started only where it is used),
# the Docker modules together, longest first (tests/conftest.py).
PARALLEL := -n $(TEST_WORKERS) --dist loadscope --max-worker-restart 0

test: test-deps ## Set up what the tests need (test-deps), then every test: the parallel part, then the serial one alone
	@status=0; \
	HARNESS_REQUIRE_TOOLS=1 $(PY) -m pytest -v $(PARALLEL) -m "not serial" || status=$$?; \
	HARNESS_REQUIRE_TOOLS=1 $(PY) -m pytest -v -m serial || status=$$?; \
	exit $$status

test-fast: setup ## Run the tests marked neither docker nor slow, in parallel: under a minute on 2 cores, real QuestDB, QWP server and sink included
	$(PY) -m pytest -q $(PARALLEL) -m "not docker and not slow"

test-deps: setup ## Install/start what the tests need: socat, Prometheus, dockerd, Compose, offline images (root)
	HARNESS_PYTHON='$(PY)' QUESTDB_VERSION='$(QUESTDB_VERSION)' scripts/setup-test-env.sh

docs: setup ## Regenerate docs/cli.md from the commands' --help (tests/test_docs.py checks it is current)
	$(PY) scripts/cli_reference.py > docs/cli.md

check-reference: ## Check that every relative link of the reference runs' READMEs (results/reference/) leads to a file
	$(PYTHON) scripts/check_links.py $(wildcard results/reference/*/README.md results/reference/*/*/README.md)

# --- native servers (QuestDB jar, socat sink) -------------------------------------------
.PHONY: native-up native-down native-status

NATIVE_ARGS ?= ## `harness native` options, e.g. "--root DIR --http-port 19000 --ilp-port 19009 --pg-port 18812 --min-port 19003 --sink-port 19010"

native-up: setup ## Start QuestDB (release jar, or with TRANSPORT=qwp the QWP server; conf/server.conf) and the socat sink natively, no Docker
	$(PY) -m harness native up $(NATIVE_SERVER) $(NATIVE_ARGS)

native-down: setup ## Stop the native QuestDB (SIGTERM, then SIGKILL after 30 s) and the sink
	$(PY) -m harness native down $(NATIVE_ARGS)

native-status: setup ## Show whether the native QuestDB and sink run (exit 3 if QuestDB does not)
	$(PY) -m harness native status $(NATIVE_ARGS)

# --- benchmarks ----------------------------------------------------------------------------
# Run parameters shared by `bench` (Docker) and `bench-native`; empty means the harness default.
WORKERS ?= ## Sender/serializer threads (empty: single-threaded)
CLIENTS ?= 1## Clients (bench, bench-native): client i sends TSBS's interleaved group i of N (docs/scale-out.md)
ROWS ?= 10000000## Rows to generate and send
SCALE ?= 4000## TSBS hosts
SEED ?= ## PRNG seed (empty: random, recorded in the results)
USE_CASE ?= cpu-only## TSBS use case: cpu-only (table cpu), devops (nine measurement tables) or iot (readings, diagnostics)
FIELDS ?= double## double or long
TRANSPORT ?= tcp## tcp or http (ILP), or qwp (QWP: QuestDB is then the pinned QWP server, .env's QUESTDB_QWP)
PROTOCOL ?= auto## ILP protocol version: 1, 2, 3 or auto
CHUNK ?= 10000## Rows per chunk (--worker-chunk-row-count)
OP ?= dataframe## dataframe, iterrows or itertuples
ARGS ?= ## Extra `harness bench` options, e.g. ARGS="--stream --keep-table"
PROFILE ?= 0## 1: profile the run, client and QuestDB (bench, queries, noop-sink, bench-native; docs/profiling.md)

PROFILE_OPTION = $(if $(filter 1,$(PROFILE)),--profile)
# TRANSPORT=qwp: QuestDB is the pinned QWP server (.env's QUESTDB_QWP; no release here has QWP): natively from its
# jar (native up --questdb-jar qwp), in Docker its stand-in image (compose.qwp.yaml, below).
QWP = $(filter qwp,$(TRANSPORT))
NATIVE_SERVER = $(if $(QWP),--questdb-jar qwp)
# PROFILE=1: async-profiler's library from Maven Central into .cache (the client container mounts it from there).
PROFILER_LIBRARY = $(if $(filter 1,$(PROFILE)),profiler-library)

# The N of the benchmarks that compare 1 worker with N.
COMPARED_WORKERS = $(or $(strip $(WORKERS)),2)
WORKERS_OPTION = $(if $(strip $(WORKERS)),--workers $(WORKERS))
BENCH_ARGS = --use-case $(USE_CASE) --row-count $(ROWS) --scale $(SCALE) --fields $(FIELDS) --transport $(TRANSPORT) \
	--protocol-version $(PROTOCOL) --worker-chunk-row-count $(CHUNK) --op $(OP) \
	$(WORKERS_OPTION) $(if $(strip $(SEED)),--seed $(SEED)) $(ARGS)

.PHONY: profiler-library bench-native bench-generate bench-groups bench-generate-startup bench-table bench-overhead bench-exactly-once \
	bench-own-data bench-files bench-open-loop matrix \
	bench-scale bench-parity bench-replay-parity bench-query-parity bench-serialize-parity ab

# What bench-native runs, and (the native input checks, below) checks first.
NATIVE_BENCH = bench --send --report --clients $(CLIENTS) $(BENCH_ARGS) $(PROFILE_OPTION)

bench-native: setup ## Without Docker: start native QuestDB (TRANSPORT=qwp: the QWP server), send ROWS rows with WORKERS threads (CLIENTS processes), validate, record
	@$(PY) -m harness native up --questdb-only $(NATIVE_SERVER)
	$(PY) -m harness $(NATIVE_BENCH)
	@echo "QuestDB is still running (127.0.0.1 only; web console http://127.0.0.1:9000): make native-down stops it"

profiler-library: setup
	@$(PY) -m harness.profiling.server >/dev/null

bench-generate: setup ## Print the generator's DataFrame and ILP output rates and peak RSS
	$(PY) benchmarks/generate_rate.py

bench-groups: setup ## `generate` of the whole data set vs one interleaved generation group of N (USE_CASE), alternated
	$(PY) benchmarks/groups_generate.py --use-case $(USE_CASE)

bench-generate-startup: setup ## Time `generate` to its first byte and in whole (median of 5 warm runs), and its heaviest imports
	$(PY) benchmarks/generate_startup.py

bench-table: setup ## Reproduce the original results table (serialize/send, 1 and N workers, iterrows) natively
	@$(PY) -m harness native up --questdb-only
	$(PY) benchmarks/original_table.py --row-count $(ROWS) --workers $(COMPARED_WORKERS)

bench-overhead: setup ## Runner vs bare client loop, and client send vs raw replay to the socat sink
	$(PY) benchmarks/runner_overhead.py

SCALE_CLIENTS ?= 1,2,4## Client counts bench-scale compares (comma-separated)
comma := ,

bench-scale: setup ## CLIENTS 1, 2, 4 (SCALE_CLIENTS) natively, into the sink and into QuestDB, alternated: medians and ratios
	@$(PY) -m harness native up
	$(PY) benchmarks/clients_scaling.py --row-count $(ROWS) --scale $(SCALE) $(if $(strip $(WORKERS)),--workers $(WORKERS)) \
		$(foreach count,$(subst $(comma), ,$(SCALE_CLIENTS)),--clients $(count))

bench-open-loop: setup ## The open loop: 20 % of the closed-loop rate held (schedule, freshness, memory), the probe's cost (alternated), a ramp's knee
	@$(PY) -m harness native up --questdb-only
	$(PY) benchmarks/open_loop.py schedule --seconds 60 --json results/open-loop/schedule.json
	$(PY) benchmarks/open_loop.py probe-cost --rows 1000000 --rounds 5 --json results/open-loop/probe-cost.json
	$(PY) benchmarks/open_loop.py knee --seconds 10 --json results/open-loop/knee.json

VERSIONS ?= $(QUESTDB_VERSION)## matrix: QuestDB servers (space-separated): releases, qwp (the pinned QWP server) or jars' paths, each run natively from its own jar
CONFIGS ?= as-is## matrix: server.conf overrides, one config per word (e.g. "wal=true wal=false"; docs/matrix.md)
ROUNDS ?= 5## matrix: counted rounds, after a warm-up round

matrix: setup ## The same bench (ROWS, WORKERS, TRANSPORT ...) against every release of VERSIONS with every config of CONFIGS, alternated over ROUNDS
	$(PY) -m harness matrix --versions "$(VERSIONS)" --configs "$(CONFIGS)" --rounds $(ROUNDS) --report $(BENCH_ARGS)

bench-files: setup ## Files as they come: CSV and CSV.gz vs Parquet client CPU, peak RSS 10x CSV and 20 Parquet files, public files into QuestDB
	$(PY) benchmarks/file_formats.py cpu --rows 1000000 --rounds 5 --json results/own-data/file-formats-cpu.json
	$(PY) benchmarks/file_formats.py rss --rows 200000 --factor 10 --json results/own-data/file-formats-rss.json
	@$(PY) -m harness native up --questdb-only
	$(PY) benchmarks/public_files.py

bench-own-data: setup ## Your data: Parquet streamed vs in memory into the sink (1 and 2 workers), peak RSS 1x vs 20x, tune's default grid on 2M rows
	@$(PY) -m harness native up
	$(PY) benchmarks/own_data.py rate --rows 2000000 --workers 1 --json results/own-data/rate-1w.json
	$(PY) benchmarks/own_data.py rate --rows 2000000 --workers 2 --json results/own-data/rate-2w.json
	$(PY) benchmarks/own_data.py rss --rows 500000 --factor 20 --json results/own-data/rss.json
	$(PY) benchmarks/own_data.py tune --rows 2000000

bench-exactly-once: setup ## Plain ILP/HTTP vs --exactly-once on the same data, alternated: medians and ratio
	@$(PY) -m harness native up --questdb-only
	$(PY) benchmarks/exactly_once_cost.py --row-count $(ROWS) $(WORKERS_OPTION)

TSBS_BIN ?= ## Folder with tsbs_generate_data and tsbs_load_questdb (built from QuestDB's TSBS fork)

bench-parity: setup ## Go loader vs replay vs bench, into QuestDB and the sink, unpinned and pinned (TSBS_BIN=DIR)
	@test -n "$(TSBS_BIN)" || { echo "bench-parity needs TSBS_BIN=DIR (tsbs_generate_data, tsbs_load_questdb)" >&2; exit 2; }
	$(PY) benchmarks/loader_parity.py --tsbs-bin $(TSBS_BIN)

REPLAY_PARITY_DIR ?= results/reference/$(shell date -u +%F)-replay## Where bench-replay-parity writes its output and record
REPLAY_PARITY_FILE ?= ## TSBS file bench-replay-parity loads (made there if missing; default: a temporary one)
REPLAY_PARITY_ARGS ?= --rounds 11 --workers 2 --pinning unpinned --timestamp-end 2016-01-01T03:00:00Z## Its loader_parity.py options

bench-replay-parity: setup ## replay vs the Go loader, TSBS's 4.32M-row cpu-only file, sink and QuestDB: whole command, peak RSS (TSBS_BIN=DIR)
	@test -n "$(TSBS_BIN)" || { echo "bench-replay-parity needs TSBS_BIN=DIR (tsbs_generate_data, tsbs_load_questdb)" >&2; exit 2; }
	@mkdir -p $(REPLAY_PARITY_DIR)
	set -o pipefail; $(PY) benchmarks/loader_parity.py --tsbs-bin $(TSBS_BIN) --loaders go --loaders replay \
		$(REPLAY_PARITY_ARGS) $(if $(strip $(REPLAY_PARITY_FILE)),--data-file $(REPLAY_PARITY_FILE)) \
		--json $(REPLAY_PARITY_DIR)/loader-parity-replay.json 2>&1 | tee $(REPLAY_PARITY_DIR)/loader-parity-replay.txt

ORIGINAL_PYTHON ?= ## Interpreter with the original pandas benchmark's dependencies (benchmarks/serialize_parity.py says how)
ORIGINAL_6_PYTHON ?= ## The same pins but questdb 6.0.0: the original's loop on our client version (serialize_parity.py says how)
ORIGINAL_REPO ?= ## Checkout of questdb/py-tsbs-benchmark (the original pandas benchmark)
SERIALIZE_ROWS ?= 2000000## Rows of each bench-serialize-parity run (the original's 1-thread run holds them in one buffer)

bench-serialize-parity: setup ## The original benchmark's serialize (its pins; our client) vs ours, 1 thread and N workers (ORIGINAL_PYTHON, ORIGINAL_6_PYTHON, ORIGINAL_REPO)
	@test -n "$(ORIGINAL_PYTHON)" -a -n "$(ORIGINAL_6_PYTHON)" -a -n "$(ORIGINAL_REPO)" || { echo "bench-serialize-parity needs ORIGINAL_PYTHON=... ORIGINAL_6_PYTHON=... ORIGINAL_REPO=... (see benchmarks/serialize_parity.py)" >&2; exit 2; }
	$(PY) benchmarks/serialize_parity.py --original-python $(ORIGINAL_PYTHON) \
		--original-current-client-python $(ORIGINAL_6_PYTHON) --original-repo $(ORIGINAL_REPO) \
		--row-count $(SERIALIZE_ROWS) --workers $(COMPARED_WORKERS)

bench-query-parity: setup ## tsbs_run_queries_questdb vs queries run, per query type, alternated (TSBS_BIN=DIR)
	@test -n "$(TSBS_BIN)" || { echo "bench-query-parity needs TSBS_BIN=DIR (tsbs_generate_queries, tsbs_run_queries_questdb)" >&2; exit 2; }
	$(PY) benchmarks/query_parity.py --tsbs-bin $(TSBS_BIN)

A ?= ## ab: side a's command, a shell string (the baseline), e.g. A="sleep 0.05"
B ?= ## ab: side b's command
AB_ARGS ?= ## More benchmarks/ab.py options, e.g. AB_ARGS="--rounds 11 --a-name before --b-name after"

# A and B reach the recipe through the environment, as given: quotes and $ inside a command stay as they are.
ab: export A_COMMAND = $(value A)
ab: export B_COMMAND = $(value B)
ab: setup ## Two commands (A=CMD B=CMD) alternated over rounds: wall and CPU medians, paired ratios and standing, a record
	@test -n "$$A_COMMAND" -a -n "$$B_COMMAND" || { echo "ab needs A=CMD B=CMD (two checkouts: benchmarks/ab.py --help)" >&2; exit 2; }
	$(PY) benchmarks/ab.py --a "$$A_COMMAND" --b "$$B_COMMAND" $(AB_ARGS)

# --- query benchmark (TSBS's queries) --------------------------------------------------------
# The data set is named by its flags: the same ones load it, generate its queries and (--check) compute the
# reference. Its default spans 25 hours so that every query type runs (cpu-max-all-32-24 needs > 24h).
QSCALE ?= 100## Hosts of the query benchmark's data set (cpu-max-all-32-24 needs 32)
QSEED ?= 7## Seed of the data set and of its queries
QSTART ?= 2016-01-01T00:00:00Z## Start of the query data set
QEND ?= 2016-01-02T01:00:00Z## End of the query data set
QUERIES ?= 100## Queries per query type
QWORKERS ?= 1## Query connections (workers)
QPROTOCOL ?= pgwire## pgwire or http
QLOAD ?= 1## 1: load the data set first (drops table cpu); 0: query the table as it is
QARGS ?= ## Extra `harness queries run` options, e.g. QARGS="--check --burn-in 16 --query-types lastpoint"
QHTTP_PORT ?= 9000## QuestDB's HTTP port for bench-queries (native up, load, HTTP queries)
QILP_PORT ?= 9009## QuestDB's ILP port for bench-queries
QPG_PORT ?= 8812## QuestDB's PGWire port for bench-queries
QMIN_PORT ?= 9003## QuestDB's /status port for bench-queries

QDATA_ARGS = --seed $(QSEED) --scale $(QSCALE) --timestamp-start $(QSTART) --timestamp-end $(QEND)

.PHONY: bench-queries

# The load and the query run of bench-queries (also checked before QuestDB starts: below).
QUERIES_LOAD = bench --send --transport http $(QDATA_ARGS) --http-port $(QHTTP_PORT) --ilp-port $(QILP_PORT) \
	--server-metrics-port $(QMIN_PORT) --reporting-period 0
QUERIES_RUN = queries run --generate $(QDATA_ARGS) --queries $(QUERIES) --workers $(QWORKERS) --protocol $(QPROTOCOL) \
	--http-port $(QHTTP_PORT) --pg-port $(QPG_PORT) $(QARGS)

bench-queries: setup ## Natively: load the query data set (bench --send), run TSBS's queries (all types), print the summary
	@$(PY) -m harness native up --questdb-only --http-port $(QHTTP_PORT) --ilp-port $(QILP_PORT) \
		--pg-port $(QPG_PORT) --min-port $(QMIN_PORT)
	$(if $(filter 1,$(QLOAD)),$(PY) -m harness $(QUERIES_LOAD))
	$(PY) -m harness $(QUERIES_RUN)

# --- read benchmark (a table back into pandas) --------------------------------------------------
READ_ROWS ?= 10000000## Rows of bench-read's cpu-only data set (scale SCALE, seed 1)
READ_ROUNDS ?= 3## Alternated rounds of bench-read
READ_WORKERS ?= 1,2## Worker counts bench-read measures (comma-separated)
READ_DIR ?= results/reference/$(shell date -u +%Y-%m-%d)-read## Where bench-read writes its record, summary and output

.PHONY: bench-read

bench-read: setup ## Natively: load a cpu-only set once, read it back by every protocol alternated: medians, ratios, CPU/Mrows
	@$(PY) -m harness native up --questdb-only
	@mkdir -p $(READ_DIR)
	set -o pipefail; $(PY) benchmarks/read_protocols.py --row-count $(READ_ROWS) --scale $(SCALE) --rounds $(READ_ROUNDS) \
		--workers $(READ_WORKERS) --out-dir $(READ_DIR) 2>&1 | tee $(READ_DIR)/output.txt

# --- input checks of the native targets ------------------------------------------------------------
# Run while make reads this file, as the Docker targets' are (below): a bad variable ends in make's one
# `*** ... Stop.` line before QuestDB starts. The options a target hands a harness command, that command
# checks itself (`--dry-run`: its own refusal, nothing run; the benchmark scripts' rows and workers are bench
# options); the variables no command takes are checked here. Before `make setup` there is no harness to ask.
NATIVE_GOALS := bench-native bench-table bench-exactly-once bench-sampler-overhead bench-queries bench-read
# "GOAL: the line the harness refuses these options with"; nothing when it takes them.
dry_run = $(shell problem=$$($(PY) -m harness $(2) --dry-run 2>&1 >/dev/null) || \
	echo "$$problem" | sed '1s/^error: /$(1): /')
POSITIVE := [0-9]*[1-9][0-9]*
positive_int = $(shell [[ '$(2)' =~ ^$(POSITIVE)$$ ]] || echo "$(1) must be a positive integer (got '$(2)')")
positive_ints = $(shell [[ '$(2)' =~ ^$(POSITIVE)(,$(POSITIVE))*$$ ]] || \
	echo "$(1) must be positive integers separated by commas (got '$(2)')")
goal = $(filter $(1),$(MAKECMDGOALS))

ifneq ($(and $(filter $(NATIVE_GOALS),$(MAKECMDGOALS)),$(wildcard $(PY))),)
NATIVE_PROBLEM := $(or \
	$(if $(call goal,bench-native),$(call dry_run,bench-native,$(NATIVE_BENCH))), \
	$(if $(call goal,bench-table),$(call dry_run,bench-table,bench --send --row-count $(ROWS) --workers $(COMPARED_WORKERS))), \
	$(if $(call goal,bench-exactly-once bench-sampler-overhead),\
		$(call dry_run,$(call goal,bench-exactly-once bench-sampler-overhead),bench --send --row-count $(ROWS) $(WORKERS_OPTION))), \
	$(if $(call goal,bench-queries),$(or \
		$(if $(filter 0 1,$(QLOAD)),,QLOAD must be 1 (load the data set first) or 0 (got '$(QLOAD)')), \
		$(call dry_run,bench-queries,$(QUERIES_LOAD)), $(call dry_run,bench-queries,$(QUERIES_RUN)))), \
	$(if $(call goal,bench-read),$(or \
		$(call positive_int,READ_ROUNDS,$(READ_ROUNDS)), \
		$(call positive_ints,READ_WORKERS,$(READ_WORKERS)), \
		$(call dry_run,bench-read,bench --send --workers 2 --seed 1 --row-count $(READ_ROWS) --scale $(SCALE)))))
ifneq ($(strip $(NATIVE_PROBLEM)),)
$(error $(strip $(NATIVE_PROBLEM)))
endif
endif

# --- docker compose ------------------------------------------------------------------------
# The same benchmark in containers (compose.yaml): pinned images, QuestDB and the client on CPU sets that
# never overlap, Prometheus scraping both. OFFLINE=1 swaps in the stand-ins of images/offline/ for hosts
# without a container registry (compose.offline.yaml). Inputs are checked while make reads this file, so a
# bad one ends in a single `*** ... Stop.` line before anything starts.
.PHONY: bench noop-sink queries up down logs clean offline-images swarm-bench swarm-down

OFFLINE ?= ## 1: use local stand-in images (built by offline-images) instead of pulling
# Pinned versions (QUESTDB_VERSION, the *_IMAGE tags): .env, which Compose reads too.
include .env
QDB_CPUS ?= ## QuestDB's CPU set, e.g. 0-11 (empty: all cores but the client's)
CLIENT_CPUS ?= ## Client CPU set, e.g. 12-15 (empty: the top quarter of the cores, at least one)
METRICS_LINGER ?= 10## Seconds the client's /metrics stays up after a run (Prometheus finds a new container in ~6 s)
RESULTS ?= ## Results file in results/ (empty: results/<UTC time>-docker-<target>.json)
SWARM_STACK ?= tsbs-pandas-questdb-swarm## Name of the Swarm stack (swarm-bench, swarm-down)
SWARM_TIMEOUT ?= 3600## Seconds swarm-bench's clients may take before they are stopped
SWARM_ENGINES ?= ## swarm-bench: the Docker engines of the swarm's other nodes (e.g. "ssh://root@host2 ssh://root@host3"): each gets the images its labels call for
QUESTDB_CPU_LIMIT ?= ## swarm-bench: CPUs QuestDB may use (a CFS quota, e.g. 12; empty: no limit)
CLIENT_CPU_LIMIT ?= ## swarm-bench: CPUs each client replica may use (e.g. 1.5; empty: no limit)
AUTH ?= 0## 1: QuestDB asks for logins on HTTP and PGWire, the client and Prometheus log in (docs/security.md)
QUESTDB_USER ?= ## AUTH=1: QuestDB's user (empty: the one kept in SECRETS_DIR/questdb-auth/, made on first use)
QUESTDB_PASSWORD ?= ## AUTH=1: its password, likewise; given (best in the environment: ps shows make's arguments), it is kept
SECRETS_DIR ?= .cache## Where the Docker targets keep the passwords they make (Grafana's, QuestDB's), as 0600 files

DOCKER_GOALS := bench noop-sink queries up down logs clean offline-images swarm-bench swarm-down
ifneq ($(filter $(DOCKER_GOALS),$(MAKECMDGOALS)),)
DOCKER_PROBLEM := $(shell WORKERS='$(WORKERS)' ROWS='$(ROWS)' CLIENTS='$(CLIENTS)' QDB_CPUS='$(QDB_CPUS)' CLIENT_CPUS='$(CLIENT_CPUS)' \
	TRANSPORT='$(TRANSPORT)' \
	RESULTS='$(RESULTS)' OFFLINE='$(OFFLINE)' QSCALE='$(QSCALE)' QUERIES='$(QUERIES)' QWORKERS='$(QWORKERS)' \
	QPROTOCOL='$(QPROTOCOL)' QLOAD='$(QLOAD)' QUESTDB_CPU_LIMIT='$(QUESTDB_CPU_LIMIT)' CLIENT_CPU_LIMIT='$(CLIENT_CPU_LIMIT)' \
	SWARM_TIMEOUT='$(SWARM_TIMEOUT)' AUTH='$(AUTH)' QUESTDB_USER='$(QUESTDB_USER)' PROFILE='$(PROFILE)' \
	QUESTDB_UID='$(QUESTDB_UID)' scripts/docker-check.sh check $(filter $(DOCKER_GOALS),$(MAKECMDGOALS)))
ifneq ($(DOCKER_PROBLEM),)
$(error $(DOCKER_PROBLEM))
endif
endif

# Defaults from the host's core count (scripts/docker-check.sh): 16 cores -> 0-11 / 12-15, 2 -> 0 / 1.
DOCKER_CPU_SPLIT := $(shell scripts/docker-check.sh cpus)
DOCKER_QDB_CPUS = $(or $(QDB_CPUS),$(word 1,$(DOCKER_CPU_SPLIT)))
DOCKER_CLIENT_CPUS = $(or $(CLIENT_CPUS),$(word 2,$(DOCKER_CPU_SPLIT)))
# The client never runs as root. It writes results/ as the caller's user, so the files are theirs; a root
# caller gets the image's own unprivileged user (10001), which is then given results/.
# PROFILE=1 (bench, queries): QuestDB's user, the only one its JVM's attach answers (compose.profile.yaml).
HOST_UID := $(shell id -u)
QUESTDB_UID := 10001# the QuestDB images' user: upstream's, and the stand-in's (images/offline/questdb)
PROFILED_CLIENT = $(and $(filter 1,$(PROFILE)),$(filter bench queries,$(MAKECMDGOALS)))
CLIENT_UID := $(if $(PROFILED_CLIENT),$(QUESTDB_UID),$(if $(filter 0,$(HOST_UID)),10001,$(HOST_UID)))
CLIENT_GID := $(if $(PROFILED_CLIENT),$(QUESTDB_UID),$(if $(filter 0,$(HOST_UID)),10001,$(shell id -g)))
DOCKER_STAMP := $(shell date -u +%Y%m%dT%H%M%SZ)
COMPOSE_FILES ?= -f compose.yaml $(if $(filter 1,$(OFFLINE)),-f compose.offline.yaml) $(if $(filter 1,$(AUTH)),-f compose.auth.yaml) \
	$(PROFILE_COMPOSE) $(if $(QWP),-f compose.qwp.yaml)
# TRANSPORT=qwp: QuestDB's image is the QWP server's stand-in (no registry serves one), built first, OFFLINE or not.
QUESTDB_QWP_IMAGE = $(shell scripts/docker-offline-images.sh --image questdb-qwp)
# PROFILE=1: the client shares QuestDB's processes (not into the sink, where there is no QuestDB to profile).
PROFILE_COMPOSE = $(if $(filter 1,$(PROFILE)),-f compose.profile.yaml)
noop-sink: PROFILE_COMPOSE =
# Secrets never pass a command line (make's echo of it, ps): scripts/docker-secrets.sh, in front of every docker
# command below, reads them from their 0600 files in SECRETS_DIR (making them on first use) into that command's
# environment. Grafana's admin password: GRAFANA_ADMIN_PASSWORD as the environment or make's command line gives
# it, else the one kept in SECRETS_DIR; never Grafana's default. AUTH=1: QuestDB's user and password
# (QUESTDB_USER, QUESTDB_PASSWORD, else the kept ones) for QuestDB, the client and Prometheus (compose.auth.yaml).
GRAFANA_PASSWORD_FILE = $(SECRETS_DIR)/grafana-admin-password
WITH_SECRETS = scripts/docker-secrets.sh
# AUTH=1: the client's configuration string without its login (the script adds it), as QDB_CLIENT_CONF. Over
# HTTP it is what the senders use, so it says what the harness's own would (no auto flush, the protocol
# version); ILP over TCP has no password login, so --conf says how to send (AUTH_SEND, for bench) and
# QDB_CLIENT_CONF only logs /exec in.
SEND_SETTINGS = auto_flush=off;$(if $(filter-out auto,$(PROTOCOL)),protocol_version=$(PROTOCOL);)
# QWP's is a ws:: string, which its senders and /exec use alike.
CLIENT_CONF = $(if $(QWP),ws::addr=questdb:9000;,http::addr=questdb:9000;$(if $(filter http,$(TRANSPORT)),$(SEND_SETTINGS),auto_flush=off;))
AUTH_SEND = $(if $(and $(filter 1,$(AUTH)),$(filter tcp,$(TRANSPORT))),--conf 'tcp::addr=questdb:9009;$(SEND_SETTINGS)')
# Variables are handed to compose on its command line only: exported, QDB_CPUS would also reach a native
# QuestDB, which reads every QDB_* variable as a configuration key.
COMPOSE_ENV = QUESTDB_VERSION='$(QUESTDB_VERSION)' QDB_CPUS='$(DOCKER_QDB_CPUS)' CLIENT_CPUS='$(DOCKER_CLIENT_CPUS)' \
	CLIENT_UID=$(CLIENT_UID) CLIENT_GID=$(CLIENT_GID) SECRETS_DIR='$(SECRETS_DIR)' AUTH='$(AUTH)' \
	$(if $(filter 1,$(AUTH)),CLIENT_CONF='$(CLIENT_CONF)') $(if $(QWP),QUESTDB_QWP_IMAGE='$(QUESTDB_QWP_IMAGE)')
COMPOSE = $(COMPOSE_ENV) $(WITH_SECRETS) docker compose $(COMPOSE_FILES)
# One harness command in a fresh client container ($(1): more `run` options, $(2): the command and its
# options; the image's entrypoint is `python -m harness`): --build picks up harness changes (cached layers
# otherwise), --use-aliases makes it `client` on the network, where Prometheus scrapes it.
# --log-level error: without buildx (Debian's docker.io has none) Compose warns on every build that it
# falls back from Bake to its own builder, and COMPOSE_BAKE=false only swaps that for a deprecation warning.
client_container = $(COMPOSE_ENV) $(WITH_SECRETS) docker --log-level error compose $(COMPOSE_FILES) run --rm --build --quiet-build \
	--use-aliases $(1) client $(2)
# Served on client:9464 (conf/prometheus.yml) during the run and METRICS_LINGER seconds after it.
CLIENT_METRICS = --metrics-port 9464 --metrics-linger $(METRICS_LINGER)
# One benchmark run ($(1): more `run` options); the caller adds the target's options.
client_run = $(call client_container,$(1),bench --send --report $(BENCH_ARGS) $(PROFILE_OPTION) $(CLIENT_METRICS))
# CLIENTS > 1: that many client containers, each on its share of the client CPU set, records merged.
clients_run = $(COMPOSE_ENV) COMPOSE='docker --log-level error compose $(COMPOSE_FILES)' $(WITH_SECRETS) \
	scripts/docker-clients.sh $(CLIENTS) '$(DOCKER_CLIENT_CPUS)' $(call docker_results,bench-$(CLIENTS)clients) \
	bench --send --report $(BENCH_ARGS) $(AUTH_SEND) $(CLIENT_METRICS) --host questdb
# A rebuild leaves the previous client image untagged (<none>); only those, found by the build's label, go.
prune_client_images = docker image prune --force --filter label=tsbs-pandas-questdb.image=client >/dev/null
docker_results = $(or $(RESULTS),results/$(DOCKER_STAMP)-docker-$(1).json)
OFFLINE_IMAGES := $(if $(or $(filter 1,$(OFFLINE)),$(QWP)),offline-images)
# What offline-images builds: the stack's stand-ins (the script's default), with TRANSPORT=qwp the QWP server's too.
OFFLINE_IMAGE_NAMES = $(if $(QWP),python questdb socat prometheus questdb-qwp)
# results/ for the client's user (a root caller hands it to the image's own user, see CLIENT_UID).
results_dir = mkdir -p results$(if $(filter 0,$(HOST_UID)), && chown $(CLIENT_UID):$(CLIENT_GID) results)
# QuestDB, Prometheus (and Grafana, online) up, waiting until QuestDB is healthy.
stack_up = $(COMPOSE) up --detach --wait --wait-timeout 180 --quiet-pull

bench: $(OFFLINE_IMAGES) $(PROFILER_LIBRARY) ## In Docker: start QuestDB (and Prometheus), send ROWS rows with WORKERS threads, record
	@echo "CPU sets: QuestDB $(DOCKER_QDB_CPUS), client $(DOCKER_CLIENT_CPUS)"
	@$(results_dir)
	$(stack_up)
	$(if $(filter-out 1,$(CLIENTS)),$(clients_run),$(call client_run,) $(AUTH_SEND) --host questdb --results $(call docker_results,bench))
	@$(prune_client_images)

noop-sink: $(OFFLINE_IMAGES) ## In Docker: the same run against the socat no-op sink (client cost alone)
	@echo "CPU sets: sink $(DOCKER_QDB_CPUS), client $(DOCKER_CLIENT_CPUS)"
	@$(results_dir)
	$(COMPOSE) --profile noop up --detach --wait --wait-timeout 180 --quiet-pull sink prometheus
	$(call client_run,--no-deps) --target sink --host sink --ilp-port 9009 --results $(call docker_results,noop-sink)
	@$(prune_client_images)

# The query benchmark's variables (QSCALE ... QARGS) are bench-queries' (above); the servers' ports are the
# Compose network's defaults, so QHTTP_PORT ... QMIN_PORT do not apply. The load's record goes beside the
# queries' one: <results>-load.json. AUTH=1: the load sends over HTTP, as the harness would.
queries: CLIENT_CONF = http::addr=questdb:9000;auto_flush=off;
queries: $(OFFLINE_IMAGES) $(PROFILER_LIBRARY) ## In Docker: load the query data set (QLOAD=1), run TSBS's queries (all types), record
	@echo "CPU sets: QuestDB $(DOCKER_QDB_CPUS), client $(DOCKER_CLIENT_CPUS)"
	@$(results_dir)
	$(stack_up)
	$(if $(filter 1,$(QLOAD)),$(call client_container,,bench --send --transport http $(QDATA_ARGS) --host questdb \
		--reporting-period 0 --results $(basename $(call docker_results,queries))-load.json))
	$(call client_container,,queries run --generate $(QDATA_ARGS) --queries $(QUERIES) --workers $(QWORKERS) \
		--protocol $(QPROTOCOL) --host questdb $(CLIENT_METRICS) --report --results $(call docker_results,queries) \
		$(PROFILE_OPTION) $(QARGS))
	@$(prune_client_images)

up: $(OFFLINE_IMAGES) ## Start QuestDB, Prometheus and Grafana in Docker and wait until healthy
	$(stack_up)
	@echo "QuestDB http://127.0.0.1:9000$(if $(filter 1,$(AUTH)), (login: $(SECRETS_DIR)/questdb-auth/user and password))  Prometheus http://127.0.0.1:9090$(if $(filter 1,$(OFFLINE)),  (no Grafana offline),  Grafana http://127.0.0.1:3000 (admin password: $(if $(filter command line environment,$(origin GRAFANA_ADMIN_PASSWORD)),GRAFANA_ADMIN_PASSWORD,$(GRAFANA_PASSWORD_FILE))))"

down: ## Stop and remove the stack's containers (the data volumes stay)
	$(COMPOSE) --profile '*' down --remove-orphans

logs: ## Follow the stack's logs (Ctrl-C stops following, not the stack)
	$(COMPOSE) --profile '*' logs --follow --tail 100

clean: ## down, plus the data volumes and the client image (offline stand-ins stay: make offline-images)
	$(COMPOSE) --profile '*' down --remove-orphans --volumes
	docker image ls --quiet --filter reference=tsbs-pandas-questdb-client | sort -u | xargs -r docker image rm --force >/dev/null

# --- docker swarm ----------------------------------------------------------------------------
# The same stack as a Swarm stack (compose.swarm.yaml, scripts/docker-swarm.sh): CLIENTS client replicas, each
# taking its interleaved group from its task slot, the servers on the node labelled tsbs.questdb, the clients
# on nodes labelled tsbs.client (docs/scale-out.md). Without a swarm, a one-node swarm is made for it, which
# swarm-down leaves. Its variables (SWARM_*, *_CPU_LIMIT) are above, with the other Docker inputs.
swarm_env = $(COMPOSE_ENV) QUESTDB_CPU_LIMIT='$(QUESTDB_CPU_LIMIT)' CLIENT_CPU_LIMIT='$(CLIENT_CPU_LIMIT)' \
	STACK='$(SWARM_STACK)' SWARM_TIMEOUT='$(SWARM_TIMEOUT)' SWARM_ENGINES='$(SWARM_ENGINES)' \
	COMPOSE='docker --log-level error compose $(COMPOSE_FILES) -f compose.swarm.yaml' $(WITH_SECRETS)

swarm-bench: $(OFFLINE_IMAGES) ## In a Docker Swarm: QuestDB (and Prometheus), CLIENTS client replicas, records merged
	@$(results_dir)
	$(swarm_env) scripts/docker-swarm.sh bench $(CLIENTS) $(call docker_results,swarm-bench-$(CLIENTS)clients) \
		bench --send --report $(BENCH_ARGS) $(AUTH_SEND) $(CLIENT_METRICS) --host questdb
	@$(prune_client_images)

swarm-down: ## Remove the Swarm stack (its data volumes stay); leave the swarm if swarm-bench made it
	$(swarm_env) scripts/docker-swarm.sh down

offline-images: setup ## Build the stand-in images from a debootstrapped Debian (no container registry needed); TRANSPORT=qwp: the QWP server's too
	QUESTDB_VERSION='$(QUESTDB_VERSION)' HARNESS_PYTHON='$(PY)' scripts/docker-offline-images.sh $(OFFLINE_IMAGE_NAMES)


# --- metrics, prometheus, grafana ----------------------------------------------------------
.PHONY: dashboard bench-metrics-overhead bench-sampler-overhead

DASHBOARD_UID = $(shell $(PYTHON) -c 'import json; print(json.load(open("grafana/dashboards/harness.json"))["uid"])')

GRAFANA_BIN ?= ## A Grafana server binary (built from source: docs/dashboard.md), for grafana-check
GRAFANA_HOME ?= ## Its source tree (conf/defaults.ini), for grafana-check

grafana-check: setup ## Provisioning, the run variable and every panel through a real Grafana (GRAFANA_BIN, GRAFANA_HOME)
	@test -n "$(GRAFANA_BIN)" -a -n "$(GRAFANA_HOME)" || { echo "grafana-check needs GRAFANA_BIN=... GRAFANA_HOME=... (docs/dashboard.md says how to build one)" >&2; exit 2; }
	GRAFANA_BIN=$(abspath $(GRAFANA_BIN)) GRAFANA_HOME=$(abspath $(GRAFANA_HOME)) $(PY) -m pytest tests/grafana_check.py -v

dashboard: ## Print the Grafana dashboard's URL (Compose publishes Grafana on 127.0.0.1:3000; anonymous viewing)
	@echo "http://127.0.0.1:3000/d/$(DASHBOARD_UID)"

bench-sampler-overhead: setup ## Send with the run's time-series sampler on vs off, alternated 3+3: medians and ratios
	@$(PY) -m harness native up --questdb-only
	$(PY) benchmarks/sampler_overhead.py --row-count $(ROWS) $(WORKERS_OPTION)

bench-metrics-overhead: setup ## Serialize throughput, metrics served+scraped vs off (2M rows, median of 7 alternating)
	$(PY) benchmarks/metrics_overhead.py $(WORKERS_OPTION)
