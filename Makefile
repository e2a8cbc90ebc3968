# Tessera — one entry point for building, testing and running the project.
#
#   make demo        anvil + deploy + agents: one lifecycle, then two plans through orchestrator and workers
#   make test        everything a reviewer would run (see `test` below)
#   make bench-gas   receipt gas per lifecycle step, as a table and JSON
#   make bench-plan  plans through orchestrator + workers on automine and 2 s blocks (funded step by step and upfront, and through a stand-in hosted provider): blocks, seconds, RPC requests, USDC·s locked
#   make bench-load  many plans at once through tessera serve: throughput vs direct, latency, RSS, CPU, RPC
#   make soak-replicas  the failover trial: 3 replicas, 20 random kill -9s, exactly-once, p99 takeover
#   make bench       all benchmarks (gas, plan, classify, indexer)
#   make coverage    forge coverage of the contracts
#
# Every target depends on `toolchain`, which installs pinned foundry binaries,
# the npm solc compiler and Solidity libraries into .tools/ (git-ignored).

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ROOT      := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
TOOLS     := $(ROOT)/.tools
STAMP     := $(TOOLS)/.installed
FORGE     := $(TOOLS)/node_modules/@foundry-rs/forge-linux-amd64/bin/forge
ANVIL     := $(TOOLS)/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil
CAST      := $(TOOLS)/node_modules/@foundry-rs/cast-linux-amd64/bin/cast
CARGO     ?= cargo

export PATH := $(dir $(FORGE)):$(dir $(ANVIL)):$(dir $(CAST)):$(PATH)
export TESSERA_ANVIL := $(ANVIL)

.PHONY: help toolchain check-prereqs contracts bindings bindings-check fmt fmt-check lint \
        clippy forge-test gas-snapshot gas-snapshot-check coverage rust-test test demo \
        chain bench bench-gas bench-load bench-plan bench-classify bench-indexer soak-indexer soak-replicas clean browser \
        test-web js-test fuzz-tools fuzz-api audit audit-tools tree-check words-check natspec-check

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | column -t -s $$'\t'

check-prereqs:
	@command -v node >/dev/null || { echo "error: node (>= 18) is required: install Node.js and npm" >&2; exit 1; }
	@command -v npm  >/dev/null || { echo "error: npm is required: install Node.js and npm" >&2; exit 1; }
	@command -v $(CARGO) >/dev/null || { echo "error: cargo is required: install Rust via rustup" >&2; exit 1; }
	@[ "$$(uname -s)-$$(uname -m)" = "Linux-x86_64" ] || { echo "error: the pinned foundry binaries are for Linux x86_64; this is $$(uname -s)-$$(uname -m)" >&2; exit 1; }

# Installs only when the pinned manifest changed since the last install, so a
# second run does nothing and touches no network.
$(STAMP): tools/package.json tools/package-lock.json
	@$(MAKE) --no-print-directory check-prereqs
	@echo "installing pinned toolchain into .tools/ (forge, anvil, cast 1.7.1; solc 0.8.30; OpenZeppelin 5.4.0)"
	@mkdir -p $(TOOLS)
	@cp tools/package.json tools/package-lock.json $(TOOLS)/
	@cd $(TOOLS) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
	@$(FORGE) --version | head -1 >/dev/null
	@$(ROOT)/tools/solc --version | grep -q 'Version: 0.8.30'
	@touch $@

toolchain: check-prereqs $(STAMP) ## install pinned forge/anvil/cast/solc into .tools/ (idempotent)

# Schemathesis for the OpenAPI fuzz run, in a venv of its own, from the exact
# pins of tools/fuzz-requirements.txt (--no-deps: nothing unpinned comes in).
# Like the toolchain, it installs only when the pins changed.
FUZZ_VENV    := $(TOOLS)/fuzz
FUZZ_STAMP   := $(FUZZ_VENV)/.installed
SCHEMATHESIS := $(FUZZ_VENV)/bin/schemathesis
PYTHON       ?= python3
export TESSERA_SCHEMATHESIS := $(SCHEMATHESIS)

