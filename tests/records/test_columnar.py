"""``RecordsIndex.match_wire_batch`` (models/records/columnar.py; DESIGN.md §2.4: batch entry points): every answer
equals the per-row path ``index.match(model.load_event(json.loads(wire)))``, and a wire
that path refuses raises EventError naming its row. Differential with hypothesis over
filters of every operator and hostile events (mixed kinds per attribute across rows,
nested objects and dotted names, lists, missing attributes and nulls, booleans, big
integers, 1e308, -0.0, unicode, texts Arrow reads differently from Python), on the quotes
workload, and across add/remove, pickling and the per-row fallback without pyarrow.
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

np = pytest.importorskip("numpy")
pa = pytest.importorskip("pyarrow")

from pubsift.core import strict_json  # noqa: E402
from pubsift.core.errors import EventError  # noqa: E402
from pubsift.models.constraints.constraints import Constraint, Interval, Op  # noqa: E402
from pubsift.models.constraints.values import skey  # noqa: E402
from pubsift.models.records import (  # noqa: E402
    RecordsModel,
    column_matching,
    columnar,
    plans,
    ways,
    wire_batches,
)
from pubsift.models.records.filters import RecordFilter  # noqa: E402
from rstrategies import constraints  # noqa: E402

MODEL = RecordsModel()


@pytest.fixture(autouse=True, params=["walked", "columnar"])
def matching(request):
    """Every test here runs both ways a batch's parsed rows are matched: walked one by one
    from the columns by the compiled walk (``walk_rows``), and column-wise (with the
    compiled walk on, as in production; column-wise is the only way without it, and
    ``test_the_faster_way_is_chosen`` checks the choice)."""
    if request.param == "walked" and plans.ENGINE is None:
        pytest.skip("the compiled walk is not in use (PUBSIFT_PURE_PYTHON or not built)")
    way = ways.WALK if request.param == "walked" else ways.COLUMNS
    # Arrow's way of reading wire batches (the selective scan's: test_wire_batches.py)
    with (
        mock.patch.object(ways, "FORCE", way),
        mock.patch.object(wire_batches, "FORCE", wire_batches.ARROW),
    ):
        yield request.param


DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "quotes"


def per_row(index, wires):
    """The oracle: the per-row path, or (row, EventError) at the first refused wire."""
    out = []
    if isinstance(wires, (pa.Array, pa.ChunkedArray)):
        wires = wires.to_pylist()
    for i, w in enumerate(wires):
        try:
            e = MODEL.load_event(strict_json.loads(w))
        except (ValueError, TypeError, RecursionError, EventError):
            return i
        out.extend((i, k) for k in index.match(e))
    return out


def batch(index, wires):
    rows, keys = index.match_wire_batch(wires)
    assert len(rows) == len(keys)
    assert rows.dtype == np.int64
    assert (np.diff(rows) >= 0).all(), "rows ascending"
    pairs = list(zip(rows.tolist(), keys.tolist()))
    assert len(pairs) == len(set(pairs)), "each (row, key) pair once"
    return pairs


def check(index, wires, valid=False):
    """The batch's answer is the per-row answer (``valid``: and that is no error)."""
    want = per_row(index, wires)
    assert not (valid and isinstance(want, int)), f"row {want} is refused"
    if isinstance(want, int):
        with pytest.raises(EventError) as err:
            index.match_wire_batch(wires)
        assert f"row {want}" in str(err.value), (str(err.value), want)
        return
    got = batch(index, wires)
    assert sorted(got, key=repr) == sorted(want, key=repr)


def index_of(fs, keys=None):
    index = MODEL.new_index()
    for i, f in enumerate(fs):
        index.add(f, i if keys is None else keys[i % len(keys)])
    return index


# -- strategies --------------------------------------------------------------------------
NAMES = ["a", "b", "a.b", "c", "c.d.e", "é"]
POOL = [
    "x",
    "y",
    "AAL",
    "",
    "ü\u00e9",
    0,
    1,
    -1,
    1.0,
    1.5,
    -0.0,
    2**53,
    2**53 + 1,
    2**64,
    10**30,
    1e308,
    5e-324,
    True,
    False,
    None,
]
pool = st.sampled_from(POOL)
scalars = (
    pool
    | st.text(max_size=4).filter(lambda s: s < "\ud800" or s > "\udfff")
    | st.integers(-3, 3)
    | st.floats(allow_nan=False, allow_infinity=False, width=64)
)

