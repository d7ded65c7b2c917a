"""RecordsIndex against the linear scan over the model's hooks (the oracle: every answer
must equal :class:`~pubsift.core.index.LinearIndex`'s), on random add/remove scripts over
filters with every operator, shared attributes, duplicate pairs and several keys per filter.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pubsift.core.index import LinearIndex
from pubsift.models.constraints.constraints import ABSENT, Constraint, Interval, Op, TypeSet
from pubsift.models.constraints.values import skey
from pubsift.models.records import RecordsModel, Schema
from pubsift.models.records.attrindex import AttributeIndex
from pubsift.models.records.compiled import compile_test
from pubsift.models.records.events import Record
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.index import RecordsIndex
from pubsift.models.records.witness_values import WitnessValues
from relations_universe import UNIVERSE, any_constraint, constraints_of

NAMES = ["a", "b", "c"]
PLAIN = RecordsModel()
INTS = RecordsModel(Schema.of(integer_attrs=["c"]))

# -- strategies --------------------------------------------------------------------------
filters = st.dictionaries(st.sampled_from(NAMES), any_constraint, max_size=3).map(RecordFilter.of)
# an equality-heavy mix too, so that probes hit shared buckets and merge candidates exist,
# and unsatisfiable attribute filters (an empty interval; 2.5 on the integer attribute c)
common = st.sampled_from(
    [
        Constraint(Op.EQ, 1),
        Constraint(Op.EQ, "a"),
        Constraint(Op.EQ, 2.5),
        Constraint(Op.EQ, 2),
        Constraint(Op.IN_RANGE, Interval(1, 3)),
        Constraint(Op.IN_SET, frozenset({skey(1), skey("a")})),
        Constraint(Op.IN_RANGE, Interval(0, 2)),
        Constraint(Op.IN_RANGE, Interval(2, 1)),
        Constraint(Op.PREFIX, "a"),
        Constraint(Op.GE, 1),
        Constraint(Op.NOT_EXISTS),
    ]
)
filters_common = st.dictionaries(st.sampled_from(NAMES), common, max_size=3).map(RecordFilter.of)
any_filter = st.one_of(filters, filters_common, filters_common)


@st.composite
def pools(draw) -> list[RecordFilter]:
    """Random filters, and variants of earlier ones that differ in one attribute (replaced,
    dropped or added): the merge candidates and covering pairs of Mühl §4.3.7."""
    pool = [draw(any_filter)]
    for _ in range(draw(st.integers(0, 5))):
        if draw(st.booleans()):
            pool.append(draw(any_filter))
            continue
        base = draw(st.sampled_from(pool)).as_dict()
        name = draw(st.sampled_from(NAMES))
        if name in base and draw(st.booleans()):
            del base[name]
        else:
            base[name] = draw(st.one_of(any_constraint, common, common))
        pool.append(RecordFilter.of(base))
    return pool


def _near(c: Constraint) -> list:
    """Values at and around a constraint's constants (bounds, members, prefixes)."""
    x = c.operand
    if isinstance(x, frozenset) and any(isinstance(m, Constraint) for m in x):
        return [v for m in x for v in _near(m)]  # anything-but, all: their members'
    if isinstance(x, Constraint):
        return _near(x)
    if isinstance(x, Interval):
        xs = [x.lo, x.hi]
    elif isinstance(x, frozenset):
        xs = [v for _, v in x]
    elif isinstance(x, TypeSet):
        xs = sorted(x.members)
    elif isinstance(x, tuple):
        xs = [x[1]]
    else:
        xs = [x]
    out = []
    for v in xs:
        if isinstance(v, str):
            out += [v, v + "a", v.upper()]
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out += [v, v + 0.5, v - 1]
    return out


@st.composite
def events_for(draw, pool: list[RecordFilter]) -> list[Record]:
    """Events whose values are the pool's constants and their neighbours, or anything."""
    near = [v for f in pool for _, c in f for v in _near(c)]
    values = st.one_of(st.sampled_from(UNIVERSE), st.sampled_from(near or [0]))
    out = []
    for _ in range(draw(st.integers(1, 4))):
        d = draw(st.dictionaries(st.sampled_from(NAMES + ["d"]), values, max_size=4))
        out.append(Record({k: v for k, v in d.items() if v is not ABSENT}, {}))
    return out


