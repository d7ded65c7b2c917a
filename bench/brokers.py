"""The pubsift broker side by side with NATS and Mosquitto (DESIGN.md §2.6): notifications per
second at saturation, latency at a paced rate, broker and client CPU per message, on the
same workloads, on this machine, loopback only, with Python clients on every side.

    .venv/bin/python bench/brokers.py [--quick] [--json PATH] [--events N] [--paced N]
                                      [--systems pubsift,nats,mosquitto]
                                      [--workloads W1,W2,W3,chain,sse] [--py-spy PATH]

Systems: ``pubsift broker`` processes (records model, default routing strategy, long
leases as in bench/network.py: π = 600 s, ρ = 200 s, so that no renewal falls into a
measured window; per-connection queue limits raised as there, so that a subscriber behind
a saturating publisher is not cut off as a slow consumer) with the official client
(``pubsift.adapters.broker.client.AsyncClient``; ``publish_many`` for saturation where the
client has it); ``nats-server`` with nats-py; ``mosquitto`` (MQTT 3.1.1, QoS 0, a config
file with ``listener PORT 127.0.0.1`` and ``allow_anonymous true``) with paho-mqtt driven
from asyncio. Where nats-server or mosquitto is absent, the bench says how to install it
(``apt-get update && apt-get install -y nats-server mosquitto``) and runs the others.

Events: small JSON quotes (``{"symbol": "S17", "price": 123.45, "bid": ..., "ask": ...,
"volume": 1000, "exchange": "XNAS", "i": 4711, "ts": <publication time>}``, about 140
bytes; 100 symbols S0..S99 drawn at random, prices around a per-symbol base). NATS subjects
and MQTT topics are per symbol (``quotes.S17``, ``quotes/S17``). Workloads:

* **W1**: one broker, one subscriber wanting everything (pubsift ``price >= 0``, NATS
  ``quotes.>``, MQTT ``quotes/#``).
* **W2**: 100 subscribers, one symbol each (pubsift ``symbol = "Sk"``; the symbol's
  subject or topic).
* **W3**: 100 subscribers ``symbol = "Sk" and price > X``, X between two prices so that
  about half of the symbol's quotes match. NATS and MQTT subscribe to the symbol's subject
  or topic and the client drops the unwanted half: the figure is *wanted* notifications.
* **chain**: W1 through three brokers (pubsift b0 - b1 - b2, publisher at b0, subscriber
  at b2; NATS a three-node cluster, publisher on node 0, subscriber on node 2: a NATS
  cluster is a full mesh, so a message crosses one route, not two; Mosquitto: not run).
* **sse**: W1 with the subscriber on the broker's HTTP gateway (pubsift only: ``[gateway]
  listen``, docs/protocol.md §9): ``GET /subscribe/records?filter=price >= 0`` read as
  Server-Sent Events with aiohttp by a lean reader (``id:``/``data:`` lines, ``orjson`` on
  the data; the publication id from the data's ``publisher`` and ``seq``); the publisher
  as in W1. The gateway runs in the broker process, so broker CPU per publication includes
  it; sub µs/notif is the SSE reader's. NATS and Mosquitto: not run.

Per system and workload, in helper processes (the publisher alone in one, the subscribers
split over two, every process driven by lines on standard input): first a probe round per
symbol until every subscriber has seen one (the subscriptions are in everywhere; probes
are not counted), then

1. **saturation**: ``--events`` publications (50,000; quick 10,000) as fast as the
   publisher can, ``--repeats`` times (5; quick 3: the median and ± half the spread,
   (max − min) / median, are shown); notifications/s = wanted notifications delivered /
   (last arrival − first publication);
2. **paced**: ``--paced`` publications (5,000; quick 2,000) at 1,000/s; latency = arrival
   time − the ``ts`` the publisher stamped, p50 and p99 over every wanted notification;
3. **broker CPU** µs per publication: the CPU time (user + system, every thread) of the
   broker process(es), read from the process's CPU-time clock (``clock_getcpuclockid``,
   nanoseconds; /proc/PID/stat's 10 ms clock ticks where the call is missing: 0.2 µs per
   publication over 50,000) before the first publication and after the last arrival,
   summed over the three brokers of the chain, divided by the publications (saturation
   runs; the paced run's figure, which includes the idle wake-ups of a broker at 1,000/s,
   is in the JSON);
4. **client CPU**: the publisher process's CPU per publication, and the subscriber
   processes' CPU per wanted notification (saturation runs; ``os.times`` in the helpers;
   in W3 the NATS and MQTT subscribers also parse the unwanted half);
5. ratios against NATS: notifications/s (system / NATS: below 1 is slower) and broker CPU
   per publication (system / NATS: above 1 costs more).

Every run checks that every expected notification arrived exactly once: per subscriber the
number, the distinct event numbers and their sum against what this process computes from
the events; no notification for another symbol; for pubsift none outside the filter and no
duplicate ``(publisher, seq)`` (nor one the client dropped as a duplicate); for NATS and
MQTT in W3 exactly the unwanted ones of the symbol. A run that loses or duplicates anything
says so and the bench exits non-zero.

Wall time on a machine of two cores shared by the broker(s), the publisher and the
subscriber processes: with Python clients the clients are often the bottleneck, so the
notifications/s of the fast brokers say more about their client libraries than about
them; broker CPU per publication is the figure that compares the brokers themselves. The
load average is printed with the figures.

``--py-spy PATH`` profiles the pubsift broker during W1's first saturation run with py-spy
(``pip install py-spy``; raw collapsed stacks to PATH aggregated by function, its log to
PATH.log) and prints the top functions by own time. The profiler slows the broker: that
run's figures are not comparable with an unprofiled one.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import inspect
import json
import math
import os
import queue
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from processes import connected, cpu_seconds, free_ports, proc_cpu

HERE = Path(__file__).resolve().parent
INSTALL = "apt-get update && apt-get install -y nats-server mosquitto"
SYSTEMS = ("pubsift", "nats", "mosquitto")
WORKLOADS = ("W1", "W2", "W3", "chain", "sse")
SYMBOLS = [f"S{k}" for k in range(100)]
SUB_PROCS = 2
PACED_RATE = 1000.0
#: publications per chunk of a saturation run (one publish_many, then the loop runs)
CHUNK = 500
#: seconds to wait after the last expected arrival for late duplicates
SETTLE = 0.5
PUBSIFT_CONFIG = """
[broker]
models = ["records"]
[lease]
period = 600.0
refresh = 200.0
[limits]
max_queue = 1000000
max_queue_bytes = 1073741824
"""
MOSQUITTO_CONFIG = """
listener {port} 127.0.0.1
allow_anonymous true
persistence false
log_dest stderr
"""


# -- the workload ------------------------------------------------------------------------
def make_events(n: int, first: int, rng: random.Random) -> list[dict[str, Any]]:
    """``n`` quotes numbered from ``first`` (``i``), symbols at random, prices within ±20 %
    of a per-symbol base (two decimals)."""
    out = []
    for j in range(n):
        k = rng.randrange(len(SYMBOLS))
        price = round((20.0 + 4.0 * k) * rng.uniform(0.8, 1.2), 2)
        out.append(
            {
                "symbol": SYMBOLS[k],
                "price": price,
                "bid": round(price - 0.01, 2),
                "ask": round(price + 0.01, 2),
                "volume": rng.randrange(100, 100_000, 100),
                "exchange": "XNAS",
                "i": first + j,
            }
        )
    return out


def thresholds(events: list[dict[str, Any]]) -> dict[str, float]:
    """Per symbol, X between two prices (prices have two decimals) near the median, so
    that about half of the symbol's quotes have price > X."""
    prices: dict[str, list[float]] = {}
    for e in events:
        prices.setdefault(e["symbol"], []).append(e["price"])
    return {
        s: float(f"{round(statistics.median(prices.get(s, [0.0])), 2) + 0.005:.3f}")
        for s in SYMBOLS
    }


