"""Concept filters in the matching vocabulary and the matching context, and how semantic
objects are matched against them (Cilia et al. 2004, §3.1-3.2, §4.3).

A :class:`ConceptFilter` names a concept (an event matches if its concept is that concept or
a specialization of it) and a conjunction of :class:`Clause`\\ s. A clause is a records
:class:`~pubsift.models.constraints.constraints.Constraint` on the value at a path of member
concepts, with its constant *normalized into the matching context* ``target``:

* quantities: the concept's matching unit (``ps:matchingUnit``, else the SI base unit), scale 1;
* money: the filter's own currency, scale 1 (exchange rates change over time, so constants
  are not converted at subscription time);
* dates: ISO 8601 strings (``YYYY-MM-DD``), compared lexically = chronologically;
* user-defined properties: the conversion's matching value (fixed in time) or the filter's
  own value (time-varying).

Matching is lazy (§4.3: "delay the conversion as much as possible ... apply conversion
functions on demand"): only the values a clause constrains are converted, each at most once
per event and target context. A value that cannot be converted (no rate in force at the
event's time) makes its clause false; a missing member makes it false (Mühl §4.3.2).
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pubsift.core.errors import ConversionError, FilterSyntaxError
from pubsift.models.concepts.context import EMPTY, ClientContext, Context
from pubsift.models.concepts.conversion import (
    ConversionManager,
    NotConvertible,
    format_date,
    parse_date,
    parse_time,
)
from pubsift.models.concepts.ontology import DATE, MONEY, PLAIN, QUANTITY, Ontology, UnknownConcept
from pubsift.models.concepts.semantic_objects import Path, SemanticObject
from pubsift.models.concepts.syntax import Condition, FilterSpec, Literal
from pubsift.models.concepts.units import base_unit, canonical_unit
from pubsift.models.constraints import (
    ABSENT,
    Constraint,
    Interval,
    Op,
    relations,
    skey,
    string_message,
    string_too_long,
)

_CURRENCY = re.compile(r"^[A-Z]{3}$")
_MAX = sys.float_info.max
"""Event values that overflow in a conversion are clamped to ±_MAX; constants stay below
it, so every comparison gives the exact answer."""


@dataclass(frozen=True, slots=True)
class Clause:
    """One constraint on the value at ``path``, whose constants are in context ``target``."""

    path: Path
    constraint: Constraint
    target: Context
    kind: str

    @property
    def key(self) -> tuple:
        return (self.path, _ctx_key(self.target))


@dataclass(frozen=True, slots=True)
class ConceptFilter:
    """Immutable, hashable; ``clauses`` sorted, at most one per (path, target context)."""

    concept: str
    clauses: tuple[Clause, ...] = ()


def _ctx_key(c: Context) -> str:
    return json.dumps(c.to_json(), sort_keys=True)


def make_filter(concept: str, clauses: list[Clause] | tuple[Clause, ...]) -> ConceptFilter:
    """Sort the clauses and conjoin those on the same (path, target) into one
    (raises relations.Unsatisfiable / NotRepresentable)."""
    groups: dict[tuple, list[Clause]] = {}
    for c in clauses:
        groups.setdefault(c.key, []).append(c)
    by_key = {
        k: cs[0]
        if len(cs) == 1
        else Clause(cs[0].path, conjoin_all([c.constraint for c in cs]), cs[0].target, cs[-1].kind)
        for k, cs in groups.items()
    }
    return ConceptFilter(concept, tuple(by_key[k] for k in sorted(by_key)))


def conjoin_all(cs: list[Constraint]) -> Constraint:
    """One constraint equivalent to the conjunction of ``cs`` (Mühl §4.3.2), in time near
    linear in the number of exclusions: ``x != a``, ``x != b``, ``x not in {c, d}`` are
    first united into one ``x not in {a, b, c, d}`` (neither admits a missing attribute),
    so that a filter with thousands of ``!=`` conditions is not conjoined pairwise."""
    excluded: set = set()
    rest: list[Constraint] = []
    for c in cs:
        if c.op is Op.NE:
            excluded.add(skey(c.operand))
        elif c.op is Op.NOT_IN_SET:
            excluded |= c.operand
        else:
            rest.append(c)
    exclusions = [c for c in cs if c.op in (Op.NE, Op.NOT_IN_SET)]
    if len(exclusions) > 1:
        rest.append(Constraint(Op.NOT_IN_SET, frozenset(excluded)))
    else:
        rest.extend(exclusions)
    out = rest[0]
    for c in rest[1:]:
        out = relations.conjoin(out, c)
    return relations.normalize(out) if len(rest) == 1 else out


# -- building filters from the syntax -----------------------------------------------------
class FilterBuilder:
    """Resolves terms and normalizes constants: FilterSpec -> ConceptFilter.

    ``terms`` resolves a client's local term to a concept (a vocabulary); errors are
    :class:`FilterSyntaxError` (unknown terms and units, malformed values, with the
    position) or :class:`ConversionError` (conversions that can never succeed)."""

    def __init__(self, ontology: Ontology, manager: ConversionManager) -> None:
        self.ontology = ontology
        self.manager = manager

    def build(
        self,
        spec: FilterSpec,
        client: ClientContext | None = None,
        terms: Mapping[str, str] | None = None,
    ) -> ConceptFilter:
        own = self._client(spec.context, "$.context")  # validated even when unused
        client = own if client is None else self._client(client, "client")
        err = _Errors(spec)
        concept = self._concept(spec.concept, terms, err, spec.concept_pos, "$.concept")
        if client is not None:  # per-concept overrides resolved now, whatever the clauses
            try:
                client.context_for(self.ontology, concept)
            except ConversionError as exc:
                raise err(f"bad context: {exc}", None, "$.context") from None
        clauses = []
        for i, cond in enumerate(spec.conditions):
            where = f"$.where[{i}]"
            path = tuple(self._concept(t, terms, err, cond.pos, where + ".attr") for t in cond.path)
            clauses.append(self._clause(concept, path, cond, client, err, where))
        try:
            return make_filter(concept, clauses)
        except (relations.Unsatisfiable, relations.NotRepresentable) as exc:
            raise err(_cut(str(exc)), None, "$.where") from None

    @staticmethod
    def _client(raw: Any, where: str) -> ClientContext | None:
        """The client context of a filter's ``context`` (or a ``client`` argument)."""
        try:
            return None if raw is None else ClientContext.of(raw)
        except (ConversionError, TypeError, AttributeError) as exc:
            raise FilterSyntaxError(f"bad context: {exc}", path=where) from None

    def _concept(self, term: str, terms, err, pos, where) -> str:
        """The concept ``term`` names: through ``terms`` (a client vocabulary, whose
        concepts are checked too) or the ontology."""
        if terms is not None and not isinstance(terms, Mapping):
            raise FilterSyntaxError(
                f"terms map a client's words to concepts, not {type(terms).__name__}", path="terms"
            )
        concept = terms[term] if terms and term in terms else term
        try:
            return self.ontology.resolve(concept)
        except UnknownConcept as exc:
            raise err(str(exc), pos, where) from None

    def _clause(self, concept: str, path: Path, cond: Condition, client, err, where: str) -> Clause:
        c = path[-1] if path else concept
        onto = self.ontology
        kind, name = onto.kind(c), onto.name(c)
        try:
            base = client.context_for(onto, c) if client is not None else EMPTY
        except ConversionError as exc:
            raise err(f"bad context: {exc}", None, "$.context") from None
        values, target = [], None
        for lit in cond.args:
            src = self._source(lit, kind, name, base, err, where)
            try:
                tgt = self._target(c, kind, src)
                self.manager.check(name, kind, onto.dimension(c), src, tgt)
            except ConversionError as exc:
                at = (
                    f" (at column {lit.pos + 1})"
                    if err.text is not None and lit.pos is not None
                    else f" (at {where})"
                )
                raise ConversionError(f"{exc}{at}") from None
            self._complete(lit, kind, name, src, err, where)
            if target is not None and tgt != target:
                raise err(
                    f"the values of one condition on {name} must be in one context "
                    f"({target} vs {tgt})",
                    lit.pos,
                    where,
                )
            target = tgt
            values.append(self._value(lit, kind, name, src, tgt, err, where))
        if target is None:
            target = self._target(c, kind, base if kind != MONEY else EMPTY)
        constraint = _constraint(cond, values, err, where)
        try:
            constraint = relations.normalize(constraint)
        except relations.Unsatisfiable as exc:
            raise err(_cut(str(exc)), cond.pos, where) from None
        return Clause(path, constraint, target, kind)

    def _source(
        self, lit: Literal, kind: str, name: str, base: Context, err, where: str
    ) -> Context:
        if lit.unit is None:
            src = base
        elif _CURRENCY.match(lit.unit) and (kind == MONEY or not _is_unit(lit.unit)):
            src = base.with_(currency=lit.unit, unit=None)
        else:
            try:
                src = base.with_(unit=canonical_unit(lit.unit), currency=None)
            except ConversionError as exc:
                raise err(
                    str(exc), lit.unit_pos if lit.unit_pos is not None else lit.pos, where
                ) from None
        return src

    @staticmethod
    def _complete(lit: Literal, kind: str, name: str, src: Context, err, where: str) -> None:
        if isinstance(lit.value, (int, float)) and not isinstance(lit.value, bool):
            if kind == QUANTITY and src.unit is None:
                raise err(f"{name} is a quantity: give a unit (e.g. 2 kg)", lit.pos, where)
            if kind == MONEY and src.currency is None:
                raise err(
                    f"{name} is an amount of money: give a currency (e.g. 100 USD)", lit.pos, where
                )

    def _target(self, c: str, kind: str, src: Context) -> Context:
        onto = self.ontology
        if kind == QUANTITY:
            unit = onto.matching_unit(c)
            if unit is None and src.unit is not None:
                unit = base_unit(src.unit)
            tgt = Context(unit=unit)
        elif kind == MONEY:
            tgt = Context(currency=src.currency)
        else:
            tgt = EMPTY
        extra = []
        for prop, v in src.extra:
            if prop in onto.context_properties(c):
                conv = self.manager.conversions.get(prop)
                fixed = conv is not None and not conv.time_varying
                extra.append((prop, conv.matching_value if conv is not None and fixed else v))
        return tgt.with_(**dict(extra)) if extra else tgt

    def _value(
        self, lit: Literal, kind: str, name: str, src: Context, tgt: Context, err, where: str
    ) -> Any:
        v = lit.value
        if kind == DATE:
            if not isinstance(v, str):
                raise err(f"{name} is a date: write 2017-06-01 or a quoted date", lit.pos, where)
            try:
                d = parse_time(v) if lit.is_date else parse_date(v, src.date_format)
            except (ValueError, NotConvertible) as exc:
                raise err(f"bad date for {name}: {exc}", lit.pos, where) from None
            return format_date(d, None)
        if kind in (QUANTITY, MONEY):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise err(f"{name} is a {kind} value: give a number", lit.pos, where)
            if math.isinf(v):
                return v
            try:
                out = self.manager.convert(kind, v, src, tgt, None)
            except ConversionError as exc:
                raise err(f"{name}: {exc}", lit.pos, where) from None
            if not -_MAX < out < _MAX:
                raise err(
                    f"{name}: {v!r} is out of range in {tgt} (below ±1.8e308)", lit.pos, where
                )
            return out
        return v


