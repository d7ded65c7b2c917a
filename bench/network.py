"""Load test of broker processes on loopback (docs/protocol.md §8): notifications per second
delivered end to end, latency and messages per link, for covering and merging routing
against flooding on the same workload and the same offered rates.

    .venv/bin/python bench/network.py [--rates 250,500,1000,2000] [--seconds 4]
                                      [--strategies flooding,covering,merging]
                                      [--tls] [--quick] [--json PATH]

Setup: seven ``pubsift broker`` processes on 127.0.0.1 in a tree (b0 the root, b1 and b2
its children, b3-b6 the leaves), records model, long leases (below). 50 subscriber
clients, round robin over the seven brokers, run as asyncio clients in five helper
processes; each has 20 subscriptions, 1,000 in all: for ten symbols of interest (drawn from
a popular third of the S&P 500, so clients share symbols), ``symbol = S and price in
[lo, hi]`` around the symbol's yearly range and a narrower interval inside it. So each
client wants about 1 % of the quotes. Three publisher processes (one client each, at b0,
b3 and b6) publish the real daily quotes (``../shared/data/quotes``, else the sample under
``examples/sample/quotes``), shuffled, at the offered rate (split evenly), for ``--seconds``
per rate; each event carries its publication time, so a subscriber measures the latency.

Per strategy and offered rate: publications actually sent per second, notifications
delivered per second (delivered / (last arrival − first publication)), the share of the
expected notifications that arrived (expected: the records index over the same
subscriptions, in this process), latency p50/p99, notifications forwarded over broker
links per publication and on the busiest link (from the brokers' ``stats`` frames), broker
CPU seconds (from /proc) per 1,000 publications and per wall second (how much of the
machine the seven brokers got), and the busiest helper process's CPU share (to show that
clients and publishers are not the bottleneck). Every strategy runs on a fresh tree with
the same subscriptions and the same publications. Wall time, on a machine shared with
other work: the load average is printed with the figures.

``--tls`` (docs/protocol.md §11) runs every strategy twice on the same workload in the same
run, first plaintext, then with TLS on every connection (clients ``pubsifts://``, links
dialled with TLS, throwaway certificates from trustme, TLS 1.3, ECDSA P-256 keys), and
prints the figures of TLS on against off as ratios: notifications per second, and broker CPU
seconds per 1,000 publications (the steadier figure on a shared machine).

Leases are long here (π = 600 s, ρ = 200 s), so that no renewal round falls into a
measured window: with covering or merging a renewal costs each broker on its way a
covering check (0.1-0.7 ms in the core), and 1,000 renewals arriving together delay the
publications behind them; that is a cost of leasing, not of routing publications.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import gzip
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from processes import connected, cpu_seconds, free_ports, proc_cpu

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / ".." / "shared" / "data" / "quotes"
QUOTES = DATA / "all_stocks_1yr_2017-02-08_2018-02-07.csv"
SAMPLE = HERE.parent / "examples" / "sample" / "quotes" / "quotes-2017-08-to-2018-02.jsonl"

TREE = {"b0": None, "b1": "b0", "b2": "b0", "b3": "b1", "b4": "b1", "b5": "b2", "b6": "b2"}
LEVELS = (("b0",), ("b1", "b2"), ("b3", "b4", "b5", "b6"))
PUBLISHERS_AT = ("b0", "b3", "b6")
CLIENTS, SUBS_PER_CLIENT, SUB_PROCS = 50, 20, 5
CONFIG = """
[broker]
models = ["records"]
strategy = "{strategy}"
[lease]
period = 600.0
refresh = 200.0
[limits]
max_queue = 1000000
max_queue_bytes = 1073741824
"""


# -- the workload ------------------------------------------------------------------------
def load_quotes() -> tuple[list[dict[str, Any]], str]:
    """The real quotes (symbol, price = close, open, volume), or the bundled sample."""
    rows: list[dict[str, Any]] = []
    if QUOTES.exists():
        with open(QUOTES, newline="") as fh:
            rows.extend(
                {
                    "symbol": r["Name"],
                    "price": float(r["close"]),
                    "open": float(r["open"]),
                    "volume": int(r["volume"]),
                }
                for r in csv.DictReader(fh)
                if r["close"] and r["open"] and r["volume"]
            )
        return rows, f"{QUOTES.name} ({len(rows):,} rows)"
    opener = gzip.open if SAMPLE.suffix == ".gz" else open
    with opener(SAMPLE, "rt") as fh:
        for line in fh:
            r = json.loads(line)
            rows.append(
                {
                    "symbol": r["symbol"],
                    "price": r["price"],
                    "open": r["open"],
                    "volume": r["volume"],
                }
            )
    return rows, f"sample {SAMPLE.name} ({len(rows):,} rows)"


def subscriptions(quotes: list[dict[str, Any]], rng: random.Random) -> list[list[str]]:
    """Per client, 20 filters: for ten symbols from a popular third, the symbol's price in
    a random half of its yearly range, and a narrower interval inside that one."""
    span: dict[str, list[float]] = {}
    for q in quotes:
        lo_hi = span.setdefault(q["symbol"], [q["price"], q["price"]])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], q["price"]), max(lo_hi[1], q["price"])
    symbols = sorted(span)
    popular = rng.sample(symbols, max(10, len(symbols) // 3))
    out = []
    for _ in range(CLIENTS):
        filters = []
        for s in rng.sample(popular, SUBS_PER_CLIENT // 2):
            lo, hi = span[s]
            w = (hi - lo) or 1.0
            a = lo + rng.uniform(0, 0.5) * w
            b = a + 0.5 * w
            c = a + rng.uniform(0, 0.25) * w
            filters.append(f'symbol = "{s}" and price in [{a:.2f}, {b:.2f}]')
            filters.append(f'symbol = "{s}" and price in [{c:.2f}, {c + 0.15 * w:.2f}]')
        out.append(filters)
    return out


# -- helper processes --------------------------------------------------------------------


def make_certs(tmp: Path) -> dict[str, str]:
    """A throwaway CA and one broker certificate for 127.0.0.1 (all seven brokers use it;
    trustme, from the ``dev`` extra), as PEM files: ``{"ca", "cert", "key"}``."""
    import trustme

    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1", common_name="bench-broker")
    out = {
        "ca": str(tmp / "ca.pem"),
        "cert": str(tmp / "broker.pem"),
        "key": str(tmp / "broker.key"),
    }
    ca.cert_pem.write_to_path(out["ca"])
    leaf.cert_chain_pems[0].write_to_path(out["cert"])
    leaf.private_key_pem.write_to_path(out["key"])
    return out


class Subscribers:
    """The subscriber clients of one helper process and what they received per step."""

    def __init__(self) -> None:
        self.clients: list[Any] = []
        self.count: Counter[int] = Counter()
        self.lat: dict[int, list[float]] = defaultdict(list)
        self.last: dict[int, float] = {}

    async def connect(self, spec: list[dict[str, Any]]) -> None:
        from pubsift.adapters.broker.client import AsyncClient, Notification

        for c in spec:
            client = await connected(AsyncClient(c["url"], id=c["id"], ca=c.get("ca")))
            seen: list[Any] = [None]

            def got(n: Notification, seen: list[Any] = seen) -> None:
                if n is seen[0]:  # the same notification for another matching filter
                    return
                seen[0] = n
                now = time.time()
                step = n.wire["step"]
                self.count[step] += 1
                self.lat[step].append(now - n.wire["ts"])
                self.last[step] = now

            for f in c["filters"]:
                await client.subscribe("records", f, got)
            self.clients.append(client)

    def report(self, k: int) -> dict[str, Any]:
        return {
            "count": self.count[k],
            "latency": self.lat.pop(k, []),
            "last": self.last.get(k),
            "cpu": cpu_seconds(),
        }

    async def close(self) -> None:
        for client in self.clients:
            await client.close(unsubscribe=False)


async def publish(client: Any, cmd: dict[str, Any]) -> dict[str, Any]:
    """Publish the events of ``cmd["file"]`` at ``cmd["rate"]`` from wall time
    ``cmd["start"]`` (at most ``cmd["limit"]`` seconds), each stamped with its publication
    time and step; wait until the broker has read them all (a ``stats`` round trip)."""
    with open(cmd["file"]) as fh:
        events = [json.loads(x) for x in fh]
    rate, step = cmd["rate"], cmd["step"]
    await asyncio.sleep(max(0.0, cmd["start"] - time.time()))
    t0, cpu0, sent = time.time(), cpu_seconds(), 0
    while sent < len(events):
        now = time.time()
        if now - t0 > cmd["limit"]:
            break
        due = min(len(events), int((now - t0) * rate) + 1)
        while sent < due:
            ev = events[sent]
            ev["ts"], ev["step"] = time.time(), step
            await client.publish("records", ev)
            sent += 1
        await asyncio.sleep(max(0.0, t0 + sent / rate - time.time()))
    seconds = time.time() - t0
    await client.stats(timeout=120)  # the broker has read everything before this
    return {"sent": sent, "seconds": seconds, "cpu": cpu_seconds() - cpu0}


async def worker() -> None:
    """A helper process (subscribers or one publisher), driven by lines on standard input,
    one answer line each on standard output: ``connect JSON`` (subscriber clients
    ``[{"id", "url", "filters"}]`` or a publisher ``{"id", "url"}``) -> ``ready``;
    ``count`` -> notifications per step so far; ``cpu`` -> CPU seconds so far;
    ``report K`` -> step K's count, latencies, last arrival and the CPU seconds;
    ``publish JSON`` -> see :func:`publish`; ``disconnect`` -> ``ok``; ``quit``."""
    from pubsift.adapters.broker.client import AsyncClient

    subs, pub = Subscribers(), None
    loop, out = asyncio.get_running_loop(), sys.stdout
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        word, _, arg = line.partition(" ")
        if word == "connect":
            spec = json.loads(arg)
            if isinstance(spec, list):
                subs = Subscribers()
                await subs.connect(spec)
            else:
                pub = await connected(AsyncClient(spec["url"], id=spec["id"], ca=spec.get("ca")))
            answer: Any = "ready"
        elif word == "count":
            answer = dict(subs.count)
        elif word == "cpu":
            answer = cpu_seconds()
        elif word == "report":
            answer = subs.report(int(arg))
        elif word == "publish" and pub is not None:
            answer = await publish(pub, json.loads(arg))
        elif word == "disconnect":
            await subs.close()
            if pub is not None:
                await pub.close(unsubscribe=False)
            subs, pub, answer = Subscribers(), None, "ok"
        else:
            break
        out.write((answer if isinstance(answer, str) else json.dumps(answer)) + "\n")
        out.flush()
    await subs.close()
    if pub is not None:
        await pub.close(unsubscribe=False)


class Worker:
    """A helper process (:func:`worker`), started once for every strategy's run."""

    def __init__(self, tmp: Path, name: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(tmp / f"{name}.log", "w"),  # noqa: SIM115 - closed with the process
            text=True,
        )

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def readline(self) -> str:
        assert self.proc.stdout is not None
        got = self.proc.stdout.readline()
        if not got:
            raise RuntimeError(f"helper process {self.proc.args} ended: exit {self.proc.wait()}")
        return got.strip()

    def ask(self, line: str) -> Any:
        self.send(line)
        got = self.readline()
        return got if got in ("ready", "ok") else json.loads(got)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("quit")
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(5)


