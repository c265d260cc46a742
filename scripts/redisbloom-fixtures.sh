#!/usr/bin/env bash
# Regenerates tests/fixtures/redisbloom (dump.rdb, dumps.tsv, answers.tsv) from the real
# RedisBloom 2.8.2: builds the migration test matrix in it, saves its RDB file, DUMP
# payloads, and its answers (INFO, DEBUG, CARD/COUNT, MEXISTS of 1200 probes, SCANDUMP).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/peers.sh redisbloom >/dev/null
export CARGO_TARGET_DIR="${TEST_TARGET_DIR:-$HOME/.cache/ferrobloom-target-test}"
cargo test --release --features fault-injection --test migration -- \
  --ignored --exact regenerate_redisbloom_fixtures
ls -l tests/fixtures/redisbloom
