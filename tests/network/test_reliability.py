"""Faults on a real network (docs/protocol.md §8): a tree of six ``pubsift broker`` processes on
127.0.0.1 and 42 asyncio clients (36 subscribers, 6 publishers) in the test process, with
short leases (π = 1.5 s, ρ = 0.4 s).

* a middle broker is killed with SIGKILL during a stream of publications and restarted on
  its port two seconds later (covering routing);
* a link is cut by an in-test TCP proxy (every connection dropped, new ones refused) for
  longer than π, then restored (merging routing).

The whole trace (publications, notifications) is checked with the delivery oracle
(:mod:`pubsift.core.oracle`): no duplicate, no notification that matches no subscription,
nothing out of order per publisher, and every publication *missing* somewhere was made in
the outage window, from the fault (less the time a publication is in flight) to the
repair plus the re-dial backoff plus Mühl's stabilization time ΔT = δmax + d(δmax − δmin)
+ π (Mühl, "Large-Scale Content-Based Publish/Subscribe Systems", §3.7.5, (3.22)). The
publications made after that are checked exactly: each reaches exactly the clients with a
matching subscription. What was lost in the outage is printed per subscriber.

Ports are chosen by the OS, every wait is bounded, every process is killed in a finalizer.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pubsift.adapters.broker.client import AsyncClient, Notification
from pubsift.core import load_model, oracle
from pubsift.core.leasing import Leasing
from pubsift.core.model import FilterModel
from pubsift.core.network import TraceOp

pytestmark = pytest.mark.slow

PI, RHO = 1.5, 0.4  # lease period and refresh period (Mühl §3.7.3)
MAX_DELAY = 0.1  # δmax − δmin assumed per link (δmin = 0)
DIAMETER = 4  # b3 - b1 - b0 - b2 - b5
BACKOFF_MAX = 0.5  # a repaired link is re-dialled within this
DELTA_T = Leasing(PI, RHO).stabilization_time(DIAMETER, 0.0, MAX_DELAY)  # (3.22): 2.0 s
IN_FLIGHT = DIAMETER * MAX_DELAY  # a publication made this long before a fault may be lost

CONFIG = f"""
[broker]
models = ["records"]
strategy = "{{strategy}}"
[lease]
period = {PI}
refresh = {RHO}
max_delay = {MAX_DELAY}
diameter = {DIAMETER}
[links]
backoff_initial = 0.05
backoff_max = {BACKOFF_MAX}
"""

#: broker -> the neighbour it dials; started level by level
TREE = {"b0": None, "b1": "b0", "b2": "b0", "b3": "b1", "b4": "b1", "b5": "b2"}
LEVELS = (("b0",), ("b1", "b2"), ("b3", "b4", "b5"))
SYMBOLS = tuple(f"S{i}" for i in range(8))
PUB_RATE = 15.0  # publications per second per publisher (6 publishers)


async def until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)


class Brokers:
    """``pubsift broker`` processes by id, each with its port and log file."""

    def __init__(self, tmp: Path, strategy: str) -> None:
        self.tmp = tmp
        self.config = tmp / "broker.toml"
        self.config.write_text(CONFIG.format(strategy=strategy))
        self.procs: dict[str, subprocess.Popen] = {}
        self.ports: dict[str, int] = {}

    def launch(self, bid: str, dial: int | None, port: int = 0) -> Path:
        pf = self.tmp / f"{bid}.port"
        pf.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "pubsift.cli", "broker", "--config", str(self.config)]
        cmd += ["--id", bid, "--listen", f"127.0.0.1:{port}", "--port-file", str(pf)]
        if dial is not None:
            cmd += ["--neighbour", f"127.0.0.1:{dial}"]
        with open(self.tmp / f"{bid}.log", "a") as log:
            self.procs[bid] = subprocess.Popen(cmd, stdout=log, stderr=log)
        return pf

    async def start(
        self, dials: dict[str, int | None], ports: dict[str, int] | None = None
    ) -> None:
        """Start brokers (id -> port to dial) at once; wait until each listens."""
        files = {b: self.launch(b, d, (ports or {}).get(b, 0)) for b, d in dials.items()}
        for bid, pf in files.items():
            await until(
                lambda: pf.exists() or self.procs[bid].poll() is not None,  # noqa: B023
                30,
                f"broker {bid} to listen",
            )
            assert self.procs[bid].poll() is None, self.log(bid)
            self.ports[bid] = int(pf.read_text())

    def log(self, bid: str) -> str:
        return (self.tmp / f"{bid}.log").read_text()

    def url(self, bid: str) -> str:
        return f"pubsift://127.0.0.1:{self.ports[bid]}"

    def kill(self, bid: str) -> None:
        p = self.procs[bid]
        p.send_signal(signal.SIGKILL)
        p.wait(10)

    def close(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        for p in self.procs.values():
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)


class Proxy:
    """A TCP proxy on 127.0.0.1 that forwards each connection to ``target`` and can cut:
    drop every connection (reset) and refuse new ones (accepted and closed at once) until
    :meth:`restore`."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = 0
        self.cut_off = False
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.connections = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut_off:
            writer.close()
            return
        try:
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return
        self.connections += 1
        self._open |= {writer, up_w}
        pipes = [
            asyncio.ensure_future(self._pipe(reader, up_w)),
            asyncio.ensure_future(self._pipe(up_r, writer)),
        ]
        self._tasks.update(pipes)
        await asyncio.gather(*pipes, return_exceptions=True)
        self._tasks.difference_update(pipes)
        self._open -= {writer, up_w}

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(1 << 16):
                dst.write(data)
                await dst.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            dst.close()

    def cut(self) -> None:
        self.cut_off = True
        for w in list(self._open):
            w.transport.abort()  # RST on both sides: each broker sees its link fail

    def restore(self) -> None:
        self.cut_off = False

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


