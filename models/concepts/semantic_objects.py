"""Semantic objects: the MIX data model (Cilia et al. 2004, §4.1, "Metadata based Integration
model for data X-change").

A :class:`SemanticObject` is ⟨concept, value, context⟩: a concept label from the ontology, a
value, and the :class:`~pubsift.models.concepts.context.Context` that says what the value
means. A *complex* object's value is a set of named semantic objects (each named by its own
concept). Published events are semantic objects; their ``time`` is the time conversions that
change over time (exchange rates) are applied at.

JSON (wire and file form)::

    {"concept": "StockQuote", "time": "2017-02-08",
     "context": {"currency": "USD"},                     # default for the members, or "@name"
     "value": {"Symbol": "AAL",                          # bare value: plain concept
               "FinalPrice": {"value": 45.06},           # inherits currency USD
               "NetWeight": {"value": 3, "context": {"unit": "lb"}}}}

A member's context is its parent's context, restricted to the properties its concept
carries, overlaid with its own.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pubsift.core.errors import ConversionError, EventError
from pubsift.models.concepts.context import EMPTY, Context, ContextRegistry
from pubsift.models.concepts.conversion import (
    ConversionManager,
    NotConvertible,
    format_date,
    parse_date,
    parse_time,
)
from pubsift.models.concepts.limits import MAX_DEPTH, number_problem, text_problem
from pubsift.models.concepts.ontology import DATE, MONEY, PLAIN, QUANTITY, Ontology, UnknownConcept

Path = tuple[str, ...]
"""A path of member concepts from the top-level object; ``()`` is the object itself."""


@dataclass(frozen=True, slots=True)
class SemanticObject:
    """⟨concept, value, context⟩. ``value`` is a scalar or, for complex objects, a tuple of
    member objects sorted by concept. ``time`` is set on top-level events only.

    Memory is linear in the number of members: each object indexes its own members by
    concept, and a path is looked up member by member."""

    concept: str
    value: Any
    context: Context = EMPTY
    time: datetime | None = None
    # set by __post_init__
    _members: dict[str, SemanticObject] = field(init=False, compare=False, hash=False, repr=False)
    _cache: dict[Any, Any] = field(init=False, compare=False, hash=False, repr=False)
    size: int = field(default=1, init=False, compare=False, hash=False, repr=False)
    """The number of objects: this one and its members at any depth."""

    def __post_init__(self) -> None:
        members = {m.concept: m for m in self.value} if isinstance(self.value, tuple) else {}
        object.__setattr__(self, "_members", members)
        object.__setattr__(self, "_cache", {})
        object.__setattr__(self, "size", 1 + sum(m.size for m in members.values()))

    @property
    def is_complex(self) -> bool:
        return isinstance(self.value, tuple)

    def find(self, path: Path) -> SemanticObject | None:
        o = self
        for c in path:
            member = o._members.get(c)
            if member is None:
                return None
            o = member
        return o

    def members(self) -> dict[str, SemanticObject]:
        return dict(self._members)

    def walk(self) -> Iterator[tuple[Path, SemanticObject]]:
        """(path, object) for the object and every member at any depth (iteratively)."""
        stack: list[tuple[Path, SemanticObject]] = [((), self)]
        while stack:
            path, o = stack.pop()
            yield path, o
            if o.is_complex:
                stack.extend((path + (m.concept,), m) for m in reversed(o.value))

    def paths(self) -> list[Path]:
        return [p for p, _ in self.walk()]


def complex_object(
    concept: str,
    members: list[SemanticObject],
    context: Context = EMPTY,
    time: datetime | None = None,
) -> SemanticObject:
    seen = set()
    for m in members:
        if m.concept in seen:
            raise EventError(f"member {m.concept} is given twice")
        seen.add(m.concept)
    return SemanticObject(concept, tuple(sorted(members, key=lambda m: m.concept)), context, time)


# -- JSON ---------------------------------------------------------------------------------
def from_json(
    obj: Any, ontology: Ontology, contexts: ContextRegistry, where: str = "event"
) -> SemanticObject:
    """Parse the JSON form; raises :class:`EventError` saying what and where. Members nest
    at most :data:`~pubsift.models.concepts.limits.MAX_DEPTH` levels."""
    if not isinstance(obj, Mapping):
        raise EventError(f"a semantic object is a JSON object, not {type(obj).__name__}", where)
    unknown = set(obj) - {"concept", "value", "context", "time"}
    if unknown:
        raise EventError(
            f"unknown member(s) {sorted(map(str, unknown))}; a semantic object "
            "has concept, value, context, time",
            where,
        )
    if "time" in obj and obj["time"] is not None:
        try:
            time = parse_time(obj["time"])
        except (ValueError, TypeError) as exc:
            raise EventError(f"bad time {_short(obj['time'])}: {exc}", where) from None
    else:
        time = None
    return _member(obj, ontology, contexts, EMPTY, where, time, top=True, ancestors=())


def _member(
    obj: Any,
    onto: Ontology,
    contexts: ContextRegistry,
    parent: Context,
    where: str,
    time: datetime | None,
    top: bool = False,
    concept: str | None = None,
    ancestors: tuple[int, ...] = (),
) -> SemanticObject:
    if id(obj) in ancestors:
        raise EventError("a semantic object contains itself (a cyclic mapping)", where)
    if len(ancestors) > MAX_DEPTH:
        raise EventError(f"members nest deeper than {MAX_DEPTH} levels", where)
    ancestors += (id(obj),)
    if concept is None:
        if "concept" not in obj:
            raise EventError("a semantic object needs a concept", where)
        concept = _concept(onto, obj["concept"], where)
    if not isinstance(obj, Mapping) or "value" not in obj:
        raise EventError("a semantic object needs a value", where)
    try:
        own = contexts.resolve(obj["context"]) if "context" in obj else None
    except ConversionError as exc:
        raise EventError(str(exc), where + ".context") from None
    value = obj["value"]
    if own is not None and parent is EMPTY:
        ctx = own  # shared contexts stay shared (the same object)
    elif isinstance(value, Mapping):  # a container keeps the whole context for its members
        ctx = parent.overlay(own) if own is not None else parent
    else:
        ctx = _restrict(parent, onto, concept)
        ctx = ctx.overlay(own) if own is not None else ctx
    if isinstance(value, Mapping):
        if onto.kind(concept) != PLAIN:
            raise EventError(
                f"{onto.name(concept)} is a {onto.kind(concept)} value, not a complex object", where
            )
        members = []
        for key, m in value.items():
            sub = f"{where}.{_key(key)}"
            c = _concept(onto, key, sub)
            if id(m) in ancestors:
                raise EventError("a semantic object contains itself (a cyclic mapping)", sub)
            m = m if isinstance(m, Mapping) else {"value": m}
            bad = set(m) - {"concept", "value", "context"}
            if bad:
                raise EventError(
                    f"unknown member(s) {sorted(map(str, bad))}; a member has "
                    "value, context (and concept)",
                    sub,
                )
            if "concept" in m and _concept(onto, m["concept"], sub) != c:
                raise EventError(
                    f"member {key!r} names another concept {_short(m['concept'])}", sub
                )
            m_obj = m if "concept" not in m else {k: v for k, v in m.items() if k != "concept"}
            members.append(
                _member(m_obj, onto, contexts, ctx, sub, None, concept=c, ancestors=ancestors)
            )
        return complex_object(concept, members, ctx, time)
    shared = (own is not None and not isinstance(obj["context"], Mapping)) or (
        isinstance(obj.get("context"), Mapping) and set(obj["context"]) == {"ref"}
    )
    _check_value(onto, concept, value, ctx, where, shared)
    return SemanticObject(concept, value, ctx, time)


def _key(key: Any) -> str:
    """A member key as shown in an error's place: printable and short."""
    if isinstance(key, str) and len(key) <= 60 and not text_problem(key):
        return key
    return _short(key)


