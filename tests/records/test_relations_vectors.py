"""Seed test vectors for attribute filters: Mühl 000 §4.3 (examples, Tables 4.1-4.8),
the slides 002 (list 2-5, 9-11) and Tarkoma's Example 2.1. One test per vector."""

from __future__ import annotations

import itertools
import math

import pytest
from pubsift.models.constraints import relations as rel
from pubsift.models.constraints.constraints import Constraint as C
from pubsift.models.constraints.constraints import Interval, Op, TypeSet
from pubsift.models.constraints.values import skey

INF = math.inf


def rng(lo, hi, lc=True, hc=True) -> C:
    return C(Op.IN_RANGE, Interval(lo, hi, lc, hc))


def not_rng(lo, hi, lc=True, hc=True) -> C:
    return C(Op.NOT_IN_RANGE, Interval(lo, hi, lc, hc))


def S(*vals) -> frozenset:
    return frozenset(skey(v) for v in vals)


ALL_NUMBERS = rng(-INF, INF, False, False)


# -- slides 002, list of test vectors -----------------------------------------------------
def test_slides_vector_2_integer_set_identical_to_interval():
    in_set, in_range = C(Op.IN_SET, S(20, 21, 22, 23, 24, 25)), rng(20, 25)
    assert rel.identical(in_set, in_range, integer=True)
    assert not rel.identical(in_set, in_range)  # over the reals 20.5 tells them apart
    assert rel.normalize(in_set, integer=True) == rel.normalize(in_range, integer=True)


def test_slides_vector_3_price_gt_25_overlaps_20_30():
    assert rel.overlaps(C(Op.GT, 25), rng(20, 30))


def test_slides_vector_4_price_gt_10_covers_20_30():
    assert rel.covers(C(Op.GT, 10), rng(20, 30))
    assert not rel.covers(rng(20, 30), C(Op.GT, 10))


def test_slides_vector_5_price_lt_10_and_gt_20_disjoint():
    assert not rel.overlaps(C(Op.LT, 10), C(Op.GT, 20))


def test_slides_vector_9_ne_15_covers_lt_10_and_gt_10_covers_gt_20():
    assert rel.covers(C(Op.NE, 15), C(Op.LT, 10))
    assert rel.covers(C(Op.GT, 10), C(Op.GT, 20))
    assert not rel.covers(C(Op.GT, 20), C(Op.GT, 10))


def test_slides_vector_10_interval_3_10_covers_4_6():
    assert rel.covers(rng(3, 10), rng(4, 6))


def test_slides_vector_11_prefix_abc_covers_prefix_abcd():
    assert rel.covers(C(Op.PREFIX, "abc"), C(Op.PREFIX, "abcd"))
    assert not rel.covers(C(Op.PREFIX, "abcd"), C(Op.PREFIX, "abc"))


# -- Tarkoma 004, Example 2.1 --------------------------------------------------------------
def test_tarkoma_example_2_1():
    lt10 = C(Op.LT, 10)
    assert rel.covers(lt10, rng(5, 9))
    assert not rel.covers(lt10, rng(8, 15))
    assert rel.overlaps(lt10, rng(8, 15))
    assert rel.counterexample(lt10, rng(8, 15)) >= 10


# -- Mühl 000 §4.3.2 ----------------------------------------------------------------------
def test_muehl_4_3_2_price_examples():
    assert rel.covers(C(Op.GT, 10), rng(20, 30))
    assert rel.overlaps(C(Op.GT, 10), C(Op.LT, 20))
    assert not rel.overlaps(C(Op.LT, 10), C(Op.GT, 20))


def test_muehl_4_3_2_conjunction_of_intervals():
    assert rel.conjoin(rng(3, 7), rng(5, 8)) == rng(5, 7)


def test_muehl_4_3_2_conjunction_of_comparisons():
    assert rel.conjoin(C(Op.GE, 3), C(Op.LE, 5)) == rng(3, 5)


def test_muehl_4_3_2_contradicting_conjunction():
    with pytest.raises(rel.Unsatisfiable, match="no value satisfies both"):
        rel.conjoin(C(Op.LT, 3), C(Op.GT, 5))


