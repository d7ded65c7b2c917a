"""A deterministic simulated network of brokers (Mühl 2002, "Large-Scale Content-Based
Publish/Subscribe Systems", §3.2 system model).

In-process :class:`~pubsift.core.broker.Broker` objects (the same code the networked runtime
uses) are connected by FIFO links. A seeded scheduler delivers messages in simulated time:
each message takes a link delay drawn from [δmin, δmax] but never overtakes an earlier
message on its link, so deliveries interleave across links while each link stays FIFO.
Client-broker communication is local and instantaneous (§3.4). Every interface operation
(sub, unsub, adv, unadv, pub, notify) is recorded in :attr:`Network.trace` for the
delivery oracle; ``quiet`` marks the points where no message was in flight.

Counters: admin messages sent in all (:meth:`Network.total_admin`) and processed per broker
(:meth:`Network.admin_processed`), notifications forwarded per directed link (``forwards``),
routing-table sizes per broker (:meth:`Network.table_sizes`).

Typical use::

    net = Network(hierarchy(), [model], strategy="covering", advertisements=True, seed=1)
    alice = net.client("alice", "l3"); quotes = net.client("feed", "l0")
    quotes.advertise("records", f_all); alice.subscribe("records", f_ibm)
    net.run_until_quiet(); quotes.publish("records", event); net.run_until_quiet()
"""

from __future__ import annotations

import heapq
import random
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import astuple, dataclass
from typing import Any

from pubsift.core.broker import Broker
from pubsift.core.leasing import Leasing
from pubsift.core.messages import (
    Adv,
    BrokerMessage,
    Forward,
    Level,
    Message,
    Notify,
    Pub,
    Sub,
    Unadv,
    Unsub,
)
from pubsift.core.model import Event, Filter, FilterModel
from pubsift.core.strategies import StrategyFactory
from pubsift.core.topology import Topology


@dataclass(frozen=True)
class TraceOp:
    """One interface operation (or a ``quiet`` marker) at simulated ``time``. ``kind`` is
    sub, unsub, adv, unadv, renew-sub, renew-adv, pub, notify or quiet."""

    time: float
    kind: str
    client: str | None = None
    model: str | None = None
    filter: Filter | None = None
    event: Event | None = None
    pub_id: Hashable | None = None


@dataclass(frozen=True)
class Counters:
    """Network-wide totals (see :meth:`Network.snapshot`)."""

    admin_sent: int
    admin_processed: int
    forwards: int
    delivered: int
    local_entries: int
    remote_entries: int
    useless_forwards: int

    def __sub__(self, other: Counters) -> Counters:
        return Counters(*(a - b for a, b in zip(astuple(self), astuple(other))))


class _Discard(list[TraceOp]):
    """A trace that keeps nothing."""

    def append(self, item: object) -> None:
        pass


class SimulatedClient:
    """A client of the simulated network attached to one broker; its operations are the
    interface of Table 2.1."""

    def __init__(self, net: Network, name: str, broker: str) -> None:
        self.net, self.name, self.broker = net, name, broker
        self.subscriptions: dict[tuple[str, Filter], None] = {}
        self.advertisements: dict[tuple[str, Filter], None] = {}
        self.received: list[Hashable] = []

    def subscribe(self, model: str, f: Filter) -> None:
        self.net._op("sub", self, model, f, Sub(self.name, model, f))
        self.subscriptions[(model, f)] = None

    def unsubscribe(self, model: str, f: Filter) -> None:
        self.net._op("unsub", self, model, f, Unsub(self.name, model, f))
        self.subscriptions.pop((model, f), None)

    def advertise(self, model: str, f: Filter) -> None:
        self.net._op("adv", self, model, f, Adv(self.name, model, f))
        self.advertisements[(model, f)] = None

    def unadvertise(self, model: str, f: Filter) -> None:
        self.net._op("unadv", self, model, f, Unadv(self.name, model, f))
        self.advertisements.pop((model, f), None)

    def publish(self, model: str, event: Event) -> int:
        """Publish ``event``; returns its unique publication id."""
        pid = self.net._next_pub
        self.net._next_pub += 1
        self.net.trace.append(
            TraceOp(self.net.now, "pub", self.name, model, event=event, pub_id=pid)
        )
        self.net._to_broker(self, Pub(self.name, model, event, pid))
        return pid

    def renew(self) -> None:
        """Issue every active subscription and advertisement again (§3.7.2)."""
        for model, f in list(self.subscriptions):
            self.net._op("renew-sub", self, model, f, Sub(self.name, model, f))
        for model, f in list(self.advertisements):
            self.net._op("renew-adv", self, model, f, Adv(self.name, model, f))


