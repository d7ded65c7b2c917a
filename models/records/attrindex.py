"""The constraints on one attribute, indexed by operator (Mühl 2002, §4.3.3 and §4.3.8).

Mühl's generic approach: "each generic constraint class offers specialized indexing data
structures to efficiently manage constraints on attributes". An :class:`AttributeIndex`
holds (constraint, item) pairs for one attribute name and answers :meth:`~AttributeIndex.probe`:
the items whose constraint accepts a value, exactly (``Constraint.matches``):

* ``=`` and ``in`` set members: hash maps keyed per kind (strings, numbers with ``1 == 1.0``,
  and :func:`~pubsift.models.constraints.values.skey` for booleans and null, so ``True != 1``);
* equals-ignore-case: a hash map of case-folded operands; ``instanceof``: a hash map of the
  members of the type set;
* prefix / suffix: a hash map of operands probed with the value's prefixes (suffixes) of every
  registered length;
* ``<``, ``≤``, ``>``, ``≥`` and intervals: per kind (numbers, strings) sorted bounds searched
  with :mod:`bisect` (one-sided bounds give a contiguous run of accepting items; two-sided
  intervals are searched by lower bound and their upper bound is checked);
* ``exists`` / ``not-exists``: a list for any present value / for the absent value;
* ``any c`` (EventBridge's "some element"): the inner constraints in an attribute index of
  their own, probed with a scalar value itself and with each element of a list (items
  found through several elements are returned once); ``any not exists`` in the absent
  list and in a list for the empty multi value;
* everything else (≠, not-in, not-prefix, substring, multi-value operators, ...): a residual
  list evaluated with the compiled test of :mod:`pubsift.models.records.compiled`.

Each item is returned at most once per probe. Items are opaque to this module.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Hashable
from typing import Any

from pubsift.models.constraints import ABSENT, NUM, STR, Constraint, Op, kind, skey
from pubsift.models.records.compiled import compile_test

_EMPTY: tuple = ()


class SortedItems:
    """Items sorted by a bound (equal bounds in insertion order): parallel lists for
    :mod:`bisect`."""

    __slots__ = ("bounds", "items")

    def __init__(self) -> None:
        self.bounds: list[Any] = []
        self.items: list[Any] = []

    def add(self, bound: Any, item: Any) -> None:
        i = bisect_right(self.bounds, bound)
        self.bounds.insert(i, bound)
        self.items.insert(i, item)

    def remove(self, bound: Any, item: Any) -> None:
        i = bisect_left(self.bounds, bound)
        while self.items[i] is not item:
            i += 1
        del self.bounds[i], self.items[i]


class _Intervals:
    """Two-sided intervals sorted by lower bound; the upper bound is checked per item."""

    __slots__ = ("los", "rest")

    def __init__(self) -> None:
        self.los: list[Any] = []
        self.rest: list[tuple[bool, Any, bool, Any]] = []  # (lo_closed, hi, hi_closed, item)

    def add(self, lo: Any, lo_closed: bool, hi: Any, hi_closed: bool, item: Any) -> None:
        i = bisect_right(self.los, lo)
        self.los.insert(i, lo)
        self.rest.insert(i, (lo_closed, hi, hi_closed, item))

    def remove(self, lo: Any, item: Any) -> None:
        i = bisect_left(self.los, lo)
        while self.rest[i][3] is not item:
            i += 1
        del self.los[i], self.rest[i]

    def stab(self, v: Any) -> list[Any]:
        los, rest = self.los, self.rest
        out = []
        for j in range(bisect_right(los, v)):
            lc, hi, hc, item = rest[j]
            if (lc or los[j] < v) and (v < hi or (hc and v == hi)):
                out.append(item)
        return out


class _Ranges:
    """Comparisons and intervals over one kind (numbers or strings)."""

    __slots__ = ("all", "ge", "gt", "le", "lt", "size", "two")

    def __init__(self) -> None:
        self.ge, self.gt, self.le, self.lt = (
            SortedItems(),
            SortedItems(),
            SortedItems(),
            SortedItems(),
        )
        self.two = _Intervals()
        self.all: list[Any] = []
        self.size = 0

    def place(self, c: Constraint) -> tuple[str, Any, Any]:
        """Where c goes: (part, bound, interval) with part in ge/gt/le/lt/two/all."""
        op, x = c.op, c.operand
        if op is not Op.IN_RANGE:
            return ({Op.GE: "ge", Op.GT: "gt", Op.LE: "le", Op.LT: "lt"}[op], x, None)
        if x.kind == STR:
            lo_unbounded, hi_unbounded = (x.lo == "" and x.lo_closed), x.hi is None
        else:  # event numbers are finite: ±inf bounds never exclude a value
            lo_unbounded, hi_unbounded = x.lo == -math.inf, x.hi == math.inf
        if lo_unbounded and hi_unbounded:
            return ("all", None, x)
        if lo_unbounded:
            return ("le" if x.hi_closed else "lt", x.hi, x)
        if hi_unbounded:
            return ("ge" if x.lo_closed else "gt", x.lo, x)
        return ("two", x.lo, x)

    def add(self, c: Constraint, item: Any) -> None:
        part, bound, x = self.place(c)
        if part == "all":
            self.all.append(item)
        elif part == "two":
            self.two.add(x.lo, x.lo_closed, x.hi, x.hi_closed, item)
        else:
            getattr(self, part).add(bound, item)
        self.size += 1

    def remove(self, c: Constraint, item: Any) -> None:
        part, bound, x = self.place(c)
        if part == "all":
            _remove_identity(self.all, item)
        elif part == "two":
            self.two.remove(x.lo, item)
        else:
            getattr(self, part).remove(bound, item)
        self.size -= 1

    def probe(self, v: Any, out: list) -> None:
        s = self.ge
        if s.bounds:
            out.append(s.items[: bisect_right(s.bounds, v)])
        s = self.gt
        if s.bounds:
            out.append(s.items[: bisect_left(s.bounds, v)])
        s = self.le
        if s.bounds:
            out.append(s.items[bisect_left(s.bounds, v) :])
        s = self.lt
        if s.bounds:
            out.append(s.items[bisect_right(s.bounds, v) :])
        if self.two.los:
            out.append(self.two.stab(v))
        if self.all:
            out.append(self.all)


def _remove_identity(bucket: list, item: Any) -> None:
    for i, x in enumerate(bucket):
        if x is item:
            del bucket[i]
            return
    raise KeyError(item)


def _bucket_add(d: dict, key: Hashable, item: Any) -> None:
    b = d.get(key)
    if b is None:
        d[key] = [item]
    else:
        b.append(item)


def _bucket_remove(d: dict, key: Hashable, item: Any) -> None:
    b = d[key]
    _remove_identity(b, item)
    if not b:
        del d[key]


_RANGE_OPS = frozenset({Op.LT, Op.LE, Op.GT, Op.GE, Op.IN_RANGE})


class AttributeIndex:
    """(constraint, item) pairs of one attribute; :meth:`probe` finds the accepting items."""

    __slots__ = (
        "absent",
        "elements",
        "eq_num",
        "eq_other",
        "eq_str",
        "ieq",
        "inst",
        "no_leaf",
        "numbers",
        "pre",
        "pre_lens",
        "present",
        "residual",
        "size",
        "strings",
        "suf",
        "suf_lens",
    )

    def __init__(self) -> None:
        self.eq_str: dict[str, list] = {}
        self.eq_num: dict[int | float, list] = {}
        self.eq_other: dict[tuple, list] = {}
        self.ieq: dict[str, list] = {}
        self.inst: dict[str, list] = {}
        self.pre: dict[str, list] = {}
        self.pre_lens: dict[int, int] = {}
        self.suf: dict[str, list] = {}
        self.suf_lens: dict[int, int] = {}
        self.numbers = _Ranges()
        self.strings = _Ranges()
        self.present: list = []
        self.absent: list = []
        self.residual: list[tuple[Any, Any]] = []  # (test, item)
        self.size = 0
        self.elements: AttributeIndex | None = None  # inner constraints of ``any``
        self.no_leaf: list = []  # ``any not exists``: absent (in self.absent too) or []

    # -- maintenance ------------------------------------------------------------------
    def add(self, c: Constraint, item: Any) -> None:
        self._apply(c, item, True)
        self.size += 1

    def remove(self, c: Constraint, item: Any) -> None:
        """Remove the pair; raises KeyError if it is absent."""
        self._apply(c, item, False)
        self.size -= 1

    def _eq_key(self, k: str, x: Any) -> tuple[dict, Hashable]:
        if k == STR:
            return self.eq_str, x
        if k == NUM:
            return self.eq_num, x
        return self.eq_other, (k, x)

    def _apply(self, c: Constraint, item: Any, add: bool) -> None:
        op, x = c.op, c.operand
        put = _bucket_add if add else _bucket_remove
        if op is Op.EQ:
            put(*self._eq_key(kind(x), x), item)
        elif op is Op.IN_SET:
            for k, m in x:
                put(*self._eq_key(k, m), item)
        elif op is Op.EQ_IGNORE_CASE:
            put(self.ieq, x.casefold(), item)
        elif op is Op.INSTANCEOF:
            for m in x.members:
                put(self.inst, m, item)
        elif op is Op.PREFIX:
            put(self.pre, x, item)
            _count(self.pre_lens, len(x), add)
        elif op is Op.SUFFIX:
            put(self.suf, x, item)
            _count(self.suf_lens, len(x), add)
        elif op in _RANGE_OPS:
            ranges = self.strings if c.value_kind == STR else self.numbers
            (ranges.add if add else ranges.remove)(c, item)
        elif op is Op.ANY:
            self._apply_any(x, item, add)
        elif op is Op.EXISTS or op is Op.NOT_EXISTS:
            bucket = self.present if op is Op.EXISTS else self.absent
            if add:
                bucket.append(item)
            else:
                _remove_identity(bucket, item)
        elif add:
            self.residual.append((compile_test(c), item))
            if c.matches(ABSENT):  # ``all`` of tests that admit a missing attribute
                self.absent.append(item)
        else:
            for i, (_, it) in enumerate(self.residual):
                if it is item:
                    del self.residual[i]
                    break
            else:
                raise KeyError(item)
            if c.matches(ABSENT):
                _remove_identity(self.absent, item)

    def _apply_any(self, inner: Constraint, item: Any, add: bool) -> None:
        if inner.op is Op.NOT_EXISTS:
            if add:
                self.absent.append(item)
                self.no_leaf.append(item)
            else:
                _remove_identity(self.no_leaf, item)
                _remove_identity(self.absent, item)
            return
        sub = self.elements
        if add:
            if sub is None:
                sub = self.elements = AttributeIndex()
            sub.add(inner, item)
        else:
            if sub is None:
                raise KeyError(item)
            sub.remove(inner, item)
            if not sub.size:
                self.elements = None

    # -- queries ----------------------------------------------------------------------
    def probe(self, v: Any) -> list:
        """Buckets (iterables) of the items whose constraint accepts ``v`` (``ABSENT`` for
        a missing attribute); every accepting item occurs exactly once over all buckets."""
        if v is ABSENT:
            return [self.absent] if self.absent else []
        out: list = []
        t = v.__class__
        if self.elements is not None or self.no_leaf:
            self._probe_any(v, t, out)
        if t is str:
            k = STR
        elif t is int or t is float:
            k = NUM
        else:
            k = kind(v)
        if k == STR:
            b = self.eq_str.get(v)
            if b:
                out.append(b)
            if self.ieq:
                b = self.ieq.get(v.casefold())
                if b:
                    out.append(b)
            if self.inst:
                b = self.inst.get(v)
                if b:
                    out.append(b)
            if self.pre_lens:
                n, pre = len(v), self.pre
                for length in self.pre_lens:
                    if length <= n:
                        b = pre.get(v[:length])
                        if b:
                            out.append(b)
            if self.suf_lens:
                n, suf = len(v), self.suf
                for length in self.suf_lens:
                    if length <= n:
                        b = suf.get(v[n - length :])
                        if b:
                            out.append(b)
            if self.strings.size:
                self.strings.probe(v, out)
        elif k == NUM:
            b = self.eq_num.get(v)
            if b:
                out.append(b)
            if self.numbers.size:
                self.numbers.probe(v, out)
        elif k != "multi":
            b = self.eq_other.get(skey(v))
            if b:
                out.append(b)
        if self.present:
            out.append(self.present)
        if self.residual:
            out.append([item for test, item in self.residual if test(v)])
        return out

    def _probe_any(self, v: Any, t: type, out: list) -> None:
        """The ``any`` items accepting v: probes with v, or with each element of a list."""
        if t is not tuple:
            if self.elements is not None:
                out.extend(self.elements.probe(v))
            return
        if not v:
            if self.no_leaf:
                out.append(self.no_leaf)
            return
        sub = self.elements
        if sub is None:
            return
        if len(v) == 1:
            out.extend(sub.probe(v[0]))
            return
        seen: dict[int, Any] = {}
        for e in v:
            for bucket in sub.probe(e):
                for item in bucket:
                    seen[id(item)] = item
        if seen:
            out.append(list(seen.values()))


def _count(lens: dict[int, int], n: int, add: bool) -> None:
    if add:
        lens[n] = lens.get(n, 0) + 1
    else:
        lens[n] -= 1
        if not lens[n]:
            del lens[n]
