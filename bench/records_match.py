"""Matching throughput of the records index against the linear scan (issue 2, §6).

    .venv/bin/python bench/records_match.py [--sizes 1000,10000,100000] [--events 20000]

For each number of subscriptions (drawn from the real S&P 500 quotes by
``pubsift.models.records.workload``), the same sample of quote events is matched by

* ``RecordsIndex.match`` (the access tree of ``models/records/index.py``),
* Mühl's predicate counting (Fig. 4.6) over the same per-operator attribute structures
  (``attrindex.AttributeIndex`` holding every distinct attribute filter once), and
* the linear scan: a plain loop calling ``RecordFilter.matches`` on every subscription,

all in this run, on one core; times are the CPU time of this process
(``time.process_time``), so the figures hold on a busy machine too. The counting and linear baselines are slow, so they run on the
first events of the sample until ``--baseline-seconds`` have passed (at least 20 events);
their answers are checked against the index's on every event they see (the table shows
the number of events each baseline saw in parentheses). "hits/ev" is the mean number of
matching subscriptions per event; adding and removing all subscriptions is timed per
subscription. A second table times the routing-table queries (covering, covered_by,
identical, overlapping, merge_candidates) of the index against ``LinearIndex`` over the
model's hooks, with a seeded sample of the subscriptions as queries, answers compared.
Exit status 1 if any answer differs.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from pubsift.core.index import LinearIndex
from pubsift.models.records import RecordsModel
from pubsift.models.records import conjunctive
from pubsift.models.records.attrindex import AttributeIndex
from pubsift.models.records.constraints import ABSENT, Constraint
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.values import Record
from pubsift.models.records.workload import (Mix, load_quotes, quotes_path, sample_events,
                                             subscriptions)

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "quotes"


class Counting:
    """Mühl's matching algorithm (000, §4.3.8, Fig. 4.6): count, per filter, the satisfied
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


def relations(index: Any, pairs: Sequence[tuple[RecordFilter, Hashable]], n_queries: int,
              seed: int, budget: float, table: Table, console: Console) -> int:
    """Times the routing-table queries of the index against LinearIndex on the same
    subscriptions (queries: a seeded sample of them); returns the number of differences."""
    linear_index = LinearIndex(index.model)
    for f, k in pairs:
        linear_index.add(f, k)
    queries = random.Random(seed).sample([f for f, _ in pairs], min(n_queries, len(pairs)))
    failures = 0
    for name in QUERIES:
        answers = []
        conjunctive.cache_clear()                # both sides start cold (merge pairs repeat)
        t = time.process_time()
        for f in queries:
            answers.append(getattr(index, name)(f))
        t_index = (time.process_time() - t) / len(queries)
        seen, spent = 0, 0.0
        conjunctive.cache_clear()
        while seen < len(queries) and (seen < 2 or spent < budget):
            t = time.process_time()
            want = getattr(linear_index, name)(queries[seen])
            spent += time.process_time() - t
            if want != answers[seen]:
                failures += 1
                console.print(f"[red]{name} differs from LinearIndex on {queries[seen]!r}[/red]")
            seen += 1
        t_linear = spent / seen
        table.add_row(f"{len(pairs):,}", name, f"{sum(map(len, answers)) / len(answers):,.1f}",
                      f"{t_index * 1e3:,.2f}", f"{t_linear * 1e3:,.1f} ({seen})",
                      f"{t_linear / t_index:,.0f}×" if t_index else "-")
    return failures


def _rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


