#!/usr/bin/env python3
r"""ferrobloom benchmark driver (`make bench`).

Runs every part of the benchmark, prints Markdown tables and writes them to
bench/results/<part>.md (raw data: <part>.json, plots: <part>*.png), then
bench/results/summary.md with each target as a ratio and met / not met.

Parts (select with --parts, comma-separated; default all, in this order):
  one_item     BF.ADD/BF.EXISTS/CF.ADD/CF.ADDNX/CF.EXISTS/CF.COUNT/CF.DEL with redis-benchmark,
               ops/s and server us/call, beside RedisBloom 2.8.2 (--redisbloom) and SET/GET
  batch        BF.MADD/CF.INSERT filling 1M/10M/100M filters to capacity, then BF.MEXISTS/
               CF.MEXISTS on them, 1000 items per command, server ns/item from INFO
               commandstats, beside RedisBloom 2.8.2 and the random-read reference
               (crates/ferrobloom-core/examples/bench_memref.rs)
  core         crates/ferrobloom-core/examples/bench_core.rs: ns per add/contains by filter size, hashing cost
  accuracy     crates/ferrobloom-core/examples/bench_accuracy.rs: FPR and bits/item (Bloom, cuckoo)
  persistence  SAVE and restart-load time of a 1 GiB filter vs a 1 GiB string
  merge        BF.MERGE of two filters of random bits (16 MiB to 1 GiB each), into a new key
               and into an existing filter: server time and GB/s of bytes touched
  window       windowed filters (see part_window)
  python       the Python package (--python: a venv's interpreter with ferrobloom, rbloom 1.5.4,
               fastbloom-rs 0.5.10, pybloomfiltermmap3 0.6.3 and redis; the Makefile makes it):
               in-process add/lookup ns/item at 1M/10M, as one batch, in chunks of 10,000
               and one call per item, and two threads on one filter (bench/python_inprocess.py)
               and bulk load build+push vs pipelined BF.MADD, pull, local lookups vs
               BF.MEXISTS (bench/python_bulkload.py)
  java         the Java library (java/bench, built by the Makefile: `make java`, then
               `mvn -f java/bench package`): in-process put/mightContain ns/item at
               1M/10M/100M, batches of 10,000 and one call per item, against Guava's
               BloomFilter (byte[] items), FP rate and bytes; bulk load of 100M items
               build+push vs pipelined BF.MADD over Jedis vs Redisson's RBloomFilter
The summary is rebuilt from every <part>.json present, so re-running one part
(e.g. `make bench BENCH_ARGS="--parts batch"`) refreshes the summary too.

The module and the examples must be built first (the Makefile's bench target does it):
  cargo build --release -p ferrobloom-core --example bench_core \
      --example bench_accuracy --example bench_memref --example bench_window \
      --example bench_window_memory
  cargo build --release            # the module (the only crate that uses Redis' allocator)
  python3 bench/run.py --module $CARGO_TARGET_DIR/release/libferrobloom.so \
      --examples $CARGO_TARGET_DIR/release/examples

Every knob has a flag (see --help); --quick shrinks everything for a smoke test.

Comparing Bloom layouts: `--layouts classic,blocked` adds a row per layout to the core and
accuracy tables (the names must be known to examples/common/layouts.rs, the one place that
maps a name to a constructor); `--bf-variants 'classic:;blocked:LAYOUT blocked'` runs the
one-item and batch BF commands once per variant, each on a filter created with
`BF.RESERVE key 0.01 <n> <extra args>` (whatever syntax the module gets for its layout).
Pass them through make with BENCH_ARGS="...".
"""

import os
import sys

# The parts live in bench/fbbench/ (one module each); this file is the entry point.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fbbench.cli import main  # noqa: E402

if __name__ == "__main__":
    main(__doc__)
