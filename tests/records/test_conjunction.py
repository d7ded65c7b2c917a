"""relations.Conjunction: clause-by-clause conjunction in linear time, with the result and
errors of the pairwise fold of :func:`relations.conjoin` (docs/records-syntax.md §4; 2,000 ``!=``
clauses once took 8.5 s)."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pubsift.models.constraints import relations as rel
from pubsift.models.constraints.constraints import Constraint, Op
from pubsift.models.constraints.values import skey
from pubsift.models.records.model import RecordsModel
from pubsift.models.records.testing import numbers, raw_constraints, strings

# Hang ceilings: the '< N' checks on process_time below are not performance claims (those
# live in bench/); each guards against a blow-up the limits removed (seconds to minutes of
# CPU before) with a ceiling far above today's CPU time, so a loaded machine never trips it.


def pairwise(cs: list[Constraint], integer: bool) -> tuple[str, object]:
    acc = None
    for i, c in enumerate(cs):
        try:
            acc = rel.normalize(c, integer) if acc is None else rel.conjoin(acc, c, integer)
        except (rel.Unsatisfiable, rel.NotRepresentable) as e:
            return type(e).__name__, i
    return "ok", acc


def accumulated(cs: list[Constraint], integer: bool) -> tuple[str, object]:
    conj = rel.Conjunction(integer)
    for i, c in enumerate(cs):
        before = conj.value if conj else None
        try:
            conj.add(c)
        except (rel.Unsatisfiable, rel.NotRepresentable) as e:
            assert (conj.value if conj else None) == before  # unchanged by a failed add
            return type(e).__name__, i
    return "ok", conj.value


def growing(integer: bool) -> st.SearchStrategy[Constraint]:
    """Mostly clauses of the families Conjunction joins lazily, with others mixed in."""
    excl = st.one_of(numbers(integer), strings()).map(lambda v: Constraint(Op.NE, v))
    sets = st.frozensets(
        st.one_of(numbers(integer), strings()).map(skey), min_size=1, max_size=3
    ).map(lambda s: Constraint(Op.NOT_IN_SET, s))
    elem = numbers(integer).map(skey)
    multi = st.one_of(
        elem.map(lambda k: Constraint(Op.CONTAINS, k)),
        elem.map(lambda k: Constraint(Op.NOT_CONTAINS, k)),
        st.frozensets(elem, max_size=3).map(lambda s: Constraint(Op.SUPERSET, s)),
        st.frozensets(elem, max_size=3).map(lambda s: Constraint(Op.DISJOINT, s)),
    )
    return st.one_of(excl, sets, multi, raw_constraints(integer=integer))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.booleans().flatmap(
        lambda integer: st.tuples(
            st.just(integer), st.lists(growing(integer), min_size=1, max_size=8)
        )
    )
)
def test_conjunction_equals_the_pairwise_fold(case):
    integer, cs = case
    expected, got = pairwise(cs, integer), accumulated(cs, integer)
    assert got == expected, (cs, expected, got)


def test_many_not_equal_clauses_parse_in_linear_time():
    m = RecordsModel()
    for n in (5000,):
        for lit in (str, lambda i: f'"s{i}"'):
            text = " and ".join(f"x != {lit(i)}" for i in range(n))
            t = time.process_time()
            f = m.parse_filter(text)
            elapsed = time.process_time() - t
            assert f.get("x").op is Op.NOT_IN_SET and len(f.get("x").operand) == n
            assert elapsed < 20, elapsed  # quadratic took ~60 s for 5,000
            assert m.parse_filter(m.format_filter(f)) == f


def test_many_multi_value_clauses_parse_in_linear_time():
    m = RecordsModel()
    n = 5000
    t = time.process_time()
    f = m.parse_filter(" and ".join(f"x not contains {i}" for i in range(n)))
    g = m.parse_filter(" and ".join(f"x contains {i}" for i in range(n)))
    assert time.process_time() - t < 20
    assert f.get("x").op is Op.DISJOINT and len(f.get("x").operand) == n
    assert g.get("x").op is Op.SUPERSET and len(g.get("x").operand) == n


def test_a_clause_refused_alone_after_one_too_costly_to_join_fails_as_the_fold():
    """Found by hypothesis: a cidr (whose automaton is too large to conjoin) then a clause
    no value satisfies: the fold fails deciding the conjunction, and so does add."""
    import ipaddress

    cs = [
        Constraint(Op.ANY, Constraint(Op.CIDR, ipaddress.ip_network("10.0.0.0/24"))),
        Constraint(Op.ANY, Constraint(Op.NE, None)),
    ]
    assert accumulated(cs, False) == pairwise(cs, False) == ("NotRepresentable", 1)
