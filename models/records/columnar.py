"""Columnar matching of records events on Arrow batches (the Spark job's route stage).

The Spark job's route stage holds a batch of events as the JSON texts of their wire form
(``json.dumps(model.dump_event(e))``). The per-row path parses each text, builds a
:class:`~pubsift.models.records.events.Record` and walks the index: about 2.7 µs of
``json.loads``, 8 µs of ``Record.of`` and the walk per event. :func:`match_wire_batch`
answers the same question for the whole batch at once:

1. **Parse in C++.** The texts that look like one JSON object on one line (a regular
   expression over the Arrow array) are joined with newlines and parsed by
   ``pyarrow.json.read_json`` into typed columns (nested objects become struct columns,
   addressed by dotted names as ``Record`` flattens them). Strings that look like dates
   would be inferred as timestamps: those fields are parsed again as strings (and
   remembered for the next batches).
2. **Trust only what equals the per-row answer.** Anything the Arrow parse does not
   reproduce exactly goes to the exact per-row path (``json.loads``, ``load_event``,
   ``RecordsIndex.match``) for the rows concerned: a chunk Arrow refuses (bad JSON,
   duplicate keys, a column holding numbers in one row and strings in another, ...) is
   split in halves down to :data:`MIN_CHUNK` rows; so is a chunk whose schema has an empty
   name, two columns with one dotted name, nesting past :data:`MAX_STRUCT_DEPTH` or a type
   other than strings, int64, doubles, booleans, nulls, structs and lists of scalars (but
   where most rows hold such a value, arrays of objects say, the chunk's rows go to the
   per-row path at once: its halves would hold them too); and
   single rows go to the per-row path when they hold a list (Arrow's lists are not
   trusted: ``[null, 1]`` came back as ``[1, 0]``), a number that is not finite or not
   below 2^53 in magnitude (integers beyond it would be rounded as doubles), or no
   non-null scalar at all (``{}`` is refused, ``{"a": null}`` is not). Arrow's null is
   both JSON null and a missing attribute: where a filter's constraint tells them apart
   (``exists``, ``= null``, ...), the row's text is parsed with ``json.loads`` to find out.
3. **Match column-wise.** Each held filter is *anchored* by one of its constraints, the
   most selective first, as the index orders paths: an equality or set membership on
   strings or numbers (a hash by value, probed with the chunk's distinct strings from
   Arrow's dictionary encoding, or ``np.searchsorted`` into the sorted numbers), a prefix
   or suffix (a hash by affix, probed with each distinct string's affixes of the held
   lengths), or a numeric bound (the filters sorted by their finite end, so that those a
   value may satisfy are a prefix of the sorted list: one ``np.searchsorted`` per row).
   NumPy ``repeat`` turns the anchors into (row, filter) candidate pairs, in blocks of at
   most :data:`PAIR_BUDGET` pairs. The filters' numeric constraints (``=``, ``<``,
   ``≤``, ``>``, ``≥``, intervals; a range anchor's other end too) are compared on the
   pairs as float64 arrays (exact: every value and bound is a double or an integer of
   magnitude at most 2^53); any other constraint is tested with the model's compiled
   test (``predicates.compile_test``) on the pair's exact Python value. Filters with no
   anchor are candidates of every row. The pairs that pass become (row, key) pairs
   through the filters' key table.

**Walked rows.** Under the compiled walk (``models/records/_walk.pyx``) step 3 has a
second way: each trusted row's flat event is made from the leaf columns' Python values
(dotted names, a null left out) and walked like ``RecordsIndex.match`` (``walk_rows``,
built in C: no Python call per row); in a wire batch a null in a column some filter
reads as "null, not missing" sends its row to the per-row path. Neither way wins
everywhere: column-wise is ahead when each row has few candidate filters to check, the
walk when it has many (at 100k quote subscriptions, 300 deliveries per event, it is
several times faster). :class:`Ways` measures both on the index's own rows and uses the
faster, trying the other again now and then. The walk takes a chunk's rows in runs of
256 (converting only the run's values to Python; as fast as a whole table of 5,000 rows at
once, within 3% at 10k and 100k subscriptions), so that a try costs one short run and the
choice is made within the first batch; column-wise matching takes the rest of the chunk at
once (its NumPy calls cost per call: in runs of 256 it ran 3× slower), a try of it 2,048
rows.

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
pyarrow the function is the per-row loop (without NumPy too, answering lists). The plan built from the index (anchors, bounds,
key table) is cached on the index, dropped when ``add``/``remove`` change it and not
pickled (``RecordsIndex.__getstate__``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Hashable, Iterator, Sequence
from typing import Any, ClassVar

from pubsift.core.errors import EventError
from pubsift.core.gc_pause import paused
from pubsift.models.constraints import ABSENT, NUM, STR, Constraint, Op
from pubsift.models.records.compiled import compile_test

#: Chunks that Arrow refuses are split in halves; below this many rows they take the
#: per-row path.
MIN_CHUNK = 8
#: Struct columns nested deeper than this take the per-row path (``Record.of`` refuses
#: more than ``limits.MAX_DEPTH`` levels of objects).
MAX_STRUCT_DEPTH = 64
#: Candidate (row, filter) pairs are checked in blocks of rows holding at most this many
#: (memory stays bounded when many filters are candidates of every row).
PAIR_BUDGET = 1 << 20
#: Numbers at or beyond this magnitude are not trusted as float64 (integers past it round).
EXACT = 2.0**53

#: One JSON object on one line: no control characters (a newline would split the line;
#: JSON refuses the others in strings), starting with "{" and ending with "}" (Arrow
#: skips a BOM and ignores what follows the last object of its input; Python refuses both).
_ONE_OBJECT = r"^ *\{[^\x00-\x1f]*\} *$"


# ------------------------------------------------------------------------------------------
# the per-row path


def load_row(model: Any, wire: Any, row: int) -> Any:
    """``model.load_event(json.loads(wire))``, every refusal an EventError naming the row."""
    try:
        obj = json.loads(wire)
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
    filters name, the same answer) when the index has one; a text the scan refuses (it is
    stricter than ``json.loads``: a key twice, say) is read by :func:`load_row`, which
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
# the plan: the index's filters as arrays


def _exact_number(x: Any) -> bool:
    """A number whose float64 is exact and comparable (bool is not a number)."""
    c = x.__class__
    if c is float:
        return x == x  # ±inf are fine bounds; NaN never occurs in filters
    return c is int and -EXACT <= x <= EXACT


def _anchor_values(c: Constraint) -> list | None:
    """The values an anchoring constraint accepts (strings or exact numbers), or None."""
    if c.op is Op.EQ:
        x = c.operand
        return [x] if (x.__class__ is str or _exact_number(x)) else None
    if c.op is Op.IN_SET:
        vals = []
        for k, x in c.operand:
            if not ((k == STR and x.__class__ is str) or (k == NUM and _exact_number(x))):
                return None
            vals.append(x)
        return vals
    return None


def _bounds(c: Constraint) -> tuple | None:
    """(lo, hi, lo_closed, hi_closed) of a numeric constraint, or None."""
    op, x = c.op, c.operand
    if op is Op.IN_RANGE:
        if x.kind != NUM or not (_exact_number(x.lo) and _exact_number(x.hi)):
            return None
        return (float(x.lo), float(x.hi), x.lo_closed, x.hi_closed)
    if op in (Op.EQ, Op.LT, Op.LE, Op.GT, Op.GE) and _exact_number(x):
        v = float(x)
        inf = float("inf")
        return {
            Op.EQ: (v, v, True, True),
            Op.LT: (-inf, v, True, False),
            Op.LE: (-inf, v, True, True),
            Op.GT: (v, inf, False, True),
            Op.GE: (v, inf, True, True),
        }[op]
    return None


def _anchor(c: Constraint) -> tuple | None:
    """How a constraint can anchor its filter, most selective first: (rank, kind, data)
    with kind "hash" (values: strings and exact numbers), "prefix"/"suffix" (a string)
    or "range" (numeric bounds); None if it cannot."""
    vals = _anchor_values(c)
    if vals is not None:
        return ((0 if c.op is Op.EQ else 1, len(vals)), "hash", vals)
    if c.op is Op.PREFIX or c.op is Op.SUFFIX:
        return ((2, -len(c.operand)), c.op.value, c.operand)
    b = _bounds(c)
    if b is not None:
        return ((3, 0), "range", b)
    return None


class _Anchors:
    """The filters anchored on one attribute: strings and numbers by value, prefixes and
    suffixes by string, ranges by their finite end (sorted, so that the filters a value
    may fall into are a prefix of the sorted list)."""

    def __init__(self) -> None:
        self.strs: dict[str, list[int]] = {}
        self.nums: dict[float, list[int]] = {}
        self.prefix: dict[str, list[int]] = {}
        self.suffix: dict[str, list[int]] = {}
        self.ranges: list[tuple[int, float, float, bool, bool]] = []

    def add(self, fid: int, kind: str, data: Any) -> None:
        if kind == "hash":
            for v in data:
                (
                    self.strs.setdefault(v, [])
                    if v.__class__ is str
                    else self.nums.setdefault(float(v), [])
                ).append(fid)
        elif kind == "prefix":
            self.prefix.setdefault(data, []).append(fid)
        elif kind == "suffix":
            self.suffix.setdefault(data, []).append(fid)
        else:
            self.ranges.append((fid, *data))

    def freeze(self) -> None:
        import numpy as np

        nums = sorted(self.nums.items())
        self.num_values = np.array([v for v, _ in nums], dtype=np.float64)
        flat: list[int] = []
        starts = []
        for _, fids in nums:
            starts.append(len(flat))
            flat.extend(fids)
        self.num_start = np.array(starts, dtype=np.int64)
        self.num_count = np.array([len(f) for _, f in nums], dtype=np.int64)
        self.num_flat = np.array(flat, dtype=np.int64)
        self.prefix_lengths = sorted({len(p) for p in self.prefix})
        self.suffix_lengths = sorted({len(s) for s in self.suffix})
        # ranges: by a finite lower end (v >= lo or v > lo), else by the upper end negated
        # (v <= hi iff -hi <= -v); (lo, hi) = (-inf, inf) sorts first by its lower end
        sides: dict[tuple[str, bool], list[tuple[float, int]]] = {}
        for fid, lo, hi, lc, hc in self.ranges:
            if lo != float("-inf") or hi == float("inf"):
                sides.setdefault(("lo", lc), []).append((lo, fid))
            else:
                sides.setdefault(("hi", hc), []).append((-hi, fid))
        self.sorted_ranges = []
        for (side, closed), items in sides.items():
            items.sort()
            self.sorted_ranges.append(
                (
                    np.array([v for v, _ in items], dtype=np.float64),
                    np.array([f for _, f in items], dtype=np.int64),
                    closed,
                    side == "hi",
                )
            )
        self.has_strings = bool(self.strs or self.prefix or self.suffix)

    def for_strings(self, dictionary: list[str]) -> tuple[Any, Any, Any]:
        """(start, count, flat): the filters anchored on each string of ``dictionary``
        (plus one empty slot for nulls), as runs of one flat array."""
        import numpy as np

        strs, prefix, suffix = self.strs, self.prefix, self.suffix
        plen, slen = self.prefix_lengths, self.suffix_lengths
        flat: list[int] = []
        starts, counts = [], []
        for s in dictionary:
            start = len(flat)
            hit = strs.get(s)
            if hit:
                flat.extend(hit)
            for n in plen:
                if n > len(s):
                    break
                hit = prefix.get(s[:n])
                if hit:
                    flat.extend(hit)
            for n in slen:
                if n > len(s):
                    break
                hit = suffix.get(s[len(s) - n :])
                if hit:
                    flat.extend(hit)
            starts.append(start)
            counts.append(len(flat) - start)
        return (
            np.array(starts + [0], dtype=np.int64),
            np.array(counts + [0], dtype=np.int64),
            np.array(flat, dtype=np.int64),
        )


class Plan:
    """The index's filters in arrays: anchors by attribute, numeric bounds by attribute,
    the other constraints as compiled tests, and the keys of each filter."""

    def __init__(self, index: Any) -> None:
        import numpy as np

        entries = list(index._entries.values())
        key_ids: dict[Hashable, int] = {}
        keys: list[Hashable] = []
        fk_start: list[int] = []
        fk_count: list[int] = []
        fk_flat: list[int] = []
        self.duplicates = False  # some key is held by several filters
        for e in entries:
            fk_start.append(len(fk_flat))
            fk_count.append(len(e.keys))
            for k in e.keys:
                kid = key_ids.get(k)
                if kid is None:
                    kid = key_ids[k] = len(keys)
                    keys.append(k)
                else:
                    self.duplicates = True
                fk_flat.append(kid)
        self.key_table = _key_array(np, keys)
        # the keys themselves, for answer sets (no new int objects per delivery)
        self.key_objects = np.empty(len(keys), dtype=object)
        self.key_objects[:] = keys
        self.fk_start = np.array(fk_start, dtype=np.int64)
        self.fk_count = np.array(fk_count, dtype=np.int64)
        self.fk_flat = np.array(fk_flat, dtype=np.int64)

        n = len(entries)
        self.anchors: dict[str, _Anchors] = {}
        floating: list[int] = []  # filters without an anchor: candidates of every row
        bounds: dict[str, list] = {}
        str_eq: dict[str, tuple] = {}
        self.general: dict[int, list[tuple[str, Any]]] = {}
        for fid, e in enumerate(entries):
            best = None
            for name, c in e.filter.constraints:
                a = _anchor(c)
                if a is not None and (best is None or a[0] < best[0][0]):
                    best = (a, name)
            if best is None:
                floating.append(fid)
                exact = None
            else:
                (_, kind, data), exact = best
                self.anchors.setdefault(exact, _Anchors()).add(fid, kind, data)
                if kind == "range":
                    exact = None  # candidates lie below one end: test both ends
            for name, c in e.filter.constraints:
                if name == exact:
                    continue
                b = _bounds(c)
                if c.op is Op.EQ and c.operand.__class__ is str:
                    col = str_eq.get(name)
                    if col is None:
                        col = str_eq[name] = (np.zeros(n, bool), [None] * n)
                    col[0][fid] = True
                    col[1][fid] = c.operand
                elif b is None:
                    self.general.setdefault(fid, []).append((name, compile_test(c)))
                else:
                    bcol = bounds.get(name)
                    if bcol is None:
                        inf = float("inf")
                        bcol = bounds[name] = [
                            np.zeros(n, bool),
                            np.full(n, -inf),
                            np.full(n, inf),
                            np.ones(n, bool),
                            np.ones(n, bool),
                        ]
                    bcol[0][fid] = True
                    bcol[1][fid], bcol[2][fid], bcol[3][fid], bcol[4][fid] = b
        for anchor in self.anchors.values():
            anchor.freeze()
        self.floating_ids = np.array(floating, dtype=np.int64)
        self.bounds = bounds
        # string equalities besides the anchor: per attribute, which filters have one,
        # their distinct constants and each filter's constant as an index into them
        self.str_eq: dict[str, tuple] = {}
        for name, (has, consts) in str_eq.items():
            distinct = sorted({c for c in consts if c is not None})
            where = {c: i for i, c in enumerate(distinct)}
            self.str_eq[name] = (
                has,
                distinct,
                np.array([-1 if c is None else where[c] for c in consts], dtype=np.int64),
            )
        self.has_general = np.zeros(n, bool)
        self.has_general[list(self.general)] = True
        # attributes where JSON null and a missing attribute answer differently
        self.null_names = null_names(index)


# ------------------------------------------------------------------------------------------
# parsing: Arrow chunks


class Parser:
    """Parses chunks of wires with ``pyarrow.json``; remembers the dotted paths that Arrow
    inferred as timestamps, to read them as strings from the start next time."""

    def __init__(self) -> None:
        self.string_paths: set[tuple[str, ...]] = set()

    def parse(self, arr: Any) -> Any:
        """A table with one row per wire of ``arr`` (a string array without nulls), or None
        when Arrow refuses the chunk or its schema is not trusted."""
        import pyarrow as pa
        import pyarrow.json as pj

        try:  # one block: types are inferred over the whole chunk
            text = _lines(arr)
            ro = pj.ReadOptions(use_threads=False, block_size=max(text.size + 1, 1 << 16))
        except (pa.ArrowException, OverflowError, ValueError):
            return None  # more than 2 GB: the halves are parsed

        def read(schema: Any) -> Any:
            po = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer")
            try:
                table = pj.read_json(pa.BufferReader(text), read_options=ro, parse_options=po)
                # Arrow 26 builds invalid list arrays from some lists holding nulls
                table.validate(full=True)
            except (pa.ArrowException, OverflowError, ValueError):
                return None
            # a line holding two objects gives two rows
            return table if table.num_rows == len(arr) else None

        hinted = self._schema()
        table = read(hinted)
        if table is None and hinted is not None:  # the hints do not fit this chunk
            table = read(None)
        if table is None:
            return None
        found: set = set()
        _timestamps(table.schema, (), found)
        if not found:
            return table
        self.string_paths |= found
        table = read(self._schema())
        if table is None:
            return None
        found.clear()
        _timestamps(table.schema, (), found)
        return None if found else table

    def _schema(self) -> Any:
        import pyarrow as pa

        if not self.string_paths:
            return None
        tree: dict = {}
        for path in sorted(self.string_paths):
            node = tree
            for step in path[:-1]:
                node = node.setdefault(step, {})
                if node is None:
                    break
            else:
                node.setdefault(path[-1], None)

        def build(node: dict) -> list:
            return [
                pa.field(k, pa.string() if v is None else pa.struct(build(v)))
                for k, v in node.items()
            ]

        return pa.schema(build(tree))


def _lines(arr: Any) -> Any:
    """The texts of a string array, one per line, as one Arrow buffer (no copy to Python)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    joined = pc.binary_join_element_wise(arr, pa.scalar("", arr.type), pa.scalar("\n", arr.type))
    _, offsets, data = joined.buffers()
    width = np.int64 if pa.types.is_large_string(joined.type) else np.int32
    ends = np.frombuffer(offsets, dtype=width)[joined.offset : joined.offset + len(joined) + 1]
    return data[int(ends[0]) : int(ends[-1])]


