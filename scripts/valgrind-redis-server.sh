#!/bin/sh
# redis-server under valgrind memcheck, for the integration-test harness:
#   REDIS_SERVER=scripts/valgrind-redis-server.sh FERROBLOOM_START_TIMEOUT_SECS=300 cargo test ...
# (`make stress VALGRIND=1` does this.) One log per process: $FERROBLOOM_VALGRIND_DIR/vg.<pid>.log
# (default /tmp). Redis' jemalloc is intercepted (--soname-synonyms), so every allocation,
# including the module's (RedisModule_TryAlloc -> zmalloc -> malloc), goes through memcheck.
# `exec` keeps the pid the harness kills and waits for that of valgrind itself.
dir="${FERROBLOOM_VALGRIND_DIR:-/tmp}"
exec valgrind --tool=memcheck --error-exitcode=99 \
  --soname-synonyms='somalloc=*jemalloc*' \
  --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
  --suppressions="$(dirname "$0")/valgrind.supp" \
  --num-callers=40 --log-file="$dir/vg.%p.log" \
  "${REDIS_SERVER_BIN:-redis-server}" "$@"