# -- brokers -----------------------------------------------------------------------------


class Tree:
    """Seven ``pubsift broker`` processes with one strategy, started together (each child
    dials its parent, re-dialling until the parent listens)."""

    def __init__(self, tmp: Path, strategy: str, certs: dict[str, str] | None = None) -> None:
        self.tmp = tmp / (strategy + ("-tls" if certs else ""))
        self.tmp.mkdir()
        #: the CA that verifies the brokers (None: plaintext)
        self.ca = certs["ca"] if certs else None
        config = CONFIG.format(strategy=strategy)
        if certs:
            config += "[tls]\n" + "".join(f'{k} = "{v}"\n' for k, v in certs.items())
        (self.tmp / "broker.toml").write_text(config)
        self.procs: dict[str, subprocess.Popen] = {}
        self.ports = dict(zip(TREE, free_ports(len(TREE))))
        for b in TREE:
            cmd = [sys.executable, "-m", "pubsift.cli", "broker", "--config"]
            cmd += [str(self.tmp / "broker.toml"), "--id", b]
            cmd += ["--listen", f"127.0.0.1:{self.ports[b]}"]
            if TREE[b] is not None:
                cmd += ["--neighbour", f"127.0.0.1:{self.ports[TREE[b]]}"]
            with open(self.tmp / f"{b}.log", "w") as log:
                self.procs[b] = subprocess.Popen(cmd, stdout=log, stderr=log)

    def wait_up(self, timeout: float = 60.0) -> None:
        """Until every broker has its links (from the ``stats`` frames)."""
        want = {b: sum(1 for c, p in TREE.items() if b in (c, p) and p) for b in TREE}
        end = time.monotonic() + timeout
        while True:
            for b, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"broker {b} ended: see {self.tmp}/{b}.log")
            try:
                if {b: len(s["neighbours"]) for b, s in self.stats().items()} == want:
                    return
            except OSError:
                pass
            if time.monotonic() > end:
                raise RuntimeError(f"the broker tree did not come up: see {self.tmp}")
            time.sleep(0.2)

    def url(self, b: str) -> str:
        return f"pubsift{'s' if self.ca else ''}://127.0.0.1:{self.ports[b]}"

    def stats(self) -> dict[str, dict[str, Any]]:
        from pubsift.adapters.broker.client import connect

        out = {}
        for b in TREE:
            probe = f"bench-probe-{b}-{time.monotonic_ns()}"
            with connect(self.url(b), id=probe, ca=self.ca) as c:
                out[b] = c.stats(timeout=60)
        return out

    def cpu(self) -> dict[str, float]:
        return {b: proc_cpu(p.pid) for b, p in self.procs.items()}

    def close(self) -> None:
        for p in self.procs.values():
            p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)