def check_equal(
    index: RecordsIndex, oracle: LinearIndex, queries: list[RecordFilter], evs: list[Record]
) -> None:
    assert len(index) == len(oracle)
    assert set(index) == set(oracle)
    assert index.keys() == oracle.keys()
    for k in oracle:
        assert sorted(map(repr, index.filters(k))) == sorted(map(repr, oracle.filters(k)))
    for e in evs:
        assert index.match(e) == oracle.match(e), e
        got = index.match_pairs(e)
        assert len(got) == len(set(got))
        assert set(got) == set(oracle.match_pairs(e)), e
    for f in queries:
        assert index.covering(f) == oracle.covering(f), f
        assert index.covered_by(f) == oracle.covered_by(f), f
        assert index.identical(f) == oracle.identical(f), f
        assert index.overlapping(f) == oracle.overlapping(f), f
        assert index.merge_candidates(f) == oracle.merge_candidates(f), f


steps = st.lists(
    st.tuples(st.sampled_from(["add", "add", "remove"]), st.integers(0, 5), st.integers(0, 2)),
    min_size=1,
    max_size=10,
)


def run_script(model: RecordsModel, pool: list[RecordFilter], script, evs) -> None:
    index, oracle = RecordsIndex(model), LinearIndex(model)
    for action, i, key in script:
        f = pool[i % len(pool)]
        if action == "add":
            index.add(f, key)
            oracle.add(f, key)
        elif (f, key) in oracle:
            index.remove(f, key)
            oracle.remove(f, key)
        else:
            with pytest.raises(KeyError):
                index.remove(f, key)
        assert ((f, key) in index) == ((f, key) in oracle)
        check_equal(index, oracle, pool, evs)
    for f, key in list(oracle):
        index.remove(f, key)
    assert len(index) == 0 and all(not index.match(e) for e in evs)
    assert index._root.sub == {} and index._cindex == {} and index._by_names == {}
    assert index._by_span == {} and index._odd == {}


SCRIPT = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def _script_test(model: RecordsModel, data) -> None:
    pool = data.draw(pools(), "pool")
    run_script(model, pool, data.draw(steps, "script"), data.draw(events_for(pool), "events"))


@SCRIPT
@given(st.data())
def test_index_equals_linear_scan(data):
    _script_test(PLAIN, data)


@SCRIPT
@given(st.data())
def test_index_equals_linear_scan_with_integer_attribute(data):
    _script_test(INTS, data)


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_index_equals_linear_scan_long(data):
    _script_test(PLAIN, data)
    _script_test(INTS, data)


# -- every operator, one at a time, against Constraint.matches ---------------------------
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
@pytest.mark.parametrize("op", list(Op))
def test_attribute_index_probe_is_exact(op, data):
    cs = data.draw(st.lists(constraints_of(op), min_size=1, max_size=5))
    ai = AttributeIndex()
    items = [object() for _ in cs]
    for c, it in zip(cs, items):
        ai.add(c, it)
    for v in UNIVERSE + [1, 1.0, True, "ab", "AB", math.pi]:
        got = [it for bucket in ai.probe(v) for it in bucket]
        assert len(got) == len({id(x) for x in got}), (op, v)
        want = [it for c, it in zip(cs, items) if c.matches(v)]
        assert {id(x) for x in got} == {id(x) for x in want}, (cs, v)
        for c in cs:
            assert compile_test(c)(v) == c.matches(v), (c, v)
    for c, it in zip(cs, items):
        ai.remove(c, it)
    assert ai.size == 0 and not any(ai.probe(v) for v in UNIVERSE if v is not ABSENT)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
@pytest.mark.parametrize("op", list(Op))
def test_witness_values_select_exactly(op, data):
    """WitnessValues.accepted(n, c) = the items whose value on n satisfies c."""
    c = data.draw(constraints_of(op))
    values = data.draw(
        st.lists(
            st.sampled_from(
                [v for v in UNIVERSE if v is not ABSENT] + ["a\U0010ffff", "\U0010ffff", "b"]
            )
            | st.sampled_from(_near(c) or [0]),
            max_size=12,
        )
    )
    table, items = WitnessValues(), []
    for v in values:
        items.append(object())
        table.add({"n": v, "other": 0}, items[-1])
    got = {id(x) for x in table.accepted("n", c)}
    assert got == {
        id(it) for v, it in zip(values, items) if op is not Op.NOT_EXISTS and c.matches(v)
    }, (c, values)
    assert table.estimate("n", c) >= len(got)
    for v, it in zip(values, items):
        table.remove({"n": v, "other": 0}, it)
    assert not list(table.accepted("n", c)) and table.estimate("n", c) == 0


