"""A toy filter model for testing the conformance kit itself: filters are closed integer
intervals [lo, hi], events are integers. Its relations are exact, so the kit must pass it;
the ``Broken*`` variants each break one rule of DESIGN.md §2.1, and the kit must catch them.
"""

from __future__ import annotations

import bisect
import os
import re
import signal
import time
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any

from hypothesis import strategies as st
from pubsift.core.errors import EventError, FilterSyntaxError
from pubsift.core.model import FilterIndex, FilterModel

Span = tuple[int, int]  # a filter: (lo, hi), lo <= hi

_TEXT = re.compile(r"\s*\[\s*(-?[0-9]+)\s*,\s*(-?[0-9]+)\s*\]\s*$")
_EVENT = re.compile(r"-?[0-9]+$")
MAX_DIGITS = 18
#: the sorted index holds bounds of at most this size (a documented index limit, so that the
#: kit sees an add that fails and can check it changes nothing)
INDEX_LIMIT = 10_000


def _span(lo: Any, hi: Any, spec: Any) -> Span:
    if not (type(lo) is int and type(hi) is int and lo <= hi):
        raise FilterSyntaxError(f"not an interval of integers lo <= hi: {type(spec).__name__}")
    if max(abs(lo), abs(hi)) >= 10**MAX_DIGITS:
        raise FilterSyntaxError(f"a bound has more than {MAX_DIGITS} digits")
    return (lo, hi)


class IntervalModel(FilterModel):
    name = "toy-intervals"
    capabilities = frozenset(
        {"covers", "identical", "overlaps", "merge", "imperfect_merge", "index"}
    )

    def parse_filter(self, spec: str | Mapping[str, Any]) -> Span:
        if isinstance(spec, Mapping):
            return _span(spec.get("lo"), spec.get("hi"), spec)
        if not isinstance(spec, str):
            raise FilterSyntaxError(f"a filter is text or an object, not {type(spec).__name__}")
        m = _TEXT.match(spec)
        if not m:
            raise FilterSyntaxError("expected [lo, hi]", spec, 0)
        if len(m[1]) > MAX_DIGITS or len(m[2]) > MAX_DIGITS:
            raise FilterSyntaxError(f"a bound has more than {MAX_DIGITS} digits", spec, 0)
        return _span(int(m[1]), int(m[2]), spec)

    def parse_event(self, raw: bytes | str | Mapping[str, Any]) -> int:
        if isinstance(raw, (bytes, bytearray)):
            raw = raw.decode("ascii", "replace")
        if isinstance(raw, str) and _EVENT.match(raw) and len(raw) <= MAX_DIGITS + 1:
            return int(raw)
        if type(raw) is int and abs(raw) < 10**MAX_DIGITS:
            return raw
        raise EventError(
            f"not an integer event of at most {MAX_DIGITS} digits: {type(raw).__name__}"
        )

    def format_filter(self, f: Span) -> str:
        return f"[{f[0]}, {f[1]}]"

    def matches(self, f: Span, e: int) -> bool:
        return f[0] <= e <= f[1]

    def covers(self, f: Span, g: Span) -> bool:
        return f[0] <= g[0] and g[1] <= f[1]

    def identical(self, f: Span, g: Span) -> bool:
        return f == g

    def overlaps(self, f: Span, g: Span) -> bool:
        return max(f[0], g[0]) <= min(f[1], g[1])

    def merge(self, fs: Sequence[Span], perfect: bool = True) -> Span | None:
        spans = sorted(fs)
        hull = (spans[0][0], max(hi for _, hi in spans))
        if perfect:
            reach = spans[0][1]
            for lo, hi in spans[1:]:
                if lo > reach + 1:
                    return None
                reach = max(reach, hi)
        return hull

    def dump_filter(self, f: Span) -> Any:
        return [f[0], f[1]]

    def load_filter(self, obj: Any) -> Span:
        if not (isinstance(obj, list) and len(obj) == 2):
            raise FilterSyntaxError(f"a filter's wire form is [lo, hi], not a {type(obj).__name__}")
        return _span(obj[0], obj[1], obj)

    def dump_event(self, e: int) -> Any:
        return e

    def load_event(self, obj: Any) -> int:
        return self.parse_event(obj if type(obj) is int else None)

    def new_index(self) -> SortedIntervalIndex:
        return SortedIntervalIndex(self)


