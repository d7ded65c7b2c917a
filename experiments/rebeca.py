"""Mühl's REBECA experiments reproduced (000, ch. 6): ``pubsift experiment rebeca``.

Setup (§6.2, Table 6.1): the 107-broker hierarchy (:func:`~pubsift.core.topology.hierarchy`:
40 routers, 67 local brokers), one source at the root router that advertises everything
(with advertisements), m = 1000 stocks, consumers with 10 random distinct subscriptions
spread evenly over the local brokers, 1..200 consumers per local broker.

For each strategy, with and without advertisements, and each number n of consumers per
local broker, with x = 10 · 67 · n active subscriptions:

* Σ|R| — the remote routing entries of all brokers (§6.3; local entries are left out);
* the filter-forwarding overhead (§6.4) — admin messages per subscription change,
  measured by toggling random consumers off and on again (each of their unsubscriptions
  and subscriptions settled before the next), so the network stays at x;
* the exact Σ|R| a perfect algorithm must reach for these consumers where the seed gives
  one (:mod:`pubsift.experiments.analytic`), to compare against.

The locality experiment (§6.5.1, Table 6.3) draws the stocks of the three subnets below
the root from ranges that overlap by the parameter d, leaves the root's local broker
without consumers, and also measures the payload traffic saved against flooding (one quote
of every stock published at the source).

The brokers, strategies and network are the routing core's; routing tables use
:class:`~pubsift.experiments.partitioned.SymbolIndex` unless ``--index records``
asks for the records model's own index (same answers, slower on these workloads).
"""
from __future__ import annotations

import argparse
import csv
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from fractions import Fraction
from pathlib import Path

from pubsift.experiments import analytic
from pubsift.experiments.consumers import KINDS, TABLE_6_3, interests, subnet_range
from pubsift.experiments.partitioned import PartitionedModel
from pubsift.core.network import Client, Network
from pubsift.core.registry import load_model
from pubsift.core.topology import Topology, hierarchy
from pubsift.models.records.filters import RecordFilter

MODEL = "records"
STRATEGIES = ("simple", "identity", "covering", "merging")
#: Mühl's pairing (Fig. 6.2/6.3): quote subscriptions for simple and identity-based
#: routing, quote-interval subscriptions for covering- and merging-based routing.
AUTO_KIND = {"simple": "quote", "identity": "quote", "covering": "quote-interval",
             "merging": "quote-interval"}


@dataclass(frozen=True)
class Setup:
    """One curve: a strategy with or without advertisements on one workload."""
    strategy: str
    advertisements: bool
    kind: str = "quote"
    locality: float | None = None
    stocks: int = 1000
    per_consumer: int = 10
    seed: int = 0
    index: str = "partitioned"

    @property
    def label(self) -> str:
        adv = " + adv" if self.advertisements else ""
        loc = f", d={_fmt_d(self.locality)}" if self.locality is not None else ""
        return f"{self.strategy}{adv} ({self.kind}{loc})"


@dataclass
class Point:
    """One measurement (a CSV row)."""
    experiment: str
    strategy: str
    advertisements: bool
    kind: str
    locality: str
    consumers_per_broker: int
    active_subscriptions: int
    remote_entries: int
    expected_entries: int | None
    admin_per_change: float
    changes: int
    root_entries: int
    level2_entries: float
    level3_entries: float
    level4_entries: float
    local_broker_entries: int
    saved_traffic: float | None
    seconds: float


