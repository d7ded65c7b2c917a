"""Flooding (Mühl 2002, "Large-Scale Content-Based Publish/Subscribe Systems", §3.5.1,
Fig. 3.7).

The routing table is initialized to the constant entries (F_T, U) for all U ∈ N_B
(:meth:`~pubsift.core.routing_table.RoutingTable.install_constant`), so every broker
forwards every notification to all neighbours but the one it came from; only the local
entries change, and no admin message is ever sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pubsift.core.messages import Routed
from pubsift.core.model import Filter
from pubsift.core.routing_table import Entry, RoutingTable
from pubsift.core.strategies.base import Outbox, Strategy


class Flooding(Strategy):
    name = "flooding"

    def __init__(self, table: RoutingTable, is_local: Callable[[str], bool]) -> None:
        super().__init__(table, is_local)
        table.install_constant()

    def administer(self, sender: str, subs: Sequence[Routed], unsubs: Sequence[Routed]) -> Outbox:
        for f, _ in unsubs:
            self.table.remove(Entry(f, sender))
        for f, _ in subs:
            self.table.add(f, sender)
        return {}

    def activate(
        self, neighbour: str, candidates: Sequence[Entry], active: Callable[[Filter], bool]
    ) -> list[Routed]:
        return []