def _timestamps(schema_or_type: Any, prefix: tuple, out: set) -> None:
    import pyarrow as pa

    for f in schema_or_type:
        t = f.type
        path = prefix + (f.name,)
        if pa.types.is_struct(t):
            _timestamps(t, path, out)
        elif pa.types.is_temporal(t):
            out.add(path)


class Columns:
    """The flattened columns of one parsed chunk: leaves by dotted name (with their JSON
    path), struct names, and the rows that must take the per-row path."""

    def __init__(self, table: Any) -> None:
        self.leaves: dict[str, tuple[tuple, Any]] = {}
        self.structs: dict[str, tuple[tuple, Any]] = {}
        self.untyped: list[Any] = []  # columns of a type the columns do not take
        self.ok = len(set(table.column_names)) == len(table.column_names)  # no two alike
        for name in table.column_names if self.ok else ():
            col = table.column(name).combine_chunks()
            self._walk(name, (name,), col, 1)

    def _walk(self, name: str, path: tuple, col: Any, depth: int) -> None:
        import pyarrow as pa

        t = col.type
        if not path[-1] or name in self.leaves or name in self.structs or depth > MAX_STRUCT_DEPTH:
            self.ok = False
            return
        if pa.types.is_struct(t):
            self.structs[name] = (path, col)
            for field, child in zip(t, col.flatten()):  # a child of a null struct is null
                self._walk(name + "." + field.name, path + (field.name,), child, depth + 1)
        elif (pa.types.is_list(t) and _scalar_type(t.value_type)) or _scalar_type(t):
            self.leaves[name] = (path, col)
        else:
            self.untyped.append(col)
            self.ok = False

    def mostly_untyped(self) -> bool:
        """Whether most rows hold a value of a type the columns do not take (arrays of
        objects, arrays of arrays): halving the chunk would not make its halves
        columnar, so its rows go to the per-row path at once."""
        if not self.untyped:
            return False
        n = len(self.untyped[0])
        held = sum(len(c) - c.null_count for c in self.untyped) if n else 0
        return held * 2 >= n

    def null_rows(self, names: set[str], n: int) -> Any:
        """Rows holding a null (JSON null or missing, Arrow does not say which) in a
        leaf or struct column named in ``names``."""
        import numpy as np

        out = np.zeros(n, bool)
        for name in names:
            got = self.leaves.get(name) or self.structs.get(name)
            if got is not None:
                out |= ~_valid(got[1])
        return out

    def slow_rows(self, n: int) -> Any:
        """Rows the columns do not answer exactly (see the module docstring, step 2)."""
        import numpy as np
        import pyarrow as pa

        slow = np.zeros(n, bool)
        some = np.zeros(n, bool)
        for _, col in self.leaves.values():
            t = col.type
            valid = _valid(col)
            if pa.types.is_list(t):
                slow |= valid
                continue
            some |= valid
            if pa.types.is_integer(t) or pa.types.is_floating(t):
                v = _floats(col)
                with np.errstate(invalid="ignore"):
                    slow |= valid & ~(np.abs(v) < EXACT)
        return slow | ~some


