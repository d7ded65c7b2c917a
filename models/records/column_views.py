"""The typed columns of one parsed Arrow chunk, as matching reads them.

:class:`Columns` flattens a table parsed by :mod:`~pubsift.models.records.arrow_json`
(or a table handed to ``RecordsIndex.match_batch``) into leaf columns by dotted name and
struct columns, and says which rows the columns do not answer exactly (step 2 of
:mod:`~pubsift.models.records.columnar`: lists, numbers not exact as float64, rows
without a non-null scalar, types other than strings, int64, doubles, booleans, nulls,
structs and lists of scalars). :class:`ArrowView` reads an attribute of a chunk as
column-wise matching (:mod:`~pubsift.models.records.column_matching`) needs it: its
strings dictionary-encoded, its numbers as float64, and the exact Python value of a row,
JSON null told from a missing attribute by the row's text where a filter tells them apart
(docs/records-syntax.md §5).
"""

from __future__ import annotations

from typing import Any

from pubsift.core import strict_json
from pubsift.core.errors import EventError
from pubsift.models.constraints import ABSENT

#: Struct columns nested deeper than this take the per-row path (``Record.of`` refuses
#: more than ``limits.MAX_DEPTH`` levels of objects).
MAX_STRUCT_DEPTH = 64
#: Numbers at or beyond this magnitude are not trusted as float64 (integers past it round).
EXACT = 2.0**53


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
                    obj = self.parsed[i] = strict_json.loads(self.wires[i])
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


class ArrowView:
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