# -- one run -----------------------------------------------------------------------------
@dataclass
class Step:
    strategy: str
    offered: float
    tls: bool = False
    sent: int = 0
    pub_rate: float = 0.0
    expected: int = 0
    delivered: int = 0
    span: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    link_msgs: int = 0
    busiest_link: int = 0
    admin: int = 0
    broker_cpu: float = 0.0
    busiest_broker: float = 0.0  # the busiest broker's CPU seconds / the step's wall time
    brokers_cpu: float = 0.0  # all brokers' CPU seconds / the step's wall time
    helper_cpu: float = 0.0  # the busiest helper's CPU seconds / its busy wall time
    lost: int = 0
    per_link: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.delivered / self.span if self.span > 0 else 0.0


def expected_counts(
    subs: list[list[str]], batches: dict[int, list[list[dict[str, Any]]]]
) -> dict[tuple[int, int], list[int]]:
    """Per (step, publisher), the number of subscribers each event reaches (prefix sums
    are taken over what the publisher really sent)."""
    from pubsift.core.registry import load_model

    m = load_model("records")
    ix = m.new_index()
    for i, fs in enumerate(subs):
        for f in fs:
            ix.add(m.parse_filter(f), i)
    out = {}
    for step, per_pub in batches.items():
        for j, events in enumerate(per_pub):
            out[(step, j)] = [len(ix.match(m.parse_event(e))) for e in events]
    return out


