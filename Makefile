# redis-operator: kubebuilder-style entry points. `make help` lists them.

VERSION ?= v$(shell cat .version)
CARGO ?= cargo
CARGO_FLAGS ?= --locked

# Where the generated CRDs are committed (crates/api/src/crd.rs checks them in `make test`): each
# in the chart's crds/<stem>.yaml, all of them in deploy/crd.yaml.
CRD_STEMS := redis redisbackup
# The chart rendered with its defaults but certs.mode=cert-manager, so it holds no certificate
# (hack/render-deploy.sh; crates/e2e/tests/chart.rs checks it in `make test`).
DEPLOY_MANIFEST := deploy/redis-operator.yaml

HELM ?= bin/helm
KUBECTL ?= bin/kubectl
HADOLINT_VERSION ?= 2.15.1

# Images (kubebuilder's IMG, one per binary).
IMG_CONTROLLER ?= ghcr.io/tangx/redis-controller:$(VERSION)
IMG_WEBHOOK ?= ghcr.io/tangx/redis-webhook:$(VERSION)
CONTAINER_TOOL ?= docker

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
lint: ## Check formatting, clippy with warnings as errors, import circles between files and folders (api, controller), function and file lengths, the design sections cited, and hadolint on the Dockerfiles.
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy $(CARGO_FLAGS) --workspace --all-targets -- -D warnings
	hack/tools/import-cycles.py crates/api/src
	hack/tools/import-cycles.py crates/controller/src
	hack/tools/long-items.py crates/api/src crates/controller/src crates/webhook/src crates/backup/src crates/ops/src
	hack/tools/design-refs.py
	hack/tools/hadolint.sh $(HADOLINT_VERSION)
	bin/hadolint Dockerfile.controller Dockerfile.webhook

.PHONY: manifests
manifests: $(HELM) ## Generate the CRDs from the Rust types into the chart and deploy/, and render the chart into deploy/.
	@tmp=$$(mktemp); trap 'rm -f "$$tmp"' EXIT; \
	$(CARGO) build $(CARGO_FLAGS) -q -p api --bin crdgen; \
	for stem in $(CRD_STEMS); do \
		$(CARGO) run $(CARGO_FLAGS) -q -p api --bin crdgen -- "$$stem" > "$$tmp" && cp "$$tmp" "charts/redis-operator/crds/$$stem.yaml" && echo "wrote charts/redis-operator/crds/$$stem.yaml"; \
	done; \
	$(CARGO) run $(CARGO_FLAGS) -q -p api --bin crdgen > "$$tmp" && cp "$$tmp" deploy/crd.yaml && echo "wrote deploy/crd.yaml"
	@tmp=$$(mktemp); trap 'rm -f "$$tmp"' EXIT; \
	HELM=$(HELM) hack/render-deploy.sh > "$$tmp" && cp "$$tmp" $(DEPLOY_MANIFEST) && echo "wrote $(DEPLOY_MANIFEST)"

.PHONY: unit
unit: ## Run the unit tests (includes the check that committed manifests match the generated ones).
	$(CARGO) test $(CARGO_FLAGS)

.PHONY: test
# Without KUBECONFIG the bed's tools (Go, ~30 min cold on 2 cores) build in the background while
# lint and the unit tests run: the Rust builds leave cores idle (k8s-openapi's single-threaded
# codegen, links), and build.sh's per-tool locks make the e2e step's own build.sh wait for them.
test: ## Everything CI runs: lint, the unit tests, then e2e (starts the local test bed unless KUBECONFIG is set).
	@tools=; \
	if [ -z "$${KUBECONFIG:-}" ]; then \
	  mkdir -p bin; \
	  echo "test: building the bed's tools in the background (bin/tools-build.log)"; \
	  nice -n 5 $(CLUSTER_SCRIPTS)/build.sh >bin/tools-build.log 2>&1 & tools=$$!; \
	  trap 'kill $$tools 2>/dev/null || true' EXIT; \
	fi; \
	$(MAKE) --no-print-directory lint unit; \
	if [ -n "$$tools" ]; then \
	  status=0; wait $$tools || status=$$?; \
	  cat bin/tools-build.log; \
	  [ $$status -eq 0 ] || { echo "test: building the bed's tools failed"; exit $$status; }; \
	fi; \
	$(MAKE) --no-print-directory e2e

##@ Deployment

$(HELM):
	hack/cluster/build.sh helm

