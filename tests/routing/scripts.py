"""Random scripts of interface operations on random trees, and their execution.

A script is drawn with hypothesis (so failures shrink): a tree, where the clients sit, and
a list of operations (sub, unsub, adv, unadv, pub, settle). It always ends with a settled
round in which every client publishes, so every run has publications whose delivery set is
checked exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from pubsift.core import oracle
from pubsift.core.network import Network
from pubsift.core.topology import random_tree

from .kits import Kit


@dataclass(frozen=True)
class Script:
    brokers: int
    tree_seed: int
    net_seed: int
    placement: tuple[int, ...]
    ops: tuple[tuple[Any, ...], ...]
    final: tuple[Any, ...]


@st.composite
def scripts(draw: st.DrawFn, kit: Kit, advertisements: bool, max_ops: int = 40) -> Script:
    n = draw(st.integers(1, 7))
    clients = draw(st.integers(1, 5))
    who = st.integers(0, clients - 1)
    choices = [
        st.tuples(st.just("sub"), who, kit.filters),
        st.tuples(st.just("unsub"), who, st.integers(0, 9)),
        st.tuples(st.just("pub"), who, kit.events),
        st.just(("settle",)),
    ]
    if advertisements:
        choices += [
            st.tuples(st.just("adv"), who, kit.filters),
            st.tuples(st.just("unadv"), who, st.integers(0, 9)),
        ]
    return Script(
        n,
        draw(st.integers(0, 2**16)),
        draw(st.integers(0, 2**16)),
        tuple(draw(st.lists(st.integers(0, n - 1), min_size=clients, max_size=clients))),
        tuple(draw(st.lists(st.one_of(choices), max_size=max_ops))),
        tuple(draw(st.lists(kit.events, min_size=clients, max_size=clients))),
    )


def run(script: Script, kit: Kit, strategy: str, advertisements: bool) -> Network:
    """Execute ``script``; the network is left quiet after the final round."""
    topo = random_tree(script.brokers, script.tree_seed)
    net = Network(
        topo, [kit.model], strategy=strategy, advertisements=advertisements, seed=script.net_seed
    )
    cs = [net.client(f"c{i}", topo.access[b]) for i, b in enumerate(script.placement)]
    m = kit.model.name
    for op in script.ops:
        kind = op[0]
        if kind == "settle":
            net.run_until_quiet()
            continue
        c = cs[op[1]]
        if kind == "sub":
            c.subscribe(m, op[2])
        elif kind == "adv":
            c.advertise(m, op[2])
        elif kind == "pub":
            c.publish(m, op[2])
        else:
            active = list(c.subscriptions if kind == "unsub" else c.advertisements)
            if active:
                f = active[op[2] % len(active)][1]
                (c.unsubscribe if kind == "unsub" else c.unadvertise)(m, f)
    net.run_until_quiet()
    for c, e in zip(cs, script.final):
        c.publish(m, e)
    net.run_until_quiet()
    return net


def verdict(net: Network) -> oracle.Verdict:
    return oracle.check(net.trace, net.models, net.advertisements)