targeted = st.one_of(
    st.builds(Constraint, st.sampled_from([Op.EQ, Op.NE]), pool),
    st.builds(
        Constraint,
        st.sampled_from([Op.LT, Op.LE, Op.GT, Op.GE]),
        st.sampled_from([0, 1, 1.5, -0.0, 2**53, 2**53 + 1, 10**30, "x", "AAL"]),
    ),
    st.builds(
        lambda lo, hi, lc, hc: Constraint(Op.IN_RANGE, Interval(min(lo, hi), max(lo, hi), lc, hc)),
        st.sampled_from([-1, 0, 1, 1.5, 2**53 + 1, float("-inf")]),
        st.sampled_from([0, 1, 1.5, 2, 1e308, float("inf")]),
        st.booleans(),
        st.booleans(),
    ),
    st.builds(
        lambda vs: Constraint(Op.IN_SET, frozenset(map(skey, vs))),
        st.lists(pool, min_size=1, max_size=4),
    ),
    st.just(Constraint(Op.EXISTS)),
    st.just(Constraint(Op.NOT_EXISTS)),
    st.builds(
        Constraint,
        st.sampled_from([Op.PREFIX, Op.SUFFIX]),
        st.sampled_from(["", "A", "AA", "x", "L", "é"]),
    ),
    st.just(Constraint(Op.ANY, Constraint(Op.EQ, 1))),
    st.just(Constraint(Op.ANY, Constraint(Op.NOT_EXISTS))),
)
record_filters = st.dictionaries(st.sampled_from(NAMES), targeted | constraints(), max_size=3).map(
    RecordFilter.of
)

values = st.recursive(
    scalars | st.lists(scalars, max_size=3),
    lambda inner: st.dictionaries(st.sampled_from(["b", "d", "e", "a.b"]), inner, max_size=2),
    max_leaves=4,
)
objects = st.dictionaries(st.sampled_from(NAMES + ["c.d"]), values, max_size=4)

HOSTILE = [
    "{}",
    '{"a": NaN}',
    '{"a": Infinity}',
    '{"a": -Infinity}',
    '{"a": 1e400}',
    '{"a": 1, "a": "x"}',
    '{"a": {"b": 1}, "a": {"d": 2}}',
    "[1]",
    "1",
    "null",
    "",
    "   ",
    ' {"a": 1} ',
    '{"a": 1}\n',
    '{"a":\n1}',
    '{"a":\t1}',
    '\ufeff{"a": 1}',
    '{"a": 1}]',
    '{"a": 1}{"b": 2}',
    '{"a": 1} x',
    '{"a": 1}null',
    '{"a": "\\ud800"}',
    '{"a": "\\ud83d\\ude00"}',
    '{"\\ud800": 1}',
    '{"a": {"b": 1}, "a.b": 2}',
    '{"": 1}',
    '{"a": {"": 1}}',
    '{"a": [1, [2]]}',
    '{"a": [{"b": 1}]}',
    '{"a": [null, 1]}',
    '{"a": [1, null]}',
    '{"a": []}',
    '{"a": null}',
    '{"a": {}}',
    '{"a": {}, "b": 1}',
    '{"a": -0.0}',
    '{"a": -0}',
    '{"a": 9007199254740993}',
    '{"a": 9223372036854775808}',
    '{"a": ' + "9" * 5000 + "}",
    '{"a": 1.0e5}',
    '{"a": 1E-5}',
    '{"a": 01}',
    '{"a": +1}',
    '{"a": 1,}',
    "{'a': 1}",
    '{"a": "2013-02-08"}',
    '{"a": "2013-02-08 10:00:00"}',
    '{"c": {"d": {"e": "2013-02-08T10:00:00Z"}}}',
    '{"a": true}',
    '{"a": "x\\u0000y"}',
    '{"a": "\\"}"}',
    '{"a": "x"} ',
    '{"a": ' + "[" * 200 + "]" * 200 + "}",
    '{"a": ' + '{"a": ' * 130 + "1" + "}" * 130 + "}",
]
hostile = st.sampled_from(HOSTILE)
texts = st.one_of(
    objects.map(json.dumps), objects.map(json.dumps), objects.map(json.dumps), hostile
)


# -- differential ------------------------------------------------------------------------
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    fs=st.lists(record_filters, min_size=1, max_size=8),
    evs=st.lists(objects.filter(bool), max_size=24),
    keys=st.sampled_from([None, ["k", 2]]),
)
def test_valid_events_equal_the_per_row_answer(fs, evs, keys):
    index = index_of(fs, keys)
    wires = [json.dumps(MODEL.dump_event(MODEL.load_event(e))) for e in evs if _loads(e)]
    check(index, wires)
    check(index, pa.array(wires, pa.large_string()))


def _loads(obj) -> bool:
    try:
        MODEL.load_event(obj)
        return True
    except EventError:
        return False


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(fs=st.lists(record_filters, min_size=1, max_size=6), wires=st.lists(texts, max_size=30))
def test_any_texts_equal_the_per_row_answer_or_its_error(fs, wires):
    check(index_of(fs), wires)


KINDS = {
    "str": st.sampled_from(["x", "y", "AAL", "", "ü\u00e9", "A", "xA"]) | st.text(max_size=3),
    "int": st.integers(-3, 3) | st.sampled_from([2**53, 2**53 + 1, -(2**53), 2**63 - 1]),
    "float": st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([-0.0, 0.5, 1.0, 1.5, 1e308]),
    "bool": st.booleans(),
    "list": st.lists(st.integers(-2, 2), max_size=3),
}
KINDS["num"] = KINDS["int"] | KINDS["float"]


