"""Finite unions of intervals over a totally ordered line: the reals, the integers, and
strings in code-point (lexical) order (Mühl 2002, §4.3.3: comparison and interval constraints
on totally ordered sets).

Spans are ``(lo, lo_closed, hi, hi_closed)`` tuples kept canonical per line, so equal sets
are equal tuples: integer spans are half-open ``[a, b)`` with integer ends; string spans are
half-open ``[lo, hi)`` (an open lower end ``a`` is ``a + "\\0"``, nothing lies between);
``prefix p`` is the string span ``[p, inc(p))``. ±∞ are ``math.inf`` and :data:`TOP`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

INF = math.inf
MAXCP = 0x110000  # one above the largest code point


class _Top:
    """+∞ of the lexical order: greater than every string."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        return False

    def __le__(self, other: object) -> bool:
        return other is self

    def __gt__(self, other: object) -> bool:
        return other is not self

    def __ge__(self, other: object) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return 0x70B

    def __repr__(self) -> str:
        return "TOP"

    def __reduce__(self) -> str:
        """Pickled by name: compared by identity, it must load as the same object."""
        return "TOP"


TOP: Any = _Top()


# ---------------------------------------------------------------------------------------
# Interval unions over a totally ordered line (numbers, integers, lexical strings)
# ---------------------------------------------------------------------------------------
class Line:
    """A totally ordered domain; spans are (lo, lo_closed, hi, hi_closed) tuples."""

    bottom: tuple = (-INF, False)
    top: tuple = (INF, False)

    def canon(self, lo: Any, lc: bool, hi: Any, hc: bool) -> tuple | None:
        if lo == -INF:
            lc = False
        if hi == INF:
            hc = False
        if lo < hi or (lo == hi and lc and hc):
            return (lo, lc, hi, hc)
        return None

    def point(self, s: tuple) -> tuple[bool, Any]:
        return (s[0] == s[2], s[0])

    def member(self, v: Any) -> bool:
        return True


class IntLine(Line):
    """Integers; spans are canonical half-open ``[a, b)`` with integer ends."""

    def canon(self, lo: Any, lc: bool, hi: Any, hc: bool) -> tuple[Any, ...] | None:
        if lo == -INF or lo == INF:
            lc = False
        else:
            lo, lc = (math.ceil(lo) if lc else math.floor(lo) + 1), True
        if hi != INF and hi != -INF:
            hi = (math.floor(hi) if hc else math.ceil(hi) - 1) + 1
        hc = False
        return (lo, lc, hi, hc) if lo < hi else None

    def point(self, s: tuple[Any, ...]) -> tuple[bool, Any]:
        return (s[0] != -INF and s[2] == s[0] + 1, s[0])

    def member(self, v):
        return not isinstance(v, float) or v.is_integer()


class StrLine(Line):
    """Strings in code-point order; spans are canonical half-open ``[lo, hi)``: an open
    lower end ``a`` is ``a + "\\0"`` closed (no string lies between them)."""

    bottom = ("", True)
    top = (TOP, False)

    def canon(self, lo: Any, lc: bool, hi: Any, hc: bool) -> tuple[Any, ...] | None:
        if lo is TOP:
            return None
        if not lc:
            lo += "\0"
        if hi is None:
            hi = TOP
        elif hc and hi is not TOP:
            hi += "\0"
        return (lo, True, hi, False) if lo < hi else None

    def point(self, s: tuple[Any, ...]) -> tuple[bool, Any]:
        return (s[2] is not TOP and s[2] == s[0] + "\0", s[0])


REAL, INTEGER, LEX = Line(), IntLine(), StrLine()


