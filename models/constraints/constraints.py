"""Attribute constraints of the records model (Mühl 2002, §4.3.2-4.3.3) and their matching.

An attribute filter is (name, Op, constants); here a :class:`Constraint` is (Op, operand) and
the name lives in the conjunctive filter. ``L_A(c)`` — the set of values for which
``c.matches(v)`` is true — is what every relation (identity, covering, overlap, merging in
:mod:`pubsift.models.constraints.relations`) is derived from.

Kinds and types: every operator except ``exists``/``not-exists`` expects a kind of value
(numbers, strings, booleans, null, multi values = lists). A value of another kind never
matches and never raises. The absent attribute is the special value ``ABSENT``; only
``not-exists`` matches it (EventBridge ``{"exists": false}``); all other constraints are
false on it (Mühl: a missing attribute makes its attribute filter false).

Operand conventions (canonical forms are produced by the parsers and by ``relations``):

=================  ===========================================================  =========
op                 operand                                                      value kind
=================  ===========================================================  =========
EXISTS             None                                                         any
NOT_EXISTS         None                                                         ABSENT
INSTANCEOF         TypeSet(name, frozenset of the type and all its subtypes)    str
EQ, NE             scalar (num/str/bool/null)                                   its kind
LT, LE, GT, GE     number or string (strings: lexical order by code point)      its kind
IN_RANGE,          Interval(lo, hi, lo_closed, hi_closed); lo/hi numbers (may   num / str
NOT_IN_RANGE       be ±inf) or strings (lo may be "" closed; hi may be None =
                   unbounded above)
IN_SET,            frozenset of skey(...) pairs (see values.skey), non-empty    kinds in set
NOT_IN_SET
PREFIX, NOT_PREFIX str                                                          str
SUFFIX, NOT_SUFFIX str                                                          str
SUBSTRING          str                                                          str
EQ_IGNORE_CASE     str (matching compares str.casefold())                      str
SUBSET, SUPERSET,  frozenset of skey pairs                                      multi
DISJOINT, OVERLAPS
CONTAINS,          skey pair                                                    multi
NOT_CONTAINS
ANY                a scalar Constraint c (any op above but the multi-value     scalar /
                   ones; see ELEMENT_OPS)                                       multi
PREFIX_IGNORE_     str (matching compares ``v.casefold()`` with the operand's   str
CASE, SUFFIX_      casefold: EventBridge ``{"prefix": {"equals-ignore-case":
IGNORE_CASE        s}}``)
WILDCARD           tuple of at least two literal strings: the parts between     str
                   the ``*`` of an EventBridge wildcard (or a quamina
                   shell-style pattern); ``("a", "")`` is ``a*``
REGEXP             str: an I-Regexp (RFC 9485), matching the whole value        str
CIDR               an ``ipaddress`` network (IPv4 or IPv6): strings that        str
                   ``ipaddress.ip_address`` reads as an address in it
ANYTHING_BUT       frozenset of positive scalar constraints (=, in, prefix,     every
                   suffix, equals-ignore-case, wildcard and their ignore-case   scalar
                   forms): a scalar value of *any* kind that none accepts
                   (EventBridge ``anything-but``: a number, ``true`` or
                   ``null`` is "anything but" the string "x")
ALL                frozenset of at least two constraints: all hold (several     theirs
                   patterns on one field that no single constraint expresses,
                   e.g. ``any = 1`` and ``any prefix "x"``)
=================  ===========================================================  =========

ANY is EventBridge's reading of a scalar pattern (Amazon EventBridge user guide, "Arrays in
Amazon EventBridge event patterns"; event-ruler README, "JSON Array Matching"): the value's
*leaves* are the value itself when it is a scalar and the elements when it is a list, and
``any c`` holds iff some leaf satisfies c. ``any exists`` holds for scalars and non-empty
lists; ``any not exists`` for the absent attribute and the empty list (no leaf: EventBridge's
``{"exists": false}``).

NE / NOT_IN_SET / NOT_IN_RANGE / NOT_PREFIX / NOT_SUFFIX match values of the operand's kind
(strings for string operands, numbers for numeric ones; NOT_IN_SET: any kind present in the
set) that do not satisfy the positive form. Multi values: a list is matched as the set of
its elements; the empty list is a multi value too.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Any

from pubsift.models.constraints.regular import glob_matcher, iregexp_matcher
from pubsift.models.constraints.values import BOOL, MULTI, NULL, NUM, STR, Scalar, kind, skey


class _Absent:
    """The value of an attribute a notification does not carry."""

    _inst: _Absent | None = None

    def __new__(cls) -> _Absent:  # singleton
        if cls._inst is None:
            cls._inst = super().__new__(cls)
        return cls._inst

    def __repr__(self) -> str:
        return "ABSENT"

    def __reduce__(self) -> tuple[type[_Absent], tuple[()]]:
        return (_Absent, ())


ABSENT: Any = _Absent()


class Op(str, Enum):  # noqa: UP042  StrEnum would change str(op) and format(op)
    EXISTS = "exists"
    NOT_EXISTS = "not-exists"
    INSTANCEOF = "instanceof"
    EQ = "="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    IN_RANGE = "in-range"
    NOT_IN_RANGE = "not-in-range"
    IN_SET = "in"
    NOT_IN_SET = "not-in"
    PREFIX = "prefix"
    NOT_PREFIX = "not-prefix"
    SUFFIX = "suffix"
    NOT_SUFFIX = "not-suffix"
    SUBSTRING = "substring"
    EQ_IGNORE_CASE = "equals-ignore-case"
    SUBSET = "subset"
    SUPERSET = "superset"
    CONTAINS = "contains"
    NOT_CONTAINS = "not-contains"
    DISJOINT = "disjoint"
    OVERLAPS = "overlaps"
    ANY = "any"
    PREFIX_IGNORE_CASE = "prefix-ignore-case"
    SUFFIX_IGNORE_CASE = "suffix-ignore-case"
    WILDCARD = "wildcard"
    REGEXP = "regexp"
    CIDR = "cidr"
    ANYTHING_BUT = "anything-but"
    ALL = "all"


@dataclass(frozen=True, slots=True)
class Interval:
    """A range over numbers or strings; ``hi=None`` means unbounded above (strings)."""

    lo: Any
    hi: Any
    lo_closed: bool = True
    hi_closed: bool = True

    def contains(self, v: Any) -> bool:
        lo, hi = self.lo, self.hi
        if self.lo_closed:
            if v < lo:
                return False
        elif v <= lo:
            return False
        if hi is None:
            return True
        inside: bool = v <= hi if self.hi_closed else v < hi
        return inside

    @property
    def kind(self) -> str:
        return STR if isinstance(self.lo, str) else NUM


@dataclass(frozen=True, slots=True)
class TypeSet:
    """The operand of ``instanceof``: a declared type and the closure of its subtypes
    (Mühl Table 4.1). Matching tests membership of the attribute's type name."""

    name: str
    members: frozenset[str]


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