@st.composite
def typed_batches(draw):
    """Rows whose attributes keep one kind across the batch (as Arrow types a column),
    each present, null or missing: the columnar path answers most of them."""
    kinds = {name: draw(st.sampled_from(sorted(KINDS))) for name in ("a", "b", "é", "e")}
    nest = draw(st.booleans())
    rows = []
    for _ in range(draw(st.integers(0, 40))):
        row = {}
        for name, kind in kinds.items():
            how = draw(st.sampled_from(["value", "value", "value", "null", "missing"]))
            if how != "missing":
                row[name] = None if how == "null" else draw(KINDS[kind])
        if nest and "e" in row:
            row["c"] = {"d": {"e": row.pop("e")}}
        rows.append(row)
    return [json.dumps(r) for r in rows]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(fs=st.lists(record_filters, min_size=1, max_size=8), wires=typed_batches())
def test_typed_columns_equal_the_per_row_answer(fs, wires):
    check(index_of(fs, ["k", 2, "k"]), wires)


BASES = [
    '{"symbol": "AAL", "date": "2013-02-08", "price": 14.75, "volume": 8407500}',
    '{"a": {"b": 1, "d": "x"}, "c": [1, 2], "e": true, "é": null}',
    '{"a": -0.0, "b": 1e308, "c": "y\\u00e9\\"", "a.b": 2}',
]
EDITS = list('{}[]":,. -+019eE') + [
    "\\",
    "\\u",
    "\\ud800",
    "null",
    "true",
    "NaN",
    "Infinity",
    "1e400",
    "9" * 20,
    "\t",
    "\ufeff",
    "é",
]


@st.composite
def mutated(draw):
    """A valid wire with a few edits: texts Arrow and Python may read differently."""
    text = draw(st.sampled_from(BASES))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 2))
        text = text[:i] + draw(st.sampled_from(EDITS)) + text[i + cut :]
    return text


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    fs=st.lists(record_filters, min_size=1, max_size=6),
    texts=st.lists(mutated(), min_size=1, max_size=30),
)
def test_mutated_texts_equal_the_per_row_answer(fs, texts):
    """The mutants the per-row path accepts give its answers in one batch (with valid
    rows around them); each mutant it refuses raises EventError naming its row."""
    index = index_of(fs)
    ok = [t for t in texts if isinstance(per_row(index, [t]), list)]
    check(index, ok + BASES[:1] * 10 + ok, valid=True)
    for t in texts:
        if t not in ok:
            check(index, BASES * 3 + [t])


@pytest.mark.parametrize("text", HOSTILE)
def test_each_hostile_text_alone_and_among_good_rows(text):
    fs = [
        RecordFilter.of({"a": c})
        for c in (
            Constraint(Op.EXISTS),
            Constraint(Op.NOT_EXISTS),
            Constraint(Op.EQ, None),
            Constraint(Op.GE, 0),
            Constraint(Op.EQ, "x"),
        )
    ]
    fs.append(RecordFilter.of({}))
    index = index_of(fs)
    good = ['{"a": 1}', '{"a": "x"}', '{"b": null}', '{"a": null}']
    check(index, [text])
    check(index, good * 5 + [text] + good * 5)


def test_mixed_kinds_across_rows_nested_and_lists():
    fs = [
        RecordFilter.of({"a": Constraint(Op.EQ, 1)}),
        RecordFilter.of({"a": Constraint(Op.EQ, "1")}),
        RecordFilter.of({"a": Constraint(Op.EQ, True)}),
        RecordFilter.of(
            {"a.b": Constraint(Op.IN_RANGE, Interval(0, 2)), "c": Constraint(Op.EQ, "x")}
        ),
        RecordFilter.of({"a": Constraint(Op.ANY, Constraint(Op.EQ, 1))}),
        RecordFilter.of({"a": Constraint(Op.IN_SET, frozenset({skey(1), skey("1")}))}),
    ]
    wires = [
        '{"a": 1}',
        '{"a": 1.0}',
        '{"a": "1"}',
        '{"a": true}',
        '{"a": [1, 2]}',
        '{"a": {"b": 1.5}, "c": "x"}',
        '{"a.b": 1, "c": "x"}',
        '{"a": {"b": 3}, "c": "x"}',
        '{"a": -0.0}',
        '{"a": 9007199254740993}',
    ]
    check(index_of(fs), wires * 3, valid=True)