def subscriber_specs(workload: str, xs: dict[str, float]) -> list[dict[str, Any]]:
    """One spec per subscriber: ``symbol`` (None: every symbol) and ``min`` (the price a
    wanted quote is above; None: any)."""
    if workload in ("W1", "chain", "sse"):
        return [{"symbol": None, "min": None}]
    if workload == "W2":
        return [{"symbol": s, "min": None} for s in SYMBOLS]
    return [{"symbol": s, "min": xs[s]} for s in SYMBOLS]


def wanted(spec: dict[str, Any], ev: dict[str, Any]) -> bool:
    return (spec["symbol"] is None or ev["symbol"] == spec["symbol"]) and (
        spec["min"] is None or ev["price"] > spec["min"]
    )


def expectation(spec: dict[str, Any], events: list[dict[str, Any]], content: bool) -> dict:
    """What one subscriber must receive: the number and the sum of the event numbers of
    the wanted events, and how many unwanted events of its symbol arrive (``content``:
    the broker filters on the price, so none)."""
    ids = [e["i"] for e in events if wanted(spec, e)]
    same = sum(1 for e in events if spec["symbol"] in (None, e["symbol"]))
    return {"count": len(ids), "sum": sum(ids), "unwanted": 0 if content else same - len(ids)}


def not_run(system: str, workload: str) -> str | None:
    """Why ``system`` does not run ``workload`` (None: it does)."""
    if workload == "chain" and system == "mosquitto":
        return "no broker network (not benchmarked)"
    if workload == "sse" and system != "pubsift":
        return "no HTTP gateway (not benchmarked)"
    return None


def filter_text(spec: dict[str, Any]) -> str:
    """The pubsift filter of a subscriber spec."""
    if spec["symbol"] is None:
        return "price >= 0"
    if spec["min"] is None:
        return f'symbol = "{spec["symbol"]}"'
    return f'symbol = "{spec["symbol"]}" and price > {spec["min"]:.3f}'


# -- helper processes: subscribers and the publisher --------------------------------------


