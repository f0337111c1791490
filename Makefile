# Annex — see README.md. Everything here runs with the Go toolchain alone.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
export GOTOOLCHAIN := local

# The Kubernetes version of the local control plane: the k8s.io/kubernetes
# version pinned in hack/tools/go.mod.
KUBE_VERSION := $(shell awk '$$1=="k8s.io/kubernetes"{sub(/^v/,"",$$2); print $$2; exit}' hack/tools/go.mod)
KUBE_BIN := bin/k8s/$(KUBE_VERSION)
# An older kube-apiserver, for tests that upgrade a cluster for real.
KUBE_PREVIOUS_VERSION := $(shell grep -Eo 'k8s.io/kubernetes v[0-9.]+' hack/tools/kube-1.36/go.mod | head -1 | cut -d' ' -f2 | tr -d v)
CONTROLLER_GEN := go tool controller-gen
# The version stamped into the binaries (internal/version) and the image:
# git describe of the work tree without a leading v (tag v0.1.0 gives 0.1.0).
VERSION ?= $(shell (git describe --tags --always --dirty 2>/dev/null || echo dev) | sed 's/^v//')
VERSION := $(VERSION)
LDFLAGS := -X github.com/annex-platform/annex/internal/version.Version=$(VERSION)
# The image `make image` writes to bin/annex-image.tar, for IMAGE_PLATFORM;
# `make image-oci` writes every platform of IMAGE_PLATFORMS to bin/annex-image/.
IMAGE ?= annex:$(VERSION)
IMAGE_PLATFORM ?= linux/amd64
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
GO_TEST_FLAGS ?=
BENCH ?= ^Benchmark(Solve|NewIndex|IngestIndex|IngestOLM|ParseHelmIndex|N100|RecordStorage|RenderPlan|MergeRender|ConsoleInstallations|Compare|Verify|Verifier)
BENCH_COUNT ?= 6
BENCH_PKGS ?= ./internal/resolve/ ./internal/catalog/helm/ ./internal/catalog/olm/ ./internal/record/ ./internal/engine/pkg/ ./internal/crdcheck/ ./test/bench/ ./internal/verify/ ./internal/catalog/sources/
FUZZTIME ?= 60s
FUZZ_TARGETS ?= ./internal/resolve/:FuzzParseRange ./internal/resolve/:FuzzSolve ./internal/catalog/helm/:FuzzParseHelmIndex ./internal/catalog/helm/:FuzzFastDecoder ./internal/archive/:FuzzCheckArchive ./internal/catalog/helm/:FuzzAddPackageToIndex ./internal/engine/helm/:FuzzRender ./internal/engine/helm/:FuzzRenderChart ./internal/record/:FuzzDecodeRecord ./internal/adopt/:FuzzDecode ./internal/engine/pkg/:FuzzLoadArchive ./internal/engine/pkg/:FuzzLoadFiles ./internal/crdcheck/:FuzzCompare ./internal/verify/:FuzzParseSignatureManifest ./internal/verify/:FuzzVerify ./internal/verify/:FuzzParseNotationManifest ./internal/verify/:FuzzVerifyNotation ./internal/convert/kkp/:FuzzConvert

.PHONY: all
all: build

##@ Main jobs

.PHONY: run
run: build ## Start a local control plane with fake nodes, the manager, the built-in catalog and an OCI registry on 127.0.0.1; CLUSTERS=2 adds managed clusters (Ctrl-C stops).
	hack/build-control-plane.sh $(KUBE_VERSION)
	$(if $(CLUSTERS),hack/build-control-plane.sh $(KUBE_PREVIOUS_VERSION))
	bin/annex dev --bin-dir $(KUBE_BIN) $(if $(CLUSTERS),--clusters $(CLUSTERS))

.PHONY: test
test: envtest-assets browser verify-generate vet lint ## Run every test against a real kube-apiserver and etcd (the console's in Chromium).
	go test -timeout 30m $(GO_TEST_FLAGS) ./...

