"""Reading only what patterns use (DESIGN §2.6: "an event is parsed once ... only
the fields some filter names").

A :class:`FieldSelection` holds the attribute names some filter of an index names and their
dotted prefixes. :meth:`FieldSelection.parse` reads an event's JSON text into a records
event that holds only those attributes (and the arrays of objects on their paths, element
for element, which array-consistent matching needs): members on no such path are checked
but not built. The event gives every filter of the index the answer the full
:meth:`RecordsModel.parse_event` gives, and the text is refused exactly when that refuses
it (with an :class:`EventError` naming the byte): the same strict JSON (no duplicate keys,
NaN or Infinity; valid UTF-8 and escapes), the limits of :mod:`.limits` (nesting, integer
digits, finite floats) and the model's checks (non-empty names, integer attributes). A text
with a key that holds a dot (``{"a.b": 1}``, which may collide with a nested name) is read
by the full parse. The scan is compiled (``_scan.pxi`` in the walk's extension); without
it the full parse answers.

Measured (``bench/eventbridge.py``, citylots2-shaped texts) against the full parse: see
the module docstring of :mod:`~pubsift.models.records.index` and ``bench/results.md``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from pubsift.core.errors import EventError
from pubsift.models.constraints import MAX_INT_DIGITS
from pubsift.models.records.events import Record
from pubsift.models.records.limits import MAX_DEPTH

_scan: Any
_compile: Any
try:
    from pubsift.models.records import _walk  # type: ignore[attr-defined]

    _scan, _compile = _walk.scan_record, _walk.compile_selection
except (ImportError, AttributeError):  # pragma: no cover - the extension is optional
    _scan = _compile = None
if os.environ.get("PUBSIFT_PURE_PYTHON"):  # as the compiled walk (plans._engine)
    _scan = _compile = None


class FieldSelection:
    """The names an index's filters read (``names``) and their proper dotted prefixes
    (``prefixes``: ``a`` and ``a.b`` of ``a.b.c``), immutable."""

    __slots__ = ("_tree", "names", "prefixes")

    def __init__(self, names: Iterable[str]) -> None:
        self.names = frozenset(names)
        self.prefixes = frozenset(p for n in self.names for p in _prefixes(n))
        # the keys on the read paths, their dotted names made once (the compiled scan's)
        self._tree = None if _compile is None else _compile(self.names, self.prefixes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSelection):
            return NotImplemented
        return self.names == other.names

    def __hash__(self) -> int:
        return hash(self.names)

    def __repr__(self) -> str:
        return f"FieldSelection({sorted(self.names)!r})"

    def __reduce__(self) -> tuple[Any, tuple[list[str]]]:  # the tree is made again
        return FieldSelection, (sorted(self.names),)

    def parse(self, raw: bytes | bytearray | memoryview | str, model: Any) -> Record:
        """The event of the JSON text ``raw`` with only the selected attributes (see the
        module docstring); ``model``: the :class:`RecordsModel` whose ``parse_event`` it
        agrees with (its schema's integer attributes must be among ``names``)."""
        if _scan is None:
            return model.parse_event(raw)
        if isinstance(raw, str):
            try:
                data = raw.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise EventError(
                    "a lone surrogate in the event's text: text must be valid Unicode",
                    f"character {exc.start}",
                ) from None
        elif isinstance(raw, bytes):
            data = raw
        else:  # what parse_event says of anything else
            return model.parse_event(raw)
        record = _scan(data, self._tree, MAX_DEPTH, MAX_INT_DIGITS)
        if record is None:  # a dotted key may collide with a nested name: the full parse says
            return model.parse_event(data)
        model.check_integers(record)
        return record


class WireReader:
    """``RecordsModel.wire_reader(indexes)``: the event of a wire text with only the
    attributes some filter of ``indexes`` names, read by the compiled scan (the
    selection made anew when one of the indexes has come to name other attributes); None
    where the scan refuses the text (the caller's full read refuses it or reads it), so
    it never raises. A flat object of scalars is read whole by ``load_wire`` first (on a
    106-byte quote 1.2 us against the scan's 2.7-3.2, with the calls around it)."""

    __slots__ = ("_indexes", "_model", "_seen", "_selection")

    def __init__(self, model: Any, indexes: Iterable[Any]) -> None:
        self._model = model
        self._indexes = tuple(indexes)
        self._seen: tuple[FieldSelection, ...] = ()
        self._selection = FieldSelection(())

    def __call__(self, data: bytes) -> Record | None:
        event = self._model.load_wire(data)  # a flat object: read whole, faster yet
        if event is not None:
            return event
        seen = tuple([index.fields() for index in self._indexes])
        if len(seen) != len(self._seen) or any(a is not b for a, b in zip(seen, self._seen)):
            self._selection = FieldSelection(n for f in seen for n in f.names)
            self._seen = seen
        try:
            return self._selection.parse(data, self._model)
        except Exception:  # the full read says what is wrong
            return None


def _prefixes(name: str) -> Iterable[str]:
    i = name.find(".")
    while i > 0:
        yield name[:i]
        i = name.find(".", i + 1)


__all__ = ["FieldSelection", "WireReader"]
