"""Events of the records model (Mühl 2002, §4.3.1).

A notification is a set of name/value attributes. Nested mappings are addressed with dotted
names (``position.x``). Values are those of the constraint algebra
(:mod:`pubsift.models.constraints.values`): simple (string, number, boolean, null) or multi
values (a JSON list of scalars, arrays of arrays flattened, treated as a finite set by the
multi-value operators). Any JSON object is an event, ``{}`` too: an array that
holds objects is a *group* of elements matched array-consistently
(:mod:`~pubsift.models.records.arrays`, after event-ruler's ``rulesForJSONEvent``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from typing import Any

from pubsift.core.errors import EventError
from pubsift.models.constraints import (
    Scalar,
    Value,
    has_surrogate,
    int_message,
    int_too_large,
    skey,
    surrogate_message,
)
from pubsift.models.records.limits import MAX_DEPTH

_NO_GROUPS: dict[str, tuple[Record, ...]] = {}


class Record(Mapping[str, Value]):
    """An immutable records event: flattened dotted attribute names -> values.

    ``Record.of(mapping)`` validates and flattens a JSON-like mapping; ``raw`` keeps the
    nested original for the wire form. The mapping holds the attributes outside every array
    of objects; ``groups`` maps the path of each such array to its elements (records whose
    names are the full dotted paths), empty for most events
    (:mod:`~pubsift.models.records.arrays`).
    """

    __slots__ = ("_attrs", "groups", "raw")

    def __init__(
        self,
        attrs: dict[str, Value],
        raw: dict[str, Any],
        groups: dict[str, tuple[Record, ...]] = _NO_GROUPS,
    ) -> None:
        self._attrs = attrs
        self.raw = raw
        self.groups = groups

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
        return _build(mapping, "", 1, where)

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
            return _canon(self._attrs) == _canon(other._attrs) and self.groups == other.groups
        return NotImplemented

    def __hash__(self) -> int:
        h = hash(frozenset((k, _hkey(v)) for k, v in self._attrs.items()))
        if self.groups:
            h = hash((h, tuple((p, tuple(map(hash, els))) for p, els in self.groups.items())))
        return h

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


def _build(m: Mapping[str, Any], prefix: str, depth: int, where: str | None) -> Record:
    """The record of ``m`` (its names prefixed by ``prefix``; ``depth``: its level of
    nesting): the dotted attributes, a plain copy of ``m`` (the event's ``raw``) and its
    groups. Iterative over nested objects (recursive per array of objects); nesting of
    objects and arrays is limited to :data:`limits.MAX_DEPTH`, which also refuses a mapping
    or list that contains itself. An attribute reached twice (``{"a": {"b": 1}, "a.b":
    2}``, or a name below an array of objects given outside it) is an error whatever the
    order of the keys."""
    out: dict[str, Value] = {}
    groups: dict[str, tuple[Record, ...]] = {}
    raw: dict[str, Any] = {}
    stack: list[tuple[Mapping, str, dict, int]] = [(m, prefix, raw, depth)]
    while stack:
        mapping, pre, copy, level = stack.pop()
        for k, v in mapping.items():
            if not isinstance(k, str) or not k:
                raise EventError(
                    "attribute names are non-empty strings, got "
                    f"{_short(k) if isinstance(k, str) else type(k).__name__}",
                    where,
                )
            if has_surrogate(k):
                raise EventError(f"attribute name {_short(k)!r}: {surrogate_message(k)}", where)
            name = pre + k
            if isinstance(v, Mapping):
                if level >= MAX_DEPTH:
                    raise _too_deep(name, where)
                sub: dict[str, Any] = {}
                copy[k] = sub
                stack.append((v, name + ".", sub, level + 1))
                continue
            if name in out or name in groups:
                raise _twice(name, where)
            if isinstance(v, (list, tuple)):
                if level >= MAX_DEPTH:  # the array is a level too (strict_json.too_deep)
                    raise _too_deep(name, where)
                items, elements, copy[k] = _array(v, name, level + 1, where)
                if elements:
                    groups[name] = elements
                    if items:
                        out[name] = items
                else:
                    out[name] = items
            else:
                out[name] = copy[k] = _check_scalar(v, name, where)
    if groups:
        _check_paths(out, groups, where)
    return Record(out, raw, groups or _NO_GROUPS)


def _array(
    v: list | tuple, name: str, depth: int, where: str | None
) -> tuple[tuple[Scalar, ...], tuple[Record, ...], list]:
    """The scalars and the elements (records of its objects) of the array ``v`` at
    ``name`` (at level ``depth``), arrays inside it flattened, and a plain copy of it."""
    scalars: list[Scalar] = []
    elements: list[Record] = []
    top: list[Any] = []
    stack: list[tuple[Any, list]] = [(iter(v), top)]
    while stack:
        it, copy = stack[-1]
        for x in it:
            if isinstance(x, Mapping):
                if depth + len(stack) > MAX_DEPTH:
                    raise _too_deep(name, where)
                flat = _flat_scalars(x) if type(x) is dict else None
                if flat is not None:  # the common element: an object of scalars
                    pre = name + "."
                    elements.append(Record({pre + k: v for k, v in flat.items()}, flat))
                    copy.append(flat)
                    continue
                el = _build(x, name + ".", depth + len(stack), where)
                elements.append(el)
                copy.append(el.raw)
            elif isinstance(x, (list, tuple)):
                if depth + len(stack) > MAX_DEPTH:
                    raise _too_deep(name, where)
                sub: list[Any] = []
                copy.append(sub)
                stack.append((iter(x), sub))
                break
            else:
                s = _check_scalar(x, name, where)
                scalars.append(s)
                copy.append(s)
        else:
            stack.pop()
    return tuple(scalars), tuple(elements), top


def _check_paths(
    out: Mapping[str, Value], groups: Mapping[str, tuple[Record, ...]], where: str | None
) -> None:
    """No attribute and no other array of objects lies below an array of objects by its
    name (``{"a": [{"x": 1}], "a.y": 2}``): every name has one place."""
    for names in (out, groups):
        for name in names:
            p = _group_prefix(name, groups)
            if p is not None:
                raise _twice(name, where)


def _group_prefix(name: str, groups: Mapping[str, Any]) -> str | None:
    i = name.find(".")
    while i > 0:
        if name[:i] in groups:
            return name[:i]
        i = name.find(".", i + 1)
    return None


def _too_deep(name: str, where: str | None) -> EventError:
    return EventError(
        f"the event nests objects and arrays deeper than {MAX_DEPTH} levels (at {_short(name)!r})",
        where,
    )


def _twice(name: str, where: str | None) -> EventError:
    return EventError(
        f"attribute {_short(name)!r} is given twice (a dotted name and a nested object "
        "or array address the same attribute)",
        where,
    )


def _short(s: Any) -> str:
    s = str(s) if not isinstance(s, str) else s
    return s if len(s) <= 80 else s[:60] + "..." + s[-10:]
