"""What the readers refuse and what no input does: a state no BF.RESERVE or
CF.RESERVE creates (a link whose capacity its bits cannot hold, a capacity
above 2^30, an expansion above 32768) is a FormatError, never a filter that
panics later; a file object that lies, or memory that runs out, raises
FormatError or MemoryError, never PanicException; a pull's SCANDUMP walk is
bounded by its header; a filter's bits are lazily zeroed memory."""

import io
import os
import struct
import subprocess
import sys
import textwrap

import pytest

import ferrobloom
from ferrobloom import BloomFilter, CuckooFilter, FormatError
from ferrobloom._ferrobloom import walk_budget
from ferrobloom._server import _walk

# A windowed header's fixed part (48 bytes), its oldest generation's index and
# length (12), that generation's plain header (24): its first link record.
FIRST_GEN_LINK = 48 + 12 + 24
# A plain header's first link record.
FIRST_LINK = 24


def replies(f):
    out, it = [], 0
    while True:
        nxt, data = f.scandump(it)
        if nxt == 0:
            return out
        out.append((nxt, data))
        it = nxt


def patched(chunks, at, fmt, value):
    header = bytearray(chunks[0][1])
    struct.pack_into(fmt, header, at, value)
    return [(1, bytes(header))] + chunks[1:]


def grown_window():
    f = BloomFilter(100, 0.01, window=1)
    f.update("item-%d" % i for i in range(60))
    return replies(f)


def test_a_link_that_claims_more_than_its_bits_is_refused():
    chunks = grown_window()
    assert struct.unpack_from("<Q", chunks[0][1], FIRST_GEN_LINK)[0] == 25
    lie = patched(chunks, FIRST_GEN_LINK, "<Q", (1 << 49) + 25)
    with pytest.raises(FormatError, match="link capacity above what its bits hold"):
        BloomFilter.from_chunks(lie)
    # The true chunks load and take items.
    g = BloomFilter.from_chunks(chunks)
    g.update("new-%d" % i for i in range(500))


def test_what_reserve_refuses_is_refused_with_its_text():
    # A windowed filter of capacity 2^30 + 1 (BF.RESERVE's bound is 2^30).
    chunks = replies(BloomFilter(100, 0.01, window=1))
    with pytest.raises(FormatError, match=r"capacity should be at most 1073741824"):
        BloomFilter.from_chunks(patched(chunks, 16, "<Q", (1 << 30) + 1))
    BloomFilter.from_chunks(patched(chunks, 16, "<Q", 1 << 30))
    with pytest.raises(FormatError, match=r"expansion should be at most 32768"):
        BloomFilter.from_chunks(patched(chunks, 32, "<I", 32769))
    # A plain chain's expansion.
    chunks = replies(BloomFilter(100, 0.01))
    with pytest.raises(FormatError, match=r"expansion should be at most 32768"):
        BloomFilter.from_chunks(patched(chunks, 16, "<I", 32769))
    # A cuckoo filter whose first table has more buckets than a capacity of
    # 2^30 gives (bucket size 2: 2^29).
    chunks = replies(CuckooFilter(1000))
    with pytest.raises(FormatError, match=r"Capacity must be at most 1073741824"):
        CuckooFilter.from_chunks(patched(chunks, 24, "<Q", 1 << 30))


class LyingFile(io.RawIOBase):
    """A binary file whose tell() or seek() answers what no file does."""

    def __init__(self, data, tell=None, seek=None):
        self.inner = io.BytesIO(data)
        self.fake_tell, self.fake_seek = tell, seek

    def readable(self):
        return True

    def seekable(self):
        return True

    def read(self, n=-1):
        return self.inner.read(n)

    def tell(self):
        return self.inner.tell() if self.fake_tell is None else self.fake_tell

    def seek(self, pos, whence=0):
        r = self.inner.seek(pos, whence)
        return r if self.fake_seek is None else self.fake_seek


