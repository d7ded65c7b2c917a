"""``RecordsIndex.match_wire_batch`` read by the selective scan, by Arrow, or by both in
one batch as :class:`wire_batches.Choice` picks: always the per-row answer of
``load_event(strict_json.loads(text))`` (or its first refusal, naming the row: a key
twice is refused, as everywhere), for lists, string and large-string arrays, sliced and
chunked arrays and arrays with nulls."""

from __future__ import annotations

import json
import re
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pubsift.core import strict_json
from pubsift.core.errors import EventError
from pubsift.models.records import RecordsModel, selection, testing, wire_batches

pytestmark = pytest.mark.skipif(
    selection._scan is None, reason="the compiled scanner is not built (Arrow's way only)"
)

MODEL = RecordsModel(testing.SCHEMA)
PLAIN = RecordsModel()  # no schema: the row loop calls the scan and the walk itself


def index_of(fs, model=MODEL, key=lambda i: i):
    index = model.new_index()
    for i, f in enumerate(fs):
        index.add(f, key(i))
    return index


#: keys of every kind the answer's array holds: ints of int64's range (an int64 array,
#: the compiled loop writing them itself), beyond it, and strings (object arrays)
KEYS = [lambda i: i, lambda i: 2**63 + i, lambda i: f"k{i}"]


def per_row(index, wires):
    """The oracle: (row, key) pairs, or the row of the first refused wire."""
    out = []
    for i, w in enumerate(wires):
        try:
            e = index.model.load_event(strict_json.loads(w))
        except (ValueError, TypeError, RecursionError, EventError):
            return i
        out.extend((i, k) for k in index.match(e))
    return sorted(out, key=repr)


def answer(index, wires):
    try:
        rows, keys = index.match_wire_batch(wires)
    except EventError as exc:
        return str(exc)
    assert rows.dtype == np.int64 and len(rows) == len(keys)
    assert (np.diff(rows) >= 0).all(), "rows ascending"
    pairs = list(zip(rows.tolist(), keys.tolist()))
    assert len(pairs) == len(set(pairs)), "each (row, key) pair once"
    return sorted(pairs, key=repr)


def check(index, texts, arrays):
    want = per_row(index, texts)
    for wires in arrays:
        got = answer(index, wires)
        if isinstance(want, int):
            assert isinstance(got, str) and re.search(rf"\brow {want}\b", got), (got, want)
        else:
            assert got == want


def forms(texts):
    """The same texts as a list, string arrays, a slice of a longer array, chunks."""
    out: list = [texts]
    if any(t is None for t in texts):
        return [pa.array(texts, pa.string()), pa.array(texts, pa.large_string())]
    out += [pa.array(texts, pa.string()), pa.array(texts, pa.large_string())]
    out.append(pa.array(['{"pad": 1}', *texts, '{"pad": 2}'], pa.string()).slice(1, len(texts)))
    half = len(texts) // 2
    out.append(pa.chunked_array([texts[:half], texts[half:]], pa.string()))
    return out


_BROKEN = st.sampled_from(
    [
        '{"a": 1, "a": 2}',
        '{"a": NaN}',
        "[1]",
        "{",
        '{"z": 1e400}',
        '{"z": ' + "1" * 400 + "e-50}",
        '{"a.b": 1, "a": {"b": 2}}',
    ]
)


@st.composite
def texts(draw):
    events = draw(st.lists(testing.events(testing.SCHEMA), max_size=12))
    out = [json.dumps(e.raw, ensure_ascii=draw(st.booleans())) for e in events]
    if draw(st.integers(0, 3)) == 0:
        out.insert(draw(st.integers(0, len(out))), draw(_BROKEN))
    return out


@pytest.fixture(params=[wire_batches.SCAN, wire_batches.ARROW, "mixed"])
def way(request):
    """Forced to one way, or chosen with tiny slices (both ways in one batch)."""
    if request.param == "mixed":
        with (
            mock.patch.object(wire_batches.Choice, "TRY", {"scan": 2, "arrow": 3}),
            mock.patch.object(wire_batches.Choice, "GAP", 4),
        ):
            yield request.param
    else:
        with mock.patch.object(wire_batches, "FORCE", request.param):
            yield request.param


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(fs=st.lists(testing.filters(testing.SCHEMA), min_size=1, max_size=5), batch=texts())
def test_every_way_gives_the_per_row_answer(way, fs, batch):
    for model in (MODEL, PLAIN):  # with integer attributes to check, and without
        for key in KEYS:
            index = index_of(fs, model, key)
            for _ in range(2):  # the choice learns across batches
                check(index, batch, forms(batch))