def _short(v: Any) -> str:
    """``repr`` of a value, cut short (hostile values can be huge)."""
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 64:
        return f"an integer of {v.bit_length()} bits"
    r = repr(v) if not isinstance(v, (Mapping, list, tuple)) else type(v).__name__
    return r if len(r) <= 60 else r[:57] + "..."


def _concept(onto: Ontology, term: Any, where: str) -> str:
    if not isinstance(term, str):
        raise EventError(f"a concept is named by a string, not {_short(term)}", where)
    try:
        return onto.resolve(term)
    except UnknownConcept as exc:
        raise EventError(str(exc), where) from None


def _restrict(ctx: Context, onto: Ontology, concept: str) -> Context:
    """The part of ``ctx`` that applies to values of ``concept``."""
    if ctx is EMPTY:
        return EMPTY
    kind, props = onto.kind(concept), onto.context_properties(concept)
    kept = _KEPT[kind]
    return Context(
        unit=ctx.unit if kind == QUANTITY else None,
        currency=ctx.currency if kind == MONEY else None,
        scale=ctx.scale if kind in (QUANTITY, MONEY) else 1,
        date_format=ctx.date_format if kind == DATE else None,
        extra=tuple((k, v) for k, v in ctx.extra if k in props),
        explicit=ctx.explicit & kept,
    )


