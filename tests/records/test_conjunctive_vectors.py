"""Seed test vectors for conjunctive filters: slides 002 list 6-8 and 12-15, Mühl 000
Fig. 4.3 and the merging examples of §4.3.7. One test per vector."""

from __future__ import annotations

import math

from pubsift.models.constraints.constraints import Constraint as C
from pubsift.models.constraints.constraints import Interval, Op
from pubsift.models.constraints.values import skey
from pubsift.models.records import covering as cj
from pubsift.models.records import merging as mg
from pubsift.models.records.events import Record
from pubsift.models.records.filters import RecordFilter

INF = math.inf


def F(**cs: C) -> RecordFilter:
    return RecordFilter.of(cs)


def S(*vals) -> frozenset:
    return frozenset(skey(v) for v in vals)


Z35 = C(Op.IN_RANGE, Interval(3, 5))


def test_slides_vector_6_not_identical_with_extra_attribute():
    f1 = F(x=C(Op.EQ, 4), y=C(Op.GT, 5))
    f2 = F(x=C(Op.EQ, 4), y=C(Op.GT, 5), z=Z35)
    assert not cj.identical(f1, f2)


def test_slides_vector_7_covers_with_extra_attribute():
    f1 = F(x=C(Op.EQ, 4), y=C(Op.GT, 5))
    f2 = F(x=C(Op.EQ, 4), y=C(Op.GT, 5), z=Z35)
    assert cj.covers(f1, f2) and not cj.covers(f2, f1)
    assert cj.counterexample(f2, f1) is not None


def test_slides_vector_8_and_muehl_fig_4_3():
    f3 = F(x=C(Op.GE, 2), y=C(Op.GT, 5))
    f4 = F(x=C(Op.EQ, 4), y=C(Op.EQ, 7), z=Z35)
    assert cj.covers(f3, f4) and not cj.covers(f4, f3)


def test_slides_vector_12_disjoint_filters():
    assert not cj.overlaps(F(x=C(Op.GE, 2), y=C(Op.GT, 5)), F(x=C(Op.LT, 1), y=C(Op.LT, 7)))


def test_slides_vector_13_overlapping_filters():
    f1, f2 = F(x=C(Op.GE, 2), y=C(Op.GT, 5)), F(x=C(Op.LT, 5), y=C(Op.LT, 7))
    assert cj.overlaps(f1, f2)
    w = Record.of(cj.witness_record(cj.conjoin_filters(f1, f2)))
    assert f1.matches(w) and f2.matches(w)


def test_slides_vector_14_merge_sets():
    f1 = F(x=C(Op.EQ, 5), y=C(Op.IN_SET, S(2, 3)))
    f2 = F(x=C(Op.EQ, 5), y=C(Op.IN_SET, S(4, 5)))
    assert mg.merge([f1, f2]) == F(x=C(Op.EQ, 5), y=C(Op.IN_SET, S(2, 3, 4, 5)))
    assert cj.differing_attributes(f1, f2) == {"y"}


def test_slides_vector_15_merge_eq_ne():
    """{y=3 ∧ x=5} ∪ {y=3 ∧ x≠5} = {y=3 ∧ ∃x} for a numeric x (Mühl's typed attributes).
    Here a value of another kind matches neither input, so the exact merger keeps
    'x is a number': x ∈ (-∞, ∞), which is ∃x on every notification whose x is numeric."""
    f1, f2 = F(y=C(Op.EQ, 3), x=C(Op.EQ, 5)), F(y=C(Op.EQ, 3), x=C(Op.NE, 5))
    m = mg.merge([f1, f2])
    assert m == F(y=C(Op.EQ, 3), x=C(Op.IN_RANGE, Interval(-INF, INF, False, False)))
    exists = F(y=C(Op.EQ, 3), x=C(Op.EXISTS))
    for x in (-1e9, 0, 4.5, 5, 6, 10**20):
        r = Record.of({"y": 3, "x": x})
        assert m.matches(r) and exists.matches(r)
    assert not mg.merge([f1, f2]).matches(Record.of({"y": 3, "x": "five"}))
    # a union that admits any value or absence drops the attribute altogether
    g1, g2 = F(y=C(Op.EQ, 3), x=C(Op.EXISTS)), F(y=C(Op.EQ, 3), x=C(Op.NOT_EXISTS))
    assert mg.merge([g1, g2]) == F(y=C(Op.EQ, 3))


