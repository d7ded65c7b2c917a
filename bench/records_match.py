"""Matching throughput of the records index against Mühl's counting and the linear scan.

    .venv/bin/python bench/records_match.py [--sizes 1000,10000,100000] [--events 20000]
                                            [--quick] [--json PATH]

For each number of subscriptions (drawn from the real S&P 500 quotes by
``pubsift.models.records.workload``), the same sample of quote events is matched by

* ``RecordsIndex.match`` (the access tree of ``models/records/index.py``),
* Mühl's predicate counting (Fig. 4.6) over the same per-operator attribute structures
  (``attrindex.AttributeIndex`` holding every distinct attribute filter once), and
* the linear scan: a plain loop calling ``RecordFilter.matches`` on every subscription,

all in this run, on one core, with ``bench/harness.py``: CPU time of this process
(``time.process_time``), each figure the median of ``--repeats`` runs after a warm-up
run, its spread printed as ±half of (max - min) / median. The index is timed on the whole
sample after the untimed passes that build its plans (a node's plan is built once its
unfolded walks have cost as much as building it: the passes go on until one builds no
plan, "settle_passes" in the JSON, then two more as warm-up; the
first pass is shown as "cold"); the timed runs drop each answer as a router does ("index ev/s", with the compiled walk of
``models/records/_walk.pyx`` when it is built; "Python walk ev/s": the same index and plans
walked by the Python walk, ``plans.walk``, timed right after). "answer sets alone
ev/s" builds, on the same events, only each event's answer set from a tuple of its keys
(one hash, one probe and one reference per key, a cache miss per key object once there
are many): a yardstick for what the answers cost. The index can beat it: it copies most
keys from precomputed frozensets, with their stored hashes, table to table. The sample
keeps the order of the file (by symbol, then date), which keeps each stock's structures in
the CPU caches from one event to the next; "by date ev/s" matches the same events in the
order a feed publishes them (by date, then symbol), which costs far more cache misses
(the baselines and ratios use the file order, both sides alike). "kept ev/s"
keeps all answers in a list, as ``match_batch`` must (each answer set is a container the
cyclic garbage collector tracks and walks), and ``match_batch`` is timed against that loop
on the whole sample. "table ev/s" is ``match_batch`` given the same events as one Arrow table
(columns are attributes, as read from Parquet): read column-wise, its rows matched by the
compiled walk one by one or column-wise, whichever ``ways.Ways`` measures faster on
the index's own rows (both are tried in the warm-up; the timed runs include the chooser's
later tries of the slower way), against "table per-row ev/s", the per-row path from that table (``to_pylist``, ``load_event``,
``match``), both on every event. The baselines are slow, so each
runs on the first k events of the sample, k chosen so that one run lasts about
``--baseline-seconds`` (at least 20 events); **each ratio divides the baseline's time by
the index's time on the very same k events** (``ratio`` refuses anything else), and the
baselines' answers are compared with the index's on every one of them. "hits/ev" is the
mean number of matching subscriptions per event; adding and removing all subscriptions is
timed per subscription. A second table times the routing-table queries (covering,
covered_by, identical, overlapping, merge_candidates) of the index against
``LinearIndex`` over the model's hooks, with a seeded sample of the subscriptions as
queries, on the same queries for both, answers compared.
Exit status 1 if any answer differs.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from harness import Bench, Timing, ratio, time_it

try:
    import pyarrow as arrow
except ImportError:  # the table figure needs the spark extra
    arrow = None
from pubsift.core.index import LinearIndex
from pubsift.models.constraints import ABSENT, Constraint
from pubsift.models.records import Record, RecordFilter, RecordsModel, merging, plans, ways
from pubsift.models.records.attrindex import AttributeIndex
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


class Counting:
    """Mühl's matching algorithm (2002, §4.3.8, Fig. 4.6): count, per filter, the satisfied
    attribute filters; a filter matches when its count equals its size."""

    def __init__(self, pairs: Sequence[tuple[RecordFilter, Hashable]]) -> None:
        self.keys: dict[RecordFilter, list[Hashable]] = {}
        for f, k in pairs:
            self.keys.setdefault(f, []).append(k)
        self.attrs: dict[str, AttributeIndex] = {}
        groups: dict[tuple[str, Constraint], list[RecordFilter]] = {}
        for f in self.keys:
            for n, c in f.constraints:
                g = groups.get((n, c))
                if g is None:
                    g = groups[(n, c)] = []
                    self.attrs.setdefault(n, AttributeIndex()).add(c, g)
                g.append(f)
        self.empty = [k for f, ks in self.keys.items() if not f.constraints for k in ks]

    def match(self, event: Record) -> set[Hashable]:
        get = event.get
        counts: dict[RecordFilter, int] = {}
        cget = counts.get
        for n, ai in self.attrs.items():
            for bucket in ai.probe(get(n, ABSENT)):
                for group in bucket:
                    for f in group:
                        counts[f] = cget(f, 0) + 1
        out = set(self.empty)
        for f, m in counts.items():
            if m == len(f.constraints):
                out.update(self.keys[f])
        return out


def linear(pairs: Sequence[tuple[RecordFilter, Hashable]]) -> Callable[[Record], set]:
    def match(event: Record) -> set[Hashable]:
        return {k for f, k in pairs if f.matches(event)}

    return match


QUERIES = ("covering", "covered_by", "identical", "overlapping", "merge_candidates")


def relations(
    index: Any,
    pairs: Sequence[tuple[RecordFilter, Hashable]],
    n_queries: int,
    seed: int,
    budget: float,
    repeats: int,
    table: Table,
    bench: Bench,
    console: Console,
) -> int:
    """Times the routing-table queries of the index against LinearIndex on the same
    subscriptions and the same queries (a seeded sample of them, cut to what the linear
    scan answers in about ``budget`` seconds); returns the number of differences."""
    linear_index = LinearIndex(index.model)
    for f, k in pairs:
        linear_index.add(f, k)
    queries = random.Random(seed).sample([f for f, _ in pairs], min(n_queries, len(pairs)))
    failures = 0
    for name in QUERIES:
        ask_index, ask_linear = getattr(index, name), getattr(linear_index, name)
        merging.cache_clear()
        seen, spent = 0, 0.0  # warm-up of the scan, and the answers
        while seen < len(queries) and (seen < 2 or spent < budget):
            t = time.process_time()
            want = ask_linear(queries[seen])
            spent += time.process_time() - t
            if want != ask_index(queries[seen]):
                failures += 1
                console.print(f"[red]{name} differs from LinearIndex on {queries[seen]!r}[/red]")
            seen += 1
        qs = queries[:seen]
        inputs = f"{seen} queries over {len(pairs):,} subscriptions"
        t_index = time_it(lambda: each(ask_index, qs), seen, inputs, repeats, min_seconds=0.05)
        t_linear = time_it(lambda: each(ask_linear, qs), seen, inputs, repeats, warmup=0)
        keys = sum(len(ask_index(f)) for f in qs) / seen
        r = ratio(t_index, t_linear)
        table.add_row(
            f"{len(pairs):,}",
            name,
            f"{keys:,.1f}",
            t_index.fmt_ms(3),
            f"{t_linear.fmt_ms(1)} ({seen})",
            f"{r:,.0f}×",
        )
        bench.row(
            table="relations",
            subs=len(pairs),
            query=name,
            keys_per_query=keys,
            index=t_index,
            linear=t_linear,
            ratio=r,
        )
    return failures


def unbuilt_plans(index: Any) -> int:
    """The nodes of the records index with children and no plan yet (walked unfolded)."""
    out, stack = 0, [index._root]
    while stack:
        node = stack.pop()
        out += bool(node.children) and node.plan is None
        stack.extend(node.sub.values())
    return out


def settle_plans(index: Any, match: Callable[[Record], set], events: Sequence[Record]) -> int:
    """Untimed passes over the sample until a pass builds no plan (at most 10): the timed
    runs measure the steady state. Returns the passes."""
    left = unbuilt_plans(index)
    for passes in range(1, 11):
        each(match, events)
        now = unbuilt_plans(index)
        if now == 0 or now == left:
            return passes
        left = now
    return 10


def python_walk(match: Callable[[Record], set], events: Sequence[Record]) -> None:
    """``each(match, events)`` with the compiled walk switched off."""
    with mock.patch.object(plans, "ENGINE", None):
        each(match, events)


def each(match: Callable, events: Sequence[Record]) -> None:
    """Matches every event, dropping each answer (as a router does once it has sent the
    event on); the answers are compared outside the timed runs."""
    for e in events:
        match(e)


def baseline(
    name: str,
    matcher: Callable[[Record], set],
    events: Sequence[Record],
    answers: Sequence[set],
    budget: float,
    repeats: int,
    match: Callable,
    console: Console,
) -> tuple[Timing, Timing, int]:
    """Runs ``matcher`` on the first events until ``budget`` seconds have passed (at
    least 20 events; answers compared), then times it and the index's ``match`` on
    exactly those events. Returns (baseline, index on the same events, differences)."""
    seen, spent, failures = 0, 0.0, 0
    while seen < len(events) and (seen < 20 or spent < budget):
        t = time.process_time()
        got = matcher(events[seen])
        spent += time.process_time() - t
        if got != answers[seen]:
            failures += 1
            console.print(f"[red]{name} and index differ on {events[seen]!r}[/red]")
        seen += 1
    evs = events[:seen]
    inputs = f"first {seen:,} of the sampled quote events"
    base = time_it(lambda: each(matcher, evs), seen, inputs, repeats, warmup=0)
    same = time_it(lambda: each(match, evs), seen, inputs, repeats, min_seconds=0.05)
    return base, same, failures


def time_table(
    model: RecordsModel, index: Any, events: list, answers: list, what: str, repeats: int
) -> tuple[Timing | None, Timing]:
    """``match_batch`` over the events as one Arrow table, and the per-row path from the
    same table (``to_pylist``, ``load_event``, ``match``), both on every event; None for
    the table's figure if an answer differs."""
    table = arrow.Table.from_pylist([model.dump_event(e) for e in events])
    match, load = index.match, model.load_event

    def per_row() -> list:
        return [
            match(load({k: v for k, v in r.items() if v is not None})) for r in table.to_pylist()
        ]

    for way in (ways.WALK, ways.COLUMNS):  # each way's answers compared
        index._columnar = None  # a new ways.Ways
        with mock.patch.object(ways, "FORCE", way):
            if index.match_batch(table) != answers:
                return None, time_it(per_row, len(events), what, 1)
    index._columnar = None  # the timed runs choose (each way is tried in the warm-up)
    if per_row() != answers:
        return None, time_it(per_row, len(events), what, 1)
    t_table = time_it(lambda: index.match_batch(table), len(events), what, repeats, warmup=2)
    t_rows = time_it(per_row, len(events), what, repeats)
    return t_table, t_rows