class SortedIntervalIndex(FilterIndex[Hashable]):
    """Keys per interval, intervals sorted by lower bound (match scans only lo <= e)."""

    def __init__(self, model: IntervalModel) -> None:
        self.model = model
        self._keys: dict[Span, set[Hashable]] = {}
        self._sorted: list[Span] = []

    def add(self, f: Span, key: Hashable) -> None:
        if max(map(abs, f)) > INDEX_LIMIT:
            raise FilterSyntaxError(f"the sorted index holds bounds up to {INDEX_LIMIT}")
        if f not in self._keys:
            self._keys[f] = set()
            bisect.insort(self._sorted, f)
        self._keys[f].add(key)

    def remove(self, f: Span, key: Hashable) -> None:
        keys = self._keys.get(f)
        if keys is None or key not in keys:
            raise KeyError((f, key))
        keys.discard(key)
        if not keys:
            del self._keys[f]
            self._sorted.remove(f)

    def __iter__(self) -> Iterator[tuple[Span, Hashable]]:
        return iter([(f, k) for f in self._sorted for k in self._keys[f]])

    def __len__(self) -> int:
        return sum(map(len, self._keys.values()))

    def _where(self, test: Any) -> set[Hashable]:
        return {k for f in self._sorted if test(f) for k in self._keys[f]}

    def match(self, event: int) -> set[Hashable]:
        end = bisect.bisect_right(self._sorted, (event, float("inf")))
        return {k for f in self._sorted[:end] if event <= f[1] for k in self._keys[f]}

    def covering(self, f: Span) -> set[Hashable]:
        return self._where(lambda g: self.model.covers(g, f))

    def covered_by(self, f: Span) -> set[Hashable]:
        return self._where(lambda g: self.model.covers(f, g))

    def identical(self, f: Span) -> set[Hashable]:
        return set(self._keys.get(f, ()))

    def overlapping(self, f: Span) -> set[Hashable]:
        return self._where(lambda g: self.model.overlaps(g, f))

    def merge_candidates(self, f: Span) -> set[Hashable]:
        return self._where(lambda g: self.model.merge([g, f]) is not None)


# -- deliberately broken variants: each breaks one rule the kit checks ----------------------


class BrokenCovers(IntervalModel):
    """Unsound covering: ignores the upper bounds."""

    def covers(self, f: Span, g: Span) -> bool:
        return f[0] <= g[0]


class BrokenIdentical(IntervalModel):
    """Unsound identity: only compares lower bounds."""

    def identical(self, f: Span, g: Span) -> bool:
        return f[0] == g[0]


class BrokenOverlaps(IntervalModel):
    """Unsound overlap: misses intervals that share only an end point."""

    def overlaps(self, f: Span, g: Span) -> bool:
        return max(f[0], g[0]) < min(f[1], g[1])


class BrokenMatches(IntervalModel):
    """Not total: raises on events below zero."""

    def matches(self, f: Span, e: int) -> bool:
        if e < 0:
            raise ValueError("negative")
        return super().matches(f, e)


class BrokenMerge(IntervalModel):
    """'Perfect' merger that is the hull even across gaps (matches more than the union)."""

    def merge(self, fs: Sequence[Span], perfect: bool = True) -> Span | None:
        return super().merge(fs, perfect=False)


class BrokenImperfectMerge(IntervalModel):
    """Imperfect merger that drops the last input."""

    def merge(self, fs: Sequence[Span], perfect: bool = True) -> Span | None:
        if perfect or len(fs) < 2:
            return super().merge(fs, perfect)
        return super().merge(fs[:-1], perfect=False)


