"""Replay over HTTP (docs/history.md): ``GET /subscribe/...?replay=last N`` streams the
last N stored events first (marked ``"replayed": true``), then the live ones; a browser
reconnecting with ``Last-Event-ID`` gets exactly what it missed, once, in order."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
from pubsift.adapters.broker.config import BrokerConfig
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.gateway import Gateway
from pubsift.adapters.broker.history_config import HistoryConfig

from tests.network.test_gateway import FAST, LOCAL, sse_events, until


def test_replay_and_last_event_id_over_sse(tmp_path: Path) -> None:
    async def go() -> None:
        history = HistoryConfig("records", "true", str(tmp_path / "h.sqlite"), id="h")
        b0 = BrokerDaemon(
            BrokerConfig(id="b0", listen=LOCAL, gateway=LOCAL, histories=(history,), **FAST)
        )
        await b0.start()
        try:
            assert isinstance(b0.gateway, Gateway)
            await asyncio.wait_for(body(b0, b0.gateway.url), 30)
        finally:
            await b0.stop()

    async def post(http: aiohttp.ClientSession, base: str, price: int) -> str:
        r = await http.post(f"{base}/publish/records", data=json.dumps({"price": price}))
        assert r.status == 202, await r.text()
        return str((await r.json())["id"])

    async def body(b0: BrokerDaemon, base: str) -> None:
        h = b0.replays.histories[0]
        async with aiohttp.ClientSession() as http:
            ids = [await post(http, base, p) for p in range(1, 16)]
            await until(lambda: h.recorded == 15)
            url = f"{base}/subscribe/records"
            sse = await http.get(url, params={"filter": "price > 0", "replay": "last 5"})
            assert sse.status == 200
            events = await sse_events(sse, 5)
            assert [e["id"] for e in events] == ids[10:]
            assert all(json.loads(e["data"])["replayed"] for e in events)
            ids.append(await post(http, base, 16))
            live = await sse_events(sse, 1)
            assert [e["id"] for e in live] == ids[15:] and "replayed" not in live[0]["data"]
            sse.close()
            # the browser is away while 4 more are published, then comes back
            ids += [await post(http, base, p) for p in range(17, 21)]
            await until(lambda: h.recorded == 20)
            again = await http.get(
                url, params={"filter": "price > 0"}, headers={"Last-Event-ID": ids[15]}
            )
            assert again.status == 200
            missed = await sse_events(again, 4)
            assert [e["id"] for e in missed] == ids[16:]
            ids.append(await post(http, base, 21))
            assert [e["id"] for e in await sse_events(again, 1)] == ids[20:]
            again.close()
            for params, headers in (
                ({"filter": "true", "replay": "last zero"}, {}),
                ({"filter": "true"}, {"Last-Event-ID": "no-sequence-number"}),
            ):
                r = await http.get(url, params=params, headers=headers)
                assert r.status == 400
                assert (await r.json())["error"] == "invalid-replay"

    asyncio.run(go())
