"""Semantic contexts (MIX ``SemanticContext``, Cilia et al., 003 §4.1) and context sharing
(§4.2: "an addressable context can be defined ... messages can simply refer to such a
context").

A :class:`Context` is the set of assumptions about one value: unit of measure (a pint unit
from the shared registry), currency (ISO 4217 code), scale factor (the value times the scale
is the amount meant: prices "in thousands" have scale 1000), date format (a ``strftime``
pattern; ``None`` = ISO 8601) and user-defined properties. A :class:`ClientContext` is what a
publisher or subscriber declares once for all its values: defaults per kind of value and
overrides per concept. :class:`ContextRegistry` holds named contexts that messages refer to
by id; every reference resolves to the same shared object.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pubsift.core.errors import ConversionError
from pubsift.models.concepts.units import canonical_unit, dimensionality

_CURRENCY = re.compile(r"^[A-Z]{3}$")
_BUILTIN = ("unit", "currency", "scale", "date_format")


@dataclass(frozen=True, slots=True)
class Context:
    """Immutable, hashable context of one value; ``extra`` holds user-defined properties
    as sorted (name, value) pairs."""

    unit: str | None = None
    currency: str | None = None
    scale: float = 1
    date_format: str | None = None
    extra: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.unit is not None:
            object.__setattr__(self, "unit", canonical_unit(self.unit))
        if self.currency is not None and not _CURRENCY.match(self.currency):
            raise ConversionError(f"{self.currency!r} is not an ISO 4217 currency code")
        if isinstance(self.scale, bool) or not isinstance(self.scale, (int, float)) \
                or not self.scale > 0 or self.scale == float("inf"):
            raise ConversionError(f"scale factor must be a positive finite number, "
                                  f"not {self.scale!r}")
        if self.date_format is not None and "%" not in self.date_format:
            raise ConversionError(f"date format {self.date_format!r} is not a strftime pattern")
        extra = tuple(sorted(dict(self.extra).items()))
        for k, v in extra:
            if k in _BUILTIN or not isinstance(k, str) or not k:
                raise ConversionError(f"bad user-defined context property {k!r}")
            if not isinstance(v, (str, int, float, bool)):
                raise ConversionError(f"context property {k!r} holds a "
                                      f"{type(v).__name__}; use a string or number")
        object.__setattr__(self, "extra", extra)

    @classmethod
    def of(cls, obj: Mapping[str, Any] | "Context" | None) -> "Context":
        """From the JSON form ``{"unit": "kg", "currency": "EUR", "scale": 1000,
        "date_format": "%d.%m.%Y", "anything": "else"}``."""
        if obj is None:
            return EMPTY
        if isinstance(obj, Context):
            return obj
        if not isinstance(obj, Mapping):
            raise ConversionError(f"a context is a JSON object, not {type(obj).__name__}")
        known = {k: obj[k] for k in _BUILTIN if k in obj}
        extra = tuple((k, v) for k, v in obj.items() if k not in _BUILTIN)
        return cls(**known, extra=extra)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.unit is not None:
            out["unit"] = self.unit
        if self.currency is not None:
            out["currency"] = self.currency
        if self.scale != 1:
            out["scale"] = self.scale
        if self.date_format is not None:
            out["date_format"] = self.date_format
        out.update(self.extra)
        return out

    def get(self, prop: str, default: Any = None) -> Any:
        if prop in _BUILTIN:
            return getattr(self, prop)
        return dict(self.extra).get(prop, default)

    def with_(self, **changes: Any) -> "Context":
        """A copy with some properties changed (user-defined ones by name)."""
        builtin = {k: v for k, v in changes.items() if k in _BUILTIN}
        extra = dict(self.extra)
        extra.update({k: v for k, v in changes.items() if k not in _BUILTIN})
        return replace(self, **builtin, extra=tuple(extra.items()))

    def overlay(self, other: "Context") -> "Context":
        """``other``'s properties where it sets them, ours elsewhere."""
        return Context(unit=other.unit or self.unit, currency=other.currency or self.currency,
                       scale=other.scale if other.scale != 1 else self.scale,
                       date_format=other.date_format or self.date_format,
                       extra=tuple({**dict(self.extra), **dict(other.extra)}.items()))

    def __str__(self) -> str:
        return "{" + ", ".join(f"{k}={v}" for k, v in self.to_json().items()) + "}"


