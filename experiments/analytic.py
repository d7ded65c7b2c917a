"""Mühl's analytical results for the experiments (Mühl 2002, Large-Scale Content-Based
Publish/Subscribe Systems, §6.3-§6.5), and an exact count of the remote routing entries a
perfect routing algorithm must hold for a given set of consumers.

Remote entries: broker B holds an entry for neighbour H for every filter that the
consumers behind H (in the part of the tree H leads to) need, counted per strategy:

* simple routing: every subscription (entries are tagged with their client, §3.5.2);
* identity-based routing with quote subscriptions, and merging-based routing with
  quote-interval subscriptions of one stock: one entry per distinct stock (§6.3.3, §6.3.7);
* merging-based routing with quote subscriptions: one entry if any (§6.3.7).

With advertisements and the only source at the root, B holds entries only for the
neighbours away from the source (§6.3.2), so the count runs over parent-to-child links.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping
from fractions import Fraction

from pubsift.core.topology import Topology

Measure = Callable[[Counter], int]


def every(c: Counter) -> int:
    """Number of subscriptions."""
    return sum(c.values())


def distinct(c: Counter) -> int:
    """Number of distinct keys (stocks)."""
    return sum(1 for v in c.values() if v > 0)


def nonempty(c: Counter) -> int:
    """1 if anything is there."""
    return 1 if any(v > 0 for v in c.values()) else 0


def parents(topo: Topology, root: str) -> dict[str, str | None]:
    """Parent of every broker in the tree rooted at ``root``, in breadth-first order."""
    parent: dict[str, str | None] = {root: None}
    todo = [root]
    for b in todo:
        for h in topo.neighbours(b):
            if h not in parent:
                parent[h] = b
                todo.append(h)
    return parent


def distances(topo: Topology, source: str) -> dict[str, int]:
    """Hops from ``source`` to every broker."""
    parent = parents(topo, source)
    dist: dict[str, int] = {}
    for b, p in parent.items():
        dist[b] = 0 if p is None else dist[p] + 1
    return dist


def average_path_length(topo: Topology, source: str, brokers: Iterable[str]) -> Fraction:
    """P_avg: mean hops from the ``brokers`` to ``source`` (§6.3.2: 3.73 for the 107-broker
    hierarchy with the source at the root router)."""
    dist = distances(topo, source)
    bs = list(brokers)
    return Fraction(sum(dist[b] for b in bs), len(bs))


def remote_entries(
    topo: Topology,
    source: str,
    behind: Mapping[str, Iterable[Hashable]],
    measure: Measure,
    advertisements: bool,
) -> int:
    """Σ|R| of a perfect routing algorithm: per link side, ``measure`` of the keys (one per
    active subscription) of the consumers at the brokers behind it."""
    parent = parents(topo, source)
    sub: dict[str, Counter] = {b: Counter(behind.get(b, ())) for b in parent}
    for b in reversed(list(parent)):  # children before parents
        p = parent[b]
        if p is not None:
            sub[p].update(sub[b])
    total = sub[source]
    count = 0
    for b, p in parent.items():
        if p is None:
            continue
        count += measure(sub[b])  # at p, for destination b
        if not advertisements:
            count += measure(total - sub[b])  # at b, for destination p
    return count


def identity_limit(n_brokers: int, m: int, advertisements: bool) -> int:
    """Σ|R| of identity-based routing for many subscriptions: 2·m·(|V|-1), or m·(|V|-1)
    with advertisements (§6.3.3, §6.3.4)."""
    return (1 if advertisements else 2) * m * (n_brokers - 1)


def merging_limit(n_brokers: int, advertisements: bool) -> int:
    """Σ|R| of merging-based routing with quote subscriptions: at most one entry per
    neighbour, 2·(|V|-1), or |V|-1 with advertisements (§6.3.7, §6.3.8)."""
    return (1 if advertisements else 2) * (n_brokers - 1)


def locality_limit(n_brokers: int, m: int, d: float, advertisements: bool) -> float:
    """Σ|R| of identity-based routing under locality d (§6.5.1): d·m·(|V|-2) with
    advertisements, 2·(2+d)/3·m·(|V|-2) without."""
    if advertisements:
        return d * m * (n_brokers - 2)
    return 2 * (2 + d) / 3 * m * (n_brokers - 2)
