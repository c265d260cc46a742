#!/usr/bin/env bash
# Regenerates crates/ferrobloom/tests/fixtures/redisbloom from the real RedisBloom 2.8.2: builds the
# migration test matrix in it (crates/ferrobloom/tests/common/redisbloom.rs), then saves its RDB file
# (dump.rdb), its DUMP payloads (dumps.tsv), its answers before and after the further
# writes (answers.tsv) and its replies to those writes (writes.tsv); and a dump.rdb with
# RedisBloom's other types (other-types.rdb).
set -euo pipefail
cd "$(dirname "$0")/../crates/ferrobloom"
../../scripts/peers.sh redisbloom >/dev/null
export CARGO_TARGET_DIR="${TEST_TARGET_DIR:-$HOME/.cache/ferrobloom-target-test}"
cargo test --release --features ferrobloom/fault-injection --test migration_fixtures -- \
  --ignored --exact regenerate_redisbloom_fixtures
# RedisBloom's other types (CMS, Top-K, t-digest) beside a Bloom and a cuckoo filter.
cargo test --release --features ferrobloom/fault-injection --test other_types -- \
  --ignored --exact regenerate_other_types_fixture
ls -l crates/ferrobloom/tests/fixtures/redisbloom
