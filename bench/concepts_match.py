"""Matching throughput of the concepts model with subscriptions in mixed currencies and
units, against the naive way, in the same run (docs/concepts.md, "Index and benchmark").

    .venv/bin/python bench/concepts_match.py [--subscriptions 10000] [--events 2000]
                                             [--quick] [--json PATH]

Events: the real S&P 500 daily quotes (``../shared/data/quotes``, prices in USD, volumes in
shares), enriched by the publisher adapter with the publisher's context. Exchange rates:
a synthetic monthly table (EUR, GBP, JPY per USD, drifting over the year; not market data),
so prices are converted at each quote's date. Subscriptions: a random symbol for most, a
price bound or range in USD, EUR, GBP or JPY (some in thousands: scale 1000), and for half
a volume bound in shares, dozens or thousands of shares; each subscriber's context states
its currency and volume unit.

* concepts index: ``ConceptsModel.new_index().match`` — each event value is converted once
  per target context the index knows (lazy conversion), then the records index is probed;
* linear: ``LinearIndex`` over ``matches`` (lazy conversion cached per event, one filter
  after another);
* naive: for every subscription, every attribute of the event is converted into the
  subscriber's context, then the subscription's constraints (constants in the
  subscriber's own units and currency) are evaluated.

Relations (a second figure): ``covering``, ``covered_by``, ``identical``,
``merge_candidates`` and ``overlapping`` of ``--queries`` new subscriptions of the same workload (not held),
per query, the index against ``LinearIndex`` (the model's hooks over every held filter),
on the same queries; every answer is compared.

Timing by ``bench/harness.py``: CPU time of this process (``time.process_time``), each
event's conversion cache emptied before every run, a warm-up run, the median of
``--repeats`` runs, the spread printed. The baselines run on the first
``--baseline-events`` events, and **both ratios divide their time by the index's on the
very same events**; the headline ratio is against the model's own ``LinearIndex`` (the
fair baseline), the naive one is the worst case. Every delivery set of the index is
compared with both baselines' (exit status 1 if any differs).
"""

from __future__ import annotations

import csv
import itertools
import random
import sys
import time
from datetime import datetime
from pathlib import Path

from harness import Bench, ratio, time_it
from pubsift.adapters.concepts import Publisher
from pubsift.core.errors import ConversionError
from pubsift.core.index import LinearIndex
from pubsift.models.concepts import (
    ClientContext,
    ConceptsModel,
    FilterBuilder,
    RatePeriod,
    RateTable,
    parse_text,
)
from pubsift.models.constraints import ABSENT

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "quotes"
QUOTES = DATA / "all_stocks_1yr_2017-02-08_2018-02-07.csv"
VOCABULARY = {
    "close": "FinalPrice",
    "open": "OpenPrice",
    "high": "HighPrice",
    "low": "LowPrice",
    "volume": "TradedVolume",
    "Name": "Symbol",
    "date": "DateOfIssue",
}
START = {"EUR": 0.94, "GBP": 0.80, "JPY": 113.0}
END = {"EUR": 0.81, "GBP": 0.71, "JPY": 109.0}


QUERIES = ("covering", "covered_by", "identical", "merge_candidates", "overlapping")


