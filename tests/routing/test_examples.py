"""Mühl's worked examples (000, Figs. 3.11/3.12, 3.16-3.21, 3.24/3.25) and Tarkoma's
covering traces (004, Figs. 3.2/3.3), replayed on one broker B1 whose admin messages are
recorded. Filters are toy point sets: [lo,hi] intervals and {..} sets (identical when they
hold the same points)."""

from __future__ import annotations

from pubsift.core.broker import Broker
from pubsift.core.messages import Admin, Sub, Unsub

from .toy import Iv, Pts, ToyModel

M = ToyModel()


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Admin]] = []
        self.notified: list = []

    def send(self, broker, neighbour, msg) -> None:
        self.sent.append((neighbour, msg))

    def deliver(self, broker, msg) -> None:
        self.notified.append(msg)

    def clear(self) -> None:
        self.sent = []

    def take(self) -> dict[str, tuple[set, set]]:
        """neighbour -> (subscribed filters, unsubscribed filters) of the admin messages
        sent since the last call; exactly one admin message per neighbour (Fig. 3.6)."""
        out: dict[str, tuple[set, set]] = {}
        for h, m in self.sent:
            assert h not in out, f"two admin messages to {h}"
            out[h] = ({f for f, _ in m.subs}, {f for f, _ in m.unsubs})
        self.sent = []
        return out


def broker(strategy: str, neighbours=("S", "B2", "B3"), clients=()) -> tuple[Broker, Recorder]:
    port = Recorder()
    b = Broker("B1", [M], strategy, port)
    for n in neighbours:
        b.connect(n)
    for c in clients:
        b.attach(c)
    return b, port


def admin(subs=(), unsubs=()) -> Admin:
    return Admin("toy", "S", tuple((f, None) for f in subs), tuple((f, None) for f in unsubs))


def entries(b: Broker) -> set[tuple]:
    return {(e.filter, e.dest) for e in b.table("toy")}


# -- identity-based routing (§3.5.3) -------------------------------------------------------
def test_fig_3_11_identity_subscription_from_a_neighbour() -> None:
    b, port = broker("identity")
    F = Iv(2, 4)
    b.receive(admin([F]), "S")
    assert port.take() == {"B2": ({F}, set()), "B3": ({F}, set())}
    assert entries(b) == {(F, "S")}


def test_fig_3_12_identity_subscription_from_a_local_client() -> None:
    b, port = broker("identity", neighbours=("B2", "B3"), clients=("S",))
    F, F2 = Iv(2, 4), Pts(frozenset({2, 3, 4}))  # F' ≡ F, not equal
    b.receive(admin([F2]), "B3")
    port.clear()
    b.receive(Sub("S", "toy", F), "S")
    assert port.take() == {"B3": ({F}, set())}  # B2 already has F' from B1
    b.receive(Unsub("S", "toy", F), "S")  # unsubscription: same D^I
    assert port.take() == {"B3": (set(), {F})}


# -- covering-based routing (§3.5.4) -------------------------------------------------------
def test_fig_3_16_covering_subscription_from_a_local_client() -> None:
    b, port = broker("covering", neighbours=("B2", "B3"), clients=("S",))
    F, G = Iv(3, 4), Iv(0, 9)
    b.receive(admin([G]), "B3")
    port.clear()
    b.receive(Sub("S", "toy", F), "S")
    assert port.take() == {"B3": ({F}, set())}  # (G, B3) with G ⊒ F blocks B2


def test_fig_3_17_covering_subscription_from_a_neighbour_replaces_covered_entries() -> None:
    b, port = broker("covering")
    F, G = Iv(0, 9), Iv(3, 4)
    b.receive(admin([G]), "S")
    port.clear()
    b.receive(admin([F]), "S")
    assert entries(b) == {(F, "S")}  # (G, S) ∈ C^L(F, S) removed
    assert port.take() == {"B2": ({F}, set()), "B3": ({F}, set())}