class Tally:
    """What one subscriber received since the last report."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.symbol, self.min = spec["symbol"], spec["min"]
        self.probed = False
        self.errors: list[str] = []
        self.reset()

    def reset(self) -> None:
        self.ids: list[int] = []
        self.lat: list[float] = []
        self.unwanted = self.stray = self.dups = 0
        self.last: float | None = None
        self.pub_ids: set[Any] = set()

    def got(self, ev: dict[str, Any], pub_id: Any = None) -> None:
        now = time.time()
        if pub_id is not None:
            if pub_id in self.pub_ids:
                self.dups += 1
                return
            self.pub_ids.add(pub_id)
        if ev["i"] < 0:
            self.probed = True
            return
        if self.symbol is not None and ev["symbol"] != self.symbol:
            self.stray += 1
            return
        if self.min is not None and not ev["price"] > self.min:
            self.unwanted += 1
            return
        self.ids.append(ev["i"])
        self.lat.append(now - ev["ts"])
        self.last = now

    def report(self, latencies: bool, client_dups: int = 0) -> dict[str, Any]:
        out = {
            "count": len(self.ids),
            "distinct": len(set(self.ids)),
            "sum": sum(self.ids),
            "unwanted": self.unwanted,
            "stray": self.stray,
            "dups": self.dups + client_dups,
            "last": self.last,
            "latency": self.lat if latencies else [],
            "errors": self.errors,
        }
        self.reset()
        self.errors = []
        return out


class MqttLoop:
    """paho-mqtt on the asyncio loop (paho's own asyncio pattern: the socket callbacks
    register the socket with the loop; ``loop_misc`` once a second for keep-alives).
    ``on_message`` must bump ``self.received``: a readable socket is read packet after
    packet while they come, not one packet per loop iteration."""

    def __init__(self, client: Any) -> None:
        self.client, self.loop = client, asyncio.get_running_loop()
        self.received = 0
        self.misc: asyncio.Task[None] | None = None
        client.on_socket_open = self._open
        client.on_socket_close = self._close
        client.on_socket_register_write = self._want_write
        client.on_socket_unregister_write = self._done_writing

    def _open(self, client: Any, userdata: Any, sock: Any) -> None:
        self.loop.add_reader(sock, self._read)
        self.misc = self.loop.create_task(self._misc())

    def _read(self) -> None:
        for _ in range(1000):
            before = self.received
            self.client.loop_read()
            if self.received == before:
                break

    def _close(self, client: Any, userdata: Any, sock: Any) -> None:
        self.loop.remove_reader(sock)
        if self.misc is not None:
            self.misc.cancel()

    def _want_write(self, client: Any, userdata: Any, sock: Any) -> None:
        self.loop.add_writer(sock, client.loop_write)

    def _done_writing(self, client: Any, userdata: Any, sock: Any) -> None:
        self.loop.remove_writer(sock)

    async def _misc(self) -> None:
        import paho.mqtt.client as mqtt

        while self.client.loop_misc() == mqtt.MQTT_ERR_SUCCESS:
            await asyncio.sleep(1.0)


async def mqtt_client(url: str, cid: str, tally: Tally | None = None) -> tuple[Any, MqttLoop]:
    """A connected paho client (MQTT 3.1.1, clean session) on the running loop."""
    import paho.mqtt.client as mqtt

    host, port = url.rsplit(":", 1)
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=cid)
    helper = MqttLoop(client)
    up: asyncio.Future[Any] = helper.loop.create_future()
    client.on_connect = lambda c, u, f, rc, p: up.done() or up.set_result(rc)

    def gone(c: Any, u: Any, f: Any, rc: Any, p: Any) -> None:
        if tally is not None:
            tally.errors.append(f"{cid}: disconnected: {rc}")

    client.on_disconnect = gone
    client.connect(host, int(port), keepalive=60)
    rc = await asyncio.wait_for(up, 30)
    if rc.is_failure:
        raise ConnectionError(f"{cid}: mosquitto refused the connection: {rc}")
    return client, helper


async def close_client(system: str, conn: Any) -> None:
    """Close a client of ``system`` (None: nothing to close)."""
    if conn is None:
        return
    if system == "pubsift":
        await conn.close(unsubscribe=False)
    elif system in ("sse", "nats"):
        await conn.close()
    else:
        conn.disconnect()
        await asyncio.sleep(0)


class Subscriber:
    """One subscriber client of a system; :meth:`open` returns once its subscription is
    in at its broker."""

    def __init__(self, system: str, url: str, cid: str, spec: dict[str, Any]) -> None:
        self.system, self.url, self.cid, self.spec = system, url, cid, spec
        self.tally = Tally(spec)
        self.conn: Any = None

    @property
    def subject(self) -> str:
        s = self.spec["symbol"]
        if self.system == "nats":
            return "quotes.>" if s is None else f"quotes.{s}"
        return "quotes/#" if s is None else f"quotes/{s}"

    async def open(self) -> None:
        tally = self.tally
        if self.system == "pubsift":
            from pubsift.adapters.broker.client import AsyncClient

            self.conn = await connected(AsyncClient(self.url, id=self.cid))
            await self.conn.subscribe(
                "records",
                filter_text(self.spec),
                lambda n: tally.got(n.wire, (n.publisher, n.seq)),
                confirm=True,
                timeout=30,
            )
        elif self.system == "sse":
            self.conn = await SseReader.open(self.url, filter_text(self.spec), self.cid, tally)
        elif self.system == "nats":
            import nats

            async def error(exc: Exception) -> None:
                tally.errors.append(f"{self.cid}: {type(exc).__name__}: {exc}")

            async def got(msg: Any) -> None:
                tally.got(json.loads(msg.data))

            self.conn = await nats.connect(
                self.url, name=self.cid, allow_reconnect=False, connect_timeout=10, error_cb=error
            )
            await self.conn.subscribe(self.subject, cb=got)
            await self.conn.flush(timeout=30)
        else:
            client, helper = await mqtt_client(self.url, self.cid, tally)
            done: asyncio.Future[Any] = helper.loop.create_future()

            def got(c: Any, u: Any, msg: Any) -> None:
                helper.received += 1
                tally.got(json.loads(msg.payload))

            client.on_message = got
            client.on_subscribe = lambda c, u, mid, rcs, p: done.done() or done.set_result(rcs)
            client.subscribe(self.subject, qos=0)
            rcs = await asyncio.wait_for(done, 30)
            if any(rc.is_failure for rc in rcs):
                raise ConnectionError(f"{self.cid}: subscription refused: {rcs}")
            self.conn = client

    def report(self, latencies: bool) -> dict[str, Any]:
        dups = getattr(self.conn, "duplicates", 0) if self.system == "pubsift" else 0
        base = getattr(self, "_dups0", 0)
        self._dups0 = dups
        return self.tally.report(latencies, dups - base)

    async def close(self) -> None:
        await close_client(self.system, self.conn)


class SseReader:
    """A lean Server-Sent Events subscriber of the pubsift HTTP gateway (docs/protocol.md
    §9) with aiohttp: ``id:`` and ``data:`` lines, ``orjson.loads`` on each data line, the
    event and ``(publisher, seq)`` into the tally; an ``event: error`` or the stream's end
    before :meth:`close` is an error of the tally."""

    def __init__(self, session: Any, resp: Any, cid: str, tally: Tally) -> None:
        self.session, self.resp, self.cid, self.tally = session, resp, cid, tally
        self.last_id = b""
        self.closing = False
        self.subscribed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.task = asyncio.ensure_future(self._read())

    @classmethod
    async def open(cls, url: str, flt: str, cid: str, tally: Tally) -> SseReader:
        """Connected once the gateway's first comment (``: subscribed as ...``) arrived."""
        import aiohttp

        session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, connect=30))
        try:
            resp = await session.get(
                f"{url}/subscribe/records",
                params={"filter": flt},
                headers={"Accept": "text/event-stream"},
            )
            if resp.status != 200:
                raise ConnectionError(f"{cid}: HTTP {resp.status}: {await resp.text()}")
            reader = cls(session, resp, cid, tally)
            await asyncio.wait_for(asyncio.shield(reader.subscribed), 30)
            return reader
        except BaseException:
            await session.close()
            raise

    async def _read(self) -> None:
        import orjson

        loads, got, tally = orjson.loads, self.tally.got, self.tally
        buf, event = b"", b""
        try:
            async for chunk in self.resp.content.iter_any():
                *lines, buf = (buf + chunk).split(b"\n")
                for line in lines:
                    if line.startswith(b"data: "):
                        if event:
                            tally.errors.append(f"{self.cid}: event {event!r}: {line[6:]!r}")
                            continue
                        d = loads(line[6:])
                        got(d["event"], (d["publisher"], d["seq"]))
                    elif line.startswith(b"id: "):
                        self.last_id = line[4:]
                    elif not line:
                        event = b""
                    elif line.startswith(b"event: "):
                        event = line[7:]
                    elif line.startswith(b": subscribed") and not self.subscribed.done():
                        self.subscribed.set_result(None)
            if not self.closing:
                tally.errors.append(f"{self.cid}: the SSE stream ended")
        except Exception as exc:
            if not self.closing:
                tally.errors.append(f"{self.cid}: {type(exc).__name__}: {exc}")
        finally:
            if not self.subscribed.done():
                self.subscribed.set_exception(ConnectionError(f"{self.cid}: no SSE stream"))

    async def close(self) -> None:
        self.closing = True
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        self.resp.close()
        await self.session.close()


