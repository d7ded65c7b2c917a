"""A batch of publications (:class:`Pubs`, :class:`Forwards`) is routed exactly as the
sequence of its publications (DESIGN §2.6): the same destinations, each its share in
order, for every strategy, with and without advertisements; and
``RoutingTable.destinations_many`` answers what ``destinations`` answers event by event."""

from __future__ import annotations

from collections.abc import Hashable

from hypothesis import given, settings
from hypothesis import strategies as st
from pubsift.core.broker import Broker
from pubsift.core.messages import Admin, Adv, Batch, Forward, Forwards, Notify, Pub, Pubs, Sub
from pubsift.core.routing_table import RoutingTable
from pubsift.core.strategies import STRATEGIES

from .toy import ToyModel, toy_events, toy_filters

M = ToyModel()
CLIENTS = ["c0", "c1", "c2"]
NEIGHBOURS = ["n0", "n1"]


class Singles:
    """A port that takes each notification and forward as a message of its own."""

    def __init__(self) -> None:
        self.got: dict[str, list[Hashable]] = {}

    def send(self, broker: str, neighbour: str, msg: object) -> None:
        if isinstance(msg, Forward):
            self.got.setdefault(neighbour, []).append(msg.pub_id)

    def deliver(self, broker: str, msg: Notify) -> None:
        self.got.setdefault(msg.client, []).append(msg.pub_id)


class Shares(Singles):
    """A port that takes a destination's share of a batch in one call."""

    def send_many(self, broker: str, neighbour: str, batch: Batch, indices: list[int]) -> None:
        self.got.setdefault(neighbour, []).extend(batch.pub_ids[i] for i in indices)

    def deliver_many(self, broker: str, client: str, batch: Batch, indices: list[int]) -> None:
        self.got.setdefault(client, []).extend(batch.pub_ids[i] for i in indices)


def broker(port: Singles, strategy: str, advertisements: bool, subs, advs) -> Broker:
    b = Broker("b", {"toy": M}, strategy, port, advertisements=advertisements)
    for c in CLIENTS:
        b.attach(c)
    for n in NEIGHBOURS:
        b.connect(n)
    for who, f in advs if advertisements else ():
        if who in CLIENTS:
            b.receive(Adv(who, "toy", f), who)
        else:
            b.receive(Admin("toy", "A", ((f, None),), ()), who)
    for who, f in subs:
        if who in CLIENTS:
            b.receive(Sub(who, "toy", f), who)
        else:
            b.receive(Admin("toy", "S", ((f, None),), ()), who)
    port.got.clear()
    return b


who = st.sampled_from(CLIENTS + NEIGHBOURS)
entries = st.lists(st.tuples(who, toy_filters()), max_size=8)


@settings(max_examples=150, deadline=None)
@given(
    strategy=st.sampled_from(sorted(STRATEGIES)),
    advertisements=st.booleans(),
    subs=entries,
    advs=entries,
    events=st.lists(toy_events(), min_size=1, max_size=30),
    sender=who,
)
def test_a_batch_is_routed_as_its_publications_one_by_one(
    strategy, advertisements, subs, advs, events, sender
):
    one, many = Singles(), Shares()
    a = broker(one, strategy, advertisements, subs, advs)
    b = broker(many, strategy, advertisements, subs, advs)
    ids = [(sender, i + 1) for i in range(len(events))]
    if sender in CLIENTS:
        for e, pid in zip(events, ids, strict=True):
            a.receive(Pub(sender, "toy", e, pid), sender)
        b.receive(Pubs(sender, "toy", list(events), list(ids)), sender)
    else:
        for e, pid in zip(events, ids, strict=True):
            a.receive(Forward("toy", e, pid), sender)
        b.receive(Forwards("toy", list(events), list(ids)), sender)
    assert many.got == one.got
    assert (b.notified, b.forwarded, b.dropped_publications, b.useless_forwards) == (
        a.notified,
        a.forwarded,
        a.dropped_publications,
        a.useless_forwards,
    )


@settings(max_examples=150, deadline=None)
@given(
    table=st.lists(st.tuples(st.sampled_from(CLIENTS + NEIGHBOURS), toy_filters()), max_size=10),
    constant=st.booleans(),
    events=st.lists(toy_events(), max_size=30),
    exclude=st.sampled_from([None, *CLIENTS, *NEIGHBOURS, "elsewhere"]),
)
def test_destinations_many_answers_destinations_event_by_event(table, constant, events, exclude):
    t = RoutingTable(M, NEIGHBOURS)
    if constant:
        t.install_constant()
    for dest, f in table:
        t.add(f, dest)
    want = [t.destinations(e) - {exclude} for e in events]
    assert [set(d) for d in t.destinations_many(events, exclude)] == want
