#!/usr/bin/env bash
# Checks a release artifact (`make dist`): the checksums match, the module has no debug
# info and no fault-injection command, and the unpacked module loads into Redis (and
# Valkey 9 and Redis 8.2 when `scripts/peers.sh` has them) and answers commands. Run by
# `make test`.
#   scripts/dist-check.sh dist/ferrobloom-<version>-linux-<arch>.tar.gz
set -euo pipefail
tarball=$(readlink -f "$1")
cd "$(dirname "$0")/.."
repo=$PWD
work=$(mktemp -d "${TMPDIR:-/tmp}/fb-dist.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "dist-check: FAILED: $*" >&2; exit 1; }

(cd "$(dirname "$tarball")" && sha256sum --quiet -c "$(basename "$tarball").sha256") ||
  fail "the tarball does not match its .sha256"
tar -C "$work" -xzf "$tarball"
name=$(basename "$tarball" .tar.gz)
dir="$work/$name"
[ -d "$dir" ] || fail "the tarball has no $name/ directory"
for f in libferrobloom.so redis.conf.example README.md LICENSE SHA256SUMS; do
  [ -f "$dir/$f" ] || fail "missing $f"
done
(cd "$dir" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match"
so="$dir/libferrobloom.so"
if readelf -S "$so" | grep -q '\.debug_info'; then fail "the module still has debug info"; fi
if grep -qa 'FERROBLOOM.FAULT' "$so"; then fail "the module was built with fault-injection"; fi
grep -q '^loadmodule \./libferrobloom.so' "$dir/redis.conf.example" ||
  fail "redis.conf.example does not load ./libferrobloom.so"
glibc=$(objdump -T "$so" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n1)
grep -q "${glibc#GLIBC_}" "$dir/README.md" || fail "README.md does not name $glibc"

# Starts <server> with the unpacked module (from the unpacked directory, with its
# redis.conf.example) and runs a few commands.
check_server() {
  local label=$1 bin=$2
  local d="$work/$label"
  mkdir -p "$d"
  # The server's dir stays the unpacked directory: relative `loadmodule` paths are
  # resolved there (the config's `dir ./`).
  (cd "$dir" && "$bin" ./redis.conf.example --port 0 --unixsocket "$d/s.sock" \
    --logfile "$d/log" >/dev/null 2>&1) &
  pids+=($!)
  for _ in $(seq 200); do [ -S "$d/s.sock" ] && break; sleep 0.05; done
  [ -S "$d/s.sock" ] || fail "$label did not start: $(tail -5 "$d/log" 2>/dev/null)"
  local cli=(redis-cli -s "$d/s.sock")
  [ "$("${cli[@]}" BF.ADD k a)" = 1 ] || fail "$label: BF.ADD"
  [ "$("${cli[@]}" BF.EXISTS k a)" = 1 ] || fail "$label: BF.EXISTS"
  [ "$("${cli[@]}" CF.ADD c a)" = 1 ] || fail "$label: CF.ADD"
  [ -z "$("${cli[@]}" COMMAND INFO ferrobloom.fault | tr -d '\n')" ] ||
    fail "$label: FERROBLOOM.FAULT is registered"
  "${cli[@]}" MODULE LIST | grep -q '^bf$' || fail "$label: MODULE LIST has no bf"
  "${cli[@]}" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  echo "dist-check: $label loads $name and answers BF.ADD, BF.EXISTS, CF.ADD"
}
check_server redis redis-server
valkey=$("$repo/scripts/peers.sh" valkey9 2>/dev/null | sed -n 's/^valkey9=//p' || true)
if [ -n "$valkey" ]; then check_server valkey9 "$valkey"; fi
redis8=$("$repo/scripts/peers.sh" redis8 2>/dev/null | sed -n 's/^redis8=//p' || true)
if [ -n "$redis8" ]; then check_server redis8 "$redis8"; fi
echo "dist-check: $(basename "$tarball") OK (module $(du -k "$so" | cut -f1) KiB, needs $glibc or newer)"

# The Java library's jar beside the tarball (`make dist`): its checksum, its native
# library (no debug info), and a filter made through it with no setup but the classpath.
version=${name#ferrobloom-}
version=${version%-linux-*}
jar="$(dirname "$tarball")/ferrobloom-$version.jar"
if [ -f "$jar" ]; then
  (cd "$(dirname "$jar")" && sha256sum --quiet -c "$(basename "$jar").sha256") ||
    fail "the jar does not match its .sha256"
  (cd "$work" && unzip -q -o "$jar" native/linux-x86_64/libferrobloom_jni.so) ||
    fail "the jar has no native/linux-x86_64/libferrobloom_jni.so"
  if readelf -S "$work/native/linux-x86_64/libferrobloom_jni.so" | grep -q '\.debug_info'; then
    fail "the jar's native library still has debug info"
  fi
  cat > "$work/JarCheck.java" <<'JAVA'
import io.ferrobloom.BloomFilter;
import io.ferrobloom.Filter;

public class JarCheck {
    public static void main(String[] args) {
        try (BloomFilter f = BloomFilter.create(1000, 0.01)) {
            f.put("a");
            try (Filter g = Filter.fromBytes(f.toBytes())) {
                if (!f.mightContain("a") || f.mightContain("b") || !g.kind().equals("BF")) {
                    throw new AssertionError("wrong answers");
                }
            }
        }
        System.out.println("ok");
    }
}
JAVA
  [ "$(java -cp "$jar" "$work/JarCheck.java")" = ok ] || fail "the jar does not load"
  echo "dist-check: $(basename "$jar") OK ($(du -k "$jar" | cut -f1) KiB, loads its native library with no setup)"
fi
