"""Columnar matching of records events on Arrow batches (the Spark job's route stage).

The Spark job's route stage holds a batch of events as the JSON texts of their wire form
(``json.dumps(model.dump_event(e))``). The per-row path parses each text, builds a
:class:`~pubsift.models.records.events.Record` and walks the index: about 2.7 µs of
``json.loads``, 8 µs of ``Record.of`` and the walk per event. :func:`match_wire_batch`
answers the same question for the whole batch at once:

1. **Parse in C++.** The texts that look like one JSON object on one line are parsed by
   ``pyarrow.json.read_json`` into typed columns (:mod:`~pubsift.models.records.arrow_json`),
   flattened by dotted names (:mod:`~pubsift.models.records.column_views`).
2. **Trust only what equals the per-row answer.** Anything the Arrow parse does not
   reproduce exactly goes to the exact per-row path (``strict_json.loads``, ``load_event``,
   ``RecordsIndex.match``) for the rows concerned: a chunk Arrow refuses (bad JSON,
   duplicate keys, a column holding numbers in one row and strings in another, ...) is
   split in halves down to :data:`MIN_CHUNK` rows; so is a chunk whose schema has an empty
   name, two columns with one dotted name, nesting past
   :data:`~pubsift.models.records.column_views.MAX_STRUCT_DEPTH` or a type
   other than strings, int64, doubles, booleans, nulls, structs and lists of scalars (but
   where most rows hold such a value, arrays of objects say, the chunk's rows go to the
   per-row path at once: its halves would hold them too); and
   single rows go to the per-row path when they hold a list (Arrow's lists are not
   trusted: ``[null, 1]`` came back as ``[1, 0]``), a number that is not finite or not
   below 2^53 in magnitude (integers beyond it would be rounded as doubles), or no
   non-null scalar at all (``{}`` is refused, ``{"a": null}`` is not). Arrow's null is
   both JSON null and a missing attribute: where a filter's constraint tells them apart
   (``exists``, ``= null``, ...), the row's text is parsed with ``strict_json.loads`` to find
   out.
3. **Match column-wise** (:mod:`~pubsift.models.records.column_matching`): each held
   filter anchored by its most selective constraint, the anchors probed with the chunk's
   distinct values into (row, filter) candidate pairs, their other constraints checked on
   the pairs, the pairs that pass turned into (row, key) pairs.

**Walked rows.** Under the compiled walk a chunk's trusted rows may instead be walked one
by one from the columns' Python values; :class:`~pubsift.models.records.ways.Ways`
measures both ways on the index's own rows and uses the faster
(:mod:`~pubsift.models.records.ways`).

Measured with ``bench/records_batch.py`` (5-year quotes, Mühl's quote and quote-interval
subscriptions, 20,000 events in batches of 10,000, CPU time of one process, median of 5,
answers compared): at 10k subscriptions 620,000 events/s, 6.7× the per-row path's 92,000
in the file's order (7.4× in date order); at 1k 8.8×. With ``--mix all`` (``Mix()``:
prefixes, portfolios and volumes too, 29 deliveries per event) 5.2× at 10k.

**Tables.** :func:`match_table` answers a pyarrow ``Table`` or ``RecordBatch`` holding one
event per row (``RecordsIndex.match_batch``): the same steps 2 and 3 on its columns, after
narrower integers, ``float32`` and dictionary-encoded columns are cast to the trusted types;
a null is a missing attribute (a table has no other way to leave one out), so row r's
answer is ``match(load_event(row))`` with the row's nulls left out, and rows the columns
do not answer exactly (lists, integers past 2^53, non-finite numbers, untrusted types, no
value at all) take that path, raising its EventError with the row's number. The answer
sets are made from the keys themselves with the garbage collector paused
(:mod:`pubsift.core.gc_pause`).

Answers equal the per-row loop's, pair for pair (tests/records/test_columnar.py checks it
differentially with hypothesis, hostile events included, and on the quotes workload).
NumPy and pyarrow come with the ``spark`` extra and are imported here lazily: without
pyarrow the function is the per-row loop (without NumPy too, answering lists). The
columnar state (:func:`new_cache`: the parser's hints, the plan, the chooser) is cached on
the index, dropped when ``add``/``remove`` change it and not pickled
(``RecordsIndex.__getstate__``). docs/records-syntax.md §5; docs/spark.md, "What happens,
stage by stage" (the route stage).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from pubsift.core import strict_json
from pubsift.core.errors import EventError
from pubsift.models.records.arrow_json import ONE_OBJECT, LazyTexts, Parser, as_array
from pubsift.models.records.column_matching import (
    answer_keys,
    answer_sets,
    columnar_plan,
    match_view,
    null_names,
)
from pubsift.models.records.column_views import ArrowView, Columns
from pubsift.models.records.ways import COLUMNS, WALK, runs, walk_rows, ways

#: Chunks that Arrow refuses are split in halves; below this many rows they take the
#: per-row path.
MIN_CHUNK = 8


# ------------------------------------------------------------------------------------------
# the per-row path


def load_row(model: Any, wire: Any, row: int) -> Any:
    """``model.load_event(strict_json.loads(wire))`` (the one JSON policy of
    :mod:`pubsift.core.strict_json`: no key twice, no NaN), every refusal an EventError
    naming the row."""
    try:
        obj = strict_json.loads(wire)
    except (ValueError, TypeError, RecursionError) as exc:
        raise EventError(f"event is not JSON: {exc}", f"row {row}") from None
    return load_object(model, obj, row)


def load_object(model: Any, obj: Any, row: int) -> Any:
    """``model.load_event(obj)``, a refusal an EventError naming the row."""
    try:
        return model.load_event(obj)
    except EventError as exc:
        raise EventError(
            exc.message, f"row {row}" + (f", {exc.where}" if exc.where else "")
        ) from None


def match_rows(index: Any, wires: Sequence[Any], rows: Any = None) -> tuple[list, list]:
    """The per-row answer for ``rows`` (all by default): (rows, keys) lists. A text is read
    by the index's selective scan (``RecordsIndex.parse_wire``: only the attributes its
    filters name, the same answer) when the index has one; a text the scan refuses, or
    leaves to the full read (a key holding a dot), is read by :func:`load_row`, which
    answers or raises."""
    out_rows: list[int] = []
    out_keys: list[Hashable] = []
    model, match = index.model, index.match
    parse = getattr(index, "parse_wire", None)
    for i in range(len(wires)) if rows is None else rows:
        wire = wires[i]
        event = None
        if parse is not None and wire.__class__ is str:
            try:
                event = parse(wire)
            except EventError:
                event = None
        keys = match(event if event is not None else load_row(model, wire, i))
        out_rows.extend([i] * len(keys))
        out_keys.extend(keys)
    return out_rows, out_keys


# ------------------------------------------------------------------------------------------
# the batch


def match_wire_batch(
    index: Any, wires: Any, only: tuple[int, int] | None = None
) -> tuple[Any, Any]:
    """See :meth:`RecordsIndex.match_wire_batch`: Arrow's parser, then column-wise or the
    walk. ``only``: the rows ``range(*only)`` to answer, all by default; rows are numbered
    in ``wires`` either way."""
    try:
        import numpy as np
    except ImportError:  # without NumPy: the per-row loop, as lists
        return match_rows(index, wires, None if only is None else range(*only))
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        rows, keys = match_rows(index, wires, None if only is None else range(*only))
        return np.array(rows, dtype=np.int64), answer_keys(index, keys)

    cache = index._columnar_cache()
    if not isinstance(wires, (pa.Array, pa.ChunkedArray)):
        wires = list(wires)
    arr = as_array(wires)
    if arr is None:
        rows, keys = match_rows(index, wires, None if only is None else range(*only))
        return np.array(rows, dtype=np.int64), answer_keys(index, keys)
    n = len(arr)
    # the wires by row for the per-row path (Python strings, made on demand from Arrow)
    texts: Any = LazyTexts(arr) if isinstance(wires, (pa.Array, pa.ChunkedArray)) else wires
    lo, hi = (0, n) if only is None else only
    clean = np.zeros(n, dtype=bool)
    part = arr if (lo, hi) == (0, n) else arr.slice(lo, hi - lo)
    clean[lo:hi] = (
        pc.match_substring_regex(part, ONE_OBJECT).fill_null(False).to_numpy(zero_copy_only=False)
    )
    slow = np.zeros(n, dtype=bool)
    slow[lo:hi] = ~clean[lo:hi]
    out_r: list[Any] = []
    out_k: list[Any] = []
    stack: list[Any] = [np.flatnonzero(clean)]  # arrays of row numbers
    while stack:
        rows = stack.pop()
        if not len(rows):
            continue
        table = cache["parser"].parse(arr if len(rows) == n else arr.take(rows))
        cols = Columns(table) if table is not None else None
        if cols is None or not cols.ok:
            if len(rows) < MIN_CHUNK or (cols is not None and cols.mostly_untyped()):
                slow[rows] = True
            else:
                half = len(rows) // 2
                stack += [rows[half:], rows[:half]]
            continue
        bad = cols.slow_rows(len(rows))
        slow[rows[bad]] = True
        w, view, texts_first = ways(index), None, None
        for way, run in runs(w, np.flatnonzero(~bad)):
            if way == COLUMNS and view is None:  # made once per chunk, not timed
                plan = columnar_plan(index)
                view = ArrowView(cols, texts, rows, plan.null_names, False)
            with w.timed(way, len(run)):  # both ways answer the rows ``run``
                if way == WALK:
                    # a null where JSON null and missing differ: the text tells which
                    if texts_first is None:
                        texts_first = cols.null_rows(null_names(index), len(rows))
                    by_text = texts_first[run]
                    walked = run[~by_text]
                    counts, keys = walk_rows(index, cols, walked, flat=True)
                    out_r.append(np.repeat(rows[walked], counts))
                    out_k.append(answer_keys(index, keys))
                    if by_text.any():
                        rows_text = rows[run[by_text]]
                        try:
                            r, keys = match_rows(index, texts, rows_text.tolist())
                        except EventError:  # raised below, for the first refused row in order
                            slow[rows_text] = True
                        else:
                            out_r.append(np.array(r, dtype=np.int64))
                            out_k.append(answer_keys(index, keys))
                else:
                    pr, kids = match_view(plan, view, run)
                    pr = rows[pr]
                    if plan.duplicates:  # a key twice for a row: pairs once per run
                        nk = max(len(plan.key_table), 1)
                        uniq = np.unique(pr * nk + kids)
                        pr, kids = uniq // nk, uniq % nk
                    out_r.append(pr)
                    out_k.append(plan.key_table[kids])
    slow_rows = np.flatnonzero(slow)
    if len(slow_rows):  # answer sets: each (row, key) once
        r, keys = match_rows(index, texts, slow_rows.tolist())
        out_r.append(np.array(r, dtype=np.int64))
        out_k.append(answer_keys(index, keys))
    if not out_r:
        return np.empty(0, np.int64), answer_keys(index, [])
    rows_out, keys_out = np.concatenate(out_r), np.concatenate(out_k)
    if len(rows_out) > 1 and (np.diff(rows_out) < 0).any():
        order = np.argsort(rows_out, kind="stable")
        rows_out, keys_out = rows_out[order], keys_out[order]
    return rows_out, keys_out


# ------------------------------------------------------------------------------------------
# a table of events


def is_table(events: Any) -> bool:
    """Is ``events`` a pyarrow Table or RecordBatch (without importing pyarrow)?"""
    return type(events).__module__.startswith("pyarrow") and hasattr(events, "num_rows")


def _normalized(table: Any) -> Any:
    """The table with the column types the columns trust: narrower integers as int64,
    float32 as float64 (both exact), dictionary-encoded columns decoded, nested in
    structs too. Anything else is left as it is (its rows take the per-row path)."""
    import pyarrow as pa

    def norm(t: Any) -> Any:
        if pa.types.is_dictionary(t):
            return norm(t.value_type)
        if pa.types.is_integer(t) and t != pa.uint64():
            return pa.int64()
        if pa.types.is_float32(t) or pa.types.is_float16(t):
            return pa.float64()
        if pa.types.is_struct(t):
            return pa.struct([f.with_type(norm(f.type)) for f in t])
        return t

    schema = pa.schema([f.with_type(norm(f.type)) for f in table.schema])
    if schema.equals(table.schema):
        return table
    try:
        return table.cast(schema)
    except (pa.ArrowException, ValueError):
        return table


def _row_event(model: Any, table: Any, r: int) -> Any:
    """Row ``r`` of the table as a records event (nulls are missing attributes), every
    refusal an EventError naming the row."""

    def drop(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: drop(x) for k, x in v.items() if x is not None}
        return v

    return load_object(model, drop(table.slice(r, 1).to_pylist()[0]), r)


def match_table(index: Any, table: Any) -> list[set[Hashable]]:
    """See :meth:`RecordsIndex.match_batch` (a pyarrow Table or RecordBatch)."""
    import numpy as np
    import pyarrow as pa

    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    table = _normalized(table)
    n = table.num_rows
    cols = Columns(table) if n else None
    out: list[Any]
    if cols is None or not cols.ok:
        slow = np.ones(n, bool)
        out = [set() for _ in range(n)]
    else:
        slow = cols.slow_rows(n)
        out = [None] * n
        w, view = ways(index), None
        for way, run in runs(w, np.flatnonzero(~slow)):
            if way == COLUMNS and view is None:  # made once per table, not timed
                plan = columnar_plan(index)
                view = ArrowView(cols, None, np.arange(n), plan.null_names, True)
            with w.timed(way, len(run)):
                if way == WALK:
                    answers = walk_rows(index, cols, run)
                else:
                    answers = answer_sets(plan, *match_view(plan, view, run), run)
                for r, a in zip(run.tolist(), answers):
                    out[r] = a
    model, match = index.model, index.match
    for r in np.flatnonzero(slow).tolist():
        out[r] = match(_row_event(model, table, r))
    return out


def new_cache(index: Any) -> dict:
    """The columnar state of an index: the Arrow parser's hints now; the plan, the
    null-sensitive names and whether every key is an int64, each made on first use."""
    return {"parser": Parser()}
