"""What the console shows while Spark works: each stage of the job as it runs and when it is
done, with the wall time of each stage for the summary.

Inside a stage the progress comes from Spark's status store (what its progress bar and UI
show, read through ``SparkContext``; :func:`snapshot`): the tasks done of the active
stages, and the rows read and written so far (counted by Spark as its tasks end, and from
the executors' heartbeats while they run). On a terminal it is a rich progress bar; when the
output is a file or a pipe, a plain line every :data:`PLAIN_EVERY` seconds (a log reader
sees the job move, and no control characters). On Spark Connect, which offers no status
tracker to a client, the progress is what its server reports to the client's progress
handlers (``SparkSession.registerProgressHandler``): tasks done and bytes read.
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
    """The active stages of the job, summed: tasks done of all, rows read and written (or,
    on Spark Connect, bytes read)."""

    done: int = 0
    total: int = 0
    rows_in: int = 0
    rows_out: int = 0
    bytes_in: int | None = None

    def text(self) -> str:
        if not self.total:
            return "waiting for tasks"
        return f"{self.done}/{self.total} tasks, {self.amounts()}"

    def amounts(self) -> str:
        if self.bytes_in is not None:
            return f"{self.bytes_in:,} bytes read"
        return f"{self.rows_in:,} rows read, {self.rows_out:,} written"


class ConnectProgress:
    """A progress handler of a Spark Connect session: keeps the last report of the
    server (stages with their tasks and bytes read) as a :class:`Snapshot`."""

    def __init__(self) -> None:
        self.latest = Snapshot()

    def __call__(self, stages: Any, inflight_tasks: int, operation_id: Any, done: bool) -> None:
        got = [s for s in stages or () if not s.done]
        self.latest = Snapshot(
            sum(s.num_completed_tasks for s in got),
            sum(s.num_tasks for s in got),
            bytes_in=sum(s.num_bytes_read for s in got),
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
        self._spark: Any = None
        self._connect: ConnectProgress | None = None
        self.spark = spark
        self.seconds: dict[str, float] = {}
        #: called as each stage begins (raises to stop the job there)
        self.check: Callable[[], None] = lambda: None

    @property
    def spark(self) -> Any:
        return self._spark

    @spark.setter
    def spark(self, spark: Any) -> None:
        """The session whose progress is shown (a Spark Connect session: through a
        progress handler registered here)."""
        self._spark, self._connect = spark, None
        if spark is not None and snapshot(spark) is None:
            try:
                handler = ConnectProgress()
                spark.registerProgressHandler(handler)
                self._connect = handler
            except Exception:
                self._connect = None

    def now(self) -> Snapshot | None:
        """The progress of the running stages, or None where Spark tells nothing."""
        if self._spark is None:
            return None
        if self._connect is not None:
            return self._connect.latest
        return snapshot(self._spark)

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
                with _polling(self._bar, (bar, task, stop), stop):
                    yield
        else:
            with _polling(self._lines, (name, start, stop), stop):
                yield
        took = time.perf_counter() - start
        self.seconds[name] = self.seconds.get(name, 0.0) + took
        self.console.print(f"[green]✓[/] {what} [dim]({took:.1f} s)[/]")

    def _bar(self, bar: Progress, task: Any, stop: threading.Event) -> None:
        while not stop.wait(POLL):
            now = self.now()
            if now is None:
                return
            if now.total:
                bar.update(task, total=now.total, completed=now.done, rows=f"· {now.amounts()}")

    def _lines(self, what: str, start: float, stop: threading.Event) -> None:
        every = plain_every()
        while not stop.wait(every):
            now = self.now()
            elapsed = time.perf_counter() - start
            where = f": {now.text()}" if now is not None else ""
            self.console.print(f"… {what}{where} ({elapsed:.0f} s)", soft_wrap=True)


@contextmanager
def _polling(
    target: Callable[..., None], args: tuple[Any, ...], stop: threading.Event
) -> Iterator[None]:
    """Run ``target(*args)`` in a daemon thread while the block runs; then set ``stop``
    and wait for the thread to end."""
    poller = threading.Thread(target=target, args=args, daemon=True, name="progress")
    poller.start()
    try:
        yield
    finally:
        stop.set()
        poller.join()