def run(sizes: list[int], n_events: int, seed: int, budget: float, n_queries: int,
        console: Console) -> int:
    try:
        path = quotes_path(directory=DATA)
    except FileNotFoundError as err:
        console.print(f"[red]{err}[/red]")
        return 2
    t = time.process_time()
    quotes = load_quotes(path)
    console.print(f"loaded {len(quotes):,} quotes from {path.name} in "
                  f"{time.process_time() - t:.1f} s")
    events = sample_events(quotes, n_events, seed=seed)
    table = Table(title=f"records matching, {len(events):,} quote events, seed {seed}")
    for col in ("subs", "filters", "hits/ev", "index ev/s", "counting ev/s", "linear ev/s",
                "index/linear", "index/counting", "add µs", "remove µs"):
        table.add_column(col, justify="right", no_wrap=True)
    rel_table = Table(title=f"routing-table queries, {n_queries} subscriptions as queries")
    for col in ("subs", "query", "keys/query", "index ms", "linear ms", "linear/index"):
        rel_table.add_column(col, justify="right", no_wrap=True)
    failures = 0
    model = RecordsModel()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        for n in sizes:
            pairs = list((f, k) for k, f in enumerate(subscriptions(quotes, n, seed=seed,
                                                                    mix=Mix())))
            index = model.new_index()
            t = time.process_time()
            for f, k in pairs:
                index.add(f, k)
            t_add = time.process_time() - t

            task = progress.add_task(f"{n:,} subs: index", total=len(events))
            match = index.match
            delivered = 0
            t_index = 0.0
            for i in range(0, len(events), 1000):
                chunk = events[i:i + 1000]
                t = time.process_time()
                for e in chunk:
                    match(e)
                t_index += time.process_time() - t
                progress.advance(task, len(chunk))
            for e in events:
                delivered += len(match(e))
            progress.remove_task(task)

            rates = []
            for name, matcher in (("counting", Counting(pairs).match), ("linear", linear(pairs))):
                task = progress.add_task(f"{n:,} subs: {name}", total=len(events))
                seen, spent = 0, 0.0
                while seen < len(events) and (seen < 20 or spent < budget):
                    e = events[seen]
                    t = time.process_time()
                    got = matcher(e)
                    spent += time.process_time() - t
                    if got != match(e):
                        failures += 1
                        console.print(f"[red]{name} and index differ on {e!r} with {n} "
                                      "subscriptions[/red]")
                    seen += 1
                    progress.advance(task)
                progress.remove_task(task)
                rates.append((_rate(seen, spent), seen))

            if n_queries:
                progress.add_task(f"{n:,} subs: routing-table queries", total=None)
                failures += relations(index, pairs, n_queries, seed, budget, rel_table,
                                      console)
                for task_id in list(progress.task_ids):
                    progress.remove_task(task_id)

            t = time.process_time()
            for f, k in pairs:
                index.remove(f, k)
            t_remove = time.process_time() - t
            assert len(index) == 0

            r_index = _rate(len(events), t_index)
            (r_count, n_count), (r_lin, n_lin) = rates
            table.add_row(f"{n:,}", f"{len({f for f, _ in pairs}):,}",
                          f"{delivered / len(events):.1f}", f"{r_index:,.0f}",
                          f"{r_count:,.0f} ({n_count:,})", f"{r_lin:,.1f} ({n_lin:,})",
                          f"{r_index / r_lin:,.0f}×", f"{r_index / r_count:,.1f}×",
                          f"{t_add / max(n, 1) * 1e6:.1f}", f"{t_remove / max(n, 1) * 1e6:.1f}")
    console.print(table)
    if n_queries:
        console.print(rel_table)
    if failures:
        console.print(f"[red]{failures} answers differ[/red]")
        return 1
    console.print("all answers equal on every compared event and query")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000",
                    help="comma-separated numbers of subscriptions (default: %(default)s)")
    ap.add_argument("--events", type=int, default=20000,
                    help="quote events sampled for matching (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--baseline-seconds", type=float, default=2.0,
                    help="time spent per baseline and size (default: %(default)s)")
    ap.add_argument("--queries", type=int, default=20,
                    help="subscriptions used as covering/identity/overlap/merge queries "
                         "(0: skip; default: %(default)s)")
    args = ap.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--sizes takes numbers separated by commas, got {args.sizes!r}")
    if not sizes or min(sizes) < 1 or args.events < 1 or args.queries < 0:
        ap.error("sizes and --events must be positive, --queries not negative")
    console = Console(width=max(Console().width, 140))
    return run(sizes, args.events, args.seed, args.baseline_seconds, args.queries, console)


if __name__ == "__main__":
    sys.exit(main())
