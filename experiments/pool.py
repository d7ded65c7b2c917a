"""Curves of ``pubsift experiment rebeca`` run in a process pool (``--jobs J``): one curve
per worker process, each measured point sent back through a queue as soon as it is
measured, so the progress bar moves point by point and a failed curve stops the run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pubsift.experiments.rebeca import Point, Setup, sweep


class CurveFailed(Exception):
    """A curve run in a worker process failed (the message names the curve and error)."""


def run_parallel(
    plan: Sequence[tuple[Setup, list[int]]],
    toggles: int,
    traffic: bool,
    experiment: str,
    jobs: int,
    results: list[list[Point]],
    advance: Callable[[], None],
    describe: Callable[[str], None],
) -> None:
    """Every curve of ``plan`` in a pool of ``jobs`` processes; the points of curve i are
    appended to ``results[i]`` in order, ``advance`` is called once per point."""
    import multiprocessing
    from queue import Empty

    ctx = multiprocessing.get_context("spawn")  # no forked copies of the parent's state
    # leaving the block terminates the pool: a failed curve does not wait for the others
    with ctx.Manager() as manager, ctx.Pool(jobs) as pool:
        queue = manager.Queue()
        runs = [
            pool.apply_async(_curve, (i, setup, pts, toggles, traffic, experiment, queue))
            for i, (setup, pts) in enumerate(plan)
        ]
        pending = sum(len(p) for _, p in plan)
        describe(f"{len(plan)} curves, {jobs} at a time")
        while pending:
            try:
                i, point, error = queue.get(timeout=1.0)
            except Empty:
                for r in runs:
                    if r.ready() and not r.successful():
                        r.get()  # raises what ended the worker
                continue
            if error is not None:
                raise CurveFailed(f"{plan[i][0].label}: {error}")
            results[i].append(point)
            pending -= 1
            advance()
        for r in runs:
            r.get()


def _curve(
    i: int,
    setup: Setup,
    points: list[int],
    toggles: int,
    traffic: bool,
    experiment: str,
    queue: Any,
) -> None:
    """One curve, in a worker process: every point goes to ``queue`` as (i, point, None);
    an error as (i, None, message), so the parent stops waiting and reports it."""
    try:
        for point in sweep(setup, points, toggles, traffic, experiment):
            queue.put((i, point, None))
    except Exception as exc:
        queue.put((i, None, f"{type(exc).__name__}: {exc}"))