def test_muehl_4_3_7_merge_needs_one_differing_attribute():
    f1, f2 = F(x=C(Op.EQ, 1), y=C(Op.EQ, 1)), F(x=C(Op.EQ, 2), y=C(Op.EQ, 2))
    assert mg.merge([f1, f2]) is None
    imperfect = mg.merge([f1, f2], perfect=False)
    assert imperfect == F(x=C(Op.IN_SET, S(1, 2)), y=C(Op.IN_SET, S(1, 2)))
    assert mg.imperfection(imperfect, [f1, f2]) == 1.0  # adds (1,2) and (2,1) to two cells


def test_muehl_4_3_7_imperfect_merge_drops_unshared_attributes():
    f1, f2 = F(x=C(Op.EQ, 1), z=C(Op.EQ, 0)), F(x=C(Op.EQ, 3), y=C(Op.EQ, 0))
    m = mg.merge([f1, f2], perfect=False)
    assert m == F(x=C(Op.IN_SET, S(1, 3)))
    assert cj.covers(m, f1) and cj.covers(m, f2)
    assert mg.imperfection(m, [f1, f2]) > 0


def test_imperfection_of_interval_hull():
    f1, f2 = F(x=C(Op.IN_RANGE, Interval(0, 1))), F(x=C(Op.IN_RANGE, Interval(3, 4)))
    m = mg.merge([f1, f2], perfect=False)
    assert m == F(x=C(Op.IN_RANGE, Interval(0, 4)))
    assert mg.imperfection(m, [f1, f2]) == 0.5


def test_covered_filter_merges_into_coverer():
    f1, f2 = F(y=C(Op.EQ, 3)), F(y=C(Op.EQ, 3), x=C(Op.EQ, 5))
    assert mg.merge([f1, f2]) == f1
    # after dropping covered filters the rest may differ on one attribute only
    f3 = F(x=C(Op.EQ, 2))
    assert mg.merge([F(x=C(Op.EQ, 1), y=C(Op.EQ, 1)), F(x=C(Op.EQ, 1)), f3]) == F(
        x=C(Op.IN_SET, S(1, 2))
    )


def test_unsatisfiable_filters():
    never = F(x=C(Op.NE, None))
    assert not cj.satisfiable(never)
    assert cj.covers(F(y=C(Op.EQ, 1)), never)
    assert not cj.overlaps(never, never)
    assert cj.identical(never, F(x=C(Op.LT, "")))
    assert cj.witness_record(never) is None


def test_unconstrained_attribute_is_any_value_or_absent():
    assert not cj.covers(F(x=C(Op.EXISTS)), F())
    assert not cj.covers(F(x=C(Op.NOT_EXISTS)), F(y=C(Op.EQ, 1)))
    assert cj.overlaps(F(x=C(Op.NOT_EXISTS)), F(y=C(Op.EQ, 1)))
    assert not cj.overlaps(F(x=C(Op.NOT_EXISTS)), F(x=C(Op.EQ, 1)))


def test_integer_attributes():
    f1, f2 = F(p=C(Op.IN_SET, S(*range(20, 26)))), F(p=C(Op.IN_RANGE, Interval(20, 25)))
    assert cj.identical(f1, f2, integer_attrs=frozenset({"p"}))
    assert not cj.identical(f1, f2)


def test_four_quadrants_merge_into_one_box():
    def box(x0, y0):
        return F(x=C(Op.IN_RANGE, Interval(x0, x0 + 1)), y=C(Op.IN_RANGE, Interval(y0, y0 + 1)))

    quadrants = [box(0, 0), box(1, 1), box(1, 0), box(0, 1)]
    whole = F(x=C(Op.IN_RANGE, Interval(0, 2)), y=C(Op.IN_RANGE, Interval(0, 2)))
    assert mg.merge(quadrants) == whole
    assert mg.merge(quadrants[:3]) is None  # an L shape is no box