def test_fig_3_18_covering_unsubscription_from_a_neighbour() -> None:
    b, port = broker("covering")
    F = Iv(2, 5)
    b.receive(admin([F]), "S")
    port.clear()
    b.receive(admin([], [F]), "S")
    assert entries(b) == set()
    assert port.take() == {"B2": (set(), {F}), "B3": (set(), {F})}


def test_fig_3_19_covering_unsubscription_from_a_local_client() -> None:
    b, port = broker("covering", neighbours=("B2", "B3"), clients=("S",))
    F, G = Iv(3, 4), Iv(0, 9)
    b.receive(admin([G]), "B3")
    b.receive(Sub("S", "toy", F), "S")
    port.clear()
    b.receive(Unsub("S", "toy", F), "S")
    assert port.take() == {"B3": (set(), {F})}


def test_fig_3_20_unsubscription_uncovers_a_subscription_k_equals_1() -> None:
    b, port = broker("covering", neighbours=("B2", "B3"), clients=("S",))
    F, G = Iv(0, 9), Iv(3, 4)
    b.receive(Sub("S", "toy", F), "S")
    b.receive(admin([G]), "B2")
    assert port.take() == {"B2": ({F}, set()), "B3": ({F}, set())}  # G was covered
    b.receive(Unsub("S", "toy", F), "S")
    # F is withdrawn from B2 and B3; the uncovered G goes in the same message to B3 only
    assert port.take() == {"B2": (set(), {F}), "B3": ({G}, {F})}


def test_fig_3_21_unsubscription_with_uncovered_subscription_k_equals_2() -> None:
    b, port = broker("covering")
    F, G, G2 = Iv(0, 9), Iv(3, 4), Pts(frozenset({3, 4}))  # G' ≡ G
    b.receive(admin([F]), "S")
    b.receive(admin([G]), "B2")
    port.clear()
    b.receive(admin([G2], [F]), "S")  # unsub F with uncovered G'
    assert (G2, "S") in entries(b) and (F, "S") not in entries(b)
    sent = port.take()
    assert set(sent) == {"B2", "B3"}
    for h in ("B2", "B3"):  # k = 2: G also goes back to B2
        subs, unsubs = sent[h]
        assert unsubs == {F} and len(subs) == 1 and M.identical(next(iter(subs)), G)


def test_covering_resubscription_is_idempotent_but_renews() -> None:
    b, port = broker("covering", neighbours=("B2", "B3"), clients=("S",))
    F = Iv(1, 2)
    b.receive(Sub("S", "toy", F), "S")
    first = port.take()
    b.receive(Sub("S", "toy", F), "S")
    assert port.take() == first and entries(b) == {(F, "S")}


# -- merging-based routing (§3.5.5) --------------------------------------------------------
def test_fig_3_24_forwarding_a_new_merger() -> None:
    b, port = broker("merging", neighbours=("B2", "B3"), clients=("S",))
    F, G, H = Iv(0, 3), Iv(4, 6), Iv(0, 6)
    b.receive(Sub("S", "toy", F), "S")
    port.clear()
    b.receive(Sub("S", "toy", G), "S")
    assert entries(b) == {(H, "S")}
    assert port.take() == {"B2": ({H}, set()), "B3": ({H}, set())}  # receivers drop F ⊑ H


def test_fig_3_25_forwarding_a_cancelled_merger() -> None:
    b, port = broker("merging", neighbours=("B2", "B3"), clients=("S",))
    F, G, H = Iv(0, 3), Iv(4, 6), Iv(0, 6)
    b.receive(Sub("S", "toy", F), "S")
    b.receive(Sub("S", "toy", G), "S")
    port.clear()
    b.receive(Unsub("S", "toy", F), "S")  # case 2: a part is unsubscribed
    assert entries(b) == {(G, "S")}
    assert port.take() == {"B2": ({G}, {H}), "B3": ({G}, {H})}


