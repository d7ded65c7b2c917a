"""Routing strategies (Mühl 2002, "Large-Scale Content-Based Publish/Subscribe Systems", §3.5),
each an ``administer`` for one routing table.

``STRATEGIES`` maps names to factories ``(table, is_local) -> Strategy``; a broker is given
a name or a factory, so a new strategy is a new module and an entry here (or a factory
passed directly), never a change to the broker.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from pubsift.core.routing_table import RoutingTable
from pubsift.core.strategies.base import Outbox, Strategy, activation, generate
from pubsift.core.strategies.covering import Covering
from pubsift.core.strategies.flooding import Flooding
from pubsift.core.strategies.identity import Identity
from pubsift.core.strategies.merging import Merging
from pubsift.core.strategies.simple import Simple

StrategyFactory = Callable[[RoutingTable, Callable[[str], bool]], Strategy]

STRATEGIES: dict[str, StrategyFactory] = {
    "flooding": Flooding,
    "simple": Simple,
    "identity": Identity,
    "covering": Covering,
    "merging": Merging,
    "merging-imperfect": partial(Merging, imperfect=True),
}


def strategy_factory(name: str | StrategyFactory) -> StrategyFactory:
    """The factory registered as ``name`` (or ``name`` itself if it is a factory)."""
    if callable(name):
        return name
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ValueError(
            f"unknown routing strategy {name!r}; known: {', '.join(STRATEGIES)}"
        ) from None


__all__ = [
    "STRATEGIES",
    "Covering",
    "Flooding",
    "Identity",
    "Merging",
    "Outbox",
    "Simple",
    "Strategy",
    "StrategyFactory",
    "activation",
    "generate",
    "strategy_factory",
]
