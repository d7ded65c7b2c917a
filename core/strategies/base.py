"""The contract of a routing strategy: Mühl's ``administer`` (Mühl 2002, "Large-Scale
Content-Based Publish/Subscribe Systems", §3.4, Fig. 3.6).

A strategy owns the routing entries of one routing table (one model, one level) and decides
which admin messages a subscription change causes. The broker hardwires everything else
(FIFO processing, notification forwarding through the table, sending one admin message per
neighbour), so adding a strategy never touches the broker.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Sequence, Set
from typing import ClassVar

from pubsift.core.messages import Routed
from pubsift.core.model import Event, Filter
from pubsift.core.routing_table import Entry, RoutingTable

Outbox = dict[str, tuple[list[Routed], list[Routed]]]
"""Per neighbour H, the subscriptions S_H and unsubscriptions U_H of its admin message."""


def generate(subs: Iterable[tuple[Routed, str]], unsubs: Iterable[tuple[Routed, str]]) -> Outbox:
    """Mühl's ``generate`` (Fig. 3.14): one (S_H, U_H) pair per neighbour H, without repeats."""
    out: Outbox = {}
    for items, slot in ((subs, 0), (unsubs, 1)):
        for routed, h in items:
            lists = out.setdefault(h, ([], []))
            if routed not in lists[slot]:
                lists[slot].append(routed)
    return out


class Strategy(ABC):
    """``administer`` for one routing table. ``is_local(d)`` tells local clients from
    neighbours (Mühl checks S ∈ L_B or S ∈ N_B)."""

    name: ClassVar[str]
    #: whether a renewal is not forwarded while another entry covers it (or is identical
    #: to it): withdrawing that entry then renews what it covered (Broker.expire)
    withholds_covered_renewals: ClassVar[bool] = False

    def __init__(self, table: RoutingTable, is_local: Callable[[str], bool]) -> None:
        self.table = table
        self.model = table.model
        self.is_local = is_local

    @abstractmethod
    def administer(self, sender: str, subs: Sequence[Routed], unsubs: Sequence[Routed]) -> Outbox:
        """Process admin(S, U) from a neighbour, or sub/unsub from a local client
        (``administer(X, {F}, ∅)`` / ``administer(X, ∅, {F})``), update the table and
        return the admin messages to send."""

    def destinations(self, event: Event, exclude: str | None) -> set[str]:
        """F_B(n) without the neighbour the notification came from (Fig. 3.2)."""
        dests = self.table.destinations(event)
        dests.discard(exclude)
        return dests

    def destinations_many(self, events: Sequence[Event], exclude: str | None) -> Sequence[Set[str]]:
        """:meth:`destinations` of each of ``events`` (a batch of publications), in order,
        in one call (:meth:`RoutingTable.destinations_many`; a strategy that answers
        :meth:`destinations` itself is asked event by event). The sets are read only."""
        if type(self).destinations is not Strategy.destinations:
            one = self.destinations
            return [one(e, exclude) for e in events]
        return self.table.destinations_many(events, exclude)

    def activate(
        self, neighbour: str, candidates: Sequence[Entry], active: Callable[[Filter], bool]
    ) -> list[Routed]:
        """Subscriptions to send to ``neighbour`` now that its new advertisements overlap the
        ``candidates`` (§3.6). ``active(F)``: F overlaps one of the neighbour's current
        advertisements. Default (covering-based): :func:`activation` with covering
        entries as blockers."""
        return activation(self, neighbour, candidates, active, self.table.covering)

    def drop(self, entries: Iterable[Entry]) -> None:
        """Remove entries silently (unserviceable after an unadvertisement, or expired)."""
        for e in entries:
            self.table.remove(e)

    def expiring(self, now: float) -> list[Entry]:
        """The entries whose lease runs out by ``now`` (the broker withdraws those of local
        clients and vanished neighbours like unsubscriptions,
        :meth:`Broker.expire <pubsift.core.broker.Broker.expire>`)."""
        return self.leases().expired(now)

    def leases(self) -> RoutingTable:
        """The table whose entries hold the leases."""
        return self.table

    def covered(self, f: Filter) -> set[Entry]:
        """The entries (with leases) that ``f`` covers, an identical one included."""
        return self.leases().covered(f)

    def expire(self, now: float) -> None:
        """Drop the entries whose lease ran out (§3.7.3)."""
        self.drop(self.table.expired(now))


def activation(
    strategy: Strategy,
    neighbour: str,
    candidates: Sequence[Entry],
    active: Callable[[Filter], bool],
    blockers: Callable[[Filter], Collection[Entry]],
) -> list[Routed]:
    """The activation step of Mühl 2002, "Large-Scale Content-Based Publish/Subscribe
    Systems", §3.6, shared by covering- and identity-based routing: the candidates to send
    to ``neighbour``, skipping one that an entry of ``blockers(F)`` makes redundant — an
    entry from another destination that was ``active`` before, or another candidate (a
    real cover, or an identical one earlier in the list). ``blockers`` is the table's
    ``covering`` (covering-based routing) or ``identical`` (identity-based routing)."""
    rank = {e: i for i, e in enumerate(candidates)}
    out: list[Routed] = []
    for e in candidates:
        suppressed = False
        for g in blockers(e.filter):
            if g == e or g.dest == neighbour:
                continue
            if g not in rank:
                if active(g.filter):
                    suppressed = True
            elif rank[g] < rank[e] or not strategy.model.covers(e.filter, g.filter):
                suppressed = True
            if suppressed:
                break
        if not suppressed and (e.filter, e.tag) not in out:
            out.append((e.filter, e.tag))
    return out