.PHONY: test-faults
test-faults: envtest-assets ## The crash tests FAULT_SEEDS times (30) with random seeds, FAULT_COPIES (3) at once for CPU contention; logs in bin/faults/.
	hack/test-faults.sh

.PHONY: bench
bench: bench-micro bench-system ## Every benchmark: the micro-benchmarks (6 counts) and the full-system one (1 count).

.PHONY: bench-micro
bench-micro: envtest-assets ## Resolver, catalog ingest, applier, CRD-check, console-page and signature-verification benchmarks, 6 counts, summarised by benchstat into bin/bench.txt.
	@mkdir -p bin
	go test -run '^$$' -bench "$(BENCH)" -benchmem -count $(BENCH_COUNT) -timeout 90m $(BENCH_PKGS) | tee bin/bench.raw
	go tool benchstat bin/bench.raw | tee bin/bench.txt

.PHONY: bench-system
bench-system: envtest-assets ## Annex vs a raw client, Annex's requests without a manager, and the Helm CLI at N=100/500/1000 (Annex also with the chart in an OCI registry, unsigned and signed under an Enforce cosign policy), manager RSS, idle writes, 1,000 CRDs; a profile of 10 extensions on the hub vs on 3 managed clusters; 300 installations through annex dev; annexctl status over 1,000 installations on 3 clusters; the fleet simulation at 20 clusters × 2 extensions over 2 member API servers; 100 Helm releases adopted against 100 fresh installs; the storage migration of 10,000 objects (about 50 min).
	@mkdir -p bin
	go test -run '^$$' -bench 'System|Fleet|DevN300|PlanOverhead|DevPackages|GateOverhead|Status1000|Adopt' -benchtime 1x -count 1 -timeout 90m ./test/bench/ | tee bin/bench-system.raw
	go test -run '^$$' -bench '^BenchmarkMigrate$$' -benchtime 1x -count 1 -timeout 30m ./internal/crdmigrate/ | tee -a bin/bench-system.raw
	go tool benchstat bin/bench-system.raw | tee bin/bench-system.txt

# The fleet simulation's size: `make bench-fleet CLUSTERS=100 EXTENSIONS=10
# MEMBERS=4 SHARDS=2` (defaults 1000, 10, 4, 1; LARGE=1 makes extension 0 a
# kube-prometheus-stack-sized chart). Not set globally: `make run CLUSTERS=2`
# means something else.
FLEET_COUNT ?= 1

.PHONY: bench-fleet
bench-fleet: envtest-assets ## The fleet simulation: a real hub and `annex manager`, CLUSTERS (1000) ManagedClusters over MEMBERS (4) member API servers, a profile of EXTENSIONS (10), SHARDS (1) managers each serving a shard of the clusters, LARGE=1 for a chart of 873 KiB (most of it CRDs) as extension 0; rollout, version bump, values change, manager SIGKILL, a member down, then staged rollouts (PHASES=5 stops before them, PHASES=1 after the rollout and the hub bytes; FLEET_COUNT runs; table in bin/bench-fleet.txt).
	@mkdir -p bin
	ANNEX_FLEET_CLUSTERS=$(or $(CLUSTERS),1000) ANNEX_FLEET_EXTENSIONS=$(or $(EXTENSIONS),10) ANNEX_FLEET_MEMBERS=$(or $(MEMBERS),4) ANNEX_FLEET_SHARDS=$(or $(SHARDS),1) ANNEX_FLEET_PHASES=$(PHASES) ANNEX_FLEET_LARGE=$(LARGE) \
	  go test -run '^$$' -bench '^BenchmarkFleetScale$$' -benchtime 1x -count $(FLEET_COUNT) -timeout 240m ./test/bench/ | tee bin/bench-fleet.raw
	go tool benchstat bin/bench-fleet.raw | tee bin/bench-fleet.txt

