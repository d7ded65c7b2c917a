"""Columnar batch matching of records wire texts against the per-row index path (DESIGN.md §2.4: batch entry points).

    .venv/bin/python bench/records_batch.py [--sizes 1000,10000] [--events 20000]
                                            [--batch 10000] [--mix quotes|all]
                                            [--quick] [--json PATH]

The Spark job's route stage receives Arrow batches whose rows hold the events' wire form
as JSON text (``json.dumps(model.dump_event(e))``). For each number of Mühl's quote and
quote-interval subscriptions (``workload.subscriptions`` with ``Mix(quote=0.5,
interval=0.5)``; with ``--mix all`` the default ``Mix()``), drawn from the whole 5-year
S&P 500 quotes file, the same sample of quote events (drawn over the whole file) is
matched by

* (a) **per row**: ``index.match(model.load_event(json.loads(wire)))`` for each wire,
  the answers kept in a list (what a ``mapInPandas`` loop over ``FilterIndex.match``
  does);
* (b) **batch**: ``index.match_wire_batch(batch)`` on pyarrow string arrays of
  ``--batch`` wires (made before timing: the job receives them so), the answers kept
  as its (rows, keys) arrays;
* (c) ``index.match`` alone on the events loaded beforehand, for reference (what (a)
  spends outside parsing).

(b) picks, per chunk, the faster of two ways to match the parsed rows, measured on the
index's own chunks (``ways.Ways``): walked row by row by the compiled walk, or
column-wise; "walked" and "column-wise" time (b) with the way fixed, and "chosen" is the
way (b) found faster (lower CPU time per row).

The sample keeps the file's order (by symbol, then date; the event store keeps it), and
the same events are also timed in the order a feed publishes them (by date, then symbol:
more cache misses for the per-row walk). CPU time of this process, warm-up, median of
``--repeats`` runs and spread by ``bench/harness.py``; "b/a" is the bar it was built to
(at least 3× at 10k subscriptions). Every batch's answer is compared with the per-row answer (the
same (row, key) pairs); exit status 1 if any differs.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from unittest import mock

import pyarrow as pa
from harness import Bench, ratio, time_it
from pubsift.models.records import RecordsModel, plans, ways
from pubsift.models.records.workload import (
    Mix,
    load_quotes,
    quotes_path,
    sample_events,
    subscriptions,
)
from rich.console import Console
from rich.table import Table

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "quotes"
MIXES = {"quotes": Mix(quote=0.5, interval=0.5, prefix=0, portfolio=0, volume=0), "all": Mix()}


def pairs_of(answers: list[set]) -> list[tuple[int, object]]:
    return sorted((i, k) for i, keys in enumerate(answers) for k in keys)


def run(
    bench: Bench,
    sizes: list[int],
    n_events: int,
    batch: int,
    seed: int,
    repeats: int,
    mix: str,
    console: Console,
) -> int:
    try:
        path = quotes_path(five_years=True, directory=DATA)
    except FileNotFoundError as err:
        return bench.skip(str(err).split(":")[0] + f" ({DATA.resolve()})")
    t = time.process_time()
    quotes = load_quotes(path)
    console.print(
        f"loaded {len(quotes):,} quotes from {path.name} in {time.process_time() - t:.1f} s"
    )
    model = RecordsModel()
    sample = sample_events(quotes, n_events, seed=seed)  # over the whole file, file order
    orders = {"file": sample, "date": sorted(sample, key=lambda e: (e["date"], e["symbol"]))}
    table = Table(
        title=f"records wire batches, {mix} subscriptions, {len(sample):,} quote "
        f"events in batches of {batch:,}, seed {seed}, CPU time, median of "
        f"{repeats} (±half the spread)"
    )
    for col in (
        "subs",
        "order",
        "hits/ev",
        "(a) per-row ev/s",
        "(b) batch ev/s",
        "b/a",
        "(c) match alone ev/s",
        "walked ev/s",
        "column-wise ev/s",
        "chosen",
    ):
        table.add_column(col, justify="right", no_wrap=True)
    failures = 0
    for n in sizes:
        index = model.new_index()
        for k, f in enumerate(subscriptions(quotes, n, seed=seed, mix=MIXES[mix])):
            index.add(f, k)
        for order, events in orders.items():
            wires = [json.dumps(model.dump_event(e)) for e in events]
            batches = [
                pa.array(wires[i : i + batch], pa.string()) for i in range(0, len(wires), batch)
            ]
            loaded = [model.load_event(json.loads(w)) for w in wires]
            match, load = index.match, model.load_event
            loads = json.loads

            def per_row() -> list[set]:
                return [match(load(loads(w))) for w in wires]

            def batched() -> list:
                return [index.match_wire_batch(b) for b in batches]

            want = pairs_of(per_row())
            got, base = [], 0
            for b, (rows, keys) in zip(batches, batched()):
                got.extend(zip((rows + base).tolist(), keys.tolist()))
                base += len(b)
            if sorted(got) != want:
                failures += 1
                console.print(
                    f"[red]match_wire_batch differs from the per-row path at {n} "
                    f"subscriptions ({order} order)[/red]"
                )
            inputs = f"{len(wires):,} quote wires ({order} order), {n:,} subscriptions"
            t_row = time_it(per_row, len(wires), inputs, repeats)
            t_batch = time_it(batched, len(wires), inputs, repeats, min_seconds=0.2)
            t_match = time_it(lambda: [match(e) for e in loaded], len(wires), inputs, repeats)
            chosen = ways.ways(index)
            cost = dict(chosen.cost)
            # each way alone (the batch path picks the faster, measured: ways.Ways)
            t_ways = {}
            for way in (ways.WALK, ways.COLUMNS):
                if way == ways.WALK and plans.ENGINE is None:
                    t_ways[way] = None
                    continue
                with mock.patch.object(ways, "FORCE", way):
                    index._columnar = None  # a new Ways, forced
                    t_ways[way] = time_it(batched, len(wires), inputs, repeats, min_seconds=0.2)
            index._columnar = None
            r = ratio(t_batch, t_row)
            best = min(
                (w for w in cost if cost[w] is not None), key=lambda w: cost[w], default=None
            )
            table.add_row(
                f"{n:,}",
                order,
                f"{len(want) / len(wires):.1f}",
                t_row.fmt_rate(),
                t_batch.fmt_rate(),
                f"{r:.1f}×",
                t_match.fmt_rate(),
                "-" if t_ways[ways.WALK] is None else t_ways[ways.WALK].fmt_rate(),
                t_ways[ways.COLUMNS].fmt_rate(),
                str(best),
            )
            bench.row(
                subs=n,
                mix=mix,
                order=order,
                events=len(wires),
                batch=batch,
                hits_per_event=len(want) / len(wires),
                per_row=t_row,
                match_wire_batch=t_batch,
                match_alone=t_match,
                ratio_batch_per_row=r,
                walked=t_ways[ways.WALK],
                column_wise=t_ways[ways.COLUMNS],
                chosen=best,
                cost_per_row_us={w: None if c is None else c * 1e6 for w, c in cost.items()},
            )
            if order == "file" and mix == "quotes":
                bench.headline(
                    f"records match_wire_batch, {n // 1000}k quote subscriptions",
                    f"{t_batch.rate:,.0f} events/s, {r:.1f}× the per-row "
                    f"json.loads + load_event + match ({t_row.rate:,.0f} events/s)",
                )
    console.print(table)
    if failures:
        console.print(f"[red]{failures} answers differ[/red]")
        return bench.finish(1)
    console.print("every batch's (row, key) pairs equal the per-row path's")
    return bench.finish(0)


def main(argv: list[str] | None = None) -> int:
    bench = Bench("records_batch", __doc__, argv)
    ap = bench.parser
    ap.add_argument(
        "--sizes",
        default="1000,10000",
        help="comma-separated numbers of subscriptions (default: 1000,10000)",
    )
    ap.add_argument(
        "--events",
        type=int,
        default=None,
        help="quote events sampled (default: 20000; quick: 10000)",
    )
    ap.add_argument("--batch", type=int, default=10000, help="wires per Arrow batch")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--mix",
        choices=sorted(MIXES),
        default="quotes",
        help="quotes: Mühl's quote and quote-interval subscriptions (the bar "
        "of the ratio); all: workload.Mix() (prefixes, portfolios, volumes too)",
    )
    args = bench.parse()
    events = args.events or (10000 if args.quick else 20000)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes takes numbers separated by commas, got {args.sizes!r}")
    if not sizes or min(sizes) < 1 or events < 1 or args.batch < 1:
        ap.error("sizes, --events and --batch must be positive")
    console = Console(width=max(Console().width, 130))
    return run(bench, sizes, events, args.batch, args.seed, args.repeats, args.mix, console)


if __name__ == "__main__":
    sys.exit(main())
