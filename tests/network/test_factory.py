"""Factories (Mühl 2002, §5.2.4): the brokers publish subscription and unsubscription
events, a factory starts its service at the first overlapping subscription and stops it
when the last one goes (unsubscribed, or run out after π); ``publish-feed --on-demand``
polls its feeds only meanwhile."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path

from pubsift.adapters.broker import feedpub
from pubsift.adapters.broker.client import AsyncClient, Notification
from pubsift.adapters.broker.config import Address, BrokerConfig
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.factory import Factory
from pubsift.adapters.broker.replay import SUBSCRIPTIONS, SubscriptionEvents

from tests.network.test_feed import rss
from tests.network.test_inprocess import FAST, until, url


async def _chain() -> list[BrokerDaemon]:
    ds: list[BrokerDaemon] = []
    for i in range(2):
        nb = (ds[-1].address,) if ds else ()
        d = BrokerDaemon(
            BrokerConfig(id=f"b{i}", listen=Address("127.0.0.1", 0), neighbours=nb, **FAST)
        )
        await d.start()
        ds.append(d)
    await until(lambda: "b1" in ds[0].port.neighbours)
    return ds


def test_a_factory_runs_its_service_while_an_overlapping_subscription_stands() -> None:
    async def go() -> None:
        ds = await _chain()
        clients: list[AsyncClient] = []
        try:
            events: list[str] = []
            fc = AsyncClient(url(ds[0]), id="factory", models={SUBSCRIPTIONS: SubscriptionEvents()})  # type: ignore[dict-item]
            await fc.connect()
            clients.append(fc)
            f = Factory(
                fc,
                "records",
                fc.parse_filter("records", 'symbol = "IBM"'),
                lambda: events.append("start"),
                lambda: events.append("stop"),
            )
            await f.open()
            await until(lambda: ds[1].broker is not None and ds[1].broker.sizes()[1] >= 1)

            async def client(name: str, flt: str) -> AsyncClient:
                c = AsyncClient(url(ds[1]), id=name)
                await c.connect()
                await c.subscribe("records", flt, lambda n: None, confirm=True)
                clients.append(c)
                return c

            a = await client("a", 'symbol = "IBM"')
            await until(lambda: events == ["start"])
            await client("b", 'symbol = "HP"')  # does not overlap: no effect
            c = await client("c", "price > 3")  # overlaps
            await until(lambda: len(f.served) == 2)
            await a.close()  # unsubscribes: c still wants it
            await until(lambda: len(f.served) == 1)
            assert events == ["start"]
            gone = time.monotonic()
            await c.close(unsubscribe=False)  # vanishes: its lease runs out after π
            clients.remove(c)
            await until(lambda: events == ["start", "stop"], 10)
            assert time.monotonic() - gone >= FAST["lease_period"] * 0.5
            assert (f.starts, f.stops) == (1, 1)
        finally:
            for c in clients:
                await c.close()
            for d in ds:
                await d.stop()

    asyncio.run(asyncio.wait_for(go(), 30))


def test_publish_feed_on_demand_polls_only_while_someone_listens(tmp_path: Path) -> None:
    feed = tmp_path / "news.rss"
    feed.write_text(rss("a", "b", "c"))
    interval = 0.1

    async def go() -> None:
        ds = await _chain()
        try:
            stop = asyncio.Event()
            task = asyncio.ensure_future(
                feedpub.run(url(ds[0]), [str(feed)], None, interval, False, stop, on_demand="/*")
            )
            await asyncio.sleep(1.0)  # nobody listens: no poll
            got: list[Notification] = []
            sub = AsyncClient(url(ds[1]), id="reader")
            await sub.connect()
            t0 = time.monotonic()
            s = await sub.subscribe("xml", "/rss/channel/item", got.append, confirm=True)
            await until(lambda: len(got) == 3)
            await sub.unsubscribe(s)
            await sub.flush()
            listened = time.monotonic() - t0
            await asyncio.sleep(0.5)  # the unsubscription event reaches the factory
            feed.write_text(rss("d", "a", "b", "c"))
            await asyncio.sleep(1.0)  # nobody listens: "d" is not published
            assert len(got) == 3
            t1 = time.monotonic()
            await sub.subscribe("xml", "/rss/channel/item", got.append, confirm=True)
            await until(lambda: len(got) == 4)
            listened += time.monotonic() - t1
            stop.set()
            counts = await task
            await sub.close()
            assert [n.event.root.findtext("channel/item/title") for n in got] == list("abcd")
            # at most one poll per interval while someone listened (and a little after)
            assert 2 <= counts.polls <= (listened + 1.0) / interval + 2, (counts.polls, listened)
        finally:
            for d in ds:
                await d.stop()

    asyncio.run(asyncio.wait_for(go(), 30))


def test_a_subscription_event_whose_filter_is_not_strict_json_is_dropped(caplog) -> None:
    """The filter of a subscription event is read as strict JSON (core/strict_json): a
    duplicate key or NaN in it drops the event with a warning; a good one is served."""
    client = AsyncClient("pubsift://127.0.0.1:9", id="factory")  # never connected
    m = client.model("records")
    good = json.dumps(m.dump_filter(m.parse_filter("price > 5")))
    bad = [good[:-1] + ', "' + good[2:], '{"price": {"op": ">", "value": NaN}}']
    factory = Factory(
        client, "records", client.parse_filter("records", "price > 1"), lambda: None, lambda: None
    )

    def event(text: str) -> Notification:
        wire = {"type": "subscription", "broker": "b", "client": "c", "filter": text}
        return Notification(SUBSCRIPTIONS, None, wire, "p", 1)

    async def go() -> None:
        for text in bad:
            await factory._event(event(text))
        assert factory.served == set() and factory.starts == 0
        await factory._event(event(good))
        assert factory.served == {("b", "c", good)} and factory.starts == 1

    with caplog.at_level(logging.WARNING, logger="pubsift.factory"):
        asyncio.run(go())
    dropped = [r.getMessage() for r in caplog.records if "malformed" in r.getMessage()]
    assert len(dropped) == 2
    assert 'duplicate key "price"' in dropped[0] and "NaN is not JSON" in dropped[1]
