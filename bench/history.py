"""The cost of a history (docs/history.md; Mühl 2002, §5.3.4): recording per publication,
and the replay rate for a store of 100,000 quotes.

* **Recording**: what a history does per notification (the event's bytes written again,
  one ``INSERT OR IGNORE`` into SQLite in WAL mode, a commit per 1,000) against the
  baseline of the client library delivering the same notification to a handler that does
  nothing (``load_event``, the duplicate check, ``matches``): the ratio says what
  recording adds to receiving.
* **Replay, store**: ``HistoryStore.select`` of everything since time 0 matching the
  subscription ``price > 50`` (half of the quotes), against the baseline of reading every
  row of the table (SQLite's floor).
* **Replay, end to end** (wall time): a broker hosting the history, a client subscribing
  with ``since_time 0`` to ``price > 50``: from the ``sub`` to the last replayed
  notification handed to the application (the history's select, the ``replay`` frames
  through the broker, the client's parse, merge and delivery).

Run: ``.venv/bin/python bench/history.py [--quick] [--events N] [--json PATH]``
(``bench/harness.py``: CPU time unless said, a warm-up, the median of ``--repeats``).
"""

from __future__ import annotations

import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from harness import Bench, ratio, time_it
from pubsift.adapters.broker.client import AsyncClient, Notification
from pubsift.adapters.broker.config import Address, BrokerConfig
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.history_config import HistoryConfig
from pubsift.adapters.broker.history_store import HistoryStore
from pubsift.adapters.broker.replay import Replay
from pubsift.adapters.broker.wire import dumps
from pubsift.core.registry import load_model


def quotes(n: int) -> list[bytes]:
    rng = random.Random(30)
    return [
        orjson.dumps(
            {
                "symbol": f"S{rng.randrange(500)}",
                "price": round(rng.uniform(0, 100), 2),
                "volume": rng.randrange(1, 10_000),
            }
        )
        for _ in range(n)
    ]


def fill(path: str, events: list[bytes]) -> HistoryStore:
    store = HistoryStore(path)
    now = time.time()
    for i, e in enumerate(events, 1):
        store.record("feed", i, "records", e, now)
    store.commit()
    return store


async def end_to_end(store_path: str, n: int, expected: int) -> float:
    cfg = BrokerConfig(
        id="b0",
        listen=Address("127.0.0.1", 0),
        models=("records",),
        histories=(HistoryConfig("records", "true", store_path, max_replay=10 * n),),
    )
    d = BrokerDaemon(cfg)
    await d.start()
    try:
        got: list[Notification] = []
        c = AsyncClient(f"pubsift://127.0.0.1:{d.address.port}", id="late")
        c.replay_timeout = 120.0
        await c.connect()
        t = time.perf_counter()
        await c.subscribe("records", "price > 50", got.append, replay={"since_time": 0})
        while c.replays == 0:
            await asyncio.sleep(0.01)
        spent = time.perf_counter() - t
        assert len(got) == expected, (len(got), expected)
        await c.close()
        return spent
    finally:
        await d.stop()


def main(argv: list[str] | None = None) -> int:
    bench = Bench("history", __doc__, argv)
    bench.parser.add_argument("--events", type=int, default=None, help="stored (100,000)")
    args = bench.parse()
    n = args.events or (20_000 if args.quick else 100_000)
    events = quotes(n)
    model = load_model("records")
    tmp = Path(tempfile.mkdtemp(prefix="pubsift-bench-history-"))

    # -- recording against delivering ------------------------------------------------------
    client = AsyncClient("pubsift://127.0.0.1:1", id="bench")
    f = model.parse_filter("true")
    asyncio.run(client.subscribe("records", f, lambda n: None))
    wires = [orjson.loads(e) for e in events]
    runs = iter(range(10**9))

    def deliver() -> None:
        publisher = f"p{next(runs)}"
        for i, w in enumerate(wires, 1):
            client._deliver_one(model, publisher, i, w)

    stores: list[HistoryStore] = []

    def fresh() -> None:
        for s in stores:
            s.close()
        stores[:] = [HistoryStore(str(tmp / f"rec-{next(runs)}.sqlite"))]

    def record() -> None:
        store = stores[0]
        now = time.time()
        for i, w in enumerate(wires, 1):
            store.record("feed", i, "records", dumps(w), now)
            if i % 1000 == 0:
                store.commit()
        store.commit()

    inputs = f"{n:,} quotes"
    t_deliver = time_it(deliver, n, inputs, args.repeats)
    t_record = time_it(record, n, inputs, args.repeats, setup=fresh)
    for s in stores:
        s.close()
    r_rec = ratio(t_deliver, t_record)
    print(
        f"recording: {t_record.per_item * 1e6:.1f} µs/publication (±{t_record.spread / 2:.0%}); "
        f"delivering to a handler: {t_deliver.per_item * 1e6:.1f} µs; recording costs "
        f"{r_rec:.1f}x delivering"
    )
    bench.row(part="recording", record=t_record, deliver=t_deliver, ratio=r_rec)
    bench.headline(
        "history: recording per publication vs the client delivering it",
        f"{t_record.per_item * 1e6:,.1f} µs ({r_rec:.1f}× delivery)",
    )

    # -- replay from the store -------------------------------------------------------------
    path = str(tmp / "stored.sqlite")
    store = fill(path, events)
    sub = model.parse_filter("price > 50")

    def wanted(e: bytes) -> bool:
        return model.matches(sub, model.load_event(orjson.loads(e)))

    expected = sum(wanted(e) for e in events)
    replay = Replay(since_time=0.0)

    def select() -> Any:
        rows = store.select("records", replay, wanted, max_replay=10 * n)
        assert len(rows) == expected
        return rows

    def read_all() -> Any:
        return store.db.execute("SELECT publisher, seq, time, event FROM events").fetchall()

    t_select = time_it(select, n, f"{n:,} stored", args.repeats)
    t_read = time_it(read_all, n, f"{n:,} stored", args.repeats)
    r_sel = ratio(t_read, t_select)
    print(
        f"replay from the store: {t_select.rate * expected / n:,.0f} notifications/s "
        f"({expected:,} of {n:,} stored match; the select takes {r_sel:.1f}x reading "
        f"every row, {t_read.rate:,.0f} rows/s)"
    )
    bench.row(part="select", select=t_select, read=t_read, matching=expected, ratio=r_sel)
    store.close()

    # -- end to end ------------------------------------------------------------------------
    walls = [asyncio.run(end_to_end(path, n, expected)) for _ in range(max(1, args.repeats))]
    walls.sort()
    wall = walls[len(walls) // 2]
    rate = expected / wall
    print(
        f"replay end to end: {expected:,} notifications in {wall:.2f} s wall "
        f"({rate:,.0f}/s; runs {', '.join(f'{w:.2f}' for w in walls)} s)"
    )
    bench.row(part="end-to-end", notifications=expected, wall_s=wall, rate=rate, runs=walls)
    bench.headline(
        f"history: replay of {n:,} stored quotes (half match) to a late subscriber, end to end",
        f"{rate:,.0f} notifications/s",
    )
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
