"""Fixtures of the Spark job tests: one sample of every model with its subscribers, routed
once by the job in this process (the shared ``spark`` session of tests/conftest.py), so
that several tests read one run's outputs rather than each starting a job."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from . import kit

SEED = 20261124


@dataclass
class Sample:
    root: Path
    sources: list[Any]
    entries: list[dict[str, Any]]
    subs_file: Path
    subscribers: list[Any]
    outcomes: list[Any]


@dataclass
class Run:
    out: Path
    summary: dict[str, Any]
    console: str


@pytest.fixture(scope="session")
def sample(tmp_path_factory) -> Sample:
    from pubsift.adapters.spark.subscriptions import load_subscriptions

    root = tmp_path_factory.mktemp("sample")
    sources = kit.write_sample(root, SEED)
    entries = kit.subscriptions(SEED)
    subs_file = kit.write_subscriptions(root / "subs.jsonl", entries)
    return Sample(
        root, sources, entries, subs_file, load_subscriptions(str(subs_file)), kit.plain(sources)
    )


def run_route(subscribers, out: Path, **kw: Any) -> Run:
    """``job.route`` in this process (it reuses the running session: getOrCreate)."""
    from pubsift.adapters.spark.job import Settings, route

    settings = Settings(
        format=kw.pop("format", "parquet"),
        overwrite=kw.pop("overwrite", False),
        layout=kw.pop("layout", "sorted"),
    )
    text = io.StringIO()
    summary = route(subscribers, str(out), settings, console=Console(file=text, width=120), **kw)
    return Run(out, summary, text.getvalue())


@pytest.fixture(scope="session")
def routed(spark, sample, tmp_path_factory) -> Run:
    """The sample routed by the job, files -> deliveries, Parquet."""
    out = tmp_path_factory.mktemp("routed") / "out"
    return run_route(sample.subscribers, out, sources=sample.sources)
