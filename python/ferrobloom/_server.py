"""push and pull: moving filters to and from a server over any redis-py client
(``redis.Redis``, Sentinel-managed, ``redis.cluster.RedisCluster``, TLS, ACL
users), with ``LOADCHUNK`` / ``SCANDUMP`` — the same calls against ferrobloom
and against RedisBloom (for filters of RedisBloom's layouts)."""

import os
import binascii
from typing import Any, Callable, List, Optional, Tuple, Union

from ._ferrobloom import (  # the server's texts for a missing key and a key of another type
    NOT_FOUND,
    WRONG_TYPE,
    BloomFilter,
    CuckooFilter,
    FilterError,
    from_dump,
    walk_budget,
)
from ._progress import bar

Filter = Union[BloomFilter, CuckooFilter]

# A pushed filter loads into a temporary key that expires if the pushing
# client disappears; the TTL is removed in the same transaction that renames it.
TEMP_TTL_SECONDS = 3600

# How often pull walks again when the key changed during the walk.
PULL_ATTEMPTS = 3

# How often push(replace=True) watches the key, checks its type and renames
# before giving up because another client wrote the key each time.
PUSH_ATTEMPTS = 3
_KEY_CHANGED = "ERR the key changed during each of %d attempts to replace it; nothing was replaced" % PUSH_ATTEMPTS

# Tests only: called with the key after push's final check (WATCH and TYPE),
# before MULTI, so that a test can write the key from another connection there.
_before_rename: Optional[Callable[[bytes], None]] = None

# A walk that returned more than its header describes (``_walk``).
_PAST_HEADER = "went past what its header describes"

# ferrobloom's refusal of a SCANDUMP walk once a cuckoo filter moved items.
_MOVED = "the filter moved items"

# The module types' names (TYPE's reply), ferrobloom's and RedisBloom's alike.
_TYPES = {b"MBbloom--": "BF", b"MBbloomCF": "CF"}


def _kind(f: Filter) -> str:
    if isinstance(f, BloomFilter):
        return "BF"
    if isinstance(f, CuckooFilter):
        return "CF"
    raise TypeError("expected a ferrobloom.BloomFilter or CuckooFilter, not %r" % type(f).__name__)


def _b(key: Union[str, bytes]) -> bytes:
    return key.encode() if isinstance(key, str) else bytes(key)


def _hash_tag(key: bytes) -> Optional[bytes]:
    """The part of ``key`` Redis Cluster hashes (its hash tag), if it has one."""
    s = key.find(b"{")
    if s < 0:
        return None
    e = key.find(b"}", s + 1)
    if e <= s + 1:
        return None
    return key[s + 1 : e]


def _slot(key: bytes) -> int:
    """CRC16 (XMODEM) of the key's hashed part, modulo 16384 (Redis Cluster's key slot)."""
    tag = _hash_tag(key)
    return binascii.crc_hqx(tag if tag is not None else key, 0) % 16384


def temp_key(key: Union[str, bytes]) -> bytes:
    """A fresh key in the same Cluster slot as ``key`` (RENAME needs one)."""
    key = _b(key)
    nonce = os.urandom(8).hex().encode()
    tag = _hash_tag(key)
    if tag is not None:
        return b"{" + tag + b"}:ferrobloom-push:" + nonce
    if b"}" not in key:
        return b"{" + key + b"}:ferrobloom-push:" + nonce
    # A key whose braces form no tag: find a name of the same slot.
    want = _slot(key)
    for i in range(1 << 20):
        cand = b"ferrobloom-push:" + nonce + b":" + str(i).encode()
        if _slot(cand) == want:
            return cand
    raise FilterError("cannot find a temporary key in the slot of %r" % key)


def _config(client: Any, name: str) -> Optional[int]:
    """A module config's value (``CONFIG GET bf.<name>``), None when the server
    has none (RedisBloom 2.x, a Redis without module configs) or refuses."""
    try:
        r = client.config_get("bf." + name)
    except Exception:
        return None
    for k, v in (r or {}).items():
        try:
            return int(v)
        except (TypeError, ValueError):
            return None
    return None


# Bytes of LOADCHUNK data sent per pipeline by push (four SCANDUMP chunks).
PUSH_PIPELINE_BYTES = 64 << 20


def _total(f: Filter) -> int:
    return int(f.info()["Size"])