def test_a_null_row_is_refused_naming_it(way):
    index = index_of([MODEL.parse_filter("a exists")])
    texts = ['{"a": 1}', None, '{"a": 2}']
    check(index, texts, forms(texts))


def test_citylots_shaped_batches_answer_as_per_event():
    """Events with arrays of objects and patterns through them (event-ruler's benchmark
    shape), chosen freely: the same pairs as event by event."""
    import random

    rnd = random.Random(5)
    model = RecordsModel()
    index = model.new_index()
    index.add(
        model.parse_filter({"geometry": {"coordinates": {"x": [{"numeric": ["<", 0.5]}]}}}), 0
    )
    index.add(model.parse_filter({"properties": {"STREET": [{"prefix": "A"}]}}), 1)
    index.add(model.parse_filter({"properties": {"STREET": [{"anything-but": "AB"}]}}), 2)
    texts = []
    for _ in range(3000):
        street = rnd.choice(["AB", "AC", "B", None])
        coords = [{"x": rnd.random(), "y": rnd.random()} for _ in range(rnd.randrange(0, 5))]
        texts.append(
            json.dumps({"properties": {"STREET": street}, "geometry": {"coordinates": coords}})
        )
    want = sorted((i, k) for i, t in enumerate(texts) for k in index.match(model.parse_event(t)))
    for wires in (pa.array(texts), texts):
        rows, keys = index.match_wire_batch(wires)
        assert sorted(zip(rows.tolist(), keys.tolist())) == want
    choice = index._columnar_cache()["scan_or_arrow"]
    assert (
        choice.cost[wire_batches.SCAN] is not None and choice.cost[wire_batches.ARROW] is not None
    )


@mock.patch.object(wire_batches.Choice, "GAP", 16384)
@mock.patch.object(wire_batches.Choice, "MAX_GAP", 1 << 20)
def test_the_choice_uses_the_cheaper_way_and_tries_the_other_again():
    c = wire_batches.Choice()
    costs = {wire_batches.SCAN: 1.0, wire_batches.ARROW: 3.0}
    seen: list[tuple[str, int]] = []

    def run(total):
        rows = 0
        while rows < total:
            way, size = c.pick()
            size = min(size or 10_000, 10_000)
            seen.append((way, size))
            c.record(way, costs[way] * size, size)
            rows += size

    run(400_000)
    assert [w for w, _ in seen[:4]] == ["scan", "scan", "arrow", "arrow"]  # warm, measured
    tail = seen[4:]
    by_way = {w: sum(n for v, n in tail if v == w) for w in costs}
    assert by_way["arrow"] > 0  # tried again
    assert by_way["scan"] > 20 * by_way["arrow"]  # rarely: the gap doubles
    costs[wire_batches.ARROW] = 0.1  # the events changed: Arrow's way is cheaper now
    del seen[:]
    run(2_000_000)  # within the gap a losing try set (about 100 x its extra cost)
    assert sum(n for w, n in seen[-20:] if w == "arrow") > 0.9 * sum(n for _, n in seen[-20:])


def test_a_null_slot_holding_bytes_is_refused_as_null():
    """Arrow lets a null slot of a string array keep bytes in the data buffer: the row is
    still a null (refused, naming it), never read as the text its bytes spell."""
    texts = [b'{"a": 1}', b'{"a": 2}', b'{"a": 3}']
    data = pa.py_buffer(b"".join(texts))
    offsets = pa.py_buffer(np.array([0, 8, 16, 24], dtype=np.int32).tobytes())
    validity = pa.py_buffer(bytes([0b101]))  # row 1 null
    arr = pa.Array.from_buffers(pa.string(), 3, [validity, offsets, data])
    index = index_of([MODEL.parse_filter("a exists")])
    with pytest.raises(EventError, match=r"\brow 1\b"):
        index.match_wire_batch(arr)