def run_strategy(
    strategy: str,
    subs: list[list[str]],
    rates: list[float],
    files: dict[int, list[Path]],
    expected: dict[tuple[int, int], list[int]],
    seconds: float,
    tmp: Path,
    subw: list[Worker],
    pubw: list[Worker],
    say: Any,
    certs: dict[str, str] | None = None,
) -> list[Step]:
    tree = Tree(tmp, strategy, certs)
    label = strategy + (" TLS" if certs else "")
    try:
        ids = sorted(TREE)
        specs: list[list[dict[str, Any]]] = [[] for _ in subw]
        for i, fs in enumerate(subs):
            b = ids[i % len(ids)]
            specs[i % len(subw)].append(
                {"id": f"sub-{i:02d}", "url": tree.url(b), "filters": fs, "ca": tree.ca}
            )
        tree.wait_up()
        for w, spec in zip(subw, specs):
            w.send("connect " + json.dumps(spec))
        for w, b in zip(pubw, PUBLISHERS_AT):
            w.send("connect " + json.dumps({"id": f"pub-{b}", "url": tree.url(b), "ca": tree.ca}))
        for w in subw + pubw:
            assert w.readline() == "ready"
        # the subscriptions are in: the routing tables' sizes stay the same for a second
        # (merging merges a client's entries, so the local count need not be 1,000)
        sizes, same, end = None, 0, time.monotonic() + 60
        while same < 4:
            st = tree.stats()
            now = tuple(sum(s["entries"]["records"][i] for s in st.values()) for i in (0, 1))
            same = same + 1 if now == sizes and now[0] > 0 else 0
            sizes = now
            if time.monotonic() > end:
                raise RuntimeError("the routing tables did not settle")
            time.sleep(0.25)
        local, remote = sizes
        say(f"  {label}: 7 brokers up, 1,000 subscriptions in: Σ|L| = {local}, Σ|R| = {remote}")
        steps = []
        for k, rate in enumerate(rates):
            st0, cpu0, wall0 = tree.stats(), tree.cpu(), time.monotonic()
            wcpu0 = [w.ask("cpu") for w in subw]
            start = time.time() + 0.3
            for j, w in enumerate(pubw):
                cmd = {
                    "step": k,
                    "rate": rate / len(pubw),
                    "file": str(files[k][j]),
                    "start": start,
                    "limit": seconds * 3,
                }
                w.send("publish " + json.dumps(cmd))
            done = [json.loads(w.readline()) for w in pubw]
            sent = [d["sent"] for d in done]
            want = sum(sum(expected[(k, j)][: sent[j]]) for j in range(len(pubw)))
            # drain: until everything expected arrived, or nothing more for 2 s
            got, still, end = -1, time.monotonic(), time.monotonic() + 60
            while time.monotonic() < end:
                now = sum(w.ask("count").get(str(k), 0) for w in subw)
                if now >= want:
                    break
                if now != got:
                    got, still = now, time.monotonic()
                elif time.monotonic() - still > 2.0:
                    break
                time.sleep(0.1)
            reports = [w.ask(f"report {k}") for w in subw]
            st1, cpu1, wall = tree.stats(), tree.cpu(), time.monotonic() - wall0
            lats = sorted(x for r in reports for x in r["latency"])
            lasts = [r["last"] for r in reports if r["last"] is not None]
            s = Step(strategy, rate, certs is not None)
            s.sent = sum(sent)
            s.pub_rate = s.sent / max(d["seconds"] for d in done)
            s.expected = want
            s.delivered = sum(r["count"] for r in reports)
            s.span = (max(lasts) - start) if lasts else 0.0
            if lats:
                s.p50_ms = 1e3 * statistics.median(lats)
                s.p99_ms = 1e3 * lats[min(len(lats) - 1, int(0.99 * len(lats)))]
            for b in TREE:
                for n, c in st1[b]["forwarded"].items():
                    s.per_link[f"{b}->{n}"] = c - st0[b]["forwarded"].get(n, 0)
            s.link_msgs = sum(s.per_link.values())
            s.busiest_link = max(s.per_link.values(), default=0)
            s.admin = sum(st1[b]["admin_sent"] - st0[b]["admin_sent"] for b in TREE)
            s.lost = sum(st1[b]["lost"] - st0[b]["lost"] for b in TREE)
            s.broker_cpu = sum(cpu1.values()) - sum(cpu0.values())
            s.busiest_broker = max(cpu1[b] - cpu0[b] for b in TREE) / wall
            s.brokers_cpu = s.broker_cpu / wall
            busy = max(s.span, 1e-9)
            s.helper_cpu = max(
                [(r["cpu"] - c0) / busy for r, c0 in zip(reports, wcpu0)]
                + [d["cpu"] / max(d["seconds"], 1e-9) for d in done]
            )
            steps.append(s)
            say(
                f"  {label:<13} offered {rate:>6,.0f}/s: sent {s.pub_rate:,.0f}/s, "
                f"{s.rate:,.0f} notifications/s ({s.delivered:,}/{s.expected:,}), "
                f"p50 {s.p50_ms:,.1f} ms, p99 {s.p99_ms:,.1f} ms, "
                f"{s.link_msgs / max(s.sent, 1):.2f} link msgs/pub"
            )
        return steps
    finally:
        for w in subw + pubw:
            if w.proc.poll() is None:
                w.ask("disconnect")
        tree.close()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        asyncio.run(worker())
        return 0
    sys.path.insert(0, str(HERE))
    from harness import Bench
    from rich.console import Console
    from rich.table import Table

    bench = Bench("network", __doc__, argv)
    ap: argparse.ArgumentParser = bench.parser
    ap.add_argument(
        "--rates",
        default=None,
        help="offered publications/s, comma-separated (default 250,500,1000,2000,3000; "
        "quick: 1000)",
    )
    ap.add_argument(
        "--seconds", type=float, default=None, help="per offered rate (default 4; quick: 2)"
    )
    ap.add_argument(
        "--strategies",
        default=None,
        help="default flooding,covering,merging; quick: flooding,covering",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--tls",
        action="store_true",
        help="run each strategy twice, plaintext and TLS, and print TLS on against off",
    )
    args = bench.parse()
    rates = [
        float(r)
        for r in (args.rates or ("1000" if args.quick else "250,500,1000,2000,3000")).split(",")
    ]
    seconds = args.seconds or (2.0 if args.quick else 4.0)
    strategies = (
        args.strategies or ("flooding,covering" if args.quick else "flooding,covering,merging")
    ).split(",")
    if "flooding" not in strategies:
        strategies.insert(0, "flooding")
    console = Console(width=max(Console().width, 150))
    rng = random.Random(args.seed)
    quotes, source = load_quotes()
    subs = subscriptions(quotes, rng)
    rng.shuffle(quotes)
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="pubsift-bench-network-") as d:
        tmp = Path(d)
        files: dict[int, list[Path]] = {}
        batches: dict[int, list[list[dict[str, Any]]]] = {}
        pos = 0
        for k, rate in enumerate(rates):
            n = int(rate / len(PUBLISHERS_AT) * seconds)
            batches[k] = []
            files[k] = []
            for j in range(len(PUBLISHERS_AT)):
                evs = [quotes[(pos + i) % len(quotes)] for i in range(n)]
                pos += n
                batches[k].append(evs)
                path = tmp / f"events-{k}-{j}.jsonl"
                path.write_text("".join(json.dumps(e) + "\n" for e in evs))
                files[k].append(path)
        expected = expected_counts(subs, batches)
        share = sum(sum(v) for v in expected.values()) / sum(len(v) for v in expected.values())
        console.print(
            f"bench/network.py: 7 brokers, {CLIENTS} clients × {SUBS_PER_CLIENT} subscriptions, "
            f"{len(PUBLISHERS_AT)} publishers; quotes: {source}; "
            f"{share:.2f} subscribers per publication ({share / CLIENTS:.1%} of the clients); "
            f"load average {load0:.1f}"
        )
        steps: list[Step] = []
        subw = [Worker(tmp, f"sub{k}") for k in range(SUB_PROCS)]
        pubw = [Worker(tmp, f"pub-{b}") for b in PUBLISHERS_AT]
        certs = make_certs(tmp) if args.tls else None
        try:
            for s in strategies:
                for c in (None, certs) if certs else (None,):
                    steps += run_strategy(
                        s, subs, rates, files, expected, seconds, tmp, subw, pubw, console.print, c
                    )
        finally:
            for w in subw + pubw:
                w.close()
    load1 = os.getloadavg()[0]
    table = Table(
        title=f"bench/network.py: 7 broker processes on loopback, 50 clients, 1,000 "
        f"subscriptions, {seconds:g} s per rate (wall time; load average {load0:.1f} → "
        f"{load1:.1f} on {os.cpu_count()} CPUs)"
    )
    for col in (
        "strategy",
        *(("TLS",) if args.tls else ()),
        "offered/s",
        "sent/s",
        "notifications/s",
        "× flooding",
        "arrived",
        "p50 ms",
        "p99 ms",
        "link msgs/pub",
        "busiest link/pub",
        "broker CPU s/1k pubs",
        "brokers' CPU s/s",
        "busiest helper CPU",
    ):
        table.add_column(col, justify="left" if col == "strategy" else "right")
    base = {(s.offered, s.tls): s for s in steps if s.strategy == "flooding"}
    for s in steps:
        f = base[(s.offered, s.tls)]
        r = s.rate / f.rate if f.rate else float("nan")
        table.add_row(
            s.strategy,
            *(("on" if s.tls else "off",) if args.tls else ()),
            f"{s.offered:,.0f}",
            f"{s.pub_rate:,.0f}",
            f"{s.rate:,.0f}",
            f"{r:.2f}",
            f"{s.delivered / s.expected:.1%}" if s.expected else "-",
            f"{s.p50_ms:,.1f}",
            f"{s.p99_ms:,.1f}",
            f"{s.link_msgs / max(s.sent, 1):.2f}",
            f"{s.busiest_link / max(s.sent, 1):.2f}",
            f"{1000 * s.broker_cpu / max(s.sent, 1):.2f}",
            f"{s.brokers_cpu:.2f}",
            f"{s.helper_cpu:.0%}",
        )
        bench.row(
            strategy=s.strategy,
            tls=s.tls,
            offered=s.offered,
            sent=s.sent,
            sent_per_s=s.pub_rate,
            expected=s.expected,
            delivered=s.delivered,
            notifications_per_s=s.rate,
            vs_flooding=r,
            p50_ms=s.p50_ms,
            p99_ms=s.p99_ms,
            link_msgs=s.link_msgs,
            per_link=s.per_link,
            admin=s.admin,
            lost=s.lost,
            broker_cpu_s=s.broker_cpu,
            busiest_broker_cpu=s.busiest_broker,
            brokers_cpu_per_s=s.brokers_cpu,
            helper_cpu=s.helper_cpu,
        )
    console.print(table)
    if args.tls:
        tls_figures(steps, strategies, bench, console.print)
    top = max(rates)
    plain = [s for s in steps if not s.tls]
    for name in strategies:
        if name == "flooding":
            continue
        best = max((s for s in plain if s.strategy == name), key=lambda s: s.rate)
        fbest = max((s for s in plain if s.strategy == "flooding"), key=lambda s: s.rate)
        at_top = next(s for s in plain if s.strategy == name and s.offered == top)
        bench.headline(
            f"network, 7 broker processes, 1k subscriptions, {name} vs flooding",
            f"{best.rate:,.0f} vs {fbest.rate:,.0f} notifications/s at best "
            f"({best.rate / fbest.rate:.2f}×); at {top:,.0f} pubs/s offered: p99 "
            f"{at_top.p99_ms:,.0f} vs {base[(top, False)].p99_ms:,.0f} ms, "
            f"{at_top.link_msgs / max(at_top.sent, 1):.2f} vs "
            f"{base[(top, False)].link_msgs / max(base[(top, False)].sent, 1):.2f} link msgs/pub",
        )
    return bench.finish(0)