def _scalar_type(t: Any) -> bool:
    import pyarrow as pa

    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or t == pa.int64()
        or t == pa.float64()
        or pa.types.is_boolean(t)
        or pa.types.is_null(t)
    )


def _valid(col: Any) -> Any:
    import numpy as np

    if col.null_count == 0:
        return np.ones(len(col), bool)
    return col.is_valid().to_numpy(zero_copy_only=False)


def _floats(col: Any) -> Any:
    """The column as float64, NaN where null."""
    import numpy as np
    import pyarrow as pa

    return (
        col.cast(pa.float64(), safe=False)
        .to_numpy(zero_copy_only=False)
        .astype(np.float64, copy=False)
    )


# ------------------------------------------------------------------------------------------
# exact values of one Arrow chunk


class _Values:
    """Exact Python values of one attribute on the rows of a chunk (lazily)."""

    def __init__(
        self, cols: Columns, name: str, wires: Any, rows: Any, parsed: dict, resolve: bool
    ) -> None:
        self.cols, self.name, self.wires, self.rows, self.parsed = cols, name, wires, rows, parsed
        self.resolve = resolve  # do null and missing answer differently here?
        self.values: list | None = None

    def get(self, r: int) -> Any:
        if self.values is None:
            leaf = self.cols.leaves.get(self.name)
            struct = self.cols.structs.get(self.name)
            if leaf is not None:
                self.path = leaf[0]
                self.values = leaf[1].to_pylist()
            elif struct is not None:
                self.path = struct[0]
                self.values = [ABSENT if ok else None for ok in struct[1].is_valid().to_pylist()]
            else:
                self.path = ()
                self.values = [ABSENT] * len(self.rows)
        v = self.values[r]
        if v is None and self.resolve:  # JSON null, or missing: the text says which
            i = int(self.rows[r])
            obj = self.parsed.get(i)
            if obj is None:
                try:
                    obj = self.parsed[i] = json.loads(self.wires[i])
                except (ValueError, RecursionError) as exc:  # Arrow read what Python refuses
                    raise EventError(f"event is not JSON: {exc}", f"row {i}") from None
            for step in self.path:
                if not isinstance(obj, dict) or step not in obj:
                    return ABSENT
                obj = obj[step]
            return ABSENT if isinstance(obj, dict) else tuple(obj) if isinstance(obj, list) else obj
        return v


