"""One logical Bloom filter over many keys: ``ShardedBloomFilter`` spreads N
keys over a Redis Cluster's slots (hash tags chosen for that) and routes each
item to one of them by a hash independent of the filter's own (BLAKE2b of
the item's bytes, so the items of one shard are not biased in the shard's
bit positions). Batches are grouped per shard and sent in one pipeline,
which redis-py's ``RedisCluster`` splits per node. Works on a standalone
server too (the keys then simply live together)."""

import hashlib
import struct
from typing import Any, Iterable, List, Optional, Sequence, Union

from ._ferrobloom import BloomFilter, FilterError
from ._server import _slot

Item = Union[bytes, bytearray, memoryview, str, int, float]


def encode(item: Item) -> bytes:
    """An item's bytes as redis-py sends them (and the local filters take them)."""
    if isinstance(item, bytes):
        return item
    if isinstance(item, (bytearray, memoryview)):
        return bytes(item)
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, bool):
        raise TypeError("Invalid input of type: 'bool'. Convert to a bytes, string, int or float first.")
    if isinstance(item, (int, float)):
        return repr(item).encode()
    raise TypeError(
        "Invalid input of type: '%s'. Convert to a bytes, string, int or float first." % type(item).__name__
    )


def shard_of(item: bytes, shards: int) -> int:
    """The routing hash: BLAKE2b-64 of the item modulo the shard count."""
    h = hashlib.blake2b(item, digest_size=8).digest()
    return struct.unpack("<Q", h)[0] % shards


def shard_keys(name: str, shards: int) -> List[str]:
    """``name:{tag}`` keys whose slots are spread evenly over the 16384 slots."""
    keys = []
    for i in range(shards):
        target = (i * 16384) // shards
        best, best_d = None, None
        for j in range(4096):
            tag = "%d-%d" % (i, j)
            d = abs(_slot(tag.encode()) - target)
            if best_d is None or d < best_d:
                best, best_d = tag, d
                if d == 0:
                    break
        keys.append("%s:{%s}" % (name, best))
    return keys


class ShardedBloomFilter:
    """A Bloom filter of ``shards`` keys named after ``name``, each a filter of
    ``capacity / shards`` items (``BF.RESERVE``'s other parameters alike)."""

    def __init__(self, client: Any, name: str, shards: int = 16) -> None:
        if shards < 1:
            raise FilterError("shards must be at least 1")
        self.client, self.name, self.shards = client, name, shards
        self.keys = shard_keys(name, shards)

    def create(
        self,
        capacity: int,
        error_rate: float = 0.01,
        *,
        expansion: Optional[int] = None,
        nonscaling: bool = False,
        layout: Optional[str] = None,
        tightening: Optional[float] = None,
        seed: Optional[bytes] = None,
        validate_scale_to: Optional[int] = None,
        window: Optional[float] = None,
    ) -> None:
        """``BF.RESERVE`` of every shard (all-or-nothing is not promised: a
        failure leaves the shards created before it; ``delete`` removes them)."""
        per = max(1, -(-capacity // self.shards))
        args: List[Any] = [error_rate, per]
        if expansion is not None:
            args += ["EXPANSION", expansion]
        if nonscaling:
            args.append("NONSCALING")
        if layout is not None:
            args += ["LAYOUT", layout]
        if tightening is not None:
            args += ["TIGHTENING", tightening]
        if seed is not None:
            args += ["SEED", seed]
        if validate_scale_to is not None:
            args += ["VALIDATESCALETO", validate_scale_to]
        if window is not None:
            args += ["WINDOW", window]
        # Validated locally first: the server's texts, before any key is written.
        if window is None:
            BloomFilter(
                per,
                error_rate,
                expansion=expansion,
                nonscaling=nonscaling,
                layout=layout,
                tightening=tightening,
                seed=seed,
                validate_scale_to=validate_scale_to,
            )
        pipe = self.client.pipeline(transaction=False)
        for k in self.keys:
            pipe.execute_command("BF.RESERVE", k, *args)
        pipe.execute()

    def delete(self) -> None:
        for k in self.keys:
            self.client.delete(k)

    def _grouped(self, items: Iterable[Item]):
        enc = [encode(x) for x in items]
        groups: List[List[int]] = [[] for _ in range(self.shards)]
        for i, x in enumerate(enc):
            groups[shard_of(x, self.shards)].append(i)
        return enc, groups

    def _batch(self, command: str, items: Iterable[Item]) -> list:
        enc, groups = self._grouped(items)
        pipe = self.client.pipeline(transaction=False)
        used = [s for s in range(self.shards) if groups[s]]
        for s in used:
            pipe.execute_command(command, self.keys[s], *[enc[i] for i in groups[s]])
        replies = pipe.execute(raise_on_error=False)
        out: list = [None] * len(enc)
        for s, reply in zip(used, replies):
            if isinstance(reply, Exception):
                raise reply
            for i, r in zip(groups[s], reply):
                out[i] = r if isinstance(r, Exception) else bool(r)
        return out

    def add_many(self, items: Iterable[Item]) -> list:
        """``BF.MADD`` per shard: per item True (new), False, or the server's error."""
        return self._batch("BF.MADD", items)

    def contains_many(self, items: Iterable[Item]) -> List[bool]:
        """``BF.MEXISTS`` per shard, answers in the items' order."""
        return self._batch("BF.MEXISTS", items)

    def add(self, item: Item) -> bool:
        return self.add_many([item])[0]

    def __contains__(self, item: Item) -> bool:
        return self.contains_many([item])[0]

    def __len__(self) -> int:
        pipe = self.client.pipeline(transaction=False)
        for k in self.keys:
            pipe.execute_command("BF.CARD", k)
        return sum(int(x) for x in pipe.execute())

    def pull(self, progress: Optional[bool] = False) -> List[BloomFilter]:
        """Every shard as a local filter (``ferrobloom.pull`` of each key)."""
        from ._server import pull

        return [pull(self.client, k, progress=progress) for k in self.keys]

    def push(self, filters: Sequence[BloomFilter], *, replace: bool = False, progress: Optional[bool] = False) -> None:
        """Stores local shard filters (built with :meth:`local_shards`)."""
        from ._server import push

        if len(filters) != self.shards:
            raise FilterError("expected %d shard filters, got %d" % (self.shards, len(filters)))
        for k, f in zip(self.keys, filters):
            push(self.client, k, f, replace=replace, progress=progress)

    def local_shards(self, capacity: int, error_rate: float = 0.01, **kwargs: Any) -> List[BloomFilter]:
        """Empty local filters, one per shard, for building offline."""
        per = max(1, -(-capacity // self.shards))
        return [BloomFilter(per, error_rate, **kwargs) for _ in range(self.shards)]

    def route(self, items: Iterable[Item]) -> List[List[bytes]]:
        """The items of each shard, in order (to fill :meth:`local_shards`)."""
        enc, groups = self._grouped(items)
        return [[enc[i] for i in g] for g in groups]
