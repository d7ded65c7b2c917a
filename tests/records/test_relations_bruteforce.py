"""Brute force: every ordered pair of operators, random constants, against
``Constraint.matches`` over a finite universe (forward direction) and against witnesses
checked with ``matches`` (converse: the relations claim exactness everywhere)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pubsift.models.constraints import relations as rel
from pubsift.models.constraints.constraints import ABSENT, Constraint, Interval, Op
from pubsift.models.constraints.valuesets import value_set
from relations_universe import EXACT_OPS, any_constraint, constraints_of, key, matching, universe

OPS = EXACT_OPS
FAST = settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def _is_int_ok(v, integer: bool) -> bool:
    return not (integer and type(v) is float and not v.is_integer())


def check_pair(a: Constraint, b: Constraint, integer: bool) -> None:
    la, lb = matching(a, integer), matching(b, integer)
    vsa, vsb = value_set(a, integer), value_set(b, integer)
    # value sets agree with matches on the universe
    for v in universe(integer):
        assert vsa.contains(v) == a.matches(v), (a, v)
    cov = rel.covers(a, b, integer)
    if cov:
        assert lb <= la, (a, b, lb - la)
    else:
        w = rel.counterexample(a, b, integer)
        assert w is not NotImplemented and b.matches(w) and not a.matches(w), (a, b, w)
        assert _is_int_ok(w, integer)
    ident = rel.identical(a, b, integer)
    assert ident == (cov and rel.covers(b, a, integer))
    ka, kb = rel.span_key(a, integer), rel.span_key(b, integer)
    if ka is not None and kb is not None:  # the index's identity lookup
        assert (ka == kb) == ident, (a, b, ka, kb)
    if ident:
        assert la == lb
    ov = rel.overlaps(a, b, integer)
    assert ov == rel.overlaps(b, a, integer)
    if ov:
        w = rel.witness_of(vsa & vsb)
        assert a.matches(w) and b.matches(w), (a, b, w)
    else:
        assert not (la & lb), (a, b)
    # conjoin: exact intersection or a clear refusal
    try:
        c = rel.conjoin(a, b, integer)
    except rel.Unsatisfiable:
        assert not ov
    except rel.NotRepresentable:
        assert ov
    else:
        assert ov and matching(c, integer) == la & lb, (a, b, c)
        assert value_set(c, integer) == vsa & vsb
    # merge: exact union or None; hull: covers both
    m = rel.merge([a, b], integer)
    if m is not None:
        assert matching(m, integer) == la | lb, (a, b, m)
        assert value_set(m, integer) == vsa | vsb
    try:
        h = rel.hull([a, b], integer)
    except rel.NotRepresentable:
        # one admits a missing attribute and the union a value too (perhaps none of the
        # finite universe: (0.5, 1) beside not-exists, say): judged on the value sets
        union = vsa | vsb
        absent = value_set(Constraint(Op.NOT_EXISTS, None), integer)
        assert union.contains(ABSENT) and not (union - absent).is_empty(), (a, b)
    else:
        assert matching(h, integer) >= la | lb, (a, b, h)
        assert rel.covers(h, a, integer) and rel.covers(h, b, integer)


def check_normalize(a: Constraint, integer: bool) -> None:
    la = matching(a, integer)
    try:
        n = rel.normalize(a, integer)
    except rel.Unsatisfiable:
        assert not la and value_set(a, integer).is_empty()
        return
    assert matching(n, integer) == la, (a, n)
    assert rel.identical(a, n, integer)
    assert rel.normalize(n, integer) == n, (a, n)
    w = rel.witness(a, integer=integer)
    assert a.matches(w) and _is_int_ok(w, integer)
    w2 = rel.witness(a, avoid=[w], integer=integer)
    assert a.matches(w2)
    if len(la) > 1:
        assert key(w2) != key(w), (a, w)


@pytest.mark.parametrize("op_a", OPS, ids=lambda o: o.name)
@FAST
@given(data=st.data(), integer=st.booleans())
def test_every_operator_pair(op_a, data, integer):
    """Every ordered pair, in one test per first operator (33 x 33 parametrized tests
    overflowed hypothesis' settings chain in one worker: RecursionError)."""
    a = data.draw(constraints_of(op_a))
    for op_b in OPS:
        check_pair(a, data.draw(constraints_of(op_b), label=op_b.name), integer)


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), integer=st.booleans())
def test_normalize_witness(op, data, integer):
    check_normalize(data.draw(constraints_of(op)), integer)