class Publisher:
    """The publishing client of a system."""

    def __init__(self, system: str, url: str, cid: str) -> None:
        self.system, self.url, self.cid = system, url, cid
        self.conn: Any = None
        self.many = False

    async def open(self) -> None:
        if self.system == "pubsift":
            from pubsift.adapters.broker.client import AsyncClient

            self.conn = await connected(AsyncClient(self.url, id=self.cid))
            self.many = callable(getattr(self.conn, "publish_many", None))
        elif self.system == "nats":
            import nats

            self.conn = await nats.connect(
                self.url, name=self.cid, allow_reconnect=False, connect_timeout=10
            )
        else:
            self.conn, _ = await mqtt_client(self.url, self.cid)

    async def send(self, events: list[dict[str, Any]]) -> None:
        """Publish ``events`` (stamping each with the time); one ``publish_many`` where
        the pubsift client has it and there are several."""
        c = self.conn
        if self.system == "pubsift":
            if self.many and len(events) > 1:
                now = time.time()
                for ev in events:
                    ev["ts"] = now
                done = c.publish_many("records", events)
                if inspect.isawaitable(done):
                    await done
                return
            for ev in events:
                ev["ts"] = time.time()
                await c.publish("records", ev)
        elif self.system == "nats":
            for ev in events:
                ev["ts"] = time.time()
                await c.publish("quotes." + ev["symbol"], json.dumps(ev).encode())
        else:
            for ev in events:
                ev["ts"] = time.time()
                c.publish("quotes/" + ev["symbol"], json.dumps(ev), qos=0)

    async def flush(self, timeout: float = 300.0) -> None:
        """Until the broker has read everything sent (pubsift: a ``stats`` round trip;
        NATS: PING/PONG; MQTT QoS 0 has no round trip: until paho's queue is written)."""
        if self.system == "pubsift":
            await self.conn.stats(timeout=timeout)
        elif self.system == "nats":
            await self.conn.flush(timeout=int(timeout))
        else:
            end = time.monotonic() + timeout
            while self.conn.want_write():
                if time.monotonic() > end:
                    raise TimeoutError("paho did not write its queue")
                await asyncio.sleep(0.001)

    async def probe(self) -> None:
        """One probe per symbol (``i`` = -1, a price every filter wants)."""
        await self.send([{"symbol": s, "price": 1e9, "i": -1} for s in SYMBOLS])
        await self.flush(30)

    async def close(self) -> None:
        await close_client(self.system, self.conn)


async def publish(pub: Publisher, cmd: dict[str, Any]) -> dict[str, Any]:
    """Publish the events of ``cmd["file"]`` from wall time ``cmd["start"]``: unpaced in
    chunks (``cmd["rate"]`` 0) or at ``cmd["rate"]`` per second (at most three times the
    time that takes); then until the broker has read them (:meth:`Publisher.flush`)."""
    with open(cmd["file"]) as fh:
        events = [json.loads(x) for x in fh]
    rate = cmd["rate"]
    await asyncio.sleep(max(0.0, cmd["start"] - time.time()))
    cpu0, t0, sent = cpu_seconds(), time.time(), 0
    if not rate:
        while sent < len(events):
            part = events[sent : sent + CHUNK]
            await pub.send(part)
            sent += len(part)
            await asyncio.sleep(0)  # let the client's writer run
    else:
        limit = 3 * len(events) / rate
        while sent < len(events) and time.time() - t0 < limit:
            due = min(len(events), int((time.time() - t0) * rate) + 1)
            if due > sent:
                await pub.send(events[sent:due])
                sent = due
            await asyncio.sleep(max(0.0, t0 + sent / rate - time.time()))
    published = time.time() - t0
    await pub.flush()
    return {
        "sent": sent,
        "t0": t0,
        "published_s": published,
        "seconds": time.time() - t0,
        "cpu": cpu_seconds() - cpu0,
    }


async def worker() -> None:
    """A helper process, driven by lines on standard input, one answer line each on
    standard output (an answer ``{"error": ...}`` when a command failed):
    ``subscribe JSON`` (``{"system", "url", "subs": [{"id", "symbol", "min"}]}``) ->
    ``ready`` once every subscription is in; ``publisher JSON`` (``{"system", "url",
    "id"}``) -> ``ready``; ``probed`` -> how many subscribers saw a probe; ``count`` ->
    wanted notifications so far; ``cpu`` -> CPU seconds so far; ``report [lat]`` -> per
    subscriber what arrived since the last report (with latencies) and the CPU seconds;
    ``probe`` -> ``ok`` after a probe round; ``publish JSON`` -> see :func:`publish`;
    ``close`` -> ``ok`` once every client is closed; ``quit`` (or end of input)."""
    subs: list[Subscriber] = []
    pub: Publisher | None = None
    loop, out = asyncio.get_running_loop(), sys.stdout

    async def close() -> None:
        nonlocal subs, pub
        for s in subs:
            await s.close()
        if pub is not None:
            await pub.close()
        subs, pub = [], None

    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        word, _, arg = line.partition(" ")
        answer: Any
        try:
            if word == "subscribe":
                spec = json.loads(arg)
                subs = [Subscriber(spec["system"], spec["url"], s["id"], s) for s in spec["subs"]]
                for s in subs:
                    await s.open()
                answer = "ready"
            elif word == "publisher":
                spec = json.loads(arg)
                pub = Publisher(spec["system"], spec["url"], spec["id"])
                await pub.open()
                answer = "ready"
            elif word == "probed":
                answer = sum(s.tally.probed for s in subs)
            elif word == "count":
                answer = sum(len(s.tally.ids) for s in subs)
            elif word == "cpu":
                answer = cpu_seconds()
            elif word == "report":
                answer = {"subs": [s.report(arg == "lat") for s in subs], "cpu": cpu_seconds()}
            elif word == "probe" and pub is not None:
                await pub.probe()
                answer = "ok"
            elif word == "publish" and pub is not None:
                answer = await publish(pub, json.loads(arg))
            elif word == "close":
                await close()
                answer = "ok"
            else:
                break
        except Exception as exc:
            answer = {"error": f"{word}: {type(exc).__name__}: {exc}"}
        out.write((answer if isinstance(answer, str) else json.dumps(answer)) + "\n")
        out.flush()
    await close()


class Worker:
    """A helper process (:func:`worker`); every answer is awaited with a timeout (a
    thread reads its output)."""

    def __init__(self, tmp: Path, name: str) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(tmp / f"{name}.log", "w"),  # noqa: SIM115 - closed with the process
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put("")

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def answer(self, timeout: float = 60.0) -> Any:
        try:
            got = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(f"helper {self.name}: no answer within {timeout:g} s") from None
        if not got:
            raise RuntimeError(f"helper {self.name} ended: exit {self.proc.wait(5)}")
        value = got if got in ("ready", "ok") else json.loads(got)
        if isinstance(value, dict) and "error" in value:
            raise RuntimeError(f"helper {self.name}: {value['error']}")
        return value

    def ask(self, line: str, timeout: float = 60.0) -> Any:
        self.send(line)
        return self.answer(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send("quit")
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(5)


# -- brokers -----------------------------------------------------------------------------


def until(cond: Any, timeout: float, what: str, procs: list[subprocess.Popen]) -> None:
    end = time.monotonic() + timeout
    while True:
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what}: {p.args[0]} ended (exit {p.returncode})")
        try:
            if cond():
                return
        except (OSError, ValueError):
            pass
        if time.monotonic() > end:
            raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.1)