@dataclass
class Run:
    """The trace of one run and what the test saw on the way."""

    models: dict[str, FilterModel]
    t0: float = field(default_factory=time.monotonic)
    trace: list[TraceOp] = field(default_factory=list)
    times: dict[tuple[str, int], float] = field(default_factory=dict)
    clients: list[AsyncClient] = field(default_factory=list)
    subscribers: list[str] = field(default_factory=list)

    def now(self) -> float:
        return time.monotonic() - self.t0


def workload(rng: random.Random) -> list[str]:
    """1-2 filters of a subscriber: symbols, price ranges, and filters that cover others."""
    s = rng.choice(SYMBOLS)
    lo = rng.randrange(0, 80, 10)
    forms = [
        f'symbol = "{s}"',
        f'symbol = "{s}" and price > {lo}',
        f'symbol in {{"{s}", "{rng.choice(SYMBOLS)}"}} and price in [{lo}, {lo + 20}]',
        f"price > {90 + rng.randrange(9)}",
        f'symbol = "{s}" and price < {lo + 5}',
    ]
    return rng.sample(forms, rng.choice((1, 1, 2)))


async def start_tree(brokers: Brokers, proxy_link: str | None) -> Proxy | None:
    """The six brokers; the link of ``proxy_link`` to its parent goes through a proxy."""
    proxy = None
    for level in LEVELS:
        dials: dict[str, int | None] = {}
        for b in level:
            parent = TREE[b]
            if parent is None:
                dials[b] = None
            elif b == proxy_link:
                proxy = Proxy(brokers.ports[parent])
                await proxy.start()
                dials[b] = proxy.port
            else:
                dials[b] = brokers.ports[parent]
        await brokers.start(dials)
    return proxy


async def neighbours(run: Run, brokers: Brokers, bid: str) -> list[str]:
    """The broker's neighbours from its ``stats`` (a fresh probe client)."""
    probe = AsyncClient(brokers.url(bid), id=f"probe-{bid}-{time.monotonic_ns()}")
    await probe.connect()
    try:
        return (await probe.stats())["neighbours"]
    finally:
        await probe.close(unsubscribe=False)


async def tree_up(run: Run, brokers: Brokers, timeout: float) -> None:
    want = {
        b: sorted([p for p in (TREE[b],) if p] + [c for c, p in TREE.items() if p == b])
        for b in TREE
    }
    end = time.monotonic() + timeout
    while True:
        got = {b: await neighbours(run, brokers, b) for b in TREE}
        if got == want:
            return
        if time.monotonic() > end:
            raise AssertionError(f"the tree did not come up: {got}")
        await asyncio.sleep(0.1)


