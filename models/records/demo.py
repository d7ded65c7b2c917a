"""The main job on the embedded default (``make run`` / ``pubsift run``).

Mühl's stock scenario (000, §6.2) on real data: every daily quote of the S&P 500 in
``../shared/data/quotes`` is published as a records event and matched, through the records
counting index, against a few hundred quote and quote-interval subscriptions. Prints a
delivery summary.
"""
from __future__ import annotations

import csv
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import TextIO

from pubsift.core.errors import PubsiftError
from pubsift.core.registry import load_model
from pubsift.models.records import workload
from pubsift.models.records.values import Record


def _data_dir(explicit: str | None) -> Path | None:
    candidates = ([explicit] if explicit else
                  [os.environ.get("PUBSIFT_DATA"), Path.cwd() / ".." / "shared" / "data",
                   workload.QUOTES_DIR.parent])
    for c in candidates:
        if c and (Path(c) / "quotes").is_dir():
            return Path(c).resolve()
    return None


class QuotesError(Exception):
    """The quotes file cannot be used at all (missing, unreadable, wrong header, no rows)."""


def read_quotes(path: Path, err: TextIO) -> tuple[list[Record], int]:
    """The quotes of ``path`` and the number of lines skipped: a line that is not UTF-8, is
    not CSV or is not a quote is reported on ``err`` with its file and line, and the rest
    is read. Raises QuotesError when nothing can be read."""
    quotes: list[Record] = []
    skipped = 0
    header_text = ",".join(workload._COLUMNS)
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as fh:
            rows = csv.reader(fh)
            while True:
                start = rows.line_num + 1
                try:
                    row = next(rows)
                except StopIteration:
                    break
                except csv.Error as exc:
                    problem = f"not CSV: {exc}"
                else:
                    problem = _not_utf8(row)
                where = f"{path}:{start}"
                if start == 1:
                    if problem or tuple(row) != workload._COLUMNS:
                        raise QuotesError(f"{where}: expected the header {header_text}, got "
                                          + (problem or repr(",".join(row)[:200])))
                    continue
                if not problem:
                    try:
                        quotes.append(workload._quote(row, where))
                        continue
                    except PubsiftError as exc:
                        problem = " ".join(getattr(exc, "message", str(exc)).split())
                err.write(f"{where}: {problem}; skipped\n")
                skipped += 1
    except OSError as exc:
        raise QuotesError(f"{path}: cannot read the quotes file: {exc.strerror or exc}") \
            from None
    if not quotes:
        raise QuotesError(f"{path}: no quotes to route ("
                          + (f"{skipped} bad lines" if skipped else
                             "the file holds no rows after the header" if rows.line_num else
                             f"the file is empty; expected the header {header_text}") + ")")
    return quotes, skipped


def _not_utf8(row: list[str]) -> str:
    """Why a row read with surrogate escapes is not UTF-8 text, or ''."""
    for field in row:
        try:
            field.encode("utf-8")
        except UnicodeEncodeError as exc:
            bad = field[exc.start].encode("utf-8", "surrogateescape")[0]
            return f"not UTF-8 text (invalid byte 0x{bad:02x})"
    return ""


def run_demo(out: TextIO, data_dir: str | None = None, n_subscriptions: int = 300,
             seed: int = 1, err: TextIO = sys.stderr) -> int:
    """The main job; 0 on success, 1 when quote lines were skipped (each reported on
    ``err``), 2 when the data folder is absent or the quotes file cannot be used (one line
    on ``err``)."""
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    console = Console(file=out)
    data = _data_dir(data_dir)
    if data is None:
        err.write("pubsift run: the data folder with quotes/ (default ../shared/data) is "
                  "absent; pass --data DIR or set PUBSIFT_DATA to its location\n")
        return 2
    model = load_model("records")
    try:
        path = workload.quotes_path(directory=data / "quotes")
        console.print(f"reading quotes from [cyan]{path}[/]")
        quotes, skipped = read_quotes(path, err)
    except (OSError, QuotesError) as exc:
        err.write(f"pubsift run: {' '.join(str(exc).split())}\n")
        return 2
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
    if skipped:
        err.write(f"pubsift run: {skipped} bad quote lines skipped\n")
    return 1 if skipped else 0
