"""What the console shows while Spark works: each stage of the job as it runs and when it is
done, with the wall time of each stage for the summary.

Inside a stage the progress comes from Spark's status store (what its progress bar and UI
show, read through ``SparkContext``; :func:`snapshot`): the tasks done of the active
stages, and the rows read and written so far (counted by Spark as its tasks end, and from
the executors' heartbeats while they run). On a terminal it is a rich progress bar; when the
output is a file or a pipe, a plain line every :data:`PLAIN_EVERY` seconds (a log reader
sees the job move, and no control characters). On Spark Connect, which offers no status
tracker to a client, the plain lines show the elapsed time only.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

#: seconds between two polls of Spark's status store on a terminal
POLL = 0.2

#: seconds between two plain progress lines when the output is not a terminal (the
#: environment variable PUBSIFT_PROGRESS_EVERY changes it)
PLAIN_EVERY = 10.0


@dataclass(frozen=True)
class Snapshot:
    """The active stages of the job, summed: tasks done of all, rows read and written."""

    done: int = 0
    total: int = 0
    rows_in: int = 0
    rows_out: int = 0

    def text(self) -> str:
        if not self.total:
            return "waiting for tasks"
        return (
            f"{self.done}/{self.total} tasks, {self.rows_in:,} rows read, {self.rows_out:,} written"
        )


def snapshot(spark: Any) -> Snapshot | None:
    """The active stages of ``spark``'s application from its status store, or None where
    there is none to read (Spark Connect, a stopped context)."""
    try:
        stages = spark.sparkContext._jsc.sc().statusStore().activeStages()
        done = total = rows_in = rows_out = 0
        for i in range(stages.size()):
            s = stages.apply(i)
            done += s.numCompleteTasks()
            total += s.numTasks()
            rows_in += s.inputRecords()
            rows_out += s.outputRecords()
        return Snapshot(done, total, rows_in, rows_out)
    except Exception:
        return None


def plain_every() -> float:
    """:data:`PLAIN_EVERY`, or PUBSIFT_PROGRESS_EVERY's seconds when it holds a number > 0."""
    try:
        every = float(os.environ.get("PUBSIFT_PROGRESS_EVERY", ""))
    except ValueError:
        return PLAIN_EVERY
    return every if every > 0 else PLAIN_EVERY


class Stages:
    """Times the job's stages (``with stages.stage("route", "..."): ...``) and shows them."""

    def __init__(self, console: Console, spark: Any = None) -> None:
        self.console = console
        self.spark = spark
        self.seconds: dict[str, float] = {}
        #: called as each stage begins (raises to stop the job there)
        self.check: Callable[[], None] = lambda: None

    @contextmanager
    def stage(self, name: str, what: str) -> Iterator[None]:
        """Time the stage ``name``; ``what`` is shown while it runs and when it is done."""
        self.check()
        start = time.perf_counter()
        stop = threading.Event()
        if self.console.is_terminal and self.spark is not None:
            with Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("tasks {task.fields[rows]}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            ) as bar:
                task = bar.add_task(name, total=None, rows="")
                poller = threading.Thread(
                    target=self._bar, args=(bar, task, stop), daemon=True, name="progress"
                )
                poller.start()
                try:
                    yield
                finally:
                    stop.set()
                    poller.join()
        else:
            poller = threading.Thread(
                target=self._lines, args=(name, start, stop), daemon=True, name="progress"
            )
            poller.start()
            try:
                yield
            finally:
                stop.set()
                poller.join()
        took = time.perf_counter() - start
        self.seconds[name] = self.seconds.get(name, 0.0) + took
        self.console.print(f"[green]✓[/] {what} [dim]({took:.1f} s)[/]")

    def _bar(self, bar: Progress, task: Any, stop: threading.Event) -> None:
        while not stop.wait(POLL):
            now = snapshot(self.spark)
            if now is None:
                return
            if now.total:
                rows = f"· {now.rows_in:,} rows read, {now.rows_out:,} written"
                bar.update(task, total=now.total, completed=now.done, rows=rows)

    def _lines(self, what: str, start: float, stop: threading.Event) -> None:
        every = plain_every()
        while not stop.wait(every):
            now = snapshot(self.spark) if self.spark is not None else None
            elapsed = time.perf_counter() - start
            where = f": {now.text()}" if now is not None else ""
            self.console.print(f"… {what}{where} ({elapsed:.0f} s)", soft_wrap=True)
