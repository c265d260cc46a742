"""The ``ferrobloom`` command-line tool: build a filter file from items, push
it into a server, pull one out, and inspect, query and merge files.

Items are lines (the bytes of each line without its ``\\n`` or ``\\r\\n``),
from files or standard input. Exit status: 0 on success, 1 when an operation
fails (the reason on stderr, prefixed ``ferrobloom:``), 2 for a usage error;
``query -q`` exits 0 when every item may be present and 1 otherwise.
"""

import argparse
import sys
from typing import BinaryIO, Iterable, Iterator, List, Optional

from . import BloomFilter, CuckooFilter, FilterError, FormatError, load, save
from . import pull as _pull
from . import push as _push

BATCH = 65536


# Bytes read at a time: the lines of a block are split in C (bytes.split), not
# one Python iteration per line.
BLOCK = 4 << 20


def _line_blocks(stream: BinaryIO) -> Iterator[List[bytes]]:
    """The stream's lines, a block at a time: without their "\n" (and a "\r"
    before it); a last line without "\n" as it is."""
    pending: List[bytes] = []  # the start of a line that is not complete yet
    while True:
        block = stream.read(BLOCK)
        if not block:
            break
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


def _input_blocks(paths: List[str]) -> Iterator[List[bytes]]:
    if not paths:
        paths = ["-"]
    for p in paths:
        if p == "-":
            yield from _line_blocks(sys.stdin.buffer)
        else:
            with open(p, "rb") as f:
                yield from _line_blocks(f)


def _inputs(paths: List[str]) -> Iterator[bytes]:
    for block in _input_blocks(paths):
        yield from block


def _batches(items: Iterable[bytes]) -> Iterator[List[bytes]]:
    batch: List[bytes] = []
    for x in items:
        batch.append(x)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


# push/pull's TLS options: the redis-py keyword each sets (rediss:// URLs only).
TLS_OPTIONS = (
    ("tls_ca_cert", "ssl_ca_certs"),
    ("tls_cert", "ssl_certfile"),
    ("tls_key", "ssl_keyfile"),
)


def _client(args):
    try:
        import redis
    except ImportError:
        raise FilterError("the redis package is needed for push and pull: pip install redis")
    kwargs = {kw: getattr(args, opt) for opt, kw in TLS_OPTIONS if getattr(args, opt) is not None}
    return redis.Redis.from_url(args.url, **kwargs)


def _progress(args) -> Optional[bool]:
    return False if args.no_progress else None


def cmd_build(args) -> int:
    if args.kind == "bloom":
        f = BloomFilter(
            args.capacity if args.capacity is not None else 100,
            args.error if args.error is not None else 0.01,
            expansion=args.expansion,
            nonscaling=args.nonscaling,
            layout=args.layout,
            tightening=args.tightening,
            seed=args.seed.encode() if args.seed is not None else None,
            validate_scale_to=args.validate_scale_to,
            window=args.window,
        )
    else:
        f = CuckooFilter(
            args.capacity if args.capacity is not None else 1024,
            bucket_size=args.bucket_size,
            max_iterations=args.max_iterations,
            expansion=args.expansion,
            error_rate=args.error,
            layout=args.layout,
        )
    show = not args.no_progress and sys.stderr.isatty()
    n = 0
    for batch in _input_blocks(args.input):
        f.update(batch)
        n += len(batch)
        if show:
            sys.stderr.write("\rbuild: %d items" % n)
            sys.stderr.flush()
    if show:
        sys.stderr.write("\n")
    save(f, args.output)
    return 0


def cmd_push(args) -> int:
    _push(_client(args), args.key, load(args.file), replace=args.replace, progress=_progress(args))
    return 0


def cmd_pull(args) -> int:
    save(_pull(_client(args), args.key, progress=_progress(args)), args.file)
    return 0


def cmd_info(args) -> int:
    f = load(args.file)
    kind = "BF" if isinstance(f, BloomFilter) else "CF"
    out = sys.stdout
    out.write("Kind: %s\nLayout: %s\n" % (kind, f.layout))
    if kind == "BF":
        out.write("Error rate: %s\n" % f.error_rate)
        if f.window is not None:
            out.write("Window: %s\n" % f.window)
    for k, v in f.info().items():
        out.write("%s: %s\n" % (k, "" if v is None else v))
    return 0


