"""ferrobloom: the server's Bloom and cuckoo filters, in-process.

A local filter is created with the same parameters, defaults, limits and
error texts as ``BF.RESERVE`` / ``CF.RESERVE``; for the same items in the same
order its dump is byte for byte the server's ``SCANDUMP``. Filters move to and
from a server with :func:`push` and :func:`pull` (redis-py), and to and from
files with :meth:`BloomFilter.to_bytes` / :func:`from_bytes`, :func:`save` /
:func:`load` and pickling (the versioned file format of docs/clients.md).

>>> import ferrobloom
>>> f = ferrobloom.BloomFilter(1000, 0.01)
>>> f.add_many(["a", "b", "a"])
[True, True, False]
>>> "a" in f, "c" in f
(True, False)
"""

import os
import tempfile
from typing import BinaryIO, Union

from ._ferrobloom import (
    FILE_FORMAT_VERSION,
    BloomFilter,
    CuckooFilter,
    FilterError,
    FormatError,
    __version__,
    file_kind,
    from_bytes,
)
from ._lines import lines
from ._server import pull, push
from ._sharded import ShardedBloomFilter

Filter = Union[BloomFilter, CuckooFilter]

__all__ = [
    "BloomFilter",
    "CuckooFilter",
    "Filter",
    "FilterError",
    "FormatError",
    "FILE_FORMAT_VERSION",
    "file_kind",
    "from_bytes",
    "lines",
    "load",
    "pull",
    "push",
    "save",
    "ShardedBloomFilter",
    "__version__",
]


def save(filter: Filter, path: "Union[str, os.PathLike[str]]") -> None:
    """Writes ``filter`` to ``path`` in the file format, atomically: a reader
    of ``path`` sees the old file or the new one, never a partial one."""
    if not isinstance(filter, (BloomFilter, CuckooFilter)):
        raise TypeError("save() takes a BloomFilter or a CuckooFilter, not %s" % type(filter).__name__)
    data = filter.to_bytes()
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".ferrobloom-", dir=directory)
    except OSError as e:
        # Name the file asked for, not the temporary one next to it.
        raise type(e)(e.errno, e.strerror, path) from e
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load(source: "Union[str, os.PathLike[str], BinaryIO]") -> Filter:
    """Reads a filter file written by :func:`save` (or ``to_bytes``) of any
    earlier version, from a path or a binary file object (from its current
    position); raises :class:`FormatError` for anything else. The file is
    read chunk by chunk straight into the filter (never a second copy of
    it in memory), checked as ``from_bytes`` checks bytes. A file object
    opened in text mode raises TypeError."""
    if hasattr(source, "read"):
        return from_bytes(source)
    with open(source, "rb") as f:
        return from_bytes(f)
