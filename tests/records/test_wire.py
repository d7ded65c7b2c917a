"""JSON-safe wire forms of records filters and events (DESIGN.md §2.1: round-trip exact).

Oracle: strict kind-aware equality (``1``, ``1.0`` and ``true`` differ; ``-0.0`` keeps its
sign) after a trip through real JSON text with ``allow_nan=False``.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pubsift.core.errors import EventError, FilterSyntaxError
from pubsift.models.constraints.constraints import Constraint, Interval, Op, TypeSet
from pubsift.models.constraints.values import skey
from pubsift.models.records.events import Record
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.wire import dump_event, dump_filter, load_event, load_filter
from rstrategies import SCHEMA, filters, scalars, strict


def through_json(obj):
    return json.loads(json.dumps(obj, allow_nan=False))


@settings(max_examples=300, deadline=None)
@given(filters())
def test_filter_round_trip_is_exact(f):
    wire = dump_filter(f)
    back = load_filter(through_json(wire))
    assert strict(back) == strict(f)
    assert back == f and hash(back) == hash(f)
    assert dump_filter(back) == wire


@settings(max_examples=200, deadline=None)
@given(st.lists(scalars, min_size=1, max_size=8, unique_by=skey), st.randoms())
def test_sets_are_written_in_a_deterministic_order(values, rnd):
    keys = [skey(v) for v in values]
    shuffled = list(keys)
    rnd.shuffle(shuffled)
    a = RecordFilter.of({"x": Constraint(Op.IN_SET, frozenset(keys))})
    b = RecordFilter.of({"x": Constraint(Op.IN_SET, frozenset(shuffled))})
    assert json.dumps(dump_filter(a)) == json.dumps(dump_filter(b))


def test_wire_examples_keep_kinds_and_infinities():
    f = RecordFilter.of(
        {
            "a": Constraint(Op.EQ, True),
            "b": Constraint(Op.EQ, 1),
            "c": Constraint(Op.EQ, 1.0),
            "d": Constraint(Op.EQ, -0.0),
            "e": Constraint(Op.IN_SET, frozenset({skey(True), skey(1)})),
            "p": Constraint(Op.IN_RANGE, Interval(-math.inf, 5, False, True)),
            "q": Constraint(Op.NOT_IN_RANGE, Interval("m", None, True, False)),
            "t": Constraint(Op.INSTANCEOF, SCHEMA.types.typeset("Quote")),
            "u": Constraint(Op.CONTAINS, skey(None)),
            "v": Constraint(Op.EQ, 2**80),
        }
    )
    w = dump_filter(f)
    text = json.dumps(w, allow_nan=False)
    assert w["p"] == {
        "op": "in-range",
        "lo": {"float": "-inf"},
        "hi": 5,
        "lo_closed": False,
        "hi_closed": True,
    }
    assert w["q"]["hi"] is None
    assert w["e"] == {"op": "in", "values": [True, 1]}
    assert w["t"] == {
        "op": "instanceof",
        "type": "Quote",
        "members": sorted(SCHEMA.types.subtypes("Quote")),
    }
    back = load_filter(json.loads(text))
    assert strict(back) == strict(f)
    assert back.get("t").operand == TypeSet("Quote", SCHEMA.types.subtypes("Quote"))


@settings(max_examples=150, deadline=None)
@given(
    st.recursive(
        st.dictionaries(
            st.text(min_size=1, max_size=4).filter(lambda k: "." not in k),
            scalars | st.lists(scalars, max_size=3),
            min_size=1,
            max_size=4,
        ),
        lambda children: st.dictionaries(
            st.text(min_size=1, max_size=4).filter(lambda k: "." not in k),
            children,
            min_size=1,
            max_size=3,
        ),
        max_leaves=10,
    )
)
def test_event_round_trip(obj):
    e = Record.of(obj)
    wire = dump_event(e)
    back = load_event(through_json(wire))
    assert back == e and hash(back) == hash(e)
    assert dict(back) == dict(e)
    wire_keys = {k: type(v) for k, v in back.items()}
    assert wire_keys == {k: type(v) for k, v in e.items()}


def test_dump_event_is_a_fresh_json_object():
    e = Record.of({"a": {"b": [1, 2]}, "c": "x"})
    w = dump_event(e)
    assert w == {"a": {"b": [1, 2]}, "c": "x"}
    w["a"]["b"].append(3)
    assert dump_event(e) == {"a": {"b": [1, 2]}, "c": "x"}


BAD_FILTERS = [
    ([], "$", "is a JSON object"),
    ({"x": 3}, "$.x", 'JSON object with "op"'),
    ({"x": {"op": "like"}}, "$.x.op", "unknown op 'like'"),
    ({"x": {}}, "$.x.op", "unknown op None"),
    ({"x": {"op": "="}}, "$.x", "needs member 'value'"),
    ({"x": {"op": "exists", "value": 1}}, "$.x", "unexpected member 'value'"),
    ({"x": {"op": "<", "value": True}}, "$.x.value", "compares numbers or strings"),
    ({"x": {"op": "=", "value": [1]}}, "$.x.value", "expected a string, number"),
    ({"x": {"op": "=", "value": {"float": "nan"}}}, "$.x.value", '{"float": "inf"}'),
    ({"x": {"op": "in", "values": []}}, "$.x.values", "must not be empty"),
    ({"x": {"op": "in", "values": "ab"}}, "$.x.values", "list of scalars"),
    ({"x": {"op": "in", "values": [1, {}]}}, "$.x.values[1]", "scalar object"),
    ({"x": {"op": "prefix", "value": 3}}, "$.x.value", "expected a string"),
    (
        {"x": {"op": "in-range", "lo": 1, "hi": "a", "lo_closed": True, "hi_closed": True}},
        "$.x.hi",
        "numeric interval ends at a number",
    ),
    (
        {"x": {"op": "in-range", "lo": "a", "hi": 2, "lo_closed": True, "hi_closed": True}},
        "$.x.hi",
        "string interval ends",
    ),
    (
        {"x": {"op": "in-range", "lo": None, "hi": 2, "lo_closed": True, "hi_closed": True}},
        "$.x.lo",
        "numbers or strings",
    ),
    (
        {"x": {"op": "in-range", "lo": 1, "hi": 2, "lo_closed": 1, "hi_closed": True}},
        "$.x.lo_closed",
        "true or false",
    ),
    (
        {"x": {"op": "instanceof", "type": "Q", "members": ["R"]}},
        "$.x.members",
        "include the type itself",
    ),
    ({"x": {"op": "instanceof", "type": "Q", "members": "Q"}}, "$.x.members", "list"),
    ({"x": {"op": "instanceof", "type": 1, "members": []}}, "$.x.type", "expected a string"),
    ({"": {"op": "exists"}}, "$", "non-empty"),
    ({"detail-type": {"op": "contains"}}, "$.detail-type", "needs member 'value'"),
    ({"a b": {"op": "contains", "value": float("inf")}}, '$["a b"].value', "not JSON"),
]


@pytest.mark.parametrize(
    "obj, path, msg", BAD_FILTERS, ids=[str(i) for i in range(len(BAD_FILTERS))]
)
def test_malformed_filter_wire_input_names_the_path(obj, path, msg):
    with pytest.raises(FilterSyntaxError) as info:
        load_filter(obj)
    assert info.value.path == path
    assert msg in info.value.message
    assert path in str(info.value)


@pytest.mark.parametrize(
    "obj, msg",
    [
        ([1], "JSON object"),
        ({"a": float("nan")}, "finite"),
        ({"a": [{"b": 1}], "a.b": 2}, "given twice"),
        ({"a": {"b": object()}}, "'a.b'"),
    ],
)
def test_malformed_event_wire_input(obj, msg):
    with pytest.raises(EventError, match=msg) as info:
        load_event(obj)
    assert "wire form" in str(info.value)