@dataclass(frozen=True, slots=True, eq=False)
class Constraint:
    """One attribute constraint: ``op`` applied with ``operand`` (see module docstring)."""

    op: Op
    operand: Any = None

    # Equality keeps booleans apart from numbers (Python has True == 1): ``x = true`` and
    # ``x = 1`` are different filters. Other operands are already kind-tagged or typed.
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Constraint):
            return NotImplemented
        return self.op is other.op and _okey(self.operand) == _okey(other.operand)

    def __hash__(self) -> int:
        return hash((self.op, _okey(self.operand)))

    def matches(self, v: Any) -> bool:
        """v ∈ L_A(self). ``ABSENT`` for a missing attribute. Never raises."""
        op = self.op
        if op is _ANY:
            return _any(self.operand, v)
        if op is _ALL:
            return all(c.matches(v) for c in self.operand)
        if v is ABSENT:
            return op is _NOT_EXISTS
        if op is _EXISTS:
            return True
        if op is _NOT_EXISTS:
            return False
        return _MATCH[op](self.operand, v)

    @property
    def value_kind(self) -> str | None:
        """The kind of value this constraint can match (None: any kind / several)."""
        op, x = self.op, self.operand
        if op in (Op.EXISTS, Op.NOT_EXISTS, Op.ANY, Op.ANYTHING_BUT, Op.ALL):
            return None
        if op in _MULTI_OPS:
            return MULTI
        if op in (Op.IN_SET, Op.NOT_IN_SET):
            kinds: set[str] = {k for k, _ in x}
            return kinds.pop() if len(kinds) == 1 else None
        if op in (Op.IN_RANGE, Op.NOT_IN_RANGE):
            interval: Interval = x
            return interval.kind
        if op in (
            Op.INSTANCEOF,
            Op.PREFIX,
            Op.NOT_PREFIX,
            Op.SUFFIX,
            Op.NOT_SUFFIX,
            Op.SUBSTRING,
            Op.EQ_IGNORE_CASE,
            Op.PREFIX_IGNORE_CASE,
            Op.SUFFIX_IGNORE_CASE,
            Op.WILDCARD,
            Op.REGEXP,
            Op.CIDR,
        ):
            return STR
        return kind(x)


