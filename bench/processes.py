"""What the benchmarks that run processes on loopback share (bench/network.py,
bench/brokers.py): CPU time of this process and of another one, free ports, and a
client connected while its broker is still starting."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
import socket
import time
from pathlib import Path
from typing import Any


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process."""
    t = os.times()
    return t.user + t.system


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system, all threads, those ended included) of a process: its
    CPU-time clock (``clock_getcpuclockid``, nanoseconds), else /proc/PID/stat in clock
    ticks (10 ms: 0.2 µs per publication over 50,000); 0 where there is no such process."""
    clock, ts = ctypes.c_int(), _Timespec()
    try:
        if (
            _LIBC.clock_getcpuclockid(pid, ctypes.byref(clock)) == 0
            and _LIBC.clock_gettime(clock, ctypes.byref(ts)) == 0
        ):
            return ts.tv_sec + ts.tv_nsec / 1e9
    except AttributeError:  # a C library without the call
        pass
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def free_ports(n: int) -> list[int]:
    """``n`` ports the OS hands out now (closed again at once: the brokers bind them a
    moment later, so that they all start together)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


async def connected(client: Any, timeout: float = 60.0) -> Any:
    """A pubsift ``client`` connected, retrying while its broker is still starting."""
    from pubsift.adapters.broker.client import BrokerUnavailable

    end = time.monotonic() + timeout
    while True:
        try:
            await client.connect()
            return client
        except BrokerUnavailable:
            if time.monotonic() > end:
                raise
            await asyncio.sleep(0.2)