@pytest.mark.parametrize("budget", [column_matching.PAIR_BUDGET, 7])
def test_numeric_anchors_on_a_grid(budget, monkeypatch):
    """Filters anchored by a range alone (sorted ends), by a number, and both, against
    values around every end: closed and open ends, ±inf, -0.0, ints and floats, nulls;
    candidate pairs checked at once, and in blocks of a few rows."""
    monkeypatch.setattr(column_matching, "PAIR_BUDGET", budget)
    ends = [-2, -0.0, 0, 0.5, 1, 2**53]
    cs = [Constraint(op, x) for op in (Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE) for x in ends]
    cs += [
        Constraint(Op.IN_RANGE, Interval(lo, hi, lc, hc))
        for lo in (float("-inf"), -2, 0)
        for hi in (0, 1, float("inf"))
        for lc in (True, False)
        for hc in (True, False)
    ]
    cs += [Constraint(Op.IN_SET, frozenset({skey(0), skey(1.0), skey("0")}))]
    fs = [RecordFilter.of({"a": c}) for c in cs]
    fs += [RecordFilter.of({"a": c, "b": Constraint(Op.LE, 0)}) for c in cs[:12]]
    values = [-3, -2, -1.5, -0.0, 0, 0.25, 0.5, 1, 1.0, 2, 2**53, 1e308, -1e308, None, "0", True]
    wires = [json.dumps({"a": v, "b": w}) for v in values for w in (-1, 0.0, 1, None)]
    wires += [json.dumps({"b": 0}), json.dumps({"c": 1})]
    check(index_of(fs), wires, valid=True)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    xs=st.lists(
        st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**60), 2**60),
        min_size=1,
        max_size=20,
    )
)
def test_numbers_read_by_arrow_equal_pythons(xs):
    """Arrow's float parsing rounds as Python's: each value equals its own constant and
    lies on the right side of its neighbours' bounds."""
    fs = [RecordFilter.of({"a": Constraint(op, x)}) for x in xs[:5] for op in (Op.EQ, Op.LT, Op.GE)]
    check(index_of(fs), [json.dumps({"a": x}) for x in xs] * 2, valid=True)


def test_string_equalities_beside_the_anchor():
    """Filters with several equalities: one anchors, the others are compared as codes of
    the chunk's dictionary; values of other kinds, nulls and missing attributes never
    equal a string."""
    import itertools

    strs = ["x", "y", ""]
    fs = [
        RecordFilter.of({"a": Constraint(Op.EQ, u), "b": Constraint(Op.EQ, v)})
        for u, v in itertools.product(strs + [1], strs)
    ]
    fs += [
        RecordFilter.of(
            {"a": Constraint(Op.EQ, "x"), "b": Constraint(Op.EQ, "x"), "c": Constraint(Op.EQ, v)}
        )
        for v in strs
    ]
    fs += [RecordFilter.of({"a": Constraint(Op.GE, 0), "c": Constraint(Op.EQ, "y")})]
    index = index_of(fs)
    a = ["x", "y", "", None, "missing"]
    c = ["x", "y", None, "missing"]
    for b in (["x", "y", "", "z"], [1, 1.5, 0], [True, False]):  # one type per column
        rows = [
            {k: v for k, v in zip("abc", vs) if v != "missing"}
            for vs in itertools.product(a, b + [None, "missing"], c)
        ]
        wires = [json.dumps(r) for r in rows if r]  # {} is refused
        with mock.patch.object(columnar, "match_rows", wraps=columnar.match_rows) as slow:
            check(index, wires, valid=True)
        # only the rows without a non-null value take the per-row path
        assert [i for call in slow.call_args_list for i in call.args[2]] == [
            i for i, w in enumerate(wires) if set(json.loads(w).values()) <= {None}
        ]


def test_lists_in_whole_chunks():
    """Chunks where an attribute holds lists in every row (Arrow parses them as one list
    column; such rows take the per-row path, Arrow's lists are not trusted)."""
    fs = [
        RecordFilter.of({"a": Constraint(Op.ANY, Constraint(Op.EQ, 1))}),
        RecordFilter.of({"a": Constraint(Op.CONTAINS, skey(2))}),
        RecordFilter.of({"a": Constraint(Op.ANY, Constraint(Op.NOT_EXISTS))}),
        RecordFilter.of({"a": Constraint(Op.EXISTS), "b": Constraint(Op.EQ, "x")}),
    ]
    wires = [
        '{"a": [1, 2], "b": "x"}',
        '{"a": [3]}',
        '{"a": []}',
        '{"a": [1.0], "b": "y"}',
        '{"a": null, "b": "x"}',
        '{"b": "x"}',
        '{"a": [2, 2.5]}',
        '{"a": [null, 1]}',
    ]
    check(index_of(fs), wires * 4, valid=True)


# -- the quotes workload -----------------------------------------------------------------
def test_quotes_workload_equals_the_per_row_answer():
    from pubsift.models.records.workload import (
        QUOTES_1YR,
        Mix,
        load_quotes,
        sample_events,
        subscriptions,
    )

    path = DATA / QUOTES_1YR
    if not path.is_file():
        pytest.skip(f"S&P 500 quotes not found at {path.resolve()} (../shared/data)")
    quotes = load_quotes(path)  # sorted by symbol: draw over the whole file
    subs = subscriptions(
        quotes, 3000, seed=3, mix=Mix(quote=0.5, interval=0.5, prefix=0, portfolio=0, volume=0)
    )
    subs += subscriptions(quotes, 300, seed=4)  # prefixes, portfolios, volumes too
    index = index_of(subs)
    wires = [json.dumps(MODEL.dump_event(e)) for e in sample_events(quotes, 4000, seed=5)]
    want = per_row(index, wires)
    assert len(want) > 4000  # the workload delivers
    with mock.patch.object(columnar, "match_rows", wraps=columnar.match_rows) as slow:
        assert sorted(batch(index, pa.array(wires))) == sorted(want)
    assert not slow.called  # every quote is answered column-wise


