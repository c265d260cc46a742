"""No Python code runs while a filter's lock is held (python/src/shared.rs):
items whose encoding runs Python code (an ``int`` subclass's ``__repr__``,
as ``enum.IntEnum``'s) and that use the filter themselves, and threads that
share a filter while such items are encoded, never freeze the interpreter.

Each case runs in a child interpreter with a timeout, so a deadlock fails
the test (with the child's stack dump, ``faulthandler``) instead of hanging
the run."""

import subprocess
import sys
import textwrap

import pytest

TIMEOUT = 120

PRELUDE = textwrap.dedent(
    """
    import enum, faulthandler, sys, threading
    import ferrobloom
    # A deadlock dumps every thread's stack and exits before the parent's timeout.
    faulthandler.dump_traceback_later(%d, exit=True)

    class Color(enum.IntEnum):
        RED = 1
        GREEN = 2

    def bloom():
        return ferrobloom.BloomFilter(1000, 0.01)

    def cuckoo(layout=None):
        return ferrobloom.CuckooFilter(1000, layout=layout)
    """
    % (TIMEOUT - 30)
)


def run(body: str) -> str:
    """Runs ``body`` after PRELUDE in a child interpreter; returns its stdout."""
    p = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert p.returncode == 0, "child failed (exit %d):\n%s\n%s" % (p.returncode, p.stdout, p.stderr)
    return p.stdout


# Every per-item and batch method that takes an item, per class: (call, expected).
BLOOM_CALLS = [
    ("f.add(x)", "False"),
    ("f.exists(x)", "True"),
    ("x in f", "True"),
    ("f.add_many([x, 'other'])", "[False, True]"),
    ("f.update([x])", "None"),
    ("f.contains_many([x, 'never'])", "[True, False]"),
]
CUCKOO_CALLS = [
    ("f.add(x)", "True"),
    ("f.add_nx(x)", "False"),
    ("f.exists(x)", "True"),
    ("x in f", "True"),
    ("f.count(x)", "2"),
    ("f.insert([x])", "[1]"),
    ("f.update([x])", "None"),
    ("f.contains_many([x, 'never'])", "[True, False]"),
    ("f.delete(x)", "True"),
]


@pytest.mark.parametrize(
    "make,calls",
    [("bloom()", BLOOM_CALLS), ("cuckoo()", CUCKOO_CALLS), ("cuckoo('redisbloom')", CUCKOO_CALLS)],
    ids=["bloom", "cuckoo", "cuckoo-redisbloom"],
)
def test_an_item_whose_repr_uses_the_filter(make, calls):
    """An int subclass whose ``__repr__`` (which encoding calls, as redis-py's
    does) looks the filter up, asks its length and info and adds to it: every
    method that takes an item finishes, with the answers of the item's bytes."""
    out = run(
        """
        f = %s

        class Nosy(int):
            def __repr__(self):
                # Every kind of call on the very filter being asked.
                len(f); f.info(); ("probe" in f); f.add("from-repr")
                return "nosy-%%d" %% int(self)

        x = Nosy(7)
        f.add(x)  # the item b"nosy-7" (added once before the calls)
        for call in %r:
            print(repr(eval(call)))
        assert b"nosy-7" in f and "from-repr" in f
        """
        % (make, [c for c, _ in calls])
    )
    assert out.split("\n")[:-1] == [want for _, want in calls]


@pytest.mark.parametrize("kind", ["bloom", "cuckoo"])
def test_threads_share_a_filter_while_intenum_items_are_encoded(kind):
    """One thread looks ``IntEnum`` members up (each encoding runs Python
    code that may hand the GIL to the other thread), another asks ``len``,
    ``info`` and adds plain items, both on one filter: neither waits for the
    other forever."""
    out = run(
        """
        f = %s()
        f.add(Color.RED)
        # Adds that do not fill a cuckoo filter with copies.
        add = getattr(f, "add_nx", f.add)
        stop = threading.Event()
        errors = []

        def lookups():
            try:
                for i in range(20000):
                    assert f.exists(Color.RED) and (Color.RED in f)
                    add(Color.GREEN)
                    f.contains_many([Color.RED, Color.GREEN])
                    if i %% 500 == 0:
                        sys.setswitchinterval(1e-6)  # hand the GIL over as often as possible
            except BaseException as e:
                errors.append(e)
            finally:
                stop.set()

        def others():
            i = 0
            try:
                while not stop.is_set():
                    len(f); f.info(); add("plain-%%d" %% (i %% 50)); i += 1
            except BaseException as e:
                errors.append(e)

        ts = [threading.Thread(target=lookups), threading.Thread(target=others)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors, errors
        print("done", Color.RED in f, Color.GREEN in f)
        """
        % kind
    )
    assert out.strip() == "done True True"