def cmd_query(args) -> int:
    f = load(args.file)
    items = [i.encode() for i in args.item] if args.item else _inputs([])
    all_present = True
    out = sys.stdout.buffer
    for batch in _batches(items):
        found = f.contains_many(batch)
        for item, yes in zip(batch, found):
            all_present &= yes
            if not args.quiet:
                out.write(b"%d\t%s\n" % (yes, item))
    out.flush()
    return 0 if (all_present or not args.quiet) else 1


def cmd_merge(args) -> int:
    filters = [load(p) for p in args.inputs]
    for p, f in zip(args.inputs, filters):
        if not isinstance(f, BloomFilter):
            raise FilterError("%s: only Bloom filters merge (BF.MERGE)" % p)
    merged = filters[0].union(*filters[1:])
    save(merged, args.output)
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ferrobloom",
        description="Build, move and query ferrobloom/RedisBloom filters outside the server.",
    )
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("build", help="build a filter file from items (one per line)")
    b.add_argument("input", nargs="*", help="files of items (default or '-': standard input)")
    b.add_argument("-o", "--output", required=True, help="the filter file to write")
    b.add_argument("-k", "--kind", choices=["bloom", "cuckoo"], default="bloom")
    b.add_argument("-c", "--capacity", type=int, help="BF: default 100; CF: default 1024")
    b.add_argument("-e", "--error", type=float, help="error rate (BF: default 0.01)")
    b.add_argument("--expansion", type=int)
    b.add_argument("--nonscaling", action="store_true", help="BF: a non-scaling filter")
    b.add_argument("--layout", help="BF: classic|blocked|paired|redisbloom; CF: ferrobloom|redisbloom")
    b.add_argument("--tightening", type=float, help="BF: each new link's error ratio (default 0.5)")
    b.add_argument("--seed", help="BF: 32 bytes that seed the filter's hashing")
    b.add_argument("--validate-scale-to", type=int, help="BF: refuse a filter that could never hold this many items")
    b.add_argument("--window", type=float, help="BF: a windowed filter of this many seconds")
    b.add_argument("--bucket-size", type=int, help="CF only")
    b.add_argument("--max-iterations", type=int, help="CF only")
    b.add_argument("--no-progress", action="store_true")
    b.set_defaults(run=cmd_build)

    for name, helptext, fn in (
        ("push", "store a filter file under a key (LOADCHUNK, then RENAME)", cmd_push),
        ("pull", "read a key's filter into a file (SCANDUMP)", cmd_pull),
    ):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("url", help="redis://[user:password@]host:port[/db], rediss://... (TLS) or unix:///path")
        s.add_argument("key")
        s.add_argument("file")
        if name == "push":
            s.add_argument("--replace", action="store_true", help="replace an existing key")
        s.add_argument("--no-progress", action="store_true")
        s.add_argument("--tls-ca-cert", metavar="FILE", help="rediss://: the CA certificates to trust (PEM)")
        s.add_argument("--tls-cert", metavar="FILE", help="rediss://: the client certificate (PEM)")
        s.add_argument("--tls-key", metavar="FILE", help="rediss://: the client certificate's private key (PEM)")
        s.set_defaults(run=fn)

    i = sub.add_parser("info", help="print a filter file's parameters and INFO fields")
    i.add_argument("file")
    i.set_defaults(run=cmd_info)

    q = sub.add_parser("query", help="look items up: prints '1<TAB>item' or '0<TAB>item'")
    q.add_argument("file")
    q.add_argument("item", nargs="*", help="items (default: lines of standard input)")
    q.add_argument("-q", "--quiet", action="store_true", help="print nothing; exit 1 unless all may be present")
    q.set_defaults(run=cmd_query)

    m = sub.add_parser("merge", help="write the union of Bloom filter files (BF.MERGE's rules)")
    m.add_argument("output")
    m.add_argument("inputs", nargs="+")
    m.set_defaults(run=cmd_merge)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if any(getattr(args, opt, None) is not None for opt, _ in TLS_OPTIONS) and not args.url.startswith("rediss://"):
        p.error("--tls-ca-cert, --tls-cert and --tls-key need a rediss:// URL")
    try:
        return args.run(args)
    except (FilterError, FormatError, OSError) as e:
        sys.stderr.write("ferrobloom: %s\n" % e)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # redis errors (connection, authentication, ...)
        if type(e).__module__.split(".")[0] == "redis":
            sys.stderr.write("ferrobloom: %s: %s\n" % (type(e).__name__, e))
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
