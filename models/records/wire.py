"""JSON-safe wire forms of records filters and events (the FilterModel contract: round-trip exact).

Filter: a JSON object ``{attribute: constraint}`` (keys sorted), each constraint in the
constraint algebra's wire form (:mod:`pubsift.models.constraints.wire`)::

    {"price": {"op": "in-range", "lo": 10, "hi": {"float": "inf"},
               "lo_closed": false, "hi_closed": true},
     "symbol": {"op": "in", "values": ["IBM", "MSFT"]}}

The wire form is not normalized: ``load_filter(dump_filter(f)) == f`` for every filter,
canonical or not.

Event: the nested JSON object the event was built from; ``load_event(dump_event(e)) == e``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pubsift.core.errors import FilterSyntaxError
from pubsift.models.constraints import (
    JSON,
    Constraint,
    dump_constraint,
    json_type,
    limits,
    load_constraint,
    load_string,
    path_step,
)
from pubsift.models.records import limits as record_limits
from pubsift.models.records.events import Record
from pubsift.models.records.filters import RecordFilter

# --------------------------------------------------------------------------------------
# filters


def dump_filter(f: RecordFilter) -> JSON:
    """The JSON-safe wire form of ``f`` (see module docstring)."""
    return {name: dump_constraint(c) for name, c in f.constraints}


def load_filter(obj: JSON) -> RecordFilter:
    """Inverse of :func:`dump_filter`; malformed input is a :class:`FilterSyntaxError`
    naming the JSON path."""
    if not isinstance(obj, Mapping):
        raise _ferr(f"a records filter's wire form is a JSON object, not {json_type(obj)}", "$")
    try:
        record_limits.check_depth(obj)
    except record_limits.InputLimit as e:
        raise _ferr(e.message, str(e.where)) from None
    out: dict[str, Constraint] = {}
    for name, c in obj.items():
        if not isinstance(name, str) or not name:
            raise _ferr(f"attribute names are non-empty strings, got {_show(name)}", "$")
        path = "$" + path_step(name)
        load_string(name, path)
        out[name] = load_constraint(c, path)
    return RecordFilter.of(out)


def _show(v: Any) -> str:
    return limits.show(v)


def _ferr(msg: str, path: str) -> FilterSyntaxError:
    return FilterSyntaxError(msg, None, None, path)


# --------------------------------------------------------------------------------------
# events


def dump_event(e: Record) -> JSON:
    """The nested JSON object of the event (a fresh copy)."""
    return _copy(e.raw)


def load_event(obj: JSON) -> Record:
    """Inverse of :func:`dump_event`; malformed input is an :class:`EventError`. A flat
    event (the common one) is checked by the compiled check where it is built
    (brokers and clients load every event they route or deliver)."""
    if _flat_scalars is not None and type(obj) is dict:
        flat = _flat_scalars(obj)
        if flat is not None:
            return Record(flat, flat)
    return Record.of(obj, where="wire form")


def load_wire(data: bytes) -> Record | None:
    """``load_event(json.loads(data))`` for the JSON text of a flat event in its common
    form (strings without escapes, numbers, booleans, nulls), read in one pass by the
    compiled reader (``_flat.load_wire``, which stands for this function where it is
    built); None for any other text (and where the reader is not built), which the
    general path reads or refuses. Never raises."""
    if _flat_event is None or type(data) is not bytes:
        return None
    flat = _flat_event(data)
    return None if flat is None else Record(flat, flat)


_flat_scalars: Callable[[dict[str, Any]], dict[str, Any] | None] | None
_flat_event: Callable[[bytes], dict[str, Any] | None] | None
try:  # optional, as the compiled walk: the same answers as Record.of's own check
    from pubsift.models.records._flat import (  # type: ignore[import-not-found,no-redef]
        flat_event as _flat_event,
    )
    from pubsift.models.records._flat import (  # type: ignore[no-redef]
        flat_scalars as _flat_scalars,
    )
    from pubsift.models.records._flat import (
        load_wire as _compiled_load_wire,
    )

    load_wire = _compiled_load_wire  # the same answers, one call
except ImportError:  # pragma: no cover - not built
    _flat_scalars = _flat_event = None


_SCALARS = (str, int, float, bool, type(None))


def _copy(v: Any) -> Any:
    t = type(v)
    if t in _SCALARS:
        return v
    if t is dict and all(type(x) in _SCALARS for x in v.values()):
        return dict(v)  # a flat mapping (the common event): one copy
    if isinstance(v, Mapping):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_copy(x) for x in v]
    return v


__all__ = ["dump_event", "dump_filter", "load_event", "load_filter"]