class Brokers:
    """The broker processes of one system for one run: ``n`` nodes in a chain (pubsift),
    a cluster (NATS) or one (Mosquitto); ``urls[0]`` the publisher's, ``urls[-1]`` the
    subscribers'."""

    def __init__(self, system: str, n: int, tmp: Path, gateway: bool = False) -> None:
        self.system, self.tmp = system, tmp
        self.procs: list[subprocess.Popen] = []
        self.urls: list[str] = []
        #: the HTTP gateway of the last pubsift broker (``gateway``), else ""
        self.gateway = ""
        tmp.mkdir(parents=True, exist_ok=True)
        try:
            getattr(self, "_start_" + system)(n, gateway)
        except BaseException:
            self.close()
            raise

    def _spawn(self, cmd: list[str], name: str) -> subprocess.Popen:
        with open(self.tmp / f"{name}.log", "w") as log:
            p = subprocess.Popen(cmd, stdout=log, stderr=log)
        self.procs.append(p)
        return p

    def _start_pubsift(self, n: int, gateway: bool) -> None:
        config = self.tmp / "broker.toml"
        config.write_text(PUBSIFT_CONFIG)
        gw_port, gw_config = 0, self.tmp / "broker-gateway.toml"
        if gateway:
            (gw_port,) = free_ports(1)
            gw_config.write_text(PUBSIFT_CONFIG + f'[gateway]\nlisten = "127.0.0.1:{gw_port}"\n')
        for k in range(n):
            pf = self.tmp / f"b{k}.port"
            conf = gw_config if gateway and k == n - 1 else config
            cmd = [sys.executable, "-m", "pubsift.cli", "broker", "--config", str(conf)]
            cmd += ["--id", f"b{k}", "--listen", "127.0.0.1:0", "--port-file", str(pf)]
            if k:
                cmd += ["--neighbour", self.urls[-1].removeprefix("pubsift://")]
            p = self._spawn(cmd, f"b{k}")
            until(pf.exists, 30, f"pubsift broker b{k} to listen (see {self.tmp})", [p])
            until(lambda: pf.read_text().strip().isdigit(), 5, "its port file", [p])
            self.urls.append(f"pubsift://127.0.0.1:{int(pf.read_text())}")
        want = [min(k, 1) + (k < n - 1) for k in range(n)]
        until(
            lambda: [len(pubsift_stats(u)["neighbours"]) for u in self.urls] == want,
            30,
            f"the pubsift broker links (see {self.tmp})",
            self.procs,
        )
        if gateway:

            def listening() -> bool:
                with socket.create_connection(("127.0.0.1", gw_port), timeout=1):
                    return True

            until(listening, 30, f"the pubsift HTTP gateway (see {self.tmp})", self.procs)
            self.gateway = f"http://127.0.0.1:{gw_port}"

    def _start_nats(self, n: int, gateway: bool) -> None:
        ports = free_ports(3 * n)
        client, route, http = ports[:n], ports[n : 2 * n], ports[2 * n :]
        binary = shutil.which("nats-server") or "/usr/sbin/nats-server"
        for k in range(n):
            cmd = [binary, "-a", "127.0.0.1", "-p", str(client[k]), "-m", str(http[k])]
            cmd += ["-n", f"n{k}"]
            if n > 1:
                cmd += ["--cluster_name", "bench", "--cluster", f"nats://127.0.0.1:{route[k]}"]
                cmd += [
                    "--routes",
                    ",".join(f"nats://127.0.0.1:{route[j]}" for j in range(n) if j != k),
                ]
            self._spawn(cmd, f"n{k}")
            self.urls.append(f"nats://127.0.0.1:{client[k]}")

        def routes(port: int) -> int:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/routez", timeout=2) as r:
                return int(json.load(r)["num_routes"])

        until(
            lambda: all(routes(h) == n - 1 for h in http),
            30,
            f"the NATS servers and their routes (see {self.tmp})",
            self.procs,
        )

    def _start_mosquitto(self, n: int, gateway: bool) -> None:
        (port,) = free_ports(1)
        config = self.tmp / "mosquitto.conf"
        config.write_text(MOSQUITTO_CONFIG.format(port=port))
        binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self._spawn([binary, "-c", str(config)], "mosquitto")
        self.urls.append(f"127.0.0.1:{port}")

        def listening() -> bool:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True

        until(listening, 30, f"mosquitto to listen (see {self.tmp})", self.procs)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def cpu(self) -> float:
        return sum(proc_cpu(p.pid) for p in self.procs)

    def check_alive(self) -> None:
        for p in self.procs:
            if p.poll() is not None:
                raise RuntimeError(f"{p.args[0]} ended (exit {p.returncode}); see {self.tmp}")

    def close(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)


def pubsift_stats(url: str) -> dict[str, Any]:
    from pubsift.adapters.broker.client import connect

    with connect(url, id=f"bench-probe-{time.monotonic_ns()}") as c:
        return c.stats(timeout=30)


def installed(system: str) -> str | None:
    """None if ``system`` can run here, else how to install what is missing."""
    need = {"nats": ("nats-server", "nats"), "mosquitto": ("mosquitto", "paho")}
    if system == "pubsift":
        return None
    binary, module = need[system]
    if not (shutil.which(binary) or Path("/usr/sbin", binary).exists()):
        return f"{binary} not found: install it with `{INSTALL}`"
    if importlib.util.find_spec(module) is None:
        pkg = {"nats": "nats-py", "paho": "paho-mqtt"}[module]
        return f"the Python client {pkg} is missing: `.venv/bin/pip install {pkg}` (dev extra)"
    return None


# -- one run -----------------------------------------------------------------------------
@dataclass
class Phase:
    """One publishing run (saturation or paced) and what arrived."""

    sent: int = 0
    expected: int = 0
    delivered: int = 0
    received: int = 0  # all notifications of the subscribers' symbols, wanted or not
    span: float = 0.0  # first publication to last arrival, seconds
    published_s: float = 0.0  # first to last publication
    p50_ms: float | None = None  # paced runs only
    p99_ms: float | None = None
    broker_cpu: float = 0.0  # seconds
    pub_cpu: float = 0.0
    sub_cpu: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.delivered / self.span if self.span > 0 else 0.0

    def per_pub_us(self, seconds: float) -> float:
        return 1e6 * seconds / self.sent if self.sent else float("nan")

    def as_json(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "expected": self.expected,
            "delivered": self.delivered,
            "received": self.received,
            "notifications_per_s": self.rate,
            "sent_per_s": self.sent / self.published_s if self.published_s else None,
            "span_s": self.span,
            "p50_ms": self.p50_ms,
            "p99_ms": self.p99_ms,
            "broker_cpu_s": self.broker_cpu,
            "broker_cpu_us_per_pub": self.per_pub_us(self.broker_cpu),
            "pub_cpu_us_per_pub": self.per_pub_us(self.pub_cpu),
            "sub_cpu_us_per_notification": 1e6 * self.sub_cpu / self.delivered
            if self.delivered
            else None,
            "problems": self.problems,
        }


