"""Value sets L_A(c) of records constraints, exactly (Mühl 2002, §4.3.2).

``L_A(A) = {v | Op(v, C) = true}`` is what identity, covering, overlap and merging of attribute
filters are defined on. :func:`value_set` turns any :class:`Constraint` into a
:class:`ValueSet`, a representation closed under union, intersection and complement, so
that ``covers`` (``L_A(b) ⊆ L_A(a)``), ``identical``, ``overlaps`` and the union of a merger
are all *decided exactly*, for every pair of operators, across kinds:

* ``absent`` — the point ``ABSENT`` (only ``not-exists`` holds it);
* numbers — a finite union of intervals over the reals with open/closed ends (±∞ allowed);
  with ``integer=True`` (the attribute's numbers are integers) the same over the integers,
  so ``price ∈ {20..25}`` equals ``price ∈ [20, 25]`` (Conan 2018, §4.3.3);
* strings — a minimal complete DFA over code points (classes of code-point ranges): every
  string operator denotes a regular language — lexical comparisons, ranges and prefixes
  (unions of lexical intervals, kept as such too, so that they can be read back as one
  constraint), suffix, substring (KMP automata), equals-ignore-case (the finite
  ``casefold`` preimage), sets and ``instanceof`` (tries);
* booleans and null — finite sets;
* multi values (lists as sets) — a union of *cubes* ``{X | X ⊆ U, L ⊆ X, X ∩ O_i ≠ ∅}``
  (L finite, U and each O_i sets of scalars); each multi-value operator of Table 4.7 is
  one cube (U and O_i finite or co-finite), and so is the list part of an "any element"
  constraint ``any c`` (O = the scalars of L_A(c)); the complement of a cube is a union of
  cubes.

(:mod:`.intervals`, :mod:`.automata`, :mod:`.multivalues` hold the three representations.)

What is not decided exactly:

* no *pair* of constraints: every covering / identity / overlap question between two
  constraints is decided exactly, for all operator pairs (numbers are taken as reals: an
  open interval between two adjacent floats counts as non-empty);
* the difference of *unions* of many multi-value cubes (merging many superset / contains /
  not-contains / disjoint constraints) can need exponentially many cubes; past
  :data:`~.multivalues.MAX_CUBES` it raises :class:`~.multivalues.TooComplex`, and its
  callers answer soundly (:func:`surely_equal` says False, a perfect merge is not found,
  an imperfection is ``inf``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pubsift.models.constraints.automata import (
    StrSet,
    dfa_casefold_preimage,
    dfa_caseless,
    dfa_kmp,
    dfa_words,
)
from pubsift.models.constraints.constraints import ABSENT, Constraint, Op
from pubsift.models.constraints.elements import ALL_ELEMS, NO_ELEMS, Elems
from pubsift.models.constraints.intervals import (
    INF,
    INTEGER,
    LEX,
    REAL,
    TOP,
    Line,
    Spans,
    prefix_span,
)
from pubsift.models.constraints.multivalues import ALL_CUBE, MultiSet, TooComplex, cube
from pubsift.models.constraints.regular import glob_dfa, iregexp_dfa
from pubsift.models.constraints.values import BOOL, MULTI, NULL, NUM, STR, kind, skey


@dataclass(frozen=True, slots=True, eq=False)
class ValueSet:
    """``L_A``: a set of attribute values of every kind, plus possibly ``ABSENT``."""

    absent: bool
    num: Spans
    str: StrSet
    bools: frozenset[Any]
    null: bool
    multi: MultiSet

    def kinds(self) -> frozenset[builtins.str]:  # (the field str shadows the type)
        """The kinds with members (``"absent"`` for ABSENT)."""
        out = set()
        if self.absent:
            out.add("absent")
        if self.num:
            out.add(NUM)
        if not self.str.is_empty():
            out.add(STR)
        if self.bools:
            out.add(BOOL)
        if self.null:
            out.add(NULL)
        if not self.multi.is_empty():
            out.add(MULTI)
        return frozenset(out)

    def is_empty(self) -> bool:
        return not (
            self.absent
            or self.num
            or self.bools
            or self.null
            or not self.str.is_empty()
            or not self.multi.is_empty()
        )

    def __and__(self, o: ValueSet) -> ValueSet:
        return ValueSet(
            self.absent and o.absent,
            self.num & o.num,
            self.str & o.str,
            self.bools & o.bools,
            self.null and o.null,
            self.multi & o.multi,
        )

    def __or__(self, o: ValueSet) -> ValueSet:
        return ValueSet(
            self.absent or o.absent,
            self.num | o.num,
            self.str | o.str,
            self.bools | o.bools,
            self.null or o.null,
            self.multi | o.multi,
        )

    def __sub__(self, o: ValueSet) -> ValueSet:
        return ValueSet(
            self.absent and not o.absent,
            self.num - o.num,
            self.str - o.str,
            self.bools - o.bools,
            self.null and not o.null,
            self.multi - o.multi,
        )

    def __invert__(self) -> ValueSet:
        return ValueSet(
            not self.absent,
            ~self.num,
            ~self.str,
            frozenset({True, False}) - self.bools,
            not self.null,
            ~self.multi,
        )

    def issubset(self, o: ValueSet) -> bool:
        """self ⊆ o, checking the cheap kinds first."""
        return (
            (not self.absent or o.absent)
            and (not self.null or o.null)
            and self.bools <= o.bools
            and (not self.num or self.num.issubset(o.num))
            and (self.str.is_empty() or self.str.issubset(o.str))
            and (self.multi.is_empty() or self.multi.issubset(o.multi))
        )

    def isdisjoint(self, o: ValueSet) -> bool:
        if (self.absent and o.absent) or (self.null and o.null) or (self.bools & o.bools):
            return False
        if self.num and o.num and (self.num & o.num):
            return False
        if not self.str.is_empty() and not o.str.is_empty() and not (self.str & o.str).is_empty():
            return False
        if not self.multi.is_empty() and not o.multi.is_empty():
            return (self.multi & o.multi).is_empty()
        return True

    def __eq__(self, o: object) -> bool:
        if not isinstance(o, ValueSet):
            return NotImplemented
        return (
            self.absent == o.absent
            and self.null == o.null
            and self.bools == o.bools
            and self.num == o.num
            and self.str == o.str
            and self.multi == o.multi
        )

    __hash__ = None  # type: ignore[assignment]

    def contains(self, v: Any) -> bool:
        """v ∈ self (for values as :meth:`Constraint.matches` takes them)."""
        if v is ABSENT:
            return self.absent
        k = kind(v)
        if k == NUM:
            return self.num.contains(v)
        if k == STR:
            return self.str.contains(v)
        if k == BOOL:
            return v in self.bools
        if k == NULL:
            return self.null
        return self.multi.contains(tuple(v))

    def samples(self) -> Iterator[Any]:
        """Members of the set, a few of each kind, the simplest first."""
        gens = []
        if self.absent:
            gens.append(iter([ABSENT]))
        if self.num:
            gens.append(self.num.samples())
        if not self.str.is_empty():
            gens.append(self.str.samples())
        if self.bools:
            gens.append(iter(sorted(self.bools)))
        if self.null:
            gens.append(iter([None]))
        if not self.multi.is_empty():
            gens.append(self.multi.samples())
        while gens:  # round robin over kinds
            for g in list(gens):
                v = next(g, StopIteration)
                if v is StopIteration:
                    gens.remove(g)
                else:
                    yield v


def surely_equal(a: ValueSet, b: ValueSet) -> bool:
    """a = b, or False when that is too costly to decide (:class:`TooComplex` unions of
    multi-value cubes): the sound answer for identity."""
    try:
        return a == b
    except TooComplex:
        return False


def _line(integer: bool) -> Line:
    return INTEGER if integer else REAL


@lru_cache(maxsize=4)
def empty(integer: bool = False) -> ValueSet:
    """The empty value set."""
    return ValueSet(
        False, Spans(_line(integer), ()), StrSet(Spans(LEX, ())), frozenset(), False, MultiSet(())
    )


@lru_cache(maxsize=8)
def everything(integer: bool = False, absent: bool = False) -> ValueSet:
    """Every present value of every kind (``absent``: and ABSENT)."""
    return ValueSet(
        absent,
        Spans.of(_line(integer), [(-INF, False, INF, False)]),
        StrSet(Spans.of(LEX, [("", True, TOP, False)])),
        frozenset({True, False}),
        True,
        MultiSet([ALL_CUBE]),
    )


def _with(integer: bool, **parts: Any) -> ValueSet:
    e = empty(integer)
    return ValueSet(
        parts.get("absent", False),
        parts.get("num", e.num),
        parts.get("str", e.str),
        parts.get("bools", e.bools),
        parts.get("null", False),
        parts.get("multi", e.multi),
    )


def _scalar_part(integer: bool, keys: Iterable[tuple[str, Any]], negate: bool) -> ValueSet:
    """IN_SET (or NOT_IN_SET when ``negate``) of skey pairs, kind by kind."""
    by_kind: dict[str, list[Any]] = {}
    for k, v in keys:
        by_kind.setdefault(k, []).append(v)
    line = _line(integer)
    parts: dict[str, Any] = {}
    if NUM in by_kind:
        s = Spans.of(line, [(v, True, v, True) for v in by_kind[NUM]])
        parts["num"] = ~s if negate else s
    if STR in by_kind:
        s = Spans.of(LEX, [(v, True, v, True) for v in by_kind[STR]])
        parts["str"] = StrSet(~s if negate else s)
    if BOOL in by_kind:
        b = frozenset(by_kind[BOOL])
        parts["bools"] = frozenset({True, False}) - b if negate else b
    if NULL in by_kind:
        parts["null"] = not negate
    return _with(integer, **parts)


def _cmp_span(op: Op, x: Any) -> tuple[Any, ...]:
    hi = TOP if isinstance(x, str) else INF
    lo = "" if isinstance(x, str) else -INF
    return {
        Op.LT: (lo, True, x, False),
        Op.LE: (lo, True, x, True),
        Op.GT: (x, False, hi, False),
        Op.GE: (x, True, hi, False),
    }[op]


def _ordered(integer: bool, x: Any, raw: list[tuple[Any, ...]], negate: bool = False) -> ValueSet:
    if isinstance(x, str):
        s = Spans.of(LEX, raw)
        return _with(integer, str=StrSet(~s if negate else s))
    s = Spans.of(_line(integer), raw)
    return _with(integer, num=~s if negate else s)


@lru_cache(maxsize=65536)
def value_set(c: Constraint, integer: bool = False) -> ValueSet:
    """``L_A(c)``; ``integer``: the attribute's numbers are integers."""
    op, x = c.op, c.operand
    if op is Op.EXISTS:
        return everything(integer)
    if op is Op.NOT_EXISTS:
        return _with(integer, absent=True)
    if op is Op.INSTANCEOF:
        return _with(integer, str=StrSet(None, dfa_words(sorted(x.members))))
    if op in (Op.EQ, Op.NE):
        return _scalar_part(integer, [skey(x)], op is Op.NE)
    if op in (Op.IN_SET, Op.NOT_IN_SET):
        return _scalar_part(integer, x, op is Op.NOT_IN_SET)
    if op in (Op.LT, Op.LE, Op.GT, Op.GE):
        return _ordered(integer, x, [_cmp_span(op, x)])
    if op in (Op.IN_RANGE, Op.NOT_IN_RANGE):
        span = (x.lo, x.lo_closed, x.hi, x.hi_closed)
        return _ordered(integer, x.lo if x.kind == STR else 0, [span], op is Op.NOT_IN_RANGE)
    if op in (Op.PREFIX, Op.NOT_PREFIX):
        return _ordered(integer, x, [prefix_span(x)], op is Op.NOT_PREFIX)
    if op in (Op.SUFFIX, Op.NOT_SUFFIX, Op.SUBSTRING):
        d = dfa_kmp(x, absorbing=op is Op.SUBSTRING)
        return _with(integer, str=StrSet(None, d.complement() if op is Op.NOT_SUFFIX else d))
    if op is Op.EQ_IGNORE_CASE:
        return _with(integer, str=StrSet(None, dfa_caseless(x)))
    if op is Op.ANY:
        return _any_element(x, integer)
    if op in _REGULAR:
        return _with(integer, str=StrSet(None, _REGULAR[op](x)))
    if op is Op.CIDR:
        # the strings ipaddress reads as an address of the network: regular, but their
        # automaton (every IPv6 spelling) is not built; relations between two networks
        # are decided on the networks (relations), others answer soundly
        raise TooComplex("the strings of a cidr network have no automaton here")
    if op is Op.ANYTHING_BUT:
        return scalars(integer) - union_of([value_set(e, integer) for e in x])
    if op is Op.ALL:
        parts = [value_set(e, integer) for e in x]
        out = parts[0]
        for p in parts[1:]:
            out = out & p
        return out
    none: frozenset[Any] = frozenset()
    cubes = {
        Op.SUBSET: lambda: cube(Elems((False, x)), none, ()),
        Op.SUPERSET: lambda: cube(ALL_ELEMS, x, ()),
        Op.CONTAINS: lambda: cube(ALL_ELEMS, frozenset([x]), ()),
        Op.NOT_CONTAINS: lambda: cube(Elems((True, frozenset([x]))), none, ()),
        Op.DISJOINT: lambda: cube(Elems((True, x)), none, ()),
        Op.OVERLAPS: lambda: cube(ALL_ELEMS, none, [Elems((False, x))]),
    }
    return _with(integer, multi=MultiSet([cubes[op]()]))


