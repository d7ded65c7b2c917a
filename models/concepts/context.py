"""Semantic contexts (MIX ``SemanticContext``, Cilia et al. 2004, §4.1) and context sharing
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
from datetime import datetime
from typing import Any

from pubsift.core.errors import ConversionError
from pubsift.models.concepts.limits import number_problem, text_problem
from pubsift.models.concepts.units import canonical_unit, dimensionality

_CURRENCY = re.compile(r"^[A-Z]{3}$")
_BUILTIN = ("unit", "currency", "scale", "date_format")


@dataclass(frozen=True, slots=True)
class Context:
    """Immutable, hashable context of one value; ``extra`` holds user-defined properties
    as sorted (name, value) pairs.

    ``explicit`` names the built-in properties that were *given*, as opposed to left unset:
    a member's context overrides its parent's exactly in those (an explicit ``scale: 1``
    or ``date_format: null``, meaning ISO 8601, overrides an inherited scale or format).
    A property with a value other than its default is always explicit."""

    unit: str | None = None
    currency: str | None = None
    scale: int | float = 1
    date_format: str | None = None
    extra: tuple[tuple[str, Any], ...] = ()
    explicit: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for prop in ("unit", "currency", "date_format"):
            v = getattr(self, prop)
            if v is not None and not isinstance(v, str):
                raise ConversionError(
                    f"context property {prop!r} is a string, not {type(v).__name__} {_short(v)}"
                )
            if v is not None and text_problem(v):
                raise ConversionError(f"context property {prop!r}: {text_problem(v)}")
        if self.unit is not None:
            object.__setattr__(self, "unit", canonical_unit(self.unit))
        if self.currency is not None and not _CURRENCY.match(self.currency):
            raise ConversionError(f"{self.currency!r} is not an ISO 4217 currency code")
        if (
            isinstance(self.scale, bool)
            or not isinstance(self.scale, (int, float))
            or number_problem(self.scale)
            or not self.scale > 0
        ):
            raise ConversionError(
                f"scale factor must be a positive finite number, not {_short(self.scale)}"
            )
        if self.date_format is not None and (
            "%" not in self.date_format or len(self.date_format) > 100
        ):
            raise ConversionError(
                f"date format {_short(self.date_format)} is not a strftime "
                "pattern (of at most 100 characters)"
            )
        if self.date_format is not None:
            problem = _date_format_problem(self.date_format)
            if problem:
                raise ConversionError(f"date format {_short(self.date_format)}: {problem}")
        try:
            extra = tuple(sorted(dict(self.extra).items()))
        except (TypeError, ValueError):
            raise ConversionError(
                "user-defined context properties are (name, value) pairs with string names"
            ) from None
        for k, v in extra:
            if not isinstance(k, str) or k in _BUILTIN or not k or text_problem(k):
                raise ConversionError(f"bad user-defined context property {_short(k)}")
            if isinstance(v, bool) or (isinstance(v, str) and not text_problem(v)):
                continue
            if not isinstance(v, (int, float)) or number_problem(v):
                raise ConversionError(
                    f"context property {k!r} holds {_short(v)}; use a "
                    "string, a finite number or a boolean"
                )
        object.__setattr__(self, "extra", extra)
        explicit = frozenset(self.explicit)
        if not explicit <= set(_BUILTIN):
            raise ConversionError(
                f"explicit names built-in properties, not "
                f"{sorted(map(str, explicit - set(_BUILTIN)))}"
            )
        explicit |= {p for p in ("unit", "currency", "date_format") if getattr(self, p) is not None}
        if self.scale != 1:
            explicit |= {"scale"}
        object.__setattr__(self, "explicit", explicit)

    @classmethod
    def of(cls, obj: Mapping[str, Any] | Context | None) -> Context:
        """From the JSON form ``{"unit": "kg", "currency": "EUR", "scale": 1000,
        "date_format": "%d.%m.%Y", "anything": "else"}``; a built-in property given (even
        as its default: ``"scale": 1``, ``"date_format": null`` for ISO 8601) is explicit."""
        if obj is None:
            return EMPTY
        if isinstance(obj, Context):
            return obj
        if not isinstance(obj, Mapping):
            raise ConversionError(f"a context is a JSON object, not {type(obj).__name__}")
        known = {k: obj[k] for k in _BUILTIN if k in obj}
        if "scale" in known and known["scale"] is None:
            raise ConversionError("scale factor must be a positive finite number, not null")
        extra = tuple((k, v) for k, v in obj.items() if k not in _BUILTIN)
        return cls(**known, extra=extra, explicit=frozenset(known))

    def to_json(self) -> dict[str, Any]:
        """The JSON form: every explicit built-in property (``null``: explicitly none),
        then the user-defined ones."""
        out: dict[str, Any] = {p: getattr(self, p) for p in _BUILTIN if p in self.explicit}
        out.update(self.extra)
        return out

    def get(self, prop: str, default: Any = None) -> Any:
        if prop in _BUILTIN:
            return getattr(self, prop)
        return dict(self.extra).get(prop, default)

    def with_(self, **changes: Any) -> Context:
        """A copy with some properties changed (user-defined ones by name)."""
        builtin = {k: v for k, v in changes.items() if k in _BUILTIN}
        extra = dict(self.extra)
        extra.update({k: v for k, v in changes.items() if k not in _BUILTIN})
        return replace(self, **builtin, extra=tuple(extra.items()))

    def overlay(self, other: Context) -> Context:
        """``other``'s properties where it gives them (explicitly), ours elsewhere."""

        def pick(p: str) -> Any:
            return getattr(other if p in other.explicit else self, p)

        return Context(
            unit=pick("unit"),
            currency=pick("currency"),
            scale=pick("scale"),
            date_format=pick("date_format"),
            extra=tuple({**dict(self.extra), **dict(other.extra)}.items()),
            explicit=self.explicit | other.explicit,
        )

    def __str__(self) -> str:
        return "{" + ", ".join(f"{k}={v}" for k, v in self.to_json().items()) + "}"


