"""The garbage collector of a serving broker process (``pubsift.adapters.broker.cli.
serving_collector``): what the start made is frozen and the young generation collected
after ``YOUNG_THRESHOLD`` allocations; checked in a process of its own, since the setting
is the process's."""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = """
import gc, json, weakref
from pubsift.adapters.broker.cli import YOUNG_THRESHOLD, serving_collector
class Cycle:
    pass
gc.disable()  # so that only serving_collector's collection can free the cycle
c = Cycle()
c.me = c
ref = weakref.ref(c)
del c
before = gc.get_threshold()
serving_collector()
enabled = gc.isenabled()  # serving_collector leaves the collector as it was
gc.enable()
print(json.dumps({"before": before, "after": gc.get_threshold(), "young": YOUNG_THRESHOLD,
                  "frozen": gc.get_freeze_count(), "enabled": enabled,
                  "cycle_left": ref() is not None}))
"""


def test_serving_collector_freezes_the_start_and_raises_the_young_threshold() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True
    )
    got = json.loads(out.stdout)
    assert not got["enabled"]
    assert got["after"] == [got["young"], *got["before"][1:]]
    assert got["young"] > got["before"][0]
    assert got["frozen"] > 1000  # the modules the start imported
    assert not got["cycle_left"]  # garbage is collected before the freeze, not kept


CLOCK = """
import asyncio, gc, json, weakref
from pubsift.adapters.broker.cli import collector_clock, serving_collector
class Cycle:
    pass
serving_collector()
gc.set_threshold(10**9, 10**9, 10**9)  # no collection but the clock's
c = Cycle()
c.me = c
ref = weakref.ref(c)
del c
closed = 0
async def main():
    global c, ref, closed
    out = []
    # no close: collected by the period
    clock = asyncio.ensure_future(collector_clock(lambda: closed, 0.2, 0.02))
    await asyncio.sleep(0.01)
    out.append(ref() is not None)
    await asyncio.sleep(0.4)
    out.append(ref() is not None)
    # a close: collected within after_closes, well before the period
    clock.cancel()
    c = Cycle()
    c.me = c
    ref = weakref.ref(c)
    del c
    clock = asyncio.ensure_future(collector_clock(lambda: closed, 100.0, 0.02))
    await asyncio.sleep(0.1)
    out.append(ref() is not None)  # nothing closed: kept
    closed += 1
    await asyncio.sleep(0.1)
    out.append(ref() is not None)
    clock.cancel()
    return out
print(json.dumps(asyncio.run(main())))
"""


def test_the_collector_clock_frees_garbage_in_cycles_that_no_threshold_reaches() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CLOCK], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(out.stdout) == [True, False, True, False]


BROKER = """
import os, sys
import pubsift.adapters.broker.cli as c
def serving_collector():
    print("serving_collector", flush=True)
async def collector_clock(closed, period=c.FULL_COLLECTION_PERIOD):
    print("collector_clock", closed(), period, flush=True)
    os._exit(0)
c.serving_collector, c.collector_clock = serving_collector, collector_clock
from pubsift.cli import main
sys.exit(main(["broker", "--listen", "127.0.0.1:0"]))
"""


def test_pubsift_broker_tunes_its_collector_and_runs_the_clock() -> None:
    out = subprocess.run([sys.executable, "-c", BROKER], capture_output=True, text=True, timeout=60)
    assert out.stdout.split("\n")[:2] == ["serving_collector", "collector_clock 0 60.0"], (
        out.stdout,
        out.stderr[-2000:],
    )
