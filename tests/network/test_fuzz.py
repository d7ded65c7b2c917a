"""A fuzzed broker network that keeps routing correctly (issue 15 §2).

Three :class:`BrokerDaemon`\\ s on 127.0.0.1 (a line with covering routing, a star with
merging routing), records and xml, well-behaved subscribers (random filters from a seeded
random set over the vocabulary of the models' ``testing`` modules) and publishers; while
they publish, hostile connections throw random and mutated frames at every broker
(:mod:`.fuzzing`: mutations of captured frames, bombs, external entities, broken framing,
impostor brokers, a slow reader, half-open connections). Then, after the network settles:

* the delivery oracle (:mod:`pubsift.core.oracle`; Mühl, "Large-Scale Content-Based
  Publish/Subscribe Systems", Def. 2.1) holds for the well-behaved clients: each got
  exactly the publications matching its filters, each once;
* every hostile frame got the answer docs/protocol.md §6 gives it (an ``error`` with the
  right reason, or the connection closed with one), and no broker frame leaked a file or an
  expanded entity;
* every broker is still alive and serving (a new client subscribes and is notified), its
  links are up, and nothing raised: no log record with a traceback, no exception reaching
  the event loop's handler.

Volume: ``FRAMES`` hostile frames per network at depth 1 (CI, a few seconds), scaled by
``PUBSIFT_TEST_DEPTH`` (tests/depth.py). ``pytest -s`` prints what was thrown and what came
back; the seed is printed on failure (``PUBSIFT_FUZZ_SEED`` replays one).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import struct
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from depth import deep
from pubsift.adapters.broker import wire
from pubsift.adapters.broker.client import AsyncClient, Notification
from pubsift.adapters.broker.config import Address, BrokerConfig
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.frames import FrameError, encode, hello, read_frame
from pubsift.core import load_model, oracle
from pubsift.core.messages import to_wire
from pubsift.core.network import TraceOp
from pubsift.models.xml.testing import ATTRS, TAGS, VALUES

from .fuzzing import Hostile, Tally, Target

CONFIG: dict[str, Any] = {
    "lease_period": 3.0,
    "lease_refresh": 1.0,
    "lease_max_delay": 0.1,
    "backoff_initial": 0.05,
    "backoff_max": 0.3,
    "models": ("records", "xml"),
    "max_frame_bytes": 1 << 16,
    "max_queue": 256,
    # Long enough that a loaded machine (one event loop runs brokers, clients and hostile
    # sessions) is not mistaken for a silent peer; the heartbeat's own test uses 0.5 s.
    "heartbeat_interval": 2.0,
    "heartbeat_max_missed": 2,
    "hello_timeout": 1.0,
}
#: hostile frames per network (client sessions; framing, hello and impostor sessions on top)
FRAMES = deep(400)
SESSIONS = deep(40)
PUBLICATIONS = deep(40)  # per publisher (one per broker)
SEED = int(os.environ.get("PUBSIFT_FUZZ_SEED", "0")) or None


async def until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.02)


def url(d: BrokerDaemon) -> str:
    return f"pubsift://127.0.0.1:{d.address.port}"


# -- the well-behaved workload ---------------------------------------------------------------
STRINGS = ("a", "ab", "b", "A", "ba")


def record_filter(rng: random.Random) -> str:
    x, s, i = rng.choice((-1, 0, 1, 2, 0.5)), rng.choice(STRINGS), rng.randrange(4)
    return rng.choice(
        (
            f"a > {x}",
            f"a in [{x}, {x + 2}]",
            f'b = "{s}"',
            f'b prefix "{s[0]}"',
            f"c = {i}",
            f'a > {x} and b = "{s}"',
            f"c in {{{i}, {(i + 1) % 4}}} and a < 3",
            "c exists",
        )
    )


def xml_filter(rng: random.Random) -> str:
    t, a, v = rng.choice(TAGS), rng.choice(ATTRS), rng.choice(VALUES)
    return rng.choice(
        (
            f"//{t}",
            f"/a/{t}",
            f"//{t}[@{a} = '{v}']",
            f"//a[{t}]",
            f"//{t}[@{a} > 1]",
            f"/a//{t}[text() = '{v}']",
            f"//b/{t}[@{a}]",
        )
    )


def record_event(rng: random.Random) -> dict[str, Any]:
    ev = {
        "a": rng.choice((-1, 0, 1, 2, 3, 0.5, 1.5)),
        "b": rng.choice(STRINGS),
        "c": rng.randrange(5),
    }
    kept = {k: v for k, v in ev.items() if rng.random() < 0.85}
    return kept or {"a": ev["a"]}  # a records event has at least one attribute


def xml_event(rng: random.Random, depth: int = 0) -> str:
    t = rng.choice(TAGS) if depth else "a"
    attrs = "".join(f' {a}="{rng.choice(VALUES)}"' for a in ATTRS if rng.random() < 0.4)
    kids = "".join(xml_event(rng, depth + 1) for _ in range(rng.randrange(3) if depth < 3 else 0))
    text = rng.choice(VALUES) if rng.random() < 0.3 else ""
    return f"<{t}{attrs}>{text}{kids}</{t}>"


class World:
    """The well-behaved clients and the trace the oracle judges."""

    def __init__(self, daemons: list[BrokerDaemon], rng: random.Random) -> None:
        self.daemons = daemons
        self.rng = rng
        self.models = {m: load_model(m) for m in ("records", "xml")}
        self.t0 = time.monotonic()
        self.trace: list[TraceOp] = []
        self.clients: list[AsyncClient] = []
        self.publishers: list[AsyncClient] = []
        self.foreign = Counter[str]()  # notifications from publishers not judged (hostile, probes)
        self.corpus: list[dict[str, Any]] = []
        #: per subscriber, the notify frames of well-behaved publishers as they arrived
        #: (before the client drops duplicates): each must arrive once
        self.raw_notifies: dict[str, Counter[tuple[str, int]]] = {}

    def _counting(self, c: AsyncClient, notify: Callable[[dict[str, Any]], Any]) -> Any:
        async def counted(obj: dict[str, Any]) -> None:
            pid = obj.get("pub_id")
            if isinstance(pid, list) and len(pid) == 2 and str(pid[0]).startswith("p-"):
                self.raw_notifies[c.id][(pid[0], pid[1])] += 1
            await notify(obj)

        return counted

    def now(self) -> float:
        return time.monotonic() - self.t0

    async def start(self) -> None:
        rng = self.rng
        for d in self.daemons:
            for i in range(2):
                cid = f"s-{d.id}-{i}"
                c = AsyncClient(url(d), id=cid, backoff=(0.05, 0.3))
                self.raw_notifies[cid] = Counter()
                c._notify = self._counting(c, c._notify)  # type: ignore[method-assign]
                await c.connect()
                self.clients.append(c)
                last: list[Notification | None] = [None]

                def got(n: Notification, cid: str = cid, last: list = last) -> None:
                    if n is last[0]:  # the same notification, for a second matching filter
                        return
                    last[0] = n
                    if not n.publisher.startswith("p-"):
                        self.foreign[n.publisher.split("-")[0]] += 1
                        return
                    self.trace.append(
                        TraceOp(
                            self.now(),
                            "notify",
                            cid,
                            n.model,
                            event=n.event,
                            pub_id=(n.publisher, n.seq),
                        )
                    )

                for _ in range(rng.choice((1, 2, 3))):
                    model = rng.choice(("records", "xml"))
                    spec = record_filter(rng) if model == "records" else xml_filter(rng)
                    f = self.models[model].parse_filter(spec)
                    await c.subscribe(model, f, got)
                    self.trace.append(TraceOp(self.now(), "sub", cid, model, f))
                    self.corpus.append(c._frame("sub", model, f))
                    self.corpus.append(c._frame("unsub", model, f))
                    self.corpus.append(c._frame("adv", model, f))
                await c.stats()  # the broker has processed the subscriptions
            p = AsyncClient(url(d), id=f"p-{d.id}", backoff=(0.05, 0.3))
            await p.connect()
            self.clients.append(p)
            self.publishers.append(p)
        self.corpus += [
            {"kind": "stats"},
            {"kind": "ping"},
            {"kind": "hello", "protocol": 1, "role": "client", "id": "x"},
        ]
        for _ in range(10):  # captured publication frames (as the client encodes them)
            for model, ev in (("records", record_event(rng)), ("xml", xml_event(rng))):
                m = self.models[model]
                self.corpus.append(
                    {
                        "kind": "pub",
                        "client": "p",
                        "model": model,
                        "event": m.dump_event(m.parse_event(ev)),
                        "pub_id": ["p", 1],
                    }
                )

    async def publish(self, p: AsyncClient, n: int, seed: int) -> None:
        rng = random.Random(seed)
        for i in range(n):
            model = "records" if i % 2 else "xml"
            m = self.models[model]
            ev = m.parse_event(record_event(rng) if model == "records" else xml_event(rng))
            seq = await p.publish(model, ev)
            self.trace.append(TraceOp(self.now(), "pub", p.id, model, event=ev, pub_id=(p.id, seq)))
            await asyncio.sleep(rng.choice((0, 0.005, 0.02)))

    async def serving(self, tag: str, timeout: float = 15.0) -> None:
        """Every broker serves: a new client at each subscribes, and a new publisher at
        every other broker publishes until that client got one notification from each."""
        subs, pubs = [], []
        try:
            got: dict[str, set[str]] = {}
            for d in self.daemons:
                c = AsyncClient(url(d), id=f"probe-{tag}-{d.id}", backoff=(0.05, 0.3))
                await c.connect()
                subs.append(c)
                got[d.id] = set()
                await c.subscribe(
                    "records",
                    f'probe = "{tag}-{d.id}"',
                    lambda n, bid=d.id: got[bid].add(n.publisher),  # type: ignore[misc]
                )
                await c.stats()
            for d in self.daemons:
                p = AsyncClient(url(d), id=f"probe-{tag}-pub-{d.id}", backoff=(0.05, 0.3))
                await p.connect()
                pubs.append(p)
            end = time.monotonic() + timeout
            while True:
                missing = [
                    (d.id, p.id)
                    for d in self.daemons
                    for p in pubs
                    if not p.id.endswith(d.id) and p.id not in got[d.id]
                ]
                if not missing:
                    return
                if time.monotonic() > end:
                    raise AssertionError(f"{tag}: brokers not serving: {missing}")
                for bid, pid in missing:
                    p = next(x for x in pubs if x.id == pid)
                    await p.publish("records", {"probe": f"{tag}-{bid}"})
                await asyncio.sleep(0.1)
        finally:
            for c in subs + pubs:
                await c.close()


# -- the network -----------------------------------------------------------------------------
async def network(shape: str, strategy: str, link_token: str | None) -> list[BrokerDaemon]:
    """b0, b1, b2: a line (b1 dials b0, b2 dials b1) or a star (b1, b2 dial b0)."""
    daemons: list[BrokerDaemon] = []
    for i in range(3):
        dial = () if i == 0 else (daemons[i - 1 if shape == "line" else 0].address,)
        cfg = BrokerConfig(
            id=f"b{i}",
            listen=Address("127.0.0.1", 0),
            neighbours=dial,
            strategy=strategy,
            link_token=link_token,
            **CONFIG,
        )
        d = BrokerDaemon(cfg)
        await d.start()
        daemons.append(d)
    await until(lambda: links(daemons) == wanted(shape), 10, "the links")
    return daemons


def wanted(shape: str) -> dict[str, set[str]]:
    if shape == "line":
        return {"b0": {"b1"}, "b1": {"b0", "b2"}, "b2": {"b1"}}
    return {"b0": {"b1", "b2"}, "b1": {"b0"}, "b2": {"b0"}}


def links(daemons: list[BrokerDaemon]) -> dict[str, set[str]]:
    return {d.id: {n for n in d.port.neighbours if n.startswith("b")} for d in daemons}


def capture(daemons: list[BrokerDaemon], into: list[dict[str, Any]], limit: int = 300) -> None:
    """Keep the wire forms of the first ``limit`` forward/admin/notify messages the brokers
    send (the captured frames the fuzzer mutates)."""
    for d in daemons:
        port = d.port
        send, deliver = port.send, port.deliver

        def tap_send(broker, neighbour, msg, send=send, port=port):  # type: ignore[no-untyped-def]
            if len(into) < limit:
                into.append(to_wire(msg, port.models))
            send(broker, neighbour, msg)

        def tap_deliver(broker, msg, deliver=deliver, port=port):  # type: ignore[no-untyped-def]
            if len(into) < limit:
                into.append(to_wire(msg, port.models))
            deliver(broker, msg)

        port.send = tap_send  # type: ignore[method-assign]
        port.deliver = tap_deliver  # type: ignore[method-assign]


class Problems(logging.Handler):
    """Log records that show a crash: a traceback, or an ERROR nobody expected."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.tracebacks: list[str] = []
        self.levels: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.levels[record.levelname] += 1
        if record.exc_info or "Traceback" in record.getMessage():
            self.tracebacks.append(self.format(record))