def test_muehl_4_3_4_disjunction_gt_lt_is_ne():
    """§4.3.4: {x > 5 ∨ x < 5} ≡ {x ≠ 5} (the text writes ∧, a typo: that is empty)."""
    assert rel.merge([C(Op.GT, 5), C(Op.LT, 5)]) == C(Op.NE, 5)
    with pytest.raises(rel.Unsatisfiable):
        rel.conjoin(C(Op.GT, 5), C(Op.LT, 5))


def test_muehl_4_3_5_interval_covers_conjunction_but_neither_part():
    both = rel.conjoin(rng(4, 7), rng(6, 9))
    assert both == rng(6, 7)
    assert rel.covers(rng(5, 8), both)
    assert not rel.covers(rng(5, 8), rng(4, 7)) and not rel.covers(rng(5, 8), rng(6, 9))


def test_muehl_4_3_6_set_conjunctions_disjoint():
    f1 = rel.conjoin(C(Op.IN_SET, S(3, 5)), C(Op.IN_SET, S(4, 5)))
    f2 = rel.conjoin(C(Op.IN_SET, S(3, 5)), C(Op.IN_SET, S(3, 4)))
    assert (f1, f2) == (C(Op.EQ, 5), C(Op.EQ, 3))
    assert not rel.overlaps(f1, f2)


# -- Tables 4.1-4.7 (covering), every row over a grid of constants ---------------------------
def test_muehl_table_4_1_instanceof():
    quote = TypeSet("Quote", frozenset({"Quote", "StockQuote", "BondQuote"}))
    stock = TypeSet("StockQuote", frozenset({"StockQuote"}))
    assert rel.covers(C(Op.INSTANCEOF, quote), C(Op.INSTANCEOF, stock))
    assert rel.covers(C(Op.INSTANCEOF, stock), C(Op.INSTANCEOF, stock))
    assert not rel.covers(C(Op.INSTANCEOF, stock), C(Op.INSTANCEOF, quote))


GRID = [-1, 0, 0.5, 1, 2]


def test_muehl_table_4_2_equality_inequality():
    for c1, c2 in itertools.product(GRID, GRID):
        assert rel.covers(C(Op.EQ, c1), C(Op.EQ, c2)) == (c1 == c2)
        assert rel.covers(C(Op.NE, c1), C(Op.EQ, c2)) == (c1 != c2)
        assert rel.covers(C(Op.NE, c1), C(Op.NE, c2)) == (c1 == c2)


def test_muehl_table_4_3_comparisons():
    rows = [
        (Op.NE, Op.LT, lambda c1, c2: c1 >= c2),
        (Op.NE, Op.LE, lambda c1, c2: c1 > c2),
        (Op.NE, Op.EQ, lambda c1, c2: c1 != c2),
        (Op.NE, Op.GE, lambda c1, c2: c1 < c2),
        (Op.NE, Op.GT, lambda c1, c2: c1 <= c2),
        (Op.GT, Op.EQ, lambda c1, c2: c1 < c2),
        (Op.GT, Op.GT, lambda c1, c2: c1 <= c2),
        (Op.GT, Op.GE, lambda c1, c2: c1 < c2),
    ]
    for op1, op2, cond in rows:
        for c1, c2 in itertools.product(GRID, GRID):
            assert rel.covers(C(op1, c1), C(op2, c2)) == cond(c1, c2), (op1, c1, op2, c2)


def test_muehl_table_4_4_intervals():
    ivs = [Interval(a, b) for a, b in itertools.product(GRID, GRID) if a <= b]
    for i1, i2 in itertools.product(ivs, ivs):
        inside = i1.lo <= i2.lo and i2.hi <= i1.hi
        assert rel.covers(C(Op.IN_RANGE, i1), C(Op.IN_RANGE, i2)) == inside
        assert rel.covers(C(Op.NOT_IN_RANGE, i2), C(Op.NOT_IN_RANGE, i1)) == inside


