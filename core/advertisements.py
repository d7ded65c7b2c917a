"""Routing with advertisements (Mühl 2002, "Large-Scale Content-Based Publish/Subscribe
Systems", §3.6).

Each broker keeps a second table T_B^A of advertisements, updated by the same strategy as
subscriptions (``admin_A`` messages). The two levels depend on each other in three places,
implemented here so that every strategy gets them unchanged:

* :func:`restrict` — an (un)subscription is forwarded to a neighbour H only if an
  advertisement from H overlaps it (the triples of ``administer_S`` are filtered);
* :func:`readvertised` — when the advertisements held for a destination change, the
  subscriptions they newly make serviceable are sent to that neighbour ("activation", the
  strategy picks which so as not to send covered ones), and the routing entries of other
  neighbours that no advertisement from any other destination overlaps any more are dropped
  (they are unserviceable; the neighbour drops its own side in the same way).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pubsift.core.messages import Routed
from pubsift.core.model import Filter
from pubsift.core.routing_table import Entry, RoutingTable, entry_key
from pubsift.core.strategies.base import Outbox, Strategy


def restrict(out: Outbox, advs: RoutingTable) -> Outbox:
    """Keep, per neighbour H, only the filters some advertisement from H overlaps."""
    cache: dict[Filter, set[str]] = {}

    def sources(f: Filter) -> set[str]:
        if f not in cache:
            cache[f] = {e.dest for e in advs.overlapping(f)}
        return cache[f]

    kept: Outbox = {}
    for h, (subs, unsubs) in out.items():
        s = [r for r in subs if h in sources(r[0])]
        u = [r for r in unsubs if h in sources(r[0])]
        if s or u:
            kept[h] = (s, u)
    return kept


def readvertised(
    subs: Strategy,
    advs: RoutingTable,
    source: str,
    before: Sequence[Filter],
    after: Sequence[Filter],
    is_local: Callable[[str], bool],
) -> list[Routed]:
    """React to the advertisements of destination ``source`` changing from ``before`` to
    ``after``: drop unserviceable subscription entries and return the subscriptions to send
    to ``source`` (empty if ``source`` is a local client)."""
    model = advs.model
    table = subs.table
    old, new = set(before), set(after)
    added = [a for a in after if a not in old]
    removed = [a for a in before if a not in new]
    if removed:
        doomed: dict[Entry, None] = {}
        for a in removed:
            for e in sorted(table.overlapping(a), key=entry_key):
                if (
                    e.dest != source
                    and e.dest in table.neighbours
                    and not {x.dest for x in advs.overlapping(e.filter)} - {e.dest}
                ):
                    doomed[e] = None
        subs.drop(doomed)
    if not added or is_local(source):
        return []
    candidates: dict[Entry, None] = {}
    for a in added:
        for e in sorted(table.overlapping(a), key=entry_key):
            if e.dest != source and not any(model.overlaps(e.filter, b) for b in before):
                candidates[e] = None
    if not candidates:
        return []
    return subs.activate(source, list(candidates), lambda f: bool(advs.overlapping(f, source)))
