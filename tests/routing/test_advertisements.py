"""Routing with advertisements (Mühl 000, §3.6), step by step on a line b0 - b1 - b2 - b3:
subscriptions travel only towards overlapping advertisements, wait for them, and are dropped
when no advertisement can serve them any more."""

from __future__ import annotations

import pytest
from pubsift.core import oracle
from pubsift.core.network import Network
from pubsift.core.topology import line

from .toy import Iv, ToyModel

M = ToyModel()


def remote(net: Network) -> dict[str, int]:
    return {b: r for b, (_, r) in net.table_sizes().items()}


@pytest.mark.parametrize("strategy", ["simple", "identity", "covering", "merging"])
def test_subscriptions_wait_for_advertisements_and_are_dropped_after(strategy) -> None:
    net = Network(line(4), [M], strategy, advertisements=True, seed=3)
    pub, sub = net.client("pub", "b0"), net.client("sub", "b3")
    sub.subscribe("toy", Iv(2, 4))
    net.run_until_quiet()
    assert remote(net) == {"b0": 0, "b1": 0, "b2": 0, "b3": 0}  # nobody can serve it
    pub.advertise("toy", Iv(10, 12))  # disjoint: still nothing
    net.run_until_quiet()
    assert remote(net) == {"b0": 0, "b1": 0, "b2": 0, "b3": 0}
    pub.advertise("toy", Iv(0, 5))  # activation
    net.run_until_quiet()
    assert remote(net) == {"b0": 1, "b1": 1, "b2": 1, "b3": 0}
    pub.publish("toy", 3)
    pub.publish("toy", 11)
    net.run_until_quiet()
    assert sub.received == [0]
    pub.unadvertise("toy", Iv(0, 5))  # unserviceable: dropped
    net.run_until_quiet()
    assert remote(net) == {"b0": 0, "b1": 0, "b2": 0, "b3": 0}
    pub.publish("toy", 3)  # not advertised: dropped
    net.run_until_quiet()
    assert sub.received == [0] and net.brokers["b0"].dropped_publications == 1
    pub.advertise("toy", Iv(3, 3))  # and activated again
    net.run_until_quiet()
    pub.publish("toy", 3)
    net.run_until_quiet()
    assert sub.received == [0, 3] and remote(net) == {"b0": 1, "b1": 1, "b2": 1, "b3": 0}
    assert oracle.check(net.trace, net.models, advertisements=True).ok


def test_activation_sends_only_uncovered_subscriptions() -> None:
    net = Network(line(3), [M], "covering", advertisements=True, seed=0)
    pub, sub = net.client("pub", "b0"), net.client("sub", "b2")
    for f in (Iv(0, 9), Iv(2, 3), Iv(5, 5)):
        sub.subscribe("toy", f)
    net.run_until_quiet()
    pub.advertise("toy", Iv(0, 15))
    net.run_until_quiet()
    assert net.brokers["b1"].table("toy").filters("b2") == [Iv(0, 9)]
    assert net.brokers["b0"].table("toy").filters("b1") == [Iv(0, 9)]


def test_advertisements_are_routed_by_the_strategy_too() -> None:
    net = Network(line(3), [M], "covering", advertisements=True, seed=0)
    p = net.client("p", "b0")
    p.advertise("toy", Iv(0, 9))
    p.advertise("toy", Iv(2, 3))  # covered: not forwarded
    net.run_until_quiet()
    assert net.table_sizes("A") == {"b0": (2, 0), "b1": (0, 1), "b2": (0, 1)}
    assert net.total_admin() == 2