@pytest.mark.parametrize(
    "tell,seek", [(-1, None), (1 << 70, None), ("0", None), (None, -5), (None, 1 << 64)]
)
def test_a_file_object_whose_position_lies_is_a_format_error(tell, seek):
    data = BloomFilter(100, 0.01).to_bytes()
    with pytest.raises(FormatError, match="not a byte offset"):
        ferrobloom.load(LyingFile(data, tell=tell, seek=seek))


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_large_filter_costs_memory_as_it_is_written():
    before = rss()
    f = BloomFilter(2**30, 0.01)
    assert f.info()["Size"] > 1_400_000_000
    grown = rss() - before
    # Zeroed pages the kernel maps when first written: the filter's 1.4 GB
    # are not resident (they were, written by the allocator, before).
    assert grown < 64 << 20, grown
    f.update("item-%d" % i for i in range(1000))
    assert all(f.contains_many("item-%d" % i for i in range(1000)))
    del f


def test_out_of_memory_is_memory_error():
    # A filter of 120 MB, then an address-space limit the file's bytes do not
    # fit in (once: the core's buffer; twice: the core's buffer, then the
    # Python bytes object), in a child process.
    script = textwrap.dedent(
        """
        import resource, ferrobloom
        f = ferrobloom.BloomFilter(100_000_000, 0.01, nonscaling=True)
        f.update(str(i) for i in range(100_000))
        size = f.info()["Size"]
        with open("/proc/self/statm") as s:
            vm = int(s.read().split()[0]) * 4096
        for room in (size // 2, size + size // 2):
            resource.setrlimit(resource.RLIMIT_AS, (vm + room, resource.RLIM_INFINITY))
            try:
                f.to_bytes()
                print("written")
            except MemoryError:
                print("MemoryError")
            except BaseException as e:
                print(type(e).__name__)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["MemoryError", "MemoryError"], out.stdout + out.stderr


def hostile(replies_after_header, header):
    """A SCANDUMP step function: the header for 0, then what `replies_after_header(it)` says."""

    def step(it):
        return (1, header) if it == 0 else replies_after_header(it)

    return step


class Bar:
    def __init__(self):
        self.n = 0

    def update(self, n):
        self.n += n


@pytest.mark.parametrize("kind", ["BF", "CF"])
def test_a_walk_is_bounded_by_its_header(kind):
    f = BloomFilter(100_000, 0.01) if kind == "BF" else CuckooFilter(100_000)
    true = replies(f)
    header = true[0][1]
    chunks, bytes_ = walk_budget(kind, header)
    assert bytes_ == sum(len(d) for _, d in true[1:])
    # A true walk: every reply, in order.
    it = iter(true[1:] + [(0, b"")])
    assert _walk(hostile(lambda _: next(it), header), kind, Bar()) == true
    # Iterators that cycle with no data, that repeat a chunk, or new ones with
    # 1 MiB each: stopped once past the header, after at most as many steps.
    mib = b"x" * (1 << 20)
    for answer in (
        lambda it: (it, None),
        lambda it: (2 + it % 3, b""),
        lambda it: (7, true[1][1]),
        lambda it: (it + len(mib), mib),
    ):
        calls = []

        def step(it, answer=answer):
            calls.append(it)
            return (1, header) if it == 0 else answer(it)

        with pytest.raises(ferrobloom.FilterError, match="went past what its header describes"):
            _walk(step, kind, Bar())
        assert len(calls) <= chunks + 2


def test_a_walk_of_a_key_replaced_during_it_stops(r):
    r.execute_command("BF.RESERVE", "k", 0.01, 1000)
    replaced = []

    def step(it):
        if it == 1 and not replaced:
            # After the header: the key now holds a filter 12 MB large.
            r.delete("k")
            r.execute_command("BF.RESERVE", "k", 0.01, 10_000_000)
            replaced.append(it)
        return r.execute_command("BF.SCANDUMP", "k", it)

    with pytest.raises(ferrobloom.FilterError, match="went past what its header describes"):
        _walk(step, "BF", Bar())
    # pull walks again and gets the filter the key holds.
    f = ferrobloom.pull(r, "k", progress=False)
    assert f.capacity == 10_000_000
