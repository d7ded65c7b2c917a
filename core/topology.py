"""Broker topologies: connected acyclic graphs G = (V, E) (Mühl 2002, "Large-Scale Content-Based
Publish/Subscribe Systems", §3.2).

:func:`hierarchy` is the topology of Mühl's experiments (ch. 6): a root router with three
children per router, four levels of routers (1 + 3 + 9 + 27 = 40), one local broker
attached to every non-leaf router and two to every leaf router (13 + 54 = 67), |V| = 107.
Clients attach to ``access`` brokers (the local brokers there; every broker elsewhere).
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from dataclasses import dataclass, field


@dataclass
class Topology:
    brokers: list[str]
    edges: list[tuple[str, str]]
    #: brokers clients may attach to
    access: list[str]
    #: optional structure: router level (root = 1), the router a local broker serves
    level: dict[str, int] = field(default_factory=dict)
    router_of: dict[str, str] = field(default_factory=dict)
    root: str | None = None

    def __post_init__(self) -> None:
        self._adj: dict[str, list[str]] = {b: [] for b in self.brokers}
        for a, b in self.edges:
            self._adj[a].append(b)
            self._adj[b].append(a)
        if len(self.edges) != len(self.brokers) - 1 or len(self._reach(self.brokers[0])) != len(
            self.brokers
        ):
            raise ValueError("a broker topology must be a tree (connected and acyclic)")

    def neighbours(self, b: str) -> list[str]:
        return list(self._adj[b])

    def _reach(self, start: str) -> dict[str, int]:
        dist = {start: 0}
        todo = deque([start])
        while todo:
            a = todo.popleft()
            for b in self._adj[a]:
                if b not in dist:
                    dist[b] = dist[a] + 1
                    todo.append(b)
        return dist

    def diameter(self) -> int:
        """d: the length of the longest path (two sweeps suffice on a tree)."""
        far = max(self._reach(self.brokers[0]).items(), key=lambda kv: kv[1])[0]
        return max(self._reach(far).values())

    @property
    def routers(self) -> list[str]:
        return [b for b in self.brokers if b in self.level]


def hierarchy(levels: int = 4, fanout: int = 3) -> Topology:
    """Mühl's hierarchical topology; the defaults give 40 routers, 67 local brokers."""
    routers, edges, level = ["r0"], [], {"r0": 1}
    frontier = ["r0"]
    for lv in range(2, levels + 1):
        nxt = []
        for parent in frontier:
            for _ in range(fanout):
                r = f"r{len(routers)}"
                routers.append(r)
                level[r] = lv
                edges.append((parent, r))
                nxt.append(r)
        frontier = nxt
    local: list[str] = []
    router_of: dict[str, str] = {}
    for r in routers:
        for _ in range(2 if level[r] == levels else 1):
            lb = f"l{len(local)}"
            local.append(lb)
            router_of[lb] = r
            edges.append((r, lb))
    return Topology(routers + local, edges, local, level, router_of, root="r0")


def line(n: int) -> Topology:
    bs = [f"b{i}" for i in range(n)]
    return Topology(bs, list(itertools.pairwise(bs)), bs)


def star(n: int) -> Topology:
    """A centre ``b0`` with ``n - 1`` leaves."""
    bs = [f"b{i}" for i in range(n)]
    return Topology(bs, [("b0", b) for b in bs[1:]], bs, root="b0")


def balanced(fanout: int, depth: int) -> Topology:
    """A complete ``fanout``-ary tree with ``depth`` levels below the root."""
    bs, edges, frontier = ["b0"], [], ["b0"]
    for _ in range(depth):
        nxt = []
        for p in frontier:
            for _ in range(fanout):
                b = f"b{len(bs)}"
                bs.append(b)
                edges.append((p, b))
                nxt.append(b)
        frontier = nxt
    return Topology(bs, edges, bs, root="b0")


def random_tree(n: int, seed: int = 0) -> Topology:
    """A uniformly random recursive tree on ``n`` brokers."""
    rng = random.Random(seed)
    bs = [f"b{i}" for i in range(n)]
    return Topology(bs, [(bs[rng.randrange(i)], bs[i]) for i in range(1, n)], bs)