async def fuzz(shape: str, strategy: str, seed: int, link_token: str | None = None) -> Tally:
    loop = asyncio.get_running_loop()
    loop_errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, ctx: loop_errors.append(ctx))
    problems = Problems()
    logger = logging.getLogger("pubsift")
    logger.addHandler(problems)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    rng = random.Random(seed)
    tally = Tally()
    daemons = await network(shape, strategy, link_token)
    world = World(daemons, rng)
    broker_corpus: list[dict[str, Any]] = []
    capture(daemons, broker_corpus)
    hostile: Hostile | None = None
    try:
        await world.start()
        await world.serving("ready")
        world.trace.append(TraceOp(world.now(), "quiet"))
        targets = [Target(d, link_token is not None) for d in daemons]
        reserved = {c.id for c in world.clients}
        hostile = Hostile(rng, targets, world.models, world.corpus, broker_corpus, tally, reserved)
        h = hostile

        async def clients() -> None:
            left = FRAMES
            while left > 0:
                n = min(left, rng.randrange(20, 80))
                await h.client_session(n)
                left -= n

        async def sessions() -> None:
            for _ in range(SESSIONS):
                roll = rng.random()
                if roll < 0.5:
                    await h.raw_session()
                elif roll < 0.8:
                    await h.hello_session()
                else:
                    await h.impostor_session()

        async def stalls() -> list[float]:
            return list(
                await asyncio.gather(
                    h.half_open("silent"),
                    h.half_open("stall-before-hello"),
                    h.half_open("stall-mid-frame"),
                )
            )

        pubs = [world.publish(p, PUBLICATIONS, seed + i) for i, p in enumerate(world.publishers)]
        results = await asyncio.gather(
            clients(), clients(), sessions(), stalls(), h.slow_reader(), *pubs
        )
        took = results[3]

        def missing() -> list[oracle.Violation]:
            closed = world.trace + [TraceOp(world.now(), "quiet")]
            return [v for v in oracle.check(closed, world.models).violations if v.kind == "missing"]

        with contextlib.suppress(AssertionError):  # judged below, with the details
            await until(lambda: not missing(), 20, "the notifications still missing")
        await asyncio.sleep(0.3)  # nothing more comes
        world.trace.append(TraceOp(world.now(), "quiet"))
        verdict = oracle.check(world.trace, world.models)
        published = sum(1 for op in world.trace if op.kind == "pub")
        print(f"\n{shape} of 3 brokers, {strategy} routing, seed {seed}")
        print(tally.summary(seed))
        print(
            f"  well-behaved: {published} publications, {verdict.deliveries} notifications, "
            f"{verdict.settled} judged exactly by the oracle: {len(verdict.violations)} violations; "
            f"notifications from hostile publishers (not judged): {dict(world.foreign)}"
        )
        if not verdict.ok:
            times = {op.pub_id: op.time for op in world.trace if op.kind == "pub"}
            for v in verdict.violations[:20]:
                print(
                    f"  {v.kind} {v.pub_id} at {times.get(v.pub_id, -1):.2f} s to {v.client}: {v.detail}"
                )
        print(
            f"  half-open closed after {', '.join(f'{t:.2f}' for t in took)} s; "
            f"broker log records: {dict(problems.levels)}"
        )
        assert verdict.ok, str(verdict)
        assert verdict.settled == published, (verdict.settled, published)
        assert not tally.problems, "\n".join(tally.problems[:30])
        assert not hostile.leaks, hostile.leaks[:5]
        await world.serving("after")
        assert links(daemons) == wanted(shape)
        for c in world.clients:  # (hostile publishers' duplicates are dropped by the client)
            assert c.connections == 1 and not c.errors, (c.id, c.connections, c.errors)
        twice = {c: [k for k, n in seen.items() if n > 1] for c, seen in world.raw_notifies.items()}
        assert not any(twice.values()), twice
        for d in daemons:
            assert not [t for t in d._tasks if t.done()], f"{d.id}: a task ended"
        assert not problems.tracebacks, "\n\n".join(problems.tracebacks[:5])
        assert not loop_errors, loop_errors[:5]
        return tally
    except BaseException:
        print(f"\nfuzz failed with seed {seed} (PUBSIFT_FUZZ_SEED={seed} replays it)")
        if hostile is not None:
            print(tally.summary(seed))
            print("\n".join(tally.problems[:30]))
        raise
    finally:
        for c in world.clients:
            with contextlib.suppress(Exception):
                await c.close()
        for d in daemons:
            await d.stop()
        logger.removeHandler(problems)
        logger.setLevel(old_level)


