"""The one strict JSON policy (pubsift.core.strict_json) and every entry point that reads
JSON text under it: a duplicate key, NaN/Infinity, a float overflowing to infinity, too
deep a nesting and too long an integer are refused with a clear error; big integers are
exact; the fast path (orjson) and the standard library agree."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pubsift.adapters.broker import frames
from pubsift.core import load_model
from pubsift.core.errors import EventError, FilterSyntaxError
from pubsift.core.strict_json import MAX_INT_DIGITS, JsonError, loads

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(JSON_VALUES, st.booleans(), st.booleans())
def test_loads_reads_what_the_standard_library_reads(value, as_bytes, spaced):
    text = (
        json.dumps(value, ensure_ascii=False)
        if spaced
        else json.dumps(value, separators=(",", ":"))
    )
    data = text.encode("utf-8", "surrogatepass") if as_bytes else text
    try:
        data.decode("utf-8") if as_bytes else None
    except UnicodeDecodeError:
        return  # lone surrogates: not UTF-8 bytes
    assert loads(data) == json.loads(text)


@given(st.dictionaries(st.text(max_size=4), JSON_VALUES, min_size=1, max_size=4), st.data())
def test_a_key_given_twice_is_refused_wherever_it_is(obj, data):
    key = data.draw(st.sampled_from(sorted(obj)))
    again = data.draw(JSON_VALUES)
    body = json.dumps(obj)[:-1] + ", " + json.dumps(key) + ": " + json.dumps(again) + "}"
    tight = (",", ":")  # no space outside strings (a key may be spaces itself)
    compact = (
        json.dumps(obj, separators=tight)[:-1]
        + ","
        + json.dumps(key)
        + ":"
        + json.dumps(again, separators=tight)
        + "}"
    )
    for text in (body, '{"outer": [1, ' + body + "]}", compact):
        with pytest.raises(JsonError, match="duplicate key") as exc:
            loads(text)
        assert exc.value.kind == "duplicate" and exc.value.key == key
        with pytest.raises(JsonError, match="duplicate key"):
            loads(text.encode())


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ('{"a": NaN}', "constant"),
        ("[Infinity]", "constant"),
        ("[-Infinity]", "constant"),
        ("[1e309]", "number"),
        ("[" + "9" * (MAX_INT_DIGITS + 1) + "]", "integer"),
        ("[" * 600 + "]" * 600, "depth"),
        ("[" * 100_000, "depth"),
        ('{"a": 1,}', "syntax"),
        # an escaped colon cannot hide a duplicate from the count of colons
        ('{"a": 1, "b": "\\u003a", "a": 2}', "duplicate"),
    ],
)
def test_what_the_policy_refuses(text, kind):
    for data in (text, text.encode()):
        with pytest.raises(JsonError) as exc:
            loads(data)
        assert exc.value.kind == kind, exc.value
        assert str(exc.value).startswith("invalid JSON: ")


def test_big_integers_are_exact_and_depth_is_the_callers():
    assert loads("[123456789012345678901234567890]") == [123456789012345678901234567890]
    assert loads("[" * 600 + "]" * 600, max_depth=None) is not None
    with pytest.raises(JsonError, match="more than 3 levels"):
        loads("[[[[1]]]]", max_depth=3)


# -- every entry point refuses a duplicate key, with a clear error -------------------------


def test_records_parse_event_of_text_refuses_a_duplicate_key():
    records = load_model("records")
    with pytest.raises(EventError, match="duplicate key 'a' in a JSON object of the event"):
        records.parse_event('{"b": 1, "a": 1, "a": 2}')
    with pytest.raises(EventError, match="duplicate key 'x'"):
        records.parse_event(b'{"a": {"x": 1, "x": 1}}')


def test_eventbridge_patterns_refuse_a_duplicate_key():
    records = load_model("records")
    with pytest.raises(
        FilterSyntaxError, match="duplicate key 'a' in a JSON object of the pattern"
    ):
        records.parse_filter('{"a": [1], "a": [2]}')


def test_concepts_events_and_filters_refuse_a_duplicate_key():
    concepts = load_model("concepts")
    event = '{"concept": "StockQuote", "concept": "StockQuote", "value": {}}'
    with pytest.raises(EventError, match='bad JSON: duplicate key "concept"'):
        concepts.parse_event(event)
    with pytest.raises(EventError, match='bad JSON: duplicate key "concept"'):
        concepts.parse_event(event.encode())
    with pytest.raises(FilterSyntaxError, match='bad JSON: duplicate key "concept"'):
        concepts.parse_filter('{"concept": "StockQuote", "concept": "Price"}')


def test_broker_frames_refuse_a_duplicate_key():
    with pytest.raises(frames.FrameError, match='body is not JSON: duplicate key "kind"') as exc:
        frames.decode(b'{"kind": "pub", "kind": "sub"}')
    assert exc.value.reason == "bad-frame"
    body = b'{"kind":"pub","model":"records","event":{"a":1,"a":2}}'
    with pytest.raises(frames.FrameError, match='duplicate key "a"'):
        frames.decode(body)


def test_a_batch_frame_with_a_duplicate_key_in_an_event_or_member_is_a_bad_frame():
    event = b'{"price":1,"price":2}'
    body = b'{"kind":"pubs","model":"records","pubs":[[["p",1],' + event + b"]]}"
    with pytest.raises(frames.FrameError, match='duplicate key "price"'):
        frames.decode(body)
    got = frames.decode(body, cut=True)  # the cutter leaves the events as bytes
    if isinstance(got["pubs"], frames.Cut):
        with pytest.raises(frames.FrameError, match='duplicate key "price"'):
            frames.load_cut_event(got["pubs"], got["pubs"][0][2])
    member = b'{"kind":"pubs","model":"records","model":"x","pubs":[[["p",1],{"a":1}]]}'
    for cut in (False, True):
        with pytest.raises(frames.FrameError, match='duplicate key "model"'):
            frames.decode(member, cut=cut)
