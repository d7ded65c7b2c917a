"""``pubsift ingest`` and ``pubsift route`` on the command line (docs/spark.md)::

    pubsift ingest PATH... --out STORE [--master URL]
    pubsift route JOB.toml [--master URL] [--out DIR] [--format parquet|jsonl]
    pubsift route PATH...|STORE --subscriptions SUBS.jsonl --out DIR [--master URL]

Exit status 2 for everything found before Spark starts (each problem of the job file and the
subscriptions listed with its line), 1 when the Spark job fails, 0 when it ran (quarantined
records are part of a run, not a failure: the summary counts them).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

from pubsift.adapters.spark.jobfile import (
    CSV_READERS,
    DEFAULT_CSV_READER,
    DEFAULT_JSONL_READER,
    JSONL_READERS,
)
from pubsift.adapters.spark.layout import DEFAULT_LAYOUT, LAYOUTS
from pubsift.core.errors import PubsiftError, one_line
from rich.console import Console


def add_ingest_arguments(ing: argparse.ArgumentParser) -> None:
    """``pubsift ingest``: its arguments (the source options of ``pubsift convert``
    included) and its handler."""
    from pubsift.adapters.options import input_options

    ing.add_argument(
        "paths", nargs="+", metavar="PATH", help="files, directories, glob patterns, archives"
    )
    ing.add_argument("--out", required=True, metavar="STORE", help="the event store to write")
    ing.add_argument(
        "-m",
        "--model",
        default=None,
        help="filter model of the events (default: each reader's own)",
    )
    _spark_options(ing)
    input_options(ing)
    ing.set_defaults(func=cmd_ingest)


def add_route_arguments(rt: argparse.ArgumentParser) -> None:
    """``pubsift route``: its arguments and its handler. ``--format`` is the output's
    format here (docs/spark.md); the files' format is ``--input-format`` (``pubsift convert
    --format``)."""
    from pubsift.adapters.options import input_options

    rt.add_argument(
        "paths",
        nargs="+",
        metavar="JOB.toml|PATH|STORE",
        help="a job file, or files/directories/archives, or an event store "
        "that pubsift ingest wrote",
    )
    rt.add_argument(
        "--subscriptions",
        metavar="SUBS.jsonl",
        help="subscribers, one JSON object per line (id, model, filter; "
        "vocabulary and context for concepts)",
    )
    rt.add_argument(
        "--out",
        metavar="DIR",
        help="where deliveries/, quarantine/, events/ and summary.json go (a job file may say)",
    )
    rt.add_argument(
        "-m",
        "--model",
        default=None,
        help="filter model of the events (default: each reader's own)",
    )
    _spark_options(rt)
    input_options(rt, format_option="--input-format")
    rt.add_argument(
        "--format",
        dest="out_format",
        choices=("parquet", "jsonl"),
        default=None,
        help="deliveries and quarantine as Parquet (default) or JSON lines",
    )
    rt.add_argument(
        "--layout",
        choices=LAYOUTS,
        default=None,
        help="deliveries as one dataset sorted by subscriber (sorted, the default: "
        "read one with WHERE subscriber = ...) or a directory per subscriber "
        "(per-subscriber); docs/spark.md",
    )
    rt.set_defaults(func=cmd_route)


def _spark_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--master",
        metavar="URL",
        help="Spark master: local[*] (default), local[N], spark://HOST:PORT, yarn, k8s://...",
    )
    p.add_argument(
        "--conf",
        action="append",
        metavar="KEY=VALUE",
        default=[],
        help="a Spark setting (repeatable): spark.sql.shuffle.partitions=8",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the output of an earlier run (only a directory a pubsift job wrote)",
    )
    p.add_argument(
        "--csv-reader",
        choices=CSV_READERS,
        default=None,
        help="CSV files read by Spark's text source and SQL where that gives exactly what "
        "the Python reader gives (spark, the default) or all by the Python reader in "
        "tasks (python); docs/spark.md",
    )
    p.add_argument(
        "--jsonl-reader",
        choices=JSONL_READERS,
        default=None,
        help="JSON-lines files likewise: by Spark's text source and SQL where that gives "
        "exactly what the Python reader gives (spark, the default) or all by the Python "
        "reader in tasks (python); docs/spark.md",
    )


class UsageError(PubsiftError):
    """A problem of the command line, found before Spark starts."""


def _conf(values: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        key, eq, val = v.partition("=")
        if not eq or not key.strip().startswith("spark."):
            raise UsageError(f"--conf takes spark.KEY=VALUE, not {v!r}")
        out[key.strip()] = val.strip()
    return out


def cmd_ingest(args: argparse.Namespace, console: Console) -> int:
    """Files -> event store. Progress and problems go to standard error, the summary to
    standard output."""
    from pubsift.adapters.options import checked_sources, limits_option
    from pubsift.adapters.spark.job import Settings, ingest

    def prepare() -> tuple[Any, ...]:
        _existing(args.paths)
        sources = checked_sources(args.paths, args, args.model)
        settings = Settings(
            master=args.master,
            conf=_conf(args.conf),
            overwrite=args.overwrite,
            limits=limits_option(args.limit or []),
            native_csv=(args.csv_reader or DEFAULT_CSV_READER) == "spark",
            native_jsonl=(args.jsonl_reader or DEFAULT_JSONL_READER) == "spark",
        )
        return sources, settings

    return _guarded(
        "ingest", prepare, lambda s: ingest(s[0], args.out, s[1], _console(), _results())
    )


def cmd_route(args: argparse.Namespace, console: Console) -> int:
    """Files, a store or a job file -> deliveries. Progress and problems go to standard
    error, the summary to standard output."""
    from pubsift.adapters.options import checked_sources, limits_option
    from pubsift.adapters.spark.job import Settings, route
    from pubsift.adapters.spark.store import store_format

    def prepare() -> tuple[Any, ...]:
        conf = _conf(args.conf)
        limits = limits_option(args.limit or [])
        if len(args.paths) == 1 and args.paths[0].lower().endswith(".toml"):
            from pubsift.adapters.spark.jobfile import load_job

            if args.subscriptions:
                raise UsageError(
                    "a job file names its subscriptions; --subscriptions is for PATH... or STORE"
                )
            given = [o for o, v in _source_options(args) if v]
            if given:
                raise UsageError(
                    f"{', '.join(given)}: a job file's [[source]] tables hold "
                    "the source settings (these options are for PATH...)"
                )
            job = load_job(args.paths[0])
            out_dir = args.out or job.out
            if not out_dir:
                raise UsageError(f"{args.paths[0]}: no out in the job file and no --out")
            # under spark-submit, its --master wins over the job file's
            from pubsift.adapters.spark.session import under_spark_submit

            master = args.master or (None if under_spark_submit() else job.master)
            settings = Settings(
                master=master,
                conf={**job.spark, **conf},
                app_name=job.app_name,
                format=args.out_format or job.format or "parquet",
                overwrite=args.overwrite,
                limits=limits,
                layout=args.layout or job.layout or DEFAULT_LAYOUT,
                native_csv=(args.csv_reader or job.csv_reader or DEFAULT_CSV_READER) == "spark",
                native_jsonl=(args.jsonl_reader or job.jsonl_reader or DEFAULT_JSONL_READER)
                == "spark",
            )
            return job.subscribers, out_dir, settings, job.sources, None
        from pubsift.adapters.spark.subscriptions import load_subscriptions

        if not args.subscriptions or not args.out:
            raise UsageError(
                "route PATH...|STORE needs --subscriptions SUBS.jsonl and --out "
                "DIR (or give a job file: route JOB.toml)"
            )
        stores = [p for p in args.paths if store_format(p) is not None]
        if stores and len(args.paths) > 1:
            raise UsageError(f"{stores[0]} is an event store: route one store, or files")
        subscribers = load_subscriptions(args.subscriptions)
        settings = Settings(
            master=args.master,
            conf=conf,
            format=args.out_format or "parquet",
            overwrite=args.overwrite,
            limits=limits,
            layout=args.layout or DEFAULT_LAYOUT,
            native_csv=(args.csv_reader or DEFAULT_CSV_READER) == "spark",
            native_jsonl=(args.jsonl_reader or DEFAULT_JSONL_READER) == "spark",
        )
        if stores:
            return subscribers, args.out, settings, (), stores[0]
        _existing(args.paths)
        return subscribers, args.out, settings, checked_sources(args.paths, args, args.model), None

    return _guarded(
        "route",
        prepare,
        lambda p: route(
            p[0],
            p[1],
            p[2],
            sources=p[3],
            event_store=p[4],
            console=_console(),
            results=_results(),
        ),
    )


def _source_options(args: argparse.Namespace) -> list[tuple[str, Any]]:
    """The source options of the command line, with their values."""
    return [
        ("--input-format", args.format),
        ("--split", args.split),
        ("--ns", args.ns),
        ("--columns", args.columns),
        ("--delimiter", args.delimiter),
        ("--encoding", args.encoding),
        ("--exclude", args.exclude),
        ("--publisher", args.publisher),
        ("-m/--model", args.model),
    ]


def _existing(paths: list[str]) -> None:
    """UsageError naming every path that names nothing (before Spark starts)."""
    from pubsift.adapters.readers.inputs import missing

    gone = [m for m in map(missing, paths) if m]
    if gone:
        raise UsageError("; ".join(gone))


def _console() -> Console:
    """The job's progress, warnings and problems: standard error."""
    return Console(file=sys.stderr, highlight=False)


