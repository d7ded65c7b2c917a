"""Every strategy, with and without advertisements, on every available model: random trees,
random scripts, checked against the delivery oracle (Mühl Def. 2.1 / 2.4), and against
flooding (differential)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from pubsift.core import oracle
from pubsift.core.strategies import STRATEGIES

from .kits import kits
from .scripts import run, scripts, verdict

KITS = kits()
CASES = [(k, s, a) for k in KITS for s in STRATEGIES for a in (False, True)]
IDS = [f"{k.name}-{s}-{'adv' if a else 'noadv'}" for k, s, a in CASES]


def _check(kit, strategy, adv, examples) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(script=scripts(kit, adv))
    def prop(script) -> None:
        net = run(script, kit, strategy, adv)
        v = verdict(net)
        assert v.ok, f"{strategy} adv={adv}: {v}"
        assert v.settled >= len(script.final)  # the final round is always judged
        if strategy != "flooding":
            base = run(script, kit, "flooding", adv)
            vb = verdict(base)
            both = v.settled_ids & vb.settled_ids
            mine, theirs = oracle.deliveries(net.trace), oracle.deliveries(base.trace)
            assert {p: mine[p] for p in both} == {p: theirs[p] for p in both}

    prop()


@pytest.mark.parametrize("kit,strategy,adv", CASES, ids=IDS)
def test_deliveries_match_the_oracle(kit, strategy, adv) -> None:
    _check(kit, strategy, adv, 12 if kit.name == "toy" else 5)


@pytest.mark.slow
@pytest.mark.parametrize("kit,strategy,adv", CASES, ids=IDS)
def test_deliveries_match_the_oracle_many(kit, strategy, adv) -> None:
    _check(kit, strategy, adv, 300 if kit.name == "toy" else 60)


PERFECT = ["simple", "identity", "covering", "merging"]


@pytest.mark.parametrize("adv", [False, True], ids=["noadv", "adv"])
@pytest.mark.parametrize("strategy", PERFECT)
def test_perfect_strategies_forward_nothing_in_vain_once_settled(strategy, adv) -> None:
    """Mühl §3.5: every strategy but flooding (and imperfect merging) keeps the routing
    configuration weakly perfect: once settled, no notification reaches a broker that
    neither delivers nor forwards it. Flooding does, which shows the count is not vacuous."""
    kit = KITS[0]
    assert kit.name == "toy"

    @settings(
        max_examples=15, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(script=scripts(kit, adv))
    def prop(script) -> None:
        final = script.final
        net = run(dataclasses.replace(script, final=()), kit, strategy, adv)
        before = net.useless_forwards()
        for c, e in zip(net.clients.values(), final):
            c.publish(kit.model.name, e)
        net.run_until_quiet()
        assert net.useless_forwards() == before

    prop()


def test_flooding_forwards_in_vain() -> None:
    from pubsift.core.network import Network
    from pubsift.core.topology import line

    net = Network(line(4), [KITS[0].model], "flooding")
    net.client("x", "b0").publish("toy", 3)
    net.run_until_quiet()
    assert net.useless_forwards() == 1 and net.total_forwards() == 3
