"""Routing based on filter merging (Mühl 000, §3.5.5), built on covering-based routing.

Each broker merges only entries of the *same* destination D into perfect mergers
(N(M) = ∪ N(F_i)). It keeps, per destination, the filters covering-based routing would
hold (``raw``: for a neighbour, a subscription replaces the filters it covers; for a local
client, subscriptions are independent) and a *view*: the routing entries, each a merger
with the raw filters it stands for. After every change the view is recomputed: mergers
whose parts are all still there stay, the others are cancelled and their remaining parts
are merged again. The difference between the old and the new view is then forwarded as
covering-based routing forwards a change:

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
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from pubsift.core.messages import Routed
from pubsift.core.model import Filter
from pubsift.core.routing_table import Entry, RoutingTable
from pubsift.core.strategies.base import Outbox, generate
from pubsift.core.strategies.covering import Covering

Parts = frozenset


class Merging(Covering):
    name = "merging"

    def __init__(self, table: RoutingTable, is_local: Callable[[str], bool],
                 imperfect: bool = False, bound: int = 4) -> None:
        super().__init__(table, is_local)
        self.imperfect = imperfect
        self.bound = bound
        self.imperfect_mergers = 0
        #: per destination: raw filter -> lease expiry
        self.raw: dict[str, dict[Filter, float]] = {}
        self._raw_index = self.model.new_index()
        #: per destination: view filter -> (raw filters it stands for, imperfect?)
        self.view: dict[str, dict[Filter, tuple[Parts, bool]]] = {}

    # -- raw filters of a destination ---------------------------------------------------
    def _raw_add(self, dest: str, f: Filter) -> None:
        raw = self.raw.setdefault(dest, {})
        if f not in raw and not self.is_local(dest):    # only neighbours' are queried
            self._raw_index.add(f, (f, dest))
        raw[f] = self.table.clock() + self.table.lease if self.table.lease is not None else float("inf")

    def _raw_remove(self, dest: str, f: Filter) -> None:
        raw = self.raw.get(dest, {})
        if f in raw:
            del raw[f]
            if not self.is_local(dest):
                self._raw_index.remove(f, (f, dest))
            if not raw:
                del self.raw[dest]

    def _raw_covered(self, dest: str, f: Filter) -> list[Filter]:
        return [g for g, d in self._raw_index.covered_by(f) if d == dest]

    # -- administer ---------------------------------------------------------------------
    def administer(self, sender: str, subs: Sequence[Routed], unsubs: Sequence[Routed]) -> Outbox:
        sub_fs = [f for f, _ in subs]
        unsub_fs = [f for f, _ in unsubs]
        neighbour = not self.is_local(sender)
        for f in unsub_fs:
            for g in (self._raw_covered(sender, f) if neighbour else [f]):
                self._raw_remove(sender, g)
        for f in sub_fs:
            if neighbour:
                for g in self._raw_covered(sender, f):
                    self._raw_remove(sender, g)
            self._raw_add(sender, f)
        old = self.view.get(sender, {})
        new = self._remerge(sender)
        removed = [f for f in old if f not in new]
        added = [f for f in new if f not in old]
        refresh = [r for r in dict.fromkeys(self._holder(new, f) for f in sub_fs)
                   if r is not None and r not in added]
        self._install(sender, old, new)
        if not unsub_fs and all(any(self.model.covers(a, r) for a in added) for r in removed):
            return generate(self._forward_subs(sender, added + refresh, set(refresh)), [])
        unknown = [f for f in unsub_fs if f not in removed and self._holder(old, f) is None]
        fs, fu = self._forward_unsubs(sender, list(dict.fromkeys(removed + unknown)),
                                      added + refresh)
        return generate(fs, fu)

    @staticmethod
    def _holder(view: dict[Filter, tuple[Parts, bool]], f: Filter) -> Filter | None:
        for g, (parts, _) in view.items():
            if f in parts:
                return g
        return None

    def _install(self, dest: str, old: dict, new: dict) -> None:
        """Make the table's entries for ``dest`` the filters of the new view (new entries
        are inserted by the forwarding step, which computes D^U without them)."""
        for f in old:
            if f not in new:
                self.table.remove(Entry(f, dest))
        if new:
            self.view[dest] = new
        else:
            self.view.pop(dest, None)

    def _remerge(self, dest: str) -> dict[Filter, tuple[Parts, bool]]:
        """Keep the mergers whose parts all remain; merge every other raw filter in."""
        raw = self.raw.get(dest, {})
        view: dict[Filter, tuple[Parts, bool]] = {}
        placed: set[Filter] = set()
        for g, (parts, imperfect) in self.view.get(dest, {}).items():
            if all(p in raw for p in parts):
                view[g] = (parts, imperfect)
                placed |= parts
        for f in raw:
            if f not in placed:
                self._place(dest, view, f, Parts([f]), False)
        return view

    def _candidates(self, dest: str, view: dict, f: Filter,
                    query: Callable[[Filter, str], Iterable[Entry]]) -> list[Filter]:
        """View filters to test against f: those the table's index proposes (entries of
        ``dest`` kept from the old view) and those formed during this recomputation."""
        found = [e.filter for e in sorted(query(f, dest), key=repr) if e.filter in view]
        fresh = [g for g in view if Entry(g, dest) not in self.table]
        return list(dict.fromkeys(found + fresh))

    def _place(self, dest: str, view: dict, f: Filter, parts: Parts, imperfect: bool) -> None:
        for g in self._candidates(dest, view, f, self.table.covering):
            if g in view and self.model.covers(g, f):              # absorbed by a cover
                gp, gi = view[g]
                view[g] = (gp | parts, gi or imperfect)
                return
        for g in self._candidates(dest, view, f, self.table.merge_candidates):
            if g not in view:
                continue
            m = self.model.merge([g, f], perfect=True)
            if m is not None:
                gp, gi = view.pop(g)
                self._place(dest, view, m, gp | parts, gi or imperfect)
                return
        if self.imperfect and not self.is_local(dest):
            for g in list(view):
                gp, gi = view[g]
                if len(gp) + len(parts) <= self.bound:
                    m = self.model.merge([g, f], perfect=False)
                    if m is not None:
                        self.imperfect_mergers += 1
                        del view[g]
                        self._place(dest, view, m, gp | parts, True)
                        return
        for g in self._candidates(dest, view, f, self.table.covered):
            if g in view and g != f and self.model.covers(f, g):  # f absorbs what it covers
                gp, gi = view.pop(g)
                parts, imperfect = parts | gp, imperfect or gi
        view[f] = (parts, imperfect)

    # -- silent removals ----------------------------------------------------------------
    def drop(self, entries: Iterable[Entry]) -> None:
        for e in entries:
            parts, _ = self.view.get(e.dest, {}).pop(e.filter, (Parts(), False))
            for p in parts:
                self._raw_remove(e.dest, p)
            if e.dest in self.view and not self.view[e.dest]:
                del self.view[e.dest]
            self.table.remove(e)

    def expire(self, now: float) -> None:
        """Leases belong to the raw subscriptions (§3.7.2: mergers are renewed through
        their parts); expired parts leave their mergers, which are recomputed silently.
        Table entries that stand for no raw subscription (garbage) expire with their own
        lease."""
        for dest in list(self.raw):
            gone = [f for f, t in self.raw[dest].items() if t <= now]
            if not gone:
                continue
            for f in gone:
                self._raw_remove(dest, f)
            old = self.view.get(dest, {})
            new = self._remerge(dest)
            self._install(dest, old, new)
            for f in new:
                if f not in old:
                    self.table.add(f, dest)
        self.drop([e for e in self.table.expired(now) if e.filter not in self.view.get(e.dest, {})])