def push(
    client: Any,
    key: Union[str, bytes],
    filter: Filter,
    *,
    replace: bool = False,
    force: bool = False,
    progress: Optional[bool] = None,
) -> None:
    """Stores ``filter`` under ``key`` on the server, with ``LOADCHUNK``.

    The chunks load into a temporary key in the same Cluster slot, which is
    renamed over ``key`` at the end (``RENAME``; ``RENAMENX`` unless
    ``replace``): no reader ever sees a half-loaded filter, and a push that
    fails leaves ``key`` as it was (the temporary key is deleted, or expires
    after an hour if the client died). ``replace=False`` refuses an existing
    key, also one that appears during the push (``ERR item exists``).
    ``replace=True`` replaces a filter of the same kind (Bloom or cuckoo);
    a key of another type (a string, a hash, a filter of the other kind) is
    refused with the server's WRONGTYPE text, unless ``force=True``: checked
    before anything is sent, and again in the rename's transaction under
    ``WATCH``, so a key written meanwhile is checked again, never replaced
    unchecked (written before each of three checks: FilterError ``ERR the
    key changed during each of 3 attempts to replace it; nothing was
    replaced``).

    A filter the server's limits (``bf.max-filter-memory``, ``bf.bf-max-links``,
    ``bf.cf-max-expansions``, read with ``CONFIG GET`` where allowed) would
    refuse is refused before anything is sent, with the server's text; the
    server checks the header again itself. ``progress``: a progress bar on
    stderr (None: only on a terminal).
    """
    kind = _kind(filter)
    key = _b(key)
    max_bytes = _config(client, "max-filter-memory")
    if kind == "BF":
        filter.check_limits(max_bytes, _config(client, "bf-max-links"))
    else:
        filter.check_limits(max_bytes, _config(client, "cf-max-expansions"))
    if not replace and client.exists(key):
        raise FilterError("ERR item exists")
    if replace and not force:
        _check_replaceable(client, key, kind)
    tmp = temp_key(key)
    loadchunk = kind + ".LOADCHUNK"
    pb = bar(progress, _total(filter), "push")
    done = False
    try:
        client.delete(tmp)
        # The chunks go in pipelines of up to PUSH_PIPELINE_BYTES (the header
        # and the temporary key's TTL first): a round trip per pipeline, not
        # per chunk. A refused chunk raises (the pipeline's first error).
        pipe = client.pipeline(transaction=False)
        queued = 0
        it = 0
        first = True
        while True:
            nxt, data = filter.scandump(it)
            if nxt == 0:
                break
            pipe.execute_command(loadchunk, tmp, nxt, data)
            if first:
                pipe.expire(tmp, TEMP_TTL_SECONDS)
                first = False
            else:
                queued += len(data)
            if queued >= PUSH_PIPELINE_BYTES:
                pipe.execute()
                pb.update(queued)
                queued = 0
            it = nxt
        pipe.execute()
        pb.update(queued)
        _rename(client, key, tmp, kind, replace, force)
        done = True
    except Exception as e:
        # An ACL user refused a key: say which one (the temporary key is not
        # a name the caller chose; docs/clients.md, "ACL users").
        if type(e).__name__ == "NoPermissionError" and "to access" in str(e):
            raise type(e)("%s (push writes %r and the temporary key %r)" % (e, key, tmp)) from e
        # A server that is not ferrobloom (RedisBloom) refuses the header of
        # a filter of ferrobloom's layouts: say so, and what it takes.
        if _refused_header(e) and filter.layout != "redisbloom" and not _has_stamps_or_unknown(client, tmp):
            raise FilterError(
                "the server refused the filter's header (%s): it is not ferrobloom (RedisBloom?), "
                "which loads only filters of RedisBloom's layout: build the filter with "
                "layout=\"redisbloom\" (a windowed filter has no such layout)" % _server_text(e)
            ) from e
        raise
    finally:
        pb.close()
        if not done:
            try:
                client.delete(tmp)
            except Exception:
                pass