.PHONY: fuzz
fuzz: ## Fuzz every parser of outside input for FUZZTIME each (default 60s).
	@for target in $(FUZZ_TARGETS); do pkg=$${target%%:*}; name=$${target##*:}; \
	  echo "fuzzing $$name in $$pkg for $(FUZZTIME)"; \
	  go test $$pkg -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s -parallel 1 || exit 1; done

##@ Building

.PHONY: build
build: example-operator annexctl ## Build bin/annex, bin/annexctl (also as bin/kubectl-annex) and bin/example-operator, stamped with VERSION.
	go build -ldflags "$(LDFLAGS)" -o bin/annex ./cmd/annex

.PHONY: annexctl
annexctl: ## Build bin/annexctl, the same binary as bin/kubectl-annex (the kubectl plugin `kubectl annex`), and bin/kubectl_complete-annex (its completion under kubectl).
	go build -ldflags "$(LDFLAGS)" -o bin/annexctl ./cmd/annexctl
	ln -f bin/annexctl bin/kubectl-annex
	printf '#!/bin/sh\n# kubectl (1.26+) runs this to complete "kubectl annex ..."\nexec kubectl-annex __complete "$$@"\n' > bin/kubectl_complete-annex
	chmod +x bin/kubectl_complete-annex

.PHONY: push-package
push-package: annexctl ## Push the Annex package in folder PACKAGE to the OCI repository DEST (oci://HOST/PATH), signed with the cosign key SIGN_KEY when given (PLAIN_HTTP=1 for a registry without TLS, like make run's).
	@test -n "$(PACKAGE)" -a -n "$(DEST)" || { echo "usage: make push-package PACKAGE=folder DEST=oci://host/path [SIGN_KEY=file.key] [PLAIN_HTTP=1]" >&2; exit 2; }
	bin/annexctl package push "$(PACKAGE)" "$(DEST)" $(if $(SIGN_KEY),--sign-key "$(SIGN_KEY)") $(if $(PLAIN_HTTP),--plain-http)

# image-binaries cross-builds a static annex (CGO_ENABLED=0) for each
# platform of $(1) into bin/image/<os>-<arch>/annex; image-binary-flags are
# the matching --binary flags of hack/image.
image-binaries = $(foreach p,$(1),CGO_ENABLED=0 GOOS=$(word 1,$(subst /, ,$(p))) GOARCH=$(word 2,$(subst /, ,$(p))) \
	go build -trimpath -ldflags "-s -w $(LDFLAGS)" -o bin/image/$(subst /,-,$(p))/annex ./cmd/annex &&) true
image-binary-flags = $(foreach p,$(1),--binary $(p)=bin/image/$(subst /,-,$(p))/annex)

# hack/image's flags common to both image targets: labels and a creation
# time taken from the last commit, so that a rebuild gives the same digest.
IMAGE_FLAGS = --version $(VERSION) --tag $(IMAGE) --revision "$$(git rev-parse HEAD 2>/dev/null || true)" \
	--created "$$(git log -1 --format=%cI 2>/dev/null || echo 1970-01-01T00:00:00Z)"

.PHONY: image
image: ## Build the image IMAGE (annex:VERSION) without Docker: bin/annex-image.tar, a docker image archive for IMAGE_PLATFORM (docker/podman load, crane push).
	@mkdir -p bin/image
	$(call image-binaries,$(IMAGE_PLATFORM))
	go run ./hack/image $(IMAGE_FLAGS) $(call image-binary-flags,$(IMAGE_PLATFORM)) --format docker --out bin/annex-image.tar
	@echo "bin/annex-image.tar: $(IMAGE) for $(IMAGE_PLATFORM)"

.PHONY: image-oci
image-oci: ## The image for every platform of IMAGE_PLATFORMS (linux/amd64 linux/arm64) as an OCI image layout folder bin/annex-image/.
	@mkdir -p bin/image
	$(call image-binaries,$(IMAGE_PLATFORMS))
	go run ./hack/image $(IMAGE_FLAGS) $(call image-binary-flags,$(IMAGE_PLATFORMS)) --format oci --out bin/annex-image
	@echo "bin/annex-image/: $(IMAGE) for $(IMAGE_PLATFORMS)"

.PHONY: example-operator
example-operator: ## Build bin/example-operator, the built-in example operator that `annex dev` runs for the Pods of its image.
	go build -o bin/example-operator ./cmd/example-operator

.PHONY: envtest-assets
envtest-assets: ## Build the control plane (kube-apiserver, etcd, controller-manager, scheduler) and kwok into bin/k8s/<version>, and an older kube-apiserver for upgrade tests (once; ~20-25 min the first time).
	hack/build-control-plane.sh $(KUBE_VERSION)
	hack/build-control-plane.sh $(KUBE_PREVIOUS_VERSION)

# The console's browser tests drive Debian's chromium (internal/console).
.PHONY: browser
browser: ## Install Chromium for the console's browser tests when it is missing (apt-get, as root).
	@if command -v chromium >/dev/null 2>&1; then exit 0; fi; \
	if [[ $$(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium (apt-get) for the console's browser tests"; \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; \
	else \
	  echo "the console's browser tests need Chromium, and this is not root with apt-get: install it with" >&2; \
	  echo "  sudo apt-get install -y chromium      (Debian, Ubuntu)" >&2; \
	  echo "or put a Chromium or Chrome binary on PATH as chromium, then run make test again" >&2; exit 1; \
	fi

##@ Generated code

.PHONY: generate
generate: ## Regenerate deepcopy code, CRDs and RBAC from the API types and markers, and the reference pages docs/reference/*.md.
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=annex-manager paths=./internal/controller/... output:rbac:artifacts:config=config/rbac
	@# charts/annex carries copies of the CRDs, the manager's ClusterRole and the admission policies.
	rm -f charts/annex/crds/*.yaml charts/annex/files/admission/*.yaml
	cp config/crd/bases/*.yaml charts/annex/crds/
	cp config/rbac/role.yaml charts/annex/files/manager-role.yaml
	for f in config/admission/*.yaml; do [[ $$f == */kustomization.yaml ]] || cp $$f charts/annex/files/admission/; done
	@# The reference pages: the API from the CRDs, annex and annexctl from their command trees (package main, hence tests).
	go run ./hack/refdocs/apidocs --crds config/crd/bases --out docs/reference/api.md
	go test ./cmd/annex ./cmd/annexctl -run '^TestReference$$' -count=1 -args -update >/dev/null

# GENERATED are the files make generate writes.
GENERATED = api/v1alpha1/zz_generated.deepcopy.go config/crd/bases/*.yaml config/rbac/role.yaml charts/annex/crds/*.yaml \
	charts/annex/files/*.yaml charts/annex/files/admission/*.yaml docs/reference/*.md

.PHONY: verify-generate
verify-generate: ## Fail when generated files are stale (and leave them regenerated).
	@before=$$(cat $(GENERATED) 2>/dev/null | sha256sum); \
	$(MAKE) --no-print-directory generate >/dev/null; \
	after=$$(cat $(GENERATED) | sha256sum); \
	if [[ "$$before" != "$$after" ]]; then \
	  echo "generated files were stale: they are regenerated now; review and commit them (git diff api config charts docs/reference)" >&2; exit 1; \
	fi

.PHONY: vet
# golangci-lint, pinned in hack/tools/lint, built once into bin/ (about 2-3
# minutes the first time); it runs only depguard with .golangci.yml.
GOLANGCI_LINT := bin/golangci-lint
$(GOLANGCI_LINT): hack/tools/lint/go.mod hack/tools/lint/go.sum
	@echo "building golangci-lint (pinned in hack/tools/lint; once, about 2-3 minutes)" >&2
	cd hack/tools/lint && go build -o ../../../$(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Check the layering (.golangci.yml: depguard): the API, the pure cores, the controllers and the CLI import only what their layer may; no pure core links a client through its imports either.
	$(GOLANGCI_LINT) run ./...
	hack/check-pure-deps.sh

vet: ## go vet and gofmt.
	go vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [[ -n "$$unformatted" ]]; then echo "gofmt needed: $$unformatted" >&2; exit 1; fi

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