class Experiment:
    """A network of one :class:`Setup`, grown consumer by consumer and measured."""

    def __init__(self, setup: Setup, topology: Topology | None = None) -> None:
        if setup.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {setup.strategy!r}; known: {', '.join(STRATEGIES)}")
        if setup.kind not in KINDS:
            raise ValueError(f"unknown subscription kind {setup.kind!r}; known: {', '.join(KINDS)}")
        if setup.index not in ("partitioned", "records"):
            raise ValueError(f"unknown index {setup.index!r}; known: partitioned, records")
        self.setup = setup
        self.topology = topo = topology or hierarchy()
        assert topo.root is not None
        model = load_model(MODEL)
        self.model = PartitionedModel(model) if setup.index == "partitioned" else model
        self.net = Network(topo, [self.model], setup.strategy, setup.advertisements,
                           seed=setup.seed)
        self.source = self.net.client("source", topo.root)
        if setup.advertisements:                          # §6.2.3: overlaps every subscription
            self.source.advertise(MODEL, RecordFilter())
            self.net.run_until_quiet()
        self._workload = random.Random(setup.seed)
        self._prices = random.Random(setup.seed + 1)
        self._toggling = random.Random(setup.seed + 2)
        self.brokers, self.stocks = self._interest_ranges()
        self.consumers: list[tuple[Client, tuple[RecordFilter, ...]]] = []

    def _interest_ranges(self) -> tuple[list[str], dict[str, range]]:
        """Local brokers that get consumers, and the stocks each draws from."""
        s, topo = self.setup, self.topology
        if s.locality is None:
            return list(topo.access), {b: range(s.stocks) for b in topo.access}
        parent = analytic.parents(topo, topo.root)  # type: ignore[arg-type]
        subnets = [h for h in topo.neighbours(topo.root) if h in topo.level]  # type: ignore[arg-type]
        brokers, stocks = [], {}
        for b in topo.access:
            top = b
            while parent[top] != topo.root:
                top = parent[top]  # type: ignore[assignment]
            if top in subnets:                            # §6.5.1: root's local broker idle
                brokers.append(b)
                stocks[b] = range(*subnet_range(subnets.index(top), s.locality, s.stocks))
        return brokers, stocks

    @property
    def active(self) -> int:
        return len(self.consumers) * self.setup.per_consumer

    def grow(self, per_broker: int) -> None:
        """Add consumers, all active, until every broker has ``per_broker`` of them."""
        s = self.setup
        while len(self.consumers) < per_broker * len(self.brokers):
            b = self.brokers[len(self.consumers) % len(self.brokers)]
            fs = interests(self._workload, s.kind, self.stocks[b], s.per_consumer, self._prices)
            c = self.net.client(f"c{len(self.consumers)}", b)
            for f in fs:
                c.subscribe(MODEL, f)
            self.net.run_until_quiet()
            self.consumers.append((c, fs))

    def overhead(self, toggles: int) -> tuple[float, int]:
        """Admin messages per subscription change over ``toggles`` random consumers (all of
        them if there are fewer) switched off and on again; and the number of changes."""
        picked = (list(range(len(self.consumers))) if toggles >= len(self.consumers)
                  else self._toggling.sample(range(len(self.consumers)), toggles))
        before, changes = self.net.total_admin(), 0
        for i in picked:
            c, fs = self.consumers[i]
            for op in (c.unsubscribe, c.subscribe):
                for f in fs:
                    op(MODEL, f)
                    self.net.run_until_quiet()
                    changes += 1
        return ((self.net.total_admin() - before) / changes if changes else 0.0), changes

    def saved_traffic(self) -> float:
        """Share of the notification messages flooding would send (|V|-1 per quote) that
        the routing tables save, over one quote of every stock (§6.5.1, Fig. 6.12)."""
        before = self.net.total_forwards()
        for i in range(self.setup.stocks):
            self.source.publish(MODEL, self.model.parse_event(
                {"symbol": f"S{i:03d}", "price": 50.0}))
            self.net.run_until_quiet()
        sent = self.net.total_forwards() - before
        return 1 - sent / ((len(self.topology.brokers) - 1) * self.setup.stocks)

    def expected_entries(self) -> int | None:
        """Σ|R| a perfect algorithm holds for these consumers, where the seed says (see
        :mod:`~pubsift.experiments.analytic`); None for covering with intervals."""
        s = self.setup
        if s.strategy == "simple":
            key, measure = (lambda f: f), analytic.every
        elif s.strategy == "merging":
            key = lambda f: f.get("symbol")                       # noqa: E731
            measure = analytic.nonempty if s.kind == "quote" else analytic.distinct
        elif s.kind == "quote":                           # identity, or covering = identity
            key, measure = (lambda f: f), analytic.distinct
        else:
            return None
        behind: dict[str, list] = {}
        for c, fs in self.consumers:
            behind.setdefault(c.broker, []).extend(key(f) for f in fs)
        return analytic.remote_entries(self.topology, self.topology.root,  # type: ignore[arg-type]
                                       behind, measure, s.advertisements)

    def measure(self, toggles: int, traffic: bool = False, experiment: str = "tables") -> Point:
        t0 = time.perf_counter()
        s, topo = self.setup, self.topology
        sizes = self.net.table_sizes()
        remote = sum(r for _, r in sizes.values())
        expected = self.expected_entries()
        per_change, changes = self.overhead(toggles)
        saved = self.saved_traffic() if traffic else None

        def level(k: int) -> float:
            rs = [sizes[b][1] for b, lv in topo.level.items() if lv == k]
            return sum(rs) / len(rs) if rs else 0.0

        return Point(experiment, s.strategy, s.advertisements, s.kind,
                     "" if s.locality is None else _fmt_d(s.locality),
                     len(self.consumers) // len(self.brokers), self.active, remote, expected,
                     round(per_change, 4), changes, sizes[topo.root][1],  # type: ignore[index]
                     level(2), level(3), level(4), sum(sizes[b][1] for b in topo.access),
                     None if saved is None else round(saved, 6),
                     round(time.perf_counter() - t0, 3))


