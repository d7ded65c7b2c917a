"""Multi-value sets on unions of many cubes: answers stay sound when exact answers would
need exponentially many cubes (:class:`TooComplex`)."""

from __future__ import annotations

import math

import pytest
from pubsift.models.constraints import relations as rel
from pubsift.models.constraints.constraints import Constraint as C
from pubsift.models.constraints.constraints import Op
from pubsift.models.constraints.multivalues import MultiSet, TooComplex
from pubsift.models.constraints.values import skey
from pubsift.models.constraints.valuesets import value_set
from pubsift.models.records import covering as cj
from pubsift.models.records import merging as mg
from pubsift.models.records.filters import RecordFilter

SUPERSETS = [
    C(Op.SUPERSET, frozenset(skey(i) for i in range(10 * k, 10 * k + 40))) for k in range(6)
]


def test_difference_of_large_unions_refuses_instead_of_exploding():
    union = MultiSet(c for s in SUPERSETS for c in value_set(s).multi.cubes)
    with pytest.raises(TooComplex):
        value_set(C(Op.SUPERSET, frozenset())).multi - union


def test_merge_and_hull_of_large_supersets_stay_sound():
    assert rel.merge(SUPERSETS) is None
    h = rel.hull(SUPERSETS)
    assert h.op is Op.OVERLAPS and all(rel.covers(h, c) for c in SUPERSETS)
    fs = [RecordFilter.of({"x": c, "y": C(Op.EQ, 1)}) for c in SUPERSETS]
    assert mg.merge(fs) is None
    m = mg.merge(fs, perfect=False)
    assert all(cj.covers(m, f) for f in fs)
    assert mg.imperfection(m, fs) == math.inf


def test_pairs_of_multi_constraints_are_always_decided():
    a, b = SUPERSETS[0], SUPERSETS[1]
    assert not rel.covers(a, b) and rel.overlaps(a, b)
    w = rel.counterexample(a, b)
    assert b.matches(w) and not a.matches(w)
