"""Routing based on filter merging (Mühl 2002, "Large-Scale Content-Based Publish/Subscribe
Systems", §3.5.5), built on covering-based routing.

Each broker merges only entries of the *same* destination D into perfect mergers
(N(M) = ∪ N(F_i)). The filters covering-based routing would hold (the *parts*: for a
neighbour, a subscription replaces the filters it covers; for a local client,
subscriptions are independent) live in the table's own parts table
(:attr:`RoutingTable.parts <pubsift.core.routing_table.RoutingTable.parts>`), with their
index and their leases; the strategy keeps, per destination, only the *view*: the routing
entries, each a merger with the parts it stands for. After every change the view is
recomputed: mergers whose parts are all still there stay, the others are cancelled and
their remaining parts are merged again. The difference between the old and the new view
is then forwarded as covering-based routing forwards a change:

* only additions, each old entry covered by a new one (a new or extended merger, or a
  subscription covering a whole merger — cancellation case 1): forwarded as subscriptions,
  the receivers drop what they cover;
* otherwise (an unsubscription of a part — case 2 —, or a subscription covering some parts
  of a merger — case 3): the cancelled entries are forwarded as unsubscriptions together
  with the remaining parts and new mergers, in one admin message.

Imperfect merging (``imperfect=True``) is an option, for neighbour destinations only (local
entries must stay exact, or clients would get notifications they did not ask for): when no
perfect merger exists, an imperfect one (``model.merge(..., perfect=False)``) of at most
``bound`` subscriptions is used. Imperfect mergers are counted in ``imperfect_mergers``;
the extra notifications they attract are filtered by the next broker.

The view is maintained incrementally: a change touches only the mergers that hold a removed
part (they are cancelled and their remaining parts placed again) and the new raw filters.
Each placement asks the table's index for the candidates (covering, merge candidates,
covered) among the entries of the destination, plus the mergers formed during this change,
so a change costs what it touches, not the size of the destination's view.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from pubsift.core.messages import Routed
from pubsift.core.model import Filter
from pubsift.core.routing_table import Entry, RoutingTable, entry_key
from pubsift.core.strategies.base import Outbox, generate
from pubsift.core.strategies.covering import Covering

Parts = frozenset[Filter]


@dataclass
class _Destination:
    """The view of one destination: which parts (entries of ``table.parts``) each merger
    (an entry of the table) stands for. Entries, parts and their leases live in the table."""

    #: view filter (a routing entry) -> (parts it stands for, imperfect?)
    view: dict[Filter, tuple[Parts, bool]] = field(default_factory=dict)
    #: part -> the view filter holding it
    holder: dict[Filter, Filter] = field(default_factory=dict)


@dataclass
class _Change:
    """The view filters one recomputation cancelled and formed, in order."""

    cancelled: dict[Filter, None] = field(default_factory=dict)
    formed: dict[Filter, None] = field(default_factory=dict)

    def removed(self, view: dict[Filter, tuple[Parts, bool]]) -> list[Filter]:
        """Old entries that are gone (cancelled and not formed again)."""
        return [g for g in self.cancelled if g not in view]

    def added(self, view: dict[Filter, tuple[Parts, bool]]) -> list[Filter]:
        """New entries (formed, and not an old entry formed again)."""
        return [g for g in self.formed if g in view and g not in self.cancelled]


class Merging(Covering):
    name = "merging"

    def __init__(
        self,
        table: RoutingTable,
        is_local: Callable[[str], bool],
        imperfect: bool = False,
        bound: int = 4,
    ) -> None:
        super().__init__(table, is_local)
        self.imperfect = imperfect
        self.bound = bound
        self.imperfect_mergers = 0
        self.dests: dict[str, _Destination] = {}
        self.parts = table.parts

    # -- parts of a destination -----------------------------------------------------------
    def _state(self, dest: str) -> _Destination:
        st = self.dests.get(dest)
        if st is None:
            st = self.dests[dest] = _Destination()
        return st

    def _has_part(self, dest: str, f: Filter) -> bool:
        return Entry(f, dest) in self.parts

    def _parts_covered(self, dest: str, f: Filter) -> list[Filter]:
        return [e.filter for e in sorted(self.parts.covered(f, dest), key=entry_key)]

    # -- administer ---------------------------------------------------------------------
    def administer(self, sender: str, subs: Sequence[Routed], unsubs: Sequence[Routed]) -> Outbox:
        sub_fs = [f for f, _ in subs]
        unsub_fs = [f for f, _ in unsubs]
        neighbour = not self.is_local(sender)
        st = self._state(sender)
        unknown = [f for f in unsub_fs if f not in st.holder]
        gone: dict[Filter, None] = {}
        fresh: dict[Filter, None] = {}
        for f in unsub_fs:
            for g in self._parts_covered(sender, f) if neighbour else [f]:
                if self.parts.remove(Entry(g, sender)):
                    gone[g] = None
                    fresh.pop(g, None)
        for f in sub_fs:
            if neighbour:
                for g in self._parts_covered(sender, f):
                    if g != f and self.parts.remove(Entry(g, sender)):
                        gone[g] = None
                        fresh.pop(g, None)
            if self.parts.add(f, sender):  # new, or its lease renewed
                fresh[f] = None
        change = self._update(sender, st, gone, fresh)
        removed, added = change.removed(st.view), change.added(st.view)
        refresh = [
            r
            for r in dict.fromkeys(st.holder.get(f) for f in sub_fs)
            if r is not None and r not in added
        ]
        self._uninstall(sender, removed)
        if not unsub_fs and all(any(self.model.covers(a, r) for a in added) for r in removed):
            return generate(self._forward_subs(sender, added + refresh, set(refresh)), [])
        unknown = [f for f in unknown if f not in removed]
        fs, fu = self._forward_unsubs(
            sender, list(dict.fromkeys(removed + unknown)), added + refresh
        )
        return generate(fs, fu)

    def _uninstall(self, dest: str, removed: Iterable[Filter]) -> None:
        """Remove the table entries of cancelled view filters (new entries are inserted
        by the forwarding step, which computes D^U without them)."""
        for f in removed:
            self.table.remove(Entry(f, dest))
        st = self.dests[dest]
        if not st.view and not st.holder:
            del self.dests[dest]

    def _update(
        self, dest: str, st: _Destination, gone: Iterable[Filter], new: Iterable[Filter]
    ) -> _Change:
        """Cancel the mergers holding a part that is ``gone``, then place their remaining
        parts and the ``new`` raw filters (cancellation cases 1-3 and re-merging)."""
        change = _Change()
        loose: dict[Filter, None] = {}
        for p in gone:
            g = st.holder.pop(p, None)
            if g is None or g not in st.view:
                continue
            parts, _ = st.view.pop(g)
            change.cancelled[g] = None
            for q in sorted(parts - {p}, key=repr):
                st.holder.pop(q, None)
                if self._has_part(dest, q):
                    loose[q] = None
        for f in new:
            if f not in st.holder:
                loose[f] = None
        for f in loose:
            if f not in st.holder and self._has_part(dest, f):
                self._place(dest, st, change, f, Parts([f]), False)
        return change

    def _candidates(
        self,
        dest: str,
        st: _Destination,
        change: _Change,
        f: Filter,
        query: Callable[[Filter, str], Iterable[Entry]],
    ) -> list[Filter]:
        """View filters to test against f: those the table's index proposes (entries of
        ``dest`` kept from the old view) and those formed during this change."""
        found = [e.filter for e in sorted(query(f, dest), key=repr) if e.filter in st.view]
        formed = [g for g in change.formed if g in st.view]
        return list(dict.fromkeys(found + formed))

    def _take(self, st: _Destination, change: _Change, g: Filter) -> tuple[Parts, bool]:
        """Remove view filter g to merge it into something else."""
        gp, gi = st.view.pop(g)
        if g in change.formed:
            del change.formed[g]
        else:
            change.cancelled[g] = None
        return gp, gi

    def _place(
        self, dest: str, st: _Destination, change: _Change, f: Filter, parts: Parts, imperfect: bool
    ) -> None:
        view = st.view
        for g in self._candidates(dest, st, change, f, self.table.covering):
            if g in view and self.model.covers(g, f):  # absorbed by a cover
                gp, gi = view[g]
                view[g] = (gp | parts, gi or imperfect)
                for p in parts:
                    st.holder[p] = g
                return
        for g in self._candidates(dest, st, change, f, self.table.merge_candidates):
            if g not in view:
                continue
            m = self.model.merge([g, f], perfect=True)
            if m is not None:
                gp, gi = self._take(st, change, g)
                self._place(dest, st, change, m, gp | parts, gi or imperfect)
                return
        if self.imperfect and not self.is_local(dest):
            for g in list(view):
                gp, gi = view[g]
                if len(gp) + len(parts) <= self.bound:
                    m = self.model.merge([g, f], perfect=False)
                    if m is not None:
                        self.imperfect_mergers += 1
                        self._take(st, change, g)
                        self._place(dest, st, change, m, gp | parts, True)
                        return
        for g in self._candidates(dest, st, change, f, self.table.covered):
            if g in view and g != f and self.model.covers(f, g):  # f absorbs what it covers
                gp, gi = self._take(st, change, g)
                parts, imperfect = parts | gp, imperfect or gi
        view[f] = (parts, imperfect)
        change.formed[f] = None
        for p in parts:
            st.holder[p] = f

    # -- silent removals ----------------------------------------------------------------
    def drop(self, entries: Iterable[Entry]) -> None:
        for e in entries:
            st = self.dests.get(e.dest)
            if st is not None and e.filter in st.view:
                parts, _ = st.view.pop(e.filter)
                for p in parts:
                    st.holder.pop(p, None)
                    self.parts.remove(Entry(p, e.dest))
                if not st.view and not st.holder:
                    del self.dests[e.dest]
            self.table.remove(e)

    def leases(self) -> RoutingTable:
        """The parts hold the leases (§3.7.2: mergers are renewed through their parts)."""
        return self.parts

    def expire(self, now: float) -> None:
        """Leases belong to the parts (§3.7.2: mergers are renewed through their parts);
        expired parts leave their mergers, which are recomputed silently. Table entries
        that stand for no part (garbage) expire with their own lease."""
        expired: dict[str, list[Filter]] = {}
        for e in self.parts.expired(now):
            self.parts.remove(e)
            expired.setdefault(e.dest, []).append(e.filter)
        for dest, gone in expired.items():
            st = self._state(dest)
            change = self._update(dest, st, gone, ())
            self._uninstall(dest, change.removed(st.view))
            for f in change.added(st.view):
                self.table.add(f, dest)
        self.drop(
            [
                e
                for e in self.table.expired(now)
                if e.filter not in self.dests.get(e.dest, _EMPTY).view
            ]
        )


_EMPTY = _Destination()