class NonTransitive(IntervalModel):
    """Sound but inconsistent covering: claims covering only between intervals whose
    lengths differ by at most 1, so chains break transitivity."""

    def covers(self, f: Span, g: Span) -> bool:
        return super().covers(f, g) and (f[1] - f[0]) - (g[1] - g[0]) <= 1


class BrokenFilterWire(IntervalModel):
    """Wire form that is not JSON (a set)."""

    def dump_filter(self, f: Span) -> Any:
        return {f[0], f[1]}


class BrokenEventWire(IntervalModel):
    """Event wire form that loses the sign."""

    def load_event(self, obj: Any) -> int:
        return abs(obj)


class BrokenFormat(IntervalModel):
    """Text form that loses the upper bound."""

    def format_filter(self, f: Span) -> str:
        return f"[{f[0]}, {f[0]}]"


class OffByOneIndex(SortedIntervalIndex):
    """match misses the intervals that start exactly at the event."""

    def match(self, event: int) -> set[Hashable]:
        end = bisect.bisect_left(self._sorted, (event,))
        return {k for f in self._sorted[:end] if event <= f[1] for k in self._keys[f]}


class BrokenIndex(IntervalModel):
    """An index whose match is off by one."""

    def new_index(self) -> OffByOneIndex:
        return OffByOneIndex(self)


class HalfAddIndex(SortedIntervalIndex):
    """Checks the index limit only after registering the pair: a failed add is counted by
    ``len`` (as the concepts index does)."""

    def add(self, f: Span, key: Hashable) -> None:
        if f not in self._keys:
            self._keys[f] = set()
            bisect.insort(self._sorted, f)
        self._keys[f].add(key)
        if max(map(abs, f)) > INDEX_LIMIT:
            raise FilterSyntaxError(f"the sorted index holds bounds up to {INDEX_LIMIT}")


class BrokenFailedAdd(IntervalModel):
    """An index whose failed add leaves a half-inserted pair."""

    def new_index(self) -> HalfAddIndex:
        return HalfAddIndex(self)


class RawHugeInt(IntervalModel):
    """Lets int() raise its ValueError on more than 4,300 digits."""

    def parse_filter(self, spec: str | Mapping[str, Any]) -> Span:
        if isinstance(spec, str) and (m := _TEXT.match(spec)):
            return _span(int(m[1]), int(m[2]), spec)
        return super().parse_filter(spec)


class RecursiveParser(IntervalModel):
    """Strips parentheses recursively: RecursionError on deep nesting."""

    def parse_filter(self, spec: str | Mapping[str, Any]) -> Span:
        if isinstance(spec, str) and spec.startswith("(") and spec.endswith(")"):
            return self.parse_filter(spec[1:-1])
        return super().parse_filter(spec)


class CrashingParser(IntervalModel):
    """Dies of a segmentation fault on a NUL character (as a C extension might)."""

    def parse_filter(self, spec: str | Mapping[str, Any]) -> Span:
        if isinstance(spec, str) and "\x00" in spec:
            os.kill(os.getpid(), signal.SIGSEGV)
        return super().parse_filter(spec)


class HangingParser(IntervalModel):
    """Never returns on a lone surrogate."""

    def parse_filter(self, spec: str | Mapping[str, Any]) -> Span:
        if isinstance(spec, str) and "\ud800" in spec:
            while True:
                time.sleep(1)
        return super().parse_filter(spec)


class GreedyParser(IntervalModel):
    """Allocates 8 GiB on a wrong JSON type (MemoryError under the kit's limit)."""

    def load_filter(self, obj: Any) -> Span:
        if not isinstance(obj, list):
            bytearray(8 << 30)
        return super().load_filter(obj)


# -- strategies -----------------------------------------------------------------------------

events = st.integers(-4, 7)
filters = st.tuples(st.integers(-3, 3), st.integers(0, 3)).map(lambda t: (t[0], t[0] + t[1]))


def matching_event(f: Span) -> st.SearchStrategy[int]:
    return st.integers(f[0], f[1])
