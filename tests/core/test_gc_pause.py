"""``pubsift.core.gc_pause.map_paused``: the loop's answers, in order, chunk by chunk,
with the collector's state as it was before, whatever happens."""

from __future__ import annotations

import gc

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pubsift.core import gc_pause
from pubsift.core.gc_pause import map_paused


@given(xs=st.lists(st.integers()), chunk=st.integers(1, 5))
def test_equals_the_loop_in_order(xs, chunk):
    assert map_paused(lambda x: {x, x + 1}, xs, chunk) == [{x, x + 1} for x in xs]
    assert map_paused(str, iter(xs), chunk) == [str(x) for x in xs]


def test_paused_inside_each_chunk_and_resumed_after():
    seen = []
    out = map_paused(lambda x: seen.append(gc.isenabled()) or x, range(10), chunk=3)
    assert out == list(range(10)) and seen == [False] * 10
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled():
    gc.disable()
    try:
        assert map_paused(abs, [-1, 2]) == [1, 2]
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_an_exception_resumes_the_collector():
    def boom(x):
        if x == 5:
            raise ValueError("five")
        return x

    with pytest.raises(ValueError, match="five"):
        map_paused(boom, range(10), chunk=4)
    assert gc.isenabled()


def test_cycles_made_while_paused_are_collected_after(monkeypatch):
    monkeypatch.setattr(gc_pause, "CHUNK", 2)

    class Node:
        pass

    def cycle(_):
        a, b = Node(), Node()
        a.other, b.other = b, a
        return 1

    gc.collect()
    map_paused(cycle, range(6), chunk=2)
    assert gc.collect() >= 12  # the 6 cycles were left for the collector, not leaked


def test_paused_block_resumes_even_when_it_raises():
    with pytest.raises(KeyError), gc_pause.paused():
        assert not gc.isenabled()
        raise KeyError("x")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_pause.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
