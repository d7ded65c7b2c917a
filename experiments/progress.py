"""Running the curves of ``pubsift experiment rebeca`` under a rich progress bar, one
after the other or in a process pool (:mod:`pubsift.experiments.pool`)."""

from __future__ import annotations

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
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    traffic = experiment == "locality"
    results: list[list[Point]] = [[] for _ in plan]
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("rebeca", total=sum(len(p) for _, p in plan))
        if jobs == 1 or len(plan) == 1:
            for i, (setup, pts) in enumerate(plan):
                progress.update(task, description=f"{setup.label:<40}")
                for point in sweep(setup, pts, toggles, traffic, experiment):
                    results[i].append(point)
                    progress.advance(task)
        else:
            from pubsift.experiments.pool import run_parallel

            run_parallel(
                plan,
                toggles,
                traffic,
                experiment,
                jobs,
                results,
                lambda: progress.advance(task),
                lambda text: progress.update(task, description=text),
            )
    return [p for curve in results for p in curve]
