"""The broker of Mühl's routing framework (Mühl 2002, "Large-Scale Content-Based
Publish/Subscribe Systems", §3.4, Fig. 3.6; Conan, "Distributed Event-Based System — Addendum"
(slides) §3.1).

A broker has local clients L_B and neighbour brokers N_B (an acyclic topology). It takes
messages one at a time in FIFO order: ``pub``/``forward`` are routed through the routing
table (Fig. 3.2), ``sub``/``unsub``/``adv``/``unadv`` and ``admin`` go to the strategy's
``administer``, and one admin message is sent to every neighbour the result names
(lines 27-32 of Fig. 3.6). It keeps one routing table per filter model (and, with
advertisements, one advertisement table per model, §3.6).

The broker knows no transport: it hands outgoing messages to a :class:`Port`, so the same
code runs in the simulated network (:mod:`pubsift.core.network`) and over real connections.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Protocol

from pubsift.core.advertisements import readvertised, restrict
from pubsift.core.errors import PubsiftError, UnknownModelError
from pubsift.core.messages import (
    Admin,
    Adv,
    Batch,
    BrokerMessage,
    Forward,
    Forwards,
    Level,
    Message,
    Notify,
    Pub,
    Pubs,
    Routed,
    Sub,
    Unsub,
    forward_of,
)
from pubsift.core.model import FilterModel
from pubsift.core.routing_table import Entry, RoutingTable
from pubsift.core.strategies import Strategy, StrategyFactory, strategy_factory
from pubsift.core.strategies.base import Outbox


class Port(Protocol):
    """Where a broker's output goes."""

    def send(self, broker: str, neighbour: str, msg: BrokerMessage) -> None:
        """Send ``msg`` over the link from ``broker`` to ``neighbour`` (FIFO)."""

    def deliver(self, broker: str, msg: Notify) -> None:
        """Hand ``msg`` to the local client ``msg.client`` of ``broker``."""


class BatchPort(Port, Protocol):
    """A port that takes a destination's share of a batch (:class:`Pubs`,
    :class:`Forwards`) in one call (DESIGN §2.6: one call per destination and batch instead
    of one message object and call per publication). A broker whose port lacks these
    methods hands it the batch as single :class:`Forward` and :class:`Notify` messages."""

    def send_many(self, broker: str, neighbour: str, batch: Batch, indices: list[int]) -> None:
        """Forward the publications ``batch.*[i]``, i in ``indices`` (ascending), to
        ``neighbour``, in that order."""

    def deliver_many(self, broker: str, client: str, batch: Batch, indices: list[int]) -> None:
        """Notify the local client ``client`` of the publications ``batch.*[i]``, i in
        ``indices`` (ascending), in that order."""


class BrokerError(PubsiftError, ValueError):
    """A message a broker cannot process (unknown client, neighbour or model)."""


class ModelRouting:
    """Routing state of one broker for one model: T_B^S and, with advertisements, T_B^A."""

    def __init__(
        self,
        model: FilterModel,
        factory: StrategyFactory,
        neighbours: set[str],
        is_local: Callable[[str], bool],
        advertisements: bool,
        lease: float | None,
        clock: Callable[[], float],
    ) -> None:
        self.model = model
        self.subs = RoutingTable(model, neighbours, lease, clock)
        self.sub_strategy: Strategy = factory(self.subs, is_local)
        self.advs: RoutingTable | None = None
        self.adv_strategy: Strategy | None = None
        if advertisements:
            self.advs = RoutingTable(model, neighbours, lease, clock)
            self.adv_strategy = factory(self.advs, is_local)

    def strategies(self) -> list[Strategy]:
        return [s for s in (self.sub_strategy, self.adv_strategy) if s is not None]