@pytest.mark.parametrize(
    ("shape", "strategy", "seed"),
    [("line", "covering", 1501), ("star", "merging", 1502)],
)
def test_a_fuzzed_network_keeps_routing_for_the_well_behaved(shape, strategy, seed):
    asyncio.run(asyncio.wait_for(fuzz(shape, strategy, SEED or seed), 120 * max(1, FRAMES / 400)))


# -- what the fuzzer found ---------------------------------------------------------------------
@pytest.mark.parametrize("cover", ["a > 0", "a > 1"], ids=["covering", "identical"])
def test_a_vanished_client_with_a_covering_filter_costs_other_subscribers_nothing(cover):
    """Found by the fuzzer: a hostile client subscribed to a filter covering (or identical
    to) a well-behaved one and went away without unsubscribing; when its lease ran out, its
    broker dropped the entry silently, and the neighbour had no route for the other
    subscription (whose renewals were withheld as covered) until that subscriber renewed it
    again: up to ρ of lost notifications. Now the border broker withdraws the expiring
    entry like an unsubscription and renews what it covered (core Broker.expire)."""

    async def go() -> None:
        cfg = {**CONFIG, "lease_period": 1.0, "lease_refresh": 0.3, "lease_max_delay": 0.05}
        a = BrokerDaemon(BrokerConfig(id="b0", listen=Address("127.0.0.1", 0), **cfg))
        await a.start()
        b = BrokerDaemon(
            BrokerConfig(id="b1", listen=Address("127.0.0.1", 0), neighbours=(a.address,), **cfg)
        )
        await b.start()
        clients: list[AsyncClient] = []
        try:
            await until(lambda: "b1" in a.port.neighbours, 10, "the link")
            got: list[int] = []
            s, h, p = (AsyncClient(url(d), id=i) for d, i in ((b, "s"), (b, "h"), (a, "p")))
            clients += [s, h, p]
            for c in clients:
                await c.connect()
            await s.subscribe("records", "a > 1", lambda n: got.append(n.seq))
            await s.stats()
            await h.subscribe("records", cover, lambda n: None)  # covers s's filter
            await h.stats()
            await until(lambda: a.broker.sizes() == (0, 1), 5, "h's filter at b0")
            await h.close(unsubscribe=False)  # vanishes: its lease runs out in π = 1 s
            n = 0
            end = time.monotonic() + 1.6
            while time.monotonic() < end:
                n = await p.publish("records", {"a": 2})
                await asyncio.sleep(0.02)
            await until(lambda: len(got) >= n, 5, "the last notification")
            assert got == list(range(1, n + 1)), sorted(set(range(1, n + 1)) - set(got))
            assert b.broker.sizes() == (1, 0)
        finally:
            for c in clients:
                await c.close()
            await b.stop()
            await a.stop()

    asyncio.run(asyncio.wait_for(go(), 30))


