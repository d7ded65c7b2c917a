"""Batches of answers made with the cyclic garbage collector paused.

A batch entry point (``FilterIndex.match_batch``) keeps one answer set per event. Each new
set is a container the cyclic collector tracks, so a batch of N answers sets off about
N / 700 young-generation collections, each walking the sets made since the last one, and
promotes them to be walked again: at 10,000 quote subscriptions (29 keys per answer) that
cost about a third of the batch (``bench/records_match.py``: 128K events/s keeping the
answers against 184K dropping them). Answer sets hold only keys and cannot form cycles, so
the collector is paused while a chunk of answers is made and resumed after it: garbage
with cycles that matching itself might leave waits at most one chunk.
"""

from __future__ import annotations

import gc
import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Answers made per pause of the collector.
CHUNK = 4096


def map_paused(fn: Callable[[T], R], items: Iterable[T], chunk: int = CHUNK) -> list[R]:
    """``[fn(x) for x in items]``, the cyclic collector paused (if it runs) over each
    chunk of ``chunk`` items; an exception from ``fn`` propagates with the collector
    resumed."""
    out: list[R] = []
    it: Iterator[T] = iter(items)
    while True:
        part = list(itertools.islice(it, chunk))
        if not part:
            return out
        if not gc.isenabled():
            out.extend([fn(x) for x in part])
            continue
        gc.disable()
        try:
            out.extend([fn(x) for x in part])
        finally:
            gc.enable()
