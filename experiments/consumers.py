"""The consumers of Mühl's experiments (Mühl 2002, Large-Scale Content-Based Publish/Subscribe
Systems, §6.2.2, §6.3.5 and Table 6.3).

m stocks ``S000`` ... ``S999``; each consumer has k random but distinct subscriptions, one
per stock:

* *quote subscriptions* ``symbol = S`` (all quotes of one stock);
* *quote-interval subscriptions* ``symbol = S and price in [50 - t1, 50 + t2]`` with
  t1, t2 uniform in [0, 50] (§6.3.5). Every interval contains 50, so two of them on the
  same stock always have a perfect merger, and one covers the other half of the time.

Locality (§6.5.1, Table 6.3): the three subnets below the root router draw their stocks
from the ranges ``[0, d·m)``, ``[(1-d)/2·m, (1+d)/2·m)`` and ``[(1-d)·m, m)``; d = 1/3
gives disjoint interests, d = 1 none of locality.
"""

from __future__ import annotations

import random
from fractions import Fraction

from pubsift.models.constraints import Constraint, Interval, Op
from pubsift.models.records import RecordFilter

KINDS = ("quote", "quote-interval")
#: Table 6.3's values of d.
TABLE_6_3 = (Fraction(1, 3), 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def stock(i: int) -> str:
    return f"S{i:03d}"


def quote(i: int) -> RecordFilter:
    """``symbol = S<i>``."""
    return RecordFilter.of({"symbol": Constraint(Op.EQ, stock(i))})


def quote_interval(i: int, t1: float, t2: float) -> RecordFilter:
    """``symbol = S<i> and price in [50 - t1, 50 + t2]`` (canonical: ``=`` if t1 = t2 = 0)."""
    lo, hi = 50.0 - t1, 50.0 + t2
    price = Constraint(Op.EQ, lo) if lo == hi else Constraint(Op.IN_RANGE, Interval(lo, hi))
    return RecordFilter.of({"symbol": Constraint(Op.EQ, stock(i)), "price": price})


def subnet_range(subnet: int, d: float, m: int) -> tuple[int, int]:
    """The stocks ``[lo, hi)`` of subnet 0, 1 or 2 for locality ``d`` (Table 6.3)."""
    if not 1 / 3 - 1e-9 <= d <= 1:
        raise ValueError(f"locality d must lie in [1/3, 1], got {d}")
    lo = (0.0, (1 - d) / 2, 1 - d)[subnet]
    return round(lo * m), round((lo + d) * m)


def interests(
    rng: random.Random, kind: str, stocks: range, k: int, prices: random.Random
) -> tuple[RecordFilter, ...]:
    """k random distinct subscriptions of ``kind`` over ``stocks``. The stocks come from
    ``rng`` and the intervals from ``prices``, so both kinds pick the same stocks."""
    if kind not in KINDS:
        raise ValueError(f"unknown subscription kind {kind!r}; known: {', '.join(KINDS)}")
    if len(stocks) < k:
        raise ValueError(f"{k} distinct subscriptions need at least {k} stocks, got {len(stocks)}")
    chosen = rng.sample(stocks, k)
    if kind == "quote":
        return tuple(quote(i) for i in chosen)
    return tuple(quote_interval(i, prices.uniform(0, 50), prices.uniform(0, 50)) for i in chosen)
