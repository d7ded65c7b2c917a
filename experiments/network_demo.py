"""``pubsift demo network``: a small tree of broker processes on 127.0.0.1,
publishers of the sample that ``make run`` ships, and subscribers of every model on
different brokers; prints each delivery as it arrives, then shuts everything down and
counts what each subscriber received.

The tree (each arrow: the broker that dials; ports chosen by the OS, ``--port-file``)::

    b3 <- b1 -> b0 <- b2

Publishers (processes of the real command line): ``pubsift publish-feed`` over a copy of
``examples/sample/feeds`` at b3, polled every second (halfway through, the demo drops a new
feed file into the copy: the next poll publishes its item), ``pubsift pub`` of the sample
quotes (records) at b2 and of the UBL business documents (concepts, through the adapters)
at b0. Subscribers: :data:`SUBSCRIBERS`, Python clients of this process.

Shutdown, also on Ctrl-C or SIGTERM: the clients withdraw their subscriptions, every child
process gets SIGTERM and is waited for (SIGKILL after a bounded wait). Children run in
their own sessions, so a Ctrl-C in the terminal reaches only the demo, which stops them in
order.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import logging
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pubsift.core.errors import PubsiftError

if TYPE_CHECKING:
    from pubsift.adapters.broker.client import AsyncClient, Notification
    from rich.console import Console

#: The sample ``make run`` routes (a source checkout's ``examples/``).
SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample"
ATOM = "http://www.w3.org/2005/Atom"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RSS1 = "http://purl.org/rss/1.0/"
#: broker id -> the brokers it dials; started in rounds (a broker after those it dials)
TREE: dict[str, tuple[str, ...]] = {"b0": (), "b3": (), "b1": ("b0", "b3"), "b2": ("b0",)}
#: (name, broker, model, filter)
SUBSCRIBERS: tuple[tuple[str, str, str, Any], ...] = (
    ("nvda>240", "b3", "records", 'symbol = "NVDA" and price > 240'),
    ("ibm-ko-volume", "b1", "records", 'symbol in {"IBM", "KO"} and volume >= 20000000'),
    ("amzn>1400", "b0", "records", 'symbol = "AMZN" and price > 1400'),
    ("rss-items", "b2", "xml", "/rss/channel/item"),
    ("atom-entries", "b3", "xml", {"xpath": "/a:feed/a:entry", "namespaces": {"a": ATOM}}),
    (
        "rdf-items",
        "b0",
        "xml",
        {"xpath": "/rdf:RDF/rss:item", "namespaces": {"rdf": RDF, "rss": RSS1}},
    ),
    ("uk-invoices", "b1", "concepts", "Invoice where UnitPrice > 90 GBP"),
    ("heavy-orders", "b2", "concepts", "Order where NetWeight > 150 lb"),
)
LIVE_ITEM = (
    "<?xml version='1.0'?><rss version='2.0'><channel><title>pubsift demo</title>"
    "<item><title>Breaking: a feed item published live</title>"
    "<guid>urn:pubsift:demo:live</guid></item></channel></rss>"
)
#: seconds for a process to start listening / to stop after SIGTERM
START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0
#: seconds past the duration to wait for the publishers and the live item
PUBLISH_GRACE = 30.0


class DemoError(PubsiftError):
    """The network demo could not run (a process did not start, the sample is missing)."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--duration",
        type=float,
        default=6.0,
        metavar="SECONDS",
        help="seconds to publish and print deliveries before shutting down (default: 6)",
    )
    p.add_argument("--keep", metavar="DIR", help="keep the brokers' and publishers' logs in DIR")
    p.set_defaults(func=cmd_network)


def cmd_network(args: argparse.Namespace, console: Console) -> int:
    if not args.duration > 0:
        raise DemoError(f"--duration: expected seconds > 0, got {args.duration:g}")
    for part in ("feeds", "quotes", "business"):
        if not (SAMPLE / part).is_dir():
            raise DemoError(f"the sample is missing: {SAMPLE / part} (run from a source checkout)")
    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="pubsift-demo-") as tmp:
        demo = NetworkDemo(Path(tmp), console, args.duration)
        try:
            code = asyncio.run(demo.main())
        finally:
            demo.procs.stop_all()
            if args.keep:
                shutil.copytree(tmp, args.keep, dirs_exist_ok=True)
        demo.report()
        return code


