"""A hypothesis state machine drives a network of a random tree with the toy model: clients
subscribe, unsubscribe, advertise, unadvertise, publish and let the network settle in any
order; after every settling the trace so far must satisfy the oracle, and the machine's own
model of the subscriptions must agree with the clients' (Mühl §2.3: resubscription is
idempotent, one unsubscription cancels it)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from pubsift.core import oracle
from pubsift.core.network import Network
from pubsift.core.strategies import STRATEGIES
from pubsift.core.topology import random_tree

from .toy import ToyModel, toy_events, toy_filters

M = ToyModel()


def machine(strategy: str, adv: bool) -> type[RuleBasedStateMachine]:
    class Routing(RuleBasedStateMachine):
        @initialize(
            n=st.integers(1, 6),
            seed=st.integers(0, 999),
            where=st.lists(st.integers(0, 5), min_size=1, max_size=4),
        )
        def build(self, n, seed, where) -> None:
            topo = random_tree(n, seed)
            self.net = Network(topo, [M], strategy, advertisements=adv, seed=seed)
            self.clients = [
                self.net.client(f"c{i}", topo.access[w % n]) for i, w in enumerate(where)
            ]
            self.subs: dict[str, set] = {c.name: set() for c in self.clients}

        @rule(i=st.integers(0, 3), f=toy_filters())
        def subscribe(self, i, f) -> None:
            c = self.clients[i % len(self.clients)]
            c.subscribe("toy", f)
            self.subs[c.name].add(f)

        @rule(i=st.integers(0, 3), k=st.integers(0, 9))
        def unsubscribe(self, i, k) -> None:
            c = self.clients[i % len(self.clients)]
            if self.subs[c.name]:
                f = sorted(self.subs[c.name], key=repr)[k % len(self.subs[c.name])]
                c.unsubscribe("toy", f)
                self.subs[c.name].discard(f)

        @precondition(lambda self: adv)
        @rule(i=st.integers(0, 3), f=toy_filters())
        def advertise(self, i, f) -> None:
            self.clients[i % len(self.clients)].advertise("toy", f)

        @precondition(lambda self: adv)
        @rule(i=st.integers(0, 3), k=st.integers(0, 9))
        def unadvertise(self, i, k) -> None:
            c = self.clients[i % len(self.clients)]
            if c.advertisements:
                c.unadvertise("toy", list(c.advertisements)[k % len(c.advertisements)][1])

        @rule(i=st.integers(0, 3), e=toy_events())
        def publish(self, i, e) -> None:
            self.clients[i % len(self.clients)].publish("toy", e)

        @rule()
        def settle(self) -> None:
            self.net.run_until_quiet()
            v = oracle.check(self.net.trace, self.net.models, adv)
            assert v.ok, str(v)

        @invariant()
        def clients_agree_with_the_specification(self) -> None:
            if hasattr(self, "net"):
                for c in self.clients:
                    assert {f for _, f in c.subscriptions} == self.subs[c.name]

    Routing.__name__ = f"Routing_{strategy}_{adv}"
    return Routing


@pytest.mark.parametrize("adv", [False, True], ids=["noadv", "adv"])
@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_state_machine(strategy, adv) -> None:
    cls = machine(strategy, adv)
    cls.TestCase.settings = settings(
        max_examples=10,
        stateful_step_count=30,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    cls.TestCase().runTest()