def tls_figures(steps: list[Step], strategies: list[str], bench: Any, say: Any) -> None:
    """TLS on against off, per strategy and offered rate: notifications/s, broker CPU
    seconds per 1,000 publications, p50 latency (the same workload, the same run)."""
    off = {(s.strategy, s.offered): s for s in steps if not s.tls}
    for s in (s for s in steps if s.tls):
        o = off[(s.strategy, s.offered)]
        rate = s.rate / o.rate if o.rate else float("nan")
        cpu_on, cpu_off = (1000 * x.broker_cpu / max(x.sent, 1) for x in (s, o))
        cpu = cpu_on / cpu_off if cpu_off else float("nan")
        say(
            f"TLS on/off, {s.strategy}, {s.offered:,.0f} pubs/s offered: "
            f"{s.rate:,.0f} / {o.rate:,.0f} notifications/s = {rate:.2f}×; broker CPU "
            f"{cpu_on:.2f} / {cpu_off:.2f} s per 1k pubs = {cpu:.2f}×; p50 "
            f"{s.p50_ms:,.1f} / {o.p50_ms:,.1f} ms"
        )
    for name in strategies:
        pairs = [(s, off[(s.strategy, s.offered)]) for s in steps if s.tls and s.strategy == name]
        on, of = max(pairs, key=lambda p: p[1].offered)
        bench.headline(
            f"network, 7 broker processes, {name}: TLS on vs off",
            f"{on.rate:,.0f} vs {of.rate:,.0f} notifications/s "
            f"({on.rate / of.rate if of.rate else float('nan'):.2f}×) at "
            f"{of.offered:,.0f} pubs/s offered; broker CPU "
            f"{on.broker_cpu / max(on.sent, 1) * 1000:.2f} vs "
            f"{of.broker_cpu / max(of.sent, 1) * 1000:.2f} s per 1k pubs",
        )


if __name__ == "__main__":
    sys.exit(main())