$(FUZZ_STAMP): tools/fuzz-requirements.txt
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) (>= 3.11, with venv) is required for the API fuzz run" >&2; exit 1; }
	@echo "installing pinned schemathesis into .tools/fuzz"
	@rm -rf $(FUZZ_VENV)
	@$(PYTHON) -m venv $(FUZZ_VENV)
	@$(FUZZ_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -r tools/fuzz-requirements.txt
	@$(SCHEMATHESIS) --version >/dev/null
	@touch $@

fuzz-tools: $(FUZZ_STAMP) ## install pinned schemathesis into .tools/fuzz (idempotent)

# slither and halmos for `make audit`, the same way: a venv of their own,
# exact pins, --no-deps, installed only when the pins changed.
AUDIT_VENV  := $(TOOLS)/audit
AUDIT_STAMP := $(AUDIT_VENV)/.installed

$(AUDIT_STAMP): tools/audit-requirements.txt
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) (>= 3.11, with venv) is required for make audit" >&2; exit 1; }
	@echo "installing pinned slither and halmos into .tools/audit"
	@rm -rf $(AUDIT_VENV)
	@$(PYTHON) -m venv $(AUDIT_VENV)
	@$(AUDIT_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -r tools/audit-requirements.txt
	@$(AUDIT_VENV)/bin/slither --version >/dev/null
	@$(AUDIT_VENV)/bin/halmos --version >/dev/null
	@touch $@

audit-tools: $(AUDIT_STAMP) ## install pinned slither and halmos into .tools/audit (idempotent)

tree-check: ## every leaf of every contracts/test .tree file is named by a test that mirrors it (a // it ... comment), and every such comment by a leaf
	@tools/tree-check

words-check: ## no run-state or phase word compared as a string outside orchestrator/src/state/mod.rs (the check's self-test first: every planted comparison caught)
	@tools/words-check --self-test
	@tools/words-check

natspec-check: toolchain ## every function, event and error of the contracts' interfaces has its full NatSpec
	@$(FORGE_SRC_BUILD) >/dev/null
	@tools/natspec-check

audit: toolchain audit-tools ## slither (0 high/medium, lows triaged in contracts/audit/TRIAGE.md) and halmos symbolic checks
	@tools/audit

# --- contracts and bindings -------------------------------------------------

# Source contracts only: the bindings do not depend on the tests.
FORGE_SRC_BUILD = cd contracts && $(FORGE) build --skip test --skip script

contracts: toolchain ## compile the contracts
	@$(FORGE_SRC_BUILD)

bindings: toolchain ## refresh bindings/artifacts from a fresh forge build
	@$(FORGE_SRC_BUILD) --out out --cache-path cache >/dev/null
	@node tools/export-artifacts.mjs contracts/out bindings/artifacts
	@echo "bindings/artifacts refreshed"

bindings-check: toolchain ## fail if bindings/artifacts differ from a fresh forge build
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  (cd contracts && $(FORGE) build --skip test --skip script --out "$$tmp/out" --cache-path "$$tmp/cache" >/dev/null); \
	  node tools/export-artifacts.mjs "$$tmp/out" "$$tmp/artifacts"; \
	  if ! diff -r -q "$$tmp/artifacts" bindings/artifacts; then \
	    echo "error: bindings/artifacts are stale: run 'make bindings' and commit the result" >&2; exit 1; \
	  fi
	@echo "bindings/artifacts match a fresh forge build"

# --- style ---------------------------------------------------------------------

fmt: toolchain ## format Rust and Solidity
	@$(CARGO) fmt --all
	@cd contracts && $(FORGE) fmt

fmt-check: toolchain ## check formatting of Rust and Solidity
	@$(CARGO) fmt --all -- --check
	@cd contracts && $(FORGE) fmt --check

lint: toolchain ## forge lint on the contract sources
	@cd contracts && $(FORGE) lint src

clippy: toolchain
	@$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

# --- tests ---------------------------------------------------------------------

forge-test: toolchain ## forge unit, fuzz and invariant suites (ci profile: 512 fuzz runs, 256 x 100 invariant runs)
	@cd contracts && FOUNDRY_PROFILE=ci $(FORGE) test

# The snapshot covers unit and fuzz tests under the default profile (fixed seed),
# not the invariant campaigns.
# Fuzz failures forge persisted in cache/ would be replayed first and change
# the figures; the snapshot is taken without them, as on a fresh clone.
SNAPSHOT = cd contracts && rm -rf cache/fuzz cache/invariant && $(FORGE) snapshot --no-match-path 'test/invariant/*'

gas-snapshot: toolchain ## rewrite contracts/.gas-snapshot
	@$(SNAPSHOT)

gas-snapshot-check: toolchain ## fail if gas differs from contracts/.gas-snapshot
	@$(SNAPSHOT) --check

# forge's coverage analysis resolves library imports only through absolute
# paths, so they are given here rather than in foundry.toml.
coverage: toolchain ## line and branch coverage of the contracts
	@cd contracts && $(FORGE) coverage --report summary --no-match-coverage 'test/|mocks/' \
	  --lib-paths $(TOOLS)/node_modules \
	  --remappings @openzeppelin/contracts/=$(TOOLS)/node_modules/@openzeppelin/contracts/

# The browser tests drive Debian's Chromium through playwright-core; no
# browser is ever downloaded by a tool. TESSERA_CHROMIUM overrides the path.
CHROMIUM ?= $(or $(TESSERA_CHROMIUM),/usr/bin/chromium)
export TESSERA_CHROMIUM := $(CHROMIUM)

browser: ## install Debian's chromium for the web UI tests when it is missing
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  command -v apt-get >/dev/null || { echo "error: $(CHROMIUM) is missing and apt-get is not available: install Chromium and set TESSERA_CHROMIUM" >&2; exit 1; }; \
	  if [ "$$(id -u)" = 0 ]; then sudo=; elif command -v sudo >/dev/null; then sudo=sudo; \
	  else echo "error: installing chromium needs root: run 'apt-get install chromium' as root" >&2; exit 1; fi; \
	  echo "installing Debian's chromium for the browser tests"; \
	  $$sudo apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq chromium >/dev/null; \
	fi
	@"$(CHROMIUM)" --version 2>/dev/null | grep -qi chromium || { echo "error: $(CHROMIUM) does not run" >&2; exit 1; }

# With a PostgreSQL server answering on 127.0.0.1:5432, its test variants
# are required (TESSERA_TEST_PG set), not skipped with a message the test
# harness swallows.
rust-test: toolchain browser fuzz-tools ## Rust unit tests, end-to-end tests on anvil, and the web UI in headless Chromium (PostgreSQL variants too when a server answers on 127.0.0.1:5432)
	@if [ -z "$${TESSERA_TEST_PG:-}" ] && (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; then \
	  export TESSERA_TEST_PG=postgres://postgres@127.0.0.1:5432/postgres; \
	  echo "PostgreSQL answers on 127.0.0.1:5432: its test variants run ($$TESSERA_TEST_PG)"; \
	fi; \
	$(CARGO) test --workspace --locked

# Both APIs on real servers (tessera serve with its token, the standalone
# indexer) under schemathesis --checks all; `make test` runs it (cargo test)
# with 10 test cases per operation, this target with FUZZ_EXAMPLES.
FUZZ_EXAMPLES ?= 100

fuzz-api: toolchain fuzz-tools ## OpenAPI fuzz (schemathesis --checks all) of both APIs, FUZZ_EXAMPLES per operation (default 100)
	@TESSERA_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(CARGO) test --locked -p tessera --test fuzz -- --nocapture

js-test: check-prereqs ## the web UI's script unit tests (node's test runner)
	@node --test orchestrator/web/*.test.mjs

test-web: toolchain browser ## only the web UI scenarios in headless Chromium (screenshots in target/web-artifacts/)
	@$(CARGO) test --locked -p tessera --test web -- --nocapture

test: toolchain bindings-check fmt-check clippy forge-test gas-snapshot-check tree-check words-check natspec-check audit js-test rust-test ## everything a reviewer runs
	@echo "make test: all checks passed"

# --- running -------------------------------------------------------------------

demo: toolchain ## anvil, deploy, agents; one lifecycle, then plans (flat, nested, a delegation, a dispute, a 20 KB plan between homes with a decline on chain) settled by orchestrator + workers, each party at a home of its own; trees from the indexer
	@$(CARGO) run --quiet --locked -p tessera -- demo

chain: toolchain ## a local chain with everything deployed, until Ctrl-C (writes deployment.json)
	@$(CARGO) run --quiet --locked -p tessera -- chain

bench-indexer: toolchain ## N lifecycles on anvil (LIFECYCLES=50000), then indexer backfill events/s (SQLite >= 60,000, PostgreSQL >= 40,000), live lag p50/p99, webhook delivery lag p50/p99 (<= 100 ms), GraphQL plan tree / agent page / filtered task list p50/p99 (<= 20 ms), peak RSS (< 100 MiB)
	@$(CARGO) run --quiet --locked --release -p tessera -- bench indexer --lifecycles $(LIFECYCLES) --json $(BENCH_DIR)/indexer.json \
	  $(if $(HOLD_CHAIN),--hold-chain $(HOLD_CHAIN))

LIFECYCLES ?= 50000
PLANS ?= 200
BENCH_PG ?= postgres://postgres@127.0.0.1:5432/postgres
# A folder to keep the generated chain in and reload it from (HOLD_CHAIN=target/bench/chain).
HOLD_CHAIN ?=

soak-indexer: toolchain ## the seeded reorg + kill -9 indexer test with SOAK_SEEDS seeds (default 200)
	@TESSERA_SOAK_SEEDS=$(SOAK_SEEDS) $(CARGO) test --locked -p tessera --test serve seeded_reorgs_and_kills -- --nocapture

SOAK_SEEDS ?= 200

soak-replicas: toolchain ## the failover trial: 3 replicas on PostgreSQL under waves of plans, 20 random kill -9s, exactly-once and conserved balances, p99 takeover (KILLS=20, BENCH_PG)
	@$(CARGO) run --quiet --locked --release -p tessera -- bench failover --kills $(KILLS) --database-url $(BENCH_PG) --json $(BENCH_DIR)/failover.json

KILLS ?= 20

bench: bench-gas bench-plan bench-classify bench-indexer ## every benchmark (gas, plan, classify); JSON reports in target/bench/

bench-classify: toolchain ## offline planner accuracy per axis on the brief corpus, and classify latency p50/p99 vs. the heuristic scan alone
	@$(CARGO) run --quiet --locked --release -p tessera -- bench classify --json $(BENCH_DIR)/classify.json

bench-plan: toolchain ## chain, fan-out and ten plans on automine and 2 s blocks, chain and fan-out funded upfront on 2 s blocks, chain and fan-out through a stand-in hosted provider (429s, 503s, no websocket): blocks, seconds, RPC requests and retries per sub-task (JSON in target/bench/)
	@$(CARGO) run --quiet --locked --release -p tessera -- bench plan --json $(BENCH_DIR)/plan.json

bench-load: toolchain ## 200 plans x 3 steps through tessera serve with offline workers, automine and 2 s blocks: sub-tasks/s vs direct, p50/p99, RSS, CPU, store size, RPC per sub-task and per block then 1, 2 and 3 replicas on PostgreSQL (PLANS=200; BENCH_PG=postgres://…, empty to skip)
	@$(CARGO) run --quiet --locked --release -p tessera -- bench load --plans $(PLANS) $(if $(BENCH_PG),--database-url $(BENCH_PG)) --json $(BENCH_DIR)/load.json

bench-gas: toolchain ## receipt gas of every lifecycle path (table, and JSON in target/bench/)
	@$(CARGO) run --quiet --locked -p tessera -- bench gas --json $(BENCH_DIR)/gas.json

BENCH_DIR ?= $(ROOT)/target/bench

clean: ## remove build outputs (keeps .tools/)
	@$(CARGO) clean
	@rm -rf contracts/out contracts/cache