# -- the index around the batch -----------------------------------------------------------
def _small_index():
    return index_of(
        [
            RecordFilter.of({"s": Constraint(Op.EQ, "A")}),
            RecordFilter.of({"s": Constraint(Op.EQ, "A"), "p": Constraint(Op.LT, 10)}),
            RecordFilter.of({"p": Constraint(Op.GE, 5)}),
        ]
    )


WIRES = ['{"s": "A", "p": 4}', '{"s": "B", "p": 7}', '{"s": "A", "p": 12.5}', '{"p": null}']


def test_empty_batch():
    for wires in ([], pa.array([], pa.string()), pa.chunked_array([], pa.string())):
        rows, keys = _small_index().match_wire_batch(wires)
        assert len(rows) == len(keys) == 0 and rows.dtype == np.int64


def test_chunked_and_object_keys():
    index = index_of([RecordFilter.of({"s": Constraint(Op.EQ, "A")})], keys=["alice"])
    rows, keys = index.match_wire_batch(pa.chunked_array([WIRES[:2], WIRES[2:]]))
    assert rows.tolist() == [0, 2] and keys.dtype == object and keys.tolist() == ["alice"] * 2
    rows, keys = _small_index().match_wire_batch(WIRES)
    assert keys.dtype == np.int64
    assert list(zip(rows.tolist(), keys.tolist())) == sorted(per_row(_small_index(), WIRES))


def test_sliced_arrays():
    """A column of a record batch may be a slice of a larger array (offsets)."""
    index = _small_index()
    arr = pa.array(["junk"] * 3 + WIRES * 3 + ["junk"], pa.string()).slice(3, len(WIRES) * 3)
    check(index, arr, valid=True)
    check(index, pa.array(WIRES * 3, pa.large_string()).slice(2, 5), valid=True)


def test_index_changed_after_a_batch():
    index = _small_index()
    check(index, WIRES, valid=True)
    f = RecordFilter.of({"p": Constraint(Op.IN_RANGE, Interval(6, 8))})
    index.add(f, 7)
    assert (1, 7) in batch(index, WIRES)
    check(index, WIRES, valid=True)
    index.remove(f, 7)
    index.remove(RecordFilter.of({"s": Constraint(Op.EQ, "A")}), 0)
    assert all(k not in (0, 7) for _, k in batch(index, WIRES))
    check(index, WIRES, valid=True)


def test_pickled_index_gives_the_same_answers():
    """The Spark job ships the index in a closure, pickled by pyspark's cloudpickle (the
    index's compiled tests are closures, which plain pickle refuses)."""
    cloudpickle = pytest.importorskip("pyspark.cloudpickle")
    index = _small_index()
    before = batch(index, WIRES)
    assert index._columnar is not None
    copy = pickle.loads(cloudpickle.dumps(index))
    assert copy._columnar is None  # the plan is not shipped
    assert batch(copy, WIRES) == before
    copy.add(RecordFilter.of({"s": Constraint(Op.EQ, "B")}), 9)
    assert (1, 9) in batch(copy, WIRES) and (1, 9) not in batch(index, WIRES)
    ship = cloudpickle.dumps(lambda ws: index.match_wire_batch(ws))
    assert batch(pickle.loads(ship).__closure__[0].cell_contents, WIRES) == before


def test_bad_wire_raises_event_error_naming_its_row():
    index = _small_index()
    for bad in ("{", '{"p": NaN}', "[1]", '{"p": [{"q": 1}], "p.q": 2}', None):
        wires = WIRES + [bad] + WIRES
        with pytest.raises(EventError, match="row 4"):
            index.match_wire_batch(wires)
        with pytest.raises(EventError, match="row 4"):
            index.match_wire_batch(pa.array(wires, pa.string()))
    with pytest.raises(EventError, match="row 1"):
        index.match_wire_batch(['{"s": "A"}', b"{"])


def test_without_pyarrow_the_per_row_loop():
    index = _small_index()
    want = batch(index, WIRES)
    with mock.patch.dict(sys.modules, {"pyarrow": None, "pyarrow.compute": None}):
        assert batch(index, WIRES) == want
        with pytest.raises(EventError, match="row 0"):
            index.match_wire_batch(["{"])


def test_split_chunks_keep_the_good_rows_columnar():
    """A batch with one bad text: Arrow refuses the chunk, the halves are parsed again,
    and only a few rows take the per-row path."""
    index = _small_index()
    wires = WIRES[:3] * 50 + ['{"s": {"t": 1}}'] + WIRES[:3] * 50  # Arrow: a struct among strings
    calls = []
    real = columnar.match_rows

    def spy(ix, ws, rows=None):
        calls.append(len(rows))
        return real(ix, ws, rows)

    with mock.patch.object(columnar, "match_rows", spy):
        check(index, wires, valid=True)
    assert calls == [calls[0]] and calls[0] < columnar.MIN_CHUNK  # not all 301 rows


