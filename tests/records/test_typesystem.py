"""The declared type hierarchy behind ``instanceof`` (Mühl 000, §4.3.3, Table 4.1).

Oracle: Table 4.1 itself (``n instanceof T1`` covers ``n instanceof T2`` iff T1 = T2 or T1 is
a supertype of T2), checked by brute force over the value set L_A of each constraint on a
hierarchy with multiple inheritance; closures against a naive reachability search on random
acyclic declarations.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pubsift.models.constraints.constraints import ABSENT, Constraint, Op
from pubsift.models.records.typesystem import (
    Schema,
    TypeHierarchy,
    TypeHierarchyError,
    UnknownTypeError,
)

# A diamond and a second root: ConvertibleBond is both a BondQuote and an Equity.
DECLARED = {
    "Event": [],
    "Quote": ["Event"],
    "StockQuote": ["Quote"],
    "BondQuote": ["Quote"],
    "Equity": ["Security"],
    "ConvertibleBond": ["BondQuote", "Equity"],
    "News": ["Event"],
}
# T -> its proper supertypes, written out by hand (the oracle for Table 4.1).
PROPER_SUPERTYPES = {
    "Event": set(),
    "Quote": {"Event"},
    "StockQuote": {"Quote", "Event"},
    "BondQuote": {"Quote", "Event"},
    "Security": set(),
    "Equity": {"Security"},
    "ConvertibleBond": {"BondQuote", "Quote", "Event", "Equity", "Security"},
    "News": {"Event"},
}
TYPES = sorted(PROPER_SUPERTYPES)
H = TypeHierarchy(DECLARED)


def test_types_named_only_as_supertypes_are_roots():
    assert H.types == frozenset(TYPES)
    assert H.supertypes("Security") == {"Security"}


@pytest.mark.parametrize("t1", TYPES)
@pytest.mark.parametrize("t2", TYPES)
def test_table_4_1_covering_among_notification_types(t1, t2):
    """A1 = n instanceof T1 covers A2 = n instanceof T2 iff T1 = T2 or T1 supertype of T2,
    with L_A computed by matching every type name (and non-types) against the constraints."""
    a1, a2 = (Constraint(Op.INSTANCEOF, H.typeset(t)) for t in (t1, t2))
    domain = TYPES + ["Unrelated", "", 3, None, True, ABSENT, ("Quote",)]
    l1 = {repr(v) for v in domain if a1.matches(v)}
    l2 = {repr(v) for v in domain if a2.matches(v)}
    expected = t1 == t2 or t1 in PROPER_SUPERTYPES[t2]
    assert (l1 >= l2) is expected
    assert H.is_subtype(t2, t1) is expected


@pytest.mark.parametrize("t", TYPES)
def test_instanceof_matches_the_type_and_its_subtypes_only(t):
    c = Constraint(Op.INSTANCEOF, H.typeset(t))
    for u in TYPES:
        assert c.matches(u) is (u == t or t in PROPER_SUPERTYPES[u])
    assert not c.matches("NoSuchType") and not c.matches(ABSENT) and not c.matches(1)


def test_multiple_inheritance_closures():
    assert H.subtypes("Quote") == {"Quote", "StockQuote", "BondQuote", "ConvertibleBond"}
    assert H.subtypes("Security") == {"Security", "Equity", "ConvertibleBond"}
    assert H.supertypes("ConvertibleBond") == PROPER_SUPERTYPES["ConvertibleBond"] | {
        "ConvertibleBond"
    }
    ts = H.typeset("Equity")
    assert ts.name == "Equity" and ts.members == {"Equity", "ConvertibleBond"}


@pytest.mark.parametrize(
    "declared, cycle",
    [
        ({"A": ["A"]}, "A -> A"),
        ({"A": ["B"], "B": ["A"]}, "A -> B -> A"),
        ({"A": ["B"], "B": ["C"], "C": ["A"], "D": ["A"]}, "A -> B -> C -> A"),
        ({"X": [], "A": ["X", "B"], "B": ["C"], "C": ["B"]}, "B -> C -> B"),
    ],
)
def test_cycles_are_rejected_naming_the_cycle(declared, cycle):
    with pytest.raises(TypeHierarchyError, match="cycle") as e:
        TypeHierarchy(declared)
    assert cycle in str(e.value)


@pytest.mark.parametrize("declared", [{"": []}, {"A": [""]}, {"A": "B"}, {"A": [3]}])
def test_malformed_declarations_are_rejected(declared):
    with pytest.raises(TypeHierarchyError):
        TypeHierarchy(declared)


def test_unknown_type_names_are_a_clear_error():
    with pytest.raises(UnknownTypeError, match=r"unknown type 'Bond'.*BondQuote"):
        H.typeset("Bond")
    with pytest.raises(UnknownTypeError):
        H.is_subtype("Quote", "Nope")
    assert "Quote" in H and "Nope" not in H


def test_deep_hierarchies_need_no_recursion():
    n = 20000
    h = TypeHierarchy({f"T{i}": [f"T{i - 1}"] for i in range(1, n)})
    assert len(h.subtypes("T0")) == n
    assert h.is_subtype(f"T{n - 1}", "T0")


def test_equality_hash_and_declared_round_trip():
    assert TypeHierarchy(H.declared()) == H
    assert hash(TypeHierarchy(H.declared())) == hash(H)
    assert TypeHierarchy({"A": []}) != H


def test_schema_is_a_hashable_config_object():
    s = Schema.of(integer_attrs=["volume", "count"], types=DECLARED)
    assert s.is_integer("volume") and not s.is_integer("price")
    assert s == Schema.of(["count", "volume"], H) and hash(s) == hash(
        Schema.of(["count", "volume"], H)
    )
    assert Schema().types.types == frozenset() and Schema().integer_attrs == frozenset()
    with pytest.raises(TypeError):
        Schema.of(integer_attrs="volume")


@st.composite
def dags(draw):
    n = draw(st.integers(1, 12))
    names = [f"t{i}" for i in range(n)]
    # edges only to lower indices: acyclic by construction
    return {
        names[i]: draw(st.lists(st.sampled_from(names[:i]), max_size=3)) if i else []
        for i in range(n)
    }


def _reach(declared, t):
    seen, todo = {t}, [t]
    while todo:
        for s in declared.get(todo.pop(), []):
            if s not in seen:
                seen.add(s)
                todo.append(s)
    return seen


@settings(max_examples=150, deadline=None)
@given(dags())
def test_closures_equal_naive_reachability(declared):
    h = TypeHierarchy(declared)
    for t in declared:
        assert h.supertypes(t) == _reach(declared, t)
        assert h.subtypes(t) == {u for u in declared if t in _reach(declared, u)}


@settings(max_examples=100, deadline=None)
@given(dags(), st.data())
def test_adding_a_back_edge_makes_a_cycle(declared, data):
    names = sorted(declared, key=lambda s: int(s[1:]))
    hi = data.draw(st.integers(0, len(names) - 1))
    lo = data.draw(st.sampled_from(sorted(_reach(declared, names[hi]))))
    cyclic = {k: list(v) for k, v in declared.items()}
    cyclic[lo] = cyclic[lo] + [names[hi]]
    with pytest.raises(TypeHierarchyError, match="cycle"):
        TypeHierarchy(cyclic)
