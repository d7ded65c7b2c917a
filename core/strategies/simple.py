"""Simple filter-based routing (Mühl 2002, "Large-Scale Content-Based Publish/Subscribe
Systems", §3.5.2, Fig. 3.8).

Every (un)subscription is flooded to every broker. The only assumption is that each
subscription is uniquely identified: an entry is tagged with the client that issued it, so
two clients behind the same neighbour subscribing to the same filter hold two entries, and
one unsubscribing leaves the other's in place. Resubscription is idempotent (§3.7.2).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pubsift.core.messages import Routed
from pubsift.core.model import Filter
from pubsift.core.routing_table import Entry
from pubsift.core.strategies.base import Outbox, Strategy


class Simple(Strategy):
    name = "simple"

    def administer(self, sender: str, subs: Sequence[Routed], unsubs: Sequence[Routed]) -> Outbox:
        local = self.is_local(sender)
        subs = [(f, sender if local else t) for f, t in subs]
        unsubs = [(f, sender if local else t) for f, t in unsubs]
        for f, t in unsubs:
            self.table.remove(Entry(f, sender, t))
        for f, t in subs:
            self.table.add(f, sender, t)
        return {h: (list(subs), list(unsubs)) for h in self.table.neighbours if h != sender}

    def activate(
        self, neighbour: str, candidates: Sequence[Entry], active: Callable[[Filter], bool]
    ) -> list[Routed]:
        return [(e.filter, e.tag) for e in candidates]