def run(
    bench: Bench,
    sizes: list[int],
    n_events: int,
    seed: int,
    budget: float,
    n_queries: int,
    repeats: int,
    console: Console,
) -> int:
    try:
        path = quotes_path(directory=DATA)
    except FileNotFoundError as err:
        return bench.skip(str(err).split(":")[0] + f" ({DATA.resolve()})")
    t = time.process_time()
    quotes = load_quotes(path)
    console.print(
        f"loaded {len(quotes):,} quotes from {path.name} in {time.process_time() - t:.1f} s"
    )
    events = sample_events(quotes, n_events, seed=seed)
    # the sample keeps the file's order (by symbol, then date); a feed publishes by date
    by_date = sorted(events, key=lambda e: (e["date"], e["symbol"]))
    table = Table(
        title=f"records matching, {len(events):,} quote events, seed {seed}, "
        f"CPU time, median of {repeats} (±half the spread)"
    )
    for col in (
        "subs",
        "filters",
        "hits/ev",
        "index ev/s",
        "Python walk ev/s",
        "answer sets alone ev/s",
        "by date ev/s",
        "cold ev/s",
        "kept ev/s",
        "match_batch ev/s",
        "table ev/s",
        "table per-row ev/s",
        "counting ev/s (k)",
        "linear ev/s (k)",
        "index/counting",
        "index/linear",
        "add µs",
        "remove µs",
    ):
        table.add_column(col, justify="right", no_wrap=True)
    rel_table = Table(
        title=f"routing-table queries, {n_queries} subscriptions as queries "
        "(index and linear on the same queries)"
    )
    for col in ("subs", "query", "keys/query", "index ms", "linear ms (queries)", "linear/index"):
        rel_table.add_column(col, justify="right", no_wrap=True)
    failures = 0
    model = RecordsModel()
    sample = f"{len(events):,} sampled quote events"
    for n in sizes:
        console.print(f"{n:,} subscriptions ...")
        pairs = [(f, k) for k, f in enumerate(subscriptions(quotes, n, seed=seed, mix=Mix()))]
        index = model.new_index()
        t = time.process_time()
        for f, k in pairs:
            index.add(f, k)
        t_add = time.process_time() - t
        match = index.match

        t = time.process_time()
        answers = [match(e) for e in events]  # the cold pass builds the plans
        cold = len(events) / (time.process_time() - t)
        settle = settle_plans(index, match, events)
        t_index = time_it(
            lambda: each(match, events), len(events), sample, repeats, warmup=2, min_seconds=0.2
        )
        # the same index and plans walked by the Python walk (plans.walk) instead of the
        # compiled one (models/records/_walk.pyx)
        t_python = None
        if plans.ENGINE is not None:
            t_python = time_it(
                lambda: python_walk(match, events),
                len(events),
                sample,
                repeats,
                warmup=2,
                min_seconds=0.2,
            )
        # the answers' cost as a yardstick: each event's answer set built from a tuple of
        # its keys, nothing else (at 100k, 296 keys per event)
        held = [tuple(a) for a in answers]
        t_floor = time_it(lambda: each(set, held), len(events), sample, repeats, min_seconds=0.2)
        t_loop = time_it(lambda: [match(e) for e in events], len(events), sample, repeats)
        t_dated = time_it(
            lambda: each(match, by_date), len(events), sample, repeats, min_seconds=0.2
        )
        batch = getattr(index, "match_batch", None) or (lambda evs: [match(e) for e in evs])
        if batch(events) != answers:
            failures += 1
            console.print(f"[red]match_batch differs from match with {n} subscriptions[/red]")
        t_batch = time_it(lambda: batch(events), len(events), sample, repeats)
        # the same events as an Arrow table (as read from Parquet): match_batch answers it
        # column-wise; the per-row path turns each row into a record first
        if arrow is not None:
            t_table, t_rows = time_table(model, index, events, answers, sample, repeats)
            failures += t_table is None
        else:
            t_table = t_rows = None
        delivered = sum(map(len, answers))

        t_count, same_count, bad = baseline(
            "counting", Counting(pairs).match, events, answers, budget, repeats, match, console
        )
        failures += bad
        t_lin, same_lin, bad = baseline(
            "linear", linear(pairs), events, answers, budget, repeats, match, console
        )
        failures += bad
        r_count, r_lin = ratio(same_count, t_count), ratio(same_lin, t_lin)

        if n_queries:
            failures += relations(
                index, pairs, n_queries, seed, budget, repeats, rel_table, bench, console
            )

        t = time.process_time()
        for f, k in pairs:
            index.remove(f, k)
        t_remove = time.process_time() - t
        assert len(index) == 0

        filters = len({f for f, _ in pairs})
        table.add_row(
            f"{n:,}",
            f"{filters:,}",
            f"{delivered / len(events):.1f}",
            t_index.fmt_rate(),
            "-" if t_python is None else t_python.fmt_rate(),
            t_floor.fmt_rate(),
            t_dated.fmt_rate(),
            f"{cold:,.0f}",
            t_loop.fmt_rate(),
            t_batch.fmt_rate(),
            "-" if t_table is None else t_table.fmt_rate(),
            "-" if t_rows is None else t_rows.fmt_rate(),
            f"{t_count.fmt_rate()} ({t_count.count:,})",
            f"{t_lin.fmt_rate(1)} ({t_lin.count:,})",
            f"{r_count:,.1f}×",
            f"{r_lin:,.0f}×",
            f"{t_add / max(n, 1) * 1e6:.1f}",
            f"{t_remove / max(n, 1) * 1e6:.1f}",
        )
        bench.row(
            table="matching",
            subs=n,
            filters=filters,
            events=len(events),
            hits_per_event=delivered / len(events),
            index=t_index,
            compiled_walk=plans.ENGINE is not None,
            index_python_walk=t_python,
            ratio_compiled_python_walk=None if t_python is None else ratio(t_index, t_python),
            answer_sets_alone=t_floor,
            index_on_answer_sets_alone=ratio(t_index, t_floor),
            index_by_date=t_dated,
            cold_rate=cold,
            settle_passes=settle,
            match_loop_kept=t_loop,
            match_batch=t_batch,
            ratio_batch_loop=ratio(t_batch, t_loop),
            match_batch_table=t_table,
            table_per_row=t_rows,
            ratio_table_per_row=None if t_table is None else ratio(t_table, t_rows),
            counting=t_count,
            index_on_counting_events=same_count,
            ratio_counting=r_count,
            linear=t_lin,
            index_on_linear_events=same_lin,
            ratio_linear=r_lin,
            add_us=t_add / max(n, 1) * 1e6,
            remove_us=t_remove / max(n, 1) * 1e6,
        )
        bench.headline(
            f"records index, {n // 1000}k quote subscriptions",
            f"{t_index.rate:,.0f} events/s"
            + ("" if t_python is None else f" ({ratio(t_index, t_python):,.1f}× the Python walk)")
            + f" ({r_count:,.1f}× counting, "
            f"{r_lin:,.0f}× linear; building the answer sets alone "
            f"{t_floor.rate:,.0f} events/s); the same events in date order "
            f"{t_dated.rate:,.0f} events/s; match_batch {t_batch.rate:,.0f} "
            "events/s"
            + (
                ""
                if t_table is None
                else f"; match_batch over an Arrow table {t_table.rate:,.0f} events/s, "
                f"{ratio(t_table, t_rows):,.1f}× the per-row path from the table"
            ),
        )
    console.print(table)
    if n_queries:
        console.print(rel_table)
    if failures:
        console.print(f"[red]{failures} answers differ[/red]")
        return bench.finish(1)
    console.print("all answers equal on every compared event and query")
    return bench.finish(0)


