"""The wire and text forms of concept filters (the FilterModel contract: "round-trip exact").

* :func:`dump_filter` / :func:`load_filter`: the JSON wire form, clause by clause in the
  matching context. Loading refuses any form no filter of the model dumps — a clause kind
  that contradicts its concept, a context that is not the concept's matching context,
  constants of the wrong kind or beyond :mod:`~pubsift.models.concepts.limits` — so a
  loaded filter always round-trips (:func:`check_filter` applies the same checks to
  filters built by hand, e.g. before they are indexed).
* :func:`format_filter`: the text form (:mod:`~pubsift.models.concepts.syntax`) with
  plain literals and units the text grammar reads back; filters it cannot express
  (infinite bounds, user-defined properties, fractional unit exponents) are written in
  their wire form, which ``parse_filter`` reads too.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from pubsift.core.errors import ConversionError, FilterSyntaxError
from pubsift.models.concepts.context import Context
from pubsift.models.concepts.filters import Clause, ConceptFilter, _cut, make_filter
from pubsift.models.concepts.limits import MAX_TEXT_LENGTH, MAX_TOKENS, number_problem, text_problem
from pubsift.models.concepts.ontology import DATE, MONEY, PLAIN, QUANTITY, Ontology, UnknownConcept
from pubsift.models.concepts.syntax import _KEYWORDS, _UNIT, count_tokens
from pubsift.models.concepts.units import UREG, base_unit, canonical_unit
from pubsift.models.constraints import (
    NUM,
    Constraint,
    Interval,
    Op,
    TooComplex,
    dump_constraint,
    load_constraint,
    relations,
    sort_key,
)


def dump_filter(f: ConceptFilter, onto: Ontology) -> dict:
    return {
        "concept": onto.name(f.concept),
        "clauses": [
            {
                "path": [onto.name(p) for p in c.path],
                "constraint": dump_constraint(c.constraint),
                "context": c.target.to_json(),
                "kind": c.kind,
            }
            for c in f.clauses
        ],
    }


def load_filter(obj: Any, onto: Ontology) -> ConceptFilter:
    """The wire form back to a filter; refuses forms no filter of the model dumps (clause
    kinds that contradict their concept, contexts that are not matching contexts, values
    of the wrong kind), so that every loaded filter round-trips exactly."""

    def err(msg: str, path: str) -> FilterSyntaxError:
        return FilterSyntaxError(msg, path=path)

    if not isinstance(obj, Mapping) or set(obj) != {"concept", "clauses"}:
        raise err('a concept filter\'s wire form is {"concept": ..., "clauses": [...]}', "$")
    if not isinstance(obj["clauses"], list):
        raise err("'clauses' is a list", "$.clauses")
    try:
        concept = onto.resolve(obj["concept"])
    except UnknownConcept as exc:
        raise err(str(exc), "$.concept") from None
    clauses = []
    for i, c in enumerate(obj["clauses"]):
        where = f"$.clauses[{i}]"
        if not isinstance(c, Mapping) or set(c) != {"path", "constraint", "context", "kind"}:
            raise err("a clause has path, constraint, context, kind", where)
        if not isinstance(c["path"], list):
            raise err("'path' is a list of concept names", where + ".path")
        try:
            path = tuple(onto.resolve(p) for p in c["path"])
        except UnknownConcept as exc:
            raise err(str(exc), where + ".path") from None
        kind = c["kind"]
        if not isinstance(kind, str) or kind not in (QUANTITY, MONEY, DATE, PLAIN):
            raise err(f"unknown kind {_shown(kind)}", where + ".kind")
        try:
            target = Context.of(c["context"])
        except ConversionError as exc:
            raise err(str(exc), where + ".context") from None
        constraint = load_constraint(c["constraint"], where + ".constraint")
        try:
            # canonical, as the text parser makes it: the text form then parses back to it
            constraint = relations.normalize(constraint)
        except relations.Unsatisfiable:
            raise err("no value satisfies this constraint", where + ".constraint") from None
        except TooComplex:
            raise err("this constraint is too complex to decide", where + ".constraint") from None
        clause = Clause(path, constraint, target, kind)
        check_clause(clause, concept, onto, where)
        clauses.append(clause)
    f = ConceptFilter(concept, tuple(clauses))
    try:
        canonical = make_filter(concept, clauses)
    except (relations.Unsatisfiable, relations.NotRepresentable) as exc:
        raise err(_cut(str(exc)), "$.clauses") from None
    if f != canonical:
        raise err("clauses must be sorted, one per path and context", "$.clauses")
    return f


def check_filter(f: Any, onto: Ontology) -> None:
    """Raise :class:`FilterSyntaxError` unless ``f`` is a filter the model could have made
    (for filters built by hand, e.g. before they are indexed)."""
    if not isinstance(f, ConceptFilter) or not isinstance(f.clauses, tuple):
        raise FilterSyntaxError(f"not a concept filter: {type(f).__name__}")
    if f.concept not in onto.concepts:
        raise FilterSyntaxError(f"{_shown(f.concept)} is not a concept of the ontology")
    for i, c in enumerate(f.clauses):
        if (
            not isinstance(c, Clause)
            or not isinstance(c.constraint, Constraint)
            or not isinstance(c.target, Context)
            or not isinstance(c.path, tuple)
            or not all(p in onto.concepts for p in c.path)
        ):
            raise FilterSyntaxError(
                "a clause has a path of concepts, a constraint and a context", path=f"clauses[{i}]"
            )
        check_clause(c, f.concept, onto, f"clauses[{i}]")


_MATCHING = {
    QUANTITY: frozenset({"unit"}),
    MONEY: frozenset({"currency"}),
    DATE: frozenset(),
    PLAIN: frozenset(),
}
_MULTI = frozenset({Op.SUBSET, Op.SUPERSET, Op.CONTAINS, Op.NOT_CONTAINS, Op.DISJOINT, Op.OVERLAPS})


def check_clause(c: Clause, concept: str, onto: Ontology, where: str) -> None:
    """A clause's kind is its concept's, its context a matching context of that kind and
    its constants values of that kind (FilterSyntaxError otherwise)."""

    def err(msg: str, at: str = "") -> FilterSyntaxError:
        return FilterSyntaxError(msg, path=where + at)

    member = c.path[-1] if c.path else concept
    kind, name = onto.kind(member), onto.name(member)
    if c.kind != kind:
        raise err(f"clause kind {_shown(c.kind)} contradicts {name}, a {kind} value", ".kind")
    t = c.target
    # without constants (exists), a quantity without a matching unit of its own and an
    # amount of money are matched in no context
    unitless = (
        t.explicit == frozenset()
        and not _constants(c.constraint)
        and (kind == MONEY or (kind == QUANTITY and onto.matching_unit(member) is None))
    )
    if (
        (
            not unitless
            and (t.explicit != _MATCHING[kind] or any(getattr(t, p) is None for p in t.explicit))
        )
        or t.date_format is not None
        or any(p not in onto.context_properties(member) for p, _ in t.extra)
    ):
        raise err(f"{t} is not a matching context of {name} (a {kind} value)", ".context")
    if kind == QUANTITY and not unitless:
        want = onto.matching_unit(member)
        try:
            # (checked above: a quantity's matching context names its unit)
            want = canonical_unit(want) if want is not None else base_unit(t.unit)  # type: ignore[arg-type]
        except ConversionError as exc:
            raise err(str(exc), ".context") from None
        if t.unit != want:
            raise err(f"{name} is matched in {want}, not {t.unit}", ".context")
    op = c.constraint.op
    if op in _MULTI:
        raise err(f"{op.value!r} constrains sets of values; {name} has one value", ".constraint")
    for v in _constants(c.constraint):
        problem = _constant_problem(v, kind)
        if problem:
            raise err(f"{name}: {problem}", ".constraint")


def _constants(c: Constraint) -> list[Any]:
    x = c.operand
    if c.op in (Op.EXISTS, Op.NOT_EXISTS):
        return []
    if isinstance(x, Interval):
        return [x.lo] + ([x.hi] if x.hi is not None or x.kind == NUM else [])
    if isinstance(x, frozenset):
        return [v for _, v in x]
    return [x]


def _constant_problem(v: Any, kind: str) -> str | None:
    num = isinstance(v, (int, float)) and not isinstance(v, bool)
    if num and not (isinstance(v, float) and math.isinf(v)) and number_problem(v):
        return number_problem(v)
    if isinstance(v, str) and text_problem(v):
        return text_problem(v)
    if kind in (QUANTITY, MONEY) and not num:
        return f"a {kind} value is compared with numbers, not {_shown(v)}"
    if kind == DATE and not isinstance(v, str):
        return f"dates are compared as ISO 8601 strings (2017-06-01), not {_shown(v)}"
    return None


def _shown(v: Any) -> str:
    r = repr(v) if isinstance(v, (str, int, float, bool)) or v is None else type(v).__name__
    return r if len(r) <= 60 else r[:57] + "..."


_TEXT_OPS = {
    Op.LT: "<",
    Op.LE: "<=",
    Op.GT: ">",
    Op.GE: ">=",
    Op.EQ: "=",
    Op.NE: "!=",
    Op.PREFIX: "prefix",
    Op.NOT_PREFIX: "not prefix",
    Op.SUFFIX: "suffix",
    Op.NOT_SUFFIX: "not suffix",
    Op.SUBSTRING: "contains",
}


def format_filter(f: ConceptFilter, onto: Ontology) -> str:
    """The text form (parsed back to the same filter); filters the text cannot express
    (e.g. infinite bounds, or too long for the text form's limits) are written in their
    JSON wire form, which parse_filter reads."""
    own: list[str] = []
    parts: list[str] = []
    for c in f.clauses:
        text = _format_clause(c, onto)
        if text is None:
            return json.dumps(dump_filter(f, onto), sort_keys=True)
        (parts if c.path else own).append(text)
    head = " ".join([_term(onto.name(f.concept))] + ([" and ".join(own)] if own else []))
    text = head + (" where " + " and ".join(parts) if parts else "")
    if len(text) > MAX_TEXT_LENGTH or (
        len(text) > MAX_TOKENS and count_tokens(text) > MAX_TOKENS
    ):  # beyond the text form's limits
        return json.dumps(dump_filter(f, onto), sort_keys=True)
    return text


#: words a bare term must not be (the filter syntax's keywords, and number words)
_RESERVED = _KEYWORDS | {"inf", "infinity"}


def _term(name: str) -> str:
    if re.fullmatch(r"[^\W\d]\w*", name) and name.lower() not in _RESERVED:
        return name
    return json.dumps(name, ensure_ascii=False)


def _lit(v: Any, c: Clause) -> str | None:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if c.kind == DATE:
        return (
            v if isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}(T[\d:.]+)?", v) else None
        )
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, (int, float)):
        unit = c.target.currency or _unit_text(c.target.unit)
        if c.target.unit is not None and unit is None:
            return None
        num = repr(int(v) if isinstance(v, int) else float(v))  # plain literals, not numpy's
        return num + (f" {unit}" if unit else "")
    return json.dumps(v, ensure_ascii=False)


def _unit_text(unit: str | None) -> str | None:
    """A unit as the text grammar writes it (``1 / second`` as ``second ** -1``), or None
    when it cannot (fractional exponents: the filter is then written in its wire form)."""
    if unit is None or _UNIT.fullmatch(unit):
        return unit
    try:
        items = UREG.parse_units(unit)._units.items()
    except Exception:
        return None
    # pint types exponents as any number; a unit's are real
    if not all(float(e).is_integer() for _, e in items):  # type: ignore[arg-type]
        return None
    text = " * ".join(n if e == 1 else f"{n} ** {int(e)}" for n, e in items)  # type: ignore[arg-type]
    try:
        return text if _UNIT.fullmatch(text) and canonical_unit(text) == unit else None
    except ConversionError:
        return None


def _format_clause(c: Clause, onto: Ontology) -> str | None:
    if c.target.extra or (c.kind == QUANTITY and c.target.unit is None):
        return None
    path = ".".join(_term(onto.name(p)) for p in c.path)
    op, x = c.constraint.op, c.constraint.operand
    if op is Op.EXISTS:
        return f"{path} exists".lstrip()
    if op is Op.NOT_EXISTS:
        return f"{path} not exists".lstrip()
    if op in _TEXT_OPS:
        lit = _lit(x, c)
        return None if lit is None else f"{path} {_TEXT_OPS[op]} {lit}".lstrip()
    if op in (Op.IN_RANGE, Op.NOT_IN_RANGE):
        lo, hi = _lit(x.lo, c), _lit(x.hi, c)
        if lo is None or hi is None:
            return None
        neg = "not " if op is Op.NOT_IN_RANGE else ""
        return (
            f"{path} {neg}in {'[' if x.lo_closed else '('}{lo}, {hi}{']' if x.hi_closed else ')'}"
        ).lstrip()
    if op in (Op.IN_SET, Op.NOT_IN_SET):
        found = [_lit(v, c) for _, v in sorted(x, key=lambda kv: sort_key(kv[1]))]
        lits = [v for v in found if v is not None]
        if len(lits) < len(found):
            return None
        neg = "not " if op is Op.NOT_IN_SET else ""
        return f"{path} {neg}in {{{', '.join(lits)}}}".lstrip()
    return None