.PHONY: helm-lint
helm-lint: $(HELM) ## Lint the chart (every certs.mode).
	$(HELM) lint --strict charts/redis-operator
	$(HELM) lint --strict charts/redis-operator --set certs.mode=cert-manager
	$(HELM) lint --strict charts/redis-operator --set certs.mode=secret,certs.secret.name=webhook-tls,certs.secret.caBundle=Cg==
	$(HELM) lint --strict charts/redis-operator --set crds.templated=true

.PHONY: docker-build
docker-build: ## Build the images IMG_CONTROLLER and IMG_WEBHOOK (needs a container engine; CONTAINER_TOOL=docker).
	$(CONTAINER_TOOL) build -f Dockerfile.controller -t $(IMG_CONTROLLER) .
	$(CONTAINER_TOOL) build -f Dockerfile.webhook -t $(IMG_WEBHOOK) .

.PHONY: docker-push
docker-push: ## Push IMG_CONTROLLER and IMG_WEBHOOK.
	$(CONTAINER_TOOL) push $(IMG_CONTROLLER)
	$(CONTAINER_TOOL) push $(IMG_WEBHOOK)

# Namespace and release of `make deploy`; extra `helm upgrade` arguments in DEPLOY_ARGS.
DEPLOY_NAMESPACE ?= redis-operator
DEPLOY_RELEASE ?= redis-operator
DEPLOY_ARGS ?=

