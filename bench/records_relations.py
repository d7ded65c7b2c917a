"""Throughput of the records constraint algebra (covers / overlaps / identical) on the pairs
routing tables meet most (equality, ranges, sets, prefixes), against the baseline of
deciding the same pairs through the general value sets (``valuesets.value_set``, cached).

Run: ``.venv/bin/python bench/records_relations.py``
"""
from __future__ import annotations

import random
import time

from pubsift.models.records import relations as rel
from pubsift.models.records.constraints import Constraint as C
from pubsift.models.records.constraints import Interval, Op
from pubsift.models.records.values import skey
from pubsift.models.records.valuesets import value_set


def workload(n: int, seed: int = 1) -> list[tuple[C, C]]:
    rnd = random.Random(seed)
    symbols = [f"S{i}" for i in range(50)]

    def one() -> C:
        k = rnd.random()
        if k < 0.3:
            return C(Op.EQ, rnd.choice(symbols))
        if k < 0.6:
            lo = rnd.randint(0, 90)
            return C(Op.IN_RANGE, Interval(lo, lo + rnd.randint(1, 20)))
        if k < 0.75:
            return C(rnd.choice([Op.LT, Op.LE, Op.GT, Op.GE]), rnd.randint(0, 100))
        if k < 0.9:
            return C(Op.IN_SET, frozenset(skey(rnd.choice(symbols)) for _ in range(3)))
        return C(Op.PREFIX, rnd.choice(symbols)[: rnd.randint(1, 3)])

    return [(one(), one()) for _ in range(n)]


def baseline(fn_name: str):
    def covers(a, b):
        return value_set(b).issubset(value_set(a))

    def overlaps(a, b):
        return not value_set(a).isdisjoint(value_set(b))

    def identical(a, b):
        return value_set(a) == value_set(b)

    return {"covers": covers, "overlaps": overlaps, "identical": identical}[fn_name]


def rate(fn, pairs, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for a, b in pairs:
            fn(a, b)
        best = min(best, time.perf_counter() - t)
    return len(pairs) / best


def main() -> None:
    pairs = workload(20_000)
    for a, b in pairs:  # warm the value-set caches for the baseline
        value_set(a), value_set(b)
    print(f"{'relation':10s} {'pairs/s':>12s} {'baseline/s':>12s} {'ratio':>7s}")
    for name in ("covers", "overlaps", "identical"):
        fast = rate(getattr(rel, name), pairs)
        base = rate(baseline(name), pairs)
        assert all(getattr(rel, name)(a, b) == baseline(name)(a, b) for a, b in pairs)
        print(f"{name:10s} {fast:12,.0f} {base:12,.0f} {fast / base:6.1f}x")


if __name__ == "__main__":
    main()
