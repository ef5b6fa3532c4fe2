# mediajobs — `make help` lists the targets.
SHELL := /bin/bash
MODULES := core validator adapters apps contracts integration
ADDR ?= 127.0.0.1:8080
DATA ?= ./var
# The timeout is a guard against a hung test, per package: the integration package took more
# than 15 minutes on a 2-vCPU machine where starting a process costs 130 ms.
GOTEST_FLAGS ?= -count=1 -timeout 25m
# The root module (github.com/mediajobs/mediajobs: the embeddable service) holds the other
# modules' directories, so its packages are named, not ./... (which would take them all again).
ROOT_PACKAGES := . ./web/... ./internal/...
# Every package of every module, from the workspace root: one go test run, one summary.
# go test starts packages in the order named (each once), two at a time on two cores. The
# end-to-end tests come first, the longest, then the next longest (the sandbox's corpus, the
# validator's split quality, the runner), so that the many short packages fill the end rather
# than a long one running alone after the rest; the Docker sandbox's tests come after those,
# past the integration package's compose deployment, which loads the same engine.
LONG_PACKAGES := ./integration/... ./adapters/sandbox/... ./validator/... ./adapters/runner/... ./adapters/dockersandbox/...
PACKAGES := $(LONG_PACKAGES) $(ROOT_PACKAGES) $(addsuffix /...,$(addprefix ./,$(filter-out integration,$(MODULES))))
GOBIN_DIR := $(or $(shell go env GOBIN),$(firstword $(subst :, ,$(shell go env GOPATH)))/bin)
GOTESTSUM := $(GOBIN_DIR)/gotestsum
# The suites make test runs a second time against servers that adapters/testservices starts.
CONTAINER_SUITES := ./adapters/sqlstore/... ./adapters/bus/... ./adapters/brokerqueue/... ./adapters/ratelimit/...
# testcontainers-go's reaper (Ryuk) is an image from a registry, so it is off (adapters/testservices);
# the tests remove their containers, and this removes, by label, any that a killed run left.
SWEEP := docker ps -aq --filter label=org.testcontainers=true | xargs -r docker rm -f >/dev/null
# make test fuzzes by count: a duration budget races Go 1.26's fuzz coordinator at its deadline
# (golang/go#75804, fixed in Go 1.27) and fails with "context deadline exceeded" on busy machines.
FUZZTIME ?= 10s
TEST_FUZZTIME ?= 5000x
WASM := validator/cmd/wasm/validator.wasm
REDOC := web/docs
HLSJS := web/console/lib

.DEFAULT_GOAL := help

# help prints each target's "## " comment, with the variables it names at their values.
help: ## List the targets
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | \
	  sed -e 's|$$(ADDR)|$(ADDR)|g' -e 's|$$(DATA)|$(DATA)|g' -e 's|$$(FUZZTIME)|$(FUZZTIME)|g' | \
	  awk 'BEGIN {FS = ":.*?## "}; {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}'

deps: ## Install what is missing: ffmpeg, bubblewrap, gcc, fonts, pocketsphinx, espeak-ng, chromium, PostgreSQL, NATS, Redis, debootstrap, versitygw, gotestsum
	@bash scripts/deps.sh

services: ## Start PostgreSQL (127.0.0.1:5432, database test), NATS (4222), Redis (6379) and the Docker Engine when down
	@bash scripts/services.sh

images: build ## Build every image of the deployment and the tests from Debian's packages, pulling none
	@bash scripts/images.sh

wasm: ## Build validator.wasm (wasip1 reactor) for wazero and the browser
	@cd validator && GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags='-s -w' -o cmd/wasm/validator.wasm ./cmd/wasm
	@ls -l $(WASM) | awk '{print "wasm: " $$9 " " $$5 " bytes"}'

client: ## Regenerate the Go client (contracts/client) and the JavaScript client's operations (js/client/src) from contracts/openapi.yaml
	@cd contracts && go generate ./client/ && go run ./cmd/jsclient
	@echo "client: contracts/client/client.gen.go and js/client/src/operations.gen.* regenerated"