class Network:
    """Brokers on the ``topology``, all running ``strategy`` for every model in ``models``."""

    def __init__(
        self,
        topology: Topology,
        models: Sequence[FilterModel] | Mapping[str, FilterModel],
        strategy: str | StrategyFactory = "covering",
        advertisements: bool = False,
        seed: int = 0,
        delay: tuple[float, float] = (1.0, 2.0),
        leasing: Leasing | None = None,
        record: bool = True,
    ) -> None:
        self.topology = topology
        self.models = dict(models) if isinstance(models, Mapping) else {m.name: m for m in models}
        self.advertisements = advertisements
        self.delay = delay
        self.leasing = leasing
        self.diameter = topology.diameter()
        if leasing is not None:
            leasing.check(self.diameter, *delay)
        self.rng = random.Random(seed)
        self.now = 0.0
        self.brokers: dict[str, Broker] = {
            b: Broker(
                b,
                self.models,
                strategy,
                self,
                advertisements,
                leasing.period if leasing else None,
                self._clock,
            )
            for b in topology.brokers
        }
        for a, b in topology.edges:
            self.brokers[a].connect(b)
            self.brokers[b].connect(a)
        self.clients: dict[str, SimulatedClient] = {}
        #: the interface operations, for the oracle (``record=False``: not kept, for
        #: long benchmark runs)
        self.trace: list[TraceOp] = [] if record else _Discard()
        self.forwards: Counter[tuple[str, str]] = Counter()
        self._events: list[tuple[float, int, str, Any]] = []
        self._seq = 0
        self._link_last: dict[tuple[str, str], float] = {}
        self._in_flight = 0
        self._next_pub = 0
        self.delivered = 0

    def _clock(self) -> float:
        return self.now

    # -- clients ------------------------------------------------------------------------
    def client(self, name: str, broker: str) -> SimulatedClient:
        """Attach a new client ``name`` to ``broker``."""
        if name in self.clients:
            raise ValueError(f"client {name!r} exists already (at {self.clients[name].broker})")
        if broker not in self.brokers:
            raise ValueError(f"no broker {broker!r} in the topology")
        c = SimulatedClient(self, name, broker)
        self.clients[name] = c
        self.brokers[broker].attach(name)
        if self.leasing is not None:  # renewal rounds of all clients start together
            self._push(self.now + self.rng.uniform(0, self.leasing.refresh / 10), "renew", name)
        return c

    def _op(self, kind: str, client: SimulatedClient, model: str, f: Filter, msg: Message) -> None:
        """Hand a (un)subscription or (un)advertisement to the client's broker; it enters
        the trace only if the broker accepts it (a refused one raises and changes nothing)."""
        self._to_broker(client, msg)
        self.trace.append(TraceOp(self.now, kind, client.name, model, f))

    def _to_broker(self, client: SimulatedClient, msg: Message) -> None:
        broker = self.brokers[client.broker]
        if self.leasing is not None:
            broker.expire(self.now)
        broker.receive(msg, client.name)

    # -- the Port of every broker ---------------------------------------------------------
    def send(self, broker: str, neighbour: str, msg: BrokerMessage) -> None:
        link = (broker, neighbour)
        if isinstance(msg, Forward):
            self.forwards[link] += 1
        t = max(self.now + self.rng.uniform(*self.delay), self._link_last.get(link, 0.0))
        self._link_last[link] = t
        self._in_flight += 1
        self._push(t, "msg", (broker, neighbour, msg))

    def deliver(self, broker: str, msg: Notify) -> None:
        self.trace.append(
            TraceOp(self.now, "notify", msg.client, msg.model, event=msg.event, pub_id=msg.pub_id)
        )
        self.clients[msg.client].received.append(msg.pub_id)
        self.delivered += 1

    # -- scheduler ------------------------------------------------------------------------
    def _push(self, t: float, kind: str, data: Any) -> None:
        self._seq += 1
        heapq.heappush(self._events, (t, self._seq, kind, data))

    def _step(self) -> None:
        t, _, kind, data = heapq.heappop(self._events)
        self.now = max(self.now, t)
        if kind == "msg":
            self._in_flight -= 1
            src, dst, msg = data
            broker = self.brokers[dst]
            if self.leasing is not None:
                broker.expire(self.now)
            broker.receive(msg, src)
        else:
            assert self.leasing is not None  # renewals are scheduled only with leasing
            self.clients[data].renew()
            self._push(self.now + self.leasing.refresh, "renew", data)

    def run_until_quiet(self, max_steps: int = 10_000_000) -> None:
        """Deliver messages (and run the lease renewals due meanwhile) until none is in
        flight; record a ``quiet`` marker."""
        steps = 0
        while self._in_flight:
            self._step()
            steps += 1
            if steps > max_steps:
                raise RuntimeError(f"network not quiet after {max_steps} steps")
        self.trace.append(TraceOp(self.now, "quiet"))

    def run_until(self, t: float) -> None:
        """Process everything due up to simulated time ``t``; the clock then reads ``t``."""
        while self._events and self._events[0][0] <= t:
            self._step()
        self.now = max(self.now, t)
        if self.leasing is not None:
            for b in self.brokers.values():
                b.expire(self.now)
        if not self._in_flight:
            self.trace.append(TraceOp(self.now, "quiet"))

    # -- faults (for self-stabilization experiments) ------------------------------------
    def lose(self, fraction: float) -> int:
        """Lose a random ``fraction`` of the messages in flight; returns how many."""
        kept, lost = [], 0
        for ev in self._events:
            if ev[2] == "msg" and self.rng.random() < fraction:
                lost += 1
            else:
                kept.append(ev)
        heapq.heapify(kept)
        self._events = kept
        self._in_flight -= lost
        return lost

    def inject(self, src: str, dst: str, msg: BrokerMessage) -> None:
        """Put a spurious message on the link src -> dst."""
        self.send(src, dst, msg)

    # -- counters -------------------------------------------------------------------------
    def table_sizes(self, level: Level = "S") -> dict[str, tuple[int, int]]:
        """Per broker, (local entries, remote entries) over all models."""
        return {name: b.sizes(level) for name, b in self.brokers.items()}

    def remote_entries(self, level: Level = "S") -> int:
        """Σ|R|: remote routing entries over all brokers."""
        return sum(r for _, r in self.table_sizes(level).values())

    def admin_processed(self) -> dict[str, int]:
        return {name: b.admin_processed for name, b in self.brokers.items()}

    def total_admin(self) -> int:
        return sum(b.admin_sent for b in self.brokers.values())

    def total_forwards(self) -> int:
        return sum(self.forwards.values())

    def snapshot(self) -> Counters:
        """Totals of every counter now (subtract two snapshots to measure a phase)."""
        sizes = self.table_sizes()
        return Counters(
            self.total_admin(),
            sum(self.admin_processed().values()),
            self.total_forwards(),
            self.delivered,
            sum(lo for lo, _ in sizes.values()),
            sum(r for _, r in sizes.values()),
            self.useless_forwards(),
        )

    def useless_forwards(self) -> int:
        """Notifications a broker received and neither delivered nor forwarded."""
        return sum(b.useless_forwards for b in self.brokers.values())
