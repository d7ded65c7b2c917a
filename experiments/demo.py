"""The quote demo, ``pubsift demo``.

Mühl's stock scenario (Mühl 2002, Large-Scale Content-Based Publish/Subscribe Systems, §6.2)
on real data: daily quotes of S&P 500 symbols are published as records events and matched,
through the records counting index, against a few hundred quote and quote-interval
subscriptions drawn from them. Prints a delivery summary.

By default it reads the bundled sample (:data:`SAMPLE_QUOTES`, the first half-year of twelve
symbols in ``examples/sample/quotes``, made by ``examples/make_sample.py``), so it runs on a
fresh clone; ``--data DIR`` (or the environment variable PUBSIFT_DATA) reads the full year
of all 505 symbols from ``DIR/quotes``
(:func:`~pubsift.models.records.workload.quotes_path`). Both quote files are read: Kaggle's
header ``date,open,high,low,close,volume,Name`` and the records wire form
``symbol,price,open,high,low,volume,date`` of the sample, plain or gzip-compressed.
"""

from __future__ import annotations

import csv
import gzip
import io
import sys
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from pubsift.core.errors import PubsiftError
from pubsift.core.registry import load_model
from pubsift.models.records import Record, workload

if TYPE_CHECKING:
    from rich.console import Console

#: The bundled sample's quotes (a source checkout's ``examples/``; not in a wheel).
SAMPLE_QUOTES = (
    Path(__file__).resolve().parents[1]
    / "examples"
    / "sample"
    / "quotes"
    / "quotes-2017-02-to-07.csv.gz"
)
#: The sample's header: the records wire form of a quote (workload.py's events).
WIRE_COLUMNS = ("symbol", "price", "open", "high", "low", "volume", "date")
#: Where each of Kaggle's columns (workload.COLUMNS) is in a wire-form row.
_FROM_WIRE = tuple(
    WIRE_COLUMNS.index(c) for c in ("date", "open", "high", "low", "price", "volume", "symbol")
)


class QuotesError(Exception):
    """The quotes file cannot be used at all (missing, unreadable, wrong header, no rows)."""


def _open(path: Path) -> TextIO:
    """The quotes file as text with surrogate escapes (bad bytes are reported per line)."""
    if path.suffix == ".gz":
        return io.TextIOWrapper(
            gzip.open(path, "rb"), encoding="utf-8", errors="surrogateescape", newline=""
        )
    return open(path, encoding="utf-8", errors="surrogateescape", newline="")


def read_quotes(path: Path, err: TextIO) -> tuple[list[Record], int]:
    """The quotes of ``path`` (``.gz``: gzip) and the number of lines skipped: a line that
    is not UTF-8, is not CSV or is not a quote is reported on ``err`` with its file and
    line, and the rest is read. The header is Kaggle's or the wire form's
    (:data:`WIRE_COLUMNS`). Raises QuotesError when nothing can be read, or when the
    gzip stream is corrupt or truncated."""
    quotes: list[Record] = []
    skipped = 0
    header_text = ",".join(workload.COLUMNS)
    wire = False
    try:
        with _open(path) as fh:
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
                    wire = tuple(row) == WIRE_COLUMNS
                    if problem or not (wire or tuple(row) == workload.COLUMNS):
                        raise QuotesError(
                            f"{where}: expected the header {header_text} "
                            f"or {','.join(WIRE_COLUMNS)}, got "
                            + (problem or repr(",".join(row)[:200]))
                        )
                    continue
                if not problem:
                    try:
                        if wire and len(row) == len(WIRE_COLUMNS):
                            row = [row[i] for i in _FROM_WIRE]
                        quotes.append(workload.quote(row, where))
                        continue
                    except PubsiftError as exc:
                        problem = " ".join(getattr(exc, "message", str(exc)).split())
                err.write(f"{where}: {problem}; skipped\n")
                skipped += 1
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise QuotesError(f"{path}: corrupt or truncated gzip stream ({exc})") from None
    except OSError as exc:
        raise QuotesError(f"{path}: cannot read the quotes file: {exc.strerror or exc}") from None
    if not quotes:
        raise QuotesError(
            f"{path}: no quotes to route ("
            + (
                f"{skipped} bad lines"
                if skipped
                else "the file holds no rows after the header"
                if rows.line_num
                else f"the file is empty; expected the header {header_text}"
            )
            + ")"
        )
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


def run_demo(
    console: Console,
    data_dir: str | None = None,
    origin: str = "--data",
    n_subscriptions: int = 300,
    seed: int = 1,
    err: TextIO = sys.stderr,
) -> int:
    """The quote demo over the bundled sample, or over ``data_dir/quotes`` (the full year)
    when given (``origin`` says by what: ``--data`` or ``PUBSIFT_DATA``); the results on
    ``console``. 0 on success, 1 when quote lines were skipped (each reported on ``err``),
    2 when the quotes file is absent or cannot be used (one line on ``err``)."""
    from rich.progress import Progress
    from rich.table import Table

    if data_dir is None and not SAMPLE_QUOTES.is_file():
        err.write(
            f"pubsift demo: the bundled sample quotes {SAMPLE_QUOTES} are absent "
            "(examples/ is in a source checkout); pass --data DIR or set "
            "PUBSIFT_DATA=DIR, the shared data folder with "
            f"quotes/{workload.QUOTES_1YR}\n"
        )
        return 2
    model = load_model("records")
    try:
        path = (
            SAMPLE_QUOTES if data_dir is None else workload.quotes_path(Path(data_dir) / "quotes")
        )
        console.print(f"reading quotes from [cyan]{path}[/]")
        quotes, skipped = read_quotes(path, err)
    except FileNotFoundError as exc:
        err.write(
            f"pubsift demo: {' '.join(str(exc).split())} (the shared data folder "
            f"{data_dir}, given by {origin}; --data DIR or PUBSIFT_DATA=DIR names "
            "it)\n"
        )
        return 2
    except (OSError, QuotesError) as exc:
        err.write(f"pubsift demo: {' '.join(str(exc).split())}\n")
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
        err.write(f"pubsift demo: {skipped} bad quote lines skipped\n")
    return 1 if skipped else 0
