"""XPath 1.0 numbers exactly as lxml (libxml2) reads and writes them.

XPath 1.0 (§3.7, §4.4) reads a number as ``Number ::= Digits ('.' Digits?)? | '.' Digits``
with ``Digits ::= [0-9]+``, an optional ``-`` and surrounding whitespace; anything else is
NaN. Only the ASCII digits count: ``"٣"``, ``"１"``, ``"+1"``, ``"1_000"``, ``"inf"`` are
all NaN. libxml2, which lxml evaluates with, also accepts an exponent (``1e5``, ``1E-2``,
and ``1e`` as ``1``) and computes the value digit by digit in double precision
(``xmlXPathStringEvalNumber`` and ``xmlXPathCompNumber``): the integer part as
``r = r * 10 + d``, at most 20 significant fraction digits divided by ``10 ** n``, then a
multiplication by ``10 ** exponent`` (so ``1e309`` is Infinity and ``0e400`` is NaN). That
is not always the correctly rounded value Python's ``float()`` gives, so :func:`xpath_number`
repeats libxml2's arithmetic step by step: ``matches`` then agrees with lxml on every
string, including 4,300-digit ones (no ``int()`` is involved).

:func:`format_number` writes a literal that this reading turns back into the very same
double, so a filter's text form reads back to an identical filter.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

_BLANKS = " \t\r\n"
_MAX_FRAC = 20  # libxml2's MAX_FRAC: significant fraction digits read
_MAX_EXPONENT = 1_000_000  # libxml2 stops accumulating exponent digits here
# the shape libxml2 accepts (ASCII only: re.ASCII keeps [0-9] and the blanks exact)
# (surrounding blanks are stripped first: two blank runs in the pattern would backtrack
# quadratically on a long run of blanks)
_SHAPE = re.compile(r"(-?)([0-9]*)(?:(\.)([0-9]*))?(?:[eE]([+-]?)([0-9]*))?\Z", re.ASCII)
# characters a number's text can hold: a string value with any other one is NaN
NUMBER_CHARS = frozenset("0123456789.-+eE" + _BLANKS)


def _pow10(e: int) -> float:
    """C's ``pow(10.0, e)``: Infinity on overflow, 0 on underflow."""
    try:
        return 10.0**e
    except OverflowError:
        return math.inf


def _accumulate(digits: str) -> float:
    """``r = r * 10 + d`` over ``digits`` in double precision."""
    if len(digits) <= 15:  # exact below 2**53: the same double, computed at C speed
        return float(int(digits)) if digits else 0.0
    r = 0.0
    for ch in digits:
        r = r * 10 + (ord(ch) - 48)
        if r == math.inf:  # stays Infinity
            break
    return r


def xpath_number(s: str) -> float:
    """``number(s)`` as lxml (libxml2) computes it; NaN when ``s`` is not a number."""
    m = _SHAPE.match(s.strip(_BLANKS))
    if m is None:
        return math.nan
    sign, whole, dot, frac, esign, edigits = m.groups()
    if not whole and not frac:
        return math.nan  # "", "-", ".", "-.", "e5"
    r = _accumulate(whole)
    if dot and frac:
        zeros = len(frac) - len(frac.lstrip("0"))
        significant = frac[zeros : zeros + _MAX_FRAC]
        r += _accumulate(significant) / _pow10(zeros + len(significant))
    if sign:
        r = -r
    if edigits is None:
        return r
    e = 0
    for ch in edigits:
        if e >= _MAX_EXPONENT:
            break
        e = e * 10 + (ord(ch) - 48)
    p = _pow10(-e if esign == "-" else e)
    return r * p


def _integer_digits(x: float, failed: set | None = None) -> str | None:
    """Digits whose libxml2 reading (``r = r * 10 + d``) is exactly the integral double
    ``x >= 0``: backwards, digit by digit, from the doubles the previous step may have
    held (``failed`` remembers the doubles with no such digits, so each is tried once)."""
    if x < 2**53:
        return str(int(x))
    if failed is None:
        failed = set()
    if x in failed:
        return None
    for d in range(10):
        c = (x - d) / 10
        for prev in (c, math.nextafter(c, 0), math.nextafter(c, math.inf)):
            if prev == int(prev) and prev * 10 + d == x and prev not in failed:
                head = _integer_digits(prev, failed)
                if head is not None:
                    return head + str(d)
    failed.add(x)
    return None


def _plain(d: Decimal) -> str:
    """``d`` without an exponent or trailing fraction zeros."""
    t = format(d, "f")
    return t.rstrip("0").rstrip(".") if "." in t else t


def _forms(t: str):
    """Decimal text ``t`` (as ``repr`` or ``%e`` write it) without an exponent, then as
    integer digits times a power of ten."""
    yield _plain(Decimal(t))
    mant, _, e = t.partition("e")
    whole, _, frac = mant.partition(".")
    digits = (whole + frac).lstrip("0").rstrip("0") or "0"
    exp = (int(e) if e else 0) + len(whole + frac) - len((whole + frac).rstrip("0")) - len(frac)
    yield f"{digits}e{exp}" if exp else digits


def _candidates(x: float):
    """Decimal texts near x (x > 0, finite), the likeliest first."""
    yield from _forms(repr(x))
    if x == int(x):
        digits = _integer_digits(x)
        if digits is not None:
            yield digits
    for k in range(4):
        ys = [x] if k == 0 else [x + math.ulp(x) * k, x - math.ulp(x) * k]
        for y in ys:
            for precision in (15, 16, 17, 18, 19, 20):
                yield from _forms(f"{y:.{precision - 1}e}")
    # an integer read digit by digit, times a power of ten
    top = math.floor(math.log10(x))
    for exp in range(top - 40, top + 1):
        p = _pow10(exp)
        if not p or p == math.inf:
            continue
        q = x / p
        if not 1 <= q < 1e300:
            continue
        q = float(round(q))
        for r in (q, math.nextafter(q, 0), math.nextafter(q, math.inf)):
            if r * p == x:
                digits = _integer_digits(r)
                if digits is not None:
                    yield f"{digits}e{exp}"


def format_number(x: float) -> str | None:
    """A number literal that lxml (and :func:`xpath_number`) reads as exactly ``x``
    (without an exponent when one is enough); None if none is found (x is not finite,
    or no literal of the shapes tried reads back as x)."""
    if not math.isfinite(x):
        return None
    if x == 0:
        return "0"
    if x < 0:
        s = format_number(-x)
        return None if s is None else "-" + s
    for c in _candidates(x):
        if xpath_number(c) == x:
            return c
    return None
