"""The pubsift command line.

``pubsift models``   lists the installed filter models and what they provide;
``pubsift readers``  lists the installed file readers (entry-point group pubsift.readers);
``pubsift convert``  reads files, directories, globs and archives into events (JSON lines)
                     and a quarantine file, and prints counts per source and per reason;
``pubsift match``    matches events (JSON lines, or any file the readers know) against filters;
``pubsift ingest``, ``pubsift route``  the Spark job (:mod:`pubsift.adapters.spark.cli`);
``pubsift demo``     the quote demo: S&P 500 quotes through the records index (bundled
                     sample, or the full year with --data DIR or PUBSIFT_DATA);
``pubsift broker``, ``pubsift sub``, ``pubsift pub``  brokers on a network and their clients,
                     ``pubsift stats`` a broker's status (:mod:`pubsift.adapters.broker.cli`);
``pubsift history``  records what the brokers deliver, replays it to late subscribers
                     (:mod:`pubsift.adapters.broker.history`);
``pubsift experiment rebeca``  Mühl's routing experiments reproduced (Mühl 2002,
                     Large-Scale Content-Based Publish/Subscribe Systems, ch. 6).

Every subcommand is one entry of :data:`COMMANDS`, whose module is imported only when the
subcommand runs (:mod:`pubsift.cli.lazy`), and one handler ``func(args, console) -> int``.
Models are reached only through the registry (:mod:`pubsift.core.registry`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pubsift.cli.lazy import LazySubcommands, lazy_subparsers
from pubsift.core.errors import PubsiftError, one_line

#: The subcommands: name -> (one-line help, ``module:function`` adding its arguments and
#: its handler ``func(args, console) -> int``). A subcommand's module is imported only
#: when that subcommand runs (or shows its help): ``pubsift --help`` imports none of them.
COMMANDS: dict[str, tuple[str, str]] = {
    "models": ("list installed filter models", "pubsift.cli.listing:add_models_arguments"),
    "readers": ("list installed file readers", "pubsift.cli.listing:add_readers_arguments"),
    "match": ("match events against filters", "pubsift.cli.match:add_match_arguments"),
    "convert": (
        "read files into events (JSON lines) and a quarantine file",
        "pubsift.cli.convert:add_convert_arguments",
    ),
    "ingest": (
        "convert files and archives into an event store (Spark)",
        "pubsift.adapters.spark.cli:add_ingest_arguments",
    ),
    "route": (
        "route files or an event store to subscribers (Spark)",
        "pubsift.adapters.spark.cli:add_route_arguments",
    ),
    "experiment": (
        "reproduce published experiments (Mühl 2002, ch. 6)",
        "pubsift.cli.demo:add_experiment_arguments",
    ),
    "demo": (
        "the quote demo (S&P 500 quotes through the records index); demo network: brokers",
        "pubsift.cli.demo:add_demo_arguments",
    ),
    "broker": (
        "run a broker daemon (clients and neighbour brokers over TCP)",
        "pubsift.adapters.broker.cli:add_broker_arguments",
    ),
    "sub": (
        "subscribe at a broker and print matching events as JSON lines",
        "pubsift.adapters.broker.cli:add_sub_arguments",
    ),
    "pub": (
        "publish JSON lines or files to a broker",
        "pubsift.adapters.broker.cli:add_pub_arguments",
    ),
    "publish-feed": (
        "poll RSS/RDF/Atom feeds and publish each new item once to a broker",
        "pubsift.adapters.broker.cli:add_publish_feed_arguments",
    ),
    "history": (
        "record what a broker network delivers and replay it to late subscribers",
        "pubsift.adapters.broker.history_cli:add_history_arguments",
    ),
    "stats": (
        "show a broker's status (table sizes, links, rates) in the terminal; --watch",
        "pubsift.adapters.broker.cli:add_stats_arguments",
    ),
}


def build_parser() -> argparse.ArgumentParser:
    from pubsift import __version__

    p = argparse.ArgumentParser(prog="pubsift", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"pubsift {__version__}")
    sub = lazy_subparsers(p, "command")
    for name, (text, target) in COMMANDS.items():
        sub.add_lazy(name, text, target)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run its handler, ``args.func(args, console)``: results
    on ``console`` (rich, standard output), problems and progress on standard error."""
    from rich.console import Console

    args = build_parser().parse_args(argv)
    try:
        status: int = args.func(args, Console())
        return status
    except (PubsiftError, OSError) as exc:
        if isinstance(exc, BrokenPipeError):  # the reader went away (| head): stop quietly
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115  stdout until exit
            return 1
        sys.stderr.write(f"pubsift {args.command}: {one_line(exc)}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write(f"pubsift {args.command}: interrupted\n")
        return 130


__all__ = ["COMMANDS", "LazySubcommands", "build_parser", "main"]
