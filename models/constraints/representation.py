"""Reading a value set back as one constraint (Mühl 2002, §4.3.2 conjunction-complete and
§4.3.7 disjunction-complete constraint classes).

:func:`represent` finds a constraint whose L_A is exactly a given value set, or None. It is
complete for numbers (one interval, the complement of one, finite and co-finite sets; with
``integer`` over the integers), lexical string sets (comparisons, ranges, prefixes, sets and
their complements), booleans, null, finite and co-finite sets of several kinds, single
multi-value cubes, and ``exists`` / ``not-exists``. For the other string sets (suffix,
substring, equals-ignore-case, instanceof) and unions of several multi-value cubes it tries
the *hints* (the inputs of a conjunction or merger and derived candidates) and verifies each
exactly, so what it returns is always right, but it may miss a representation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pubsift.models.constraints.constraints import Constraint, Interval, Op
from pubsift.models.constraints.elements import ALL_ELEMS
from pubsift.models.constraints.values import BOOL, MULTI, NULL, NUM, STR, skey
from pubsift.models.constraints.valuesets import (
    INF,
    TOP,
    Spans,
    ValueSet,
    everything,
    prefix_span,
    surely_equal,
    value_set,
)

LIMIT = 4096  # the largest finite set read back as IN_SET / NOT_IN_SET


def _num_value(v: Any) -> Any:
    return int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 2**53 else v


def span_constraint(s: tuple, integer: bool, negate: bool) -> Constraint:
    """One numeric span (or its complement, when ``negate``) as a constraint."""
    lo, lc, hi, hc = s
    if integer and hi != INF:
        hi, hc = hi - 1, True
    lo, hi = _num_value(lo), _num_value(hi)
    if lo == hi and lc and hc:
        return Constraint(Op.NE if negate else Op.EQ, _num_value(lo))
    if negate:
        return Constraint(Op.NOT_IN_RANGE, Interval(lo, hi, lc, hc))
    if lo == -INF and hi == INF:
        return Constraint(Op.IN_RANGE, Interval(-INF, INF, False, False))
    if lo == -INF:
        return Constraint(Op.LE if hc else Op.LT, hi)
    if hi == INF:
        return Constraint(Op.GE if lc else Op.GT, lo)
    return Constraint(Op.IN_RANGE, Interval(lo, hi, lc, hc))


def _num_constraint(spans: Spans, integer: bool) -> Constraint | None:
    if len(spans.items) == 1:
        return span_constraint(spans.items[0], integer, False)
    comp = ~spans
    if len(comp.items) == 1:
        return span_constraint(comp.items[0], integer, True)
    pts = spans.points(LIMIT)
    if pts is not None:
        return Constraint(Op.IN_SET, frozenset(skey(_num_value(v)) for v in pts))
    pts = comp.points(LIMIT)
    if pts is not None:
        return Constraint(Op.NOT_IN_SET, frozenset(skey(_num_value(v)) for v in pts))
    return None


def lex_span_constraint(s: tuple, negate: bool) -> Constraint:
    lo, _, hi, _ = s
    if hi is not TOP and hi == lo + "\0":
        return Constraint(Op.NE if negate else Op.EQ, lo)
    if lo and hi == prefix_span(lo)[2]:
        return Constraint(Op.NOT_PREFIX if negate else Op.PREFIX, lo)
    lo_open = lo.endswith("\0")
    lo2 = lo[:-1] if lo_open else lo
    hi_closed = hi is not TOP and hi.endswith("\0")
    hi2 = None if hi is TOP else hi[:-1] if hi_closed else hi
    if negate:
        return Constraint(Op.NOT_IN_RANGE, Interval(lo2, hi2, not lo_open, hi_closed))
    if lo == "" and hi is TOP:
        return Constraint(Op.PREFIX, "")
    if lo == "":
        return Constraint(Op.LE if hi_closed else Op.LT, hi2)
    if hi is TOP:
        return Constraint(Op.GT if lo_open else Op.GE, lo2)
    return Constraint(Op.IN_RANGE, Interval(lo2, hi2, not lo_open, hi_closed))


def _lex_constraint(spans: Spans) -> Constraint | None:
    if len(spans.items) == 1:
        return lex_span_constraint(spans.items[0], False)
    comp = ~spans
    if len(comp.items) == 1:
        return lex_span_constraint(comp.items[0], True)
    pts = spans.points(LIMIT)
    if pts is not None:
        return Constraint(Op.IN_SET, frozenset(skey(v) for v in pts))
    pts = comp.points(LIMIT)
    if pts is not None:
        return Constraint(Op.NOT_IN_SET, frozenset(skey(v) for v in pts))
    return None


_CASELESS = (Op.EQ_IGNORE_CASE, Op.PREFIX_IGNORE_CASE, Op.SUFFIX_IGNORE_CASE)


def canonical_hint(c: Constraint) -> Constraint:
    if c.op in _CASELESS:
        return Constraint(c.op, c.operand.casefold())
    return c


def _from_hints(vs: ValueSet, hints: Sequence[Constraint], integer: bool) -> Constraint | None:
    for h in hints:
        if surely_equal(value_set(h, integer), vs):
            return canonical_hint(h)
    return None


def _str_constraint(vs: ValueSet, hints: Sequence[Constraint], integer: bool) -> Constraint | None:
    s = vs.str
    if s.lex is not None:
        return _lex_constraint(s.lex)
    for h in hints:  # instanceof keeps its type name
        if h.op is Op.INSTANCEOF and surely_equal(value_set(h, integer), vs):
            return h
    one = s.dfa.strings(1)
    if one is not None and len(one) == 1:
        return Constraint(Op.EQ, one[0])
    if s.dfa.is_universal():
        return Constraint(Op.PREFIX, "")
    comp = s.dfa.complement()
    one = comp.strings(1)
    if one is not None and len(one) == 1:
        return Constraint(Op.NE, one[0])
    found = _from_hints(vs, hints, integer)
    if found is not None:
        return found
    words = s.dfa.strings(LIMIT)
    if words is not None:
        return Constraint(Op.IN_SET, frozenset(skey(w) for w in words))
    words = comp.strings(LIMIT)
    if words is not None:
        return Constraint(Op.NOT_IN_SET, frozenset(skey(w) for w in words))
    return None


def _multi_constraint(
    vs: ValueSet, hints: Sequence[Constraint], integer: bool
) -> Constraint | None:
    cubes = vs.multi.cubes
    if len(cubes) == 1:
        (c,) = cubes
        up, low, hits = c.upper.fin, c.lower, c.hits
        if up is not None and not low and not hits:
            if c.upper == ALL_ELEMS:
                return Constraint(Op.SUPERSET, frozenset())
            if not up[0]:
                return Constraint(Op.SUBSET, up[1])
            if len(up[1]) == 1:
                return Constraint(Op.NOT_CONTAINS, next(iter(up[1])))
            return Constraint(Op.DISJOINT, up[1])
        if c.upper == ALL_ELEMS and not hits:
            if len(low) == 1:
                return Constraint(Op.CONTAINS, next(iter(low)))
            return Constraint(Op.SUPERSET, low)
        if c.upper == ALL_ELEMS and not low and len(hits) == 1:
            (o,) = hits
            if o.fin is not None and not o.fin[0]:
                elems = o.fin[1]
                if len(elems) == 1:
                    return Constraint(Op.CONTAINS, next(iter(elems)))
                return Constraint(Op.OVERLAPS, elems)
    return _from_hints(vs, hints, integer)


def part_keys(vs: ValueSet, k: str, negate: bool) -> list | None:
    """The members of kind k of vs (or of its complement within kind k), if finite."""
    if k == NUM:
        pts = (~vs.num if negate else vs.num).points(LIMIT)
        return None if pts is None else [skey(_num_value(v)) for v in pts]
    if k == STR:
        pts = (~vs.str if negate else vs.str).strings(LIMIT)
        return None if pts is None else [skey(v) for v in pts]
    if k == BOOL:
        return [skey(b) for b in (frozenset({True, False}) - vs.bools if negate else vs.bools)]
    return [] if negate else [skey(None)]


def represent(vs: ValueSet, integer: bool, hints: Sequence[Constraint] = ()) -> Constraint | None:
    """One constraint whose L_A is exactly vs (non-empty), or None."""
    kinds = vs.kinds()
    if not kinds:
        return None
    if kinds == {"absent"}:
        return Constraint(Op.NOT_EXISTS)
    if "absent" in kinds:
        return _from_hints(vs, [h for h in hints if h.op is Op.ANY], integer)
    if len(kinds) == 1:
        (k,) = kinds
        if k == NUM:
            return _num_constraint(vs.num, integer)
        if k == STR:
            return _str_constraint(vs, hints, integer)
        if k == MULTI:
            return _multi_constraint(vs, hints, integer)
        if k == BOOL and len(vs.bools) == 1:
            return Constraint(Op.EQ, next(iter(vs.bools)))
        if k == NULL:
            return Constraint(Op.EQ, None)
    if surely_equal(vs, everything(integer)):
        return Constraint(Op.EXISTS)
    if MULTI in kinds:
        return _from_hints(vs, hints, integer)
    for negate in (False, True):
        keys: list = []
        for k in kinds:
            part = part_keys(vs, k, negate)
            if part is None or (negate and not part):
                break
            keys += part
        else:
            return Constraint(Op.NOT_IN_SET if negate else Op.IN_SET, frozenset(keys))
    return None


__all__ = [
    "LIMIT",
    "canonical_hint",
    "lex_span_constraint",
    "part_keys",
    "represent",
    "span_constraint",
]
