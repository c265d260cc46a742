"""Items from files of one item per line: the one rule the package, its
command-line tool and the docs use.

A line is the bytes up to a ``\\n``, without the ``\\n`` and without one ``\\r``
before it (so ``\\n`` and ``\\r\\n`` files give the same items); the last line
needs no ``\\n``; an empty line is the empty item; nothing else is stripped
and nothing is decoded (items are bytes)."""

import os
from typing import BinaryIO, Iterable, Iterator, List, Optional, Union

# Bytes read at a time: the lines of a block are split in C (bytes.split), not
# one Python iteration per line.
BLOCK = 4 << 20

Source = Union[str, "os.PathLike[str]", BinaryIO]


def line_blocks(stream: BinaryIO) -> Iterator[List[bytes]]:
    """The stream's items, a list per block read."""
    pending: List[bytes] = []  # the start of a line that is not complete yet
    while True:
        block = stream.read(BLOCK)
        if not block:
            break
        if not isinstance(block, bytes):
            raise TypeError("expected a binary file object (open(path, \"rb\")), not a text file")
        if b"\n" not in block:
            pending.append(block)
            continue
        if pending:
            pending.append(block)
            block = b"".join(pending)
        lines = block.split(b"\n")
        last = lines.pop()
        pending = [last] if last else []
        if b"\r" in block:
            lines = [x[:-1] if x.endswith(b"\r") else x for x in lines]
        yield lines
    if pending:
        yield [b"".join(pending)]


def lines(source: Source) -> Iterator[bytes]:
    """The items of a file of one item per line (a path or a binary file
    object), by the rule above: ``f.update(ferrobloom.lines("items.txt"))``."""
    if hasattr(source, "read"):
        for block in line_blocks(source):  # type: ignore[arg-type]
            yield from block
        return
    with open(source, "rb") as f:  # type: ignore[arg-type]
        for block in line_blocks(f):
            yield from block


def count_lines(paths: Iterable[str]) -> Optional[int]:
    """How many items the files hold (None when one of them is standard
    input, ``-``, which cannot be read twice)."""
    n = 0
    for p in paths:
        if p == "-":
            return None
        with open(p, "rb") as f:
            last = b"\n"
            while True:
                block = f.read(BLOCK)
                if not block:
                    break
                n += block.count(b"\n")
                last = block[-1:]
            if last != b"\n":
                n += 1
    return n
