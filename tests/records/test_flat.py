"""The compiled check of a flat event (models/records/_flat.pyx) answers as the Python one
(``events._flat_scalars``) on every mapping, and ``load_event`` with it gives the records
the Python path gives."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pubsift.core import load_model
from pubsift.core.errors import EventError
from pubsift.models.records import events

flat = pytest.importorskip(
    "pubsift.models.records._flat", reason="the compiled check is not built (no compiler)"
)

keys = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["", "a", "é", "\ud800", "a\udfff", "x.y"]),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([10**4299, 10**4300, -(10**4300), 2**63, -(2**63) - 1, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.sampled_from(["\ud800", "ok\udc00", "ümlaut", ""]),
)
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.dictionaries(st.text(max_size=3), scalars, max_size=2),
    st.tuples(scalars),
    st.just(object()),
)
mappings = st.dictionaries(st.one_of(keys, st.integers(), st.none()), values, max_size=6)


def same(a: object, b: object) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


@given(mappings)
def test_the_compiled_check_answers_as_the_python_one(m: dict) -> None:
    want, got = events._flat_scalars(m), flat.flat_scalars(m)
    assert (want is None) == (got is None), (m, want, got)
    if want is not None:
        assert same(got, want) and got is not m


def test_the_edges_of_the_check() -> None:
    f = flat.flat_scalars
    assert f({}) is None
    assert f({"": 1}) is None and f({"a\ud800": 1}) is None and f({1: 1}) is None
    assert f({"a": "\udfff"}) is None and f({"a": "é"}) == {"a": "é"}
    assert f({"a": math.nan}) is None and f({"a": -math.inf}) is None
    assert f({"a": 10**4300}) is None and f({"a": 10**4299}) == {"a": 10**4299}
    assert f({"a": [1]}) is None and f({"a": {"b": 1}}) is None
    assert f({"a": True, "b": None, "c": 2**70, "d": 1.5}) is not None


@given(mappings)
def test_load_event_gives_the_record_the_python_path_gives(m: dict) -> None:
    model = load_model("records")
    try:
        want = events.Record.of(m, where="wire form")
    except EventError as exc:
        with pytest.raises(EventError) as got:
            model.load_event(m)
        assert str(got.value) == str(exc)
        return
    got_event = model.load_event(m)
    assert got_event == want and dict(got_event) == dict(want) and got_event.raw == want.raw
