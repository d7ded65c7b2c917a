"""Lossless reconnect (Mühl 2002, §5.2.3: a subscriber resuming with a replay
description): on a chain b0-b1-b2 with a history on the publisher's broker b0, a broker is
stopped and started again, or the link b1-b2 is cut for longer than π, while the publisher
goes on; a subscriber at b2 that resumes (``since`` the last sequence number it delivered
per publisher) gets every matching publication exactly once, in order, and one that does
not loses those of the outage."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pubsift.adapters.broker.client import AsyncClient, Notification
from pubsift.adapters.broker.config import Address
from pubsift.adapters.broker.daemon import BrokerDaemon

from tests.network.test_history import _chain, _chain_config, _check
from tests.network.test_inprocess import FAST, until, url
from tests.network.test_reliability import Proxy


async def _chain_with_proxy(tmp_path: Path) -> tuple[list[BrokerDaemon], Proxy]:
    """b0 (history) - b1 - proxy - b2: the link b1-b2 goes through a TCP proxy."""
    b0 = BrokerDaemon(_chain_config(0, (), tmp_path / "h0.sqlite"))
    await b0.start()
    b1 = BrokerDaemon(_chain_config(1, (b0.address,), None))
    await b1.start()
    proxy = Proxy(b1.address.port)
    await proxy.start()
    b2 = BrokerDaemon(_chain_config(2, (Address("127.0.0.1", proxy.port),), None))
    await b2.start()
    ds = [b0, b1, b2]
    await until(lambda: "b2" in b0.reach.without(None) and "b0" in b2.reach.without(None))
    assert FAST["lease_period"] < 2.0  # the cut below is longer than π
    return ds, proxy


async def _restart(ds: list[BrokerDaemon], i: int, down: float) -> None:
    old = ds[i]
    port = old.address.port
    await old.stop()
    await asyncio.sleep(down)
    nb = (ds[i - 1].address,) if i > 0 else ()
    cfg = _chain_config(i, nb, None)
    d = BrokerDaemon(cfg.with_overrides(listen=Address("127.0.0.1", port)))
    await d.start()
    ds[i] = d


@pytest.mark.parametrize(
    "restarted", [1, 2, 0], ids=["middle-broker", "subscriber-broker", "link-cut-beyond-pi"]
)
def test_a_resuming_subscriber_loses_nothing(
    tmp_path: Path, restarted: int, request: pytest.FixtureRequest
) -> None:
    async def body() -> None:
        proxy = None
        if restarted:
            ds = await _chain(tmp_path)
        else:
            ds, proxy = await _chain_with_proxy(tmp_path)
        clients: list[AsyncClient] = []
        try:
            history = ds[0].replays.histories[0]
            pub = AsyncClient(url(ds[0]), id="quotes")
            clients.append(pub)
            await pub.connect()
            got: dict[str, list[Notification]] = {"resumes": [], "plain": []}
            for name, resume in (("resumes", True), ("plain", False)):
                c = AsyncClient(url(ds[2]), id=name, backoff=(0.05, 0.3))
                clients.append(c)
                await c.connect()
                await c.subscribe("records", "price >= 10", got[name].append, resume=resume)
            await until(lambda: ds[0].broker is not None and ds[0].broker.sizes()[1] >= 1)
            stop = asyncio.Event()
            published: list[int] = []

            async def publish() -> None:
                i = 0
                while not stop.is_set():
                    i += 1
                    published.append(await pub.publish("records", {"price": i % 50}))
                    await asyncio.sleep(0.004)

            task = asyncio.ensure_future(publish())
            await until(lambda: len(got["plain"]) > 20)
            if proxy is None:
                await _restart(ds, restarted, 0.8)
            else:
                proxy.cut()
                await asyncio.sleep(2.0)  # > π: the entries learned over the link expire
                proxy.restore()
            resumer = clients[1]
            await until(lambda: resumer.replays >= 1, 15)
            await asyncio.sleep(0.5)
            stop.set()
            await task
            await until(lambda: history.recorded == len(published), 10)
            expected = [s for s in published if s % 50 >= 10]
            await until(lambda: len(got["resumes"]) >= len(expected), 10)
            _check(got["resumes"], expected, "quotes")
            assert resumer.replayed > 0 and resumer.duplicates == 0
            plain = [n.seq for n in got["plain"]]
            assert plain == sorted(set(plain))  # in order, once each
            assert len(plain) < len(expected)  # what crossed b1 during the outage is lost
            print(
                f"\n{request.node.callspec.id}: {len(expected)} matching publications; "
                f"resuming subscriber {len(expected) - len(got['resumes'])} lost, "
                f"{resumer.replayed} of its deliveries from the history; plain subscriber "
                f"{len(expected) - len(plain)} lost"
            )
        finally:
            for c in clients:
                await c.close()
            for d in ds:
                await d.stop()
            if proxy is not None:
                await proxy.close()

    asyncio.run(asyncio.wait_for(body(), 60))
