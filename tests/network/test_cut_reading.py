"""A cut ``pubs``/``forwards`` frame read in one go (``wire._read_cut``, DESIGN §2.6: the
common frame read by calls that walk its lists in C) gives exactly what the pair-by-pair
loop gives: the same events, publication ids, bytes and pairs, and the same refusals, on
random frames mixing flat and nested events, bad events, other publishers' ids, aliases
and sequence numbers below 1 (hypothesis, the loop as the oracle)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pubsift.adapters.broker import frames, wire
from pubsift.core import load_model
from pubsift.models.records.selection import WireReader

MODELS = {"records": load_model("records")}

flat = st.fixed_dictionaries(
    {"x": st.integers(-5, 5)},
    optional={"s": st.sampled_from(["a", "b"]), "f": st.floats(-1, 1), "n": st.none()},
)
nested = st.fixed_dictionaries({"x": st.integers(-5, 5), "o": st.fixed_dictionaries({"y": flat})})
arrays = st.fixed_dictionaries(
    {"x": st.integers(-(2**63), 2**63 - 1), "a": st.lists(flat, max_size=2)}
)
bad = st.sampled_from([[], 3, "x", {"": 1}, {"a": {"": 2}}])
events = st.one_of(flat, flat, flat, nested, arrays, bad)
who = st.sampled_from(["c", "c", "c", "alias", "other"])
seq = st.one_of(st.integers(1, 10**6), st.integers(1, 10**6), st.sampled_from([0, -1]))
pairs = st.lists(st.tuples(who, seq, events), min_size=1, max_size=12)


def _cut(kind: str, items: list[tuple[str, int, Any]], given: bool = True) -> dict[str, Any]:
    body = orjson.dumps(
        {"kind": kind, "model": "records", "pubs": [[[w, n], e] for w, n, e in items]}
    )
    obj = frames.decode(body, cut=True)
    if given:
        assume(type(obj["pubs"]) is frames.Cut)
    else:
        assert type(obj["pubs"]) is frames.Cut  # the cutter leaves some frames to the whole read
    return obj


def _both(call: Any) -> tuple[Any, Any]:
    fast = call()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(wire, "_read_cut", lambda *a: None)
        slow = call()
    return fast, slow


def _facts(got: tuple[Any, Any]) -> tuple[Any, ...]:
    batch, refused = got
    return (
        [dict(e) for e in batch.events],
        [getattr(e, "groups", None) for e in batch.events],
        batch.pub_ids,
        batch.wires,
        batch.pairs,
        [(i, r.reason, r.message) for i, r in refused],
    )


@settings(max_examples=150, deadline=None)
@given(items=pairs, selective=st.booleans())
def test_a_pubs_frame_read_at_once_as_pair_by_pair(
    items: list[tuple[str, int, Any]], selective: bool
) -> None:
    obj = _cut("pubs", items)
    model = MODELS["records"]
    index = model.new_index()
    index.add(model.parse_filter("x >= 0"), "k")
    read = (lambda name: WireReader(model, [index])) if selective else None
    fast, slow = _both(lambda: wire.publications(obj, "c", MODELS, ("alias",), read))
    assert _facts(fast) == _facts(slow)


@settings(max_examples=100, deadline=None)
@given(items=pairs, selective=st.booleans())
def test_a_forwards_frame_read_at_once_as_pair_by_pair(
    items: list[tuple[str, int, Any]], selective: bool
) -> None:
    obj = _cut("forwards", items)
    model = MODELS["records"]
    index = model.new_index()
    index.add(model.parse_filter("x >= 0"), "k")
    read = (lambda name: WireReader(model, [index])) if selective else None
    fast, slow = _both(lambda: wire.forwards(obj, MODELS, read))
    assert _facts(fast) == _facts(slow)


def test_the_common_frame_takes_the_one_go_read() -> None:
    items = [("c", i, {"x": i}) for i in range(1, 6)]
    got = wire._read_cut(_cut("pubs", items, given=False)["pubs"], "c", MODELS["records"].load_wire)
    assert got is not None
    events, ids, wires, pairs = got
    assert ids == [("c", i) for i in range(1, 6)] and [e["x"] for e in events] == [1, 2, 3, 4, 5]
    assert wires == [b'{"x":%d}' % i for i in range(1, 6)]
    assert pairs == [b'[["c",%d],{"x":%d}]' % (i, i) for i in range(1, 6)]
    # any pair the loop treats apart sends the frame to the loop
    for odd in (("alias", 3, {"x": 3}), ("c", 0, {"x": 3}), ("c", 3, {"x": {"y": 1}})):
        cut = _cut("pubs", [*items[:2], odd], given=False)["pubs"]
        assert wire._read_cut(cut, "c", MODELS["records"].load_wire) is None