class Broker:
    """One broker. ``strategy`` is a name from :data:`~pubsift.core.strategies.STRATEGIES`
    or a factory; ``lease`` is the lease period π (None: no leasing)."""

    def __init__(
        self,
        name: str,
        models: Mapping[str, FilterModel] | Sequence[FilterModel],
        strategy: str | StrategyFactory,
        port: Port,
        advertisements: bool = False,
        lease: float | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.name = name
        self.port = port
        self.advertisements = advertisements
        self.clock = clock or (lambda: 0.0)
        self.neighbours: set[str] = set()
        self.clients: set[str] = set()
        factory = strategy_factory(strategy)
        self.strategy_name = (
            strategy if isinstance(strategy, str) else getattr(strategy, "name", "custom")
        )
        ms = models.values() if isinstance(models, Mapping) else models
        self.routing: dict[str, ModelRouting] = {
            m.name: ModelRouting(
                m,
                factory,
                self.neighbours,
                self.clients.__contains__,
                advertisements,
                lease,
                self.clock,
            )
            for m in ms
        }
        self._inbox: deque[tuple[Message | Batch, str]] = deque()
        self._busy = False
        #: admin messages sent / processed; notifications forwarded per neighbour;
        #: notifications delivered; publications dropped for matching no advertisement;
        #: notifications received from a neighbour that went nowhere (§3.5: perfect
        #: routing never forwards those)
        self.admin_sent = 0
        self.admin_processed = 0
        self.forwarded: Counter[str] = Counter()
        self.notified = 0
        self.dropped_publications = 0
        self.useless_forwards = 0
        #: routing entries (subscriptions or advertisements, renewals included) received
        #: from clients and neighbours and sent to neighbours, per (model, level): with
        #: covering or merging, fewer go out than come in (Mühl §3.5.3-§3.5.5)
        self.entries_received: Counter[tuple[str, Level]] = Counter()
        self.entries_forwarded: Counter[tuple[str, Level]] = Counter()

    def __repr__(self) -> str:
        return f"<Broker {self.name} {self.strategy_name}>"

    # -- topology -----------------------------------------------------------------------
    def connect(self, neighbour: str) -> None:
        self.neighbours.add(neighbour)

    def attach(self, client: str) -> None:
        self.clients.add(client)

    def table(self, model: str, level: Level = "S") -> RoutingTable:
        """The routing table of ``model``: subscriptions (``"S"``) or advertisements."""
        r = self._routing(model)
        table = r.subs if level == "S" else r.advs
        if table is None:
            raise BrokerError(f"broker {self.name} routes without advertisements")
        return table

    def routes_beyond(self, model: str, sender: str) -> bool:
        """Whether a forward of ``model`` from neighbour ``sender`` could go anywhere: some
        entry of the routing table names another destination (an unknown model: True, so
        that routing it says what is wrong)."""
        r = self.routing.get(model)
        return r is None or r.subs.reaches_beyond(sender)

    def sizes(self, level: Level = "S") -> tuple[int, int]:
        """(local, remote) entries over all models at ``level``."""
        local = remote = 0
        for r in self.routing.values():
            table = r.subs if level == "S" else r.advs
            if table is not None:
                lo, re = table.sizes()
                local, remote = local + lo, remote + re
        return local, remote

    # -- message processing ---------------------------------------------------------------
    def receive(self, msg: Message | Batch, sender: str) -> None:
        """Queue ``msg`` from ``sender`` (a local client or a neighbour) and process the
        queue in FIFO order."""
        self._inbox.append((msg, sender))
        if self._busy:
            return
        self._busy = True
        refused: list[PubsiftError] = []
        try:
            while self._inbox:
                try:
                    self._process(*self._inbox.popleft())
                except PubsiftError as exc:  # bad input: report it, keep the rest
                    refused.append(exc)
        finally:
            self._busy = False
        if refused:
            raise refused[0]

    def expire(self, now: float, early: float = 0.0, gone: Collection[str] = ()) -> None:
        """Drop every routing entry whose lease ran out (§3.7.3).

        The entries of a local client, or of a neighbour in ``gone`` (its link is down), are
        withdrawn as if it had unsubscribed (or unadvertised), ``early`` seconds before their
        lease runs out: the strategy forwards what such an entry covered (or what a merger
        still stands for) together with the withdrawal, as for an unsubscription (§3.5),
        and the copies further on, renewed by the same forwarded renewals, are still there
        when that admin message arrives. A silent drop would leave the next brokers without
        the covered subscriptions until their subscribers renew them (up to ρ later):
        notifications meant for other clients would be lost whenever a client or a broker
        with a covering filter vanishes. The entries of connected neighbours expire
        silently: the neighbour withdraws them itself.

        The entries a withdrawn one covers (an identical one included) were renewed toward
        the neighbours through it alone (a covered renewal is not forwarded, §3.7.2), so
        their renewals are forwarded at once, as if their destinations had issued them
        again, without extending their own leases here (garbage still runs out, §3.7.1)."""
        for model, r in self.routing.items():
            levels: tuple[tuple[Level, Strategy | None], ...] = (
                ("S", r.sub_strategy),
                ("A", r.adv_strategy),
            )
            for level, s in levels:
                if s is None:
                    continue
                withdrawn = [
                    e for e in s.expiring(now + early) if e.dest in self.clients or e.dest in gone
                ]
                for e in withdrawn:
                    self._administer(model, level, e.dest, (), ((e.filter, e.tag),))
                if not withdrawn or not s.withholds_covered_renewals:
                    continue
                leases = s.leases().expiry
                renew: dict[str, dict[Routed, None]] = {}
                kept: dict[Entry, float] = {}
                for e in withdrawn:
                    for c in s.covered(e.filter):
                        if c in leases:
                            renew.setdefault(c.dest, {})[(c.filter, c.tag)] = None
                            kept[c] = leases[c]
                for dest, items in sorted(renew.items()):
                    self._administer(model, level, dest, tuple(items), ())
                for c, until in kept.items():
                    if c in leases:
                        leases[c] = until
            for s in r.strategies():
                s.expire(now)

    def _routing(self, model: str) -> ModelRouting:
        try:
            return self.routing[model]
        except KeyError:
            raise UnknownModelError(model, list(self.routing)) from None

    def _process(self, msg: Message | Batch, sender: str) -> None:
        if isinstance(msg, (Pub, Forward)):
            self._route(msg, sender)
            return
        if isinstance(msg, (Pubs, Forwards)):
            self._route_many(msg, sender)
            return
        if isinstance(msg, Admin):
            if sender not in self.neighbours:
                raise BrokerError(
                    f"broker {self.name}: admin message from {sender!r}, which is not a neighbour"
                )
            self.admin_processed += 1
            self._administer(msg.model, msg.level, sender, msg.subs, msg.unsubs)
            self.entries_received[msg.model, msg.level] += len(msg.subs)
            return
        if isinstance(msg, Notify) or sender not in self.clients:
            raise BrokerError(
                f"broker {self.name}: {type(msg).__name__} from {sender!r}, "
                f"which is not a local client"
            )
        item: tuple[Routed, ...] = ((msg.filter, None),)
        level: Level = "S" if isinstance(msg, (Sub, Unsub)) else "A"
        if level == "A" and not self.advertisements:
            raise BrokerError(
                f"broker {self.name} routes without advertisements; "
                f"{type(msg).__name__.lower()} from {sender!r} refused"
            )
        if isinstance(msg, (Sub, Adv)):
            self._administer(msg.model, level, sender, item, ())
            self.entries_received[msg.model, level] += 1
        else:
            self._administer(msg.model, level, sender, (), item)

    def _route(self, msg: Pub | Forward, sender: str) -> None:
        r = self._routing(msg.model)
        if isinstance(msg, Pub):
            if sender not in self.clients:
                raise BrokerError(f"broker {self.name}: pub from {sender!r}, not a local client")
            if r.advs is not None and sender not in r.advs.destinations(msg.event):
                self.dropped_publications += 1  # Def. 2.4: matches no advertisement of X
                return
        elif sender not in self.neighbours:
            raise BrokerError(f"broker {self.name}: forward from {sender!r}, not a neighbour")
        fwd: Forward | None = None
        exclude = sender if isinstance(msg, Forward) else None
        dests = r.sub_strategy.destinations(msg.event, exclude)
        if exclude is not None and not dests:
            self.useless_forwards += 1  # forwarded here for nothing: not perfect
        for d in sorted(dests) if len(dests) > 1 else dests:
            if d in self.neighbours:
                self.forwarded[d] += 1
                if fwd is None:  # one forward for every neighbour
                    fwd = Forward(msg.model, msg.event, msg.pub_id, msg.wire)
                self.port.send(self.name, d, fwd)
            elif d in self.clients:
                self.notified += 1
                self.port.deliver(self.name, Notify(d, msg.model, msg.event, msg.pub_id, msg.wire))

    def _route_many(self, msg: Batch, sender: str) -> None:
        """Route a batch as the sequence of its publications (:meth:`_route` on each, in
        order), then hand each destination its share in one call: per destination the
        same notifications in the same order, and nothing else happens between them."""
        r = self._routing(msg.model)
        from_client = isinstance(msg, Pubs)
        if from_client:
            if sender not in self.clients:
                raise BrokerError(f"broker {self.name}: pubs from {sender!r}, not a local client")
        elif sender not in self.neighbours:
            raise BrokerError(f"broker {self.name}: forwards from {sender!r}, not a neighbour")
        advs = r.advs if from_client else None
        exclude = None if from_client else sender
        events = msg.events
        kept: Sequence[int] = range(len(events))
        if advs is not None:
            kept = [i for i, e in enumerate(events) if sender in advs.destinations(e)]
            self.dropped_publications += len(events) - len(kept)  # Def. 2.4: no adv of X
            events = [events[i] for i in kept]
        shares: dict[str, list[int]] = {}
        nowhere = 0
        last: object = None
        to: list[list[int]] = []
        for i, dests in zip(kept, r.sub_strategy.destinations_many(events, exclude), strict=True):
            if dests is not last:  # an event going where the one before went: its shares
                if not dests:
                    nowhere += 1
                    continue
                last = dests
                to = []
                for d in dests:
                    share = shares.get(d)
                    if share is None:
                        share = shares[d] = []
                    to.append(share)
            for share in to:
                share.append(i)
        if exclude is not None:
            self.useless_forwards += nowhere  # forwarded here for nothing: not perfect
        port = self.port
        many = hasattr(port, "deliver_many")
        for d in sorted(shares) if len(shares) > 1 else shares:
            share = shares[d]
            if d in self.neighbours:
                self.forwarded[d] += len(share)
                if many:
                    port.send_many(self.name, d, msg, share)  # type: ignore[attr-defined]
                else:
                    for i in share:
                        port.send(self.name, d, forward_of(msg, i))
            elif d in self.clients:
                self.notified += len(share)
                if many:
                    port.deliver_many(self.name, d, msg, share)  # type: ignore[attr-defined]
                else:
                    for i in share:
                        f = forward_of(msg, i)
                        port.deliver(self.name, Notify(d, f.model, f.event, f.pub_id, f.wire))

    def _administer(
        self,
        model: str,
        level: Level,
        sender: str,
        subs: Sequence[Routed],
        unsubs: Sequence[Routed],
    ) -> None:
        r = self._routing(model)
        if level == "S":
            out = r.sub_strategy.administer(sender, subs, unsubs)
            if r.advs is not None:
                out = restrict(out, r.advs)
            self._send(model, "S", sender, out)
            return
        if r.advs is None or r.adv_strategy is None:
            raise BrokerError(
                f"broker {self.name} routes without advertisements; "
                f"advertisement admin message from {sender!r} refused"
            )
        before = r.advs.filters(sender)
        out = r.adv_strategy.administer(sender, subs, unsubs)
        activated = readvertised(
            r.sub_strategy,
            r.advs,
            sender,
            before,
            r.advs.filters(sender),
            self.clients.__contains__,
        )
        self._send(model, "A", sender, out)
        if activated:
            self._send(model, "S", None, {sender: (activated, [])})

    def _send(self, model: str, level: Level, sender: str | None, out: Outbox) -> None:
        for h in sorted(out):
            if h == sender or h not in self.neighbours:
                continue
            subs, unsubs = out[h]
            if subs or unsubs:
                self.admin_sent += 1
                self.entries_forwarded[model, level] += len(subs)
                self.port.send(self.name, h, Admin(model, level, tuple(subs), tuple(unsubs)))
