"""``pubsift demo network`` (README.md, "Routing through a network of brokers") as a user runs it: a subprocess that ends on its
own within a bounded time, every subscriber of every model received something, and no
process it started survives it, also when it is interrupted (SIGINT, as Ctrl-C)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.slow

CMD = [sys.executable, "-m", "pubsift.cli", "demo", "network"]
ENV = {**os.environ, "COLUMNS": "200"}


def pids(output: str) -> list[int]:
    return [int(p) for p in re.findall(r"^started \S+ \(pid (\d+)\)$", output, re.M)]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_the_network_demo_runs_to_completion_and_leaves_no_process():
    proc = subprocess.Popen(CMD + ["--duration", "2"], stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, out
    started = pids(out)
    assert len(started) == 7, out  # 4 brokers, 3 publishers
    assert not [p for p in started if alive(p)], out
    counts = dict(re.findall(r"^│ (\S+)\s+│ b\d\s+│ \w+\s+│\s+(\d+) │$", out, re.M))
    assert len(counts) == 8, out
    assert all(int(n) > 0 for n in counts.values()), counts
    assert "published live" in out  # the item added to a feed while the demo ran
    assert "7 of 7 processes stopped, all exited 0" in out


def test_an_interrupted_demo_stops_what_it_started():
    proc = subprocess.Popen(
        CMD + ["--duration", "30"], stdout=subprocess.PIPE, text=True, env=ENV, bufsize=1
    )
    lines: list[str] = []
    try:
        end = time.monotonic() + 60
        assert proc.stdout is not None
        while not any(ln.startswith("started b3 ") for ln in lines):  # brokers starting
            assert time.monotonic() < end and proc.poll() is None, "".join(lines)
            lines.append(proc.stdout.readline())
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    out = "".join(lines) + rest
    assert proc.returncode == 130, out
    assert "interrupted: shutting down" in out
    started = pids(out)
    assert len(started) >= 2, out
    assert f"{len(started)} of {len(started)} processes stopped" in out
    assert not [p for p in started if alive(p)], out
