"""Arrow's JSON reader on a batch of event texts (step 1 of :mod:`~pubsift.models.records.columnar`).

The texts that look like one JSON object on one line (:data:`ONE_OBJECT`, a regular
expression over the Arrow array) are joined with newlines, without a copy to Python, and
parsed by ``pyarrow.json.read_json`` into typed columns in one block, so that types are
inferred over the whole chunk (nested objects become struct columns, addressed by dotted
names as ``Record`` flattens them; :mod:`~pubsift.models.records.column_views` reads
them). Strings that look like dates would be inferred as timestamps: those fields are
parsed again as strings, and :class:`Parser` remembers them for the next batches. What
the Arrow parse does not reproduce exactly goes to the per-row path (step 2 of
:mod:`~pubsift.models.records.columnar`). Used by ``RecordsIndex.match_wire_batch``
(docs/records-syntax.md §5; docs/spark.md, "What happens, stage by stage": the route
stage). pyarrow is imported lazily (the ``spark`` extra).
"""

from __future__ import annotations

from typing import Any

#: One JSON object on one line: no control characters (a newline would split the line;
#: JSON refuses the others in strings), starting with "{" and ending with "}" (Arrow
#: skips a BOM and ignores what follows the last object of its input; Python refuses both).
ONE_OBJECT = r"^ *\{[^\x00-\x1f]*\} *$"


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


def as_array(wires: Any) -> Any:
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


class LazyTexts:
    """Row -> Python string of a pyarrow string array (for the rows that need one)."""

    def __init__(self, arr: Any) -> None:
        self.arr = arr

    def __len__(self) -> int:
        return len(self.arr)

    def __getitem__(self, i: int) -> Any:
        return self.arr[i].as_py()
