"""Routing based on filter identity (Mühl 2002, "Large-Scale Content-Based Publish/Subscribe
Systems", §3.5.3, Figs. 3.13/3.14).

A subscription is not forwarded to a neighbour that already got an identical one; an
unsubscription is not forwarded while another destination holds an identical subscription.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pubsift.core.messages import Routed
from pubsift.core.model import Filter
from pubsift.core.routing_table import Entry, entry_key
from pubsift.core.strategies.base import Outbox, Strategy, activation, generate


class Identity(Strategy):
    name = "identity"
    withholds_covered_renewals = True

    def administer(self, sender: str, subs: Sequence[Routed], unsubs: Sequence[Routed]) -> Outbox:
        neighbour = not self.is_local(sender)
        fs: list[tuple[Routed, str]] = []
        fu: list[tuple[Routed, str]] = []
        for items, is_sub in ((unsubs, False), (subs, True)):
            for f, _ in items:
                renewal = is_sub and Entry(f, sender) in self.table
                if neighbour:
                    for e in self.table.identical(f, sender):  # C_B^I(F, S)
                        self.table.remove(e)
                else:
                    self.table.remove(Entry(f, sender))
                if renewal or (is_sub and self.table.lease is not None):  # §3.7.2, see Covering
                    targets = self.table.d_renewal(Entry(f, sender), self.table.identical(f))
                else:
                    targets = self.table.d_identity(f)  # D_B^I(F)
                targets -= {sender}
                (fs if is_sub else fu).extend(((f, None), h) for h in sorted(targets))
                if is_sub:
                    self.table.add(f, sender)
                elif self.table.lease is not None:
                    fs.extend(self._renew_identical(sender, f))
        return generate(fs, fu)

    def _renew_identical(self, sender: str, f: Filter) -> list[tuple[Routed, str]]:
        """With leasing (§3.7.2): the renewals of the entries identical to an unsubscribed
        F left from other destinations, forwarded now without extending their leases here.
        The copies further on were renewed through F; the remaining entry stands for them
        from now on, and they must outlast it until its own withdrawal arrives (see
        :meth:`Covering._forward_unsubs
        <pubsift.core.strategies.covering.Covering._forward_unsubs>`)."""
        out: list[tuple[Routed, str]] = []
        for e in sorted(self.table.identical(f), key=entry_key):
            if e.dest != sender:
                targets = self.table.d_renewal(e, self.table.identical(e.filter))
                out.extend(((e.filter, None), h) for h in sorted(targets - {sender, e.dest}))
        return out

    def activate(
        self, neighbour: str, candidates: Sequence[Entry], active: Callable[[Filter], bool]
    ) -> list[Routed]:
        return activation(self, neighbour, candidates, active, self.table.identical)