def main(argv: list[str] | None = None) -> int:
    bench = Bench("records_match", __doc__, argv)
    ap = bench.parser
    ap.add_argument(
        "--sizes",
        default=None,
        help="comma-separated numbers of subscriptions "
        "(default: 1000,10000,100000; quick: 10000,100000)",
    )
    ap.add_argument(
        "--events",
        type=int,
        default=None,
        help="quote events sampled for matching (default: 20000; quick: 5000)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--baseline-seconds",
        type=float,
        default=None,
        help="length of one timed run of a baseline (default: 2; quick: 0.5)",
    )
    ap.add_argument(
        "--queries",
        type=int,
        default=None,
        help="subscriptions used as covering/identity/overlap/merge queries "
        "(0: skip; default: 20; quick: 0)",
    )
    args = bench.parse()
    q = args.quick
    sizes_text = args.sizes or ("10000,100000" if q else "1000,10000,100000")
    events = args.events or (5000 if q else 20000)
    budget = args.baseline_seconds or (0.5 if q else 2.0)
    queries = args.queries if args.queries is not None else (0 if q else 20)
    try:
        sizes = [int(s) for s in sizes_text.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes takes numbers separated by commas, got {sizes_text!r}")
    if not sizes or min(sizes) < 1 or events < 1 or queries < 0:
        ap.error("sizes and --events must be positive, --queries not negative")
    console = Console(width=max(Console().width, 150))
    return run(bench, sizes, events, args.seed, budget, queries, args.repeats, console)


if __name__ == "__main__":
    sys.exit(main())
