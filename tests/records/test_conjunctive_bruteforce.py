"""Brute force for conjunctive filters (Mühl Cor. 4.1-4.3, §4.3.7): random filters over
three attributes against ``RecordFilter.matches`` on every small record of a universe;
converse directions through constructed witness records."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pubsift.models.constraints import relations as rel
from pubsift.models.constraints.constraints import ABSENT, Constraint, Interval, Op
from pubsift.models.records import covering as cj
from pubsift.models.records import merging as mg
from pubsift.models.records.events import Record
from pubsift.models.records.filters import RecordFilter
from relations_universe import any_constraint

NAMES = ("x", "y", "z")
VALUES = [ABSENT, None, False, -1, 0.5, 1, "", "a", "ab", (), (1, "a")]
RECORDS = [
    Record.of(
        {
            "_": 0,
            **{
                n: list(v) if isinstance(v, tuple) else v
                for n, v in zip(NAMES, vals)
                if v is not ABSENT
            },
        }
    )
    for vals in itertools.product(VALUES, repeat=len(NAMES))
]
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))

# constraints whose value sets the small universe separates reasonably
small = st.one_of(
    st.sampled_from([Constraint(Op.EXISTS), Constraint(Op.NOT_EXISTS)]),
    st.sampled_from([-1, 0, 0.5, 1, 2, "a", "b", True, None]).flatmap(
        lambda v: st.sampled_from([Constraint(Op.EQ, v), Constraint(Op.NE, v)])
    ),
    st.tuples(
        st.sampled_from([Op.LT, Op.LE, Op.GT, Op.GE]), st.sampled_from([0, 0.5, 1, "a", "ab"])
    ).map(lambda t: Constraint(*t)),
    st.tuples(st.sampled_from([-1, 0, 1]), st.sampled_from([0, 1, 2]), st.booleans(), st.booleans())
    .filter(lambda t: t[0] <= t[1])
    .map(lambda t: Constraint(Op.IN_RANGE, Interval(*t))),
    st.sampled_from(["", "a", "b"]).map(lambda p: Constraint(Op.PREFIX, p)),
    st.sampled_from([1, "a"]).map(
        lambda e: Constraint(Op.CONTAINS, ((type(e) is str and "str") or "num", e))
    ),
    any_constraint,
)


def filters(constraint=small) -> st.SearchStrategy:
    return st.dictionaries(st.sampled_from(NAMES), constraint, max_size=3).map(RecordFilter.of)


@st.composite
def related_pair(draw):
    """A random filter and a variant differing on one attribute (merge candidates)."""
    f = draw(filters())
    d = f.as_dict()
    name = draw(st.sampled_from(NAMES))
    if draw(st.booleans()) or name not in d:
        d[name] = draw(small)
    else:
        del d[name]
    return f, RecordFilter.of(d)


def n_of(f: RecordFilter) -> frozenset:
    return frozenset(i for i, r in enumerate(RECORDS) if f.matches(r))


def as_record(values: dict) -> Record:
    return Record.of(
        {"_": 0, **{k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}}
    )


def check(f: RecordFilter, g: RecordFilter) -> None:
    nf, ng = n_of(f), n_of(g)
    cov = cj.covers(f, g)
    if cov:
        assert ng <= nf, (f, g)
    else:
        r = as_record(cj.counterexample(f, g))
        assert g.matches(r) and not f.matches(r), (f, g, r)
    ident = cj.identical(f, g)
    assert ident == (cov and cj.covers(g, f))
    if ident:
        assert nf == ng
    ov = cj.overlaps(f, g)
    assert ov == cj.overlaps(g, f)
    if ov:
        both = cj.conjoin_filters(f, g) if _conjoinable(f, g) else None
        if both is not None:
            r = as_record(cj.witness_record(both))
            assert f.matches(r) and g.matches(r), (f, g, r)
    else:
        assert not (nf & ng), (f, g)
    m = mg.merge([f, g])
    if m is not None:
        assert n_of(m) == nf | ng, (f, g, m)
        assert mg.imperfection(m, [f, g]) == 0
    h = mg.merge([f, g], perfect=False)
    assert cj.covers(h, f) and cj.covers(h, g), (f, g, h)
    assert n_of(h) >= nf | ng
    imp = mg.imperfection(h, [f, g])
    if imp == 0:
        assert n_of(h) == nf | ng, (f, g, h)
    if m is not None:
        assert imp == 0


def _conjoinable(f: RecordFilter, g: RecordFilter) -> bool:
    try:
        cj.conjoin_filters(f, g)
    except rel.NotRepresentable:
        return False
    return True


@SETTINGS
@given(f=filters(), g=filters())
def test_random_filter_pairs(f, g):
    check(f, g)


@SETTINGS
@given(pair=related_pair())
def test_merge_candidates(pair):
    check(*pair)
    f, g = pair
    diff = cj.differing_attributes(f, g)
    assert len(diff) <= 1
    assert (not diff) == cj.identical(f, g) or not cj.satisfiable(f) or not cj.satisfiable(g)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(pair=st.one_of(related_pair(), st.tuples(filters(), filters())))
def test_random_filter_pairs_exhaustive(pair):
    check(*pair)


@SETTINGS
@given(fs=st.lists(filters(), min_size=1, max_size=4))
def test_merge_several(fs):
    union = frozenset().union(*(n_of(f) for f in fs))
    m = mg.merge(fs)
    if m is not None:
        assert n_of(m) == union
    h = mg.merge(fs, perfect=False)
    assert all(cj.covers(h, f) for f in fs)
    assert n_of(h) >= union


@SETTINGS
@given(f=filters(), avoid=filters())
def test_witness_record(f, avoid):
    w = cj.witness_record(f, avoid=[cj.witness_record(avoid) or {}])
    if w is None:
        assert not n_of(f) and not cj.satisfiable(f)
    else:
        assert f.matches(as_record(w))