# -- match_batch over an Arrow table: one event per row, nulls missing ---------------------
def _drop_nulls(v):
    if isinstance(v, dict):
        return {k: _drop_nulls(x) for k, x in v.items() if x is not None}
    return v


def per_row_table(index, table):
    """The oracle: ``match(load_event(row))`` with the row's nulls left out, or the index
    of the first row ``load_event`` refuses."""
    out = []
    for i, row in enumerate(table.to_pylist()):
        try:
            e = MODEL.load_event(_drop_nulls(row))
        except EventError:
            return i
        out.append(index.match(e))
    return out


def check_table(index, table):
    want = per_row_table(index, table)
    if isinstance(want, int):
        with pytest.raises(EventError) as err:
            index.match_batch(table)
        assert f"row {want}" in str(err.value), (str(err.value), want)
        return
    assert index.match_batch(table) == want
    for batch_ in table.to_batches():
        index.match_batch(batch_)  # a RecordBatch is taken too
    if table.num_rows:
        assert index.match_batch(pa.Table.from_batches(table.to_batches())) == want


def _table(rows):
    try:
        return pa.Table.from_pylist(rows)
    except (pa.ArrowException, OverflowError, ValueError, TypeError):
        return None  # Arrow has no column type for these rows


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    fs=st.lists(record_filters, min_size=1, max_size=8),
    wires=typed_batches(),
    keys=st.sampled_from([None, ["k", 2, "k"]]),
)
def test_tables_equal_the_per_row_answer(fs, wires, keys):
    table = _table([json.loads(w) for w in wires])
    if table is not None:
        check_table(index_of(fs, keys), table)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(fs=st.lists(record_filters, min_size=1, max_size=8), objs=st.lists(objects, max_size=20))
def test_any_table_arrow_builds_equals_the_per_row_answer(fs, objs):
    """Mixed kinds, lists, nested structs, big integers: what Arrow types is answered
    column-wise or row by row, always as the per-row path answers."""
    table = _table(objs)
    if table is not None:
        check_table(index_of(fs), table)


close_filters = st.dictionaries(st.sampled_from(["a", "b"]), targeted, min_size=1, max_size=2).map(
    RecordFilter.of
)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    fs=st.lists(close_filters, min_size=1, max_size=10),
    a=st.lists(pool | st.lists(pool, max_size=2), min_size=1, max_size=30),
    b_kind=st.sampled_from(["int", "float", "str", "bool"]),
    data=st.data(),
)
def test_columns_where_values_meet_constants(fs, a, b_kind, data):
    """Filters and rows on two attributes drawn from one small pool, so that constants
    and values meet (booleans against numbers, 2^53 + 1 against its float, nulls)."""
    b = data.draw(st.lists(KINDS[b_kind] | st.none(), min_size=len(a), max_size=len(a)))
    table = _table([{"a": x, "b": y} for x, y in zip(a, b)])
    if table is not None:
        check_table(index_of(fs, ["k", 2, "k"]), table)


def test_table_column_types_are_normalized_or_answered_per_row():
    index = _small_index()
    index.add(RecordFilter.of({"q": Constraint(Op.EXISTS)}), "q")
    rows = [{"s": "A", "p": 4}, {"s": "B", "p": 7}, {"s": "A", "p": 12}, {"s": "A"}]
    base = pa.Table.from_pylist(rows)
    for table in (
        base,
        base.cast(pa.schema([("s", pa.string()), ("p", pa.int32())])),
        base.cast(pa.schema([("s", pa.large_string()), ("p", pa.float32())])),
        pa.table({"s": pa.array(["A", "B", "A", "A"]).dictionary_encode(), "p": base["p"]}),
        pa.table({"s": base["s"], "p": pa.array([4, 7, 12, None], pa.uint64())}),
        pa.table({"s": base["s"], "p": base["p"], "q": pa.array([None, None, None, 1.5])}),
    ):
        check_table(index, table)
    assert index.match_batch(base) == [{0, 1}, {2}, {0, 2}, {0}]


def test_table_rows_load_event_refuses_raise_naming_the_row():
    index = _small_index()
    for bad in (
        pa.table({"s": ["A", "B"], "q": pa.array([None, {"": 1}], pa.struct([("", pa.int64())]))}),
        pa.table({"s": ["A", "B"], "p": [1.0, float("nan")]}),
        pa.table({"s": ["A", "B"], "p": [1.0, float("inf")]}),
        pa.table({"s": ["A", "B"], "t": pa.array([None, 1], pa.timestamp("s"))}),
    ):
        with pytest.raises(EventError, match="row 1"):
            index.match_batch(bad)
    with pytest.raises(EventError, match=r"'t' holds a datetime.*row 1"):
        index.match_batch(pa.table({"s": ["A", "B"], "t": pa.array([None, 1], pa.timestamp("s"))}))
    assert index.match_batch(pa.table({"s": pa.array([], pa.string())})) == []