.PHONY: deploy
deploy: $(HELM) ## Install or upgrade the chart (CRD first, server-side) into the cluster of KUBECONFIG (default: the local bed).
	@export KUBECONFIG=$${KUBECONFIG:-$(CURDIR)/.cluster/kubeconfig}; \
	ctl=$(IMG_CONTROLLER) wh=$(IMG_WEBHOOK); \
	set -x; \
	$(KUBECTL) apply --server-side --force-conflicts -f deploy/crd.yaml; \
	$(KUBECTL) create namespace $(DEPLOY_NAMESPACE) --dry-run=client -o yaml | $(KUBECTL) apply -f -; \
	$(KUBECTL) label --overwrite namespace $(DEPLOY_NAMESPACE) \
		pod-security.kubernetes.io/enforce=restricted pod-security.kubernetes.io/enforce-version=latest; \
	$(HELM) upgrade --install $(DEPLOY_RELEASE) charts/redis-operator --namespace $(DEPLOY_NAMESPACE) --skip-crds \
		--set-string controller.image.repository=$${ctl%:*},controller.image.tag=$${ctl##*:} \
		--set-string webhook.image.repository=$${wh%:*},webhook.image.tag=$${wh##*:} \
		$(DEPLOY_ARGS)

.PHONY: undeploy
undeploy: $(HELM) ## Uninstall the release (the CRD and every Redis stay; delete them with kubectl delete -f deploy/crd.yaml).
	KUBECONFIG=$${KUBECONFIG:-$(CURDIR)/.cluster/kubeconfig} $(HELM) uninstall $(DEPLOY_RELEASE) --namespace $(DEPLOY_NAMESPACE) --wait

##@ Run locally

.PHONY: demo
demo: ## The tutorial end to end: build, start the local bed and the operator, create my-op-redis, show a rejection.
	hack/demo.sh

.PHONY: run
run: ## Run webhook and controller in the background on the local bed, the webhook registered by url + caBundle.
	hack/run.sh start

.PHONY: stop
stop: ## Stop what `make run` started and unregister its webhook.
	hack/run.sh stop

.PHONY: run-controller
run-controller: ## Run redis-controller in the foreground against KUBECONFIG (default: the local bed).
	KUBECONFIG=$${KUBECONFIG:-$(CURDIR)/.cluster/kubeconfig} $(CARGO) run $(CARGO_FLAGS) -p controller --bin redis-controller

##@ Webhook

CERTS_DIR ?= certs
OHA_VERSION ?= 1.16.0

.PHONY: certs
certs: ## Write a local CA and a serving certificate for localhost/127.0.0.1 into certs/ (kept if present).
	@if [[ -s $(CERTS_DIR)/tls.crt && -s $(CERTS_DIR)/tls.key && -s $(CERTS_DIR)/ca.crt ]]; then \
		echo "$(CERTS_DIR)/ already has ca.crt, tls.crt, tls.key (delete them to make new ones)"; \
	else \
		$(CARGO) run $(CARGO_FLAGS) -q -p webhook --bin redis-webhook -- gen-certs --out $(CERTS_DIR) --dns localhost --ip 127.0.0.1; \
	fi

.PHONY: run-webhook
run-webhook: certs ## Run redis-webhook in the foreground with the certs of `make certs` (:9443 TLS, :8080 metrics).
	$(CARGO) run $(CARGO_FLAGS) -p webhook --bin redis-webhook -- \
		--tls-cert-file $(CERTS_DIR)/tls.crt --tls-key-file $(CERTS_DIR)/tls.key

.PHONY: bench-webhook
bench-webhook: ## Print webhook throughput and latency over TLS vs a bare hyper+rustls server and controller-runtime (asserts nothing).
	hack/tools/cargo-tool.sh oha $(OHA_VERSION)
	hack/bench/webhook.sh

##@ Test bed

# A real control plane on 127.0.0.1 built from Go modules (hack/cluster/, README "The test bed").
CLUSTER_SCRIPTS := hack/cluster
# Extra arguments for the e2e test binary, e.g. `make e2e E2E_ARGS=redis_crd`.
E2E_ARGS ?=

.PHONY: tools
tools: ## Build the test bed's binaries into bin/ (cached per version in ~/.cache/redis-operator).
	$(CLUSTER_SCRIPTS)/build.sh

.PHONY: cluster-up
cluster-up: ## Start the local test bed (etcd, kube-apiserver, controller-manager, scheduler, kwok, REAL_NODES real nodes, default 3); kubeconfig in .cluster/.
	$(CLUSTER_SCRIPTS)/up.sh

.PHONY: cluster-down
cluster-down: ## Stop the local test bed (and what `make run` started) and remove .cluster/.
	-hack/run.sh stop
	$(CLUSTER_SCRIPTS)/down.sh

# The Cargo profile of the binaries in the bed's operator images: `release`; CI uses `dev` (the
# build its e2e suite makes anyway; .ci/run says why).
IMAGE_PROFILE ?= release

.PHONY: images
images: ## Build the operator's images from the IMAGE_PROFILE binaries (no container engine) and import them into the bed's real nodes.
	$(CARGO) build --profile $(IMAGE_PROFILE) $(CARGO_FLAGS) --bins
	$(CLUSTER_SCRIPTS)/images.sh base
	IMAGE_PROFILE=$(IMAGE_PROFILE) $(CLUSTER_SCRIPTS)/images.sh operator $(IMG_CONTROLLER) $(IMG_WEBHOOK)

.PHONY: e2e
e2e: ## Run the e2e tests against $KUBECONFIG if set, else against the local test bed (started if needed, images imported).
	$(if $(KUBECONFIG),@echo "e2e: testing the cluster of KUBECONFIG=$(KUBECONFIG) (the local test bed is not started)",$(CLUSTER_SCRIPTS)/up.sh && $(MAKE) --no-print-directory images)
	$(CARGO) build $(CARGO_FLAGS) --bins
	$(CARGO) test $(CARGO_FLAGS) -p e2e -- $(E2E_ARGS)

# `make chaos ROUNDS=200`: the randomized fault test (crates/e2e/tests/chaos.rs) with ROUNDS faults
# (`make test` runs its default, 4); SEED replays a run (CHAOS_SEED, printed by every run);
# FAULTS=NodeStop,ProcessFreeze@replica draws from those kinds only (CHAOS_FAULTS; FAULTS=all: every
# kind, the controller's path cut at the primary too); OVERLAP=25 hits another pod with a second fault
# before the first heals in 25% of the rounds (CHAOS_OVERLAP, default 0). `touch target/chaos-stop`
# ends a run after the round under way, and its history is still checked.
ROUNDS ?= 50
SEED ?=
FAULTS ?=
OVERLAP ?=

.PHONY: chaos
chaos: ## Run the randomized fault test for ROUNDS faults on the real nodes and print its history's counts (no acknowledged write lost, no two primaries at once).
	$(if $(KUBECONFIG),@echo "chaos: testing the cluster of KUBECONFIG=$(KUBECONFIG) (it needs the local bed's real node and kube-apiserver pid file)",$(CLUSTER_SCRIPTS)/up.sh && $(MAKE) --no-print-directory images)
	$(CARGO) build $(CARGO_FLAGS) --bins
	CHAOS_ROUNDS=$(ROUNDS) $(if $(SEED),CHAOS_SEED=$(SEED)) $(if $(FAULTS),CHAOS_FAULTS=$(FAULTS)) $(if $(OVERLAP),CHAOS_OVERLAP=$(OVERLAP)) $(CARGO) test $(CARGO_FLAGS) -p e2e --test chaos -- --nocapture

##@ Benchmarks

# Arguments for bench-controller, e.g. `make bench-controller BENCH_ARGS="--count 20 --idle 10"` (`--help` lists them).
BENCH_ARGS ?=
# The release binaries, built once for the whole workspace and run from here (a `cargo run -p e2e`
# would resolve features for e2e alone and build the controller a second time).
RELEASE_BIN = $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)/release
# `make bench-controller N=1000`: N Redis (--count N), and a second round with UNRELATED pods of
# someone else in another namespace (--unrelated-pods, 5000 by default; UNRELATED=0: none),
# before BENCH_ARGS. Without N, only BENCH_ARGS (the bench's defaults: 100 Redis, no second round).
N ?=
UNRELATED ?= 5000

.PHONY: bench-controller
bench-controller: ## Print time, API writes (vs the minimum), idle writes and peak RSS of the controller converging N Redis x 3 pods, without and with UNRELATED pods elsewhere, vs a bare pod-create loop (asserts nothing).
	$(if $(KUBECONFIG),@echo "bench-controller: using the cluster of KUBECONFIG=$(KUBECONFIG) (the local test bed is not started; write counts only if it is the local test bed, from its audit log)",$(CLUSTER_SCRIPTS)/up.sh)
	$(CARGO) build --release $(CARGO_FLAGS) --workspace --bins
	E2E_PROFILE=release $(RELEASE_BIN)/bench-controller $(if $(N),--count $(N) --unrelated-pods $(UNRELATED)) $(BENCH_ARGS)

.PHONY: bench-tls
bench-tls: ## Print SET/GET throughput of one Redis pod over TLS vs its plaintext port, with Debian's redis-benchmark (asserts nothing).
	$(if $(KUBECONFIG),@echo "bench-tls: using the cluster of KUBECONFIG=$(KUBECONFIG) (the local test bed is not started; it needs a real node and the image localhost/redis:bed)",$(CLUSTER_SCRIPTS)/up.sh && $(MAKE) --no-print-directory images)
	$(CLUSTER_SCRIPTS)/node/packages.sh
	$(CARGO) build --release $(CARGO_FLAGS) --workspace --bins
	E2E_PROFILE=release $(RELEASE_BIN)/bench-tls $(BENCH_ARGS)

# `make bench-failover BENCH_ARGS="--rounds 3 --kill pod"`: BENCH_ARGS as above (`--help` lists them);
# `--kill process,node-stop,node-freeze,node-partition` gives one row per kind of loss.
.PHONY: bench-failover
bench-failover: ## Print time to a writable new primary and acknowledged writes lost over 10 failovers: redis-operator on the real nodes vs redis-sentinel on 127.0.0.1 (asserts nothing).
	$(if $(KUBECONFIG),@echo "bench-failover: using the cluster of KUBECONFIG=$(KUBECONFIG) (the local test bed is not started; it needs the real nodes real-node-* and the image localhost/redis:bed)",$(CLUSTER_SCRIPTS)/up.sh)
	$(CLUSTER_SCRIPTS)/node/packages.sh
	$(CARGO) build --release $(CARGO_FLAGS) --workspace --bins
	E2E_PROFILE=release $(RELEASE_BIN)/bench-failover $(BENCH_ARGS)

# `make bench-backup SIZE_MB=1024 ROUNDS=3`: a local redis-server holding SIZE_MB MiB, ROUNDS
# backups by each tool (3 here, not chaos's ROUNDS default), BENCH_ARGS after them (`--help` lists
# them). Needs the bed's S3 server (.cluster/s3/env, written by `make cluster-up`); the AWS CLI is
# PyPI's awscli at AWSCLI_VERSION in a cached venv (hack/tools/awscli.sh).
SIZE_MB ?= 1024
AWSCLI_VERSION ?= 1.46.2

.PHONY: bench-backup
bench-backup: ROUNDS = 3
bench-backup: ## Print MiB/s and peak RSS of redis-backup backing up a SIZE_MB MiB redis-server into the bed's bucket vs redis-cli --rdb piped into the AWS CLI (asserts nothing).
	@test -s .cluster/s3/env || { echo "bench-backup: no .cluster/s3/env: start the test bed (make cluster-up) for its S3 server"; exit 1; }
	hack/tools/awscli.sh $(AWSCLI_VERSION)
	$(CARGO) build --release $(CARGO_FLAGS) -p backup --bin redis-backup
	E2E_PROFILE=release $(CARGO) run $(CARGO_FLAGS) -p e2e --bin bench-backup -- --size-mb $(SIZE_MB) --rounds $(ROUNDS) $(BENCH_ARGS)
