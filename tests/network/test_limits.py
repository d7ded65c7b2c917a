"""Per-client limits of a broker exposed to untrusted clients (docs/protocol.md
§12): subscriptions per client, publications per second per client (throttled by TCP
backpressure, nothing lost), slow consumers cut off alone, and the client library
dropping what the broker refused. In-process daemons on 127.0.0.1, bounded, lean."""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time

import pytest
from pubsift.adapters.broker.client import AsyncClient, Notification, SubscriptionRefused
from pubsift.adapters.broker.client_limits import ClientLimits, Limits, TokenBucket
from pubsift.adapters.broker.config import Address, BrokerConfig, ConfigError, from_mapping
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.frames import encode, hello, read_frame

from tests.network.test_inprocess import FAST, run_daemon, until, url


def _config(**limits) -> BrokerConfig:
    return BrokerConfig(id="b0", listen=Address("127.0.0.1", 0), **{**FAST, **limits})


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_token_bucket_keeps_the_rate_and_the_burst():
    clock = Clock()
    b = TokenBucket(10.0, 3, clock)
    assert [b.take() for _ in range(3)] == [0.0, 0.0, 0.0]  # the burst
    assert b.take() == pytest.approx(0.1)  # one token more: wait 1/rate
    assert b.take() == pytest.approx(0.2)  # the debt is kept
    clock.now += 0.2
    assert b.take() == pytest.approx(0.1)
    clock.now += 10  # never more than the burst saved up
    assert b.full and [b.take() for _ in range(4)][-1] == pytest.approx(0.1)
    with pytest.raises(ValueError):
        TokenBucket(0, 1)


def test_client_limits_count_each_filter_once_and_free_slots():
    clock = Clock()
    lim = ClientLimits(Limits(max_subscriptions=2), lease=1.5, clock=clock)
    for key in ("a", "b", "a"):  # "a" again: a renewal
        assert lim.admit("sub", key) is None
        lim.hold("sub", key)
    why = lim.admit("sub", "c")
    assert why is not None and "limits.max_subscriptions = 2" in why
    assert lim.admit("adv", "c") is None  # advertisements have a budget of their own
    lim.release("sub", "a")  # unsub frees its slot
    assert lim.admit("sub", "c") is None
    lim.hold("sub", "c")
    clock.now += 1.0
    lim.hold("sub", "c")  # renewed; "b" is not: its lease runs out after 1.5 s
    clock.now += 1.0
    assert lim.admit("sub", "d") is None and set(lim.held["sub"]) == {"c"}
    ident = ClientLimits(Limits(1, source="identities.alice"), lease=1.0, clock=clock)
    ident.hold("sub", "x")
    assert "identities.alice.max_subscriptions = 1" in (ident.admit("sub", "y") or "")


def test_the_limits_in_broker_toml():
    cfg = from_mapping(
        {
            "limits": {
                "max_subscriptions": 100,
                "max_publish_rate": 2.5,
                "publish_burst": 5,
                "max_queue_bytes": 1 << 21,
            },
            "identities": {"alice": {"token": "t", "max_subscriptions": 3, "max_publish_rate": 50}},
        },
        "broker.toml",
    )
    assert (cfg.max_subscriptions, cfg.max_publish_rate, cfg.publish_burst) == (100, 2.5, 5)
    assert cfg.max_queue_bytes == 1 << 21 and BrokerConfig().max_queue_bytes == 64 << 20
    assert BrokerConfig().max_subscriptions is None and BrokerConfig().max_publish_rate is None
    (alice,) = cfg.identities
    assert (alice.max_subscriptions, alice.max_publish_rate, alice.publish_burst) == (3, 50, None)
    d = BrokerDaemon(cfg.with_overrides(models=("records",)))
    grant = d.auth.named("alice")
    # what alice sets counts all her connections together; the rest is [limits]'s, per
    # connection
    assert d._client_limits(grant, False) == Limits(None, None, None, "limits")
    assert d.identity_limits("alice").held.limits == Limits(
        3, 50, None, "identities.alice", "identities.alice"
    )
    assert d._client_limits(None, False) == Limits(100, 2.5, 5, "limits")
    # the HTTP gateway's publisher is charged by the gateway itself, per POST
    assert d._client_limits(None, True) == Limits(100, None, None, "limits")
    assert Limits(None, 50, None).hello() == {"max_publish_rate": 50, "publish_burst": 50}
    for data, words in [
        ({"limits": {"max_subscriptions": 0}}, "limits.max_subscriptions: expected an integer"),
        ({"limits": {"max_publish_rate": "fast"}}, "limits.max_publish_rate: expected a number"),
        ({"limits": {"publish_burst": 3}}, "limits.publish_burst: set only with max_publish"),
        ({"limits": {"max_queue_bytes": 10}}, "limits.max_queue_bytes (10) is less than"),
        (
            {"identities": {"a": {"token": "t", "max_subscriptions": 1.5}}},
            "identities.a.max_subscriptions: expected an integer",
        ),
    ]:
        with pytest.raises(ConfigError, match=r"broker\.toml: ") as info:
            from_mapping(data, "broker.toml")
        assert words in str(info.value)