# ------------------------------------------------------------------------------------------
# matching one chunk: the typed views of its columns


class _ArrowView:
    """The typed columns of one parsed Arrow chunk, as matching reads them: an attribute's
    strings (dictionary-encoded), its numbers (float64, NaN where not a number) and the
    exact Python value of a row, each built once per chunk."""

    def __init__(
        self, cols: Columns, wires: Any, rows: Any, null_names: set[str], null_is_absent: bool
    ) -> None:
        self.cols, self.wires, self.rows, self.null_names = cols, wires, rows, null_names
        self.null_is_absent = null_is_absent  # a table's null: the attribute is missing
        self._strings: dict[str, Any] = {}
        self._numbers: dict[str, Any] = {}
        self._values: dict[str, _Values] = {}
        self.parsed: dict[int, Any] = {}

    def strings(self, name: str) -> tuple[list[str], Any] | None:
        """(dictionary, codes): row i holds dictionary[codes[i]], or no string where
        codes[i] == len(dictionary); None if no row holds a string."""
        import pyarrow as pa

        if name not in self._strings:
            got = None
            leaf = self.cols.leaves.get(name)
            if leaf is not None and (
                pa.types.is_string(leaf[1].type) or pa.types.is_large_string(leaf[1].type)
            ):
                enc = leaf[1].dictionary_encode()
                dictionary = enc.dictionary.to_pylist()
                codes = enc.indices.fill_null(len(dictionary)).to_numpy(zero_copy_only=False)
                got = (dictionary, codes.astype("int64", copy=False))
            self._strings[name] = got
        return self._strings[name]

    def numbers(self, name: str) -> Any:
        """The attribute's numbers as float64 (NaN: not a number), or None if none is."""
        import pyarrow as pa

        if name not in self._numbers:
            leaf = self.cols.leaves.get(name)
            col = None if leaf is None else leaf[1]
            ok = col is not None and (col.type == pa.int64() or col.type == pa.float64())
            self._numbers[name] = _floats(col) if ok else None
        return self._numbers[name]

    def value(self, name: str, r: int) -> Any:
        vals = self._values.get(name)
        if vals is None:
            resolve = not self.null_is_absent and name in self.null_names
            vals = self._values[name] = _Values(
                self.cols, name, self.wires, self.rows, self.parsed, resolve
            )
        v = vals.get(r)
        return ABSENT if v is None and self.null_is_absent else v


