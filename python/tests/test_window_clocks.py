"""A windowed filter moved between servers whose clocks differ (pulled from one,
pushed to the other). A filter's time is the primary's that wrote it
(docs/windowed.md, "Clock steps"): on a server whose clock is behind the
filter's newest change, time runs on from that change at the server's rate
(nothing refused, everything forgotten within 1.25 W of the server's elapsed
time); on a server whose clock is ahead, the difference is time that passed.
The servers' clocks are moved with FERROBLOOM.CLOCK (the test build's
fault-injection command)."""

import time

import pytest

import conftest
import ferrobloom

W = 2  # seconds
AHEAD_MS = 600_000  # 10 minutes: far more than W
ITEMS = ["item-%d" % i for i in range(300)]
NEW = ["new-%d" % i for i in range(200)]
PROBES = ["never-%d" % i for i in range(2000)]


def set_clock(client, offset_ms):
    assert client.execute_command("FERROBLOOM.CLOCK", offset_ms) == offset_ms


def held(client, items):
    return sum(client.execute_command("BF.MEXISTS", "w", *items))


@pytest.fixture
def pair(module):
    a = conftest.Server(conftest._binary("redis"), module)
    try:
        b = conftest.Server(conftest._binary("redis"), module)
    except Exception:
        a.stop()
        raise
    yield a.client, b.client
    a.stop()
    b.stop()


def copy_window(src, dst):
    """A windowed filter of ITEMS built on `src`, pulled, pushed to `dst`;
    returns the pulled filter."""
    src.execute_command("BF.RESERVE", "w", 0.01, 1000, "WINDOW", W)
    src.execute_command("BF.MADD", "w", *ITEMS)
    f = ferrobloom.pull(src, "w", progress=False)
    ferrobloom.push(dst, "w", f, progress=False)
    return f


def test_to_a_server_whose_clock_is_behind(pair):
    a, b = pair
    set_clock(a, AHEAD_MS)
    f = copy_window(a, b)
    # The copy answers as the original, on its own clock 10 minutes behind.
    assert held(b, ITEMS) == len(ITEMS)
    assert b.execute_command("BF.CARD", "w") == len(ITEMS)
    assert held(b, PROBES) == held(a, PROBES)
    # Writes go on (no refusal for a filter "from the future") and the lead
    # is shown.
    replies = b.execute_command("BF.MADD", "w", *NEW)
    assert all(isinstance(x, int) for x in replies), replies
    assert held(b, NEW) == len(NEW)
    assert "ahead_ms:" in " ".join(x.decode() for x in b.execute_command("BF.DEBUG", "w"))
    # Everything is forgotten within 1.25 W of b's own elapsed time.
    time.sleep(1.25 * W + 0.5)
    assert held(b, ITEMS + NEW) <= 10
    assert b.execute_command("BF.CARD", "w") == 0
    # The pulled filter runs on from its newest change too (a local filter
    # follows the server's clock rule): everything is forgotten by now, and
    # asked as of when it was pulled (a time of this machine's clock), it
    # still holds its items.
    assert sum(f.contains_many(ITEMS)) <= 10
    pulled = time.time() - 1.25 * W - 0.5
    assert all(f.contains_many(ITEMS, as_of=pulled))


def test_to_a_server_whose_clock_is_ahead(pair):
    a, b = pair
    set_clock(b, AHEAD_MS)
    copy_window(a, b)
    # On b the items are 10 minutes old: more than W, so nothing is live.
    assert held(b, ITEMS) <= 5
    assert b.execute_command("BF.CARD", "w") == 0
    # The filter works on: new items live for W of b's time.
    b.execute_command("BF.MADD", "w", *NEW)
    assert held(b, NEW) == len(NEW)
    assert b.execute_command("BF.CARD", "w") == len(NEW)


def test_a_local_filter_dated_ahead_takes_items_as_the_server(pair):
    """A 1 s, capacity-100 NONSCALING windowed filter whose newest change is 10
    minutes ahead of this machine's clock (pulled from a server whose clock
    is ahead) takes items as a server whose clock is behind it does: its
    time runs on from that change. (Pinned to it, the local filter took one
    generation's worth and refused the rest.)"""
    a, b = pair
    set_clock(a, AHEAD_MS)
    a.execute_command("BF.RESERVE", "w", 0.01, 100, "NONSCALING", "WINDOW", 1)
    a.execute_command("BF.MADD", "w", *ITEMS[:50])
    f = ferrobloom.pull(a, "w", progress=False)
    ferrobloom.push(b, "w", f, progress=False)
    took_local = took_server = 0
    # 800 items at the capacity's rate: 20 every 200 ms for 8 s.
    for step in range(40):
        batch = ["late-%d-%d" % (step, i) for i in range(20)]
        took_local += sum(1 for x in f.add_many(batch) if not isinstance(x, Exception))
        reply = b.execute_command("BF.MADD", "w", *batch)
        took_server += sum(1 for x in reply if not isinstance(x, Exception))
        time.sleep(0.2)
    assert took_server >= 700, took_server
    assert took_local >= took_server - 60, (took_local, took_server)