class _Errors:
    """Makes FilterSyntaxErrors at a text position or a JSON path."""

    def __init__(self, spec: FilterSpec) -> None:
        self.text = spec.text

    def __call__(self, msg: str, pos: int | None, where: str) -> FilterSyntaxError:
        if self.text is not None:
            return FilterSyntaxError(msg, self.text, pos)
        return FilterSyntaxError(msg, path=where)


def _is_unit(token: str) -> bool:
    try:
        canonical_unit(token)
        return True
    except ConversionError:
        return False


def _constraint(cond: Condition, values: list[Any], err, where: str) -> Constraint:
    for v in values:  # the constraint algebra's limit on filter strings (its wire form too)
        if isinstance(v, str) and string_too_long(v):
            raise err(string_message(v), cond.pos, where)
    op = cond.op
    simple = {
        "<": Op.LT,
        "<=": Op.LE,
        ">": Op.GT,
        ">=": Op.GE,
        "=": Op.EQ,
        "!=": Op.NE,
        "prefix": Op.PREFIX,
        "not-prefix": Op.NOT_PREFIX,
        "suffix": Op.SUFFIX,
        "not-suffix": Op.NOT_SUFFIX,
        "substring": Op.SUBSTRING,
    }
    if op == "exists":
        return Constraint(Op.EXISTS)
    if op == "not-exists":
        return Constraint(Op.NOT_EXISTS)
    if op in simple:
        v = values[0]
        if op in ("<", "<=", ">", ">=") and not (isinstance(v, str) or _num(v)):
            raise err(f"'{op}' compares numbers, dates or strings, not {v!r}", cond.pos, where)
        return Constraint(simple[op], v)
    if op in ("in-range", "not-in-range"):
        lo, hi = values
        if not ((_num(lo) and _num(hi)) or (isinstance(lo, str) and isinstance(hi, str))):
            raise err("a range needs two numbers or two dates/strings", cond.pos, where)
        if lo > hi:
            raise err(f"empty range: {lo!r} > {hi!r}", cond.pos, where)
        iv = Interval(lo, hi, *cond.closed)
        return Constraint(Op.IN_RANGE if op == "in-range" else Op.NOT_IN_RANGE, iv)
    if op in ("in", "not-in"):
        for v in values:
            if not (v is None or isinstance(v, (str, int, float))):
                raise err(f"set members are scalars, not {v!r}", cond.pos, where)
        return Constraint(
            Op.IN_SET if op == "in" else Op.NOT_IN_SET, frozenset(skey(v) for v in values)
        )
    raise err(f"unknown operator {op!r}", cond.pos, where)


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# -- matching -----------------------------------------------------------------------------
_FAIL = object()