# ------------------------------------------------------------------------------------------
# matching one chunk: candidates and checks


def _expand(starts: Any, counts: Any, flat: Any) -> tuple[Any, Any]:
    """For each i, flat[starts[i]:starts[i] + counts[i]]: (owner i of each item, items)."""
    import numpy as np

    total = int(counts.sum())
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    if not total:
        return owner, np.empty(0, np.int64)
    ends = np.cumsum(counts)
    pos = np.arange(total, dtype=np.int64) - np.repeat(ends - counts, counts)
    return owner, flat[np.repeat(starts, counts) + pos]


def _sources(plan: Plan, view: Any, fast: Any) -> list[tuple[Any, Any, Any]]:
    """The candidate filters of the chunk's rows ``fast``: a list of (starts, counts,
    flat), row i of ``fast`` having the candidates flat[starts[i]:starts[i] + counts[i]]
    of each, read through ``view`` (an :class:`_ArrowView`)."""
    import numpy as np

    out = []
    zeros = np.zeros(len(fast), np.int64)
    for name, a in plan.anchors.items():
        strings = view.strings(name) if a.has_strings else None
        if strings is not None:
            dictionary, codes = strings
            dstart, dcount, dflat = a.for_strings(dictionary)
            codes = codes[fast]
            out.append((dstart[codes], dcount[codes], dflat))
        if not (len(a.num_values) or a.sorted_ranges):
            continue
        v = view.numbers(name)
        if v is None:
            continue  # missing, an object, or no number: nothing to anchor
        v = v[fast]
        number = ~np.isnan(v)  # null: no number
        if len(a.num_values):
            pos = np.minimum(np.searchsorted(a.num_values, v), len(a.num_values) - 1)
            hit = a.num_values[pos] == v
            out.append(
                (
                    np.where(hit, a.num_start[pos], 0),
                    np.where(hit, a.num_count[pos], 0),
                    a.num_flat,
                )
            )
        for ends, fids, closed, negated in a.sorted_ranges:
            x = -v if negated else v
            count = np.searchsorted(ends, x, side="right" if closed else "left")
            out.append((zeros, np.where(number, count, 0), fids))
    if len(plan.floating_ids):
        out.append((zeros, np.full(len(fast), len(plan.floating_ids), np.int64), plan.floating_ids))
    return out


