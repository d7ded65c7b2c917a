"""The compiled check of a flat event (models/records/_flat.pyx) answers as the Python one
(``events._flat_scalars``) on every mapping, and ``load_event`` with it gives the records
the Python path gives."""

from __future__ import annotations

import json
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


# -- the flat event of a JSON text (flat_event, RecordsModel.load_wire) ----------------
wire_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**63, -(2**63) - 1, 10**18, 10**18 - 1, -(10**17)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.sampled_from(["\ud800", "ok\udc00", "ümlaut", "", "a\\b", 'q"']),
)
texts = st.one_of(
    # JSON texts of mappings, written as the brokers' clients write them and otherwise
    st.builds(
        lambda m, indent: json.dumps(m, ensure_ascii=False, indent=indent),
        st.dictionaries(keys, wire_scalars, max_size=5),
        st.sampled_from([None, 1]),
    ),
    st.dictionaries(
        keys,
        st.one_of(
            wire_scalars,
            st.lists(wire_scalars, max_size=2),
            st.dictionaries(st.text(max_size=2), wire_scalars, max_size=2),
        ),
        max_size=4,
    ).map(json.dumps),
    st.text(alphabet='{}[]":,.-+eE0123456789 \\nrtuaslfx\x00\xe9', max_size=30),
)


def reference(data: bytes) -> dict | None:
    """What the general path reads: the mapping of ``json.loads``, if flat."""
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return events._flat_scalars(obj) if type(obj) is dict else None


@given(texts, st.sampled_from(["strict", "surrogatepass"]))
def test_the_flat_event_of_a_text_is_the_general_paths_or_none(text: str, how: str) -> None:
    data = text.encode("utf-8", how) if how == "surrogatepass" else text.encode("utf-8", "replace")
    got = flat.flat_event(data)
    if got is not None:
        assert same(got, reference(data)), (data, got)
        record = load_model("records").load_wire(data)
        assert record == load_model("records").load_event(json.loads(data))


def test_the_edges_of_the_flat_event() -> None:
    f = flat.flat_event
    assert f(b'{"s":"S1","p":12.5,"i":3,"t":true,"n":null}') == {
        "s": "S1",
        "p": 12.5,
        "i": 3,
        "t": True,
        "n": None,
    }
    assert f(b' {\n "a" : -0 , "b":-0.0 ,"c":1e-400,"d":2.5E+3 } ') == {
        "a": 0,
        "b": -0.0,
        "c": 0.0,
        "d": 2500.0,
    }
    assert f(b'{"a":123456789012345678}') == {"a": 123456789012345678}
    assert f(b'{"a":"\xc3\xa9"}') == {"a": "é"}
    # left to the general path: it reads them, or says what is wrong
    for text in (
        b"{}",
        b'{"":1}',
        b'{"a":1234567890123456789}',
        b'{"a":"x\\n"}',
        b'{"a":1,"a":2}',
        b'{"a":[1]}',
        b'{"a":{"b":1}}',
        b'{"a":1e400}',
        b'{"a":NaN}',
        b'{"a":01}',
        b'{"a":1.}',
        b'{"a":.5}',
        b'{"a":1}x',
        b'{"a":1,}',
        b'{"a":"\xff"}',
        b'{"a":"\xed\xa0\x80"}',
        b'{"a":"\x01"}',
        b'{"a":tru}',
        b"[1]",
        b"",
        b'{"a"',
        b'{"a":-}',
        b'{"a":1e}',
    ):
        assert f(text) is None, text
    # the cache of short texts gives back equal strings, never a wrong one
    seen = [f(b'{"k%d":"v%d"}' % (i, i)) for i in range(3000)]
    assert all(s == {f"k{i}": f"v{i}"} for i, s in enumerate(seen))
    assert load_model("records").load_wire("not bytes") is None  # type: ignore[arg-type]


@given(
    st.from_regex(r"\A-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,24})?([eE][+-]?[0-9]{1,3})?\Z"),
)
def test_numbers_are_read_as_python_reads_them(number: str) -> None:
    got = flat.flat_event(b'{"x":%s}' % number.encode())
    want = json.loads(number)
    too_long = type(want) is int and len(number.lstrip("-")) > 18
    if too_long or (type(want) is float and math.isinf(want)):
        assert got is None
    else:
        assert got is not None and same(got["x"], want), (number, got, want)


@given(
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False).map(repr),
        st.builds(
            lambda w, e: f"{w}e{e}",
            st.integers(10**14, 10**19 - 1),
            st.integers(-90, 90),
        ),
        st.builds(
            lambda a, b: f"{a}.{b}",
            st.integers(0, 10**10),
            st.integers(0, 10**9).map(lambda b: f"{b:09d}"),
        ),
    )
)
def test_floats_are_read_to_the_nearest_double(text: str) -> None:
    """The one-pass reader's own float path (Clinger, Eisel-Lemire) and orjson's beyond
    it give the double Python's float() gives, for the shortest forms and long ones."""
    got = flat.flat_event(b'{"x":%s}' % text.encode())
    want = float(text)
    assert got is not None and same(got["x"], want), (text, got, want)
