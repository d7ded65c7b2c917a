"""Type checks at the entry of the records hooks (the FilterModel contract: every hook answers or
raises a ``PubsiftError``): a hook given an object that is not a records filter or event
(a string, ``None``, another model's filter) raises :class:`FilterSyntaxError` /
:class:`EventError` naming its type, instead of failing somewhere inside with a
``TypeError`` or ``AttributeError``. Each check is one class comparison on the hot path;
``isinstance`` only runs for other classes (subclasses, mappings)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pubsift.core.errors import EventError, FilterSyntaxError
from pubsift.models.records.events import Record
from pubsift.models.records.filters import RecordFilter


def record_filter(f: Any) -> RecordFilter:
    """``f`` if it is a :class:`RecordFilter`, else :class:`FilterSyntaxError`."""
    if f.__class__ is RecordFilter or isinstance(f, RecordFilter):
        return f
    raise FilterSyntaxError(
        f"not a records filter: {type(f).__name__} (make one with parse_filter or load_filter)"
    )


def record_filters(fs: Any) -> list[RecordFilter]:
    """The filters of an iterable of records filters, as a list."""
    if isinstance(fs, (str, bytes, bytearray, Mapping, RecordFilter)) or not isinstance(
        fs, Iterable
    ):
        raise FilterSyntaxError(f"expected a sequence of records filters, not {type(fs).__name__}")
    out = list(fs)
    for f in out:
        record_filter(f)
    return out


def event(e: Any) -> Mapping[str, Any]:
    """``e`` if it is a :class:`Record` (or another mapping of attribute names to values),
    else :class:`EventError`."""
    if e.__class__ is Record or isinstance(e, Mapping):
        return e
    raise EventError(
        f"not a records event: {type(e).__name__} (make one with parse_event or load_event)"
    )


def record(e: Any) -> Record:
    """``e`` if it is a :class:`Record`, else :class:`EventError`."""
    if e.__class__ is Record or isinstance(e, Record):
        return e
    raise EventError(
        f"not a records event: {type(e).__name__} (make one with parse_event or load_event)"
    )
