"""The simulated network, the topologies and the wire forms of messages."""

from __future__ import annotations

import pytest
from pubsift.core.broker import Broker, BrokerError
from pubsift.core.errors import UnknownModelError
from pubsift.core.messages import (
    Admin,
    Adv,
    Forward,
    Notify,
    Pub,
    Sub,
    Unadv,
    Unsub,
    from_wire,
    to_wire,
)
from pubsift.core.network import Network
from pubsift.core.topology import Topology, balanced, hierarchy, line, random_tree, star

from .toy import Iv, Pts, ToyModel

M = ToyModel()


def test_muehl_hierarchy() -> None:
    t = hierarchy()
    assert len(t.routers) == 40 and len(t.access) == 67 and len(t.brokers) == 107
    assert sorted(list(t.level.values()).count(k) for k in (1, 2, 3, 4)) == [1, 3, 9, 27]
    assert [len(t.neighbours(b)) for b in t.access] == [1] * 67
    assert len(t.neighbours("r0")) == 4  # 3 child routers + 1 local broker
    assert sum(1 for lb, r in t.router_of.items() if t.level[r] == 4) == 54
    assert t.diameter() == 8


def test_other_topologies() -> None:
    assert line(5).diameter() == 4 and star(6).diameter() == 2
    assert len(balanced(2, 3).brokers) == 15 and balanced(2, 3).diameter() == 6
    r = random_tree(30, seed=3)
    assert len(r.edges) == 29 and r.diameter() >= 2
    with pytest.raises(ValueError, match="tree"):
        Topology(["a", "b", "c"], [("a", "b"), ("b", "a")], ["a"])


def test_links_are_fifo_and_runs_are_deterministic() -> None:
    def run(seed):
        net = Network(line(2), [M], "simple", seed=seed, delay=(0.0, 5.0))
        a, b = net.client("a", "b0"), net.client("b", "b1")
        b.subscribe("toy", Iv(0, 15))
        net.run_until_quiet()
        for e in range(16):
            a.publish("toy", e)
        net.run_until_quiet()
        return b.received, [(op.kind, op.time) for op in net.trace]

    got, trace = run(4)
    assert got == list(range(16))  # FIFO: in publication order
    assert run(4) == (got, trace) and run(5)[1] != trace


def test_counters() -> None:
    net = Network(line(4), [M], "simple", seed=0)
    x, y = net.client("x", "b0"), net.client("y", "b3")
    y.subscribe("toy", Iv(2, 3))
    net.run_until_quiet()
    assert net.total_admin() == 3 and net.admin_processed() == {"b0": 1, "b1": 1, "b2": 1, "b3": 0}
    assert net.table_sizes() == {"b0": (0, 1), "b1": (0, 1), "b2": (0, 1), "b3": (1, 0)}
    assert net.remote_entries() == 3
    x.publish("toy", 2)
    x.publish("toy", 9)
    net.run_until_quiet()
    assert net.forwards == {("b0", "b1"): 1, ("b1", "b2"): 1, ("b2", "b3"): 1}
    assert y.received == [0]


def test_several_models_at_once() -> None:
    other = ToyModel("toy2")
    net = Network(line(3), [M, other], "covering", seed=2)
    x, y = net.client("x", "b0"), net.client("y", "b2")
    y.subscribe("toy", Iv(0, 3))
    y.subscribe("toy2", Iv(8, 9))
    net.run_until_quiet()
    assert net.brokers["b1"].table("toy").filters("b2") == [Iv(0, 3)]
    assert net.brokers["b1"].table("toy2").filters("b2") == [Iv(8, 9)]
    for model in ("toy", "toy2"):
        for e in (1, 8):
            x.publish(model, e)
    net.run_until_quiet()
    assert y.received == [0, 3]


