"""The cost of the authorization check per subscription (docs/protocol.md §10):
``Authorizer.check`` for a ``sub`` of an identity with many authorized records filters,
through the model's index (``RecordsIndex.covering``: candidates are the authorized filters
matching the subscription's witness event, Mühl Fig. 4.7), against the baseline of a
linear scan calling ``covers`` on the authorized filters until one covers it (the same
``Authorizer.check``, its index swapped for the scan).

Run: ``.venv/bin/python bench/auth.py [--sizes 10,1000,10000] [--subs 500] [--quick]
[--json PATH]`` (``bench/harness.py``: CPU time, a warm-up run, the median of
``--repeats``, spread printed). Authorized filters: entitlements as operators write them
(60 % ``symbol = "Sn"``, 20 % ``symbol = "Sn" and price <= p``, 20 % ``symbol prefix
"Pn"``); subscriptions: half inside a random entitlement (``symbol = "Sn" and price > x``,
``... and price < y``, ``symbol prefix "PnX"``), half outside every one (an unknown
symbol, or no symbol at all: the scan's worst case, it tries every filter). The scan
is slow at large sizes, so it runs on the first k subscriptions (one run lasting about
``--baseline-seconds``); each ratio compares both on those very k, and every answer of
the scan is compared with the index's.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Hashable
from typing import Any

from harness import Bench, ratio, time_it
from pubsift.adapters.broker.auth import Authorizer
from pubsift.adapters.broker.config import ClientIdentity
from pubsift.core.index import LinearIndex
from pubsift.core.messages import Sub
from pubsift.core.registry import load_model


class CoveringScan(LinearIndex[Any]):
    """The baseline: ``covers`` on each authorized filter in turn, stopping at the first
    that covers (all ``Authorizer.check`` asks of ``covering``)."""

    def covering(self, f: Any) -> set[Hashable]:
        covers = self.model.covers
        for g, k in self._pairs:
            if covers(g, f):
                return {k}
        return set()


def authorized(n: int, rng: random.Random) -> list[tuple[str, str]]:
    """(kind, filter text) of ``n`` entitlements."""
    out = []
    for i in range(n):
        k = rng.random()
        if k < 0.6:
            out.append(("eq", f'symbol = "S{i}"'))
        elif k < 0.8:
            out.append(("eq-price", f'symbol = "S{i}" and price <= {rng.randint(50, 500)}'))
        else:
            out.append(("prefix", f'symbol prefix "P{i}"'))
    return out


def subscriptions(auth: list[tuple[str, str]], count: int, rng: random.Random) -> list[str]:
    """Half inside a random entitlement, half outside every one."""
    out = []
    for _ in range(count):
        i = rng.randrange(len(auth))
        kind, text = auth[i]
        if rng.random() < 0.5:
            if kind == "eq":
                out.append(f"{text} and price > {rng.randint(1, 40)}")
            elif kind == "eq-price":
                out.append(f'symbol = "S{i}" and price < {rng.randint(10, 50)}')
            else:
                out.append(f'symbol prefix "P{i}X"')
        elif rng.random() < 0.6:
            out.append(f'symbol = "T{i}" and price > {rng.randint(1, 40)}')
        else:
            out.append(f"price > {rng.randint(1, 400)}")
    return out


def us(t: Any) -> str:
    """Microseconds per item, ±half the spread."""
    return f"{t.per_item * 1e6:,.1f} ±{t.spread / 2:.0%}"


def main(argv: list[str] | None = None) -> int:
    bench = Bench("auth", __doc__, argv)
    bench.parser.add_argument(
        "--sizes", default="10,1000,10000", help="authorized filters of the identity"
    )
    bench.parser.add_argument("--subs", type=int, default=None, help="subscriptions (500)")
    bench.parser.add_argument(
        "--baseline-seconds",
        type=float,
        default=None,
        help="about how long one run of the scan lasts (default 1.0; quick: 0.2)",
    )
    args = bench.parse()
    budget = args.baseline_seconds or (0.2 if args.quick else 1.0)
    n_subs = args.subs or 500
    model = load_model("records")
    models = {"records": model}
    print("CPU time per subscription, median of", args.repeats, "runs after a warm-up")
    print(
        f"{'filters':>8s} {'index µs/sub':>16s} {'checks/s':>12s} {'scan µs/sub':>16s} "
        f"{'k':>5s} {'ratio':>8s} {'allowed':>8s}"
    )
    status = 0
    for n in (int(x) for x in args.sizes.split(",")):
        rng = random.Random(n)
        entitlements = authorized(n, rng)
        ident = ClientIdentity(
            "many", "t", subscribe={"records": tuple(t for _, t in entitlements)}
        )
        auth = Authorizer((ident,), models)
        grant = auth.grants[0]
        scan_grant = Authorizer((ident,), models).grants[0]
        scan = CoveringScan(model)
        for pair in grant.subscribe["records"]:
            scan.add(*pair)
        scan_grant.subscribe["records"] = scan
        subs = [
            Sub("c", "records", model.parse_filter(s))
            for s in subscriptions(entitlements, n_subs, rng)
        ]

        def run(g: Any, msgs: list[Sub]) -> list[str | None]:
            return [auth.check(g, m, models) for m in msgs]

        t0 = time.process_time()
        run(scan_grant, subs[:20])
        per = (time.process_time() - t0) / 20
        k = max(20, min(len(subs), int(budget / max(per, 1e-7))))
        sample = subs[:k]
        answers = run(grant, subs)
        if answers[:k] != run(scan_grant, sample):
            print(f"{n}: the index and the scan disagree")
            status = 1
        allowed = sum(a is None for a in answers) / len(answers)
        inputs = f"{n} authorized filters, first {k} of {len(subs)} subscriptions"
        t_all = time_it(
            lambda g=grant: run(g, subs), len(subs), f"{n} filters, all subs", args.repeats
        )
        t_ix = time_it(lambda g=grant: run(g, sample), k, inputs, args.repeats)
        t_scan = time_it(lambda g=scan_grant: run(g, sample), k, inputs, args.repeats)
        r = ratio(t_ix, t_scan)
        print(
            f"{n:>8d} {us(t_all):>16s} {t_all.rate:>12,.0f} {us(t_scan):>16s} {k:>5d} "
            f"{r:>7.1f}x {allowed:>8.0%}"
        )
        bench.row(filters=n, index=t_all, index_on_k=t_ix, scan_on_k=t_scan, ratio=r)
        bench.headline(
            f"authorization check per sub, {n:,} authorized filters, index vs covers scan",
            f"{t_all.per_item * 1e6:,.1f} µs/sub ({r:,.1f}×)",
        )
    return bench.finish(status)


if __name__ == "__main__":
    sys.exit(main())