def test_table_on_the_quotes_workload_is_answered_column_wise():
    from pubsift.models.records.workload import (
        QUOTES_1YR,
        Mix,
        load_quotes,
        sample_events,
        subscriptions,
    )

    path = DATA / QUOTES_1YR
    if not path.is_file():
        pytest.skip(f"S&P 500 quotes not found at {path.resolve()} (../shared/data)")
    quotes = load_quotes(path)
    index = index_of(subscriptions(quotes, 3000, seed=3, mix=Mix()))
    evs = sample_events(quotes, 3000, seed=5)
    table = pa.Table.from_pylist([MODEL.dump_event(e) for e in evs])
    with mock.patch.object(columnar, "_row_event", wraps=columnar._row_event) as slow:
        got = index.match_batch(table)
    assert not slow.called
    assert got == [index.match(e) for e in evs] and sum(map(len, got)) > 3000


def test_each_way_is_the_one_used(matching):
    """Under the compiled walk a batch's rows are walked (``walk_rows``), else matched
    column-wise (``_match_view``); the other is not called."""
    index = _small_index()
    table = pa.table({"s": ["A", "B", "A"], "p": [1.0, 2.0, None]})
    walked = mock.patch.object(columnar, "walk_rows", wraps=columnar.walk_rows)
    viewed = mock.patch.object(columnar, "match_view", wraps=columnar.match_view)
    with walked as w, viewed as v:
        got = index.match_batch(table)
        index.match_wire_batch(WIRES)
    assert got == per_row_table(index, table)
    assert (w.called, v.called) == ((True, False) if matching == "walked" else (False, True))


def test_a_null_that_a_filter_tells_from_missing_is_read_from_the_text(matching):
    """``exists`` tells JSON null from a missing attribute, which Arrow reads alike: the
    rows concerned are answered from their text, the others from the columns."""
    index = index_of(
        [
            RecordFilter.of({"a": Constraint(Op.EXISTS)}),
            RecordFilter.of({"b": Constraint(Op.EQ, 1)}),
        ]
    )
    wires = ['{"a": null, "b": 1}', '{"b": 1}', '{"a": 2, "b": null}', '{"c": {"a": null}}']
    check(index, wires)
    calls = []
    real = columnar.match_rows

    def spy(ix, ws, rows=None):
        calls.append(rows)
        return real(ix, ws, rows)

    with mock.patch.object(columnar, "match_rows", spy):
        check(index, wires)
    if matching == "walked":
        # a: null in row 0, missing in rows 1 and 3 (per chunk Arrow parsed)
        assert sorted(r for rows in calls for r in rows) == [0, 1, 3]


