"""What watching a broker costs it (docs/monitoring.md), in CPU time, in one run.

``python bench/monitor.py [--quick] [--subs N] [--json PATH]`` (``bench/harness.py``).

1. One scrape, as the monitor answers it in the broker's event loop (which routes nothing
   meanwhile): ``GET /metrics`` (the collector reading the counters, prometheus_client's
   exposition) and ``GET /status`` (the document and its JSON), against the socket
   protocol's ``stats`` reply (the daemon's ``stats()`` and its frame) on the same broker:
   N subscriptions of 100 local clients and 3 neighbours' worth of counters.
2. The latency measurement per frame that notified anyone (one clock read and the
   histogram's bucket, :class:`LatencyHistogram`), against routing that frame: a batch
   of 100 publications to the broker's subscribers through the core broker and a port
   that counts (the routing the measurement rides on, without sockets).
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections import Counter
from typing import Any

from harness import Bench, time_it
from prometheus_client import CollectorRegistry, generate_latest
from pubsift.adapters.broker.config import Address, BrokerConfig
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.frames import encode
from pubsift.adapters.broker.latency import LatencyHistogram
from pubsift.adapters.broker.monitor import BrokerCollector, Rates, status
from pubsift.core.broker import Broker
from pubsift.core.messages import Batch, Notify, Pubs, Sub
from pubsift.core.registry import load_model

SYMBOLS = [f"S{i:03d}" for i in range(300)]


class CountingPort:
    """A port that counts what it is handed (the routing alone, no sockets)."""

    def __init__(self) -> None:
        self.n = 0

    def send(self, broker: str, neighbour: str, msg: Any) -> None:
        self.n += 1

    def deliver(self, broker: str, msg: Notify) -> None:
        self.n += 1

    def send_many(self, broker: str, neighbour: str, batch: Batch, indices: list[int]) -> None:
        self.n += len(indices)

    def deliver_many(self, broker: str, client: str, batch: Batch, indices: list[int]) -> None:
        self.n += len(indices)


def subscriptions(n: int, rng: random.Random) -> list[str]:
    return [f'symbol = "{rng.choice(SYMBOLS)}" and price > {rng.randint(1, 400)}' for _ in range(n)]


def ms(t: Any) -> str:
    return f"{t.per_item * 1e3:,.3f} ±{t.spread / 2:.0%}"


def us(t: Any) -> str:
    return f"{t.per_item * 1e6:,.2f} ±{t.spread / 2:.0%}"


def main(argv: list[str] | None = None) -> int:
    bench = Bench("monitor", __doc__, argv)
    bench.parser.add_argument("--subs", type=int, default=None, help="subscriptions (10,000)")
    args = bench.parse()
    n_subs = args.subs or (2_000 if args.quick else 10_000)
    rng = random.Random(7)
    model = load_model("records")

    # 1. a daemon (not started: no sockets) whose broker holds the subscriptions
    d = BrokerDaemon(BrokerConfig(id="b", listen=Address("127.0.0.1", 0), models=("records",)))
    port = CountingPort()
    d.broker = Broker("b", {"records": model}, "covering", port)
    clients = [f"c{i}" for i in range(100)]
    for c in clients:
        d.broker.attach(c)
    for i, spec in enumerate(subscriptions(n_subs, rng)):
        d.broker.receive(
            Sub(clients[i % 100], "records", model.parse_filter(spec)), clients[i % 100]
        )
    for n in ("n1", "n2", "n3"):
        d.received[("broker", n)] = Counter(forwards=1000, admin=50, ping=10)
        d.port.admin_sent[n] = 40
        d.broker.forwarded[n] = 900
    d.received[("client", "")] = Counter(pubs=5000, sub=n_subs, stats=3)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(d))
    rates = Rates()
    rates.sample(d)
    inputs = f"one broker, {n_subs:,} subscriptions of 100 clients, 3 neighbours"
    t_metrics = time_it(lambda: generate_latest(registry), 1, inputs, args.repeats, min_seconds=0.2)
    t_status = time_it(
        lambda: json.dumps(status(d, rates)), 1, inputs, args.repeats, min_seconds=0.2
    )
    t_stats = time_it(lambda: encode(d.stats()), 1, inputs, args.repeats, min_seconds=0.2)
    print(
        f"one scrape of a broker with {n_subs:,} subscriptions (CPU ms, median of {args.repeats})"
    )
    print(
        f"  GET /metrics       {ms(t_metrics):>16s}  {t_metrics.median / t_stats.median:6.1f}x the stats frame"
    )
    print(
        f"  GET /status        {ms(t_status):>16s}  {t_status.median / t_stats.median:6.1f}x the stats frame"
    )
    print(f"  stats frame        {ms(t_stats):>16s}")
    bench.row(subs=n_subs, metrics=t_metrics, status=t_status, stats_frame=t_stats)
    bench.headline(
        f"one /metrics scrape, {n_subs:,} subscriptions, vs the stats frame",
        f"{t_metrics.per_item * 1e3:,.2f} ms ({t_metrics.median / t_stats.median:,.1f}× the frame)",
    )

    # 2. the latency observation per notifying frame against routing that frame
    events = [
        model.parse_event({"symbol": rng.choice(SYMBOLS), "price": rng.randint(1, 400)})
        for _ in range(100)
    ]
    batch = Pubs("c0", "records", events, [("p", i) for i in range(100)])
    lat = LatencyHistogram()
    start = time.monotonic()
    frames = 2_000

    def route() -> None:
        for _ in range(frames // 100):
            d.broker.receive(batch, "c0")  # type: ignore[union-attr]

    def observe() -> None:
        for _ in range(frames // 100):
            lat.since(start, 7)

    frame_inputs = f"{frames // 100} frames of 100 publications, {n_subs:,} subscriptions"
    t_route = time_it(route, frames // 100, frame_inputs, args.repeats)
    t_observe = time_it(observe, frames // 100, frame_inputs, args.repeats, min_seconds=0.05)
    share = t_observe.median / t_route.median
    print("per frame of 100 publications (CPU µs)")
    print(f"  routing it         {us(t_route):>16s}  ({port.n:,} destinations handed so far)")
    print(f"  latency measured   {us(t_observe):>16s}  {share:.3%} of the routing")
    bench.row(route=t_route, observe=t_observe, share=share)
    bench.headline(
        "latency measurement per notifying frame of 100 publications vs routing it",
        f"{t_observe.per_item * 1e6:,.2f} µs ({share:.2%} of {t_route.per_item * 1e6:,.0f} µs)",
    )
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
