# redis-operator: kubebuilder-style entry points. `make help` lists them.

VERSION ?= v$(shell cat .version)
CARGO ?= cargo
CARGO_FLAGS ?= --locked

# Where the generated CRD is committed (crates/api/src/crd.rs checks both in `make test`).
CRD_FILES := charts/redis-operator/crds/redis.yaml deploy/crd.yaml

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} \
		/^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: build
build: ## Build the workspace's binaries (debug).
	$(CARGO) build $(CARGO_FLAGS) --bins

.PHONY: fmt
fmt: ## Format the Rust code.
	$(CARGO) fmt --all

.PHONY: lint
lint: ## Check formatting and run clippy with warnings as errors.
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy $(CARGO_FLAGS) --workspace --all-targets -- -D warnings

.PHONY: manifests
manifests: ## Generate the CRD from the Rust types into the chart and deploy/.
	@tmp=$$(mktemp); trap 'rm -f "$$tmp"' EXIT; \
	$(CARGO) run $(CARGO_FLAGS) -q -p api --bin crdgen > "$$tmp"; \
	for f in $(CRD_FILES); do mkdir -p "$$(dirname "$$f")"; cp "$$tmp" "$$f"; echo "wrote $$f"; done

.PHONY: unit
unit: ## Run the unit tests (includes the check that committed manifests match the generated ones).
	$(CARGO) test $(CARGO_FLAGS)

.PHONY: test
test: lint unit ## Everything CI runs: lint, then the tests.
