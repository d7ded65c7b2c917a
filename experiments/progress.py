"""Running the curves of ``pubsift experiment rebeca`` under a rich progress bar, one
after the other or in a process pool (:mod:`pubsift.experiments.pool`). When the output is
not a terminal (a file, a pipe, a CI log) the progress is plain lines instead: one as each
curve starts and one every :data:`~pubsift.adapters.spark.progress.PLAIN_EVERY` seconds
(PUBSIFT_PROGRESS_EVERY), with the points done."""

from __future__ import annotations

import time
from collections.abc import Sequence

from pubsift.experiments.rebeca import Point, Setup, sweep
from rich.console import Console


def execute(
    plan: Sequence[tuple[Setup, list[int]]],
    toggles: int,
    experiment: str,
    jobs: int,
    console: Console,
) -> list[Point]:
    """Run every curve of ``plan`` with a progress bar on ``console``; one process per
    curve if jobs > 1. The points come back in the order of the plan."""
    traffic = experiment == "locality"
    results: list[list[Point]] = [[] for _ in plan]
    total = sum(len(p) for _, p in plan)
    with _shown(console, total) as shown:
        if jobs == 1 or len(plan) == 1:
            for i, (setup, pts) in enumerate(plan):
                shown.describe(setup.label)
                for point in sweep(setup, pts, toggles, traffic, experiment):
                    results[i].append(point)
                    shown.advance()
        else:
            from pubsift.experiments.pool import run_parallel

            run_parallel(
                plan, toggles, traffic, experiment, jobs, results, shown.advance, shown.describe
            )
    return [p for curve in results for p in curve]


class _Bar:
    """The progress as a rich bar (a terminal)."""

    def __init__(self, console: Console, total: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        )
        self.task = self.progress.add_task("rebeca", total=total)

    def __enter__(self) -> _Bar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def describe(self, text: str) -> None:
        self.progress.update(self.task, description=f"{text:<40}")

    def advance(self) -> None:
        self.progress.advance(self.task)


class _Lines:
    """The progress as plain lines (not a terminal): a line as a curve starts, and one
    every ``every`` seconds while points are done."""

    def __init__(self, console: Console, total: int, every: float) -> None:
        self.console, self.total, self.every = console, total, every
        self.done = 0
        self.start = self.last = time.monotonic()

    def __enter__(self) -> _Lines:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self._say("done")

    def describe(self, text: str) -> None:
        self._say(text.strip())

    def advance(self) -> None:
        self.done += 1
        if time.monotonic() - self.last >= self.every:
            self._say("")

    def _say(self, what: str) -> None:
        self.last = time.monotonic()
        elapsed = self.last - self.start
        line = f"rebeca: {self.done}/{self.total} points ({elapsed:.0f} s)" + (
            f": {what}" if what else ""
        )
        self.console.print(line, soft_wrap=True, highlight=False, markup=False)


def _shown(console: Console, total: int) -> _Bar | _Lines:
    if console.is_terminal:
        return _Bar(console, total)
    from pubsift.adapters.spark.progress import plain_every

    return _Lines(console, total, plain_every())
