"""Flooding (Mühl 000, §3.5.1, Fig. 3.7).

Every broker forwards every notification to all neighbours but the one it came from (the
constant routing entries (F_T, U) for all U ∈ N_B); only the local entries change, and no
admin message is ever sent.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from pubsift.core.messages import Routed
from pubsift.core.model import Event, Filter
from pubsift.core.routing_table import Entry
from pubsift.core.strategies.base import Outbox, Strategy


class Flooding(Strategy):
    name = "flooding"

    def administer(self, sender: str, subs: Sequence[Routed], unsubs: Sequence[Routed]) -> Outbox:
        for f, _ in unsubs:
            self.table.remove(Entry(f, sender))
        for f, _ in subs:
            self.table.add(f, sender)
        return {}

    def destinations(self, event: Event, exclude: str | None) -> set[str]:
        dests = self.table.destinations(event) | self.table.neighbours
        dests.discard(exclude)
        return dests

    def activate(self, neighbour: str, candidates: Sequence[Entry],
                 active: Callable[[Filter], bool]) -> list[Routed]:
        return []
