"""A history's store read by the Spark job (docs/history.md): exported as an event store,
``pubsift route`` re-routes what the network carried, and its deliveries are exactly what
the online subscribers got (a differential test against the brokers)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pubsift.adapters.broker.client import AsyncClient, Notification
from pubsift.adapters.broker.config import Address, BrokerConfig
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.history_config import HistoryConfig
from pubsift.adapters.broker.history_export import ExportError, export
from pubsift.adapters.broker.history_store import HistoryStore

from . import kit

SUBSCRIBERS = [
    {"id": "alice", "model": "records", "filter": 'symbol = "IBM" and price > 20'},
    {"id": "bob", "model": "records", "filter": "price < 10"},
    {"id": "carol", "model": "records", "filter": 'symbol prefix "H"'},
]


def _online(tmp_path: Path) -> dict[str, set[tuple[str, int]]]:
    """Publish 300 quotes through a broker with a history; what each subscriber got."""
    store = tmp_path / "h.sqlite"

    async def go() -> dict[str, set[tuple[str, int]]]:
        cfg = BrokerConfig(
            id="b0",
            listen=Address("127.0.0.1", 0),
            models=("records",),
            histories=(HistoryConfig("records", "true", str(store), id="h"),),
        )
        d = BrokerDaemon(cfg)
        await d.start()
        url = f"pubsift://127.0.0.1:{d.address.port}"
        got: dict[str, list[Notification]] = {s["id"]: [] for s in SUBSCRIBERS}
        clients = []
        try:
            for s in SUBSCRIBERS:
                c = AsyncClient(url, id=s["id"])
                await c.connect()
                await c.subscribe("records", s["filter"], got[s["id"]].append, confirm=True)
                clients.append(c)
            pub = AsyncClient(url, id="quotes")
            await pub.connect()
            clients.append(pub)
            await pub.flush()
            syms = ("IBM", "HP", "HPQ", "MSFT")
            await pub.publish_many(
                "records",
                [{"symbol": syms[i % 4], "price": (i * 7) % 50} for i in range(300)],
            )
            h = d.replays.histories[0]
            for _ in range(500):
                if h.recorded == 300:
                    break
                await asyncio.sleep(0.01)
            await pub.flush()
            await asyncio.sleep(0.2)
            return {k: {(n.publisher, n.seq) for n in v} for k, v in got.items()}
        finally:
            for c in clients:
                await c.close()
            await d.stop()

    return asyncio.run(go())


def test_the_export_is_an_event_store(tmp_path: Path) -> None:
    online = _online(tmp_path)
    assert all(online.values())
    store = HistoryStore(str(tmp_path / "h.sqlite"))
    assert export(store, str(tmp_path / "export")) == {"records": 300}
    with pytest.raises(ExportError, match="exists already"):
        export(store, str(tmp_path / "export"))
    store.close()
    marker = json.loads((tmp_path / "export" / "_pubsift.json").read_text())
    assert marker["format"] == "parquet"
    rows = kit.read_rows(tmp_path / "export" / "events", "parquet", "model")
    assert sorted((r["source"], r["position"]) for r in rows) == [
        ("quotes", i) for i in range(1, 301)
    ]
    assert {r["model"] for r in rows} == {"records"}
    assert json.loads(rows[0]["event"])["symbol"] == "IBM"


@pytest.mark.spark
def test_routing_the_export_gives_the_online_deliveries(spark: Any, tmp_path: Path) -> None:
    from pubsift.adapters.spark.subscriptions import load_subscriptions

    from .conftest import run_route

    online = _online(tmp_path)
    store = HistoryStore(str(tmp_path / "h.sqlite"))
    export(store, str(tmp_path / "export"))
    store.close()
    subs = kit.write_subscriptions(tmp_path / "subs.jsonl", SUBSCRIBERS)
    run = run_route(
        load_subscriptions(str(subs)), tmp_path / "out", event_store=str(tmp_path / "export")
    )
    rows = kit.read_rows(tmp_path / "out" / "deliveries", "parquet", "subscriber")
    offline: dict[str, set[tuple[str, int]]] = {s["id"]: set() for s in SUBSCRIBERS}
    for r in rows:
        offline[r["subscriber"]].add((r["source"], r["position"]))
    assert offline == online
    assert run.summary["subscribers"] == {k: len(v) for k, v in online.items()}
