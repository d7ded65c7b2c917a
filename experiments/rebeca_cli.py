"""``pubsift experiment rebeca`` on the command line: Mühl's routing experiments
(Mühl 2002, Large-Scale Content-Based Publish/Subscribe Systems, ch. 6) from the
arguments to the CSV, the summary and the plots.

Optional dependencies are checked before any work (the plots need matplotlib, the extra
``pubsift[plot]``), and the results are never lost to a late failure: the CSV and the
summary are written first, the plots last.
"""

from __future__ import annotations

import argparse
import time
from fractions import Fraction
from pathlib import Path

from pubsift.experiments.consumers import KINDS, TABLE_6_3
from pubsift.experiments.rebeca import AUTO_KIND, STRATEGIES, Point, Setup, axis
from rich.console import Console
from rich.markup import escape

DESCRIPTION = (
    "Mühl's routing experiments (Mühl 2002, Large-Scale Content-Based "
    "Publish/Subscribe Systems, ch. 6) on pubsift's brokers: routing-table sizes "
    "Σ|R| (§6.3), filter-forwarding overhead (§6.4) and locality (§6.5.1, "
    "Table 6.3). Writes a CSV, then PNG plots (Fig. 6.2-6.7, or 6.8-6.12 with "
    "--locality; needs matplotlib: pip install 'pubsift[plot]')."
)


def parse_locality(text: str) -> list[float]:
    """``table`` (Table 6.3's values) or one value: ``1/3``, ``0.5``."""
    if text == "table":
        return [float(d) for d in TABLE_6_3]
    try:
        d = float(Fraction(text))
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(
            f"locality must be a number like 0.5 or 1/3, or 'table', not {text!r}"
        ) from None
    if not 1 / 3 - 1e-9 <= d <= 1:
        raise argparse.ArgumentTypeError(f"locality d must lie in [1/3, 1], got {text}")
    return [d]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``rebeca`` (under ``pubsift experiment``) and its handler."""
    p.description = DESCRIPTION
    p.add_argument(
        "--strategies",
        type=lambda s: [x.strip() for x in s.split(",") if x.strip()],
        default=None,
        metavar="LIST",
        help=f"comma-separated, from {','.join(STRATEGIES)} (default: all; "
        f"identity with --locality)",
    )
    p.add_argument(
        "--advertisements",
        choices=("both", "on", "off"),
        default="both",
        help="run with advertisements, without, or both (default)",
    )
    p.add_argument(
        "--consumers",
        type=int,
        default=200,
        metavar="N",
        help="max consumers per local broker (default 200)",
    )
    p.add_argument(
        "--step",
        type=int,
        default=20,
        metavar="K",
        help="measure at 1, K, 2K, ... consumers per local broker (default 20)",
    )
    p.add_argument(
        "--kind",
        choices=("auto", *KINDS),
        default="auto",
        help="subscription kind; auto (default): quote for simple and identity, "
        "quote-interval for covering and merging, as in Fig. 6.2/6.3",
    )
    p.add_argument(
        "--locality",
        type=parse_locality,
        default=None,
        metavar="D",
        help="run the locality experiment (Table 6.3) for d in [1/3, 1], or "
        "'table' for all of Table 6.3's values",
    )
    p.add_argument(
        "--subscriptions",
        type=int,
        default=10,
        metavar="K",
        help="distinct subscriptions per consumer (default 10)",
    )
    p.add_argument(
        "--stocks", type=int, default=1000, metavar="M", help="number of stocks m (default 1000)"
    )
    p.add_argument(
        "--toggles",
        type=int,
        default=20,
        metavar="T",
        help="consumers switched off and on per point to measure the overhead "
        "(default 20, i.e. 400 subscription changes)",
    )
    p.add_argument(
        "--simple-cap",
        type=int,
        default=10,
        metavar="N",
        help="max consumers per local broker for simple routing without "
        "advertisements, whose tables hold 106 entries per subscription "
        "(default 10; its Σ|R| is 106·x exactly)",
    )
    p.add_argument(
        "--index",
        choices=("partitioned", "records"),
        default="partitioned",
        help="routing-table index: per-symbol buckets (default) or the records model's own",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--out",
        type=Path,
        default=Path("rebeca-out"),
        metavar="DIR",
        help="where the CSV and PNG files go (default ./rebeca-out)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="a small run: up to 3 consumers per local broker, 5 toggles",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="J",
        help="run up to J curves at once, each in its own process (default 1)",
    )
    p.add_argument(
        "--from-csv",
        type=Path,
        nargs="+",
        default=None,
        metavar="CSV",
        help="run nothing: read the points of earlier runs from these CSV files "
        "(e.g. curves run separately) and write one CSV and the plots of "
        "them all to --out",
    )
    p.set_defaults(func=run)


def setups(args: argparse.Namespace) -> list[tuple[Setup, list[int]]]:
    """The curves to run and their x axes, from the command line."""
    strategies = args.strategies or (["identity"] if args.locality else list(STRATEGIES))
    for s in strategies:
        if s not in STRATEGIES:
            raise ValueError(
                f"unknown strategy {s!r}; known: {', '.join(STRATEGIES)} "
                f"(flooding has no routing tables)"
            )
    advs = {"both": (False, True), "on": (True,), "off": (False,)}[args.advertisements]
    maximum, step = (3, 1) if args.quick else (args.consumers, args.step)
    points = axis(maximum, step)
    out = []
    for d in args.locality or [None]:
        for s in strategies:
            for adv in advs:
                kind = AUTO_KIND[s] if args.kind == "auto" else args.kind
                pts = points
                if s == "simple" and not adv:  # its own, denser axis up to the cap
                    cap = min(args.simple_cap, maximum)
                    pts = sorted({n for n in points if n <= cap} | set(axis(cap, max(1, cap // 5))))
                out.append(
                    (
                        Setup(
                            s, adv, kind, d, args.stocks, args.subscriptions, args.seed, args.index
                        ),
                        pts,
                    )
                )
    return out


def missing_plot_dependency() -> str | None:
    """What to install for the plots, or None when matplotlib is there."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        return "the plots need matplotlib, which is not installed: pip install 'pubsift[plot]'"
    return None