def test_merger_cancellation_case_1_subscription_covers_the_whole_merger() -> None:
    b, port = broker("merging")
    b.receive(admin([Iv(0, 3)]), "S")
    b.receive(admin([Iv(4, 6)]), "S")
    assert entries(b) == {(Iv(0, 6), "S")}
    port.clear()
    b.receive(admin([Iv(0, 9)]), "S")
    assert entries(b) == {(Iv(0, 9), "S")}
    assert port.take() == {"B2": ({Iv(0, 9)}, set()), "B3": ({Iv(0, 9)}, set())}


def test_merger_cancellation_case_3_subscription_covers_a_part() -> None:
    b, port = broker("merging")
    F, G, K = Iv(2, 3), Iv(4, 6), Pts(frozenset({0, 2, 3}))  # K ⊒ F, K ⋣ [2,6]
    b.receive(admin([F]), "S")
    b.receive(admin([G]), "S")
    port.clear()
    b.receive(admin([K]), "S")
    assert entries(b) == {(K, "S"), (G, "S")}  # no merger of K and G exists
    # the merger is withdrawn with the remaining part and K in one message
    assert port.take() == {"B2": ({K, G}, {Iv(2, 6)}), "B3": ({K, G}, {Iv(2, 6)})}


def test_merging_remerges_the_remaining_parts() -> None:
    b, port = broker("merging", neighbours=("B2",), clients=("S",))
    for f in (Iv(0, 1), Iv(2, 3), Iv(4, 5)):
        b.receive(Sub("S", "toy", f), "S")
    assert entries(b) == {(Iv(0, 5), "S")}
    port.clear()
    b.receive(Unsub("S", "toy", Iv(4, 5)), "S")
    assert entries(b) == {(Iv(0, 3), "S")}  # [0,1] and [2,3] merged again
    assert port.take() == {"B2": ({Iv(0, 3)}, {Iv(0, 5)})}


def test_imperfect_merging_is_counted_and_only_for_neighbours() -> None:
    b, _port = broker("merging-imperfect", neighbours=("S", "B2"), clients=("X",))
    b.receive(admin([Iv(0, 1)]), "S")
    b.receive(admin([Iv(5, 6)]), "S")
    strategy = b.routing["toy"].sub_strategy
    assert entries(b) == {(Iv(0, 6), "S")} and strategy.imperfect_mergers == 1
    b.receive(Sub("X", "toy", Iv(8, 9)), "X")
    b.receive(Sub("X", "toy", Iv(12, 13)), "X")  # a local client's stay exact
    assert {(Iv(8, 9), "X"), (Iv(12, 13), "X")} <= entries(b)


# -- Tarkoma's filters poset traces (004, Figs. 3.2/3.3) -----------------------------------
def test_tarkoma_covering_traces() -> None:
    a, c, e = Iv(0, 10), Iv(2, 6), Iv(3, 4)  # a ⊒ c ⊒ e
    bb, d = Iv(12, 15), Iv(13, 14)  # b ⊒ d
    b, port = broker("covering", neighbours=("I1", "I2", "I3"))
    b.receive(admin([a]), "I1")
    assert port.take() == {"I2": ({a}, set()), "I3": ({a}, set())}
    b.receive(admin([bb]), "I1")
    assert port.take() == {"I2": ({bb}, set()), "I3": ({bb}, set())}
    b.receive(admin([c]), "I2")
    assert port.take() == {"I1": ({c}, set())}
    b.receive(admin([d]), "I2")
    assert port.take() == {"I1": ({d}, set())}
    b.receive(admin([e]), "I3")
    assert port.take() == {}  # covered towards every neighbour
    b.receive(admin([], [a]), "I1")  # Unsub(a, I1)
    # forwarded to I2 and I3; (c, I2) now also goes to I3 and (e, I3) to I2
    assert port.take() == {"I2": ({e}, {a}), "I3": ({c}, {a})}
