# splitlet build, generation and test entry points. Every target runs with a
# strict shell so a failing step fails the target.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build
MAKEFLAGS += --no-print-directory

# Pinned tool versions; `make tools` installs them into .bin/.
BUF_VERSION                 := v1.75.0
PROTOC_GEN_GO_VERSION       := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION  := v1.6.2
PROTOC_GEN_CONNECT_GO_VERSION := v1.21.1

ROOT    := $(CURDIR)
BIN     := $(ROOT)/bin
TOOLBIN := $(ROOT)/.bin
export PATH := $(TOOLBIN):$(PATH)

# Every module of the workspace, as go.work lists them.
MODULES := $(shell sed -n 's|^[[:space:]]*\./||p' go.work)
GO_TEST_FLAGS ?= -count=1 -race

# make run: the launcher's flags from the environment (splitlet-stack -h).
SPLITLET_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/splitlet
RUN_DIR ?= $(ROOT)/_out/run
RUN_FLAGS = --dir=$(RUN_DIR) --examples=$(ROOT)/examples \
  $(if $(RUNTIME_ENDPOINT),--runtime-endpoint=$(RUNTIME_ENDPOINT)) \
  $(if $(filter 1,$(RUN_DETACH)),--detach) $(if $(filter 1,$(RUN_SMOKE)),--smoke) \
  $(if $(RUN_TIMEOUT),--timeout=$(RUN_TIMEOUT)) \
  $(if $(RUN_SYNC_ADDR),--sync-addr=$(RUN_SYNC_ADDR)) \
  $(if $(RUN_ADMISSION_ADDR),--admission-addr=$(RUN_ADMISSION_ADDR)) \
  $(if $(RUN_GATEWAY_METRICS_ADDR),--gateway-metrics-addr=$(RUN_GATEWAY_METRICS_ADDR)) \
  $(addprefix --crictl=,$(wildcard $(SPLITLET_CACHE)/cri-tools-*/crictl))

.PHONY: build prebuild tools generate check-generate lint test fuzz e2e critest bench run stop compose-e2e apiserver-e2e cluster cluster-down cluster-e2e daemonset-e2e conformance conformance-ci chaos chaos-containerd clean

build: ## Build every splitlet binary into bin/.
	mkdir -p $(BIN)
	for m in $(MODULES); do \
	  if [ -d $$m/cmd ]; then (cd $$m && CGO_ENABLED=0 go build -o $(BIN)/ ./cmd/...); fi; \
	done

tools: ## Install buf and the protoc plugins at pinned versions into .bin/.
	GOBIN=$(TOOLBIN) go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
	GOBIN=$(TOOLBIN) go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(TOOLBIN) go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	GOBIN=$(TOOLBIN) go install connectrpc.com/connect/cmd/protoc-gen-connect-go@$(PROTOC_GEN_CONNECT_GO_VERSION)

generate: ## Regenerate the committed Go code from proto/.
	buf generate

check-generate: generate ## Fail when regenerating changes or adds tracked files.
	@if [ -n "$$(git status --porcelain -- proto)" ]; then \
	  echo "generated code is stale; run 'make generate' and commit:"; \
	  git status --porcelain -- proto; git --no-pager diff --stat -- proto; exit 1; \
	fi
	@echo "generated code is up to date"

lint: ## buf lint, gofmt and go vet over every module.
	buf lint
	@unformatted=$$(gofmt -l $(MODULES)); if [ -n "$$unformatted" ]; then echo "not gofmt-ed:"; echo "$$unformatted"; exit 1; fi
	# Without cgo, as `make build` compiles: on a cold machine the packages
	# vet compiles are then the ones the build reuses, not a cgo set of
	# their own (every package importing net differs).
	for m in $(MODULES); do (cd $$m && CGO_ENABLED=0 go vet ./...); done

test: ## Every test that needs no root and no runtime, under the race detector.
	for m in $(MODULES); do (cd $$m && go test $(GO_TEST_FLAGS) ./...); done

