"""Self-stabilization by leasing (Mühl 000, §3.7): from an arbitrary state — garbage routing
entries (local and remote), missing entries, lost and spurious messages — the network
delivers correctly again.

Mühl's stabilization time ΔT = δmax + d(δmax − δmin) + π (3.22) bounds the return of
*safety* (Def. 2.3, eventual safety): from t0 + ΔT on, nobody gets a notification it did
not subscribe to, nor one twice. Entries that were lost are restored by the clients' next
renewals, which (idempotent resubscriptions, §3.7.2) need one refresh period ρ and a trip
across the network once the garbage that could suppress them (covering entries) has
expired; the tests check exact delivery from t0 + ΔT + ρ + 2·d·δmax on.
"""

from __future__ import annotations

import random

import pytest
from pubsift.core import oracle
from pubsift.core.leasing import LeaseTimingError, Leasing
from pubsift.core.messages import Admin
from pubsift.core.network import Network
from pubsift.core.strategies import STRATEGIES
from pubsift.core.topology import line, random_tree

from .toy import DOMAIN, Iv, Pts, ToyModel

M = ToyModel()
DELAY = (1.0, 2.0)


def _filter(rng: random.Random):
    lo = rng.randrange(DOMAIN)
    if rng.random() < 0.2:
        return Pts(frozenset(rng.sample(range(DOMAIN), rng.randint(1, 4))))
    return Iv(lo, min(DOMAIN - 1, lo + rng.choice([0, 1, 3, 7])))


def _corrupt(net: Network, rng: random.Random) -> None:
    """Arbitrary transient faults (§3.7.1) at the current time."""
    for b in net.brokers.values():
        r = b.routing["toy"]
        tables = [(r.subs, r.sub_strategy)] + ([(r.advs, r.adv_strategy)] if r.advs else [])
        for table, strategy in tables:
            lost = [e for e in table if rng.random() < 0.5]  # missing entries
            strategy.drop(lost)
            for c in b.clients:  # garbage local entries
                table.add(Iv(0, DOMAIN - 1) if rng.random() < 0.5 else _filter(rng), c)
            for h in sorted(b.neighbours):  # garbage remote entries
                table.add(_filter(rng), h)
                strategy.administer(h, [(_filter(rng), None)], [])  # ... and strategy state
    net.lose(0.5)  # lost messages
    names = sorted(net.brokers)
    for _ in range(5):  # spurious messages
        a = rng.choice(names)
        nbs = sorted(net.brokers[a].neighbours)
        if nbs:
            level = "A" if net.advertisements and rng.random() < 0.3 else "S"
            net.inject(a, rng.choice(nbs), Admin("toy", level, ((_filter(rng), None),), ()))


def _run(strategy: str, adv: bool, seed: int) -> None:
    rng = random.Random(seed)
    topo = random_tree(rng.randint(2, 6), seed) if seed % 3 else line(5)
    d = topo.diameter()
    leasing = Leasing(period=30 + d * (DELAY[1] - DELAY[0]) + 1, refresh=30)
    net = Network(topo, [M], strategy, advertisements=adv, seed=seed, delay=DELAY, leasing=leasing)
    clients = [net.client(f"c{i}", rng.choice(topo.access)) for i in range(4)]
    for c in clients:
        if adv:
            c.advertise("toy", Iv(0, DOMAIN - 1) if rng.random() < 0.6 else _filter(rng))
        for _ in range(rng.randint(1, 3)):
            c.subscribe("toy", _filter(rng))
    net.run_until(100.0)
    for c in clients[:2]:  # changes in flight when the faults strike
        c.subscribe("toy", _filter(rng))
        c.unsubscribe("toy", next(iter(c.subscriptions))[1])
    t0 = net.now
    _corrupt(net, rng)
    for c in clients:  # the faults are visible ...
        c.publish("toy", rng.randrange(DOMAIN))
    dt = leasing.stabilization_time(d, *DELAY)
    net.run_until(t0 + dt)
    safe_from = net.now
    for c in clients:  # ... safety is back at t0 + ΔT (3.22)
        for _ in range(3):
            c.publish("toy", rng.randrange(DOMAIN))
    relay = leasing.period if adv else 0.0
    net.run_until(t0 + dt + relay + leasing.refresh + 2 * d * DELAY[1])
    net.run_until_quiet()
    live_from = net.now
    for c in clients:  # ... and delivery is exact after a renewal
        for e in range(DOMAIN):
            c.publish("toy", e)
    net.run_until_quiet()
    safety = oracle.check(net.trace, net.models, adv, since=safe_from)
    assert not [v for v in safety.violations if v.kind != "missing"], str(safety)
    exact = oracle.check(net.trace, net.models, adv, since=live_from)
    assert exact.ok, str(exact)
    assert exact.settled == len(clients) * DOMAIN


