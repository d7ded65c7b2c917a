"""Routing throughput of the strategies on Mühl's 107-broker network (Mühl 2002, ch. 6; docs/experiments.md).

    .venv/bin/python bench/routing.py [--consumers 1] [--churn 100] [--pubs 1000]
                                      [--advertisements] [--index records|partitioned]
                                      [--quick] [--json PATH]

Setup (Mühl 2002, §6.2): the 107-broker hierarchy (40 routers, 67 local brokers), the records
model, a source at the root router, ``--consumers`` consumers per local broker with 10
quote-interval subscriptions each (``symbol = S and price in [50 - t1, 50 + t2]``, 1000
stocks). Every strategy gets the same consumers, operations and quotes, in this run:

* **churn** — on the settled network, ``--churn`` operations, alternately unsubscribing a
  random active subscription and subscribing a fresh one, each settled
  (``run_until_quiet``) before the next: operations per second and admin messages per
  operation;
* **publications** — ``--pubs`` quotes of random stocks with prices uniform in [0, 100]
  published at the source and routed end to end: notifications delivered per second, and
  the messages crossing links per publication.

Flooding is the baseline: its ratios are 1. Times are the CPU time of this process
(``time.process_time``), so the figures hold on a busy machine; every strategy runs
``--repeats`` times (interleaved with the others) and the median is shown with its spread. Every strategy must deliver
exactly the notifications flooding delivers; exit status 1 if one does not.
"""

from __future__ import annotations

import gc
import random
import sys
import time
from dataclasses import dataclass

from harness import Bench, Timing, ratio
from pubsift.core.model import FilterModel
from pubsift.core.network import Network, SimulatedClient
from pubsift.core.registry import load_model
from pubsift.core.topology import hierarchy
from pubsift.experiments.consumers import interests
from pubsift.experiments.partitioned import PartitionedModel
from pubsift.models.records import RecordFilter
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

STRATEGIES = ("flooding", "simple", "identity", "covering", "merging")
MODEL = "records"
STOCKS = 1000


@dataclass
class Result:
    strategy: str
    settle_s: float
    churn_s: float  # CPU seconds of all changes
    n_ops: int
    admin_per_op: float
    pub_s: float  # CPU seconds of all publications
    delivered: int
    links_per_pub: float
    deliveries: list