@dataclass
class Run:
    """One system on one workload: the saturation repeats and the paced run."""

    system: str
    workload: str
    saturation: list[Phase]
    paced: Phase

    @property
    def problems(self) -> list[str]:
        return [
            f"saturation {k + 1}: {p}" for k, ph in enumerate(self.saturation) for p in ph.problems
        ] + [f"paced: {p}" for p in self.paced.problems]

    def median(self, figure: Any) -> tuple[float, float]:
        """``figure(phase)`` over the saturation repeats: the median and the spread
        (max - min) / median."""
        xs = [figure(ph) for ph in self.saturation]
        m = statistics.median(xs)
        return m, (max(xs) - min(xs)) / m if m else 0.0

    @property
    def rate(self) -> tuple[float, float]:
        return self.median(lambda ph: ph.rate)

    @property
    def broker_us(self) -> tuple[float, float]:
        return self.median(lambda ph: ph.per_pub_us(ph.broker_cpu))

    @property
    def pub_us(self) -> float:
        return self.median(lambda ph: ph.per_pub_us(ph.pub_cpu))[0]

    @property
    def sub_us(self) -> float:
        return self.median(lambda ph: 1e6 * ph.sub_cpu / max(ph.delivered, 1))[0]

    @property
    def sent_rate(self) -> float:
        return self.median(lambda ph: ph.sent / ph.published_s if ph.published_s else 0.0)[0]