def sweep(setup: Setup, points: Sequence[int], toggles: int, traffic: bool = False,
          experiment: str = "tables") -> Iterator[Point]:
    """Grow one network through ``points`` (consumers per local broker), measuring at each."""
    exp = Experiment(setup)
    for n in points:
        t0 = time.perf_counter()
        exp.grow(n)
        p = exp.measure(toggles, traffic, experiment)
        p.seconds = round(time.perf_counter() - t0, 3)
        yield p


def axis(maximum: int, step: int) -> list[int]:
    """Consumers per local broker: 1, step, 2·step, ..., maximum."""
    if maximum < 1 or step < 1:
        raise ValueError("the number of consumers and the step must be at least 1")
    return sorted({1, maximum, *range(step, maximum + 1, step)})


def parse_locality(text: str) -> list[float]:
    """``table`` (Table 6.3's values) or one value: ``1/3``, ``0.5``."""
    if text == "table":
        return [float(d) for d in TABLE_6_3]
    try:
        d = float(Fraction(text))
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"locality must be a number like 0.5 or 1/3, or "
                                         f"'table', not {text!r}") from None
    if not 1 / 3 - 1e-9 <= d <= 1:
        raise argparse.ArgumentTypeError(f"locality d must lie in [1/3, 1], got {text}")
    return [d]


def _fmt_d(d: float) -> str:
    return "1/3" if abs(d - 1 / 3) < 1e-9 else f"{d:g}"