def _rename(client: Any, key: bytes, tmp: bytes, kind: str, replace: bool, force: bool) -> None:
    """push's last step: one transaction (both keys are in one slot, so a
    cluster takes it too) removes the temporary key's TTL and renames it over
    ``key``, the TTL never going before nor after the rename. With
    ``replace`` and not ``force``: ``WATCH key``, the type check, then
    ``MULTI``/``EXEC`` on one connection, again when the EXEC was aborted
    because the key changed."""
    if not replace or force:
        pipe = client.pipeline(transaction=True)
        pipe.execute_command("PERSIST", tmp)
        pipe.execute_command("RENAME" if replace else "RENAMENX", tmp, key)
        renamed = pipe.execute()[-1]
        if not replace and not renamed:
            raise FilterError("ERR item exists")
        return
    # RedisCluster: the key's primary's own client, whose pipelines take
    # WATCH in every redis-py version (a slot moved meanwhile fails the push).
    node_of = getattr(client, "get_node_from_key", None)
    conn = client.get_redis_connection(node_of(key)) if node_of is not None else client
    for _ in range(PUSH_ATTEMPTS):
        with conn.pipeline(transaction=True) as pipe:
            pipe.watch(key)  # the pipeline's connection from here to EXEC
            _check_replaceable(pipe, key, kind)
            hook = _before_rename
            if hook is not None:
                hook(key)
            pipe.multi()
            pipe.execute_command("PERSIST", tmp)
            pipe.execute_command("RENAME", tmp, key)
            try:
                pipe.execute()
                return
            except Exception as e:
                if type(e).__name__ != "WatchError":
                    raise
    raise FilterError(_KEY_CHANGED)


# Options of ``execute_command`` that make redis-py hand the reply's bulk
# strings over as bytes, also on a client with ``decode_responses=True``.
_RAW = {"NEVER_DECODE": []}


class _Changed(Exception):
    """The key's state changed during a SCANDUMP walk (its stamp did)."""


class _NoStamps(Exception):
    """The server's SCANDUMP takes no STAMP (RedisBloom, an older ferrobloom)."""


def _wrong_arity(e: Exception) -> bool:
    return "wrong number of arguments" in str(e).lower()


def _scandump(client: Any, scandump: str, key: bytes, it: int) -> Tuple[int, bytes, Any]:
    """``<scandump> key it STAMP``: the next iterator, the data and the stamp
    of the state they were read from."""
    r = client.execute_command(scandump, key, it, "STAMP", **_RAW)
    if len(r) != 3:
        raise FilterError("%s answered %d elements with STAMP, not 3" % (scandump, len(r)))
    return int(r[0]), bytes(r[1] or b""), r[2]


def _has_stamps_or_unknown(client: Any, key: bytes) -> bool:
    """has_stamps, True when the server cannot be asked (no hint then)."""
    try:
        return has_stamps(client, key)
    except Exception:
        return True


def _check_replaceable(client: Any, key: bytes, kind: str) -> None:
    """push(replace=True) replaces a missing key or a filter of ``kind`` only."""
    t = client.type(key)
    t = t.encode() if isinstance(t, str) else t
    if t != b"none" and _TYPES.get(t) != kind:
        raise FilterError(
            WRONG_TYPE + " (push replaces a filter of the same kind only; force=True replaces any key)"
        )


# RedisBloom's texts for a LOADCHUNK header it cannot read (Bloom, cuckoo).
_HEADER_REFUSALS = ("received bad data", "Invalid header")


def _server_text(e: Exception) -> str:
    """The server's error text in a redis-py pipeline error."""
    t = str(e)
    return t.split("caused error: ", 1)[-1]


def _refused_header(e: Exception) -> bool:
    return type(e).__name__ == "ResponseError" and any(x in str(e) for x in _HEADER_REFUSALS)


def _walk(step: Callable[[int], Any], kind: str, pb: Any) -> List[Tuple[int, bytes]]:
    """The replies of one SCANDUMP walk, the header first: ``step(it)`` is one
    ``SCANDUMP key it``. The walk is bounded by what its header describes
    (``walk_budget``, the core's ``WalkBudget``: the data bytes, and the
    chunks a server cutting them at 64 KiB or more sends): a server whose
    iterators cycle or repeat, or whose data never ends, raises FilterError
    (``_PAST_HEADER``) once the walk goes past it, as does a key that grew
    during the walk."""
    chunks: List[Tuple[int, bytes]] = []
    it = 0
    left = None
    while True:
        r = step(it)
        nxt, data = int(r[0]), r[1]
        if nxt == 0:
            return chunks
        data = b"" if data is None else bytes(data)
        if left is None:
            left = list(walk_budget(kind, data))
        elif left[0] == 0 or len(data) > left[1]:
            raise FilterError(
                "the SCANDUMP walk %s (a %d-byte chunk with %d chunks and %d bytes left): "
                "the key changed during the walk, or the server does not follow SCANDUMP"
                % (_PAST_HEADER, len(data), left[0], left[1])
            )
        else:
            left[0] -= 1
            left[1] -= len(data)
            pb.update(len(data))
        chunks.append((nxt, data))
        it = nxt