async def clients(run: Run, brokers: Brokers) -> list[AsyncClient]:
    """Six subscribers and one publisher per broker; returns the publishers."""
    rng = random.Random(14)
    records = run.models["records"]
    publishers = []
    for b in TREE:
        for i in range(6):
            cid = f"s-{b}-{i}"
            c = AsyncClient(brokers.url(b), id=cid, backoff=(0.05, BACKOFF_MAX))
            await c.connect()
            run.clients.append(c)
            run.subscribers.append(cid)
            last: list[Notification | None] = [None]

            def got(n: Notification, cid: str = cid, last: list = last) -> None:
                if n is last[0]:  # the same notification for a second matching filter
                    return
                last[0] = n
                run.trace.append(
                    TraceOp(
                        run.now(),
                        "notify",
                        cid,
                        n.model,
                        event=n.event,
                        pub_id=(n.publisher, n.seq),
                    )
                )

            for spec in workload(rng):
                f = records.parse_filter(spec)
                await c.subscribe("records", f, got)
                run.trace.append(TraceOp(run.now(), "sub", cid, "records", f))
        p = AsyncClient(brokers.url(b), id=f"p-{b}", backoff=(0.05, BACKOFF_MAX))
        await p.connect()
        run.clients.append(p)
        publishers.append(p)
    return publishers


async def publish(run: Run, p: AsyncClient, stop: asyncio.Event, seed: int) -> None:
    rng = random.Random(seed)
    records = run.models["records"]
    while not stop.is_set():
        raw = {"symbol": rng.choice(SYMBOLS), "price": round(rng.uniform(0, 100), 2)}
        ev = records.parse_event(raw)
        seq = await p.publish("records", ev)
        t = run.now()
        run.times[(p.id, seq)] = t
        run.trace.append(TraceOp(t, "pub", p.id, "records", event=ev, pub_id=(p.id, seq)))
        await asyncio.sleep(1 / PUB_RATE)


@dataclass
class Outage:
    fault: float  # when the fault began (test clock)
    repair: float  # when it was repaired
    linked: float  # when the repaired broker/link was up again (seen in stats)


def judge(run: Run, outage: Outage, what: str) -> None:
    """Check the trace and print what was lost during the outage."""
    settled = outage.repair + BACKOFF_MAX + DELTA_T
    window = (outage.fault - IN_FLIGHT, settled)
    verdict = oracle.check(run.trace, run.models)
    other = [v for v in verdict.violations if v.kind != "missing"]
    assert not other, f"{len(other)} violations besides losses: {other[:10]}"
    missing = [v for v in verdict.violations if v.kind == "missing"]
    late = [v for v in missing if not window[0] <= run.times[v.pub_id] < window[1]]
    assert not late, (
        f"{len(late)} losses outside the outage window {window[0]:.2f}-{window[1]:.2f} s: "
        + ", ".join(f"{v.pub_id} to {v.client} at {run.times[v.pub_id]:.2f} s" for v in late[:10])
    )
    # exactly the matching subscribers for every publication made after settling
    after = oracle.check(run.trace, run.models, since=settled)
    assert after.ok, str(after)
    assert after.settled >= 100, f"only {after.settled} publications after settling"
    # per publisher: increasing sequence numbers at every subscriber, and nothing dropped by
    # a client as a duplicate or out of order (the network delivered neither)
    seen: dict[tuple[str, str], int] = {}
    for op in run.trace:
        if op.kind == "notify":
            key, seq = (op.client, op.pub_id[0]), op.pub_id[1]
            assert seq > seen.get(key, 0), f"{op.client}: {op.pub_id} out of order or twice"
            seen[key] = seq
    dropped = {c.id: c.duplicates for c in run.clients if c.duplicates}
    assert not dropped, f"duplicates or out-of-order notifications dropped by clients: {dropped}"

    expected: Counter[str] = Counter()
    for op in run.trace:
        if op.kind == "notify":
            expected[op.client] += 1
    lost = Counter(v.client for v in missing)
    for c in lost:
        expected[c] += lost[c]
    in_window = [p for p, t in run.times.items() if window[0] <= t < window[1]]
    t_lost = sorted(run.times[v.pub_id] for v in missing)
    print(
        f"\n{what}: fault at {outage.fault:.2f} s, repaired at {outage.repair:.2f} s, "
        f"link up again at {outage.linked:.2f} s; ΔT = {DELTA_T:g} s, "
        f"window {window[0]:.2f}-{window[1]:.2f} s"
    )
    print(
        f"  {len(run.times)} publications, {len(in_window)} in the window, "
        f"{after.settled} judged exactly after settling; "
        f"{verdict.deliveries} notifications delivered"
    )
    if t_lost:
        print(
            f"  {len(missing)} notifications lost, published from "
            f"{t_lost[0] - outage.fault:+.2f} s after the fault to "
            f"{t_lost[-1] - outage.repair:+.2f} s after the repair "
            f"({t_lost[-1] - outage.linked:+.2f} s after the links were up)"
        )
    by_publisher = Counter(v.pub_id[0] for v in missing)
    print("  lost by publisher: " + ", ".join(f"{p} {n}" for p, n in sorted(by_publisher.items())))
    by_broker: dict[str, list[str]] = defaultdict(list)
    for c in run.subscribers:
        if lost[c]:
            by_broker[c.split("-")[1]].append(f"{c} {lost[c]}/{expected[c]}")
    for b in TREE:
        if by_broker[b]:
            print(f"  lost at {b}: " + ", ".join(by_broker[b]))
    assert missing, f"{what}: the fault lost nothing; it did not cut any path"