def run(args: argparse.Namespace, console: Console) -> int:
    """Run the experiment the arguments describe (or read it with ``--from-csv``); write
    the CSV and print the summary on ``console``, then draw the plots. Progress and
    problems go to standard error. Exit 2 on a usage problem or a missing optional
    dependency (found before any work), 1 when a curve or the plots fail."""
    from pubsift.experiments.pool import CurveFailed

    err = Console(stderr=True)
    t0 = time.perf_counter()
    try:
        missing = missing_plot_dependency()
        if missing:
            raise ValueError(missing)
        if args.from_csv:
            from pubsift.experiments.points_csv import read_csv

            rows = [p for path in args.from_csv for p in read_csv(path)]
            kinds = {p.experiment for p in rows}
            if len(kinds) > 1:
                raise ValueError(
                    f"the CSV files mix experiments ({', '.join(sorted(kinds))}); "
                    f"plot tables and locality runs separately"
                )
            experiment = kinds.pop() if kinds else "tables"
        else:
            from pubsift.experiments.progress import execute

            if args.jobs < 1:
                raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
            plan = setups(args)
            experiment = "locality" if args.locality is not None else "tables"
            rows = execute(plan, 5 if args.quick else args.toggles, experiment, args.jobs, err)
    except ValueError as exc:
        err.print(
            f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True, highlight=False
        )  # paths whole
        return 2
    except CurveFailed as exc:
        err.print(f"[red]error:[/red] curve {escape(str(exc))}", soft_wrap=True, highlight=False)
        return 1
    return report(rows, args.out, experiment, time.perf_counter() - t0, console, err)


def report(
    rows: list[Point], out: Path, experiment: str, seconds: float, console: Console, err: Console
) -> int:
    """The CSV and the summary first, the plots last: a failure while plotting loses
    nothing that was computed."""
    from pubsift.experiments.points_csv import write_csv
    from pubsift.experiments.summary import summary_table

    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / f"rebeca-{experiment}.csv"
    write_csv(rows, csv_path)
    console.print(summary_table(rows, experiment, seconds))
    err.print(escape(f"wrote {csv_path}"), soft_wrap=True, highlight=False)
    try:
        from pubsift.experiments import figures

        pngs = figures.plot(rows, out, experiment == "locality")
    except Exception as exc:
        err.print(
            "[red]error:[/red] "
            + escape(
                f"the plots failed ({type(exc).__name__}: {exc}); the points are in "
                f"{csv_path} (redraw with --from-csv {csv_path})"
            ),
            soft_wrap=True,
            highlight=False,
        )
        return 1
    err.print(escape(f"wrote {', '.join(str(p) for p in pngs)}"), soft_wrap=True, highlight=False)
    return 0
