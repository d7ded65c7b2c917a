"""Numbers read into events by the compiled scanner are exactly ``float(text)``: decimals
of up to 19 significant digits through Eisel and Lemire's algorithm (Lemire, "Number
Parsing at a Gigabyte per Second", §5-6), the rest through Python's own conversion;
checked bit for bit on repr of random doubles, on random decimal texts, and on texts
next to the halfway points between two doubles (where the fast path must give way)."""

from __future__ import annotations

import math
import random
import struct
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pubsift.core.errors import EventError
from pubsift.models.records import selection

pytestmark = pytest.mark.skipif(
    selection._scan is None, reason="the compiled scanner is not built (the full parse answers)"
)


def _read(text: str) -> float:
    from pubsift.models.constraints import MAX_INT_DIGITS
    from pubsift.models.records import _walk
    from pubsift.models.records.limits import MAX_DEPTH

    tree = _walk.compile_selection({"a"}, set())
    record = _walk.scan_record(b'{"a": ' + text.encode() + b"}", tree, MAX_DEPTH, MAX_INT_DIGITS)
    return record._attrs["a"]


def _same(text: str) -> None:
    want = float(text)
    if math.isinf(want):  # past the largest double: refused, numbers must be finite
        with pytest.raises(EventError, match="finite"):
            _read(text)
        return
    got = _read(text)
    assert type(got) is float
    assert struct.pack("<d", got) == struct.pack("<d", want), (text, got, want)


@settings(max_examples=3000, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_repr_of_any_double(x):
    text = repr(x)
    if "e" in text or "." in text:
        _same(text)
    _same(f"{x:.17e}")
    _same(f"{x:.15e}")


@settings(max_examples=3000, deadline=None)
@given(
    st.booleans(),
    st.text("0123456789", min_size=1, max_size=24),
    st.text("0123456789", min_size=1, max_size=24),
    st.one_of(st.none(), st.integers(-400, 400)),
)
def test_random_decimal_texts(neg, whole, frac, exp):
    whole = whole.lstrip("0") or "0"
    text = ("-" if neg else "") + whole + "." + frac + ("" if exp is None else f"e{exp}")
    _same(text)


def test_next_to_halfway_points():
    """The decimal expansions just below, at and above the midpoint of two neighbouring
    doubles, cut to 16-19 significant digits: where a correctly rounded reader must look
    further than the first product."""
    rnd = random.Random(7)
    for _ in range(20000):
        bits = rnd.getrandbits(63) & ~(0x7FF << 52) | (rnd.randrange(1, 0x7FE) << 52)
        (x,) = struct.unpack("<d", struct.pack("<Q", bits))
        mid = (Decimal(x) + Decimal(math.nextafter(x, math.inf))) / 2
        for digits in (16, 17, 18, 19):
            t = f"{mid:.{digits - 1}e}"
            for text in (
                t,
                f"{Decimal(t).next_minus():.{digits - 1}e}",
                f"{Decimal(t).next_plus():.{digits - 1}e}",
            ):
                _same(text)


@pytest.mark.parametrize(
    "text",
    [
        "0.0",
        "-0.0",
        "0e999",
        "-0.0e-999",
        "1.0",
        "-122.42916360922355",
        "37.73545882338689",
        "9007199254740993.0",
        "1e22",
        "1e23",
        "1.7976931348623157e308",
        "2.2250738585072014e-308",
        "2.2250738585072011e-308",
        "4.9e-324",
        "5e-324",
        "2.4703282292062327e-324",
        "1e-400",
        "123456789012345678901234567890.5",
        "0.1000000000000000055511151231257827",
        "1.00000000000000011102230246251565404236316680908203125",
        "1.00000000000000011102230246251565404236316680908203124",
        "1.00000000000000011102230246251565404236316680908203126",
        "7.2057594037927933e16",
        "8.98846567431158e307",
    ],
)
def test_hard_and_edge_texts(text):
    _same(text)