def test_subscriptions_over_the_limit_are_refused_and_the_client_drops_them(caplog):
    cfg = _config(max_subscriptions=2, advertisements=True)

    async def body(d: BrokerDaemon) -> None:
        c = AsyncClient(url(d), id="c")
        await c.connect()
        a = await c.subscribe("records", "price > 1", lambda n: None)
        await c.subscribe("records", "price > 2", lambda n: None)
        a2 = await c.subscribe("records", "price > 1", lambda n: None)  # the same: no slot
        with pytest.raises(SubscriptionRefused) as info:
            await c.subscribe("records", "price > 3", lambda n: None, confirm=True)
        refused = info.value
        assert (refused.reason, refused.kind, refused.model) == ("limit", "sub", "records")
        assert "limits.max_subscriptions = 2" in str(refused) and "'price > 3'" in str(refused)
        assert refused.error["ref"] == 3  # the broker echoed the ref of that subscription
        assert d.broker.sizes() == (2, 0)
        # renewals are not counted twice, and the refused one is not renewed any more
        await asyncio.sleep(2.5 * d.config.lease_refresh)
        assert c.errors == [refused.error] and d.broker.sizes() == (2, 0)
        # an unsub frees a slot
        await c.unsubscribe(a)
        await c.unsubscribe(a2)
        await c.subscribe("records", "price > 3", lambda n: None, confirm=True)
        assert d.broker.sizes() == (2, 0)
        # advertisements have their own budget
        await c.advertise("records", "price > 0", confirm=True)
        await c.close()
        # a client that renews what was refused gets the error (with its ref) every time,
        # and the broker logs it once per connection
        r, w = await asyncio.open_connection("127.0.0.1", d.address.port)
        w.write(encode(hello("client", "raw")))
        for i in (1, 2, 3, 3, 3):
            w.write(encode({"kind": "sub", "model": "records", "filter": f"x = {i}", "ref": i}))
        w.write(encode({"kind": "stats"}))
        await w.drain()
        got = []
        while not got or got[-1]["kind"] != "stats":
            got.append(await asyncio.wait_for(read_frame(r, 1 << 20), 5))
        errors = [(o["reason"], o["ref"]) for o in got if o["kind"] == "error"]
        assert errors == [("limit", 3)] * 3
        w.close()

    with caplog.at_level(logging.WARNING, "pubsift.broker"):
        run_daemon(cfg, body)
    lines = [r.getMessage() for r in caplog.records if r.name == "pubsift.broker"]
    assert [x.split(":")[0] for x in lines if "limit" in x] == ["client c", "client raw"]


def test_a_fast_publisher_is_throttled_nothing_lost_others_unaffected(caplog):
    rate, burst, n = 40.0, 8, 40
    cfg = _config(max_publish_rate=rate, publish_burst=burst)

    async def body(d: BrokerDaemon) -> None:
        got: list[Notification] = []
        sub = AsyncClient(url(d), id="sub")
        other = AsyncClient(url(d), id="other")
        await sub.connect()
        await other.connect()
        await sub.subscribe("records", "price >= 0", got.append, confirm=True)
        # a publisher that ignores the rate the hello told it: all at once on the socket
        _, w = await asyncio.open_connection("127.0.0.1", d.address.port)
        w.write(encode(hello("client", "fast")))
        start = time.monotonic()
        for i in range(1, n + 1):
            pub = {"kind": "pub", "model": "records", "event": {"price": i}, "pub_id": ["fast", i]}
            w.write(encode(pub))
        await w.drain()
        await until(lambda: len(got) > burst + 2)
        # meanwhile another client publishes at once and is not held up
        t = time.monotonic()
        await other.publish("records", {"price": -1, "other": True})
        await other.publish("records", {"price": 0, "other": True})
        await until(lambda: any(x.publisher == "other" for x in got))
        assert time.monotonic() - t < 0.3
        assert sum(x.publisher == "fast" for x in got) < n  # still throttled then
        await until(lambda: len(got) == n + 1)
        elapsed = time.monotonic() - start
        assert elapsed >= (n - burst) / rate * 0.9
        assert [x.wire["price"] for x in got if x.publisher == "fast"] == list(range(1, n + 1))
        stats = await sub.stats()
        assert stats["throttled"] == n - burst  # publications that waited for their token
        # the library paces itself to the rate of the hello: the broker need not hold it
        t = time.monotonic()
        for _ in range(burst + 8):
            await other.publish("records", {"price": -2})
        assert time.monotonic() - t >= 7 / rate
        await other.flush()
        assert (await sub.stats())["throttled"] == stats["throttled"]
        w.close()
        await sub.close()
        await other.close()

    with caplog.at_level(logging.INFO, "pubsift.broker"):
        run_daemon(cfg, body)
    throttled = [r for r in caplog.records if "throttled" in r.getMessage()]
    assert len(throttled) == 1  # one line per episode
    assert "client fast: publishing faster than limits.max_publish_rate = 40/s (burst 8)" in (
        throttled[0].getMessage()
    )