# -- named cases ---------------------------------------------------------------------------
def eq(v):
    return Constraint(Op.EQ, v)


def test_booleans_are_not_numbers_and_one_equals_one_point_zero():
    idx = PLAIN.new_index()
    assert isinstance(idx, RecordsIndex)
    idx.add(RecordFilter.of({"a": eq(1)}), "one")
    idx.add(RecordFilter.of({"a": eq(True)}), "true")
    idx.add(RecordFilter.of({"a": Constraint(Op.IN_SET, frozenset({skey(1.0), skey("x")}))}), "set")
    assert idx.match(Record.of({"a": 1.0})) == {"one", "set"}
    assert idx.match(Record.of({"a": True})) == {"true"}
    assert idx.match(Record.of({"a": "x"})) == {"set"}


def test_empty_filter_and_not_exists_match_by_absence():
    idx = RecordsIndex(PLAIN)
    idx.add(RecordFilter(), "all")
    idx.add(RecordFilter.of({"a": Constraint(Op.NOT_EXISTS)}), "no-a")
    idx.add(RecordFilter.of({"a": Constraint(Op.NOT_EXISTS), "b": eq(2)}), "no-a-b2")
    assert idx.match(Record.of({"b": 2})) == {"all", "no-a", "no-a-b2"}
    assert idx.match(Record.of({"a": 1, "b": 2})) == {"all"}


def test_pairs_duplicates_and_removal():
    idx = RecordsIndex(PLAIN)
    f = RecordFilter.of({"symbol": eq("IBM"), "price": Constraint(Op.GT, 45.5)})
    idx.add(f, 1)
    idx.add(f, 1)
    idx.add(f, 2)
    assert len(idx) == 2 and idx.filters(1) == [f] and idx.keys() == {1, 2}
    assert idx.match(Record.of({"symbol": "IBM", "price": 46})) == {1, 2}
    idx.remove(f, 1)
    with pytest.raises(KeyError):
        idx.remove(f, 1)
    with pytest.raises(KeyError):
        idx.remove(RecordFilter(), 2)
    assert idx.match(Record.of({"symbol": "IBM", "price": 46})) == {2}
    idx.remove(f, 2)
    assert len(idx) == 0 and list(idx) == []


def test_prefix_suffix_ranges_and_residuals():
    idx = RecordsIndex(PLAIN)
    idx.add(RecordFilter.of({"s": Constraint(Op.PREFIX, "In")}), "pre")
    idx.add(RecordFilter.of({"s": Constraint(Op.SUFFIX, "ess")}), "suf")
    idx.add(RecordFilter.of({"s": Constraint(Op.PREFIX, "")}), "any-string")
    idx.add(
        RecordFilter.of({"s": Constraint(Op.IN_RANGE, Interval("H", "J", True, False))}), "range"
    )
    idx.add(RecordFilter.of({"s": Constraint(Op.SUBSTRING, "tern")}), "sub")
    idx.add(RecordFilter.of({"p": Constraint(Op.IN_RANGE, Interval(1, 2, False, True))}), "(1,2]")
    assert idx.match(Record.of({"s": "Internal Machines"})) == {"pre", "any-string", "range", "sub"}
    assert idx.match(Record.of({"s": "Express"})) == {"suf", "any-string"}
    assert idx.match(Record.of({"p": 1})) == set()
    assert idx.match(Record.of({"p": 2})) == {"(1,2]"}


def test_slide_vectors_through_the_index():
    """Slides 002 L584-595: {x = 4} ∧ {y > 5} covers {x = 4} ∧ {y > 5} ∧ {z ∈ [3, 5]} and
    {x ≥ 2} ∧ {y > 5} covers {x = 4} ∧ {y = 7} ∧ {z ∈ [3, 5]}."""
    f1 = RecordFilter.of({"x": eq(4), "y": Constraint(Op.GT, 5)})
    f2 = RecordFilter.of(
        {"x": eq(4), "y": Constraint(Op.GT, 5), "z": Constraint(Op.IN_RANGE, Interval(3, 5))}
    )
    f3 = RecordFilter.of({"x": Constraint(Op.GE, 2), "y": Constraint(Op.GT, 5)})
    f4 = RecordFilter.of({"x": eq(4), "y": eq(7), "z": Constraint(Op.IN_RANGE, Interval(3, 5))})
    idx = RecordsIndex(PLAIN)
    for k, f in enumerate((f1, f2, f3, f4), start=1):
        idx.add(f, k)
    assert idx.covering(f2) == {1, 2, 3}
    assert idx.covering(f4) == {1, 2, 3, 4}
    assert idx.covered_by(f1) == {1, 2, 4}
    assert idx.identical(f2) == {2}
    assert idx.overlapping(RecordFilter.of({"x": eq(5)})) == {3}


