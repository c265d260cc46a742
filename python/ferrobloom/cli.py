"""The ``ferrobloom`` command-line tool: build a filter file from items, push
it into a server, pull one out, and inspect, query and merge files.

Items are lines, by the package's one rule (``ferrobloom.lines``: the bytes
of each line without its ``\\n`` or ``\\r\\n``), from files or standard input.
Exit status: 0 on success, 1 when an operation fails (the reason on stderr,
prefixed ``ferrobloom:``), 2 for a usage error (also prefixed
``ferrobloom:``); ``query -q`` exits 0 when every item may be present and 1
otherwise.
"""

import argparse
import os
import sys
from typing import Iterable, Iterator, List, Optional

from . import BloomFilter, CuckooFilter, FilterError, FormatError, __version__, load, save
from . import pull as _pull
from . import push as _push
from ._lines import count_lines, line_blocks

BATCH = 65536

# A cuckoo filter built without -c from files is sized for 5/4 of their items:
# its buckets take 84% (bucket size 2) to 95% (4) of their slots before an
# insert fails and the filter must grow.
CUCKOO_HEADROOM = 1.25

# Above this, BF.RESERVE creates a filter of this error rate (docs/compatibility.md).
MAX_ERROR_RATE = 0.25


class UsageError(Exception):
    """A usage error: ``ferrobloom: <text>`` on stderr, exit status 2."""


def _input_blocks(paths: List[str]) -> Iterator[List[bytes]]:
    if not paths:
        paths = ["-"]
    for p in paths:
        if p == "-":
            yield from line_blocks(sys.stdin.buffer)
        else:
            with open(p, "rb") as f:
                yield from line_blocks(f)


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
    for opt, _ in TLS_OPTIONS:
        path = getattr(args, opt)
        if path is not None and not os.path.isfile(path):
            raise UsageError("--%s %s: no such file" % (opt.replace("_", "-"), path))
    kwargs = {kw: getattr(args, opt) for opt, kw in TLS_OPTIONS if getattr(args, opt) is not None}
    try:
        return redis.Redis.from_url(args.url, **kwargs)
    except ValueError as e:
        raise UsageError("bad URL %r: %s" % (args.url, e))


def _progress(args) -> Optional[bool]:
    return False if args.no_progress else None


def _check_output(path: str) -> None:
    """Fails before any work when ``path`` cannot be written (naming it)."""
    d = os.path.dirname(os.path.abspath(path)) or "."
    if not os.path.isdir(d):
        raise FilterError("cannot write %s: no such directory %s" % (path, d))
    if not os.access(d, os.W_OK):
        raise FilterError("cannot write %s: the directory %s is not writable" % (path, d))
    if os.path.isdir(path):
        raise FilterError("cannot write %s: it is a directory" % path)


def cmd_build(args) -> int:
    bloom = args.kind == "bloom"
    if bloom and (args.bucket_size is not None or args.max_iterations is not None):
        raise UsageError("--bucket-size and --max-iterations are options of cuckoo filters (-k cuckoo)")
    bloom_only = [
        opt for opt, given in (
            ("--nonscaling", args.nonscaling),
            ("--tightening", args.tightening is not None),
            ("--seed", args.seed is not None),
            ("--validate-scale-to", args.validate_scale_to is not None),
            ("--window", args.window is not None),
        ) if given
    ]
    if not bloom and bloom_only:
        raise UsageError("%s: options of Bloom filters, not of cuckoo filters" % ", ".join(bloom_only))
    _check_output(args.output)
    capacity = args.capacity
    if capacity is None:
        # Sized from the input files (not standard input, which is read once).
        n = count_lines(args.input or ["-"])
        if n is not None:
            capacity = max(1, n if bloom else -(-n * 5 // 4))
    if bloom:
        error = args.error if args.error is not None else 0.01
        if MAX_ERROR_RATE < error < 1:
            sys.stderr.write(
                "ferrobloom: note: an error rate above %s makes a filter of %s, as BF.RESERVE does\n"
                % (MAX_ERROR_RATE, MAX_ERROR_RATE)
            )
        f = BloomFilter(
            capacity if capacity is not None else 100,
            error,
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
            capacity if capacity is not None else 1024,
            args.error,
            bucket_size=args.bucket_size,
            max_iterations=args.max_iterations,
            expansion=args.expansion,
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
    if args.force and not args.replace:
        raise UsageError("--force needs --replace")
    client = _client(args)
    _push(client, args.key, load(args.file), replace=args.replace, force=args.force, progress=_progress(args))
    return 0


def cmd_pull(args) -> int:
    _check_output(args.file)
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
    p.add_argument("--version", action="version", version="ferrobloom %s" % __version__)
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser(
        "build",
        help="build a filter file from items (one per line)",
        description="Without -c the filter is sized for the input files' lines (a cuckoo filter "
        "for 5/4 of them); from standard input, BF.RESERVE's and CF.RESERVE's defaults (100, 1024).",
    )
    b.add_argument("input", nargs="*", help="files of items (default or '-': standard input)")
    b.add_argument("-o", "--output", required=True, help="the filter file to write")
    b.add_argument("-k", "--kind", choices=["bloom", "cuckoo"], default="bloom")
    b.add_argument("-c", "--capacity", type=int, help="default: the input files' lines (standard input: BF 100, CF 1024)")
    b.add_argument("-e", "--error", type=float, help="error rate (BF: default 0.01; above 0.25 makes a 0.25 filter)")
    b.add_argument("--expansion", type=int)
    b.add_argument("--nonscaling", action="store_true", help="BF only: a non-scaling filter")
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
            s.add_argument("--replace", action="store_true", help="replace an existing filter of the same kind")
            s.add_argument("--force", action="store_true", help="with --replace: replace a key of any type")
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
    try:
        if any(getattr(args, opt, None) is not None for opt, _ in TLS_OPTIONS) and not args.url.startswith("rediss://"):
            raise UsageError("--tls-ca-cert, --tls-cert and --tls-key need a rediss:// URL")
        return args.run(args)
    except UsageError as e:
        sys.stderr.write("ferrobloom: %s\n" % e)
        return 2
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