# Go fuzz targets, module:package:target. `make test` runs their seeds;
# `make fuzz` explores each for FUZZ_TIME (new crashers land in the
# package's testdata/fuzz, to be kept as corpus).
FUZZ_TARGETS := \
	services/sync:./internal/manifest:FuzzDecode \
	services/sync:./internal/validation:FuzzValidatePod \
	services/sync:./internal/kuberuntime:FuzzComputePodActions \
	services/sync:./internal/pullcreds:FuzzKeyring \
	services/admission:./internal/podcache:FuzzDecode \
	services/admission/plugin:.:FuzzDecodeRequest \
	services/admission/plugin:.:FuzzActiveSets \
	services/admission/plugin:.:FuzzActiveSetWire \
	gateway:./policy:FuzzCheck \
	gateway:./server:FuzzRequiredFields
# An execution count, not a duration: with a duration, Go 1.26's fuzz
# coordinator can fail a run with a bare "context deadline exceeded" when a
# worker is still busy at the deadline on a loaded machine (golang/go#75804,
# fixed in Go 1.27; it failed CI once on FuzzKeyring). 30000 executions take
# 4-11 s a target here.
FUZZ_TIME ?= 30000x

prebuild: ## Build every third-party binary the suites use into $(SPLITLET_CACHE) (a step of .ci/run).
	hack/prebuild.sh

fuzz: ## Each Go fuzz target for FUZZ_TIME (default 30000x, executions), one after another.
	@set -e; for t in $(FUZZ_TARGETS); do \
	  mod=$${t%%:*}; rest=$${t#*:}; pkg=$${rest%%:*}; name=$${rest#*:}; \
	  echo "fuzz $$mod $$pkg $$name ($(FUZZ_TIME))"; \
	  (cd $$mod && go test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZ_TIME) $$pkg); \
	done

e2e: ## Real containerd through the gateway (installs containerd, runc, busybox).
	hack/e2e.sh

critest: ## critest against containerd directly and through the gateway.
	hack/critest.sh

compose-e2e: ## The docker-compose stack end to end (installs docker.io and docker-compose; root).
	hack/compose-e2e.sh

apiserver-e2e: ## splitlet against a real etcd + kube-apiserver and containerd (built from the module proxy; apt for etcd), in a private network namespace as root.
	hack/apiserver-e2e.sh

cluster: ## A control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) in network namespace splitlet-cluster; root.
	hack/cluster.sh up

cluster-down: ## Stop what `make cluster` started and delete its network namespace.
	hack/cluster.sh down

cluster-e2e: ## splitlet nodes on containerd in a real control plane, in a private network namespace (root).
	hack/cluster-e2e.sh

daemonset-e2e: ## deploy/daemonset applied to a cluster whose node is a real kubelet; the pod it runs serves a Deployment (root).
	hack/daemonset-e2e.sh

conformance: ## Kubernetes' e2e [NodeConformance] specs on a real kubelet and on splitlet, and their difference (root; see CONFORMANCE.md).
	hack/conformance.sh full

conformance-ci: ## The CI subset of the conformance specs (pods, init containers, probes, hooks, volumes) on splitlet; fails on any failure (root).
	hack/conformance.sh ci

chaos: build ## Kill each process with SIGKILL during a pod burst and a mass delete, with CRI faults; figures in RELIABILITY.md.
	cd internal && SPLITLET_BIN_DIR=$(BIN) go test -tags chaos -count=1 -race -v -run TestChaos ./chaos/

chaos-containerd: ## The chaos suite's shorter form on a private containerd (root): 30 pods, containerd SIGKILLed too, then wiped once and rebooted twice; figures in RELIABILITY.md.
	hack/chaos-containerd.sh

bench: ## Benchmarks; figures are recorded in BENCHMARKS.md.
	hack/bench.sh

run: build ## The local stack (fake backend, examples/ applied); RUNTIME_ENDPOINT=unix://... for a real runtime, RUN_DETACH=1, RUN_SMOKE=1.
	$(BIN)/splitlet-stack $(RUN_FLAGS) run

stop: ## Stop a stack started with `make run RUN_DETACH=1`.
	$(BIN)/splitlet-stack --dir=$(RUN_DIR) stop

clean:
	rm -rf $(BIN)