def ms(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def check(
    system: str,
    reports: list[dict[str, Any]],
    expected: list[dict[str, Any]],
    names: list[str],
) -> list[str]:
    """What went wrong, per subscriber: lost, duplicated, stray or unwanted
    notifications, client errors."""
    out = []
    for name, r, e in zip(names, reports, expected):
        what = []
        if r["count"] != e["count"]:
            what.append(f"{r['count']} of {e['count']} arrived")
        if r["distinct"] != r["count"]:
            what.append(f"{r['count'] - r['distinct']} duplicates")
        elif r["count"] == e["count"] and r["sum"] != e["sum"]:
            what.append("other events than expected")
        if r["dups"]:
            what.append(f"{r['dups']} duplicate (publisher, seq)")
        if r["stray"]:
            what.append(f"{r['stray']} of other symbols")
        if r["unwanted"] != e["unwanted"]:
            what.append(f"{r['unwanted']} outside the filter (expected {e['unwanted']})")
        what += r["errors"]
        if what:
            out.append(f"{system} {name}: " + "; ".join(what))
    return out


def run_one(
    system: str,
    workload: str,
    files: dict[str, Path],
    events: dict[str, list[dict[str, Any]]],
    xs: dict[str, float],
    tmp: Path,
    subw: list[Worker],
    pubw: Worker,
    say: Any,
    repeats: int,
    spy: Path | None = None,
) -> Run:
    specs = subscriber_specs(workload, xs)
    names = [f"sub-{system}-{workload}-{j:03d}" for j in range(len(specs))]
    groups: list[list[int]] = [[] for _ in subw]
    for j in range(len(specs)):
        groups[j % len(subw)].append(j)
    used = [(w, g) for w, g in zip(subw, groups) if g]
    content = system == "pubsift"
    sse = workload == "sse"
    brokers = Brokers(
        system, 3 if workload == "chain" else 1, tmp / f"{system}-{workload}", gateway=sse
    )
    try:
        sub_system, sub_url = ("sse", brokers.gateway) if sse else (system, brokers.urls[-1])
        for w, g in used:
            subs = [{"id": names[j], **specs[j]} for j in g]
            w.send("subscribe " + json.dumps({"system": sub_system, "url": sub_url, "subs": subs}))
        pubw.send(
            "publisher "
            + json.dumps(
                {"system": system, "url": brokers.urls[0], "id": f"pub-{system}-{workload}"}
            )
        )
        for w in [w for w, _ in used] + [pubw]:
            w.answer(120)
        # the subscriptions are in everywhere once every subscriber has seen a probe
        end = time.monotonic() + 60
        while sum(w.ask("probed") for w, _ in used) < len(specs):
            if time.monotonic() > end:
                raise RuntimeError(f"{system} {workload}: probes did not reach every subscriber")
            pubw.ask("probe", 60)
            time.sleep(0.1)
        for w, _ in used:
            w.ask("report")  # forget the probes
        phases = []
        plan = [("saturation", 0.0)] * repeats + [("paced", PACED_RATE)]
        for step, (kind, rate) in enumerate(plan):
            evs = events[kind]
            exp = [expectation(s, evs, content) for s in specs]
            want = sum(e["count"] for e in exp)
            cpu_b0, cpu_w0 = brokers.cpu(), [w.ask("cpu") for w, _ in used]
            spying = None
            if spy is not None and step == 0:
                spying = subprocess.Popen(
                    [py_spy(), "record", "--pid", str(brokers.pids[0]), "--format", "raw"]
                    + ["--function", "--nonblocking", "--rate", "250", "-o", str(spy)],
                    stdout=subprocess.DEVNULL,
                    stderr=open(f"{spy}.log", "w"),  # noqa: SIM115 - closed with it
                )
                time.sleep(1.0)
            cmd = {"file": str(files[kind]), "rate": rate, "start": time.time() + 0.2}
            done = pubw.ask("publish " + json.dumps(cmd), timeout=900)
            # drain: until everything expected arrived, or nothing more for 5 s
            got, still, end = -1, time.monotonic(), time.monotonic() + 600
            while time.monotonic() < end:
                now = sum(w.ask("count") for w, _ in used)
                if now >= want:
                    break
                if now != got:
                    got, still = now, time.monotonic()
                elif time.monotonic() - still > 5.0:
                    break
                time.sleep(0.05)
            cpu_b1 = brokers.cpu()
            if spying is not None:
                spying.send_signal(signal.SIGINT)
                try:
                    spying.wait(30)
                except subprocess.TimeoutExpired:
                    spying.kill()
                    spying.wait(5)
            time.sleep(SETTLE)
            brokers.check_alive()
            answers = [w.ask("report lat" if rate else "report") for w, _ in used]
            reports = [None] * len(specs)
            for (_, g), a in zip(used, answers):
                for j, r in zip(g, a["subs"]):
                    reports[j] = r
            ph = Phase(sent=done["sent"], expected=want, published_s=done["published_s"])
            ph.delivered = sum(r["count"] for r in reports)
            ph.received = ph.delivered + sum(r["unwanted"] for r in reports)
            lasts = [r["last"] for r in reports if r["last"] is not None]
            ph.span = max(lasts) - done["t0"] if lasts else 0.0
            lats = sorted(x for r in reports for x in r["latency"])
            if lats:
                ph.p50_ms = 1e3 * statistics.median(lats)
                ph.p99_ms = 1e3 * lats[min(len(lats) - 1, int(0.99 * len(lats)))]
            ph.broker_cpu = cpu_b1 - cpu_b0
            ph.pub_cpu = done["cpu"]
            ph.sub_cpu = sum(a["cpu"] - c0 for a, c0 in zip(answers, cpu_w0))
            if done["sent"] != len(evs):
                ph.problems.append(f"{system}: published {done['sent']} of {len(evs)}")
            ph.problems += check(system, reports, exp, names)
            phases.append(ph)
            label = kind if rate else f"{kind} {step + 1}/{repeats}"
            say(
                f"  {system:<9} {workload:<5} {label:<16}: {ph.delivered:,}/{want:,} in "
                f"{ph.span:.2f} s = {ph.rate:,.0f} notifications/s, broker "
                f"{ph.per_pub_us(ph.broker_cpu):,.1f} µs/pub"
                + (f", p50 {ms(ph.p50_ms)} ms, p99 {ms(ph.p99_ms)} ms" if rate else "")
                + ("" if not ph.problems else f"  [{len(ph.problems)} PROBLEMS]")
            )
        return Run(system, workload, phases[:-1], phases[-1])
    finally:
        for w, _ in used:
            if w.proc.poll() is None:
                try:
                    w.ask("close", 60)
                except RuntimeError as exc:
                    say(f"  {exc}")
        if pubw.proc.poll() is None:
            try:
                pubw.ask("close", 60)
            except RuntimeError as exc:
                say(f"  {exc}")
        brokers.close()


def parse_floor_us(events: list[dict[str, Any]], repeats: int = 5) -> float:
    """CPU µs per event of ``orjson.loads`` alone on the events' JSON (the best of
    ``repeats`` passes): what any broker that routes on the content of JSON events, written
    in Python, spends per publication before it does anything else."""
    import orjson

    texts = [orjson.dumps({**e, "ts": 1764648000.123456}) for e in events]
    loads = orjson.loads
    best = math.inf
    for _ in range(repeats):
        t = time.process_time()
        for text in texts:
            loads(text)
        best = min(best, time.process_time() - t)
    return best / len(texts) * 1e6


def py_spy() -> str:
    """The py-spy command: on the PATH or beside this Python (a venv's bin); "" if none."""
    beside = Path(sys.executable).parent / "py-spy"
    return shutil.which("py-spy") or (str(beside) if beside.exists() else "")


def top_functions(path: Path, n: int = 15) -> list[tuple[str, int, int]]:
    """From py-spy's raw (collapsed) stacks: the ``n`` functions with the most samples
    on top of the stack (own time), each with its own and total samples."""
    own: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        own[frames[-1]] += int(count)
        for f in set(frames):
            total[f] += int(count)
    return [(f, c, total[f]) for f, c in own.most_common(n)]


# -- main --------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        asyncio.run(worker())
        return 0
    sys.path.insert(0, str(HERE))
    from harness import Bench
    from rich.console import Console
    from rich.table import Table

    bench = Bench("brokers", __doc__, argv)
    ap: argparse.ArgumentParser = bench.parser
    ap.add_argument("--events", type=int, help="saturation publications (50,000; quick 10,000)")
    ap.add_argument("--paced", type=int, help="paced publications at 1,000/s (5,000; quick 2,000)")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--py-spy", metavar="PATH", type=Path, help="profile the pubsift broker in W1 (raw stacks)"
    )
    args = bench.parse()
    n_sat = args.events or (10_000 if args.quick else 50_000)
    n_paced = args.paced or (2_000 if args.quick else 5_000)
    workloads = [w for w in args.workloads.split(",") if w]
    for given, known in ((workloads, WORKLOADS), (args.systems.split(","), SYSTEMS)):
        if unknown := [x for x in given if x not in known]:
            ap.error(f"unknown {', '.join(unknown)} (known: {', '.join(known)})")
    console = Console(width=max(Console().width, 160))
    systems = []
    for s in args.systems.split(","):
        missing = installed(s)
        if missing:
            console.print(f"[bold]bench/brokers.py: {s} skipped: {missing}[/bold]")
        else:
            systems.append(s)
    if args.py_spy and not py_spy():
        return bench.skip("--py-spy: py-spy not found (`.venv/bin/pip install py-spy`)")
    rng = random.Random(args.seed)
    events = {
        "saturation": make_events(n_sat, 0, rng),
        "paced": make_events(n_paced, n_sat, rng),
    }
    xs = thresholds(events["saturation"] + events["paced"])
    size = statistics.mean(len(json.dumps({**e, "ts": time.time()})) for e in events["paced"])
    load0 = os.getloadavg()[0]
    import pubsift.core
    from pubsift.adapters.broker.client import AsyncClient

    console.print(
        f"bench/brokers.py: {', '.join(systems)}; {n_sat:,} publications at saturation, "
        f"{n_paced:,} at {PACED_RATE:,.0f}/s; events of {size:.0f} bytes on average; "
        f"{os.cpu_count()} CPUs, load average {load0:.1f}; pubsift from "
        f"{Path(pubsift.core.__file__).parent.parent}, saturation with "
        f"{'publish_many' if hasattr(AsyncClient, 'publish_many') else 'publish'}"
    )
    runs: dict[tuple[str, str], Run] = {}
    errors: dict[tuple[str, str], str] = {}  # runs that could not finish
    with tempfile.TemporaryDirectory(prefix="pubsift-bench-brokers-") as d:
        tmp = Path(d)
        files = {}
        for kind, evs in events.items():
            files[kind] = tmp / f"{kind}.jsonl"
            files[kind].write_text("".join(json.dumps(e) + "\n" for e in evs))
        subw = [Worker(tmp, f"sub{k}") for k in range(SUB_PROCS)]
        pubw = Worker(tmp, "pub")
        try:
            for wl in workloads:
                for s in systems:
                    if not_run(s, wl):
                        continue
                    spy = args.py_spy if (s == "pubsift" and wl == "W1") else None
                    try:
                        runs[(s, wl)] = run_one(
                            s,
                            wl,
                            files,
                            events,
                            xs,
                            tmp,
                            subw,
                            pubw,
                            console.print,
                            args.repeats,
                            spy,
                        )
                    except (RuntimeError, OSError, TimeoutError) as exc:
                        errors[(s, wl)] = f"{type(exc).__name__}: {exc}"
                        console.print(f"[bold red]  {s} {wl} FAILED: {exc}[/bold red]")
        finally:
            for w in [*subw, pubw]:
                w.close()
    load1 = os.getloadavg()[0]

    table = Table(
        title=f"bench/brokers.py: {n_sat:,} publications at saturation, {n_paced:,} paced at "
        f"{PACED_RATE:,.0f}/s, loopback (wall time; load average {load0:.1f} → {load1:.1f} "
        f"on {os.cpu_count()} CPUs)"
    )
    cols = (
        "workload",
        "system",
        "notifications/s",
        "× NATS",
        "sent/s",
        "p50 ms",
        "p99 ms",
        "broker µs/pub",
        "× NATS cpu",
        "pub µs/pub",
        "sub µs/notif",
        "check",
    )
    for col in cols:
        table.add_column(col, justify="left" if col in ("workload", "system", "check") else "right")
    failed = [f"{s} {wl}: {e}" for (s, wl), e in errors.items()]
    for wl in workloads:
        nats_run = runs.get(("nats", wl))
        for s in SYSTEMS:
            if s in systems and (reason := not_run(s, wl)):
                table.add_row(wl, s, *("–" for _ in cols[2:]))
                bench.row(system=s, workload=wl, skipped=reason)
                continue
            if (s, wl) in errors:
                table.add_row(wl, s, *("-" for _ in cols[2:-1]), "[bold red]ERROR[/bold red]")
                bench.row(system=s, workload=wl, error=errors[(s, wl)], ok=False)
                continue
            r = runs.get((s, wl))
            if r is None:
                continue
            (rate, rate_spread), (b_us, b_spread) = r.rate, r.broker_us
            x_rate = x_cpu = None
            if nats_run is not None:
                x_rate = rate / nats_run.rate[0] if nats_run.rate[0] else None
                x_cpu = b_us / nats_run.broker_us[0] if nats_run.broker_us[0] else None
            failed += r.problems
            table.add_row(
                wl,
                s,
                f"{rate:,.0f} ±{rate_spread / 2:.0%}",
                "-" if x_rate is None else f"{x_rate:.2f}",
                f"{r.sent_rate:,.0f}",
                ms(r.paced.p50_ms),
                ms(r.paced.p99_ms),
                f"{b_us:,.1f} ±{b_spread / 2:.0%}",
                "-" if x_cpu is None else f"{x_cpu:.1f}",
                f"{r.pub_us:,.1f}",
                f"{r.sub_us:,.1f}",
                "ok" if not r.problems else f"[bold red]{len(r.problems)} FAILED[/bold red]",
            )
            bench.row(
                system=s,
                workload=wl,
                notifications_per_s=rate,
                notifications_spread=rate_spread,
                vs_nats_notifications=x_rate,
                broker_cpu_us_per_pub=b_us,
                broker_cpu_spread=b_spread,
                vs_nats_broker_cpu=x_cpu,
                pub_cpu_us_per_pub=r.pub_us,
                sub_cpu_us_per_notification=r.sub_us,
                p50_ms=r.paced.p50_ms,
                p99_ms=r.paced.p99_ms,
                saturation=[ph.as_json() for ph in r.saturation],
                paced=r.paced.as_json(),
                ok=not r.problems,
            )
    console.print(table)
    console.print(
        "notifications/s: wanted notifications delivered / (last arrival − first "
        f"publication), median of {args.repeats} saturation runs ± half the spread; × NATS: "
        "that over NATS's (below 1: slower); p50/p99: arrival − publication time at "
        f"{PACED_RATE:,.0f} publications/s; broker µs/pub: CPU of the broker process(es) "
        "per publication (median of the saturation runs), × NATS cpu: that over NATS's "
        "(above 1: costs more); pub µs/pub: the publisher process's CPU per publication; "
        "sub µs/notif: the subscriber processes' CPU per wanted notification."
    )
    labels = {"pubsift": "pubsift", "nats": "NATS", "mosquitto": "Mosquitto"}
    for wl in workloads:
        got = {s: runs[(s, wl)] for s in SYSTEMS if (s, wl) in runs}
        if "pubsift" not in got:
            continue
        p, n = got["pubsift"], got.get("nats")
        names = " / ".join(labels[s] for s in got)
        rates = " / ".join(f"{r.rate[0]:,.0f}" for r in got.values())
        cpu = " / ".join(f"{r.broker_us[0]:,.1f}" for r in got.values())
        lat = " / ".join(ms(r.paced.p99_ms, 1) for r in got.values())
        vs_rate = vs_cpu = ""
        if n is not None and n.rate[0] and n.broker_us[0]:
            vs_rate = f" (pubsift {p.rate[0] / n.rate[0]:.2f}× NATS)"
            vs_cpu = f" (pubsift {p.broker_us[0] / n.broker_us[0]:.1f}× NATS)"
        bench.headline(
            f"brokers {wl}: {names}, Python clients",
            f"{rates} notifications/s{vs_rate}; broker CPU {cpu} µs/pub{vs_cpu}; "
            f"p99 at {PACED_RATE:,.0f}/s {lat} ms",
        )
    floor = parse_floor_us(events["saturation"])
    w1 = runs.get(("nats", "W1"))
    nats_w1 = w1.broker_us[0] if w1 is not None and w1.broker_us[0] else None
    said = (
        f" = {floor / nats_w1:.1f}× NATS's whole broker CPU per publication in W1 "
        f"({nats_w1:.1f} µs): a broker that routes on content parses each event once, "
        "NATS never reads the payload"
        if nats_w1
        else ""
    )
    console.print(
        f"floor: parsing each event once with orjson (the fastest JSON reader for Python), "
        f"nothing else: {floor:.2f} µs per event{said}"
    )
    bench.row(system="floor", workload="orjson.loads per event", cpu_us_per_event=floor)
    bench.headline(
        "brokers floor: orjson.loads of each event alone",
        f"{floor:.2f} µs per event"
        + (f" ({floor / nats_w1:.1f}× NATS's W1 CPU/pub)" if nats_w1 else ""),
    )
    if args.py_spy and not args.py_spy.exists():
        console.print(f"[bold]py-spy wrote no {args.py_spy}: see {args.py_spy}.log")
    if args.py_spy and args.py_spy.exists():
        console.print(f"py-spy, pubsift broker b0, W1 saturation ({args.py_spy}): top by own time")
        rows = top_functions(args.py_spy)
        samples = sum(c for _, c, _ in top_functions(args.py_spy, 10**9))
        for f, own, total in rows:
            console.print(
                f"  {100 * own / samples:5.1f}% own {100 * total / samples:5.1f}% total  {f}"
            )
    if failed:
        console.print("[bold red]LOST OR DUPLICATED NOTIFICATIONS, OR FAILED RUNS:[/bold red]")
        for line in failed:
            console.print(f"  [red]{line}[/red]")
        return bench.finish(1)
    return bench.finish(0)


if __name__ == "__main__":
    sys.exit(main())