js-test: build ## Run the JavaScript packages' tests: node --test against bin/mediajobs, tsc, npm pack listings
	@bash scripts/jstest.sh

redoc: ## Vendor the Redoc bundle of /docs from npm, as pinned in web/docs/redoc.version (needs npm)
	@set -euo pipefail; pin() { awk -v k="$$1" '$$1 == k { print $$2 }' $(REDOC)/redoc.version; }; \
	  version=$$(pin version); integrity=$$(pin integrity); sum=$$(pin sha256); \
	  tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  (cd "$$tmp" && npm pack --silent "redoc@$$version" >/dev/null); \
	  tgz="$$tmp/redoc-$$version.tgz"; \
	  got=$$(node -e 'const c = require("crypto"), f = require("fs"); process.stdout.write("sha512-" + c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' "$$tgz"); \
	  if [ "$$got" != "$$integrity" ]; then echo "redoc: redoc@$$version from npm has integrity $$got, redoc.version pins $$integrity" >&2; exit 1; fi; \
	  tar -xzf "$$tgz" -C "$$tmp" package/LICENSE package/bundles/redoc.standalone.js package/bundles/redoc.standalone.js.LICENSE.txt; \
	  got=$$(sha256sum "$$tmp/package/bundles/redoc.standalone.js" | cut -d' ' -f1); \
	  if [ "$$got" != "$$sum" ]; then echo "redoc: the bundle of redoc@$$version has sha256 $$got; set it in $(REDOC)/redoc.version if this is the version you meant" >&2; exit 1; fi; \
	  cp "$$tmp/package/bundles/redoc.standalone.js" "$$tmp/package/bundles/redoc.standalone.js.LICENSE.txt" $(REDOC)/; \
	  cp "$$tmp/package/LICENSE" $(REDOC)/redoc.LICENSE; \
	  echo "redoc: $(REDOC)/redoc.standalone.js is redoc@$$version ($$sum)"

hlsjs: ## Vendor hls.js (light build) of the console from npm, as pinned in web/console/lib/hls.version (needs npm)
	@set -euo pipefail; pin() { awk -v k="$$1" '$$1 == k { print $$2 }' $(HLSJS)/hls.version; }; \
	  version=$$(pin version); integrity=$$(pin integrity); sum=$$(pin sha256); \
	  tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	  (cd "$$tmp" && npm pack --silent "hls.js@$$version" >/dev/null); \
	  tgz="$$tmp/hls.js-$$version.tgz"; \
	  got=$$(node -e 'const c = require("crypto"), f = require("fs"); process.stdout.write("sha512-" + c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' "$$tgz"); \
	  if [ "$$got" != "$$integrity" ]; then echo "hlsjs: hls.js@$$version from npm has integrity $$got, hls.version pins $$integrity" >&2; exit 1; fi; \
	  tar -xzf "$$tgz" -C "$$tmp" package/LICENSE package/dist/hls.light.min.js; \
	  got=$$(sha256sum "$$tmp/package/dist/hls.light.min.js" | cut -d' ' -f1); \
	  if [ "$$got" != "$$sum" ]; then echo "hlsjs: the bundle of hls.js@$$version has sha256 $$got; set it in $(HLSJS)/hls.version if this is the version you meant" >&2; exit 1; fi; \
	  cp "$$tmp/package/dist/hls.light.min.js" $(HLSJS)/; \
	  cp "$$tmp/package/LICENSE" $(HLSJS)/hls.LICENSE; \
	  echo "hlsjs: $(HLSJS)/hls.light.min.js is hls.js@$$version ($$sum)"

build: wasm ## Build bin/mediajobs and bin/mediajobs-launcher (the warm sandboxes' launcher, in C)
	@mkdir -p bin
	@cd apps && go build -trimpath -o ../bin/ ./cmd/mediajobs
	@bash scripts/launcher.sh bin/mediajobs-launcher