EMPTY = Context()


@dataclass
class ContextRegistry:
    """Named, addressable contexts (context sharing). ``resolve`` turns a reference
    (``"@name"`` or ``{"ref": "name"}``) or an inline JSON context into a :class:`Context`;
    a name always resolves to the same object."""

    named: dict[str, Context] = field(default_factory=dict)

    def register(self, name: str, ctx: Context | Mapping[str, Any]) -> Context:
        c = Context.of(ctx)
        old = self.named.get(name)
        if old is not None and old != c:
            raise ConversionError(f"context {name!r} is already defined as {old}")
        self.named[name] = old or c
        return self.named[name]

    def resolve(self, obj: Any) -> Context:
        if isinstance(obj, str):
            name = obj[1:] if obj.startswith("@") else obj
            return self._lookup(name)
        if isinstance(obj, Mapping) and set(obj) == {"ref"}:
            return self._lookup(obj["ref"])
        return Context.of(obj)

    def name_of(self, ctx: Context) -> str | None:
        for n, c in self.named.items():
            if c is ctx:
                return n
        return None

    def _lookup(self, name: Any) -> Context:
        try:
            return self.named[name]
        except (KeyError, TypeError):
            known = ", ".join(sorted(self.named)) or "none"
            raise ConversionError(f"no shared context named {name!r} (known: {known})") from None


@dataclass(frozen=True)
class ClientContext:
    """The context a client declares for all its values (Cilia et al. §4.2: "based on the
    explicit specification of clients about their contextual information").

    ``currency`` applies to every monetary concept, ``units`` maps a dimensionality
    (``"[mass]"``) to the client's unit for it (the JSON form also takes ``"unit": "lb"`` or
    a list of units, keyed by their dimensionality), ``date_format`` applies to dates,
    ``scale`` to numbers of every kind, and ``per_concept`` overrides all of these for
    one concept (keyed by canonical concept IRI or by term)."""

    currency: str | None = None
    units: Mapping[str, str] = field(default_factory=dict)
    date_format: str | None = None
    scale: float = 1
    extra: Mapping[str, Any] = field(default_factory=dict)
    per_concept: Mapping[str, Context] = field(default_factory=dict)
    _memo: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, obj: Mapping[str, Any] | "ClientContext" | None) -> "ClientContext":
        if obj is None:
            return cls()
        if isinstance(obj, ClientContext):
            return obj
        known = {"currency", "unit", "units", "date_format", "scale", "per_concept"}
        per = {k: Context.of(v) for k, v in (obj.get("per_concept") or {}).items()}
        units = obj.get("units") or {}
        if not isinstance(units, Mapping):  # a list of units: keyed by their dimension
            units = {dimensionality(canonical_unit(u)): u for u in units}
        units = dict(units)
        if obj.get("unit"):
            units[dimensionality(canonical_unit(obj["unit"]))] = obj["unit"]
        return cls(currency=obj.get("currency"), units=units,
                   date_format=obj.get("date_format"), scale=obj.get("scale", 1),
                   extra={k: v for k, v in obj.items() if k not in known}, per_concept=per)

    def context_for(self, ontology: Any, concept: str) -> Context:
        """The client's context for values of ``concept`` (an :class:`Ontology` concept):
        the defaults that apply to its kind, overlaid with a per-concept override declared
        for it or for its nearest generalization."""
        key = (ontology, concept)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._context_for(ontology, concept)
        return found

    def _context_for(self, ontology: Any, concept: str) -> Context:
        from pubsift.models.concepts.ontology import QUANTITY

        props = ontology.context_properties(concept)
        unit = None
        if ontology.kind(concept) == QUANTITY:
            unit = self.units.get(ontology.dimension(concept) or "")
        base = Context(unit=unit,
                       currency=self.currency if "currency" in props else None,
                       scale=self.scale if props & {"scale", "unit", "currency"} else 1,
                       date_format=self.date_format if "date_format" in props else None,
                       extra=tuple((k, v) for k, v in self.extra.items() if k in props))
        best = None
        for key, ctx in self.per_concept.items():
            target = ontology.resolve(key)
            if ontology.is_a(concept, target):
                depth = len(ontology.ancestors(target))
                if best is None or depth > best[0]:
                    best = (depth, ctx)
        return base.overlay(best[1]) if best else base
