"""What the console shows while Spark works (issue 12 §2 "Output": "a progress bar while
Spark works"): one line per stage of the job, with a bar of Spark's tasks on a terminal
(polled from Spark's status tracker), and the wall time of each stage for the summary.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

#: seconds between two polls of Spark's status tracker
POLL = 0.2


class Stages:
    """Times the job's stages (``with stages.stage("route"): ...``) and shows them."""

    def __init__(self, console: Console, spark: Any = None) -> None:
        self.console = console
        self.spark = spark
        self.seconds: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str, what: str) -> Iterator[None]:
        """Time the stage ``name``; ``what`` is shown while it runs."""
        start = time.perf_counter()
        tracker = self._tracker()
        if tracker is None or not self.console.is_terminal:
            yield
        else:
            with Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("tasks"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            ) as bar:
                task = bar.add_task(what, total=None)
                stop = threading.Event()
                poller = threading.Thread(
                    target=_poll, args=(tracker, bar, task, stop), daemon=True
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

    def _tracker(self) -> Any:
        if self.spark is None:
            return None
        try:
            return self.spark.sparkContext.statusTracker()
        except Exception:
            return None


def _poll(tracker: Any, bar: Progress, task: Any, stop: threading.Event) -> None:
    """Show the tasks of Spark's active stages until ``stop``."""
    while not stop.wait(POLL):
        try:
            total = done = 0
            for sid in tracker.getActiveStageIds():
                info = tracker.getStageInfo(sid)
                if info is not None:
                    total += info.numTasks
                    done += info.numCompletedTasks
        except Exception:
            return
        if total:
            bar.update(task, total=total, completed=done)