def _short(v: Any) -> str:
    """``repr`` of a value, cut short (hostile values can be huge)."""
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 64:
        return f"an integer of {v.bit_length()} bits"
    r = repr(v) if not isinstance(v, (dict, list, tuple)) else type(v).__name__
    return r if len(r) <= 60 else r[:57] + "..."


EMPTY = Context()


def _unit(u: Any) -> str:
    if not isinstance(u, str):
        raise ConversionError(f"a unit is a string, not {_short(u)}")
    return canonical_unit(u)


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


def _date_format_problem(fmt: str) -> str | None:
    """Why ``strptime`` cannot read dates in ``fmt`` (a bad or repeated directive), or None
    (it is tried on the empty string: a usable format fails only to match it)."""
    try:
        datetime.strptime("", fmt)
    except re.error:
        return "a directive is repeated (each of %Y, %m, %d ... may appear once)"
    except ValueError as exc:
        return None if str(exc).startswith("time data") else str(exc)
    return None


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
    def of(cls, obj: Mapping[str, Any] | ClientContext | None) -> ClientContext:
        """From the JSON form; malformed declarations raise :class:`ConversionError`
        naming the property."""
        if obj is None:
            return cls()
        if isinstance(obj, ClientContext):
            return obj
        if not isinstance(obj, Mapping):
            raise ConversionError(f"a client context is a JSON object, not {type(obj).__name__}")
        known = {"currency", "unit", "units", "date_format", "scale", "per_concept"}
        per_raw = obj.get("per_concept") or {}
        if not isinstance(per_raw, Mapping):
            raise ConversionError("per_concept maps concepts to contexts (a JSON object)")
        per = {}
        for k, v in per_raw.items():
            if not isinstance(k, str) or text_problem(k):
                raise ConversionError(f"per_concept is keyed by concept names, not {_short(k)}")
            try:
                per[k] = Context.of(v)
            except ConversionError as exc:
                raise ConversionError(f"per_concept {k!r}: {exc}") from None
        units = obj.get("units") or {}
        if isinstance(units, str) or not isinstance(units, (Mapping, list, tuple)):
            raise ConversionError("units is a list of units or an object keyed by dimensionality")
        if not isinstance(units, Mapping):  # a list of units: keyed by their dimension
            units = {dimensionality(_unit(u)): u for u in units}
        units = dict(units)
        for k, u in units.items():
            if not isinstance(k, str):
                raise ConversionError(f"units is keyed by dimensionality, not {_short(k)}")
            _unit(u)
        if obj.get("unit") is not None:
            units[dimensionality(_unit(obj["unit"]))] = obj["unit"]
        scale = obj.get("scale", 1)
        extra = {k: v for k, v in obj.items() if k not in known}
        # validates currency, date format, scale and user-defined properties
        Context(
            currency=obj.get("currency"),
            date_format=obj.get("date_format"),
            scale=scale,
            extra=tuple(extra.items()),
        )
        return cls(
            currency=obj.get("currency"),
            units=units,
            date_format=obj.get("date_format"),
            scale=scale,
            extra=extra,
            per_concept=per,
        )

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
        from pubsift.models.concepts.ontology import QUANTITY, UnknownConcept

        props = ontology.context_properties(concept)
        unit = None
        if ontology.kind(concept) == QUANTITY:
            unit = self.units.get(ontology.dimension(concept) or "")
        base = Context(
            unit=unit,
            currency=self.currency if "currency" in props else None,
            scale=self.scale if props & {"scale", "unit", "currency"} else 1,
            date_format=self.date_format if "date_format" in props else None,
            extra=tuple((k, v) for k, v in self.extra.items() if k in props),
        )
        best = None
        for key, ctx in self.per_concept.items():
            try:
                target = ontology.resolve(key)
            except UnknownConcept as exc:
                raise ConversionError(f"per_concept {key!r}: {exc}") from None
            if ontology.is_a(concept, target):
                depth = len(ontology.ancestors(target))
                if best is None or depth > best[0]:
                    best = (depth, ctx)
        return base.overlay(best[1]) if best else base