def test_publications_without_advertisement_are_dropped() -> None:
    net = Network(line(2), [M], "covering", advertisements=True, seed=0)
    x, y = net.client("x", "b0"), net.client("y", "b1")
    y.subscribe("toy", Iv(0, 15))
    x.advertise("toy", Iv(0, 3))
    net.run_until_quiet()
    x.publish("toy", 2)
    x.publish("toy", 7)  # matches no advertisement of x
    net.run_until_quiet()
    assert y.received == [0] and net.brokers["b0"].dropped_publications == 1
    assert net.table_sizes("A") == {"b0": (1, 0), "b1": (0, 1)}


def test_bad_input_is_refused_clearly_and_loses_nothing() -> None:
    class Port:
        def __init__(self):
            self.out = []

        def send(self, b, n, m):
            self.out.append(m)

        def deliver(self, b, m):
            self.out.append(m)

    port = Port()
    b = Broker("B", [M], "simple", port)
    b.connect("N")
    b.attach("X")
    with pytest.raises(BrokerError, match="not a local client"):
        b.receive(Sub("Z", "toy", Iv(0, 1)), "Z")
    with pytest.raises(UnknownModelError, match="nope"):
        b.receive(Sub("X", "nope", Iv(0, 1)), "X")
    with pytest.raises(BrokerError, match="without advertisements"):
        b.receive(Adv("X", "toy", Iv(0, 1)), "X")
    b.receive(Sub("X", "toy", Iv(0, 1)), "X")
    assert len(port.out) == 1 and b.table("toy").sizes() == (1, 0)


@pytest.mark.parametrize(
    "msg",
    [
        Sub("c", "toy", Iv(1, 2)),
        Unsub("c", "toy", Pts(frozenset({1, 5}))),
        Adv("c", "toy", Iv(0, 0)),
        Unadv("c", "toy", Iv(3, 4)),
        Pub("c", "toy", 7, 12),
        Notify("c", "toy", 7, 12),
        Forward("toy", 3, 5),
        Admin("toy", "A", ((Iv(1, 2), None), (Iv(3, 3), "c")), ((Iv(0, 9), None),)),
    ],
)
def test_wire_round_trip(msg) -> None:
    import json

    models = {"toy": M}
    assert from_wire(json.loads(json.dumps(to_wire(msg, models))), models) == msg


def test_malformed_wire_message() -> None:
    with pytest.raises(ValueError, match="unknown or missing"):
        from_wire({"kind": "shout", "model": "toy"}, {"toy": M})


def test_snapshots_and_unrecorded_runs() -> None:
    net = Network(line(3), [M], "covering", seed=0, record=False)
    x, y = net.client("x", "b0"), net.client("y", "b2")
    before = net.snapshot()
    y.subscribe("toy", Iv(0, 4))
    net.run_until_quiet()
    x.publish("toy", 1)
    net.run_until_quiet()
    delta = net.snapshot() - before
    assert (delta.admin_sent, delta.forwards, delta.delivered, delta.remote_entries) == (2, 2, 1, 2)
    assert net.trace == [] and y.received == [0]


def test_a_refused_subscription_changes_nothing() -> None:
    net = Network(line(2), [M], "covering")
    c = net.client("c", "b0")
    with pytest.raises(UnknownModelError):
        c.subscribe("nope", Iv(0, 1))
    assert c.subscriptions == {} and net.trace == []


@pytest.mark.parametrize("strategy", ["simple", "identity", "covering", "merging"])
def test_resubscription_is_idempotent(strategy) -> None:
    """Mühl §2.3/§3.7.2: subscribing twice changes no table but renews (admin messages go
    out again); one unsubscription cancels the subscription everywhere."""
    net = Network(line(3), [M], strategy, seed=0)
    x, y = net.client("x", "b0"), net.client("y", "b2")
    y.subscribe("toy", Iv(1, 3))
    net.run_until_quiet()
    tables, admin = net.table_sizes(), net.total_admin()
    y.subscribe("toy", Iv(1, 3))
    net.run_until_quiet()
    assert net.table_sizes() == tables and net.total_admin() == 2 * admin
    y.unsubscribe("toy", Iv(1, 3))
    net.run_until_quiet()
    assert all(s == (0, 0) for s in net.table_sizes().values())
    x.publish("toy", 2)
    net.run_until_quiet()
    assert y.received == []