def _blocks(sources: list, n: int, budget: int) -> list[tuple[int, int]]:
    """Ranges of rows whose candidate pairs number at most ``budget`` (or one row)."""
    import numpy as np

    if not sources or not n:
        return []
    cum = np.cumsum(sum(c for _, c, _ in sources))
    edges = [0]
    while edges[-1] < n:
        start = edges[-1]
        base = int(cum[start - 1]) if start else 0
        end = int(np.searchsorted(cum, base + budget, side="right"))
        edges.append(min(n, max(end, start + 1)))
    return list(itertools.pairwise(edges))


def _candidates(sources: list, fast: Any, lo: int, hi: int) -> tuple[Any, Any]:
    """(row, filter) candidate pairs of the rows fast[lo:hi] (in no order)."""
    import numpy as np

    prs, pfs = [], []
    for starts, counts, flat in sources:
        owner, fids = _expand(starts[lo:hi], counts[lo:hi], flat)
        prs.append(fast[lo:hi][owner])
        pfs.append(fids)
    if not prs:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(prs), np.concatenate(pfs)


def _check(plan: Plan, view: Any, pr: Any, pf: Any) -> Any:
    """The candidate pairs whose filters hold on their rows, read through ``view``."""
    import numpy as np

    keep = np.ones(len(pr), bool)
    for name, (has, lo, hi, loc, hic) in plan.bounds.items():
        sel = np.flatnonzero(has[pf])
        if not len(sel):
            continue
        nums = view.numbers(name)
        if nums is None:
            keep[sel] = False  # not a number: no numeric constraint holds
            continue
        v = nums[pr[sel]]
        f = pf[sel]
        with np.errstate(invalid="ignore"):
            ok = np.where(loc[f], v >= lo[f], v > lo[f])
            ok &= np.where(hic[f], v <= hi[f], v < hi[f])  # NaN (null) fails both
        keep[sel] &= ok
    for name, (has, distinct, const) in plan.str_eq.items():
        sel = np.flatnonzero(has[pf])
        if not len(sel):
            continue
        strings = view.strings(name)
        if strings is None:
            keep[sel] = False  # not a string: no string equals
            continue
        dictionary, codes = strings
        code_of = {s: i for i, s in enumerate(dictionary)}
        # each constant's code in this chunk (-1: absent); a row without a string has
        # code len(dictionary): never equal
        const_code = np.array([code_of.get(c, -1) for c in distinct] + [-1], dtype=np.int64)
        keep[sel] &= codes[pr[sel]] == const_code[const[pf[sel]]]
    if plan.general:
        idx = np.flatnonzero(keep & plan.has_general[pf])
        if len(idx):
            general, value = plan.general, view.value
            for i in idx.tolist():
                r = int(pr[i])
                for name, test in general[int(pf[i])]:
                    if not test(value(name, r)):
                        keep[i] = False
                        break
    return keep