def workload(consumers: int, churn: int, pubs: int, seed: int) -> tuple[list, list, list]:
    """Consumers' subscriptions per local broker, churn operations, quotes: identical for
    every strategy."""
    rng, prices = random.Random(seed), random.Random(seed + 1)
    access = hierarchy().access
    people = [
        (b, interests(rng, "quote-interval", range(STOCKS), 10, prices))
        for _ in range(consumers)
        for b in access
    ]
    ops = [
        (
            rng.randrange(len(people)),
            rng.randrange(10),
            interests(rng, "quote-interval", range(STOCKS), 1, prices)[0],
        )
        for _ in range(churn // 2)
    ]
    quotes = [
        {"symbol": f"S{rng.randrange(STOCKS):03d}", "price": round(rng.uniform(0, 100), 2)}
        for _ in range(pubs)
    ]
    return people, ops, quotes


def run(
    strategy: str, model: FilterModel, advertisements: bool, people: list, ops: list, quotes: list
) -> Result:
    gc.collect()  # the previous strategy's network must not slow this one
    net = Network(hierarchy(), [model], strategy, advertisements, seed=0)
    source = net.client("source", "r0")
    if advertisements:
        source.advertise(MODEL, RecordFilter())
    t0 = time.process_time()
    clients: list[tuple[SimulatedClient, list]] = []
    for i, (b, fs) in enumerate(people):
        c = net.client(f"c{i}", b)
        for f in fs:
            c.subscribe(MODEL, f)
        clients.append((c, list(fs)))
    net.run_until_quiet()
    settle = time.process_time() - t0
    admin0, t0 = net.total_admin(), time.process_time()
    for who, slot, fresh in ops:
        c, fs = clients[who]
        c.unsubscribe(MODEL, fs[slot])
        net.run_until_quiet()
        if fresh not in fs:
            fs[slot] = fresh
        c.subscribe(MODEL, fs[slot])
        net.run_until_quiet()
    churn_t = time.process_time() - t0
    n_ops = 2 * len(ops)
    admin = net.total_admin() - admin0
    events = [model.parse_event(q) for q in quotes]
    fwd0, mark, t0 = net.total_forwards(), len(net.trace), time.process_time()
    for e in events:
        source.publish(MODEL, e)
        net.run_until_quiet()
    pub_t = time.process_time() - t0
    deliveries = sorted((op.client, op.pub_id) for op in net.trace[mark:] if op.kind == "notify")
    return Result(
        strategy,
        settle,
        churn_t,
        n_ops,
        admin / n_ops if n_ops else 0.0,
        pub_t,
        len(deliveries),
        (net.total_forwards() - fwd0) / len(events),
        deliveries,
    )


def main(argv: list[str] | None = None) -> int:
    bench = Bench("routing", __doc__, argv)
    ap = bench.parser
    ap.add_argument("--consumers", type=int, default=1, help="consumers per local broker")
    ap.add_argument(
        "--churn", type=int, default=None, help="subscription changes (default 100; quick: 40)"
    )
    ap.add_argument(
        "--pubs", type=int, default=None, help="quotes published (default 1000; quick: 300)"
    )
    ap.add_argument(
        "--advertisements",
        action="store_true",
        help="route with advertisements (the source advertises everything)",
    )
    ap.add_argument(
        "--index",
        choices=("records", "partitioned"),
        default="records",
        help="routing-table index: the records model's (default) or per-symbol "
        "buckets (pubsift.experiments.partitioned)",
    )
    ap.add_argument(
        "--strategies",
        default=None,
        help=f"default {','.join(STRATEGIES)}; quick: flooding,covering",
    )
    ap.add_argument("--seed", type=int, default=0)
    args = bench.parse()
    churn = args.churn if args.churn is not None else (40 if args.quick else 100)
    pubs = args.pubs or (300 if args.quick else 1000)
    chosen = args.strategies or ("flooding,covering" if args.quick else ",".join(STRATEGIES))
    strategies = [s for s in chosen.split(",") if s]
    if "flooding" not in strategies:
        strategies.insert(0, "flooding")
    records = load_model(MODEL)
    model = PartitionedModel(records) if args.index == "partitioned" else records
    people, ops, quotes = workload(args.consumers, churn, pubs, args.seed)
    console = Console(width=max(Console().width, 150))
    runs: dict[str, list[Result]] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("routing", total=len(strategies) * args.repeats)
        for _ in range(args.repeats):  # strategies interleaved: load hits all alike
            for s in strategies:
                progress.update(task, description=f"{s:<10}")
                runs.setdefault(s, []).append(
                    run(s, model, args.advertisements, people, ops, quotes)
                )
                progress.advance(task)
    inputs = f"{len(people) * 10:,} subscriptions, {2 * len(ops)} changes, {len(quotes)} quotes"

    def timings(rs: list[Result]) -> tuple[Timing, Timing]:
        return (
            Timing(rs[0].n_ops, inputs, [r.churn_s for r in rs]),
            Timing(rs[0].delivered, inputs, [r.pub_s for r in rs]),
        )

    base_churn, base_pub = timings(runs["flooding"])
    table = Table(
        title=f"bench/routing.py: 107 brokers, {inputs}, index={args.index}, "
        f"advertisements={'on' if args.advertisements else 'off'} (CPU time, "
        f"median of {args.repeats} runs, ±half the spread)"
    )
    for col in (
        "strategy",
        "settle s",
        "changes/s",
        "× flooding",
        "admin/change",
        "notifications/s",
        "× flooding",
        "link msgs/pub",
        "delivered",
        "= flooding",
    ):
        table.add_column(col, justify="left" if col == "strategy" else "right")
    ok = True
    base_deliveries = runs["flooding"][0].deliveries
    for s in strategies:
        rs = runs[s]
        same = all(r.deliveries == base_deliveries for r in rs)
        ok &= same
        t_churn, t_pub = timings(rs)
        r_churn = ratio(t_churn, base_churn)  # same changes in every run
        # same quotes, same deliveries (checked): notifications/s ratio = time ratio
        r_pub = ratio(t_pub, base_pub) if same else float("nan")
        settle = sorted(r.settle_s for r in rs)[len(rs) // 2]
        table.add_row(
            s,
            f"{settle:.1f}",
            t_churn.fmt_rate(),
            f"{r_churn:.3f}",
            f"{rs[0].admin_per_op:.2f}",
            t_pub.fmt_rate(),
            f"{r_pub:.2f}",
            f"{rs[0].links_per_pub:.1f}",
            f"{rs[0].delivered:,}",
            "yes" if same else "NO",
        )
        bench.row(
            strategy=s,
            settle_s=settle,
            churn=t_churn,
            churn_vs_flooding=r_churn,
            admin_per_change=rs[0].admin_per_op,
            notifications=t_pub,
            notifications_vs_flooding=r_pub,
            link_msgs_per_pub=rs[0].links_per_pub,
            delivered=rs[0].delivered,
            equals_flooding=same,
        )
        if s in ("covering", "merging"):
            bench.headline(
                f"routing, 107 brokers, {s} vs flooding",
                f"{r_pub:.1f}× flooding's notifications/s; {t_churn.rate:,.0f} changes/s",
            )
    console.print(table)
    if not ok:
        console.print("[red]a strategy delivered other notifications than flooding[/red]")
    return bench.finish(0 if ok else 1)


if __name__ == "__main__":
    sys.exit(main())
