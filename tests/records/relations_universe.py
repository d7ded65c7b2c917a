"""Finite universes and random constraints for brute-force checks of the records
constraint algebra (the oracle is :meth:`Constraint.matches` over every value of a finite
universe rich enough to tell the constants apart)."""

from __future__ import annotations

import ipaddress
import itertools
import math

from hypothesis import strategies as st
from pubsift.models.constraints.constraints import (
    ABSENT,
    ELEMENT_OPS,
    EXCLUDABLE_OPS,
    Constraint,
    Interval,
    Op,
    TypeSet,
)
from pubsift.models.constraints.values import skey

ALPHABET = "ab"
NUMS = sorted({x / 2 for x in range(-8, 9)} | {-1e9, 1e9, 0.25})
WORDS = ["".join(p) for n in range(4) for p in itertools.product(ALPHABET, repeat=n)]
CASE_VARIANTS = [
    "A",
    "B",
    "aB",
    "Ab",
    "AB",
    "BA",
    "bA",
    "ß",
    "ss",
    "SS",
    "ẞ",
    "K",
    "k",
    "\u212a",
    "c",
    "\x00",
    "a\x00",
    "b\U0010ffff",
    "\U0010ffff",
]
# strings that cidr, wildcards and regexps tell apart
PATTERN_WORDS = ["10.0.0.1", "10.0.1.7", "10.1.0.0", "::1", "2001:db8::5", "a*b", "aab", "a\nb"]
ELEMENTS = [1, 2, 3, "a", "b", True, None]
LISTS = [tuple(c) for n in range(4) for c in itertools.combinations(ELEMENTS + ["z"], n)]
# lists whose elements tell the constants of "any element" constraints apart
ANY_ELEMENTS = [-1, 0.5, 2.5, 1e9, False, "", "ab", "ba", "A", "aB", "ß", "b\U0010ffff"]
LISTS += [tuple(c) for n in (1, 2) for c in itertools.combinations(ANY_ELEMENTS, n)]
UNIVERSE = (
    [ABSENT, None, True, False]
    + NUMS
    + [int(x) for x in NUMS if x == int(x)]
    + WORDS
    + CASE_VARIANTS
    + PATTERN_WORDS
    + LISTS
)


def universe(integer: bool) -> list:
    """All values; with ``integer`` the numbers are integers only."""
    if not integer:
        return UNIVERSE
    return [v for v in UNIVERSE if not (type(v) is float and not v.is_integer())]


def matching(c: Constraint, integer: bool) -> frozenset:
    """L_A(c) on the universe, as hashable keys."""
    return frozenset(key(v) for v in universe(integer) if c.matches(v))


def key(v) -> tuple:
    if v is ABSENT:
        return ("absent",)
    if isinstance(v, tuple):
        return ("multi", frozenset(skey(x) for x in v))
    return skey(v)


# -- random constants --------------------------------------------------------------------
halves = st.integers(-5, 5).map(lambda i: i / 2 if i % 2 else i // 2)
words = st.text(alphabet=ALPHABET, max_size=2)
case_words = st.text(alphabet="abAB", max_size=2)
bounds = st.one_of(halves, st.sampled_from([-math.inf, math.inf]))
scalars = st.one_of(halves, words, st.booleans(), st.none())
ordered = st.one_of(halves, words)
elements = st.sampled_from(ELEMENTS).map(skey)
element_sets = st.frozensets(elements, max_size=3)


@st.composite
def intervals(draw) -> Interval:
    if draw(st.booleans()):
        lo, hi = sorted([draw(bounds), draw(bounds)])
    else:
        lo, hi = sorted([draw(words), draw(words)])
        if draw(st.booleans()):
            hi = None
    return Interval(lo, hi, draw(st.booleans()), draw(st.booleans()))


def operands(op: Op) -> st.SearchStrategy:
    if op in (Op.EXISTS, Op.NOT_EXISTS):
        return st.none()
    if op is Op.INSTANCEOF:
        return st.frozensets(words, min_size=1, max_size=3).map(lambda m: TypeSet("T", m))
    if op in (Op.EQ, Op.NE):
        return scalars
    if op in (Op.LT, Op.LE, Op.GT, Op.GE):
        return ordered
    if op in (Op.IN_RANGE, Op.NOT_IN_RANGE):
        return intervals()
    if op in (Op.IN_SET, Op.NOT_IN_SET):
        return st.frozensets(scalars.map(skey), min_size=1, max_size=3)
    if op is Op.EQ_IGNORE_CASE:
        return st.one_of(case_words, st.sampled_from(["ß", "SS", "k", "\u212a"]))
    if op in (Op.PREFIX, Op.NOT_PREFIX, Op.SUFFIX, Op.NOT_SUFFIX, Op.SUBSTRING):
        return words
    if op in (Op.CONTAINS, Op.NOT_CONTAINS):
        return elements
    if op in (Op.PREFIX_IGNORE_CASE, Op.SUFFIX_IGNORE_CASE):
        return st.one_of(case_words, st.sampled_from(["ß", "SS", "k", "\u212a"]))
    if op is Op.WILDCARD:  # at most 3 literal characters: the universe's words tell them apart
        return st.lists(st.sampled_from(["", "a", "b"]), min_size=2, max_size=3).map(tuple)
    if op is Op.REGEXP:
        return st.sampled_from(REGEXPS)
    if op is Op.CIDR:
        return st.sampled_from(NETWORKS).map(ipaddress.ip_network)
    if op is Op.ANYTHING_BUT:
        members = st.sampled_from(sorted(EXCLUDABLE_OPS, key=lambda o: o.value)).flatmap(
            constraints_of
        )
        return st.frozensets(members, min_size=1, max_size=2)
    if op is Op.ALL:
        return st.frozensets(exact_constraint, min_size=2, max_size=2)
    if op is Op.ANY:  # "any element" of a scalar constraint
        return st.sampled_from(EXACT_ELEMENT_OPS).flatmap(constraints_of)
    return element_sets


def constraints_of(op: Op) -> st.SearchStrategy:
    return operands(op).map(lambda x: Constraint(op, x))


#: I-Regexps (RFC 9485) over the universe's letters
REGEXPS = [
    "a*",
    "(a|b)b?",
    "[ab]a",
    "a.b",
    "[^a]*",
    "ab|ba",
    "(ab)*",
    "a{1,2}b?",
    "",
    "a\\*b",
    "[A-Z]+",
]
NETWORKS = ["10.0.0.0/24", "10.0.0.0/8", "10.0.0.1/32", "::/0", "2001:db8::/32", "0.0.0.0/0"]

#: operators whose relations are exact (``cidr``'s are sound only: its strings have no
#: automaton; tests/records/test_eventbridge_operators.py checks them)
EXACT_OPS = [op for op in Op if op is not Op.CIDR]
EXACT_ELEMENT_OPS = sorted((o for o in ELEMENT_OPS if o is not Op.CIDR), key=lambda o: o.value)
_SIMPLE = [Op.EQ, Op.IN_SET, Op.PREFIX, Op.GT, Op.ANY, Op.EXISTS, Op.NOT_EXISTS, Op.SUPERSET]
exact_constraint = st.sampled_from(_SIMPLE).flatmap(constraints_of)
any_constraint = st.sampled_from(EXACT_OPS).flatmap(constraints_of)