@pytest.mark.parametrize("adv", [False, True], ids=["noadv", "adv"])
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_network_recovers_from_arbitrary_state(strategy: str, adv: bool) -> None:
    for seed in range(4):
        _run(strategy, adv, seed)


@pytest.mark.slow
@pytest.mark.parametrize("adv", [False, True], ids=["noadv", "adv"])
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_network_recovers_from_arbitrary_state_many(strategy: str, adv: bool) -> None:
    for seed in range(4, 60):
        _run(strategy, adv, seed)


def test_faults_are_visible_before_stabilization() -> None:
    """The corruption is real: right after it, the oracle sees wrong deliveries."""
    rng = random.Random(7)
    topo = line(4)
    leasing = Leasing(period=40, refresh=30)
    net = Network(topo, [M], "covering", seed=7, delay=DELAY, leasing=leasing)
    clients = [net.client(f"c{i}", b) for i, b in enumerate(topo.access)]
    clients[0].subscribe("toy", Iv(0, 0))
    net.run_until(50.0)
    t0 = net.now
    _corrupt(net, rng)
    for c in clients:
        for e in range(DOMAIN):
            c.publish("toy", e)
    net.run_until_quiet()
    bad = oracle.check(net.trace, net.models, since=t0)
    assert any(v.kind == "unsubscribed" for v in bad.violations)


def test_expired_entries_are_dropped_without_renewal() -> None:
    net = Network(line(3), [M], "simple", delay=DELAY, leasing=Leasing(period=40, refresh=30))
    c = net.client("c", "b0")
    c.subscribe("toy", Iv(1, 2))
    net.run_until(5.0)
    assert all(b.sizes() != (0, 0) for b in net.brokers.values())
    c.subscriptions.clear()  # the client stops renewing (e.g. crashed)
    net.run_until(100.0)
    assert all(b.sizes() == (0, 0) for b in net.brokers.values())


def test_lease_timing_condition_is_checked_and_explained() -> None:
    topo = line(6)  # d = 5
    with pytest.raises(LeaseTimingError, match=r"π=10.*ρ=8.*d=5.*ρ \+ d\(δmax − δmin\) = 13"):
        Network(topo, [M], "covering", delay=(1.0, 2.0), leasing=Leasing(period=10, refresh=8))
    Network(topo, [M], "covering", delay=(1.0, 2.0), leasing=Leasing(period=13.5, refresh=8))
    assert Leasing(14, 8).stabilization_time(5, 1.0, 2.0) == 2.0 + 5 * 1.0 + 14


@pytest.mark.parametrize("strategy", ["covering", "merging", "identity", "simple"])
@pytest.mark.parametrize("vanished", ["client", "neighbour"])
@pytest.mark.parametrize("cover", [Iv(0, DOMAIN - 1), Iv(2, 3)], ids=["covering", "identical"])
def test_an_expiring_entry_of_a_vanished_peer_is_withdrawn_like_an_unsubscription(
    strategy, vanished, cover
) -> None:
    """A client (or a neighbour broker whose link is down) with a covering or identical
    subscription stops renewing: the broker next to it withdraws the entry like an
    unsubscription, forwarding the subscriptions it covered in the same admin message, and
    renews what it covered at once (their renewals were not forwarded while it was there),
    before the copies further on run out. (A silent drop left them without a route until
    the covered subscriber's next renewal, up to ρ: the fuzzed network lost notifications
    meant for well-behaved clients; found by tests/network/test_fuzz.py.)"""
    from pubsift.core.broker import Broker
    from pubsift.core.messages import Sub

    sent: list[tuple[str, Admin]] = []

    class Port:
        def send(self, broker, neighbour, msg) -> None:
            sent.append((neighbour, msg))

        def deliver(self, broker, msg) -> None:
            pass

    now = [0.0]
    b = Broker("b1", [M], strategy, Port(), lease=10.0, clock=lambda: now[0])
    b.connect("b0")
    b.attach("s")

    def issue_cover() -> None:
        if vanished == "client":
            b.receive(Sub("h", "toy", cover), "h")
        else:
            b.receive(Admin("toy", "S", ((cover, None),), ()), "h")

    if vanished == "client":
        b.attach("h")
    else:
        b.connect("h")
    b.receive(Sub("s", "toy", Iv(2, 3)), "s")
    now[0] = 1.0
    issue_cover()
    now[0] = 6.0
    b.receive(Sub("s", "toy", Iv(2, 3)), "s")  # s renews, h does not
    sent.clear()
    b.expire(10.5, early=0.6, gone={"h"})  # h's lease ends at 11: withdrawn now, s's kept
    assert b.table("toy").sizes() == (1, 0)
    to_b0 = [a for h, a in sent if h == "b0"]
    if cover != Iv(2, 3):
        assert cover in [f for a in to_b0 for f, _ in a.unsubs]
        if strategy in ("covering", "merging"):  # forwarded in the same admin message
            assert Iv(2, 3) in [f for f, _ in to_b0[0].subs]
    if strategy != "simple":  # its renewals were withheld: renewed toward b0 at once
        assert Iv(2, 3) in [f for f, _ in to_b0[-1].subs]
    if vanished == "neighbour":  # a connected neighbour's entries expire silently
        now[0] = 12.0
        b.receive(Admin("toy", "S", ((Iv(0, DOMAIN - 1), None),), ()), "h")
        now[0] = 13.0
        b.receive(Sub("s", "toy", Iv(2, 3)), "s")
        sent.clear()
        b.expire(21.5, early=0.6)
        assert not sent and b.table("toy").sizes() == (1, 1)
        b.expire(22.0)
        assert not sent and b.table("toy").sizes() == (1, 0)