def test_half_open_connections_are_closed_with_a_reason():
    """``[limits] hello_timeout``: a connection that never says hello, or stalls inside its
    hello, gets ``bad-hello`` after the timeout; one that stalls inside a frame after the
    hello is closed by the heartbeat (``timeout``)."""

    async def go() -> None:
        d = BrokerDaemon(
            BrokerConfig(
                id="b0",
                listen=Address("127.0.0.1", 0),
                **{**CONFIG, "hello_timeout": 0.5, "heartbeat_interval": 0.5},
            )
        )
        await d.start()
        try:

            async def stall(data: bytes) -> tuple[list[dict], float]:
                r, w = await asyncio.open_connection("127.0.0.1", d.address.port)
                t0 = time.monotonic()
                w.write(data)
                out = []
                while (obj := await asyncio.wait_for(read_frame(r, 1 << 20), 5)) is not None:
                    out.append(obj)
                w.close()
                return out, time.monotonic() - t0

            h = encode(hello("client", "half"))
            body = encode({"kind": "sub", "model": "records", "filter": "a > 1"})
            (silent, t1), (half, t2), (mid, t3) = await asyncio.gather(
                stall(b""), stall(h[:7]), stall(h + body[:9])
            )
            for frames, took in ((silent, t1), (half, t2)):
                assert [f.get("reason") for f in frames] == ["bad-hello"], frames
                assert frames[0]["message"] == "no hello within 0.5 s" and 0.4 < took < 3, took
            assert mid[0]["kind"] == "hello" and mid[-1]["reason"] == "timeout", mid
            assert 1.0 < t3 < 5, t3  # (max_missed + 1) · interval = 1.5 s
        finally:
            await d.stop()

    asyncio.run(asyncio.wait_for(go(), 30))


