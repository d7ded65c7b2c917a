"""The records filter model (Mühl 2002, §4.3), registered as ``records``.

Events are :class:`~pubsift.models.records.events.Record` (name/value attributes, dotted
names for nesting, multi values); filters are conjunctive
:class:`~pubsift.models.records.filters.RecordFilter` with at most one constraint per
attribute. The hooks delegate to one module per concept: ``syntax`` / ``eventbridge``
(parsing), ``covering`` (identity, covering, overlap: Cor. 4.1-4.3), ``merging`` (§4.3.7),
``wire`` (JSON forms) and ``index`` (the counting index of §4.3.8).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from pubsift.core.errors import EventError, FilterSyntaxError
from pubsift.core.model import JSON, FilterIndex, FilterModel
from pubsift.models.constraints import Constraint, TooComplex, Unsatisfiable, normalize, overlaps
from pubsift.models.records import arrays, checks, covering, limits, merging, syntax, wire
from pubsift.models.records.events import Record
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.typesystem import Schema


class RecordsModel(FilterModel[RecordFilter, Record]):
    """Structured records. ``schema`` declares integer-valued attributes (which makes the
    number line discrete for them: ``x in {20..25}`` is identical to ``x in [20, 25]``) and
    the type hierarchy used by ``instanceof``."""

    name = "records"
    capabilities = frozenset(
        {"covers", "identical", "overlaps", "merge", "imperfect_merge", "index"}
    )

    def __init__(self, schema: Schema | None = None) -> None:
        self.schema = schema or Schema()
        self._ints = self.schema.integer_attrs

    # -- parsing ----------------------------------------------------------------------
    def parse_filter(self, spec: str | Mapping[str, Any]) -> RecordFilter:
        """Text form (see docs/records-syntax.md) or an EventBridge pattern (one
        conjunctive filter; use :meth:`parse_filters` for ``$or``)."""
        return syntax.parse_filter(spec, self.schema)

    def parse_filters(self, spec: str | Mapping[str, Any]) -> list[RecordFilter]:
        return syntax.parse_filters(spec, self.schema)

    def format_filter(self, f: RecordFilter) -> str:
        return syntax.format_filter(checks.record_filter(f))

    def parse_event(self, raw: bytes | str | Mapping[str, Any]) -> Record:
        """A JSON object (bytes/str) or a mapping -> Record; integer attributes of the
        schema must hold integers."""
        if isinstance(raw, (bytes, bytearray)):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise EventError(f"event is not UTF-8: {exc.reason}", f"byte {exc.start}") from None
        obj = _load_json(raw) if isinstance(raw, str) else raw
        record = Record.of(obj)
        self.check_integers(record)
        return record

    def check_integers(self, record: Record) -> None:
        """EventError unless the schema's integer attributes of ``record`` hold integers."""
        for name in self._ints:
            v = record.get(name)
            if v is not None and _not_integer(v):
                raise EventError(
                    f"attribute {name!r} is declared integer-valued but holds {v!r}", name
                )

    # -- semantics --------------------------------------------------------------------
    # The relations are exact; where deciding one exactly is too costly (string automata
    # past automata.MAX_CELLS, unions of many multi-value cubes: TooComplex) they give the
    # sound answer of the FilterModel contract: covers/identical False, overlaps True, merge None.
    def matches(self, f: RecordFilter, e: Record) -> bool:
        if f.__class__ is not RecordFilter:
            checks.record_filter(f)
        if e.__class__ is not Record:
            checks.event(e)
        elif e.groups:  # arrays of objects: array-consistent (arrays.py)
            return arrays.satisfies(e, f.constraints)
        return f.matches(e)

    def covers(self, f: RecordFilter, g: RecordFilter) -> bool:
        checks.record_filter(f), checks.record_filter(g)
        try:
            return covering.covers(f, g, integer_attrs=self._ints)
        except TooComplex:
            return False

    def identical(self, f: RecordFilter, g: RecordFilter) -> bool:
        checks.record_filter(f), checks.record_filter(g)
        try:
            return f == g or covering.identical(f, g, integer_attrs=self._ints)
        except TooComplex:
            return False

    def overlaps(self, f: RecordFilter, g: RecordFilter) -> bool:
        """Cor. 4.3 over flat events; two filters disjoint there may still match one event
        with an array of objects through different elements (:func:`arrays.overlaps`)."""
        checks.record_filter(f), checks.record_filter(g)
        ints = self._ints
        try:
            if covering.overlaps(f, g, integer_attrs=ints):
                return True
            if not (covering.satisfiable(f, ints) and covering.satisfiable(g, ints)):
                return False
            return arrays.overlaps(f, g, lambda n, c, d: not overlaps(c, d, n in ints))
        except TooComplex:
            return True

    def merge(self, fs: Sequence[RecordFilter], perfect: bool = True) -> RecordFilter | None:
        fs = checks.record_filters(fs)
        try:
            return merging.merge(fs, perfect=perfect, integer_attrs=self._ints)
        except TooComplex:
            return None

    # -- wire forms -------------------------------------------------------------------
    def dump_filter(self, f: RecordFilter) -> JSON:
        return wire.dump_filter(checks.record_filter(f))

    def load_filter(self, obj: JSON) -> RecordFilter:
        """The wire form, brought into canonical form as the text and EventBridge parsers
        bring clauses (``relations.normalize``), so that every loaded filter's text form
        parses back to it; an attribute filter that no value satisfies is refused, as
        those parsers refuse it. ``load_filter(dump_filter(f)) == f`` for every filter the
        hooks return (they are canonical)."""
        return self._canonical(wire.load_filter(obj))

    def _canonical(self, f: RecordFilter) -> RecordFilter:
        out: dict[str, Constraint] = {}
        for name, c in f.constraints:
            try:
                out[name] = normalize(c, self.schema.is_integer(name))
            except Unsatisfiable:
                raise FilterSyntaxError(
                    syntax.unsatisfiable_message(name, None, c),
                    None,
                    None,
                    "$" + wire.path_step(name),
                ) from None
            except TooComplex:
                raise FilterSyntaxError(
                    syntax.too_complex_message(name, c), None, None, "$" + wire.path_step(name)
                ) from None
        return RecordFilter.of(out)

    def dump_event(self, e: Record) -> JSON:
        return wire.dump_event(checks.record(e))

    def load_event(self, obj: JSON) -> Record:
        return wire.load_event(obj)

    #: the compiled reader itself where it is built (no method call per event)
    load_wire = staticmethod(wire.load_wire)

    def wire_reader(
        self, indexes: Sequence[FilterIndex[Any, RecordFilter]]
    ) -> Callable[[bytes], Record | None]:
        """Reads only the attributes the filters of ``indexes`` name (DESIGN §2.6;
        :class:`~pubsift.models.records.selection.WireReader`), where the compiled scan is
        built and every index is a records index of this model; else :meth:`load_wire`."""
        from pubsift.models.records import selection
        from pubsift.models.records.index import RecordsIndex

        if selection._scan is None or not all(
            isinstance(i, RecordsIndex) and i.model is self for i in indexes
        ):
            return self.load_wire
        return selection.WireReader(self, indexes)

    # -- indexing ---------------------------------------------------------------------
    def new_index(self) -> FilterIndex[Hashable, RecordFilter]:
        from pubsift.models.records.index import RecordsIndex

        return RecordsIndex(self)


def _load_json(text: str) -> Any:
    """The JSON text of an event, strict (:mod:`pubsift.core.strict_json`: no duplicate
    keys) and under :mod:`.limits`."""
    try:
        return limits.loads(text, "event")
    except json.JSONDecodeError as exc:
        raise EventError(
            f"invalid JSON: {exc.msg}", f"line {exc.lineno}, column {exc.colno}"
        ) from None
    except limits.InputLimit as exc:
        where = exc.where
        raise EventError(
            exc.message,
            None if where is None else f"character {where}" if isinstance(where, int) else where,
        ) from None


def _not_integer(v: Any) -> bool:
    items = v if isinstance(v, tuple) else (v,)
    return any(
        isinstance(x, bool) or not (isinstance(x, int) or (isinstance(x, float) and x.is_integer()))
        for x in items
    )