@pytest.mark.parametrize("strategy", ["covering", "merging", "identity"])
def test_a_second_vanished_cover_keeps_its_neighbours_copy_until_it_is_withdrawn(strategy):
    """Two vanished clients hold the same covering filter; the first one's lease runs out
    first. Its withdrawal sends no unsubscription (the second one's entry still needs the
    route), and the neighbour's copy was renewed only through the first one: it is renewed
    now, or it would run out before the second one is withdrawn (and the covered
    subscriptions forwarded) — found by the fuzzer under load."""
    from pubsift.core.broker import Broker
    from pubsift.core.messages import Sub

    sent: list[tuple[str, Admin]] = []

    class Port:
        def send(self, broker, neighbour, msg) -> None:
            sent.append((neighbour, msg))

        def deliver(self, broker, msg) -> None:
            pass

    now = [0.0]
    b = Broker("b1", [M], strategy, Port(), lease=10.0, clock=lambda: now[0])
    b.connect("b0")
    for c in ("s", "h1", "h2"):
        b.attach(c)
    everything = Iv(0, DOMAIN - 1)
    b.receive(Sub("s", "toy", Iv(2, 3)), "s")
    now[0] = 1.0
    b.receive(Sub("h1", "toy", everything), "h1")
    now[0] = 4.0
    b.receive(Sub("h2", "toy", everything), "h2")  # not forwarded: h1's is identical
    now[0] = 8.0
    b.receive(Sub("s", "toy", Iv(2, 3)), "s")
    sent.clear()
    b.expire(10.5, early=0.6, gone={"h1", "h2"})  # h1's lease (11) ends, h2's (14) not yet
    to_b0 = [a for h, a in sent if h == "b0"]
    assert everything not in [f for a in to_b0 for f, _ in a.unsubs]
    assert everything in [f for a in to_b0 for f, _ in a.subs]  # b0's copy renewed
    sent.clear()
    b.expire(13.5, early=0.6, gone={"h1", "h2"})  # h2's turn: withdrawn, s's forwarded
    to_b0 = [a for h, a in sent if h == "b0"]
    assert everything in [f for a in to_b0 for f, _ in a.unsubs]
    assert Iv(2, 3) in [f for a in to_b0 for f, _ in a.subs]


