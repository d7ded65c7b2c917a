"""Routing based on filter covering (Mühl 2002, "Large-Scale Content-Based Publish/Subscribe
Systems", §3.5.4, Fig. 3.22).

* A subscription F from S is forwarded to D_B^U(F) \\ {S}; from a neighbour it first
  replaces the entries of S that it covers (C_B^L(F, S)).
* An unsubscription F is forwarded to D_B^U(F) \\ {S} *in the same admin message* as the
  subscriptions it uncovers, so the receiver's change is atomic. The uncovered entries
  P = C_B^L(F) \\ C_B^I(F), plus those that came with the unsubscription, are forwarded
  to D_B^RU(G) \\ {S}, and not back to their own destination U when only one destination
  in P holds a filter identical to G (the ``k`` rule).
* A subscription from a local client removes only (F, S), so a client's subscriptions stay
  independent and resubscription is idempotent (§2.2, §3.7.2).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pubsift.core.messages import Routed
from pubsift.core.model import Filter
from pubsift.core.routing_table import Entry, entry_key
from pubsift.core.strategies.base import Outbox, Strategy, generate

Sends = list[tuple[Routed, str]]


class Covering(Strategy):
    name = "covering"
    withholds_covered_renewals = True

    def administer(self, sender: str, subs: Sequence[Routed], unsubs: Sequence[Routed]) -> Outbox:
        sub_fs = [f for f, _ in subs]
        unsub_fs = [f for f, _ in unsubs]
        neighbour = not self.is_local(sender)
        if not unsub_fs:  # Fig. 3.22, lines 7-16
            renewed = {f for f in sub_fs if Entry(f, sender) in self.table}
            for f in sub_fs:
                if neighbour:
                    self._remove(self.table.covered(f, sender))
            return generate(self._forward_subs(sender, sub_fs, renewed), [])
        for f in unsub_fs:  # lines 19-24
            self._remove(self.table.covered(f, sender) if neighbour else [Entry(f, sender)])
        fs, fu = self._forward_unsubs(sender, unsub_fs, sub_fs)
        return generate(fs, fu)

    def _remove(self, entries: Iterable[Entry]) -> None:
        for e in list(entries):
            self.table.remove(e)

    def _forward_subs(self, sender: str, filters: Sequence[Filter], renewed: set[Filter]) -> Sends:
        """For each F: forward to D_B^U(F) \\ {S} (computed without (F, S) itself), then
        insert (F, S). A resubscription of a present entry renews its lease and is
        forwarded as a renewal (:meth:`RoutingTable.d_renewal`).

        With leasing (§3.7.2), a new entry identical to present ones from other
        destinations that ranks before them takes over their renewals toward the
        neighbours (theirs are not forwarded any more): it is forwarded there as its
        renewals will be, so that the copies further on hold its lease, not the older one
        of the entry it displaced. Otherwise, when its destination vanished (a hostile
        client that subscribed once), the copies ran out at the older lease while it still
        withheld the renewals of what it covers, before its withdrawal (``Broker.expire``)
        arrived: notifications were lost for up to ρ (found by the fuzzed broker network)."""
        fs: Sends = []
        for f in filters:
            e = Entry(f, sender)
            if f in renewed or self.table.lease is not None:
                targets = self.table.d_renewal(e, self.table.covering(f)) - {sender}
            else:
                targets = self.table.d_upper(f, ignore=e) - {sender}
            fs.extend(((f, None), h) for h in sorted(targets))
            self.table.add(f, sender)
        return fs

    def _forward_unsubs(
        self, sender: str, unsubs: Sequence[Filter], uncovered: Sequence[Filter]
    ) -> tuple[Sends, Sends]:
        """Lines 25-42 of Fig. 3.22, after the entries of S have been removed.

        With leasing (§3.7.2), an entry identical to F from another destination U, left in
        the table, now stands alone for the copies of F further on, which were renewed (or
        granted) through F: the unsubscription is not forwarded there, and neither is that
        entry (C^I(F) is left out of P). Its renewal is forwarded now, as its destination
        would forward it (but not to S or U), without extending its lease here:
        the copies then outlast it, and when it is withdrawn in turn (a vanished client or
        neighbour, :meth:`Broker.expire <pubsift.core.broker.Broker.expire>`) the
        withdrawal finds them. Without it, a copy granted through F ran out at F's lease,
        before the remaining entry's withdrawal arrived with the subscriptions it had
        covered, whose renewals had been withheld (a gap until their next renewal, up to
        ρ; the fuzzed broker network lost notifications)."""
        fu: Sends = []
        pending: dict[Entry, None] = {}
        renew: dict[Entry, None] = {}
        for f in unsubs:
            fu.extend(((f, None), h) for h in sorted(self.table.d_upper(f) - {sender}))
            twins = self.table.identical(f)
            for e in sorted(self.table.covered(f) - twins, key=entry_key):
                pending[e] = None  # P ∪= C^L(F) \ C^I(F)
            if self.table.lease is not None:
                for e in sorted(twins, key=entry_key):
                    if e.dest != sender:
                        renew[e] = None
        for g in uncovered:
            self.table.add(g, sender)
            pending[Entry(g, sender)] = None
        fs: Sends = []
        rest = list(pending)
        while rest:
            e = rest[0]
            same = [
                p for p in rest if p.filter == e.filter or self.model.identical(p.filter, e.filter)
            ]
            k = len({p.dest for p in same})
            rest = [p for p in rest if p not in same]
            targets = self.table.d_real_upper(e.filter) - {sender}
            if k == 1:
                targets.discard(e.dest)
            fs.extend(((e.filter, None), h) for h in sorted(targets))
        for e in renew:
            if e in pending:
                continue
            targets = self.table.d_renewal(e, self.table.covering(e.filter)) - {sender, e.dest}
            fs.extend(((e.filter, None), h) for h in sorted(targets))
        return fs, fu
