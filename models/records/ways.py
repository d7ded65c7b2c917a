"""The two ways of matching a chunk's trusted rows, and :class:`Ways`, the chooser that
measures them on the index's own rows.

Under the compiled walk (``models/records/_walk.pyx``) a chunk's rows are either matched
column-wise (:mod:`~pubsift.models.records.column_matching`) or walked: each trusted row's
flat event is made from the leaf columns' Python values (dotted names, a null left out)
and walked like ``RecordsIndex.match`` (:func:`walk_rows`, built in C: no Python call per
row); in a wire batch a null in a column some filter reads as "null, not missing" sends
its row to the per-row path. Neither way wins everywhere: column-wise is ahead when each
row has few candidate filters to check, the walk when it has many (at 100k quote
subscriptions, 300 deliveries per event, it is several times faster). :class:`Ways`
measures both on the index's own rows and uses the faster, trying the other again now
and then. The walk takes a chunk's rows in runs of 256 (converting only the run's values
to Python; as fast as a whole table of 5,000 rows at once, within 3% at 10k and 100k
subscriptions), so that a try costs one short run and the choice is made within the
first batch; column-wise matching takes the rest of the chunk at once (its NumPy calls
cost per call: in runs of 256 it ran 3× slower), a try of it 2,048 rows. Measured by
``bench/records_batch.py`` (docs/records-syntax.md §5).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any, ClassVar

from pubsift.core.gc_pause import paused
from pubsift.models.records.column_views import Columns

#: The two ways of matching a chunk's trusted rows: walked one by one from the columns by
#: the compiled walk (:func:`walk_rows`), or column-wise (step 3).
WALK, COLUMNS = "walk", "columns"


class Ways:
    """Which way matches an index's rows faster, measured on its own rows: neither wins
    everywhere (``bench/records_batch.py``: column-wise is ahead with few filters per
    row to check, the walk with many, as at 100k quote subscriptions). Without the
    compiled walk, always column-wise. Otherwise each way is tried first, then the one
    with the lower CPU time per row in its latest measurement is used, and the other is
    tried again on one run (:attr:`TRY`) once the way in use has answered
    :attr:`PROBE_ROWS` rows, as the events may change. Each try that finds the way in
    use still faster doubles that gap, up to :attr:`MAX_GAP_ROWS` rows (once there, the
    slower way's tries cost a few percent; the first tries after a switch cost more); a
    switch (a try that finds the other way faster, or the way in use measured slower
    than the other's latest figure) starts again from PROBE_ROWS. The walk matches runs
    of :attr:`RUN` rows (a try is short); column-wise matching takes the rest of the
    chunk at once (its NumPy calls cost per call, not per row). A measurement is the
    time a way spent on all the rows it answered (those it sends to the per-row path
    too) over at least :attr:`MIN_ROWS` rows, run after run; each way's first one is a
    warm-up, not kept (the walk builds its nodes' plans as it goes). ``force`` (WALK or
    COLUMNS) fixes the way. Kept in the index's columnar cache, so an index that changes
    measures anew."""

    #: Rows of one run of each way (column-wise: all the rows left in the chunk).
    RUN: ClassVar[dict[str, int]] = {"walk": 256, "columns": 1 << 62}
    #: Rows of one run when a way is tried.
    TRY: ClassVar[dict[str, int]] = {"walk": 256, "columns": 2048}
    #: Rows answered by the way in use before the other is tried again, at first.
    PROBE_ROWS = 4096
    #: The most rows between two tries.
    MAX_GAP_ROWS = 1 << 18
    #: Rows a measurement needs.
    MIN_ROWS = 64

    def __init__(self, force: str | None = None) -> None:
        self.force = force
        self.cost: dict[str, float | None] = {WALK: None, COLUMNS: None}
        self.warm = {WALK: False, COLUMNS: False}
        self.pending = {WALK: [0.0, 0], COLUMNS: [0.0, 0]}  # seconds, rows
        self.since = 0  # rows answered by the way in use since the last try or switch
        self.gap = self.PROBE_ROWS
        self.trying: str | None = None  # the way being tried, until it is measured
        self.using: str | None = None  # the way in use

    def best(self) -> str:
        return min(self.cost, key=lambda w: self.cost[w])  # type: ignore[arg-type,return-value]

    def pick(self) -> tuple[str, int]:
        """The way of the next run, and the most rows it takes."""
        from pubsift.models.records import plans

        if plans.ENGINE is None:
            return COLUMNS, self.RUN[COLUMNS]
        if self.force is not None:
            return self.force, self.RUN[self.force]
        for way, cost in self.cost.items():
            if cost is None:
                return way, self.TRY[way]
        if self.trying is not None:
            return self.trying, self.TRY[self.trying]
        best = self.best()
        if best != self.using:  # a switch: the events changed, try the other soon
            self.using, self.gap, self.since = best, self.PROBE_ROWS, 0
        if self.since >= self.gap:
            self.since = 0
            self.trying = COLUMNS if best == WALK else WALK
            return self.trying, self.TRY[self.trying]
        return best, self.RUN[best]

    @contextlib.contextmanager
    def timed(self, way: str, rows: int) -> Iterator[None]:
        """Times the block (CPU time of this thread) as ``way`` answering ``rows`` rows."""
        t = time.thread_time()
        yield
        pending = self.pending[way]
        pending[0] += time.thread_time() - t
        pending[1] += rows
        if way != self.trying:
            self.since += rows
        if pending[1] >= self.MIN_ROWS:
            if self.warm[way]:
                self.cost[way] = pending[0] / pending[1]
                if way == self.trying:  # if still slower, tried again later (else a switch)
                    self.trying = None
                    self.gap = min(2 * self.gap, self.MAX_GAP_ROWS)
            self.warm[way] = True
            pending[:] = [0.0, 0]


def ways(index: Any) -> Ways:
    """The index's :class:`Ways` (in its columnar cache)."""
    cache = index._columnar_cache()
    if "ways" not in cache:
        cache["ways"] = Ways(FORCE)
    return cache["ways"]


#: None: the faster way, measured (:class:`Ways`); WALK or COLUMNS: that way (tests).
FORCE: str | None = None


def runs(w: Ways, rows: Any) -> Iterator[tuple[str, Any]]:
    """``rows`` (an array of row numbers) in runs, each with the way that matches it
    (:meth:`Ways.pick`, asked as each run starts)."""
    i = 0
    while i < len(rows):
        way, size = w.pick()
        yield way, rows[i : i + size]
        i += size


def walk_rows(index: Any, cols: Columns, rows: Any, flat: bool = False) -> Any:
    """The answers of the chunk's rows ``rows`` (an ascending array; trusted: none holds a list, an inexact
    number or a null that must be told from a missing attribute), by the compiled walk:
    each row's flat event is made from the leaf columns' Python values (dotted names,
    a null left out) and walked, ``RecordsIndex.match``'s answer. A list of answer
    sets, or with ``flat`` (counts, keys): each row's number of keys, and its keys one
    row after the other."""
    from pubsift.models.records import plans

    names = list(cols.leaves)
    engine: Any = plans.ENGINE
    if not len(rows):
        return ([], []) if flat else []
    lo, hi = int(rows[0]), int(rows[-1]) + 1  # only the run's rows are converted
    columns = [col.slice(lo, hi - lo).to_pylist() for _, col in cols.leaves.values()]
    local = (rows - lo).tolist()
    if flat:
        return engine.match_rows_flat(index._root, names, columns, local)
    with paused():  # answer sets hold keys only: no cycles for the collector to find
        return engine.match_rows(index._root, names, columns, local)