def test_the_faster_way_is_chosen(matching, monkeypatch):
    """``Ways``: each way tried (its first measurement a warm-up), then the one with the
    lower CPU time per row; the other tried again once the way in use has answered
    PROBE_ROWS rows, the gap doubling while it stays slower (up to MAX_GAP_ROWS) and
    back to PROBE_ROWS on a switch; small runs measured together; column-wise only
    without the compiled walk."""
    w_, c_ = ways.WALK, ways.COLUMNS
    if matching == "columnar":
        with mock.patch.object(plans, "ENGINE", None):
            assert ways.Ways().pick() == (c_, ways.Ways.RUN[c_])
        return
    clock = iter(range(0, 10**6, 1))
    monkeypatch.setattr(ways.time, "thread_time", lambda: next(clock))
    monkeypatch.setattr(ways.Ways, "PROBE_ROWS", 16_000)
    w = ways.Ways()
    seen = []
    cost = {w_: 1, c_: 3}  # clock ticks per timed run

    def run(k: int) -> None:
        for _ in range(k):
            way, size = w.pick()
            assert size == (w.TRY if way == w.trying or w.cost[way] is None else w.RUN)[way]
            seen.append(way)
            with w.timed(way, 1000):
                for _ in range(cost[way] - 1):
                    next(clock)

    run(4 + 17 + 33 + 65 + 5)
    assert seen[:4] == [w_, w_, c_, c_]  # each: a warm-up, then a kept measurement
    tries = [i for i, x in enumerate(seen) if x == c_ and i >= 4]
    assert tries == [4 + 16, 4 + 17 + 32, 4 + 17 + 33 + 64]  # after 16, 32, 64 runs
    assert w.cost == {w_: 1 / 1000, c_: 3 / 1000} and w.gap == 128_000
    # the walk becomes slower than the columns' latest figure: a switch, and the walk is
    # tried again after 16, 32, 64 runs
    cost[c_] = 1
    cost[w_] = 5
    seen.clear()
    run(200)
    first = seen.index(c_)
    back = [i - first for i, x in enumerate(seen) if x == w_ and i > first]
    assert back[:3] == [16, 16 + 33, 16 + 33 + 65] and w.best() == c_
    assert ways.Ways(c_).pick()[0] == c_
    # runs too small to measure alone are measured together
    small = ways.Ways()
    for _ in range(4):
        with small.timed(w_, ways.Ways.MIN_ROWS // 2 - 1):
            pass
    # runs 1-3 (93 rows): the warm-up; run 4: 31 rows, not yet a measurement
    assert small.cost[w_] is None and small.warm[w_]
    with small.timed(w_, 40):
        pass
    assert small.cost[w_] is not None  # 31 + 40 rows


def test_a_long_table_is_matched_in_runs(matching):
    """Rows are matched run by run, each run one way's and measured apart: the walk's
    runs hold RUN rows, column-wise matching takes the whole chunk; answers equal the
    per-row path's, a slow row among them included."""
    index = _small_index()
    run = ways.Ways.RUN[ways.WALK]
    n = 3 * run + 17
    s = (["A", "B", "C"] * n)[:n]
    p = [None if i % 7 == 0 else float(i % 9) for i in range(n)]
    q = [None] * n
    q[5] = 2**60  # past 2^53: a row the columns do not trust, answered per row
    table = pa.table({"s": s, "p": p, "q": q})
    wires = [json.dumps(r) for r in table.to_pylist()]
    charged = []
    real = ways.Ways.timed

    def spy(self, way, rows):
        charged.append(rows)
        return real(self, way, rows)

    with mock.patch.object(ways.Ways, "timed", spy):
        assert index.match_batch(table) == per_row_table(index, table)
        assert sorted(batch(index, wires)) == sorted(per_row(index, wires))
    runs = [run] * 3 + [16] if matching == "walked" else [n - 1]
    assert charged == runs * 2


def test_the_walk_is_charged_for_the_rows_it_reads_from_their_text(matching):
    """A wire batch where most rows hold a null that a filter tells from missing: the
    walk sends them to the per-row path, inside its timed block, so its cost per row
    counts them (the choice can not prefer a way for the work it hands on)."""
    if matching == "columnar":
        return
    index = index_of(
        [RecordFilter.of({"note": Constraint(Op.EXISTS)})]
        + [RecordFilter.of({"s": Constraint(Op.EQ, f"S{i}")}) for i in range(20)]
    )
    wires = [
        json.dumps({"s": f"S{i % 20}", **({} if i % 2 else {"note": None})}) for i in range(400)
    ]
    charged = []
    real = ways.Ways.timed

    def spy(self, way, rows):
        charged.append((way, rows))
        return real(self, way, rows)

    with mock.patch.object(ways.Ways, "timed", spy):
        check(index, wires)
    run = ways.Ways.RUN[ways.WALK]
    assert charged == [(ways.WALK, run), (ways.WALK, 400 - run)]


def test_duplicate_column_names_are_answered_per_row(matching):
    index = _small_index()
    table = pa.Table.from_arrays([pa.array(["A", "B"]), pa.array([1.0, 2.0])], ["s", "s"])
    want = per_row_table(index, table)
    if isinstance(want, int):
        with pytest.raises(EventError, match=f"row {want}"):
            index.match_batch(table)
    else:
        assert index.match_batch(table) == want


def test_match_rows_refuses_columns_changed_while_matching():
    """``_walk.match_rows`` checks the columns per row: a key whose ``__hash__`` empties
    a column (Python code runs between rows) gives ValueError, not a crash."""
    if plans.ENGINE is None:
        pytest.skip("the compiled walk is not in use")
    cols = [["x"] * 4]
    armed = [False]

    class Key:
        def __hash__(self):
            if armed[0]:
                cols[0].clear()
            return 1

        def __eq__(self, other):
            return self is other

    index = MODEL.new_index()
    for i in range(3):
        index.add(
            RecordFilter.of({"a": Constraint(Op.EQ, "x"), f"b{i}": Constraint(Op.NOT_EXISTS)}),
            Key(),
        )
    index.add(RecordFilter.of({"a": Constraint(Op.EQ, "x")}), Key())
    for _ in range(50):
        index.match(MODEL.load_event({"a": "x"}))  # plans built
    armed[0] = True
    with pytest.raises(ValueError, match="columns changed"):
        plans.ENGINE.match_rows(index._root, ["a"], cols, [0, 1, 2, 3])


def test_both_ways_give_one_answer_when_chosen_freely(matching):
    """With the choice free (both ways tried, then probes), every batch's answer equals
    the per-row answer."""
    index = _small_index()
    table = pa.table({"s": ["A", "B", "A"] * 30, "p": [1.0, 7.0, None] * 30})
    want_t = per_row_table(index, table)
    want_w = per_row(index, WIRES * 30)
    small = {ways.WALK: 16, ways.COLUMNS: 16}  # runs of both ways in one batch
    with (
        mock.patch.object(ways, "FORCE", None),
        mock.patch.object(ways.Ways, "PROBE_ROWS", 40),
        mock.patch.object(ways.Ways, "RUN", small),
        mock.patch.object(ways.Ways, "TRY", small),
    ):
        for _ in range(10):
            assert index.match_batch(table) == want_t
            assert sorted(batch(index, WIRES * 30)) == sorted(want_w)
        if matching == "walked":
            assert all(c is not None for c in ways.ways(index).cost.values())
