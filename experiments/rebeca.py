"""The experiment of ``pubsift experiment rebeca``: Mühl's REBECA evaluation reproduced
(Mühl 2002, Large-Scale Content-Based Publish/Subscribe Systems, ch. 6).

Setup (§6.2, Table 6.1): the 107-broker hierarchy (:func:`~pubsift.core.topology.hierarchy`:
40 routers, 67 local brokers), one source at the root router that advertises everything
(with advertisements), m = 1000 stocks, consumers with 10 random distinct subscriptions
spread evenly over the local brokers, 1..200 consumers per local broker.

For each strategy, with and without advertisements, and each number n of consumers per
local broker, with x = 10 · 67 · n active subscriptions:

* Σ|R| — the remote routing entries of all brokers (§6.3; local entries are left out);
* the filter-forwarding overhead (§6.4) — admin messages per subscription change,
  measured by toggling random consumers off and on again (each of their unsubscriptions
  and subscriptions settled before the next), so the network stays at x;
* the exact Σ|R| a perfect algorithm must reach for these consumers where Mühl
  (2002, ch. 6) gives one (:mod:`pubsift.experiments.analytic`), to compare against.

The locality experiment (§6.5.1, Table 6.3) draws the stocks of the three subnets below
the root from ranges that overlap by the parameter d, leaves the root's local broker
without consumers, and also measures the payload traffic saved against flooding (one quote
of every stock published at the source).

The brokers, strategies and network are the routing core's; routing tables use
:class:`~pubsift.experiments.partitioned.SymbolIndex` unless ``--index records``
asks for the records model's own index (same answers, slower on these workloads).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pubsift.core.network import Network, SimulatedClient
from pubsift.core.registry import load_model
from pubsift.core.topology import Topology, hierarchy
from pubsift.experiments import analytic
from pubsift.experiments.consumers import KINDS, interests, subnet_range
from pubsift.experiments.partitioned import PartitionedModel
from pubsift.models.records import RecordFilter

MODEL = "records"
STRATEGIES = ("simple", "identity", "covering", "merging")
#: Mühl's pairing (Fig. 6.2/6.3): quote subscriptions for simple and identity-based
#: routing, quote-interval subscriptions for covering- and merging-based routing.
AUTO_KIND = {
    "simple": "quote",
    "identity": "quote",
    "covering": "quote-interval",
    "merging": "quote-interval",
}


@dataclass(frozen=True)
class Setup:
    """One curve: a strategy with or without advertisements on one workload."""

    strategy: str
    advertisements: bool
    kind: str = "quote"
    locality: float | None = None
    stocks: int = 1000
    per_consumer: int = 10
    seed: int = 0
    index: str = "partitioned"

    @property
    def label(self) -> str:
        adv = " + adv" if self.advertisements else ""
        loc = f", d={_fmt_d(self.locality)}" if self.locality is not None else ""
        return f"{self.strategy}{adv} ({self.kind}{loc})"


@dataclass
class Point:
    """One measurement (a CSV row)."""

    experiment: str
    strategy: str
    advertisements: bool
    kind: str
    locality: str
    consumers_per_broker: int
    active_subscriptions: int
    remote_entries: int
    expected_entries: int | None
    admin_per_change: float
    changes: int
    root_entries: int
    level2_entries: float
    level3_entries: float
    level4_entries: float
    local_broker_entries: int
    saved_traffic: float | None
    seconds: float


class Experiment:
    """A network of one :class:`Setup`, grown consumer by consumer and measured."""

    def __init__(self, setup: Setup, topology: Topology | None = None) -> None:
        if setup.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {setup.strategy!r}; known: {', '.join(STRATEGIES)}")
        if setup.kind not in KINDS:
            raise ValueError(f"unknown subscription kind {setup.kind!r}; known: {', '.join(KINDS)}")
        if setup.index not in ("partitioned", "records"):
            raise ValueError(f"unknown index {setup.index!r}; known: partitioned, records")
        self.setup = setup
        self.topology = topo = topology or hierarchy()
        assert topo.root is not None
        model = load_model(MODEL)
        self.model = PartitionedModel(model) if setup.index == "partitioned" else model
        self.net = Network(
            topo, [self.model], setup.strategy, setup.advertisements, seed=setup.seed
        )
        self.source = self.net.client("source", topo.root)
        if setup.advertisements:  # §6.2.3: overlaps every subscription
            self.source.advertise(MODEL, RecordFilter())
            self.net.run_until_quiet()
        self._workload = random.Random(setup.seed)
        self._prices = random.Random(setup.seed + 1)
        self._toggling = random.Random(setup.seed + 2)
        self.brokers, self.stocks = self._interest_ranges()
        self.consumers: list[tuple[SimulatedClient, tuple[RecordFilter, ...]]] = []

    def _interest_ranges(self) -> tuple[list[str], dict[str, range]]:
        """Local brokers that get consumers, and the stocks each draws from."""
        s, topo = self.setup, self.topology
        if s.locality is None:
            return list(topo.access), {b: range(s.stocks) for b in topo.access}
        parent = analytic.parents(topo, topo.root)  # type: ignore[arg-type]
        subnets = [h for h in topo.neighbours(topo.root) if h in topo.level]  # type: ignore[arg-type]
        brokers, stocks = [], {}
        for b in topo.access:
            top = b
            while parent[top] != topo.root:
                top = parent[top]  # type: ignore[assignment]
            if top in subnets:  # §6.5.1: root's local broker idle
                brokers.append(b)
                stocks[b] = range(*subnet_range(subnets.index(top), s.locality, s.stocks))
        return brokers, stocks

    @property
    def active(self) -> int:
        return len(self.consumers) * self.setup.per_consumer

    def grow(self, per_broker: int) -> None:
        """Add consumers, all active, until every broker has ``per_broker`` of them."""
        s = self.setup
        while len(self.consumers) < per_broker * len(self.brokers):
            b = self.brokers[len(self.consumers) % len(self.brokers)]
            fs = interests(self._workload, s.kind, self.stocks[b], s.per_consumer, self._prices)
            c = self.net.client(f"c{len(self.consumers)}", b)
            for f in fs:
                c.subscribe(MODEL, f)
            self.net.run_until_quiet()
            self.consumers.append((c, fs))

    def overhead(self, toggles: int) -> tuple[float, int]:
        """Admin messages per subscription change over ``toggles`` random consumers (all of
        them if there are fewer) switched off and on again; and the number of changes."""
        picked = (
            list(range(len(self.consumers)))
            if toggles >= len(self.consumers)
            else self._toggling.sample(range(len(self.consumers)), toggles)
        )
        before, changes = self.net.total_admin(), 0
        for i in picked:
            c, fs = self.consumers[i]
            for op in (c.unsubscribe, c.subscribe):
                for f in fs:
                    op(MODEL, f)
                    self.net.run_until_quiet()
                    changes += 1
        return ((self.net.total_admin() - before) / changes if changes else 0.0), changes

    def saved_traffic(self) -> float:
        """Share of the notification messages flooding would send (|V|-1 per quote) that
        the routing tables save, over one quote of every stock (§6.5.1, Fig. 6.12)."""
        before = self.net.total_forwards()
        for i in range(self.setup.stocks):
            self.source.publish(
                MODEL, self.model.parse_event({"symbol": f"S{i:03d}", "price": 50.0})
            )
            self.net.run_until_quiet()
        sent = self.net.total_forwards() - before
        return 1 - sent / ((len(self.topology.brokers) - 1) * self.setup.stocks)

    def expected_entries(self) -> int | None:
        """Σ|R| a perfect algorithm holds for these consumers, where Mühl (2002, ch. 6)
        gives one (see :mod:`~pubsift.experiments.analytic`); None for covering with intervals."""
        s = self.setup
        if s.strategy == "simple":
            key, measure = (lambda f: f), analytic.every
        elif s.strategy == "merging":
            key = lambda f: f.get("symbol")  # noqa: E731
            measure = analytic.nonempty if s.kind == "quote" else analytic.distinct
        elif s.kind == "quote":  # identity, or covering = identity
            key, measure = (lambda f: f), analytic.distinct
        else:
            return None
        behind: dict[str, list] = {}
        for c, fs in self.consumers:
            behind.setdefault(c.broker, []).extend(key(f) for f in fs)
        return analytic.remote_entries(
            self.topology,
            self.topology.root,  # type: ignore[arg-type]
            behind,
            measure,
            s.advertisements,
        )

    def measure(self, toggles: int, traffic: bool = False, experiment: str = "tables") -> Point:
        t0 = time.perf_counter()
        s, topo = self.setup, self.topology
        sizes = self.net.table_sizes()
        remote = sum(r for _, r in sizes.values())
        expected = self.expected_entries()
        per_change, changes = self.overhead(toggles)
        saved = self.saved_traffic() if traffic else None

        def level(k: int) -> float:
            rs = [sizes[b][1] for b, lv in topo.level.items() if lv == k]
            return sum(rs) / len(rs) if rs else 0.0

        return Point(
            experiment,
            s.strategy,
            s.advertisements,
            s.kind,
            "" if s.locality is None else _fmt_d(s.locality),
            len(self.consumers) // len(self.brokers),
            self.active,
            remote,
            expected,
            round(per_change, 4),
            changes,
            sizes[topo.root][1],  # type: ignore[index]
            level(2),
            level(3),
            level(4),
            sum(sizes[b][1] for b in topo.access),
            None if saved is None else round(saved, 6),
            round(time.perf_counter() - t0, 3),
        )


def sweep(
    setup: Setup,
    points: Sequence[int],
    toggles: int,
    traffic: bool = False,
    experiment: str = "tables",
) -> Iterator[Point]:
    """Grow one network through ``points`` (consumers per local broker), measuring at each."""
    exp = Experiment(setup)
    for n in points:
        t0 = time.perf_counter()
        exp.grow(n)
        p = exp.measure(toggles, traffic, experiment)
        p.seconds = round(time.perf_counter() - t0, 3)
        yield p


def axis(maximum: int, step: int) -> list[int]:
    """Consumers per local broker: 1, step, 2·step, ..., maximum."""
    if maximum < 1 or step < 1:
        raise ValueError("the number of consumers and the step must be at least 1")
    return sorted({1, maximum, *range(step, maximum + 1, step)})


def _fmt_d(d: float) -> str:
    return "1/3" if abs(d - 1 / 3) < 1e-9 else f"{d:g}"