_KEPT = {
    QUANTITY: frozenset({"unit", "scale"}),
    MONEY: frozenset({"currency", "scale"}),
    DATE: frozenset({"date_format"}),
    PLAIN: frozenset(),
}


def _check_value(
    onto: Ontology, concept: str, value: Any, ctx: Context, where: str, shared: bool = False
) -> None:
    """Validate a scalar value against its concept; a shared (named) context may carry
    properties for other kinds of values, an inline one may not."""
    kind, name = onto.kind(concept), onto.name(concept)
    if isinstance(value, str) and text_problem(value):
        raise EventError(f"{name}: {text_problem(value)}", where)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and number_problem(value):
        raise EventError(f"{name}: {number_problem(value)}", where)
    if kind in (QUANTITY, MONEY):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise EventError(
                f"{name} is a {kind} value: a finite number, not {_short(value)}", where
            )
        if kind == MONEY and ctx.currency is None:
            raise EventError(f"{name} is an amount of money: its context needs a currency", where)
        if kind == QUANTITY and ctx.unit is None:
            raise EventError(f"{name} is a quantity: its context needs a unit", where)
        dim = onto.dimension(concept)
        if kind == QUANTITY and dim is not None:
            from pubsift.models.concepts.units import same_dimension

            if not same_dimension(dim, ctx.unit):
                raise EventError(f"{name} is measured in {dim}; {ctx.unit} is not", where)
    elif kind == DATE:
        try:
            parse_date(value, ctx.date_format)
        except NotConvertible as exc:
            raise EventError(f"{name}: {exc}", where) from None
    elif not (value is None or isinstance(value, (str, int, float, bool))):
        raise EventError(
            f"{name} holds {_short(value)}; plain values are strings, finite "
            "numbers, booleans or null",
            where,
        )
    if not shared and (
        (ctx.unit is not None and kind != QUANTITY) or (ctx.currency is not None and kind != MONEY)
    ):
        raise EventError(f"{name} is a {kind} value; its context {ctx} does not fit", where)


def to_json(obj: SemanticObject, ontology: Ontology, contexts: ContextRegistry) -> dict:
    """The JSON form; shared (named) contexts are written as ``"@name"`` references."""
    out: dict[str, Any] = {"concept": ontology.name(obj.concept)}
    if obj.time is not None:
        out["time"] = format_date(obj.time, None)
    out.update(_member_json(obj, ontology, contexts))
    return out


def _member_json(obj: SemanticObject, onto: Ontology, contexts: ContextRegistry) -> dict:
    out: dict[str, Any] = {}
    if obj.is_complex:
        out["value"] = {onto.name(m.concept): _member_json(m, onto, contexts) for m in obj.value}
    else:
        out["value"] = obj.value
    if obj.context != EMPTY:
        name = contexts.name_of(obj.context)
        out["context"] = "@" + name if name else obj.context.to_json()
    return out


# -- meaning ------------------------------------------------------------------------------
def equivalent(
    a: SemanticObject,
    b: SemanticObject,
    ontology: Ontology,
    manager: ConversionManager,
    rel_tol: float = 1e-5,
) -> bool:
    """Whether two semantic objects represent the same information (Cilia et al. §4.1:
    ⟨NetWeight, 1234, kg⟩ and ⟨NetWeight, 2720.50, lb⟩ "are semantically equivalent").

    ``b`` is converted into ``a``'s context (at ``a``'s time, else ``b``'s); numbers agree
    within the relative tolerance ``rel_tol``; other values must be equal."""
    at = a.time or b.time
    return _equivalent(a, b, ontology, manager, rel_tol, at)


def _equivalent(a, b, onto, manager, rel_tol, at) -> bool:
    if onto.canonical(a.concept) != onto.canonical(b.concept):
        return False
    if a.is_complex or b.is_complex:
        ma, mb = a.members(), b.members()
        return ma.keys() == mb.keys() and all(
            _equivalent(ma[k], mb[k], onto, manager, rel_tol, at) for k in ma
        )
    kind = onto.kind(a.concept)
    try:
        v = manager.convert(kind, b.value, b.context, a.context, at)
    except ConversionError:
        return False
    if kind in (QUANTITY, MONEY):
        # scale of ``a``'s context is applied in convert; compare magnitudes
        return math.isclose(v, a.value, rel_tol=rel_tol)
    return v == a.value
