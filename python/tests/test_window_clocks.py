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
    # The pulled filter, asked as of its newest change, still holds its items.
    newest = time.time() + AHEAD_MS / 1000 - 1.25 * W - 0.5
    assert all(f.contains_many(ITEMS, as_of=newest))


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
