GO      ?= go
TERRAFORM ?= terraform
BIN     := bin/xp
PKGS    := ./...
# make test must stay under 20 minutes on 2 cores, the releases' download
# included. -parallel 4: the tests marked t.Parallel mostly wait on timed
# loads and child processes (JVMs, namespace hosts), not on the CPU, so a
# package runs four of them at once, not GOMAXPROCS (2).
TESTFLAGS ?= -count=1 -timeout 18m -parallel 4
# Kafka releases assembled from Maven Central by make kafka-dist: empty for
# the newest 4.x, a minor version (3.9) for its newest release, or exact.
KAFKA_VERSION ?=
# The releases the tests run: the newest 4.x and the newest 3.9.x.
TEST_KAFKA_VERSIONS ?= 4 3.9
# The Kroxylicious release make kroxylicious-dist assembles: empty for the
# newest Maven Central has, or exact.
KROXYLICIOUS_VERSION ?=
# make lint runs this staticcheck release (through the module proxy).
STATICCHECK_VERSION ?= v0.8.2

.PHONY: build test bench lint demo demo-kafka readme-figure clean fuzz kafka-dist kroxylicious-dist java-client rdkafka-client dists explore-assets

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/xp

test: lint dists
	$(GO) test $(TESTFLAGS) $(PKGS)

# out/dist/kafka_2.13-VERSION.tgz (+ .sha512) in Apache's layout, from Maven
# Central with strict checksums; the Maven local repository caches the jars.
kafka-dist:
	$(GO) run ./cmd/xpdist kafka -version '$(KAFKA_VERSION)' -out out/dist

# out/dist/kroxylicious-app-VERSION-bin.tar.gz (+ .sha512) in the official
# release's layout. Maven Central has no kroxylicious-app, so the archive is
# assembled from the runtime, the Record Encryption filter and its KMS
# providers (strict checksums, cached like Kafka's jars) with a launcher of
# xp's own (infra/release/launcher), compiled by javac.
kroxylicious-dist:
	$(GO) run ./cmd/xpdist kroxylicious -version '$(KROXYLICIOUS_VERSION)' -out out/dist

# out/dist/xp-java-client-VERSION.tgz (+ .sha512): xp's Java load generator
# (infra/release/loadgen, compiled by javac) with kafka-clients VERSION,
# HdrHistogram, and jose4j and jackson-databind (OAUTHBEARER's login) from
# Maven Central, strict checksums; xp loadgen --client java
# runs it. JAVA_CLIENT_VERSION: empty for the newest 4.x, or exact.
JAVA_CLIENT_VERSION ?=
java-client:
	$(GO) run ./cmd/xpdist java-client -version '$(JAVA_CLIENT_VERSION)' -out out/dist

# out/dist/xp-rdkafka-client-VERSION.tgz (+ .sha512): xp's librdkafka load
# generator (infra/release/rdkafka/loadgen.c, compiled by gcc against Debian's
# librdkafka-dev header) with the librdkafka VERSION of the PyPI wheel pinned
# by SHA-256 in infra/release; xp loadgen --client librdkafka runs it.
rdkafka-client:
	$(GO) run ./cmd/xpdist rdkafka-client -out out/dist

# Every release the tests need.
dists:
	@for v in $(TEST_KAFKA_VERSIONS); do \
		[ "$$v" = 4 ] && v=; \
		$(MAKE) --no-print-directory kafka-dist KAFKA_VERSION=$$v || exit 1; \
	done
	@$(MAKE) --no-print-directory kroxylicious-dist
	@$(MAKE) --no-print-directory java-client
	@$(MAKE) --no-print-directory rdkafka-client

# The explorer's charting libraries (xp explore), pinned and vendored in
# analysis/explore/assets: npm pack fetches each release (npm checks the
# registry's integrity hash), its built file is taken from dist/ and must
# match analysis/explore/assets/SHA256SUMS before it replaces the copy in
# the repository. TestAssetsChecksums checks the committed copies.
D3_VERSION   := 7.9.2
PLOT_VERSION := 0.6.17
EXPLORE_ASSETS := analysis/explore/assets
explore-assets:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && cd "$$tmp" && \
	npm pack --silent d3@$(D3_VERSION) @observablehq/plot@$(PLOT_VERSION) >/dev/null && \
	tar xzf d3-$(D3_VERSION).tgz package/dist/d3.min.js -O > d3-$(D3_VERSION).min.js && \
	tar xzf observablehq-plot-$(PLOT_VERSION).tgz package/dist/plot.umd.min.js -O > plot-$(PLOT_VERSION).umd.min.js && \
	sha256sum -c "$(CURDIR)/$(EXPLORE_ASSETS)/SHA256SUMS" && \
	cp d3-$(D3_VERSION).min.js plot-$(PLOT_VERSION).umd.min.js "$(CURDIR)/$(EXPLORE_ASSETS)/"

