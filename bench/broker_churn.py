"""A broker process under connection churn, with its serving collector
(``pubsift.adapters.broker.cli.serving_collector`` and ``collector_clock``) and with
CPython's own: resident memory and broker CPU per connection, the two one after the other
on the same load.

    .venv/bin/python bench/broker_churn.py [--seconds 60] [--pairs 5]

Each round connects ``--pairs`` pairs at once to a ``pubsift broker`` process on
127.0.0.1: a subscriber (``x >= 0``) and a publisher of 200 events of about 210 bytes
(``publish_many``), waits until the subscriber has them all (5 s at most), and closes
both; rounds follow each other for ``--seconds``. The broker's resident size (VmRSS) is
sampled every 10 s; its CPU (utime + stime) is read at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pubsift.adapters.broker.client import AsyncClient

#: the broker, with CPython's collector where asked (the serving collector replaced)
WRAP = """
import asyncio, sys
import pubsift.adapters.broker.cli as c
if sys.argv[1] == "cpython":
    c.serving_collector = lambda: None
    async def clock(closed):
        await asyncio.Event().wait()
    c.collector_clock = clock
from pubsift.cli import main
sys.exit(main(["broker", "--listen", "127.0.0.1:0", "--port-file", sys.argv[2]]))
"""


def rss_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024
    return 0


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def pair(url: str, i: int) -> None:
    got: list[object] = []
    sub = AsyncClient(url, id=f"s{i}")
    await sub.connect()
    await sub.subscribe("records", "x >= 0", got.append, confirm=True)
    pub = AsyncClient(url, id=f"p{i}")
    await pub.connect()
    await pub.publish_many("records", [{"x": j, "pad": "y" * 200} for j in range(200)])
    end = time.monotonic() + 5
    while len(got) < 200 and time.monotonic() < end:
        await asyncio.sleep(0.01)
    await pub.close()
    await sub.close()


def run(collector: str, seconds: float, pairs: int) -> dict[str, float]:
    port_file = Path(tempfile.mkdtemp()) / "port"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRAP, collector, str(port_file)], stderr=subprocess.DEVNULL
    )
    try:
        end = time.monotonic() + 30
        while not port_file.exists() and time.monotonic() < end:
            time.sleep(0.05)
        url = f"pubsift://127.0.0.1:{int(port_file.read_text())}"

        async def churn() -> int:
            t0, n, last = time.monotonic(), 0, 0.0
            while time.monotonic() - t0 < seconds:
                await asyncio.gather(*(pair(url, n + k) for k in range(pairs)))
                n += pairs
                if time.monotonic() - last >= 10:
                    last = time.monotonic()
                    print(
                        f"  {collector:8s} {last - t0:4.0f} s  {2 * n:6,} connections  "
                        f"{rss_mb(proc.pid)} MB",
                        flush=True,
                    )
            return 2 * n

        n = asyncio.run(churn())
        return {"connections": n, "rss_mb": rss_mb(proc.pid), "cpu_us": cpu_s(proc.pid) / n * 1e6}
    finally:
        proc.kill()
        proc.wait(10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--pairs", type=int, default=5)
    args = ap.parse_args()
    print(
        f"bench/broker_churn.py: {args.seconds:g} s each, {args.pairs} pairs at a time; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    got = {c: run(c, args.seconds, args.pairs) for c in ("pubsift", "cpython")}
    for c, r in got.items():
        print(
            f"{c:8s} collector: {r['connections']:7,.0f} connections, {r['rss_mb']:4.0f} MB "
            f"resident at the end, broker CPU {r['cpu_us']:,.0f} µs per connection"
        )
    p, q = got["pubsift"], got["cpython"]
    print(
        f"pubsift / cpython: resident {p['rss_mb'] / q['rss_mb']:.2f}×, "
        f"CPU per connection {p['cpu_us'] / q['cpu_us']:.2f}×"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