def test_muehl_table_4_5_strings():
    words = ["", "a", "b", "ab", "ba", "abc", "cab"]
    for s1, s2 in itertools.product(words, words):
        assert rel.covers(C(Op.PREFIX, s1), C(Op.PREFIX, s2)) == s2.startswith(s1)
        assert rel.covers(C(Op.SUFFIX, s1), C(Op.SUFFIX, s2)) == s2.endswith(s1)
        assert rel.covers(C(Op.SUBSTRING, s1), C(Op.SUBSTRING, s2)) == (s1 in s2)


def test_muehl_table_4_6_sets_of_one_kind():
    sets = [S(*c) for n in (1, 2, 3) for c in itertools.combinations([1, 2, 3], n)]
    for m1, m2 in itertools.product(sets, sets):
        assert rel.covers(C(Op.IN_SET, m1), C(Op.IN_SET, m2)) == (m1 >= m2)
        assert rel.covers(C(Op.NOT_IN_SET, m1), C(Op.NOT_IN_SET, m2)) == (m1 <= m2)


def test_muehl_table_4_6_kinds_refine_not_in_set():
    """x ∉ {1} admits only numbers, so it does not cover x ∉ {1, "a"} (strings ≠ "a")."""
    assert not rel.covers(C(Op.NOT_IN_SET, S(1)), C(Op.NOT_IN_SET, S(1, "a")))
    assert rel.counterexample(C(Op.NOT_IN_SET, S(1)), C(Op.NOT_IN_SET, S(1, "a"))) != "a"


def test_muehl_table_4_7_multi_values():
    sets = [S(*c) for n in (0, 1, 2, 3) for c in itertools.combinations([1, 2, 3], n)]
    for m1, m2 in itertools.product(sets, sets):
        assert rel.covers(C(Op.SUBSET, m1), C(Op.SUBSET, m2)) == (m1 >= m2)
        assert rel.covers(C(Op.SUPERSET, m1), C(Op.SUPERSET, m2)) == (m1 <= m2)
        assert rel.covers(C(Op.DISJOINT, m1), C(Op.DISJOINT, m2)) == (m1 <= m2)
        if m2:
            assert rel.covers(C(Op.OVERLAPS, m1), C(Op.OVERLAPS, m2)) == (m1 >= m2)
    for a, m2 in itertools.product([skey(1), skey(2)], sets):
        assert rel.covers(C(Op.CONTAINS, a), C(Op.SUPERSET, m2)) == (a in m2)
        assert rel.covers(C(Op.NOT_CONTAINS, a), C(Op.DISJOINT, m2)) == (a in m2)


# -- §4.3.7 and Table 4.8 (perfect merging) -------------------------------------------------
def test_muehl_table_4_8_union_of_sets():
    assert rel.merge([C(Op.IN_SET, S(2, 3)), C(Op.IN_SET, S(4, 5))]) == C(Op.IN_SET, S(2, 3, 4, 5))


def test_muehl_table_4_8_union_of_set_exclusions():
    # M1 ∩ M2 ≠ ∅: x ∉ M1 ∩ M2
    assert rel.merge([C(Op.NOT_IN_SET, S(1, 2, 3)), C(Op.NOT_IN_SET, S(2, 3, 4))]) == C(
        Op.NOT_IN_SET, S(2, 3)
    )
    # M1 ∩ M2 = ∅: every value of the kind (∃x for a numeric attribute)
    assert rel.merge([C(Op.NOT_IN_SET, S(1, 2)), C(Op.NOT_IN_SET, S(3))]) == ALL_NUMBERS
    assert rel.merge([C(Op.NOT_IN_SET, S(1, "a")), C(Op.NOT_IN_SET, S(2, "b"))]) is None
    # …and exactly ∃x when the union is every value of every kind
    everything = [C(Op.NOT_IN_SET, S(*k)) for k in ((1, "a", True), (2, "b", False))]
    assert rel.merge(everything + [C(Op.EQ, None), C(Op.SUPERSET, frozenset())]) == C(Op.EXISTS)


def test_muehl_table_4_8_overlaps():
    assert rel.merge([C(Op.OVERLAPS, S(1, 2)), C(Op.OVERLAPS, S(2, 3))]) == C(
        Op.OVERLAPS, S(1, 2, 3)
    )