def test_a_throttled_client_is_not_taken_for_a_silent_one():
    """While the broker does not read from a client, the heartbeat does not count its
    silence (a pause of 0.5 s here, a ping after 0.1 s of silence, closed after 0.2 s)."""
    cfg = _config(
        max_publish_rate=2.0, publish_burst=1, heartbeat_interval=0.1, heartbeat_max_missed=1
    )

    async def body(d: BrokerDaemon) -> None:
        got: list[Notification] = []
        sub = AsyncClient(url(d), id="sub")
        await sub.connect()
        await sub.subscribe("records", "price >= 0", got.append, confirm=True)
        _, w = await asyncio.open_connection("127.0.0.1", d.address.port)
        w.write(encode(hello("client", "raw")))
        for i in (1, 2, 3):
            pub = {"kind": "pub", "model": "records", "event": {"price": i}, "pub_id": ["raw", i]}
            w.write(encode(pub))
        await w.drain()
        await until(lambda: len(got) == 2)
        await asyncio.sleep(0.3)
        assert len(got) == 2 and not d.port.clients["raw"].closing
        await until(lambda: len(got) == 3)
        assert [n.wire["price"] for n in got] == [1, 2, 3]
        w.close()
        await sub.close()

    run_daemon(cfg, body)


@pytest.mark.parametrize("limit", [{"max_queue": 100}, {"max_queue_bytes": 200_000}])
def test_a_consumer_that_stops_reading_is_cut_off_alone(limit, caplog):
    n = 600
    cfg = _config(**limit)
    pad = "x" * 1000

    async def body(d: BrokerDaemon) -> None:
        got: list[Notification] = []
        fast = AsyncClient(url(d), id="fast")
        pub = AsyncClient(url(d), id="pub")
        await fast.connect()
        await pub.connect()
        await fast.subscribe("records", "price >= 0", got.append, confirm=True)
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(("127.0.0.1", d.address.port))
        sub = {"kind": "sub", "model": "records", "filter": "price >= 0"}
        slow.sendall(encode(hello("client", "slow")) + encode(sub))
        await until(lambda: d.broker.sizes() == (2, 0))
        # small socket buffers on both ends, so that the kernel does not absorb megabytes
        sock = d.port.clients["slow"].writer.transport.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        for i in range(n):  # "fast" keeps up (all runs in this loop); "slow" reads nothing
            await pub.publish("records", {"price": i, "pad": pad})
            if i % 20 == 0:
                await until(lambda i=i: len(got) >= i - 40)
        await until(lambda: len(got) == n)
        assert [x.wire["price"] for x in got] == list(range(n))
        await until(lambda: d.slow_consumers == 1)
        assert d.port.clients["slow"].closing and not d.port.clients["fast"].closing
        assert fast.connections == pub.connections == 1 and fast.errors == []
        # what the slow one gets when it reads at last: some notifications, then the reason
        slow.setblocking(False)
        r, w = await asyncio.open_connection(sock=slow)
        frames = []
        while (obj := await asyncio.wait_for(read_frame(r, 1 << 20), 5)) is not None:
            frames.append(obj)
        w.close()
        assert frames[-1]["kind"] == "error" and frames[-1]["reason"] == "slow-consumer"
        assert {o["kind"] for o in frames[:-1]} <= {"hello", "notify"}
        prices = [o["event"]["price"] for o in frames if o["kind"] == "notify"]
        assert prices == list(range(len(prices))) and len(prices) < n
        await until(lambda: set(d.port.clients) == {"fast", "pub"})
        assert (await pub.stats())["slow_consumers"] == 1
        await fast.close()
        await pub.close()

    with caplog.at_level(logging.WARNING, "pubsift.broker"):
        run_daemon(cfg, body)
    (line,) = [r.getMessage() for r in caplog.records if "slow consumer" in r.getMessage()]
    key = next(iter(limit))
    assert line.startswith("client slow (127.0.0.1:") and f"(limits.{key})" in line


def test_pubsift_sub_exits_1_when_a_filter_is_over_the_limit(capsys):
    from pubsift.cli import main

    loop = asyncio.new_event_loop()
    d = BrokerDaemon(_config(max_subscriptions=1))
    loop.run_until_complete(d.start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        status = main(["sub", url(d), "-m", "records", "-f", "price > 1", "-f", "price > 2"])
    finally:
        asyncio.run_coroutine_threadsafe(d.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
    err = capsys.readouterr().err
    assert status == 1, err
    assert "pubsift sub: the broker refused the subscription 'price > 2' in records: limit:" in err
    assert "limits.max_subscriptions = 1" in err and "subscribed as" not in err
