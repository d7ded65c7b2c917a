"""The records hooks under the mutation fuzzer of ``hostile_fuzz.py`` (docs/records-syntax.md §4), each run
in a subprocess with a memory limit (2 GB address space) and a timeout: no exception but a
``PubsiftError``, no wrong index answer or merger, exact round trips."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from depth import DEPTH, deep

SCRIPT = Path(__file__).with_name("hostile_fuzz.py")


def run(seed: int, iterations: int, timeout: int) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(seed), str(iterations)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert done.stdout.strip().endswith(f"DONE {seed} {iterations} 0")


def test_hostile_fuzz_smoke():
    run(seed=1, iterations=30, timeout=120)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3, 4])
def test_hostile_fuzz_deep(seed):
    run(seed=seed, iterations=deep(400), timeout=1200 * max(1, round(DEPTH)))
