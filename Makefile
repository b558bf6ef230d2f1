# The development tasks. Each target of the CI part is one section of .ci/run, which runs them
# in order (make ci), so the two cannot drift: .ci/run holds the order and the section titles,
# this file the commands. `make help` lists the targets.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c

TEST_DB ?= flytrap_ci
PG_URL ?= postgres://postgres@127.0.0.1:5432/$(TEST_DB)?sslmode=disable
FUZZTIME ?= 10s

.PHONY: help ci toolchain postgres deps vet fuzz generate generate-check openapi \
	node-tests node-eventsource node-graphql-ws node-webhooks node-mcp install-nginx install-rsyslog install-chromium \
	pipelines dashboard-check dashboard-tests pg-restart race test test-postgres build install listener-wrk

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 20

# --- what .ci/run runs, in its order

ci: ## the whole CI (bash .ci/run): every target below in order, PostgreSQL started if down
	bash .ci/run

toolchain: ## print the versions of go, node, npm and psql
	go version
	node --version
	npm --version
	psql --version

postgres: ## start PostgreSQL if it is down; recreate the empty test database TEST_DB (flytrap_ci)
	TEST_DB='$(TEST_DB)' bash scripts/postgres-ci.sh

deps: ## go mod download
	go mod download

vet: ## go vet ./...
	go vet ./...

fuzz: ## every fuzz target of the module for FUZZTIME each (default 10s; CI: 4s)
	FUZZTIME='$(FUZZTIME)' bash scripts/fuzz.sh

generate: ## go generate ./... (entc, gqlgen, gqlpatch, genvocab)
	go generate ./...

generate-check: ## regenerate and fail if the committed generated code changed
	bash scripts/generate-check.sh

openapi: ## lint rest/openapi.json with Redocly CLI
	bash scripts/check-openapi.sh

node-tests: node-eventsource node-graphql-ws node-webhooks node-mcp ## the four Node suites below against a fresh flytrap

node-eventsource: ## the eventsource client resuming the SSE stream
	bash scripts/node-suite.sh node

node-graphql-ws: ## the npm graphql-ws client and the legacy protocol
	bash scripts/node-suite.sh graphql-ws

node-webhooks: ## standardwebhooks from npm verifies real deliveries
	bash scripts/node-suite.sh webhooks --webhook-allow-private

node-mcp: ## the official MCP SDK's clients against the decoy MCP server
	bash scripts/node-suite.sh mcp

install-nginx: ## nginx and Caddy for server/deploy_test.go
	bash scripts/install-nginx.sh

install-rsyslog: ## rsyslog and its GnuTLS driver for the syslog delivery test (webhook/)
	bash scripts/install-rsyslog.sh

install-chromium: ## Chromium and playwright-core for the browser tests
	bash scripts/install-chromium.sh

pipelines: ## every trap type through the AI agents' text pipelines (needs install-chromium)
	NODE_TEST_TIMEOUT=600000 bash scripts/node-suite.sh pipelines

dashboard-check: ## dashboard unit tests, rebuild, committed web/dist must match
	bash scripts/dashboard-build-check.sh

dashboard-tests: ## the dashboard end to end in Chromium (needs install-chromium)
	bash scripts/dashboard-tests.sh

pg-restart: ## PostgreSQL restarted under two instances, no event lost (disturbs every other user of it)
	FLYTRAP_TEST_POSTGRES_URL='$(PG_URL)' FLYTRAP_TEST_PG_RESTART=1 go test -count=1 -run '^TestPostgresRestartLosesNothing$$' ./server/

race: postgres ## go test -race ./... on SQLite and PostgreSQL
	FLYTRAP_TEST_POSTGRES_URL='$(PG_URL)' go test -race -count=1 ./...

# --- everyday

test: ## go test ./... on SQLite
	go test ./...

test-postgres: postgres ## go test ./... on SQLite and PostgreSQL
	FLYTRAP_TEST_POSTGRES_URL='$(PG_URL)' go test ./...

build: ## build ./flytrap
	go build -o flytrap ./cmd/flytrap

install: ## go install ./cmd/... (flytrap only; the measuring tools are under bench/)
	go install ./cmd/...

listener-wrk: ## the trap listener against a bare net/http server, with wrk (bench/README.md)
	bash scripts/listener-wrk.sh
