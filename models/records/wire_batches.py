"""A batch of JSON texts read the faster of two ways, measured on the index's own rows.

``RecordsIndex.match_wire_batch`` answers a batch of event texts either

* *by scan*: each text read by the index's selective scan (``parse_wire``: only the
  attributes its filters name, :mod:`~pubsift.models.records.selection`) and matched by
  the walk, row by row (:func:`columnar.match_rows`); or
* *by Arrow*: the batch parsed by Arrow's JSON reader into columns, then matched
  column-wise or by the walk (:func:`columnar.match_wire_batch`).

Neither wins everywhere: Arrow builds every field of every row (on citylots2-shaped
GeoJSON texts, whose coordinates no filter of a simple rule set reads, the scan is
several times faster), while on small flat events matched column-wise against many
filters Arrow's columns win. :class:`Choice` measures both on the rows of the batches
(CPU time of this thread per row; each way's first measurement is a warm-up: the walk
builds its plans as it goes), uses the faster, and tries the other again on a slice once
the way in use has answered :attr:`Choice.GAP` rows (doubling while it stays ahead, as
:class:`ways.Ways` does one level below, and at least so far that a losing try costs about
1 % of the rows answered in between). Both ways give the same answer: the
per-row answer of ``load_event(strict_json.loads(text))``.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from pubsift.core.errors import EventError
from pubsift.models.records.events import Record

SCAN, ARROW = "scan", "arrow"
#: None: the faster way, measured (:class:`Choice`); SCAN or ARROW: that way (tests).
FORCE: str | None = None


class Choice:
    """Which way answers the next rows (:meth:`pick`), from the latest measurements
    (:meth:`record`)."""

    #: Rows of one try of each way (Arrow's per-call costs need a longer slice).
    TRY: ClassVar[dict[str, int]] = {SCAN: 512, ARROW: 2048}
    #: Rows answered by the way in use before the other is tried again, at first.
    GAP = 65536
    #: The most rows between two tries.
    MAX_GAP = 1 << 22
    #: A losing try costs at most about 1 / TRIED_SHARE of the rows answered until the next.
    TRIED_SHARE = 100

    def __init__(self) -> None:
        self.cost: dict[str, float | None] = {SCAN: None, ARROW: None}
        self.warm = {SCAN: False, ARROW: False}
        self.gap = self.GAP
        self.since = 0
        self.using: str | None = None

    def pick(self) -> tuple[str, int | None]:
        """(way, most rows it takes: None for the rest of the batch)."""
        if FORCE is not None:
            return FORCE, None
        for way in (SCAN, ARROW):
            if self.cost[way] is None:
                return way, self.TRY[way]
        best = SCAN if self.cost[SCAN] <= self.cost[ARROW] else ARROW  # type: ignore[operator]
        if best != self.using:
            self.using, self.gap, self.since = best, self.GAP, 0
        if self.since >= self.gap:
            self.since = 0
            other = ARROW if best == SCAN else SCAN
            return other, self.TRY[other]
        return best, self.gap - self.since

    def record(self, way: str, seconds: float, rows: int) -> None:
        if not rows:
            return
        if not self.warm[way]:
            self.warm[way] = True
            return
        previous = self.cost[way]
        self.cost[way] = seconds / rows
        if way == self.using:
            self.since += rows
        elif previous is not None and self.using is not None:  # a try
            other = self.cost[self.using]
            cost = self.cost[way]
            if other is not None and cost is not None and cost >= other:
                # lost again: tried again later, the later the more it lost (a try costs
                # (ratio - 1) x its rows more than the way in use: the gap keeps that
                # under about 1 / TRIED_SHARE of the rows answered in between)
                ratio = cost / other if other > 0 else 2.0
                want = int(self.TRIED_SHARE * (ratio - 1) * self.TRY[way])
                self.gap = min(max(2 * self.gap, want), self.MAX_GAP)


def match_wire_batch(index: Any, wires: Any) -> tuple[Any, Any]:
    """See :meth:`RecordsIndex.match_wire_batch`."""
    from pubsift.models.records import columnar
    from pubsift.models.records.arrow_json import as_array
    from pubsift.models.records.column_matching import answer_keys

    if getattr(index, "parse_wire", None) is None or not _scans():
        return columnar.match_wire_batch(index, wires)
    try:
        import numpy as np
        import pyarrow as pa  # noqa: F401 (Arrow's way needs it)
    except ImportError:
        return columnar.match_wire_batch(index, wires)
    texts = wires if isinstance(wires, (list, tuple)) else None
    arr = as_array(wires if texts is not None else _one_chunk(wires))
    if arr is None:  # not strings (or not for Arrow): row by row
        return columnar.match_wire_batch(index, wires)
    cache = index._columnar_cache()
    choice = cache.get("scan_or_arrow")
    if choice is None:
        choice = cache["scan_or_arrow"] = Choice()
    n = len(arr)
    out_r: list[Any] = []
    out_k: list[Any] = []
    lo = 0
    while lo < n:
        way, size = choice.pick()
        hi = n if size is None else min(n, lo + size)
        t = time.thread_time()
        if way == SCAN:
            r, k = _scan_rows(index, arr, texts, lo, hi)
        else:
            r, k = columnar.match_wire_batch(index, arr, (lo, hi))
        out_r.append(r)
        out_k.append(k)
        choice.record(way, time.thread_time() - t, hi - lo)
        lo = hi
    if not out_r:
        return np.empty(0, np.int64), answer_keys(index, [])
    if len(out_r) == 1:
        return out_r[0], out_k[0]
    return np.concatenate(out_r), np.concatenate(out_k)


def _one_chunk(wires: Any) -> Any:
    import pyarrow as pa

    if isinstance(wires, pa.ChunkedArray):
        return wires.combine_chunks() if wires.num_chunks != 1 else wires.chunk(0)
    return wires


def _scan_rows(index: Any, arr: Any, texts: Any, lo: int, hi: int) -> tuple[Any, Any]:
    """Rows lo..hi-1 by scan: each text's bytes straight from the Arrow array's data
    buffer (no Python string made), read by the selective scan; a text it refuses is
    answered by ``load_event(strict_json.loads(text))`` (:func:`columnar.load_row`), which
    answers or raises naming the row."""
    import numpy as np
    import pyarrow as pa
    from pubsift.models.constraints import MAX_INT_DIGITS
    from pubsift.models.records import columnar, plans, selection
    from pubsift.models.records.column_matching import answer_keys, int64_keys
    from pubsift.models.records.limits import MAX_DEPTH

    model, match = index.model, index.match
    fields = index.fields()
    parse = fields.parse
    # the calls of parse_wire and match inlined where nothing else is to do: no integer
    # attributes to check, a flat event for the compiled walk (a row: 1 us of 4-5 here)
    scan = None if index.integer_attrs else selection._scan
    engine, root = plans.ENGINE, index._root
    _, offsets_buf, data = arr.buffers()[:3]
    wide = pa.types.is_large_string(arr.type)
    offsets = np.frombuffer(offsets_buf, dtype=np.int64 if wide else np.int32)
    offsets = offsets[arr.offset + lo : arr.offset + hi + 1].tolist()
    base = offsets[0]
    # the texts' bytes: read in place by the compiled loop, copied only for the row loop
    buf = b"" if data is None else data.slice(base, offsets[-1] - base)
    valid = None if not arr.null_count else arr.is_valid().to_numpy(zero_copy_only=False)
    # the compiled loop reads every row's bytes: a batch holding nulls (refused, naming
    # the first: a null slot may still hold bytes) goes row by row
    compiled = scan is not None and engine is not None and valid is None
    blob = buf if compiled else _bytes(buf)

    def answer(j: int) -> Any:
        row = lo + j
        event = None
        if valid is None or valid[row]:
            text = blob[offsets[j] - base : offsets[j + 1] - base]
            try:
                event = (
                    None if scan is None else scan(text, fields._tree, MAX_DEPTH, MAX_INT_DIGITS)
                )
                if event is None:  # a dotted key (the full parse), or no inlined scan
                    event = parse(text, model)
            except EventError:
                event = None
        if event is None:  # refused by the scan (or null): the per-row answer decides
            wire = texts[row] if texts is not None else arr[row].as_py()
            event = columnar.load_row(model, wire, row)
        if engine is not None and not event.groups and event.__class__ is Record:
            return engine.match(root, event._attrs)
        return match(event)

    counts: list[int] = []
    keys: list[Any] = []
    if compiled:
        # the rows read and walked in one compiled loop (_walk.match_texts), int keys
        # straight into an int64 buffer; the rows it leaves (-1: refused by the scan,
        # null, a dotted key) answered as above
        ints = int64_keys(index)
        counts, found = engine.match_texts(
            blob, offsets, fields._tree, MAX_DEPTH, MAX_INT_DIGITS, root, match, ints
        )
        if ints and -1 not in counts:
            rows = np.repeat(np.arange(lo, hi, dtype=np.int64), counts)
            return rows, np.frombuffer(found, dtype=np.int64)
        keys = np.frombuffer(found, dtype=np.int64).tolist() if ints else found
        if -1 in counts:
            blob = _bytes(buf)
            done, done_keys, at = counts, keys, 0
            counts, keys = [], []
            for j, c in enumerate(done):
                if c < 0:
                    found = answer(j)
                    counts.append(len(found))
                    keys.extend(found)
                else:
                    counts.append(c)
                    keys.extend(done_keys[at : at + c])
                    at += c
    else:
        for j in range(hi - lo):
            found = answer(j)
            counts.append(len(found))
            keys.extend(found)
    rows = np.repeat(np.arange(lo, hi, dtype=np.int64), counts)
    return rows, answer_keys(index, keys)


def _bytes(buf: Any) -> bytes:
    return buf if isinstance(buf, bytes) else buf.to_pybytes()


def _scans() -> bool:
    from pubsift.models.records import selection

    return selection._scan is not None


__all__ = ["ARROW", "FORCE", "SCAN", "Choice", "match_wire_batch"]