@pytest.mark.parametrize("strategy", ["covering", "merging", "identity"])
def test_an_unsubscription_renews_the_identical_entry_left_for_the_copies_further_on(strategy):
    """b0 holds two identical covering entries: one from neighbour b1 (forwarded on to b2,
    whose copy is granted through it) and a later one of a local client h, which is not
    forwarded to b2 (identical). b1 withdraws its entry (its client vanished): b0 forwards
    no unsubscription to b2 (h's entry still needs the route), and h's entry now stands
    alone for b2's copy — whose lease came from b1's entry and ends before h's is withdrawn.
    The unsubscription renews h's entry toward b2 at once; otherwise b2's copy ran out
    while b0 still withheld the renewals of the subscriptions it covered (s's), and b2
    routed nothing to b0 until h's withdrawal arrived: the fuzzed star network lost every
    notification for subscribers behind b0 for up to half a second (found by tests/network/test_fuzz.py)."""
    from pubsift.core.broker import Broker
    from pubsift.core.messages import Sub, Unsub

    now = [0.0]
    brokers: dict[str, Broker] = {}

    class Port:  # b0 <-> b2 synchronously; what goes to b1 is dropped
        def send(self, broker, neighbour, msg) -> None:
            if neighbour in brokers:
                brokers[neighbour].receive(msg, broker)

        def deliver(self, broker, msg) -> None:
            pass

    for name in ("b0", "b2"):
        brokers[name] = Broker(name, [M], strategy, Port(), lease=10.0, clock=lambda: now[0])
    b0, b2 = brokers["b0"], brokers["b2"]
    b0.connect("b1")
    b0.connect("b2")
    b2.connect("b0")
    for c in ("s", "h"):
        b0.attach(c)
    everything = Iv(0, DOMAIN - 1)
    script = {
        0.0: lambda: b0.receive(Sub("s", "toy", Iv(2, 3)), "s"),
        1.0: lambda: b0.receive(Admin("toy", "S", ((everything, None),), ()), "b1"),
        4.0: lambda: b0.receive(Sub("h", "toy", everything), "h"),  # h vanishes
        9.5: lambda: b0.receive(Admin("toy", "S", (), ((everything, None),)), "b1"),
    }
    routed_from_b0: dict[float, set[int]] = {}
    for step in range(0, 37):
        now[0] = t = step * 0.5
        if t in script:
            script[t]()
        if t % 3 == 0 and t > 0:  # s renews every ρ = 3
            b0.receive(Sub("s", "toy", Iv(2, 3)), "s")
        b0.expire(t, early=0.6, gone={"h", "b1"} if t >= 9.5 else {"h"})
        b2.expire(t)
        wanted = {
            e
            for e in range(DOMAIN)
            if any(M.matches(x.filter, e) for x in b0.table("toy") if x.dest != "b2")
        }
        routed = {e for e in range(DOMAIN) if "b0" in b2.table("toy").destinations(e)}
        routed_from_b0[t] = wanted - routed
    assert not any(routed_from_b0.values()), {t: g for t, g in routed_from_b0.items() if g}
    if strategy != "identity":  # h's withdrawal (its lease ends at 14) reached b2's copy
        assert {e for e in range(DOMAIN) if "b0" in b2.table("toy").destinations(e)} == {2, 3}
    b0.receive(Unsub("s", "toy", Iv(2, 3)), "s")
    assert not b2.table("toy").sizes()[1]


@pytest.mark.parametrize("strategy", ["covering", "merging", "identity"])
def test_a_new_identical_entry_that_takes_over_the_renewals_is_forwarded(strategy):
    """s subscribes F at b1 (forwarded to b0); then h subscribes an identical F and
    vanishes. h's entry ranks before s's, so from then on it is the one whose renewals
    are forwarded (:meth:`RoutingTable.d_renewal`), and s's are not — but h never renews.
    h's subscription is forwarded to b0 when it arrives, so that b0's copy holds h's lease
    and is still there when b1 withdraws h's entry (renewing s's); otherwise b0's copy ran
    out at the lease s had given it, up to (π − ρ)/2 before h's withdrawal, and s lost
    notifications meanwhile (the fuzzed star network of tests/network/test_fuzz.py, seed 30)."""
    from pubsift.core.broker import Broker
    from pubsift.core.messages import Sub

    now = [0.0]
    brokers: dict[str, Broker] = {}

    class Port:
        def send(self, broker, neighbour, msg) -> None:
            brokers[neighbour].receive(msg, broker)

        def deliver(self, broker, msg) -> None:
            pass

    for name in ("b0", "b1"):
        brokers[name] = Broker(name, [M], strategy, Port(), lease=10.0, clock=lambda: now[0])
    b0, b1 = brokers["b0"], brokers["b1"]
    b0.connect("b1")
    b1.connect("b0")
    for c in ("h", "s"):  # "h" < "s": h's entry ranks first
        b1.attach(c)
    f = Iv(2, 5)
    gaps: dict[float, set[int]] = {}
    for step in range(0, 37):
        now[0] = t = step * 0.5
        if t % 3 == 0:  # s subscribes at 0 and renews every ρ = 3
            b1.receive(Sub("s", "toy", f), "s")
        if t == 1.0:
            b1.receive(Sub("h", "toy", f), "h")  # ... and h vanishes
        b1.expire(t, early=0.6, gone={"h"})
        b0.expire(t)
        wanted = {e for e in range(DOMAIN) if any(M.matches(x.filter, e) for x in b1.table("toy"))}
        routed = {e for e in range(DOMAIN) if "b1" in b0.table("toy").destinations(e)}
        gaps[t] = wanted - routed
    assert not any(gaps.values()), {t: g for t, g in gaps.items() if g}
    assert {x.dest for x in b1.table("toy")} == {"s"}  # h's entry was withdrawn