class Spans:
    """A finite union of disjoint, non-touching spans of a :class:`Line`, sorted."""

    __slots__ = ("items", "line")

    def __init__(self, line: Line, items: tuple) -> None:
        self.line = line
        self.items = items

    @classmethod
    def of(cls, line: Line, raw: list | tuple) -> Spans:
        spans = sorted(
            (s for s in (line.canon(*r) for r in raw) if s is not None),
            key=lambda s: (s[0], not s[1]),
        )
        out: list[tuple] = []
        for lo, lc, hi, hc in spans:
            if out:
                plo, plc, phi, phc = out[-1]
                if lo < phi or (lo == phi and (phc or lc)):
                    if (hi, hc) > (phi, phc):
                        out[-1] = (plo, plc, hi, hc)
                    continue
            out.append((lo, lc, hi, hc))
        return cls(line, tuple(out))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Spans) and self.items == other.items

    def __hash__(self) -> int:
        return hash(self.items)

    def __repr__(self) -> str:
        return f"Spans({self.items!r})"

    def __bool__(self) -> bool:
        return bool(self.items)

    def __or__(self, other: Spans) -> Spans:
        if not other.items:
            return self
        if not self.items:
            return other
        return Spans.of(self.line, self.items + other.items)

    def __and__(self, other: Spans) -> Spans:
        a, b, out, i, j = self.items, other.items, [], 0, 0
        canon = self.line.canon
        while i < len(a) and j < len(b):
            x, y = a[i], b[j]
            lo, nlc = max((x[0], not x[1]), (y[0], not y[1]))
            hi, hc = min((x[2], x[3]), (y[2], y[3]))
            s = canon(lo, not nlc, hi, hc)
            if s is not None:
                out.append(s)
            if (x[2], x[3]) < (y[2], y[3]):
                i += 1
            else:
                j += 1
        return Spans(self.line, tuple(out))

    def __invert__(self) -> Spans:
        line = self.line
        out, (lo, lc) = [], line.bottom
        for s in self.items:
            out.append((lo, lc, s[0], not s[1]))
            lo, lc = s[2], not s[3]
        out.append((lo, lc) + line.top)
        return Spans.of(line, out)

    def __sub__(self, other: Spans) -> Spans:
        return self & ~other

    def issubset(self, other: Spans) -> bool:
        """Every span of self lies inside one span of other (both canonical)."""
        b, j = other.items, 0
        for lo, lc, hi, hc in self.items:
            while j < len(b) and (b[j][2], b[j][3]) < (hi, hc):
                j += 1
            if j == len(b):
                return False
            blo, blc, _, _ = b[j]
            if (blo, not blc) > (lo, not lc):
                return False
        return True

    def contains(self, v: Any) -> bool:
        if not self.line.member(v):
            return False
        for lo, lc, hi, hc in self.items:
            if (v > lo or (lc and v == lo)) and (v < hi or (hc and v == hi)):
                return True
        return False

    def points(self, limit: int = 4096) -> list | None:
        """The members if the union is finite and has at most ``limit`` members."""
        out, point = [], self.line.point
        for s in self.items:
            is_point, v = point(s)
            if is_point:
                out.append(v)
            elif self.line is INTEGER and s[0] != -INF and s[2] != INF and s[2] - s[0] <= limit:
                out.extend(range(s[0], s[2]))
            else:
                return None
            if len(out) > limit:
                return None
        return out

    def samples(self) -> Iterator[Any]:
        """Some members, the simplest first."""
        for lo, lc, hi, hc in self.items:
            if self.line is LEX:
                yield lo
                continue
            cands = []
            if lc and lo != -INF:
                cands.append(lo)
            if hc and hi != INF:
                cands.append(hi)
            if lo == -INF and hi == INF:
                cands += [0, 1, -1, 2]
            elif lo == -INF:
                cands += [
                    math.floor(hi) - 1,
                    math.floor(hi) - 2,
                    *_safe(lambda x: x - 0.5, hi),
                    hi - 10,
                ]
            elif hi == INF:
                cands += [
                    math.floor(lo) + 1,
                    math.floor(lo) + 2,
                    *_safe(lambda x: x + 0.5, lo),
                    lo + 10,
                ]
            else:
                cands += [
                    math.floor(lo) + 1,
                    math.floor(lo) + 2,
                    *_safe(lambda a, b: (a + b) / 2, lo, hi),
                    *_safe(lambda a, b: a + (b - a) / 4, lo, hi),
                ]
            seen = set()
            for v in cands:
                if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
                    v = int(v)
                if v not in seen and self.contains(v):
                    seen.add(v)
                    yield v


def _safe(candidate: Callable[..., Any], *ends: Any) -> list[Any]:
    """``[candidate(*ends)]``, or ``[]`` when the float arithmetic overflows (integer ends
    of hundreds of digits: such a span has integer samples)."""
    try:
        return [candidate(*ends)]
    except OverflowError:
        return []


def _inc(p: str) -> Any:
    """The least string above every string with prefix ``p`` (TOP if none)."""
    while p and p[-1] == chr(MAXCP - 1):
        p = p[:-1]
    return p[:-1] + chr(ord(p[-1]) + 1) if p else TOP


def prefix_span(p: str) -> tuple:
    """``prefix p`` as the lexical span ``[p, inc(p))``."""
    return (p, True, _inc(p), False)


__all__ = [
    "INF",
    "INTEGER",
    "LEX",
    "MAXCP",
    "REAL",
    "TOP",
    "IntLine",
    "Line",
    "Spans",
    "StrLine",
    "prefix_span",
]
