# Garuda: `make build`, `make test` (what CI runs), `make bench`, `make fuzz`, `make soak`.
GO      ?= go
BIN     ?= bin
VERSION ?= 0.16.0-dev
LDFLAGS := -X github.com/garuda-dev/garuda/internal/version.Version=$(VERSION)
BUF     ?= $(shell command -v buf 2>/dev/null || echo .tools/node_modules/.bin/buf)
GOBIN   ?= $(shell $(GO) env GOBIN)
PREFIX_BIN := $(if $(GOBIN),$(GOBIN),$(HOME)/.local/bin)
# The shipped build (test/release says why; TestMakefileBuildsRelease keeps the two in step): static, and without
# grpc's x/net/trace.
BUILD   := CGO_ENABLED=0 $(GO) build -trimpath -tags grpcnotrace

.PHONY: build install test vet cross unit generate check-generated lint bench fuzz soak tools clean

# garuda-sandbox is the sandbox's helper: garuda-exec runs it from beside itself (docs/security.md), so the three
# are built and installed together.
build:
	$(BUILD) -ldflags '$(LDFLAGS)' -o $(BIN)/garuda ./cmd/garuda
	$(BUILD) -ldflags '$(LDFLAGS)' -o $(BIN)/garuda-exec ./cmd/garuda-exec
	$(BUILD) -ldflags '$(LDFLAGS)' -o $(BIN)/garuda-sandbox ./cmd/garuda-sandbox

install: build
	mkdir -p $(PREFIX_BIN)
	install -m 0755 $(BIN)/garuda $(BIN)/garuda-exec $(BIN)/garuda-sandbox $(PREFIX_BIN)/
	@echo "installed garuda, garuda-exec and garuda-sandbox in $(PREFIX_BIN)"
	@case ":$$PATH:" in *":$(PREFIX_BIN):"*) ;; *) echo "note: $(PREFIX_BIN) is not on your PATH; add it, or editors will not find garuda";; esac

# Everything CI runs. go vet runs inside go test (-vet=all: every analyzer), on the race build the tests compile
# anyway, instead of compiling the tree once more without -race. The cross builds are built by the release test
# (tools/release builds the binaries for every platform with $(BUILD)'s settings), so make cross is not repeated.
test: check-generated lint unit

vet:
	$(GO) vet ./...

# Linux is the platform; elsewhere each binary is cmd/*/main_other.go: its version, and a refusal with the reason
# (internal/version.Unsupported), linking nothing else.
cross:
	GOOS=darwin $(BUILD) ./cmd/...
	GOOS=windows $(BUILD) ./cmd/...

# The packages whose tests run longest go first: go test starts packages in the order given, so these run beside
# the compiles of the rest instead of after them. -p 4: these tests mostly wait (on the release's builds, on
# sandboxed commands, on the built binaries), and at the default of one package a core two of them would hold up
# every compile. -ldflags=-w: the test binaries carry no DWARF (no test reads it; a debugger is the only user),
# which halves each of their links; -gcflags=all=-dwarf=false: so the compiler makes none for them either (6 % of a
# compile's CPU). GOGC=400: the compiler, the linker and the release test's builds collect garbage less often (8 %
# of a compile's CPU, a few hundred MB more at the peak); what they build is the same.
SLOWTESTS := ./tools/release ./broker/sandbox ./test/attacks ./test ./broker ./frontend/acpagent
unit:
	GOGC=400 $(GO) test -race -vet=all -ldflags=-w -gcflags=all=-dwarf=false -count=1 -p 4 -timeout 20m $(SLOWTESTS) ./...

# make release VERSION=x.y.z: the archives of every platform, SHA256SUMS and the ACP Registry entry, in dist/
# (replaced as a whole; tools/release says how). No VERSION on the command line or in the environment is an error,
# not the development version above.
.PHONY: release
release:
	$(GO) run ./tools/release -version '$(if $(filter file,$(origin VERSION)),,$(VERSION))'

tools: $(BUF)

BUFPKG  := @bufbuild/buf@1.75.0
.tools/node_modules/.bin/buf:
	mkdir -p .tools && cd .tools && npm install --silent --no-audit --no-fund $(BUFPKG)

