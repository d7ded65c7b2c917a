"""The TOML job file of ``pubsift route JOB.toml`` (docs/spark.md, "Job files"), read with
:mod:`tomllib` and checked completely before Spark starts (nothing here imports pyspark)::

    out = "out"                       # optional; --out overrides
    format = "parquet"                # optional: parquet or jsonl
    layout = "sorted"                 # optional: sorted or per-subscriber (docs/spark.md)
    csv_reader = "spark"              # optional: spark or python (docs/spark.md)
    jsonl_reader = "spark"            # optional: spark or python (docs/spark.md)
    subscriptions = "subs.jsonl"      # or [[subscriber]] tables, not both

    [spark]
    master = "local[2]"               # optional; --master overrides
    app_name = "quotes"               # optional
    [spark.conf]
    "spark.sql.shuffle.partitions" = 8

    [[source]]                        # one or more: pubsift.adapters.Source settings
    path = "archive/quotes"
    model = "records"
    columns = { volume = "int" }

Relative paths (a source's ``path``, ``subscriptions``, ``out``) are relative to the job
file's directory and are made absolute, so the job means the same from any working
directory and on a cluster. A source path that does not exist, or a pattern that matches
no file, is a problem (as Spark's readers refuse a missing path). ``[spark.conf]`` values (booleans, integers, floats, strings)
become Spark's strings (``true`` -> ``"true"``); dotted keys written bare
(``spark.sql.shuffle.partitions = 8``, nested tables to TOML) are joined back.

Every problem (a TOML syntax error with its line and column, an unknown key, a source
setting that cannot be used, every bad subscriber) is reported in one
:class:`~pubsift.adapters.spark.subscriptions.JobError`, in file order.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pubsift.adapters.readers.dispatch import check
from pubsift.adapters.readers.inputs import missing
from pubsift.adapters.readers.source import Source
from pubsift.adapters.spark.layout import LAYOUTS
from pubsift.adapters.spark.store import FORMATS
from pubsift.adapters.spark.subscriptions import (
    JobError,
    JobSubscriber,
    Problems,
    load_subscriptions,
    subscribers_from_tables,
)
from pubsift.core.errors import PubsiftError, one_line
from pubsift.core.model import FilterModel

#: the top-level keys of a job file
TOP_KEYS = (
    "spark",
    "source",
    "subscriptions",
    "subscriber",
    "out",
    "format",
    "layout",
    "csv_reader",
    "jsonl_reader",
)
#: who reads CSV files: Spark where it gives exactly what the Python reader gives, or Python
CSV_READERS = ("spark", "python")
DEFAULT_CSV_READER = "spark"
#: the top-level keys whose value is one of a few words, and those words
#: who reads JSON-lines files, likewise
JSONL_READERS = CSV_READERS
DEFAULT_JSONL_READER = "spark"
_CHOICES = {
    "format": FORMATS,
    "layout": LAYOUTS,
    "csv_reader": CSV_READERS,
    "jsonl_reader": JSONL_READERS,
}
SPARK_KEYS = ("master", "app_name", "conf")
DEFAULT_APP_NAME = "pubsift"
#: a job file larger than this is refused unread
MAX_JOB_BYTES = 16 << 20
_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


@dataclass(frozen=True)
class Job:
    """A checked job file: ``sources`` (paths absolute), ``subscribers``, ``spark`` the
    Spark settings (key -> string), ``master``/``out``/``format``/``layout`` (None: not given, the
    command line's or the default applies), ``where`` the job file's path."""

    sources: tuple[Source, ...]
    subscribers: tuple[JobSubscriber, ...]
    spark: Mapping[str, str]
    master: str | None
    app_name: str
    out: str | None
    format: str | None
    where: str
    layout: str | None = None
    csv_reader: str | None = None
    jsonl_reader: str | None = None


def load_job(path: str, models: Mapping[str, FilterModel] | None = None) -> Job:
    """The job of a TOML file, or one JobError listing every problem. ``models`` provides
    model instances by name (default: the installed models)."""
    problems = Problems()
    doc = _toml(path, problems)
    problems.raise_if_any()
    base = os.path.dirname(os.path.abspath(path))
    sources: list[Source] = []
    subscribers: list[JobSubscriber] = []
    spark: dict[str, str] = {}
    settings: dict[str, Any] = {
        "master": None,
        "app_name": DEFAULT_APP_NAME,
        "out": None,
        "format": None,
        "layout": None,
        "csv_reader": None,
        "jsonl_reader": None,
    }
    if "subscriptions" in doc and "subscriber" in doc:
        problems.add(
            f'{path}: give either subscriptions = "FILE" or [[subscriber]] tables, not both'
        )
    elif "subscriptions" not in doc and "subscriber" not in doc:
        problems.add(
            f'{path}: no subscribers: give subscriptions = "FILE" (JSON lines) or '
            "[[subscriber]] tables"
        )
    if "source" not in doc:
        problems.add(f"{path}: no [[source]] table: a job reads at least one source")
    for key, value in doc.items():
        if key == "spark":
            _spark(path, value, spark, settings, problems)
        elif key == "source":
            for n, table in enumerate(_tables(path, key, value, problems), 1):
                _source(path, table, n, base, models, sources, problems)
        elif key == "subscriptions":
            if isinstance(value, str) and value and "subscriber" not in doc:
                _from_file(_resolve(base, value), models, subscribers, problems)
            elif not isinstance(value, str) or not value:
                problems.add(
                    f"{path}: subscriptions is the path of a JSON-lines file (a "
                    f"string), not {value!r:.80}"
                )
        elif key == "subscriber":
            tables = _tables(path, key, value, problems)
            if tables and "subscriptions" not in doc:
                try:
                    subscribers.extend(subscribers_from_tables(tables, path, models))
                except JobError as exc:
                    problems.extend(exc)
        elif key == "out":
            if isinstance(value, str) and value:
                settings["out"] = _resolve(base, value)
            else:
                problems.add(f"{path}: out is a directory path (a string), not {value!r:.80}")
        elif key in _CHOICES:
            choices = _CHOICES[key]
            if value in choices:
                settings[key] = value
            else:
                problems.add(
                    f"{path}: {key} is {' or '.join(map(repr, choices))}, not {value!r:.80}"
                )
        else:
            problems.add(f"{path}: unknown key {key!r:.80}; the keys are {', '.join(TOP_KEYS)}")
    problems.raise_if_any()
    return Job(
        tuple(sources),
        tuple(subscribers),
        spark,
        settings["master"],
        settings["app_name"],
        settings["out"],
        settings["format"],
        path,
        settings["layout"],
        settings["csv_reader"],
        settings["jsonl_reader"],
    )


def _toml(path: str, problems: Problems) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_JOB_BYTES + 1)
    except OSError as exc:
        problems.add(f"{path}: cannot read the job file: {exc.strerror or one_line(exc)}")
        return {}
    if len(raw) > MAX_JOB_BYTES:
        problems.add(f"{path}: a job file is at most {MAX_JOB_BYTES:,} bytes")
        return {}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        problems.add(
            f"{path}:{line}:{column}: not UTF-8 text (invalid byte "
            f"0x{raw[exc.start]:02x}); TOML files are UTF-8"
        )
        return {}
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        m = _TOML_POSITION.search(message)
        if m:
            problems.add(f"{path}:{m[1]}:{m[2]}: invalid TOML: {message[: m.start()]}")
        else:
            problems.add(f"{path}: invalid TOML: {one_line(exc)}")
    except RecursionError:
        problems.add(f"{path}: invalid TOML: nested too deeply")
    return {}


def _resolve(base: str, path: str) -> str:
    """``path`` relative to the job file's directory ``base`` (absolute paths kept). A
    relative path that resolves under the working directory stays relative to it, so
    that sources keep short, stable labels (``examples/sample/quotes/a.csv#3``)."""
    path = os.path.expanduser(path)
    if os.path.isabs(path):
        return os.path.normpath(path)
    full = os.path.normpath(os.path.join(base, path))
    rel = os.path.relpath(full)
    return full if rel == ".." or rel.startswith(".." + os.sep) else rel


def _tables(path: str, key: str, value: Any, problems: Problems) -> list[Mapping[str, Any]]:
    """The tables of an array of tables ``[[key]]``; anything else is a problem."""
    if isinstance(value, list) and all(isinstance(t, Mapping) for t in value):
        return value
    problems.add(
        f"{path}: {key} is an array of tables (write [[{key}]] before each), not "
        f"{'a single table' if isinstance(value, Mapping) else repr(value)[:80]}"
    )
    return []


def _spark(
    path: str, value: Any, spark: dict[str, str], settings: dict[str, Any], problems: Problems
) -> None:
    if not isinstance(value, Mapping):
        problems.add(f"{path}: spark is a table ([spark]), not {value!r:.80}")
        return
    for key, v in value.items():
        if key in ("master", "app_name"):
            if isinstance(v, str) and v.strip():
                settings[key] = v
            else:
                problems.add(f"{path}: [spark] {key} is a non-empty string, not {v!r:.80}")
        elif key == "conf":
            if isinstance(v, Mapping):
                _conf(path, v, "", spark, problems)
            else:
                problems.add(f"{path}: [spark] conf is a table ([spark.conf]), not {v!r:.80}")
        else:
            problems.add(
                f"{path}: [spark] unknown key {key!r:.80}; the keys are "
                f"{', '.join(SPARK_KEYS)} (Spark settings go in [spark.conf])"
            )


def _conf(
    path: str, table: Mapping[str, Any], prefix: str, spark: dict[str, str], problems: Problems
) -> None:
    """Spark settings -> strings; a nested table (bare dotted keys) is joined back."""
    for key, v in table.items():
        name = prefix + key
        if isinstance(v, Mapping):
            _conf(path, v, name + ".", spark, problems)
            continue
        if name in spark:
            problems.add(f"{path}: [spark.conf] {name!r:.80} is given twice")
        elif isinstance(v, bool):
            spark[name] = "true" if v else "false"
        elif isinstance(v, int):
            spark[name] = str(v)
        elif isinstance(v, float) and math.isfinite(v):
            spark[name] = repr(v)
        elif isinstance(v, str):
            spark[name] = v
        else:
            problems.add(
                f"{path}: [spark.conf] {name!r:.80} is a string, number or boolean, not {v!r:.80}"
            )


def _source(
    path: str,
    table: Mapping[str, Any],
    n: int,
    base: str,
    models: Mapping[str, FilterModel] | None,
    sources: list[Source],
    problems: Problems,
) -> None:
    label = f"{path}: [[source]] {n}"
    spec = dict(table)
    if isinstance(spec.get("path"), str) and spec["path"]:
        spec["path"] = _resolve(base, spec["path"])
    try:
        src = Source.from_mapping(spec)
        check([src], models)
    except PubsiftError as exc:
        problems.add(f"{label}: {one_line(exc)}")
        return
    except Exception as exc:
        problems.add(f"{label}: cannot be used ({type(exc).__name__}: {one_line(exc)[:300]})")
        return
    gone = missing(src.path)
    if gone:
        problems.add(f"{label}: {gone}")
        return
    sources.append(src)


def _from_file(
    path: str,
    models: Mapping[str, FilterModel] | None,
    subscribers: list[JobSubscriber],
    problems: Problems,
) -> None:
    try:
        subscribers.extend(load_subscriptions(path, models))
    except JobError as exc:
        problems.extend(exc)


__all__ = ["FORMATS", "TOP_KEYS", "Job", "load_job"]
