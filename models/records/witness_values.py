"""Held filters by their witness values: the search behind ``covered_by`` (Mühl 2002, §4.3.8,
Fig. 4.8).

If f ⊒ g then g's witness event e_g ∈ N(g) ⊆ N(f), so f's attribute filter on every one of
its attributes accepts e_g's value there. :class:`WitnessValues` keeps, per attribute, the
items (held filters) by the value of their witness on it — hashed by
:func:`~pubsift.models.constraints.values.skey`, and numbers and strings also sorted — and
answers "the items whose witness value on ``name`` the constraint ``c`` accepts" with hash
lookups (``=``, ``in``), a :mod:`bisect` range (comparisons, intervals, prefixes) or, for
the other operators, a scan of the attribute's items; :meth:`~WitnessValues.estimate` says
how many items each way touches, so the caller can search the most selective attribute.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Hashable, Iterable
from typing import Any

from pubsift.models.constraints import MULTI, NUM, STR, Constraint, Op, kind, skey
from pubsift.models.records.attrindex import SortedItems
from pubsift.models.records.compiled import compile_test

_MAXCHAR = "\U0010ffff"


def _prefix_end(p: str) -> str | None:
    """The least string above every string starting with p (None: no such bound)."""
    while p and p[-1] == _MAXCHAR:
        p = p[:-1]
    return p[:-1] + chr(ord(p[-1]) + 1) if p else None


class WitnessValues:
    """Items by the witness value of each attribute (see the module docstring)."""

    def __init__(self) -> None:
        self._hashed: dict[str, dict[tuple, dict[Any, None]]] = {}
        self._sorted: dict[tuple[str, str | None], SortedItems] = {}  # (name, NUM or STR) -> sorted
        self._all: dict[str, dict[Any, Any]] = {}  # name -> item -> value

    def add(self, witness: dict[str, Any], item: Hashable) -> None:
        for n, v in witness.items():
            self._all.setdefault(n, {})[item] = v
            k = kind(v)
            if k != MULTI:
                self._hashed.setdefault(n, {}).setdefault(skey(v), {})[item] = None
            if k in (NUM, STR):
                s = self._sorted.get((n, k))
                if s is None:
                    s = self._sorted[(n, k)] = SortedItems()
                s.add(v, item)

    def remove(self, witness: dict[str, Any], item: Hashable) -> None:
        for n, v in witness.items():
            _discard(self._all, n, item)
            k = kind(v)
            if k != MULTI:
                by_value = self._hashed[n]
                _discard(by_value, skey(v), item)
                if not by_value:
                    del self._hashed[n]
            if k in (NUM, STR):
                s = self._sorted[(n, k)]
                s.remove(v, item)
                if not s.bounds:
                    del self._sorted[(n, k)]

    def _span(self, n: str, c: Constraint) -> tuple[SortedItems, int, int] | None:
        """A run of one sorted list holding every item whose value c may accept."""
        op, x = c.op, c.operand
        if op is Op.PREFIX:
            s = self._sorted.get((n, STR))
            if s is None:
                return None
            end = _prefix_end(x)
            return (
                s,
                bisect_left(s.bounds, x),
                len(s.bounds) if end is None else bisect_left(s.bounds, end),
            )
        if op not in (Op.LT, Op.LE, Op.GT, Op.GE, Op.IN_RANGE):
            return None
        k = c.value_kind
        s = self._sorted.get((n, k))
        if s is None:
            return None
        if op is Op.IN_RANGE:
            lo, hi = x.lo, x.hi
        elif op in (Op.LT, Op.LE):
            lo, hi = None, x
        else:
            lo, hi = x, None
        if k == NUM and hi == math.inf:
            hi = None
        return (
            s,
            0 if lo is None else bisect_left(s.bounds, lo),
            len(s.bounds) if hi is None else bisect_right(s.bounds, hi),
        )

    def estimate(self, n: str, c: Constraint) -> int:
        """How many items :meth:`accepted` looks at."""
        if c.op is Op.EQ or c.op is Op.IN_SET:
            by_value = self._hashed.get(n, {})
            keys = (skey(c.operand),) if c.op is Op.EQ else c.operand
            return sum(len(by_value.get(k, ())) for k in keys)
        span = self._span(n, c)
        if span is not None:
            return span[2] - span[1]
        return len(self._all.get(n, ()))

    def accepted(self, n: str, c: Constraint) -> Iterable[Any]:
        """The items whose witness value on n satisfies c (``not-exists``: none; items
        whose witness lacks n are never returned)."""
        if c.op is Op.NOT_EXISTS:
            return ()
        if c.op is Op.EQ or c.op is Op.IN_SET:
            by_value = self._hashed.get(n, {})
            found: dict[Any, None] = {}
            for k in (skey(c.operand),) if c.op is Op.EQ else c.operand:
                found.update(by_value.get(k, ()))
            return found
        test = compile_test(c)
        span = self._span(n, c)
        if span is not None:
            s, i, j = span
            return [item for v, item in zip(s.bounds[i:j], s.items[i:j]) if test(v)]
        return [item for item, v in self._all.get(n, {}).items() if test(v)]


def _discard(d: dict, key: Hashable, item: Any) -> None:
    held = d[key]
    del held[item]
    if not held:
        del d[key]