# -- command line ---------------------------------------------------------------------------
def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``rebeca`` (under ``pubsift experiment``)."""
    p = subparsers.add_parser(
        "rebeca", help="reproduce Mühl's routing experiments (routing-table sizes, "
                       "filter-forwarding overhead, locality)",
        description=__doc__.split("\n\n")[0] + " Writes a CSV and PNG plots (Fig. 6.2-6.7, "
                    "or 6.8-6.12 with --locality).")
    p.add_argument("--strategies", type=lambda s: [x.strip() for x in s.split(",") if x.strip()],
                   default=None, metavar="LIST",
                   help=f"comma-separated, from {','.join(STRATEGIES)} (default: all; "
                        f"identity with --locality)")
    p.add_argument("--advertisements", choices=("both", "on", "off"), default="both",
                   help="run with advertisements, without, or both (default)")
    p.add_argument("--consumers", type=int, default=200, metavar="N",
                   help="max consumers per local broker (default 200)")
    p.add_argument("--step", type=int, default=20, metavar="K",
                   help="measure at 1, K, 2K, ... consumers per local broker (default 20)")
    p.add_argument("--kind", choices=("auto", *KINDS), default="auto",
                   help="subscription kind; auto (default): quote for simple and identity, "
                        "quote-interval for covering and merging, as in Fig. 6.2/6.3")
    p.add_argument("--locality", type=parse_locality, default=None, metavar="D",
                   help="run the locality experiment (Table 6.3) for d in [1/3, 1], or "
                        "'table' for all of Table 6.3's values")
    p.add_argument("--subscriptions", type=int, default=10, metavar="K",
                   help="distinct subscriptions per consumer (default 10)")
    p.add_argument("--stocks", type=int, default=1000, metavar="M",
                   help="number of stocks m (default 1000)")
    p.add_argument("--toggles", type=int, default=20, metavar="T",
                   help="consumers switched off and on per point to measure the overhead "
                        "(default 20, i.e. 400 subscription changes)")
    p.add_argument("--simple-cap", type=int, default=10, metavar="N",
                   help="max consumers per local broker for simple routing without "
                        "advertisements, whose tables hold 106 entries per subscription "
                        "(default 10; its Σ|R| is 106·x exactly)")
    p.add_argument("--index", choices=("partitioned", "records"), default="partitioned",
                   help="routing-table index: per-symbol buckets (default) or the records "
                        "model's own")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("rebeca-out"), metavar="DIR",
                   help="where the CSV and PNG files go (default ./rebeca-out)")
    p.add_argument("--quick", action="store_true",
                   help="a small run: up to 3 consumers per local broker, 5 toggles")
    p.add_argument("--jobs", type=int, default=1, metavar="J",
                   help="run up to J curves at once, each in its own process (default 1)")
    p.add_argument("--from-csv", type=Path, nargs="+", default=None, metavar="CSV",
                   help="run nothing: read the points of earlier runs from these CSV files "
                        "(e.g. curves run separately) and write one CSV and the plots of "
                        "them all to --out")
    p.set_defaults(func=run)
    return p


def setups(args: argparse.Namespace) -> list[tuple[Setup, list[int]]]:
    """The curves to run and their x axes, from the command line."""
    strategies = args.strategies or (["identity"] if args.locality else list(STRATEGIES))
    for s in strategies:
        if s not in STRATEGIES:
            raise ValueError(f"unknown strategy {s!r}; known: {', '.join(STRATEGIES)} "
                             f"(flooding has no routing tables)")
    advs = {"both": (False, True), "on": (True,), "off": (False,)}[args.advertisements]
    maximum, step = (3, 1) if args.quick else (args.consumers, args.step)
    points = axis(maximum, step)
    out = []
    for d in (args.locality or [None]):
        for s in strategies:
            for adv in advs:
                kind = AUTO_KIND[s] if args.kind == "auto" else args.kind
                pts = points
                if s == "simple" and not adv:       # its own, denser axis up to the cap
                    cap = min(args.simple_cap, maximum)
                    pts = sorted({n for n in points if n <= cap} | set(axis(cap, max(1, cap // 5))))
                out.append((Setup(s, adv, kind, d, args.stocks, args.subscriptions, args.seed,
                                  args.index), pts))
    return out


def run(args: argparse.Namespace) -> int:
    """Run the experiment the arguments describe (or read it with ``--from-csv``); write
    the CSV and plots; print a summary."""
    from rich.console import Console

    console = Console(stderr=True)
    t0 = time.perf_counter()
    try:
        if args.from_csv:
            rows = [p for path in args.from_csv for p in read_csv(path)]
            kinds = {p.experiment for p in rows}
            if len(kinds) > 1:
                raise ValueError(f"the CSV files mix experiments ({', '.join(sorted(kinds))}); "
                                 f"plot tables and locality runs separately")
            experiment = kinds.pop() if kinds else "tables"
        else:
            if args.jobs < 1:
                raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
            plan = setups(args)
            experiment = "locality" if args.locality is not None else "tables"
            rows = _execute(plan, 5 if args.quick else args.toggles, experiment, args.jobs,
                            console)
    except ValueError as exc:
        console.print(f"[red]error:[/red] {exc}", soft_wrap=True, highlight=False)  # paths whole
        return 2
    except CurveFailed as exc:
        console.print(f"[red]error:[/red] curve {exc}", soft_wrap=True, highlight=False)
        return 1
    report(rows, args.out, experiment, time.perf_counter() - t0, console)
    return 0


class CurveFailed(Exception):
    """A curve run in a worker process failed (the message names the curve and error)."""


def _execute(plan: Sequence[tuple[Setup, list[int]]], toggles: int, experiment: str,
             jobs: int, console) -> list[Point]:
    """Run every curve of ``plan`` with a progress bar; one process per curve if jobs > 1.
    The points come back in the order of the plan."""
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn)

    traffic = experiment == "locality"
    results: list[list[Point]] = [[] for _ in plan]
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console) as progress:
        task = progress.add_task("rebeca", total=sum(len(p) for _, p in plan))
        if jobs == 1 or len(plan) == 1:
            for i, (setup, pts) in enumerate(plan):
                progress.update(task, description=f"{setup.label:<40}")
                for point in sweep(setup, pts, toggles, traffic, experiment):
                    results[i].append(point)
                    progress.advance(task)
        else:
            _execute_parallel(plan, toggles, traffic, experiment, jobs, results,
                              lambda: progress.advance(task),
                              lambda text: progress.update(task, description=text))
    return [p for curve in results for p in curve]


def _execute_parallel(plan: Sequence[tuple[Setup, list[int]]], toggles: int, traffic: bool,
                      experiment: str, jobs: int, results: list[list[Point]],
                      advance: Callable[[], None], describe: Callable[[str], None]) -> None:
    """Curves in a process pool; each worker reports its points through a queue as it
    measures them, so the progress bar moves point by point."""
    import multiprocessing
    from queue import Empty

    ctx = multiprocessing.get_context("spawn")     # no forked copies of the parent's state
    # leaving the block terminates the pool: a failed curve does not wait for the others
    with ctx.Manager() as manager, ctx.Pool(jobs) as pool:
        queue = manager.Queue()
        runs = [pool.apply_async(_curve, (i, setup, pts, toggles, traffic, experiment, queue))
                for i, (setup, pts) in enumerate(plan)]
        pending = sum(len(p) for _, p in plan)
        describe(f"{len(plan)} curves, {jobs} at a time")
        while pending:
            try:
                i, point, error = queue.get(timeout=1.0)
            except Empty:
                for r in runs:
                    if r.ready() and not r.successful():
                        r.get()                        # raises what ended the worker
                continue
            if error is not None:
                raise CurveFailed(f"{plan[i][0].label}: {error}")
            results[i].append(point)
            pending -= 1
            advance()
        for r in runs:
            r.get()


def _curve(i: int, setup: Setup, points: list[int], toggles: int, traffic: bool,
           experiment: str, queue) -> None:
    """One curve, in a worker process: every point goes to ``queue`` as (i, point, None);
    an error as (i, None, message), so the parent stops waiting and reports it."""
    try:
        for point in sweep(setup, points, toggles, traffic, experiment):
            queue.put((i, point, None))
    except Exception as exc:
        queue.put((i, None, f"{type(exc).__name__}: {exc}"))


def report(rows: Sequence[Point], out: Path, experiment: str, seconds: float, console) -> None:
    """Write the CSV and plots of ``rows`` into ``out`` and print the summary table."""
    from rich.console import Console
    from rich.table import Table

    from pubsift.experiments import figures

    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / f"rebeca-{experiment}.csv"
    write_csv(rows, csv_path)
    pngs = figures.plot(rows, out, experiment == "locality")
    table = Table(title=f"Mühl ch. 6 reproduced ({experiment}, {seconds:.0f} s)")
    for col in ("curve", "x", "Σ|R|", "expected", "admin/change", "saved traffic"):
        table.add_column(col, justify="left" if col == "curve" else "right")
    last: dict[str, Point] = {}
    for p in rows:
        last[_label(p)] = p
    for label, p in last.items():
        table.add_row(label, f"{p.active_subscriptions:,}", f"{p.remote_entries:,}",
                      "" if p.expected_entries is None else f"{p.expected_entries:,}",
                      f"{p.admin_per_change:.2f}",
                      "" if p.saved_traffic is None else f"{p.saved_traffic:.3f}")
    Console().print(table)
    console.print(f"wrote {csv_path} and {', '.join(str(p) for p in pngs)}")


def _label(p: Point) -> str:
    adv = " + adv" if p.advertisements else ""
    loc = f", d={p.locality}" if p.locality else ""
    return f"{p.strategy}{adv} ({p.kind}{loc})"


def write_csv(rows: Sequence[Point], path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, [f.name for f in fields(Point)])
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in asdict(r).items()})


def read_csv(path: Path) -> list[Point]:
    """The points of a CSV written by :func:`write_csv`. A missing file or column, or a
    value of the wrong type, is a ``ValueError`` naming the file and line."""
    try:
        fh = open(path, newline="", encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    with fh:
        reader = csv.DictReader(fh)
        names = [f.name for f in fields(Point)]
        missing = [n for n in names if n not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: not a rebeca CSV (missing columns: {', '.join(missing)})")
        rows = []
        for row in reader:
            try:
                rows.append(Point(**{f.name: _cell(f.type, row[f.name]) for f in fields(Point)}))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{path}, line {reader.line_num}: {exc}") from None
        return rows


def _cell(kind: str, text: str | None):
    """A CSV cell as the type a :class:`Point` field is declared with."""
    if text is None:
        raise ValueError("the row has too few cells")
    optional = kind.endswith("| None")
    if optional and text == "":
        return None
    base = kind.removesuffix(" | None")
    if base == "str":
        return text
    if base == "bool":
        if text not in ("True", "False"):
            raise ValueError(f"expected True or False, got {text!r}")
        return text == "True"
    try:
        return int(text) if base == "int" else float(text)
    except ValueError:
        raise ValueError(f"expected {'an integer' if base == 'int' else 'a number'}, "
                         f"got {text!r}") from None