def _results() -> Console:
    """The job's summary: standard output, under ``pubsift route`` as under spark-submit
    (whose Python runner sends the driver's standard error to its standard output too)."""
    return Console(file=sys.stdout, highlight=False)


def _guarded(command: str, prepare: Callable[[], Any], run: Callable[[Any], Any]) -> int:
    """Run ``prepare`` (usage problems: exit 2) then the job (Spark failures: exit 1);
    problems on standard error."""
    err = sys.stderr
    from pubsift.adapters.options import OptionError
    from pubsift.adapters.spark.session import SparkSetupError, _root_cause
    from pubsift.adapters.spark.subscriptions import JobError

    try:
        prepared = prepare()
    except JobError as exc:
        err.write(f"pubsift {command}: {len(exc.problems)} problem(s), nothing was run:\n")
        for p in exc.problems:
            err.write(f"  {p}\n")
        return 2
    except (PubsiftError, OptionError, OSError) as exc:
        err.write(f"pubsift {command}: {one_line(exc)}\n")
        return 2
    try:
        run(prepared)
    except SparkSetupError as exc:
        err.write(f"pubsift {command}: {one_line(exc)}\n")
        return 2
    except PubsiftError as exc:
        err.write(f"pubsift {command}: {one_line(exc)}\n")
        return 2
    except KeyboardInterrupt:
        err.write(f"pubsift {command}: interrupted; nothing was written to --out\n")
        return 130
    except Exception as exc:
        err.write(
            f"pubsift {command}: the Spark job failed, nothing was written to --out: "
            f"{type(exc).__name__}: {_root_cause(exc)[:400]}\n"
        )
        if os.environ.get("PUBSIFT_DEBUG"):
            raise
        return 1
    return 0


if __name__ == "__main__":  # spark-submit adapters/spark/cli.py route JOB.toml
    from pubsift.cli import main

    sys.exit(main())