run: build ## Install what is missing, build, and start the service on $(ADDR) with data in $(DATA)
	@bash scripts/deps.sh run
	@./bin/mediajobs dev --addr $(ADDR) --data $(DATA)

# make lint comes first: a vet, format or dependency-rule failure ends the run in seconds, before
# the installs, the images and the long suites.
test: lint deps services images ## Run make lint, then every test of every module, the JavaScript packages' and a short fuzz of each target; ends with the skips and why
	@mkdir -p var/test
	@$(SWEEP)
	@echo "== the store, bus, broker and rate-limit suites on servers in containers (testcontainers-go)"
	@MEDIAJOBS_TEST_SERVICES=containers $(GOTESTSUM) --format pkgname --format-hide-empty-pkg --jsonfile var/test/containers.json -- \
	  $(GOTEST_FLAGS) $(CONTAINER_SUITES)
	@echo "== every Go test of every module (the summary of skips closes it); beside it, niced, its lines marked 'side │':"
	@echo "   the JavaScript packages, a short fuzz of each target and the release check"
	@set -o pipefail; date +%s > var/test/started; \
	  (nice -n 10 $(MAKE) --no-print-directory test-side 2>&1 | sed -u 's/^/side │ /') & side=$$!; \
	  $(GOTESTSUM) --format pkgname --format-hide-empty-pkg --jsonfile var/test/go.json -- $(GOTEST_FLAGS) $(PACKAGES); main=$$?; \
	  wait $$side; side=$$?; $(SWEEP); \
	  echo "== make test: Go tests $$([ $$main = 0 ] && echo passed || echo FAILED), beside them $$([ $$side = 0 ] && echo passed || echo FAILED), in $$(( $$(date +%s) - $$(cat var/test/started) )) s"; \
	  [ $$main = 0 ] && [ $$side = 0 ]

# test-side is what make test runs beside the Go tests, at a lower priority: the main run's
# integration tests spend much of their time waiting (a server, a webhook, a rate-limit window),
# and this fills that time. Each step still fails make test.
test-side:
	@echo "== the JavaScript packages (js/): node --test against bin/mediajobs, tsc, npm pack"
	@bash scripts/jstest.sh
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(TEST_FUZZTIME)
	@$(MAKE) --no-print-directory release-check

fuzz: ## Run each fuzz target for $(FUZZTIME) (a duration, or a count such as 20000x)
	@set -e; for m in $(MODULES); do \
	  (cd $$m && for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
	    for t in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$f | sed 's/^func //'); do \
	      echo "fuzz $$m/$$(dirname $$f) $$t"; go test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) ./$$(dirname $$f); \
	    done; done); done

release-check: ## Prove an outside module can require github.com/mediajobs/mediajobs as released (file proxy, GOWORK=off, no replace) and run a job
	@echo "== release check: the modules through a file-based proxy, the embedding example outside the workspace"
	@go run ./internal/releasecheck

lint: ## go vet, gofmt and the dependency rule
	@go vet $(ROOT_PACKAGES)
	@set -e; for m in $(MODULES); do (cd $$m && go vet ./...); done
	@out=$$(gofmt -l *.go web internal $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@bash scripts/depcheck.sh

bench: deps services wasm ## Run the benchmarks and load runs, printing their figures
	@set -e; for m in $(MODULES); do (cd $$m && go test -run '^$$' -bench . -benchmem -count=1 -timeout 30m ./... | grep -v -E '^(ok|PASS|\?)' || true); done

bundle: deps ## Pack mediajobs, the integration tests and a small FFmpeg into var/bundle.tar.xz for a machine without Go or Debian's packages (scripts/bundle-run.sh runs them there; BASE=REF adds REF's build to compare on the same machine)
	@bash scripts/bundle.sh

tidy: ## go mod tidy in every module (the libraries' go.mod keep no replace line)
	@bash scripts/tidy.sh

clean: ## Remove build outputs
	rm -rf bin $(WASM) js/validator/validator.wasm

.PHONY: help deps services images js-test wasm client redoc hlsjs build run test release-check fuzz lint bench bundle tidy clean
