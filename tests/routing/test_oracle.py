"""The delivery oracle judges traces by Def. 2.1 / 2.4, and it catches broken routing."""

from __future__ import annotations

import pytest
from pubsift.core import oracle
from pubsift.core.network import Network, TraceOp
from pubsift.core.strategies import STRATEGIES
from pubsift.core.strategies.covering import Covering
from pubsift.core.topology import line

from .toy import Iv, ToyModel

M = ToyModel()
MODELS = {"toy": M}
F = Iv(2, 5)


def ops(*items) -> list[TraceOp]:
    return [TraceOp(float(i), *it) for i, it in enumerate(items)]


def kinds(v: oracle.Verdict) -> list[str]:
    return sorted(x.kind for x in v.violations)


def test_correct_trace_passes() -> None:
    v = oracle.check(
        ops(
            ("sub", "Y", "toy", F),
            ("quiet",),
            ("pub", "X", "toy", None, 3, 1),
            ("notify", "Y", "toy", None, 3, 1),
            ("quiet",),
        ),
        MODELS,
    )
    assert v.ok and v.settled == 1 and v.deliveries == 1


@pytest.mark.parametrize(
    "trace,expected",
    [
        # sigma_3 of Mühl (2.12): a non-matching notification
        (
            [
                ("sub", "Y", "toy", F),
                ("pub", "X", "toy", None, 9, 1),
                ("notify", "Y", "toy", None, 9, 1),
            ],
            ["unsubscribed"],
        ),
        # sigma_4 (2.13): delivered after the unsubscription
        (
            [
                ("sub", "Y", "toy", F),
                ("pub", "X", "toy", None, 3, 1),
                ("unsub", "Y", "toy", F),
                ("notify", "Y", "toy", None, 3, 1),
            ],
            ["unsubscribed"],
        ),
        # at most once
        (
            [
                ("sub", "Y", "toy", F),
                ("quiet",),
                ("pub", "X", "toy", None, 3, 1),
                ("notify", "Y", "toy", None, 3, 1),
                ("notify", "Y", "toy", None, 3, 1),
                ("quiet",),
            ],
            ["duplicate"],
        ),
        # never published
        ([("sub", "Y", "toy", F), ("notify", "Y", "toy", None, 3, 7)], ["unpublished"]),
        # liveness for a settled subscription (weak validity)
        (
            [("sub", "Y", "toy", F), ("quiet",), ("pub", "X", "toy", None, 3, 1), ("quiet",)],
            ["missing"],
        ),
    ],
)
def test_violations_are_found(trace, expected) -> None:
    assert kinds(oracle.check(ops(*trace), MODELS)) == expected


def test_unsettled_publications_are_judged_for_safety_only() -> None:
    v = oracle.check(
        ops(("sub", "Y", "toy", F), ("pub", "X", "toy", None, 3, 1), ("quiet",)), MODELS
    )
    assert v.ok and v.unsettled == 1
    v = oracle.check(
        ops(
            ("sub", "Y", "toy", F),
            ("quiet",),
            ("pub", "X", "toy", None, 3, 1),
            ("unsub", "Y", "toy", F),
            ("quiet",),
        ),
        MODELS,
    )
    assert v.ok and v.unsettled == 1


def test_advertisements_safety_and_liveness() -> None:
    unadvertised = ops(
        ("sub", "Y", "toy", F),
        ("adv", "X", "toy", Iv(4, 9)),
        ("quiet",),
        ("pub", "X", "toy", None, 3, 1),
        ("notify", "Y", "toy", None, 3, 1),
        ("quiet",),
    )
    assert kinds(oracle.check(unadvertised, MODELS, advertisements=True)) == [
        "extra",
        "unadvertised",
    ]
    assert oracle.check(unadvertised, MODELS, advertisements=False).ok
    live = ops(
        ("sub", "Y", "toy", F),
        ("adv", "X", "toy", Iv(4, 9)),
        ("quiet",),
        ("pub", "X", "toy", None, 4, 1),
        ("quiet",),
    )
    assert kinds(oracle.check(live, MODELS, advertisements=True)) == ["missing"]


class _NoUncovering(Covering):
    """Covering-based routing that forgets to forward uncovered subscriptions."""

    def _forward_unsubs(self, sender, unsubs, uncovered):
        _fs, fu = super()._forward_unsubs(sender, unsubs, uncovered)
        return [], fu


def test_a_broken_strategy_is_caught() -> None:
    net = Network(line(3), [M], _NoUncovering, seed=1)
    y, z, x = net.client("y", "b0"), net.client("z", "b1"), net.client("x", "b2")
    y.subscribe("toy", Iv(0, 9))
    z.subscribe("toy", Iv(2, 3))
    net.run_until_quiet()
    y.unsubscribe("toy", Iv(0, 9))
    net.run_until_quiet()
    x.publish("toy", 2)
    net.run_until_quiet()
    assert kinds(oracle.check(net.trace, net.models)) == ["missing"]


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_the_same_scenario_passes_with_every_strategy(strategy) -> None:
    net = Network(line(3), [M], strategy, seed=1)
    y, z, x = net.client("y", "b0"), net.client("z", "b1"), net.client("x", "b2")
    y.subscribe("toy", Iv(0, 9))
    z.subscribe("toy", Iv(2, 3))
    net.run_until_quiet()
    y.unsubscribe("toy", Iv(0, 9))
    net.run_until_quiet()
    x.publish("toy", 2)
    net.run_until_quiet()
    v = oracle.check(net.trace, net.models)
    assert v.ok and v.settled == 1 and z.received == [0]