def test_merge_candidates_of_quote_interval_subscriptions():
    """Mühl §6.3.4: quote-interval subscriptions of one stock with connected ranges merge."""

    def qi(sym, lo, hi):
        return RecordFilter.of(
            {"symbol": eq(sym), "price": Constraint(Op.IN_RANGE, Interval(lo, hi))}
        )

    idx = RecordsIndex(PLAIN)
    idx.add(qi("IBM", 40, 50), "a")
    idx.add(qi("IBM", 45, 60), "b")
    idx.add(qi("IBM", 70, 80), "c")
    idx.add(qi("SAP", 40, 50), "d")  # identical price range, other symbol: merges too
    idx.add(RecordFilter.of({"symbol": eq("IBM")}), "e")  # covers: the merger is itself
    assert idx.merge_candidates(qi("IBM", 48, 55)) == {"a", "b", "e"}
    assert idx.merge_candidates(qi("IBM", 40, 50)) == {"a", "b", "d", "e"}


# -- the workload ----------------------------------------------------------------------------
DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "quotes"
needs_quotes = pytest.mark.skipif(not DATA.is_dir(), reason=f"S&P 500 quotes not found at {DATA}")


@needs_quotes
def test_workload_is_deterministic_and_valid():
    from pubsift.models.constraints import relations
    from pubsift.models.records.workload import (
        load_quotes,
        quotes_path,
        sample_events,
        subscriptions,
    )

    quotes = load_quotes(quotes_path(directory=DATA), limit=3000)
    assert len(quotes) == 3000 and quotes[0]["symbol"] == "AAL"
    assert set(quotes[0]) == {"symbol", "price", "open", "high", "low", "volume", "date"}
    a, b = subscriptions(quotes, 400, seed=7), subscriptions(quotes, 400, seed=7)
    assert a == b and a != subscriptions(quotes, 400, seed=8)
    ops = set()
    for f in a:
        assert isinstance(f, RecordFilter) and f.constraints
        for n, c in f:
            assert relations.normalize(c) == c  # canonical, as the parsers build them
            ops.add((n, c.op))
        assert PLAIN.parse_filter(PLAIN.format_filter(f)) == f
        assert PLAIN.load_filter(PLAIN.dump_filter(f)) == f
    assert {
        ("symbol", Op.EQ),
        ("price", Op.IN_RANGE),
        ("symbol", Op.PREFIX),
        ("symbol", Op.IN_SET),
        ("volume", Op.GE),
    } <= ops
    evs = sample_events(quotes, 50, seed=1)
    assert evs == sample_events(quotes, 50, seed=1)
    idx = RecordsIndex(PLAIN)
    for k, f in enumerate(a):
        idx.add(f, k)
    for e in evs:
        assert idx.match(e) == {k for k, f in enumerate(a) if f.matches(e)}


def test_workload_reports_a_missing_file(tmp_path):
    from pubsift.models.records.workload import quotes_path

    with pytest.raises(FileNotFoundError, match="quotes not found"):
        quotes_path(directory=tmp_path)


def test_infinite_constants_are_no_witness_for_unsatisfiable_filters():
    """[-inf, -inf] matches no event (events hold finite numbers): it is covered by every
    filter, and the index must say so (found by the derandomized long script test)."""
    from pubsift.core.index import LinearIndex
    from pubsift.models.records import Interval, Op

    model = RecordsModel()
    g = RecordFilter.of({"a": Constraint(Op.IN_RANGE, Interval(float("-inf"), float("-inf")))})
    index, oracle = model.new_index(), LinearIndex(model)
    for x in (index, oracle):
        x.add(RecordFilter(), 0)
        x.add(g, 1)
    f = model.parse_filter("a = 1")
    assert index.covered_by(f) == oracle.covered_by(f) == {1}