def _pull_walk(client: Any, kind: str, cls: Any, key: bytes, progress: Optional[bool]) -> Filter:
    """pull on a server whose SCANDUMP takes STAMP (ferrobloom): a walk,
    bounded by its header (``_walk``), whose every reply carries the stamp
    the header's did; walked again when one does not."""
    scandump = kind + ".SCANDUMP"
    why = ""
    for _ in range(PULL_ATTEMPTS):
        first: List[Any] = []

        def step(it: int) -> Tuple[int, bytes]:
            try:
                nxt, data, stamp = _scandump(client, scandump, key, it)
            except Exception as e:
                if it == 0 and _wrong_arity(e):
                    raise _NoStamps() from e
                raise
            if not first:
                first.append(stamp)
            elif stamp != first[0]:
                raise _Changed()
            return nxt, data

        pb = bar(progress, 0, "pull")
        try:
            chunks = _walk(step, kind, pb)
        except _Changed:
            why = " (the last: the key's stamp changed during the walk)"
            continue
        except _NoStamps:
            raise
        except Exception as e:
            # A cuckoo filter that moved items during the walk refuses the
            # rest of it ("start the walk again at 0"), and a walk that went
            # past its header read a key that changed: walk again.
            if _MOVED in str(e) or _PAST_HEADER in str(e):
                why = " (the last: %s)" % e
                continue
            raise
        finally:
            pb.close()
        return cls.from_chunks(chunks)
    raise FilterError(
        "the key changed during every one of %d SCANDUMP walks%s" % (PULL_ATTEMPTS, why)
    )


def _pull_dump(client: Any, key: bytes) -> Filter:
    """pull on a server whose SCANDUMP cannot show a walk consistent
    (RedisBloom): the key's ``DUMP``, one atomic read, decoded locally."""
    try:
        payload = client.dump(key)
    except Exception as e:
        if type(e).__name__ == "NoPermissionError":
            raise FilterError(
                "this server's SCANDUMP cannot show that a walk read one state of the key "
                "(it takes no STAMP: RedisBloom, or a ferrobloom before it), so pull reads "
                "the key with DUMP, which this user may not run (%s)" % e
            ) from e
        raise
    if payload is None:
        raise FilterError(NOT_FOUND)
    return from_dump(payload)


def _kind_of_key(client: Any, key: bytes) -> Optional[str]:
    """``"BF"``, ``"CF"`` or None (missing); FilterError for another type."""
    t = client.type(key)
    t = t.encode() if isinstance(t, str) else t
    if t == b"none":
        return None
    kind = _TYPES.get(t)
    if kind is None:
        raise FilterError(WRONG_TYPE)
    return kind


def pull(client: Any, key: Union[str, bytes], *, progress: Optional[bool] = None) -> Filter:
    """Reads the filter under ``key`` into a local filter that answers every
    probe as the server's: exactly a state the key held, or an error.

    On ferrobloom, a ``SCANDUMP`` walk whose every reply carries the stamp of
    the state it was read from (``SCANDUMP key iterator STAMP``): a write, or
    another value put under the key, changes the stamp, and the walk starts
    again (up to three times; then FilterError). On a server whose SCANDUMP
    takes no STAMP (RedisBloom), the key's ``DUMP`` (one atomic read) decoded
    locally. Works with ``decode_responses=True`` clients. Raises FilterError
    with the server's texts for a missing key (``ERR not found``) and a key
    of another type. See docs/clients.md, "push and pull".
    """
    key = _b(key)
    kind = _kind_of_key(client, key)
    if kind is None:
        raise FilterError(NOT_FOUND)
    cls = BloomFilter if kind == "BF" else CuckooFilter
    try:
        return _pull_walk(client, kind, cls, key, progress)
    except _NoStamps:
        return _pull_dump(client, key)


def has_stamps(client: Any, key: Union[str, bytes] = b"ferrobloom-probe") -> bool:
    """Whether the server's SCANDUMP takes STAMP (ferrobloom does, RedisBloom
    does not), asked with ``BF.SCANDUMP key 0 STAMP`` on ``key`` (in Redis
    Cluster: a key of the slot to ask; it need not exist)."""
    try:
        client.execute_command("BF.SCANDUMP", _b(key), 0, "STAMP", **_RAW)
    except Exception as e:
        if _wrong_arity(e):
            return False
        # A missing key or one of another type: the arguments were taken.
        if type(e).__name__ != "ResponseError":
            raise
    return True
