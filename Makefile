# Tessera — one entry point for building, testing and running the project.
#
#   make demo        start anvil, deploy, register demo agents, run one lifecycle
#   make test        everything a reviewer would run (see `test` below)
#   make bench-gas   receipt gas per lifecycle step, as a table and JSON
#
# Every target depends on `toolchain`, which installs pinned foundry binaries,
# the npm solc compiler and Solidity libraries into .tools/ (git-ignored).

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ROOT      := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
TOOLS     := $(ROOT)/.tools
TOOLS_BIN := $(TOOLS)/node_modules/.bin-tessera
STAMP     := $(TOOLS)/.installed
FORGE     := $(TOOLS)/node_modules/@foundry-rs/forge-linux-amd64/bin/forge
ANVIL     := $(TOOLS)/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil
CAST      := $(TOOLS)/node_modules/@foundry-rs/cast-linux-amd64/bin/cast
CARGO     ?= cargo
FOUNDRY_PROFILE_CI := ci

export PATH := $(dir $(FORGE)):$(dir $(ANVIL)):$(dir $(CAST)):$(PATH)
export TESSERA_ANVIL := $(ANVIL)

.PHONY: help toolchain check-prereqs contracts bindings bindings-check forge-test \
        forge-fmt-check gas-snapshot-check coverage rust-fmt-check clippy rust-test \
        test demo bench-gas clean

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