# Module-level aliases: reading an Enum member off its class costs ~0.35 µs on Python 3.11.
_EXISTS, _NOT_EXISTS, _ANY, _ALL = Op.EXISTS, Op.NOT_EXISTS, Op.ANY, Op.ALL


def _any(c: Constraint, v: Any) -> bool:
    """Some leaf of v (v itself, or an element of a list) satisfies c; ``not-exists``: v
    has no leaf (absent or the empty list)."""
    if c.op is _NOT_EXISTS:
        return v is ABSENT or v == ()
    if v.__class__ is tuple:
        m = c.matches
        for e in v:
            if m(e):
                return True
        return False
    return v is not ABSENT and c.matches(v)


#: the operators allowed inside ``any`` (scalar constraints, exists, not exists)
ELEMENT_OPS = frozenset(
    {
        Op.EXISTS,
        Op.NOT_EXISTS,
        Op.INSTANCEOF,
        Op.EQ,
        Op.NE,
        Op.LT,
        Op.LE,
        Op.GT,
        Op.GE,
        Op.IN_RANGE,
        Op.NOT_IN_RANGE,
        Op.IN_SET,
        Op.NOT_IN_SET,
        Op.PREFIX,
        Op.NOT_PREFIX,
        Op.SUFFIX,
        Op.NOT_SUFFIX,
        Op.SUBSTRING,
        Op.EQ_IGNORE_CASE,
        Op.PREFIX_IGNORE_CASE,
        Op.SUFFIX_IGNORE_CASE,
        Op.WILDCARD,
        Op.REGEXP,
        Op.CIDR,
        Op.ANYTHING_BUT,
    }
)

#: the operators an ``anything-but`` excludes with (the positive scalar tests)
EXCLUDABLE_OPS = frozenset(
    {
        Op.EQ,
        Op.IN_SET,
        Op.PREFIX,
        Op.SUFFIX,
        Op.EQ_IGNORE_CASE,
        Op.PREFIX_IGNORE_CASE,
        Op.SUFFIX_IGNORE_CASE,
        Op.WILDCARD,
    }
)


def _okey(x: Any) -> Any:
    return (BOOL, x) if isinstance(x, bool) else x


_MULTI_OPS = frozenset(
    {Op.SUBSET, Op.SUPERSET, Op.CONTAINS, Op.NOT_CONTAINS, Op.DISJOINT, Op.OVERLAPS}
)


def _same_kind(c: Scalar, v: Any) -> bool:
    if isinstance(c, bool) or c is None:
        return type(v) is type(c) or (c is None and v is None)
    if isinstance(c, str):
        return isinstance(v, str)
    return _num(v)


#: a value test: (operand, value) -> accepted?
_Test = Callable[[Any, Any], bool]


def _eq(c: Any, v: Any) -> bool:
    return _same_kind(c, v) and v == c


def _ne(c: Any, v: Any) -> bool:
    return _same_kind(c, v) and v != c


def _cmp(test: _Test) -> _Test:
    def f(c: Any, v: Any) -> bool:
        if isinstance(c, str):
            return isinstance(v, str) and test(v, c)
        return _num(v) and test(v, c)

    return f


def _in_range(i: Interval, v: Any) -> bool:
    if i.kind == STR:
        return isinstance(v, str) and i.contains(v)
    return _num(v) and i.contains(v)


