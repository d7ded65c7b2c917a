"""``pubsift demo`` (the quote demo, :mod:`pubsift.experiments.demo`; ``demo network``:
brokers on 127.0.0.1) and ``pubsift experiment NAME`` (the seeds' experiments)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from pubsift.cli.lazy import LazySubcommands, lazy_subparsers

if TYPE_CHECKING:
    from rich.console import Console

#: the environment variable naming the shared data folder (``pubsift demo``)
DATA_ENV = "PUBSIFT_DATA"

#: ``pubsift demo NAME`` (``pubsift demo`` alone: the quote demo): name -> (one-line help,
#: ``module:function`` adding its arguments and its handler), imported when it runs.
DEMOS: dict[str, tuple[str, str]] = {
    "network": (
        "broker processes on 127.0.0.1, feed/records/concepts publishers, subscribers",
        "pubsift.experiments.network_demo:add_arguments",
    ),
}
#: ``pubsift experiment NAME``, the same way.
EXPERIMENTS: dict[str, tuple[str, str]] = {
    "rebeca": (
        "reproduce Mühl's routing experiments (routing-table sizes, filter-forwarding "
        "overhead, locality)",
        "pubsift.experiments.rebeca_cli:add_arguments",
    ),
}


def cmd_demo(args: argparse.Namespace, console: Console) -> int:
    """The quote demo (:mod:`pubsift.experiments.demo`) on the bundled sample, or on the
    shared data folder named by ``--data DIR`` or the environment variable PUBSIFT_DATA."""
    from pubsift.experiments.demo import run_demo

    if args.data is not None:
        return run_demo(console, data_dir=args.data, origin="--data", err=sys.stderr)
    env = os.environ.get(DATA_ENV) or None
    return run_demo(console, data_dir=env, origin=DATA_ENV, err=sys.stderr)


def add_demo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data",
        default=None,
        metavar="DIR",
        help=f"the shared data folder: read the full year of quotes from "
        f"DIR/quotes (default: ${DATA_ENV} if set, else the bundled sample, "
        f"examples/sample/quotes)",
    )
    p.set_defaults(func=cmd_demo)
    sub = lazy_subparsers(p, "demo", required=False, metavar="{network}")
    for name, (text, target) in DEMOS.items():
        sub.add_lazy(name, text, target)


def add_experiment_arguments(p: argparse.ArgumentParser) -> None:
    sub: LazySubcommands = lazy_subparsers(p, "experiment")
    for name, (text, target) in EXPERIMENTS.items():
        sub.add_lazy(name, text, target)
