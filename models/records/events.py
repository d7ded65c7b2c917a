"""Events of the records model (Mühl 2002, §4.3.1).

A notification is a set of name/value attributes. Nested mappings are addressed with dotted
names (``position.x``). Values are those of the constraint algebra
(:mod:`pubsift.models.constraints.values`): simple (string, number, boolean, null) or multi
values (a JSON list, treated as a finite set by the multi-value operators).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

from pubsift.core.errors import EventError
from pubsift.models.constraints.limits import (
    has_surrogate,
    int_message,
    int_too_large,
    surrogate_message,
)
from pubsift.models.constraints.values import Scalar, Value, skey
from pubsift.models.records.limits import MAX_DEPTH


class Record(Mapping[str, Value]):
    """An immutable records event: flattened dotted attribute names -> values.

    ``Record.of(mapping)`` validates and flattens a JSON-like mapping; ``raw`` keeps the
    nested original for the wire form.
    """

    __slots__ = ("_attrs", "raw")

    def __init__(self, attrs: dict[str, Value], raw: dict[str, Any]) -> None:
        self._attrs = attrs
        self.raw = raw

    @classmethod
    def of(cls, mapping: Mapping[str, Any], where: str | None = None) -> Record:
        if not isinstance(mapping, Mapping):
            raise EventError(
                f"a records event is a JSON object, not {type(mapping).__name__}", where
            )
        if type(mapping) is dict:
            flat = _flat_scalars(mapping)
            if flat is not None:
                return cls(flat, flat)
        attrs: dict[str, Value] = {}
        raw = _flatten(mapping, attrs, where)
        if not attrs:
            raise EventError("a records event needs at least one attribute (Mühl §4.3.1)", where)
        return cls(attrs, raw)

    def __getitem__(self, name: str) -> Value:
        return self._attrs[name]

    def get(self, name: str, default: Any = None) -> Any:  # fast path for matching
        return self._attrs.get(name, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._attrs)

    def __len__(self) -> int:
        return len(self._attrs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Record):
            return _canon(self._attrs) == _canon(other._attrs)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset((k, _hkey(v)) for k, v in self._attrs.items()))

    def __repr__(self) -> str:
        return f"Record({json.dumps(self.raw, sort_keys=True, default=str)})"


def _hkey(v: Value) -> Any:
    if isinstance(v, tuple):
        return ("multi", frozenset(skey(x) for x in v))
    return skey(v)


def _canon(attrs: Mapping[str, Value]) -> dict:
    return {k: _hkey(v) for k, v in attrs.items()}


def _check_scalar(v: Any, name: str, where: str | None) -> Scalar:
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, str):
        if has_surrogate(v):
            raise EventError(f"attribute {_short(name)!r}: {surrogate_message(v)}", where)
        return v
    if isinstance(v, int):
        if int_too_large(v):
            raise EventError(f"attribute {_short(name)!r}: {int_message()}", where)
        return v
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            raise EventError(
                f"attribute {_short(name)!r} holds {v!r}; numbers must be finite", where
            )
        return v
    raise EventError(
        f"attribute {_short(name)!r} holds a {type(v).__name__}; values are "
        "strings, numbers, booleans, null or lists of those",
        where,
    )


_INF = math.inf


def _flat_scalars(m: dict[str, Any]) -> dict[str, Value] | None:
    """A copy of ``m`` if it is a flat event (every key a non-empty string, every value a
    scalar :func:`_check_scalar` accepts), which is then its own ``raw`` and attributes;
    else None, and :func:`_flatten` takes it (and says what is wrong). The quick path of
    the common event: ``type`` tests, and ASCII text (most of it) holds no surrogate."""
    if not m:
        return None
    for k, v in m.items():
        if type(k) is not str or not k or (not k.isascii() and has_surrogate(k)):
            return None
        t = type(v)
        if t is str:
            if not v.isascii() and has_surrogate(v):
                return None
        elif t is float:
            if v != v or v == _INF or v == -_INF:
                return None
        elif t is int:
            if int_too_large(v):
                return None
        elif v is not None and t is not bool:
            return None
    return dict(m)


def _flatten(m: Mapping[str, Any], out: dict[str, Value], where: str | None) -> dict[str, Any]:
    """Fill ``out`` with the dotted attributes of ``m`` and return a plain copy of ``m``
    (the event's ``raw``). Iterative; nesting is limited to :data:`limits.MAX_DEPTH`, which
    also refuses a mapping that contains itself. An attribute reached twice (``{"a": {"b":
    1}, "a.b": 2}``) is an error whatever the order of the keys."""
    raw: dict[str, Any] = {}
    stack: list[tuple[Mapping, str, dict, int]] = [(m, "", raw, 1)]
    while stack:
        mapping, prefix, copy, depth = stack.pop()
        for k, v in mapping.items():
            if not isinstance(k, str) or not k:
                raise EventError(
                    "attribute names are non-empty strings, got "
                    f"{_short(k) if isinstance(k, str) else type(k).__name__}",
                    where,
                )
            if has_surrogate(k):
                raise EventError(f"attribute name {_short(k)!r}: {surrogate_message(k)}", where)
            name = prefix + k
            if isinstance(v, Mapping):
                if depth >= MAX_DEPTH:
                    raise EventError(
                        f"the event nests objects deeper than {MAX_DEPTH} "
                        f"levels (at {_short(name)!r})",
                        where,
                    )
                sub: dict[str, Any] = {}
                copy[k] = sub
                stack.append((v, name + ".", sub, depth + 1))
                continue
            if name in out:
                raise EventError(
                    f"attribute {_short(name)!r} is given twice (a dotted name "
                    "and a nested object address the same attribute)",
                    where,
                )
            if isinstance(v, (list, tuple)):
                items = []
                for x in v:
                    if isinstance(x, (Mapping, list, tuple)):
                        raise EventError(
                            f"attribute {_short(name)!r}: a multi value holds only scalars", where
                        )
                    items.append(_check_scalar(x, name, where))
                out[name] = tuple(items)
                copy[k] = items
            else:
                out[name] = copy[k] = _check_scalar(v, name, where)
    return raw


def _short(s: Any) -> str:
    s = str(s) if not isinstance(s, str) else s
    return s if len(s) <= 80 else s[:60] + "..." + s[-10:]