def _not_in_range(i: Interval, v: Any) -> bool:
    if i.kind == STR:
        return isinstance(v, str) and not i.contains(v)
    return _num(v) and not i.contains(v)


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float))


def _in_set(s: frozenset[tuple[str, Any]], v: Any) -> bool:
    return _scalar(v) and skey(v) in s


def _not_in_set(s: frozenset[tuple[str, Any]], v: Any) -> bool:
    if not _scalar(v):
        return False
    k = skey(v)
    return k not in s and any(k[0] == sk for sk, _ in s)


def _elems(v: Any) -> frozenset[tuple[str, Any]] | None:
    return frozenset(skey(x) for x in v) if isinstance(v, tuple) else None


def _multi(test: _Test) -> _Test:
    def f(c: Any, v: Any) -> bool:
        x = _elems(v)
        return x is not None and test(x, c)

    return f


def _ip(c: Any, v: Any) -> bool:
    if not isinstance(v, str):
        return False
    try:
        return ipaddress.ip_address(v) in c
    except ValueError:
        return False


def _anything_but(cs: frozenset[Constraint], v: Any) -> bool:
    if not _scalar(v):
        return False
    for c in cs:
        if c.matches(v):
            return False
    return True


def _wildcard(parts: tuple[str, ...], v: Any) -> bool:
    return isinstance(v, str) and glob_test(parts)(v)


def _regexp(src: str, v: Any) -> bool:
    return isinstance(v, str) and iregexp_matcher(src)(v)


@lru_cache(maxsize=4096)
def glob_test(parts: tuple[str, ...]) -> Callable[[str], bool]:
    """The compiled test of a wildcard's parts (see :func:`.regular.glob_matcher`)."""
    return glob_matcher(parts)


_MATCH: dict[Op, _Test] = {
    Op.INSTANCEOF: lambda t, v: isinstance(v, str) and v in t.members,
    Op.EQ: _eq,
    Op.NE: _ne,
    Op.LT: _cmp(lambda v, c: v < c),
    Op.LE: _cmp(lambda v, c: v <= c),
    Op.GT: _cmp(lambda v, c: v > c),
    Op.GE: _cmp(lambda v, c: v >= c),
    Op.IN_RANGE: _in_range,
    Op.NOT_IN_RANGE: _not_in_range,
    Op.IN_SET: _in_set,
    Op.NOT_IN_SET: _not_in_set,
    Op.PREFIX: lambda c, v: isinstance(v, str) and v.startswith(c),
    Op.NOT_PREFIX: lambda c, v: isinstance(v, str) and not v.startswith(c),
    Op.SUFFIX: lambda c, v: isinstance(v, str) and v.endswith(c),
    Op.NOT_SUFFIX: lambda c, v: isinstance(v, str) and not v.endswith(c),
    Op.SUBSTRING: lambda c, v: isinstance(v, str) and c in v,
    Op.EQ_IGNORE_CASE: lambda c, v: isinstance(v, str) and v.casefold() == c.casefold(),
    Op.SUBSET: _multi(lambda x, m: x <= m),
    Op.SUPERSET: _multi(lambda x, m: x >= m),
    Op.CONTAINS: _multi(lambda x, a: a in x),
    Op.NOT_CONTAINS: _multi(lambda x, a: a not in x),
    Op.DISJOINT: _multi(lambda x, m: not (x & m)),
    Op.OVERLAPS: _multi(lambda x, m: bool(x & m)),
    Op.PREFIX_IGNORE_CASE: lambda c, v: (
        isinstance(v, str) and v.casefold().startswith(c.casefold())
    ),
    Op.SUFFIX_IGNORE_CASE: lambda c, v: isinstance(v, str) and v.casefold().endswith(c.casefold()),
    Op.WILDCARD: _wildcard,
    Op.REGEXP: _regexp,
    Op.CIDR: _ip,
    Op.ANYTHING_BUT: _anything_but,
}

__all__ = [
    "ABSENT",
    "BOOL",
    "ELEMENT_OPS",
    "EXCLUDABLE_OPS",
    "MULTI",
    "NULL",
    "NUM",
    "STR",
    "Constraint",
    "Interval",
    "Op",
    "TypeSet",
]
