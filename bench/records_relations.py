"""Throughput of the shared constraint algebra (covers / overlaps / identical) on the pairs
routing tables meet most (equality, ranges, sets, prefixes), against the baseline of
deciding the same pairs through the general value sets (``valuesets.value_set``, cached).

Run: ``.venv/bin/python bench/records_relations.py [--pairs 20000] [--quick] [--json PATH]``
(``bench/harness.py``: CPU time, a warm-up run, the median of ``--repeats``, spread
printed; both sides on the same pairs, answers compared).
"""

from __future__ import annotations

import random
import sys

from harness import Bench, ratio, time_it
from pubsift.models.constraints import Constraint as C
from pubsift.models.constraints import Interval, Op, skey, value_set
from pubsift.models.constraints import relations as rel


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


def main(argv: list[str] | None = None) -> int:
    bench = Bench("records_relations", __doc__, argv)
    bench.parser.add_argument(
        "--pairs", type=int, default=None, help="constraint pairs (default 20000; quick: 5000)"
    )
    args = bench.parse()
    pairs = workload(args.pairs or (5_000 if args.quick else 20_000))
    for a, b in pairs:  # warm the value-set caches for the baseline
        value_set(a), value_set(b)
    inputs = f"{len(pairs)} constraint pairs"
    print(f"CPU time, median of {args.repeats} runs after a warm-up, ±half the spread")
    print(f"{'relation':10s} {'pairs/s':>16s} {'baseline/s':>16s} {'ratio':>7s}")
    status = 0
    for name in ("covers", "overlaps", "identical"):
        fast_fn, base_fn = getattr(rel, name), baseline(name)
        if not all(fast_fn(a, b) == base_fn(a, b) for a, b in pairs):
            print(f"{name}: answers differ from the value sets")
            status = 1
        fast = time_it(lambda: [fast_fn(a, b) for a, b in pairs], len(pairs), inputs, args.repeats)
        base = time_it(lambda: [base_fn(a, b) for a, b in pairs], len(pairs), inputs, args.repeats)
        r = ratio(fast, base)
        print(f"{name:10s} {fast.fmt_rate():>16s} {base.fmt_rate():>16s} {r:6.1f}x")
        bench.row(relation=name, algebra=fast, value_sets=base, ratio=r)
        if name == "covers":
            bench.headline(
                "records covers() vs general value sets (cached)",
                f"{fast.rate:,.0f} covers/s ({r:.1f}×)",
            )
    return bench.finish(status)


if __name__ == "__main__":
    sys.exit(main())