def _die_with_parent() -> None:
    """In the child, before exec: on Linux, ask for SIGTERM when the demo process dies, so
    that even a demo killed with SIGKILL leaves no broker or publisher behind (elsewhere the
    children are stopped by :meth:`Procs.stop_all` only)."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


@dataclass
class Procs:
    """Child processes by name, each logging to a file; stopped in reverse start order."""

    folder: Path
    console: Console
    running: dict[str, subprocess.Popen] = field(default_factory=dict)

    def start(self, name: str, *args: str) -> subprocess.Popen:
        cmd = [sys.executable, "-m", "pubsift.cli", *args]
        with open(self.folder / f"{name}.log", "ab") as log:
            p = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        self.running[name] = p
        self.console.print(f"[dim]started {name} (pid {p.pid})[/]", highlight=False)
        return p

    def log_tail(self, name: str, lines: int = 5) -> str:
        path = self.folder / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return " | ".join(text.strip().splitlines()[-lines:])

    def stop_all(self) -> None:
        """SIGTERM to every child (publishers before brokers), wait, SIGKILL the rest."""
        order = list(reversed(self.running.items()))
        for _, p in order:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.send_signal(signal.SIGTERM)
        end = time.monotonic() + STOP_TIMEOUT
        for _, p in order:
            try:
                p.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)


@dataclass
class Sub:
    name: str
    broker: str
    model: str
    spec: Any
    received: int = 0
    client: AsyncClient | None = None


class NetworkDemo:
    def __init__(self, folder: Path, console: Console, duration: float) -> None:
        self.folder = folder
        self.console = console
        self.duration = duration
        self.procs = Procs(folder, console)
        self.ports: dict[str, int] = {}
        self.subs = [Sub(*s) for s in SUBSCRIBERS]
        self.t0 = time.monotonic()
        self.models: dict[str, Any] = {}
        self.live_seen = False

    def url(self, broker: str) -> str:
        return f"pubsift://127.0.0.1:{self.ports[broker]}"

    async def main(self) -> int:
        """Run until the duration is over or a signal comes; 130 when interrupted."""
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        body = asyncio.ensure_future(self.run())
        halt = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({body, halt}, return_when=asyncio.FIRST_COMPLETED)
            if body.done():
                body.result()
                return 0
            self.console.print("[yellow]interrupted: shutting down[/]")
            return 130
        finally:
            for t in (body, halt):
                t.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await body
            await self.close_clients()

    async def run(self) -> None:
        models = asyncio.ensure_future(asyncio.to_thread(_load_models))  # while brokers start
        await self.start_brokers()
        self.models = await models
        await self.subscribe()
        feeds = self.folder / "feeds"
        shutil.copytree(SAMPLE / "feeds", feeds)
        state = self.folder / "feed-state.json"
        self.t0 = time.monotonic()
        self.console.print(f"[bold]publishing for {self.duration:g} s[/]")
        self.procs.start(
            "publish-feed",
            "publish-feed",
            self.url("b3"),
            str(feeds),
            "--interval",
            "1",
            "--state",
            str(state),
        )
        quotes = str(SAMPLE / "quotes" / "quotes-2017-08-to-2018-02.jsonl")
        pubs = [self.procs.start("pub-records", "pub", self.url("b2"), "-m", "records", quotes)]
        ubl = str(SAMPLE / "business" / "ubl-documents.zip")
        pubs.append(self.procs.start("pub-concepts", "pub", self.url("b0"), "-m", "concepts", ubl))
        # a new feed file once the feed publisher has polled: its next poll publishes it
        end = time.monotonic() + self.duration + PUBLISH_GRACE
        while not state.exists() and time.monotonic() < end:
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)
        (feeds / "live.xml").write_text(LIVE_ITEM)
        # until the duration is over, the one-shot publishers are done and the live item
        # is delivered (bounded: the machine may be slow to start processes)
        while time.monotonic() < end and (
            time.monotonic() - self.t0 < self.duration
            or any(p.poll() is None for p in pubs)
            or not self.live_seen
        ):
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.3)  # deliveries in flight

    async def start_brokers(self) -> None:
        """Start the tree in rounds: a broker once the brokers it dials listen."""
        pending = dict(TREE)
        while pending:
            ready = [b for b, dials in pending.items() if all(d in self.ports for d in dials)]
            for b in ready:
                args = ["broker", "--id", b, "--listen", "127.0.0.1:0"]
                args += ["--port-file", str(self.folder / f"{b}.port")]
                for d in pending[b]:
                    args += ["--neighbour", f"127.0.0.1:{self.ports[d]}"]
                self.procs.start(b, *args)
                del pending[b]
            await self.wait_ports(ready)
        links = ", ".join(f"{b} -> {d}" for b, dials in TREE.items() for d in dials)
        ports = ", ".join(f"{b} :{self.ports[b]}" for b in sorted(self.ports))
        self.console.print(f"brokers listening ({ports}); links {links}", highlight=False)

    async def wait_ports(self, brokers: list[str]) -> None:
        end = time.monotonic() + START_TIMEOUT
        for b in brokers:
            pf = self.folder / f"{b}.port"
            while not pf.exists():
                p = self.procs.running[b]
                if p.poll() is not None:
                    raise DemoError(f"broker {b} exited ({p.returncode}): {self.procs.log_tail(b)}")
                if time.monotonic() > end:
                    raise DemoError(f"broker {b} did not listen within {START_TIMEOUT:g} s")
                await asyncio.sleep(0.05)
            self.ports[b] = int(pf.read_text())

    async def subscribe(self) -> None:
        from pubsift.adapters.broker.client import AsyncClient
        from rich.markup import escape

        for s in self.subs:
            s.client = AsyncClient(self.url(s.broker), id=s.name, models=self.models)
            await s.client.connect()
            await s.client.subscribe(s.model, s.spec, functools.partial(self.show, s))
            spec = s.spec if isinstance(s.spec, str) else s.spec["xpath"]
            self.console.print(
                f"subscriber [bold cyan]{s.name}[/] @{s.broker} {s.model}: {escape(spec)}",
                highlight=False,
            )
        await self.settled()

    async def settled(self, timeout: float = 10.0) -> None:
        """Wait (bounded) until every broker holds routing entries of every model and the
        tables stopped changing: the subscriptions have spread over the tree."""
        clients = {s.broker: s.client for s in self.subs if s.client is not None}
        models = {s.model for s in self.subs}
        last = None
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            tables = {b: (await c.stats())["entries"] for b, c in sorted(clients.items())}
            full = all(sum(t.get(m, [0])) > 0 for t in tables.values() for m in models)
            if full and tables == last:
                return
            last = tables
            await asyncio.sleep(0.2)

    def show(self, s: Sub, n: Notification) -> None:
        from rich.markup import escape

        s.received += 1
        t = time.monotonic() - self.t0
        text = summary(s.model, n)
        self.live_seen = self.live_seen or "published live" in text
        self.console.print(
            f"[dim]{t:5.2f}s[/] [bold cyan]{s.name:<13}[/] @{s.broker} "
            f"[magenta]{s.model:<8}[/] {escape(text)}",
            highlight=False,
        )

    async def close_clients(self) -> None:
        for s in self.subs:
            if s.client is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(s.client.close(), 5)

    def report(self) -> None:
        from rich.table import Table

        table = Table(title="deliveries per subscriber")
        for col in ("subscriber", "broker", "model", "received"):
            table.add_column(col, justify="right" if col == "received" else "left")
        for s in self.subs:
            table.add_row(s.name, s.broker, s.model, str(s.received))
        self.console.print(table)
        codes = {n: p.returncode for n, p in self.procs.running.items()}
        alive = [n for n, c in codes.items() if c is None]
        odd = [f"{n} exit {c}" for n, c in codes.items() if c not in (0, None)]
        self.console.print(
            f"{len(codes) - len(alive)} of {len(codes)} processes stopped"
            + (f" ({', '.join(odd)})" if odd else ", all exited 0")
            + (f"; still running: {', '.join(alive)}" if alive else ""),
            highlight=False,
        )


def summary(model: str, n: Notification) -> str:
    """A short line about a delivered event."""
    w = n.wire
    if model == "records" and isinstance(w, dict):
        volume = w.get("volume")
        vol = f" vol {volume / 1e6:.1f}M" if isinstance(volume, (int, float)) else ""
        return f"{w.get('symbol')} {w.get('date')} price {w.get('price')}{vol}"
    if model == "xml":
        root = n.event.root
        item = next(
            (
                e
                for e in root.iter()
                if isinstance(e.tag, str) and _local(e.tag) in ("item", "entry")
            ),
            root,
        )
        texts: dict[str, str] = {}
        for e in item.iter():
            if isinstance(e.tag, str) and (e.text or "").strip():
                texts.setdefault(_local(e.tag), e.text.strip())
        title = next((texts[k] for k in ("title", "category", "link", "id") if k in texts), "")
        return f"{_local(root.tag)} {_local(item.tag)}: {title[:50]}"
    if model == "concepts" and isinstance(w, dict):
        parts = [str(w.get("concept")), str(w.get("time", ""))]
        for k, v in (w.get("value") or {}).items():
            ctx = v.get("context") if isinstance(v, dict) else None
            if ctx and k == "UnitPrice":
                unit = ctx.get("currency") or ctx.get("unit") or ""
                parts.append(f"{k} {v.get('value')} {unit}".rstrip())
        return " ".join(p for p in parts if p)
    return str(w)[:80]


def _load_models() -> dict[str, Any]:
    from pubsift.core.registry import load_model

    return {m: load_model(m) for m in ("records", "xml", "concepts")}


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]
