"""The main job on the embedded default (``make run`` / ``pubsift run``).

Mühl's stock scenario (000, §6.2) on real data: every daily quote of the S&P 500 in
``../shared/data/quotes`` is published as a records event and matched, through the records
counting index, against a few hundred quote and quote-interval subscriptions. Prints a
delivery summary.
"""
from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import TextIO

from pubsift.core.registry import load_model
from pubsift.models.records import workload


def _data_dir(explicit: str | None) -> Path | None:
    candidates = ([explicit] if explicit else
                  [os.environ.get("PUBSIFT_DATA"), Path.cwd() / ".." / "shared" / "data",
                   workload.QUOTES_DIR.parent])
    for c in candidates:
        if c and (Path(c) / "quotes").is_dir():
            return Path(c).resolve()
    return None


def run_demo(out: TextIO, data_dir: str | None = None, n_subscriptions: int = 300,
             seed: int = 1) -> int:
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    console = Console(file=out)
    data = _data_dir(data_dir)
    if data is None:
        console.print("[bold red]The shared data folder ../shared/data (with quotes/) is absent.[/] "
                      "The main job reads the S&P 500 quotes from it; pass --data DIR or set "
                      "PUBSIFT_DATA to its location.")
        return 1
    model = load_model("records")
    path = workload.quotes_path(directory=data / "quotes")
    console.print(f"reading quotes from [cyan]{path}[/]")
    quotes = workload.load_quotes(path)
    subs = workload.subscriptions(quotes, n_subscriptions, seed=seed)
    index = model.new_index()
    for i, f in enumerate(subs):
        index.add(f, i)
    covered = sum(1 for i, f in enumerate(subs) if index.covering(f) - {i})
    hits: Counter[int] = Counter()
    t0 = time.perf_counter()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("matching quotes", total=len(quotes))
        for n, q in enumerate(quotes, 1):
            hits.update(index.match(q))
            if n % 5000 == 0:
                progress.update(task, completed=n)
    dt = time.perf_counter() - t0
    deliveries = sum(hits.values())
    summary = Table(title="pubsift: S&P 500 quotes through the records index", show_header=False)
    summary.add_row("events (daily quotes)", f"{len(quotes):,}")
    summary.add_row("subscriptions", f"{len(subs):,}")
    summary.add_row("  covered by another subscription", f"{covered:,}")
    summary.add_row("deliveries", f"{deliveries:,}")
    summary.add_row("subscriptions that received nothing", f"{len(subs) - len(hits):,}")
    summary.add_row("matching time", f"{dt:.2f} s ({len(quotes) / dt:,.0f} events/s)")
    console.print(summary)
    top = Table(title="busiest subscriptions")
    top.add_column("deliveries", justify="right")
    top.add_column("subscription")
    for i, c in hits.most_common(5):
        top.add_row(f"{c:,}", model.format_filter(subs[i]))
    console.print(top)
    return 0