def _affix_caseless(x: str, suffix: bool) -> Any:
    t = x.casefold()
    d = dfa_kmp(t, absorbing=False) if suffix else StrSet(Spans.of(LEX, [prefix_span(t)])).dfa
    return dfa_casefold_preimage(d)


_REGULAR: dict[Op, Callable[[Any], Any]] = {
    Op.PREFIX_IGNORE_CASE: lambda x: _affix_caseless(x, False),
    Op.SUFFIX_IGNORE_CASE: lambda x: _affix_caseless(x, True),
    Op.WILDCARD: glob_dfa,
    Op.REGEXP: iregexp_dfa,
}


@lru_cache(maxsize=4)
def scalars(integer: bool = False) -> ValueSet:
    """Every scalar value (numbers, strings, booleans, null): what ``anything-but``
    excludes from."""
    e = everything(integer)
    return _with(integer, num=e.num, str=e.str, bools=e.bools, null=True)


def union_of(sets: list[ValueSet]) -> ValueSet:
    out = sets[0]
    for p in sets[1:]:
        out = out | p
    return out


def elements_of(c: Constraint) -> Elems:
    """L_A(c) ∩ scalars as an element set (numbers over the reals), for a scalar
    constraint c (the operand of ``any``)."""
    vs = value_set(c, False)
    return Elems.of(vs.num, vs.str, vs.bools, vs.null)


def _any_element(c: Constraint, integer: bool) -> ValueSet:
    """``any c``: a scalar in L_A(c), or a list with an element in it; ``any not exists``:
    absent or the empty list (EventBridge sees no value in either)."""
    if c.op is Op.NOT_EXISTS:
        return _with(integer, absent=True, multi=MultiSet([cube(NO_ELEMS, frozenset(), ())]))
    vs = value_set(c, integer)
    return ValueSet(
        False,
        vs.num,
        vs.str,
        vs.bools,
        vs.null,
        MultiSet([cube(ALL_ELEMS, frozenset(), [elements_of(c)])]),
    )


__all__ = [
    "INF",
    "INTEGER",
    "LEX",
    "REAL",
    "TOP",
    "Spans",
    "ValueSet",
    "elements_of",
    "empty",
    "everything",
    "prefix_span",
    "scalars",
    "surely_equal",
    "value_set",
]