def _match_view(plan: Plan, view: Any, fast: Any) -> tuple[Any, Any]:
    """(rows, key ids) of the chunk's rows ``fast`` (chunk row numbers, in no order; a
    key twice for a row when two of its filters share it, see ``plan.duplicates``)."""
    import numpy as np

    sources = _sources(plan, view, fast)
    out_r, out_k = [], []
    for lo, hi in _blocks(sources, len(fast), PAIR_BUDGET):
        pr, pf = _candidates(sources, fast, lo, hi)
        keep = _check(plan, view, pr, pf)
        pr, pf = pr[keep], pf[keep]
        owner, kids = _expand(plan.fk_start[pf], plan.fk_count[pf], plan.fk_flat)
        out_r.append(pr[owner])
        out_k.append(kids)
    if not out_r:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(out_r), np.concatenate(out_k)


# ------------------------------------------------------------------------------------------
# the batch


def _as_array(wires: Any) -> Any:
    """A pyarrow string array of the wires, or None (not strings: the per-row path)."""
    import pyarrow as pa

    if isinstance(wires, pa.ChunkedArray):
        wires = wires.combine_chunks() if wires.num_chunks != 1 else wires.chunk(0)
    if isinstance(wires, pa.Array):
        t = wires.type
        return wires if pa.types.is_string(t) or pa.types.is_large_string(t) else None
    if not all(w.__class__ is str for w in wires):
        return None
    try:
        return pa.array(wires, pa.string())
    except (pa.ArrowException, UnicodeEncodeError, OverflowError):
        return None  # lone surrogates, or more than 2 GB: the per-row path


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
        return np.array(rows, dtype=np.int64), _answer_keys(index, keys)

    cache = index._columnar_cache()
    if not isinstance(wires, (pa.Array, pa.ChunkedArray)):
        wires = list(wires)
    arr = _as_array(wires)
    if arr is None:
        rows, keys = match_rows(index, wires, None if only is None else range(*only))
        return np.array(rows, dtype=np.int64), _answer_keys(index, keys)
    n = len(arr)
    # the wires by row for the per-row path (Python strings, made on demand from Arrow)
    texts: Any = _LazyTexts(arr) if isinstance(wires, (pa.Array, pa.ChunkedArray)) else wires
    lo, hi = (0, n) if only is None else only
    clean = np.zeros(n, dtype=bool)
    part = arr if (lo, hi) == (0, n) else arr.slice(lo, hi - lo)
    clean[lo:hi] = (
        pc.match_substring_regex(part, _ONE_OBJECT).fill_null(False).to_numpy(zero_copy_only=False)
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
        for way, run in _runs(w, np.flatnonzero(~bad)):
            if way == COLUMNS and view is None:  # made once per chunk, not timed
                plan = columnar_plan(index)
                view = _ArrowView(cols, texts, rows, plan.null_names, False)
            with w.timed(way, len(run)):  # both ways answer the rows ``run``
                if way == WALK:
                    # a null where JSON null and missing differ: json.loads tells which
                    if texts_first is None:
                        texts_first = cols.null_rows(null_names(index), len(rows))
                    by_text = texts_first[run]
                    walked = run[~by_text]
                    counts, keys = walk_rows(index, cols, walked, flat=True)
                    out_r.append(np.repeat(rows[walked], counts))
                    out_k.append(_answer_keys(index, keys))
                    if by_text.any():
                        rows_text = rows[run[by_text]]
                        try:
                            r, keys = match_rows(index, texts, rows_text.tolist())
                        except EventError:  # raised below, for the first refused row in order
                            slow[rows_text] = True
                        else:
                            out_r.append(np.array(r, dtype=np.int64))
                            out_k.append(_answer_keys(index, keys))
                else:
                    pr, kids = _match_view(plan, view, run)
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
        out_k.append(_answer_keys(index, keys))
    if not out_r:
        return np.empty(0, np.int64), _answer_keys(index, [])
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
        for way, run in _runs(w, np.flatnonzero(~slow)):
            if way == COLUMNS and view is None:  # made once per table, not timed
                plan = columnar_plan(index)
                view = _ArrowView(cols, None, np.arange(n), plan.null_names, True)
            with w.timed(way, len(run)):
                if way == WALK:
                    answers = walk_rows(index, cols, run)
                else:
                    answers = _answer_sets(plan, *_match_view(plan, view, run), run)
                for r, a in zip(run.tolist(), answers):
                    out[r] = a
    model, match = index.model, index.match
    for r in np.flatnonzero(slow).tolist():
        out[r] = match(_row_event(model, table, r))
    return out


def _runs(w: Ways, rows: Any) -> Iterator[tuple[str, Any]]:
    """``rows`` (an array of row numbers) in runs, each with the way that matches it
    (:meth:`Ways.pick`, asked as each run starts)."""
    i = 0
    while i < len(rows):
        way, size = w.pick()
        yield way, rows[i : i + size]
        i += size


def _answer_sets(plan: Plan, rows: Any, kids: Any, run: Any) -> list[set[Hashable]]:
    """The answer set of each row of ``run`` (ascending), from its (row, key id) pairs."""
    import numpy as np

    if len(rows) > 1 and (np.diff(rows) < 0).any():
        order = np.argsort(rows, kind="stable")
        rows, kids = rows[order], kids[order]
    keys = plan.key_objects[kids].tolist()
    ends = np.searchsorted(rows, run, side="left").tolist()
    ends.append(len(keys))
    with paused():  # the sets hold keys only: no cycles for the collector to find
        return [set(keys[a:b]) for a, b in itertools.pairwise(ends)]


def _int64_key(k: Any) -> bool:
    return k.__class__ is int and -(2**63) <= k < 2**63


def _key_array(np: Any, keys: list, ints: bool | None = None) -> Any:
    """``keys`` as an array: int64 if ``ints`` (by default: if each of them is an int of
    that range), else objects."""
    if ints if ints is not None else all(map(_int64_key, keys)):
        return np.array(keys, dtype=np.int64)
    out = np.empty(len(keys), dtype=object)
    out[:] = keys
    return out


class _LazyTexts:
    """Row -> Python string of a pyarrow string array (for the rows that need one)."""

    def __init__(self, arr: Any) -> None:
        self.arr = arr

    def __len__(self) -> int:
        return len(self.arr)

    def __getitem__(self, i: int) -> Any:
        return self.arr[i].as_py()


def new_cache(index: Any) -> dict:
    """The columnar state of an index: the Arrow parser's hints now; the plan, the
    null-sensitive names and whether every key is an int64, each made on first use."""
    return {"parser": Parser()}


def columnar_plan(index: Any) -> Plan:
    """The index's filters as arrays (step 3), made on first use."""
    cache = index._columnar_cache()
    if "plan" not in cache:
        cache["plan"] = Plan(index)
    return cache["plan"]


def null_names(index: Any) -> set[str]:
    """The attributes where JSON null and a missing attribute answer differently (some
    held filter's constraint on them tells the two apart)."""
    cache = index._columnar_cache()
    if "null_names" not in cache:
        cache["null_names"] = {
            name
            for e in index._entries.values()
            for name, c in e.filter.constraints
            if c.matches(None) != c.matches(ABSENT)
        }
    return cache["null_names"]


def _answer_keys(index: Any, keys: list) -> Any:
    """Keys of answers as an array: int64 when every key the index holds is an int of
    that range, else objects (the same type whatever the batch finds)."""
    import numpy as np

    cache = index._columnar_cache()
    if "int_keys" not in cache:
        cache["int_keys"] = all(_int64_key(k) for e in index._entries.values() for k in e.keys)
    return _key_array(np, keys, cache["int_keys"])


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