def test_muehl_table_4_8_disjunct_rows_are_not_perfect():
    """The rows 'X disjunct M1 ∪ X disjunct M2 = ∃X' (M1 ∩ M2 = ∅) and '= X disjunct
    M1 ∩ M2' are not exact for multi values: X = {1, 2} (resp. {1, 3}) satisfies neither
    input but the stated merger. No single constraint is a perfect merger."""
    a, b = C(Op.DISJOINT, S(1)), C(Op.DISJOINT, S(2))
    assert not a.matches((1, 2)) and not b.matches((1, 2))
    assert rel.merge([a, b]) is None
    a, b = C(Op.DISJOINT, S(1, 2)), C(Op.DISJOINT, S(2, 3))
    assert C(Op.DISJOINT, S(2)).matches((1, 3)) and not (a.matches((1, 3)) or b.matches((1, 3)))
    assert rel.merge([a, b]) is None
    h = rel.hull([a, b])
    assert h == C(Op.NOT_CONTAINS, skey(2))


def test_muehl_table_4_8_eq_ne():
    assert rel.merge([C(Op.EQ, 5), C(Op.NE, 5)]) == ALL_NUMBERS
    assert rel.merge([C(Op.EQ, "a"), C(Op.NE, "a")]) == C(Op.PREFIX, "")


def test_muehl_table_4_8_comparisons():
    for a1, a2 in itertools.product(GRID, GRID):
        for lo_op, hi_op, cond in (
            (Op.LT, Op.GT, a1 > a2),
            (Op.LT, Op.GE, a1 >= a2),
            (Op.LE, Op.GT, a1 >= a2),
            (Op.LE, Op.GE, a1 >= a2),
        ):
            m = rel.merge([C(lo_op, a1), C(hi_op, a2)])
            assert (m == ALL_NUMBERS) == cond, (lo_op, a1, hi_op, a2, m)


def test_muehl_4_3_7_comparisons_merge_to_interval_exclusion():
    assert rel.merge([C(Op.LT, 4), C(Op.GT, 7)]) == not_rng(4, 7)
    assert rel.merge([C(Op.LT, "b"), C(Op.GE, "d")]) == not_rng("b", "d", True, False)


def test_muehl_4_3_7_connected_intervals():
    assert rel.merge([rng(2, 4), rng(3, 5)]) == rng(2, 5)
    assert rel.merge([rng(2, 4), rng(4, 5, False)]) == rng(2, 5)
    assert rel.merge([rng(2, 4), rng(5, 6)]) is None
    assert rel.merge([rng(2, 4), rng(5, 6)], integer=True) == rng(2, 6)


def test_muehl_4_3_7_existence_when_any_value():
    """'merged to an exists(n) test if at least one of them is satisfied by any value'."""
    assert rel.merge([C(Op.EXISTS), C(Op.EQ, 1)]) == C(Op.EXISTS)


# -- normal forms -------------------------------------------------------------------------
def test_normalize_examples():
    assert rel.normalize(C(Op.IN_SET, S(4))) == C(Op.EQ, 4)
    assert rel.normalize(rng(3, 3)) == C(Op.EQ, 3)
    assert rel.normalize(rng(3, INF)) == C(Op.GE, 3)
    assert rel.normalize(C(Op.GT, 3), integer=True) == C(Op.GE, 4)
    assert rel.normalize(rng("ab", "ac", True, False)) == C(Op.PREFIX, "ab")
    assert rel.normalize(C(Op.EQ_IGNORE_CASE, "IBM")) == C(Op.EQ_IGNORE_CASE, "ibm")
    assert rel.normalize(C(Op.EQ_IGNORE_CASE, "42")) == C(Op.EQ, "42")
    assert rel.normalize(C(Op.SUPERSET, S(1))) == C(Op.CONTAINS, skey(1))
    with pytest.raises(rel.Unsatisfiable):
        rel.normalize(C(Op.NE, None))


def test_witness_avoids():
    c = C(Op.IN_SET, S(1, 2))
    assert rel.witness(c, avoid=[1]) == 2
    assert rel.witness(C(Op.SUFFIX, "xyz")).endswith("xyz")
    assert rel.witness(C(Op.OVERLAPS, S(1, 2))) in ((1,), (2,))
