"""Small hypothesis strategies for the syntax / wire tests: random constraints of every
operator (canonical or not), filters over awkward attribute names, and a strict comparison
that tells ``1`` from ``1.0`` from ``true`` and ``0.0`` from ``-0.0``."""

from __future__ import annotations

import math

from hypothesis import strategies as st
from pubsift.models.constraints.constraints import Constraint, Interval, Op
from pubsift.models.constraints.values import skey
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.typesystem import Schema

SCHEMA = Schema.of(
    integer_attrs=["n"],
    types={
        "Event": [],
        "Quote": ["Event"],
        "StockQuote": ["Quote"],
        "BondQuote": ["Quote"],
        "Security": [],
        "ConvertibleBond": ["BondQuote", "Security"],
        "Stock Quote v2": ["Quote"],
    },
)

NAMES = [
    "a",
    "x",
    "n",
    "position.x",
    "detail-type",
    "$or",
    "_a.b-c.0",
    "ünïcode",
    "with space",
    "and",
    "true",
    "not",
    "in",
    "a..b",
    ".a",
    "1a",
    'quo"te',
    "tab\t",
    "x.y.z",
]

strings = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
ints = st.integers() | st.integers(-(2**70), 2**70)
floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [0.1, -0.0, 0.0, 1.0, 1e16, 5e-324, 1.7976931348623157e308]
)
numbers = ints | floats
scalars = strings | numbers | st.booleans() | st.none()
scalar_sets = st.frozensets(scalars.map(skey), max_size=5)


@st.composite
def intervals(draw) -> Interval:
    lc, hc = draw(st.booleans()), draw(st.booleans())
    if draw(st.booleans()):
        lo = draw(numbers | st.just(-math.inf))
        hi = draw(numbers | st.just(math.inf))
    else:
        lo = draw(strings)
        hi = draw(strings | st.none())
    return Interval(lo, hi, lc, hc)


def constraints() -> st.SearchStrategy[Constraint]:
    """Every operator with a well-formed operand (not necessarily canonical); ``any`` over
    every scalar operator."""
    scalar = [
        st.just(Constraint(Op.EXISTS)),
        st.just(Constraint(Op.NOT_EXISTS)),
        st.sampled_from(sorted(SCHEMA.types.types)).map(
            lambda t: Constraint(Op.INSTANCEOF, SCHEMA.types.typeset(t))
        ),
        st.builds(Constraint, st.sampled_from([Op.EQ, Op.NE]), scalars),
        st.builds(Constraint, st.sampled_from([Op.LT, Op.LE, Op.GT, Op.GE]), numbers | strings),
        st.builds(Constraint, st.sampled_from([Op.IN_RANGE, Op.NOT_IN_RANGE]), intervals()),
        st.builds(
            Constraint,
            st.sampled_from([Op.IN_SET, Op.NOT_IN_SET]),
            st.frozensets(scalars.map(skey), min_size=1, max_size=5),
        ),
        st.builds(
            Constraint,
            st.sampled_from(
                [
                    Op.PREFIX,
                    Op.NOT_PREFIX,
                    Op.SUFFIX,
                    Op.NOT_SUFFIX,
                    Op.SUBSTRING,
                    Op.EQ_IGNORE_CASE,
                ]
            ),
            strings,
        ),
    ]
    ops = scalar + [
        st.one_of(scalar).map(lambda c: Constraint(Op.ANY, c)),
        st.builds(
            Constraint,
            st.sampled_from([Op.SUBSET, Op.SUPERSET, Op.DISJOINT, Op.OVERLAPS]),
            scalar_sets,
        ),
        st.builds(Constraint, st.sampled_from([Op.CONTAINS, Op.NOT_CONTAINS]), scalars.map(skey)),
    ]
    return st.one_of(ops)


def filters(cs: st.SearchStrategy[Constraint] | None = None) -> st.SearchStrategy[RecordFilter]:
    return st.dictionaries(st.sampled_from(NAMES), cs or constraints(), max_size=4).map(
        RecordFilter.of
    )


def strict(x):
    """A structure equal for equal values *of the same kind*: 1, 1.0 and True differ,
    0.0 and -0.0 differ; applies to filters, constraints, operands."""
    if isinstance(x, RecordFilter):
        return tuple((n, strict(c)) for n, c in x.constraints)
    if isinstance(x, Constraint):
        return (x.op, strict(x.operand))
    if isinstance(x, Interval):
        return ("I", strict(x.lo), strict(x.hi), x.lo_closed, x.hi_closed)
    if isinstance(x, frozenset):
        return frozenset(strict(v) for v in x)
    if isinstance(x, tuple):
        return tuple(strict(v) for v in x)
    if isinstance(x, float):
        return ("float", math.copysign(1.0, x), x)
    return (type(x).__name__, x)
