"""RoutingTable.reaches_beyond: whether anything from one destination could be routed on
(the broker daemon drops forwards unread when not: docs/protocol.md §7)."""

from __future__ import annotations

from pubsift.core import load_model
from pubsift.core.routing_table import RoutingTable


def test_a_table_reaches_beyond_a_destination_only_with_an_entry_for_another() -> None:
    m = load_model("records")
    f = m.parse_filter("x >= 0")
    t = RoutingTable(m, {"n1", "n2"})
    assert not t.reaches_beyond("n1")
    t.add(f, "n1")
    assert not t.reaches_beyond("n1") and t.reaches_beyond("n2")
    t.add(f, "client")
    assert t.reaches_beyond("n1")
    for e in list(t):
        t.remove(e)
    assert not t.reaches_beyond("n1")
    flood = RoutingTable(m, {"n1"})
    flood.install_constant()
    assert not flood.reaches_beyond("n1")  # the constant entries name n1 alone
    flood.neighbours.add("n2")
    assert flood.reaches_beyond("n1") and flood.reaches_beyond("n2")