# One table, every comparison measured side by side in one run, written to
# BENCHMARKS.md with the machine, date, Go version, commit and every target's
# verdict (bench.out starts with those header lines).
bench: build kafka-dist kroxylicious-dist java-client rdkafka-client
	$(GO) run ./cmd/xpbench -header > bench.out
	$(GO) test -run '^$$' -bench . -benchmem -p 1 -timeout 60m $(PKGS) 2>&1 | tee -a bench.out
	$(GO) run ./cmd/xpbench -o BENCHMARKS.md < bench.out
	@echo "BENCHMARKS.md written from bench.out"

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run go mod tidy"; exit 1; }
	@$(TERRAFORM) fmt -check -recursive terraform/ || { echo "terraform fmt needed: run terraform fmt -recursive terraform/"; exit 1; }
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)

# A fresh campaign each time (the previous demo's db is replaced). Exit 3
# (some runs invalid) still goes on to the analysis, which reports them.
demo: build
	@mkdir -p out
	@rm -f out/quickstart.db out/quickstart.db-wal out/quickstart.db-shm out/quickstart.db.lock
	./$(BIN) plan expand plans/quickstart.yaml -o out/quickstart.jsonl
	./$(BIN) run out/quickstart.jsonl --db out/quickstart.db --spec plans/quickstart.yaml || [ $$? -eq 3 ]
	./$(BIN) analyse --db out/quickstart.db --out out/quickstart-analysis
	@echo "results: out/quickstart.db, report: out/quickstart-analysis/report.html"

# The quickstart on Apache Kafka brokers run by the local target: the release
# make kafka-dist assembles (the newest 4.x, or KAFKA_VERSION), named in
# out/kafka-local.yaml; the spec is plans/quickstart.yaml with that release's
# kafka_version, its own campaign name, and a comment saying what it runs.
demo-kafka: build
	@mkdir -p out
	@rm -f out/quickstart-kafka.db out/quickstart-kafka.db-wal out/quickstart-kafka.db-shm out/quickstart-kafka.db.lock
	@set -e; tgz=$$($(GO) run ./cmd/xpdist kafka -version '$(KAFKA_VERSION)' -out out/dist); \
	v=$$(basename "$$tgz" .tgz | sed 's/^kafka_2\.13-//'); \
	printf 'platform: local\nkafka:\n  distribution: dist/%s\n  sha512: %s\n' "$$(basename "$$tgz")" "$$(cut -d' ' -f1 "$$tgz.sha512")" > out/kafka-local.yaml; \
	{ printf '%s\n' "# The quickstart on Apache Kafka $$v: every security mode against plaintext" \
		"# (the four direct modes, and xp's gateway passthrough, whole-value and field" \
		"# encryption) on one Apache Kafka broker in KRaft mode, a JVM the local target" \
		"# starts from the release make kafka-dist assembled (out/kafka-local.yaml);" \
		"# six replicates of 3-second runs at 1,000 msg/s. make demo-kafka writes and" \
		"# runs it; make demo runs the same campaign on the embedded cluster."; \
	  sed -n '/^campaign:/,$$p' plans/quickstart.yaml | \
	  sed -e 's/^campaign: quickstart$$/campaign: quickstart-kafka/' -e "s/^fixed:$$/fixed:\n  kafka_version: $$v/"; } > out/quickstart-kafka.yaml; \
	echo "Apache Kafka $$v from $$tgz"
	./$(BIN) plan expand out/quickstart-kafka.yaml -o out/quickstart-kafka.jsonl
	./$(BIN) run out/quickstart-kafka.jsonl --db out/quickstart-kafka.db --target out/kafka-local.yaml --spec out/quickstart-kafka.yaml || [ $$? -eq 3 ]
	./$(BIN) analyse --db out/quickstart-kafka.db --out out/quickstart-kafka-analysis
	@echo "results: out/quickstart-kafka.db, report: out/quickstart-kafka-analysis/report.html"

# The README's figure: the demo campaign's forest plot, as the report draws it.
readme-figure: demo
	@mkdir -p docs/img
	cp out/quickstart-analysis/figures/forest-all.svg docs/img/forest.svg

# Every go test -fuzz target for FUZZTIME each (seed corpora run in make test).
FUZZTIME ?= 15s
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
		d=$$(dirname $$f); \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "fuzz $$d $$t"; \
			$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$d; \
		done; \
	done

clean:
	rm -rf bin out bench.out