class Matcher:
    """Evaluates filters on semantic objects with lazy, cached conversion."""

    def __init__(self, ontology: Ontology, manager: ConversionManager) -> None:
        self.ontology = ontology
        self.manager = manager
        self.conversions = 0  # values converted (for benchmarks and tests)

    def value(self, e: SemanticObject, clause: Clause) -> Any:
        """The value at the clause's path in the clause's target context (ABSENT if the
        member is missing, ``_FAIL`` if it cannot be converted); cached on the event."""
        key = (clause.path, clause.target)
        cache = e._cache
        try:
            return cache[key]
        except KeyError:
            pass
        m = e.find(clause.path)
        if m is None:
            v = ABSENT
        elif m.is_complex:
            v = m.value if clause.kind == PLAIN else _FAIL
        else:
            self.conversions += 1
            kind = self.ontology.kind(m.concept)
            try:
                v = self.manager.converter(kind, m.context, clause.target)(m.value, e.time)
            except ConversionError:
                v = _FAIL
            else:
                if v.__class__ is float and not -_MAX < v < _MAX:
                    # overflowed: beyond every constant; NaN (a logarithm of a negative
                    # power) cannot be compared at all
                    v = _FAIL if v != v else math.copysign(_MAX, v)
        cache[key] = v
        return v

    def matches(self, f: ConceptFilter, e: SemanticObject) -> bool:
        if not self.ontology.is_a(e.concept, f.concept):
            return False
        for clause in f.clauses:
            v = self.value(e, clause)
            if v is _FAIL:
                return False
            if v.__class__ is tuple:  # a complex member: only existence is meaningful
                if clause.constraint.op is not Op.EXISTS:
                    return False
                continue
            if not clause.constraint.matches(v):
                return False
        return True


def _cut(message: str) -> str:
    """A message of the constraint algebra, cut short (it shows whole constants)."""
    return message if len(message) <= 300 else message[:297] + "..."
