"""Neighbour links between brokers: who reaches whom, and refusing a link that would
close a cycle.

The routing algorithms need an acyclic broker topology (Mühl 2002, "Large-Scale
Content-Based Publish/Subscribe Systems", §3.2). Each broker keeps, per neighbour N, the
set of broker ids N reported reaching without going through this broker (``reach``
frames), and tells every neighbour what it reaches without it: itself plus what the other
neighbours report. In a tree these views never feed back into themselves, so they settle
after one pass along every path. A new link between A and B is accepted only if what A
reaches and what B reaches (each without the other) are disjoint; otherwise the two are
already connected and the link is refused with an ``error`` frame ``cycle``.

The check is local: two links that close one cycle at two places at the same moment can
both pass it. A broker that later learns from a neighbour a broker it also reaches another
way drops that link (``cycle``) and logs it, so such a race ends with the tree restored.
"""

from __future__ import annotations

from collections.abc import Iterable


class Reach:
    """The broker ids reachable through each neighbour link of broker ``me``."""

    def __init__(self, me: str) -> None:
        self.me = me
        self.via: dict[str, frozenset[str]] = {}
        self._sent: dict[str, frozenset[str]] = {}

    def without(self, neighbour: str | None) -> frozenset[str]:
        """Everything reached without the link to ``neighbour``: ``me`` and what the other
        neighbours report (what this broker tells ``neighbour``)."""
        out = {self.me}
        for n, ids in self.via.items():
            if n != neighbour:
                out |= ids
        return frozenset(out)

    def conflict(self, neighbour: str, theirs: Iterable[str]) -> frozenset[str]:
        """Broker ids that ``neighbour`` reports and this broker reaches another way (a
        link to ``neighbour`` would close a cycle through them); empty when none."""
        return frozenset(theirs) & self.without(neighbour)

    def update(self, neighbour: str, ids: Iterable[str]) -> None:
        self.via[neighbour] = frozenset(ids)

    def drop(self, neighbour: str) -> None:
        self.via.pop(neighbour, None)
        self._sent.pop(neighbour, None)

    def changed_views(self, neighbours: Iterable[str]) -> dict[str, frozenset[str]]:
        """The view of each of ``neighbours`` that differs from what it was last told
        (and records it as told)."""
        out = {}
        for n in neighbours:
            view = self.without(n)
            if self._sent.get(n) != view:
                self._sent[n] = view
                out[n] = view
        return out
