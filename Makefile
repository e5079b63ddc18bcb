# chargenet: `make run` starts the service on embedded SQLite with demo data,
# `make test` runs every check CI runs.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
TOOLS := $(CURDIR)/.tools
BIN := $(TOOLS)/bin
export PATH := $(BIN):$(PATH)
export REDOCLY_TELEMETRY := off
export REDOCLY_SUPPRESS_UPDATE_NOTICE := true

OASDIFF_VERSION := v1.37.0
GOLANGCI_VERSION := v2.15.0
RELEASED_SPEC := openapi/released/2.14.0.yaml
OCPI_RELEASED_SPEC := openapi/released/ocpi-2.2.1/1.0.0.yaml
DEV_KEY ?= dev-key-change-me-0123456789
ADDR ?= 127.0.0.1:8080
OCPP_ADDR ?= 127.0.0.1:9000
OCPP_DEV_PASSWORD ?= dev-ocpp-password-change-me

.PHONY: all build run generate check-generated lint lint-spec breaking test go-test tools-npm prometheus-tools help clients docs-check prism-check fuzz deps bench bench-ocpp bench-scale bench-compare bench-eventlog bench-ocpi

all: build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build bin/chargenet
	$(GO) build -o bin/chargenet ./cmd/chargenet

run: build ## run the service on embedded SQLite (data/chargenet.db) with the demo inventory
	@echo "Try:  curl -s -H 'Authorization: Bearer $(DEV_KEY)' 'http://$(ADDR)/v1/locations?limit=2'"
	@echo "      curl -s -X PATCH -H 'Authorization: Bearer $(DEV_KEY)' -H 'Content-Type: application/json' \\"
	@echo "           -d '{\"maxElectricPower\": 300}' http://$(ADDR)/v2/evses/1002/connectors/1"
	@echo "OCPP: point a charge box at ws://$(OCPP_ADDR)/ocpp/501 (OCPP 1.6 or 2.0.1), Basic auth user 501, password $(OCPP_DEV_PASSWORD)"
	CHARGENET_API_KEYS=$(DEV_KEY) CHARGENET_OCPP_DEV_PASSWORD=$(OCPP_DEV_PASSWORD) ./bin/chargenet serve --demo --addr $(ADDR) --ocpp-addr $(OCPP_ADDR)

generate: ## regenerate gen/ from the contracts in openapi/
	$(GO) generate ./...

check-generated: generate ## fail if gen/ differs from what the contract generates
	@if [ -n "$$(git status --porcelain -- gen/)" ]; then \
		git status --porcelain -- gen/; git --no-pager diff --stat -- gen/; \
		echo "gen/ is out of date with openapi/: run 'make generate' and commit the result." >&2; exit 1; \
	fi
	@echo "gen/ matches the contract"

# Each tool is installed again when its pinned version changes (the stamp names it).
$(TOOLS)/golangci-lint-$(GOLANGCI_VERSION).stamp:
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)
	touch $@

$(TOOLS)/oasdiff-$(OASDIFF_VERSION).stamp:
	GOBIN=$(BIN) $(GO) install github.com/oasdiff/oasdiff@$(OASDIFF_VERSION)
	touch $@

tools/node_modules/.installed: tools/package.json tools/package-lock.json
	cd tools && npm ci --no-audit --no-fund --loglevel=error
	touch $@

tools-npm: tools/node_modules/.installed

prometheus-tools: ## install the Debian package prometheus (server and promtool) if missing
	scripts/prometheus-install.sh

lint: $(TOOLS)/golangci-lint-$(GOLANGCI_VERSION).stamp ## gofmt, go vet, golangci-lint
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	golangci-lint run ./...

lint-spec: tools-npm ## Redocly lint (recommended ruleset) of both contracts: 0 errors, 0 warnings
	@mkdir -p $(TOOLS)
	tools/node_modules/.bin/redocly lint --config openapi/redocly.yaml --max-problems 100 openapi/openapi.yaml openapi/ocpi-2.2.1.yaml 2>&1 | tee $(TOOLS)/lint-spec.log
	@if grep -Eq '[0-9]+ (warning|error)s?' $(TOOLS)/lint-spec.log; then echo "lint-spec: problems found" >&2; exit 1; fi

breaking: $(TOOLS)/oasdiff-$(OASDIFF_VERSION).stamp ## fail on any breaking change against the released contracts (oasdiff, and every enum by scripts/enum-check.go)
	scripts/breaking.sh $(RELEASED_SPEC) openapi/openapi.yaml $(RELEASED_SPEC:.yaml=.accepted-breaks.txt)
	scripts/breaking.sh $(OCPI_RELEASED_SPEC) openapi/ocpi-2.2.1.yaml $(OCPI_RELEASED_SPEC:.yaml=.accepted-breaks.txt)
	@scripts/breaking-selftest.sh $(RELEASED_SPEC) $(OCPI_RELEASED_SPEC)

go-test: tools-npm prometheus-tools ## go test -race over every package (PostgreSQL suites against a throw-away cluster; the webhook proof uses tools/node_modules; the metrics proof and alert rule tests use Prometheus)
	env=$$(scripts/pg-test-cluster.sh start) && eval "$$env"; \
	trap 'scripts/pg-test-cluster.sh stop "$$CHARGENET_PG_DIR"' EXIT; \
	$(GO) test -race -count=1 -timeout 30m ./...

bench: ## load benchmark: full stack vs a bare Echo ceiling vs Prism mock (wrk), then bench-ocpp; writes bench/results.md
	bench/run.sh

bench-ocpp: ## OCPP charge boxes: 10,000 connected (RSS each, connect time), 1,000 StatusNotifications/s (CALLRESULT and event latency), throughput against the HTTP ingestion; SQLite and PostgreSQL; writes the OCPP section of bench/results.md
	bench/ocpp.sh

bench-compare: ## reads, reads under writes and writes of make bench for two trees (OLD=commit NEW=commit or .), interleaved rounds, ratios; PG=1 adds PostgreSQL
	bench/compare.sh

bench-eventlog: ## fill the event log with PATCHes, then page through it with limit 100: events per second (PG=1 adds PostgreSQL)
	bench/eventlog.sh

bench-ocpi: ## the OCPI rows of make bench alone, on SQLite: page rates quietly and under writes, Link at depth, push lag (markdown on stdout)
	bench/ocpi.sh

bench-scale: ## import 1M locations and measure page latency at depth; writes bench/scale-results.md
	bench/scale.sh

deps: ## list the direct Go modules, pinned Go tools and npm packages that have a newer release (changes nothing)
	scripts/deps.sh GOLANGCI_VERSION=github.com/golangci/golangci-lint/v2 OASDIFF_VERSION=github.com/oasdiff/oasdiff

fuzz: ## run every fuzz target for its number of executions (FUZZTIME=5m: that long each), print them, fail on a target that ran fewer
	scripts/fuzz.sh

clients: ## TypeScript partner proof: openapi-typescript types, tsc --strict, run against a live server
	scripts/ts-partner.sh

docs-check: ## load /docs in headless Chromium and find every operation of the spec
	scripts/docs-check.sh

prism-check: tools-npm ## replay a partner scenario through Prism's validation proxy
	scripts/prism-check.sh
	scripts/prism-check.sh --selftest

test: check-generated lint lint-spec breaking go-test fuzz clients docs-check prism-check ## everything CI runs