def scenario(tmp: Path, strategy: str, fault: str) -> None:
    brokers = Brokers(tmp, strategy)

    async def go() -> None:
        run = Run({"records": load_model("records")})
        proxy = None
        stop = asyncio.Event()
        pubs: list[asyncio.Task[None]] = []
        try:
            proxy = await start_tree(brokers, "b2" if fault == "cut" else None)
            await tree_up(run, brokers, 30)
            publishers = await clients(run, brokers)
            await asyncio.sleep(1.0)  # the subscriptions spread: a few hops on loopback
            run.trace.append(TraceOp(run.now(), "quiet"))
            pubs = [
                asyncio.ensure_future(publish(run, p, stop, i)) for i, p in enumerate(publishers)
            ]
            await asyncio.sleep(2.0)
            t_fault = run.now()
            if fault == "kill":
                brokers.kill("b1")
                await asyncio.sleep(2.0)
                await brokers.start({"b1": brokers.ports["b0"]}, {"b1": brokers.ports["b1"]})
                t_repair = run.now()  # listening again
                watch, peer = "b1", ["b0", "b3", "b4"]
            else:
                assert proxy is not None
                proxy.cut()
                await asyncio.sleep(PI + 1.0)  # longer than π: the leases across it expire
                t_repair = run.now()
                proxy.restore()
                watch, peer = "b0", ["b1", "b2"]
            await until_async(lambda: neighbours(run, brokers, watch), peer, 10, f"{watch}'s links")
            t_linked = run.now()
            await asyncio.sleep(max(0.0, t_repair + BACKOFF_MAX + DELTA_T + 3.0 - run.now()))
            stop.set()
            await asyncio.gather(*pubs)
            await asyncio.sleep(1.0)  # the last notifications arrive
            run.trace.append(TraceOp(run.now(), "quiet"))
            for c in run.clients:
                await c.close(unsubscribe=False)
            judge(run, Outage(t_fault, t_repair, t_linked), f"{fault} ({strategy})")
        finally:
            stop.set()
            for t in pubs:
                t.cancel()
            for c in run.clients:
                with contextlib.suppress(Exception):
                    await c.close(unsubscribe=False)
            if proxy is not None:
                await proxy.close()

    try:
        asyncio.run(go())
    finally:
        brokers.close()
    if fault == "kill":
        assert "link b0 - b1 down" in brokers.log("b0")
    else:
        assert "link b0 - b2 down" in brokers.log("b0")


async def until_async(
    get: Callable[[], Awaitable[object]], want: object, timeout: float, what: str
) -> None:
    end = time.monotonic() + timeout
    while True:
        got = await get()
        if got == want:
            return
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}: {got}")
        await asyncio.sleep(0.05)


def test_a_middle_broker_killed_and_restarted(tmp_path: Path) -> None:
    scenario(tmp_path, "covering", "kill")


def test_a_link_cut_and_restored(tmp_path: Path) -> None:
    scenario(tmp_path, "merging", "cut")