def test_an_oversize_frame_gets_its_error_even_while_the_body_is_still_coming():
    """The broker refuses a frame from its length prefix and closes; closing a socket with
    unread input resets the connection, so the client lost the ``too-large`` error frame
    (the fuzzer saw resets). Now the broker ends its side and drops the rest of the input
    for a moment before closing (``Connection.close(linger=True)``)."""

    async def go() -> None:
        d = BrokerDaemon(BrokerConfig(id="b0", listen=Address("127.0.0.1", 0), **CONFIG))
        await d.start()
        try:
            for _ in range(3):
                r, w = await asyncio.open_connection("127.0.0.1", d.address.port)
                w.write(encode(hello("client", "big")))
                assert (await read_frame(r, 1 << 20))["kind"] == "hello"
                big = b"x" * (4 << 20)
                w.write(struct.pack(">I", len(big)) + big)
                with contextlib.suppress(ConnectionError):
                    await w.drain()
                frames = []
                while (obj := await asyncio.wait_for(read_frame(r, 1 << 20), 5)) is not None:
                    frames.append(obj)
                w.close()
                assert [f.get("reason") for f in frames] == ["too-large"], frames
        finally:
            await d.stop()

    asyncio.run(asyncio.wait_for(go(), 30))


def test_a_broker_frame_missing_a_member_says_which():
    models = {"records": load_model("records")}
    with pytest.raises(FrameError, match=r"forward: missing member 'event'"):
        wire.from_broker({"kind": "forward", "model": "records", "pub_id": ["p", 1]}, models)
    with pytest.raises(FrameError, match=r"admin: missing member 'unsubs'"):
        wire.from_broker({"kind": "admin", "model": "records", "level": "S", "subs": []}, models)