generate: tools
	$(BUF) generate

# Fails when the committed generated code differs from what the .proto files generate.
check-generated: tools
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	$(BUF) generate -o $$tmp && \
	if ! diff -r -q $$tmp/proto proto -x '*.proto' -x '*.md' -x doc.go -x warm.go >/dev/null; then \
		diff -r $$tmp/proto proto -x '*.proto' -x '*.md' -x doc.go -x warm.go | head -40; \
		echo "generated code is stale: run make generate and commit"; exit 1; \
	fi
	@echo "generated code is up to date"

lint: tools
	$(BUF) lint
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go') | grep -v '\.pb\.go$$'); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@out=$$(awk -f .ci/longlines.awk $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go') | grep -v '\.pb\.go:'); \
	if [ -n "$$out" ]; then echo "lines over 140 columns:"; echo "$$out"; exit 1; fi
	@out=$$(git grep -n -E '^(<<<<<<<|>>>>>>>) ' 2>/dev/null); \
	if [ -n "$$out" ]; then echo "merge conflict markers left:"; echo "$$out"; exit 1; fi

bench: build
	$(GO) test -p 1 -run '^$$' -bench . -benchmem -count 1 ./...
	$(GO) run ./bench/procbench -bin $(BIN)

# make fuzz: every Fuzz target of the tree, one go test -fuzz per target (go fuzzes one target at a time), FUZZTIME
# each, with FUZZPARALLEL workers. CI's go test runs the seed corpora and testdata/fuzz only. A new interesting
# input is minimized for at most FUZZMINIMIZE (go's default of 60 s stalls a short run). Every target runs; the
# failed ones are listed at the end.
FUZZTIME     ?= 10s
FUZZPARALLEL ?= 1
FUZZMINIMIZE ?= 1s
fuzz:
	@failed=""; for f in $$(grep -rl --include='*_test.go' --exclude-dir=.tools '^func Fuzz' . | sort); do \
		d=$$(dirname $$f); \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "== $$d $$t ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) \
				-parallel $(FUZZPARALLEL) $$d || failed="$$failed $$d:$$t"; \
		done; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz targets that failed:$$failed"; exit 1; fi

# make soak: SOAKSESSIONS ACP sessions in one garuda acp for SOAKTIME against the fake provider, failing on growth
# of the live heap, descriptors, goroutines or processes (bench/procbench/soak.go says the bounds). Not in make test.
# Both binaries are built with the soakprof tag, which samples their live heap (bench/soakprof).
# LEAK=1 builds both with the soakleak tag: garuda keeps every turn's history and a descriptor a turn, garuda-exec a
# goroutine a call; that soak must fail on all three.
# SOAKREPLACE: turns after which a session is closed and a new one opened in its folder (0: never), so that sessions
# reach a steady spread of lengths and growth with a session's length is not taken for a leak.
# PROFILE=1 also keeps a heap profile of each every 20 s in $(BIN)/soak/prof (go tool pprof -base FIRST LAST).
SOAKTIME     ?= 10m
SOAKSESSIONS ?= 20
SOAKREPLACE  ?= 200
soak:
	$(BUILD) -tags 'grpcnotrace soakprof$(if $(LEAK), soakleak)' -ldflags '$(LDFLAGS)' -o $(BIN)/soak/garuda ./cmd/garuda
	$(BUILD) -tags 'grpcnotrace soakprof$(if $(LEAK), soakleak)' -ldflags '$(LDFLAGS)' -o $(BIN)/soak/garuda-exec ./cmd/garuda-exec
	$(BUILD) -ldflags '$(LDFLAGS)' -o $(BIN)/soak/garuda-sandbox ./cmd/garuda-sandbox
	$(if $(PROFILE),rm -rf $(BIN)/soak/prof && mkdir -p $(BIN)/soak/prof)
	$(if $(PROFILE),SOAKPROF_DIR=$(abspath $(BIN))/soak/prof) $(GO) run ./bench/procbench -bin $(BIN)/soak -soak $(SOAKTIME) -sessions $(SOAKSESSIONS) -replace $(SOAKREPLACE)

clean:
	rm -rf $(BIN) .tools