def synthetic_rates() -> RateTable:
    """Monthly rates per USD from 2017-01 to 2018-03, open-ended at both ends."""
    months = [datetime(2017 + (m // 12), m % 12 + 1, 1) for m in range(15)]
    rates = {}
    for cur in START:
        periods = []
        for i, start in enumerate(months):
            r = START[cur] + (END[cur] - START[cur]) * i / (len(months) - 1)
            periods.append(
                RatePeriod(
                    None if i == 0 else start, months[i + 1] if i + 1 < len(months) else None, r
                )
            )
        rates[cur] = periods
    return RateTable("USD", rates)


class LocalBuilder(FilterBuilder):
    """Keeps constants in the subscriber's own context (for the naive baseline)."""

    def _target(self, c, kind, src):
        return src


def workload(n_subs: int, n_events: int, seed: int):
    rnd = random.Random(seed)
    with open(QUOTES, newline="") as fh:
        rows = list(itertools.islice(csv.DictReader(fh), 60_000))
    rnd.shuffle(rows)
    rows = rows[:n_events]
    symbols = sorted({r["Name"] for r in rows})
    closes = {}
    for r in rows:
        closes.setdefault(r["Name"], []).append(float(r["close"]))
    subs = []
    for _ in range(n_subs):
        cur = rnd.choice(["USD", "EUR", "GBP", "JPY"])
        scale = rnd.choice([1, 1, 1000])
        vol_unit = rnd.choice(["count", "dozen", "kilocount"])
        ctx = ClientContext.of({"currency": cur, "scale": scale, "units": {"[]": vol_unit}})
        rate = {"USD": 1.0, **START}[cur] / scale
        sym = rnd.choice(symbols)
        price = rnd.choice(closes[sym]) * rate
        conds = []
        if rnd.random() < 0.8:
            conds.append(f'Symbol = "{sym}"')
        kind = rnd.random()
        if kind < 0.4:
            conds.append(f"FinalPrice < {price * rnd.uniform(0.9, 1.1):.4g}")
        elif kind < 0.8:
            lo = price * rnd.uniform(0.8, 1.0)
            conds.append(f"FinalPrice between {lo:.4g} and {lo * rnd.uniform(1.05, 1.3):.4g}")
        else:
            conds.append(f"HighPrice > {price:.4g}")
        if rnd.random() < 0.5:
            shares = (
                rnd.choice([1e5, 1e6, 5e6]) / {"count": 1, "dozen": 12, "kilocount": 1000}[vol_unit]
            )
            conds.append(f"TradedVolume > {shares:.4g}")
        text = "StockQuote where " + " and ".join(conds)
        subs.append((text, ctx))
    return rows, subs


def main(argv: list[str] | None = None) -> int:
    bench = Bench("concepts_match", __doc__, argv)
    ap = bench.parser
    ap.add_argument("--subscriptions", type=int, default=None, help="default 10000")
    ap.add_argument("--events", type=int, default=None, help="default 2000; quick: 500")
    ap.add_argument(
        "--baseline-events",
        type=int,
        default=None,
        help="events the baselines (and the index, for the ratios) run on "
        "(default: 100; quick: 20)",
    )
    ap.add_argument(
        "--queries",
        type=int,
        default=None,
        help="new subscriptions the relation queries are timed on (default 50; quick: 10)",
    )
    ap.add_argument("--seed", type=int, default=5)
    args = bench.parse()
    n_subs = args.subscriptions or 10000
    if not QUOTES.exists():
        return bench.skip(f"real data absent: {QUOTES.resolve()} (see ../shared/data/README.md)")
    model = ConceptsModel(rates=synthetic_rates(), conversions={})
    n_q = args.queries or (10 if args.quick else 50)
    # the first n_subs subscriptions are the same whatever n_q is (drawn one after another)
    rows, subs = workload(n_subs + n_q, args.events or (500 if args.quick else 2000), args.seed)
    subs, new_subs = subs[:n_subs], subs[n_subs:]
    pub = Publisher(
        model,
        "StockQuote",
        VOCABULARY,
        {"currency": "USD", "units": {"[]": "count"}},
        time_field="date",
    )
    events = [pub.enrich(r) for r in rows]
    filters = [model.parse_filter(t, client=c) for t, c in subs]
    local = LocalBuilder(model.ontology, model.manager)
    naive_filters = [local.build(parse_text(t), c) for t, c in subs]
    onto, manager = model.ontology, model.manager
    sub_ctx = [
        {o.concept: c.context_for(onto, o.concept) for _, o in events[0].walk() if not o.is_complex}
        for _, c in subs
    ]

    def naive(e):
        out = set()
        for i, f in enumerate(naive_filters):
            ctxs = sub_ctx[i]
            vals = {}
            for path, o in e.walk():  # every attribute, for every subscription
                if o.is_complex:
                    continue
                try:
                    vals[path] = manager.convert(
                        onto.kind(o.concept), o.value, o.context, ctxs[o.concept], e.time
                    )
                except ConversionError:
                    vals[path] = None
            if onto.is_a(e.concept, f.concept) and all(
                c.constraint.matches(vals.get(c.path, ABSENT)) for c in f.clauses
            ):
                out.add(i)
        return out

    index = model.new_index()
    t0 = time.process_time()
    for i, f in enumerate(filters):
        index.add(f, i)
    t_add = time.process_time() - t0
    linear = LinearIndex(model)
    for i, f in enumerate(filters):
        linear.add(f, i)

    def fresh(evs):
        for e in evs:  # the per-event conversion cache starts empty
            e._cache.clear()

    n_base = min(len(events), args.baseline_events or (20 if args.quick else 100))
    base = events[:n_base]
    fresh(events)
    r_idx = [index.match(e) for e in events]
    fresh(base)
    r_lin = [linear.match(e) for e in base]
    fresh(base)
    r_nai = [naive(e) for e in base]
    bad_lin = sum(a != b for a, b in zip(r_idx, r_lin))
    bad_nai = sum(a != b for a, b in zip(r_idx, r_nai))
    reps = args.repeats
    every = f"{len(events)} quotes"
    same = f"first {n_base} quotes"
    t_all = time_it(
        lambda: [index.match(e) for e in events],
        len(events),
        every,
        reps,
        setup=lambda: fresh(events),
    )
    t_idx = time_it(
        lambda: [index.match(e) for e in base],
        n_base,
        same,
        reps,
        min_seconds=0.1,
        setup=lambda: fresh(base),
    )
    t_lin = time_it(
        lambda: [linear.match(e) for e in base],
        n_base,
        same,
        reps,
        warmup=0,
        setup=lambda: fresh(base),
    )
    t_nai = time_it(
        lambda: [naive(e) for e in base],
        n_base,
        same,
        max(1, reps - 2),
        warmup=0,
        setup=lambda: fresh(base),
    )
    r_l, r_n = ratio(t_idx, t_lin), ratio(t_idx, t_nai)

    # relations: the index's queries against the scan's, on the same new subscriptions
    queries = [model.parse_filter(t, client=c) for t, c in new_subs]
    rel: dict[str, tuple] = {}
    bad_rel = 0
    answers: dict[str, list] = {}
    for q in QUERIES:
        what = f"{len(queries)} new subscriptions"

        def run(side, idx):
            answers[side] = [getattr(idx, q)(f) for f in queries]

        t_q = time_it(lambda: run("index", index), len(queries), what, reps)
        t_s = time_it(
            lambda: run("scan", linear), len(queries), what, 1, warmup=0 if args.quick else 1
        )
        got, want = answers["index"], answers["scan"]
        bad_rel += sum(a != b for a, b in zip(got, want))
        rel[q] = (t_q, t_s, ratio(t_q, t_s), sum(map(len, got)) / len(queries))
    hits = sum(map(len, r_idx)) / len(events)
    print(
        f"concepts matching: {len(filters)} subscriptions in USD/EUR/GBP/JPY (scale 1 or "
        f"1000) and shares/dozens/thousands; {len(events)} real quotes "
        f"(baselines and ratios on the first {n_base}); {hits:.2f} deliveries per event; "
        f"index build {t_add / len(filters) * 1e6:.0f} µs per subscription; "
        f"{len(index._names)} (path, context) pairs converted per event at most; "
        f"CPU time, median of {reps} runs (naive: {len(t_nai.seconds)}; relation scans: 1), "
        "±half the spread"
    )
    print(f"  {'concepts index (all)':30s} {t_all.fmt_rate():>16s} events/s")
    print(f"  {'concepts index (first ' + str(n_base) + ')':30s} {t_idx.fmt_rate():>16s} events/s")
    print(f"  {'LinearIndex over matches':30s} {t_lin.fmt_rate(1):>16s} events/s")
    print(f"  {'naive (convert all)':30s} {t_nai.fmt_rate(1):>16s} events/s")
    print(f"  ratio index / LinearIndex (fair baseline, same {n_base} events): {r_l:,.1f}x")
    print(f"  ratio index / naive (worst case, same {n_base} events): {r_n:,.1f}x")
    print(
        f"  relation queries per query, index vs LinearIndex scan, on the same "
        f"{len(queries)} new subscriptions (ms, ±half the spread):"
    )
    for q, (t_q, t_s, r, n) in rel.items():
        print(
            f"    {q:18s} {t_q.fmt_ms(3):>14s} vs {t_s.fmt_ms(1):>14s}  {r:8,.0f}x  "
            f"({n:.1f} keys per answer)"
        )
    print(f"  answers differing from the index: linear {bad_lin}, naive {bad_nai}")
    print(f"  relation answers differing from the scan's: {bad_rel}")
    bench.row(
        subs=len(filters),
        events=len(events),
        hits_per_event=hits,
        add_us=t_add / len(filters) * 1e6,
        index_all=t_all,
        index=t_idx,
        linear=t_lin,
        naive=t_nai,
        ratio_linear=r_l,
        ratio_naive=r_n,
        **{f"{q}_index": t_q for q, (t_q, _, _, _) in rel.items()},
        **{f"{q}_scan": t_s for q, (_, t_s, _, _) in rel.items()},
        **{f"{q}_ratio": r for q, (_, _, r, _) in rel.items()},
    )
    bench.headline(
        f"concepts index vs its LinearIndex over matches, {len(filters) // 1000}k "
        "subscriptions in 4 currencies and 3 units",
        f"{r_l:,.1f}× on the same {n_base} quotes (worst case, convert everything "
        f"per subscription: {r_n:,.0f}×); {t_all.rate:,.0f} events/s",
    )
    per = ", ".join(f"{q} {rel[q][0].per_item * 1e3:.2f} ms ({rel[q][2]:,.0f}×)" for q in QUERIES)
    bench.headline(
        f"concepts covering/covered_by per query, index vs scan, {len(filters) // 1000}k "
        "subscriptions in 4 currencies and 3 units",
        f"{per} per query on the same {len(queries)} new subscriptions",
    )
    return bench.finish(1 if bad_lin or bad_nai or bad_rel else 0)


if __name__ == "__main__":
    sys.exit(main())
