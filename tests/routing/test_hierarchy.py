"""Routing-table sizes and filter-forwarding costs on Mühl's 107-broker hierarchy (000, ch. 6,
SEEDS.md): the closed forms that follow from the topology, at a small scale."""

from __future__ import annotations

import pytest
from pubsift.core.network import Network
from pubsift.core.topology import hierarchy

from .toy import Pts, ToyModel

M = ToyModel()
TOPO = hierarchy()
V = len(TOPO.brokers)  # |V| = 107
STOCKS = [Pts(frozenset({s})) for s in (0, 2, 4, 6, 8)]  # "quote subscriptions" on 5 stocks


def test_simple_routing_costs_v_minus_1_per_change() -> None:
    net = Network(TOPO, [M], "simple", seed=0)
    clients = [net.client(f"c{i}", lb) for i, lb in enumerate(TOPO.access[::7])]
    for x, c in enumerate(clients, start=1):
        c.subscribe("toy", STOCKS[x % 5])
        net.run_until_quiet()
        assert net.total_admin() == (V - 1) * x and net.remote_entries() == (V - 1) * x
    clients[0].unsubscribe("toy", STOCKS[1])
    net.run_until_quiet()
    assert net.total_admin() == (V - 1) * (len(clients) + 1)
    assert net.remote_entries() == (V - 1) * (len(clients) - 1)


def test_simple_routing_with_advertisements_p_avg_3_73() -> None:
    """One publisher at the root router advertising everything: a subscription is stored on
    the path from its local broker to the root only: P_avg = 250 / 67 = 3.73 (Table 6.2),
    28.4 times fewer remote entries than without advertisements."""
    net = Network(TOPO, [M], "simple", advertisements=True, seed=0)
    net.client("publisher", TOPO.root).advertise("toy", Pts(frozenset(range(16))))
    net.run_until_quiet()
    start = net.snapshot()
    for i, lb in enumerate(TOPO.access):
        net.client(f"c{i}", lb).subscribe("toy", STOCKS[i % 5])
    net.run_until_quiet()
    delta = net.snapshot() - start
    assert delta.remote_entries == 250 and delta.admin_sent == 250
    assert round(delta.remote_entries / len(TOPO.access), 2) == 3.73
    assert round((V - 1) / (250 / 67), 1) == 28.4
    # a level-k router holds the subscriptions of its subtree: about x / 3^(k-1)
    for k, held in {1: 67, 2: 22, 3: 7, 4: 2}.items():
        assert {net.brokers[r].sizes()[1] for r in TOPO.routers if TOPO.level[r] == k} == {held}
        assert abs(held - 67 / 3 ** (k - 1)) < 1


@pytest.mark.parametrize(
    "strategy,limit",
    [("identity", 2 * 5 * (V - 1)), ("covering", 2 * 5 * (V - 1)), ("merging", 2 * (V - 1))],
)
def test_table_sizes_converge(strategy: str, limit: int) -> None:
    """Identity-based routing converges to 2·m·(|V| − 1) remote entries for m stocks;
    merging keeps at most one remote entry per neighbour (one per directed link)."""
    net = Network(TOPO, [M], strategy, seed=0)
    for i, lb in enumerate(TOPO.access):
        c = net.client(f"c{i}", lb)
        for f in STOCKS:
            c.subscribe("toy", f)
    net.run_until_quiet()
    assert net.remote_entries() == limit


@pytest.mark.slow
@pytest.mark.parametrize("adv", [False, True], ids=["noadv", "adv"])
@pytest.mark.parametrize(
    "strategy", ["flooding", "simple", "identity", "covering", "merging", "merging-imperfect"]
)
def test_records_quotes_on_the_hierarchy(strategy: str, adv: bool) -> None:
    """Quote and quote-interval subscriptions of the records model on the 107 brokers, one
    publisher at the root router, judged by the oracle."""
    import random

    from pubsift.core import load_model, oracle

    model = load_model("records")
    rng = random.Random(5)
    net = Network(TOPO, [model], strategy, advertisements=adv, seed=5)
    pub = net.client("publisher", TOPO.root)
    if adv:
        pub.advertise("records", model.parse_filter('price > 0 and symbol in {"A", "B", "C", "D"}'))
    consumers = [net.client(f"c{i}", rng.choice(TOPO.access)) for i in range(40)]
    subs = []
    for c in consumers:
        for _ in range(3):
            s = rng.choice("ABCDE")
            text = (
                f'symbol = "{s}"'
                if rng.random() < 0.5
                else f'symbol = "{s}" and price in [{(lo := rng.randint(1, 20))}, {lo + rng.randint(0, 10)}]'
            )
            c.subscribe("records", model.parse_filter(text))
            subs.append((c, text))
        if rng.random() < 0.3:
            net.run_until_quiet()
    net.run_until_quiet()
    for c, text in subs[::4]:
        c.unsubscribe("records", model.parse_filter(text))
    net.run_until_quiet()
    for _ in range(60):
        pub.publish(
            "records",
            model.parse_event({"symbol": rng.choice("ABCDE"), "price": rng.randint(1, 30)}),
        )
    net.run_until_quiet()
    v = oracle.check(net.trace, net.models, adv)
    assert v.ok and v.settled == 60 and v.deliveries > 0, str(v)
