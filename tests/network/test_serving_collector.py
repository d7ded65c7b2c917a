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