@pytest.mark.slow
@pytest.mark.parametrize("op_a", OPS, ids=lambda o: o.name)
@SLOW
@given(a=st.data(), b=any_constraint, integer=st.booleans())
def test_every_operator_pair_exhaustive(op_a, a, b, integer):
    check_pair(a.draw(constraints_of(op_a)), b, integer)
    check_normalize(b, integer)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(cs=st.lists(any_constraint, min_size=1, max_size=4), integer=st.booleans())
def test_merge_and_hull_of_several(cs, integer):
    union = frozenset().union(*(matching(c, integer) for c in cs))
    m = rel.merge(cs, integer)
    if m is not None:
        assert matching(m, integer) == union
    try:
        h = rel.hull(cs, integer)
    except rel.NotRepresentable:
        assert ("absent",) in union and len(union) > 1
    else:
        assert matching(h, integer) >= union
        assert all(rel.covers(h, c, integer) for c in cs)


def test_casefold_is_per_character():
    """The equals-ignore-case automaton relies on str.casefold folding per character."""
    import random

    rnd = random.Random(7)
    pool = [chr(c) for c in range(0x20, 0x2000)] + ["ß", "ﬆ", "\u212a", "ẞ", "İ", "ǰ"]
    for _ in range(2000):
        s = "".join(rnd.choice(pool) for _ in range(rnd.randint(0, 6)))
        assert s.casefold() == "".join(ch.casefold() for ch in s)


def test_not_exists_is_only_absent():
    ne = Constraint(Op.NOT_EXISTS)
    assert rel.witness(ne) is ABSENT
    assert not rel.overlaps(ne, Constraint(Op.EXISTS))
    assert rel.merge([ne, Constraint(Op.EXISTS)]) is None


# operators whose value sets are read back completely (lexical, numeric, sets, multi cubes)
CANONICAL = [
    op
    for op in OPS
    if op
    not in (
        Op.SUFFIX,
        Op.NOT_SUFFIX,
        Op.SUBSTRING,
        Op.EQ_IGNORE_CASE,
        Op.INSTANCEOF,
        Op.PREFIX_IGNORE_CASE,
        Op.SUFFIX_IGNORE_CASE,
        Op.WILDCARD,
        Op.REGEXP,
        Op.ANYTHING_BUT,
        Op.ALL,
    )
]
small_canonical = st.sampled_from(CANONICAL).flatmap(constraints_of)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(a=small_canonical, b=small_canonical, integer=st.booleans())
def test_identical_constraints_normalize_to_equal_objects(a, b, integer):
    if not rel.identical(a, b, integer):
        return
    try:
        na = rel.normalize(a, integer)
    except rel.Unsatisfiable:
        with pytest.raises(rel.Unsatisfiable):
            rel.normalize(b, integer)
        return
    assert na == rel.normalize(b, integer), (a, b)


@pytest.mark.parametrize(
    "a,b",
    [
        (Constraint(Op.IN_SET, frozenset({("num", 3)})), Constraint(Op.EQ, 3.0)),
        (Constraint(Op.OVERLAPS, frozenset({("num", 1)})), Constraint(Op.CONTAINS, ("num", 1))),
        (
            Constraint(Op.DISJOINT, frozenset({("str", "a")})),
            Constraint(Op.NOT_CONTAINS, ("str", "a")),
        ),
        (Constraint(Op.LT, "b"), Constraint(Op.NOT_IN_RANGE, Interval("b", None, True, True))),
        (Constraint(Op.GT, 3), Constraint(Op.GE, 4)),
    ],
)
def test_identical_forms_normalize_alike(a, b):
    integer = a.op is Op.GT
    assert rel.identical(a, b, integer)
    assert rel.normalize(a, integer) == rel.normalize(b, integer)
