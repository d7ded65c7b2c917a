"""A toy filter model for testing the conformance kit itself: filters are closed integer
intervals [lo, hi], events are integers. Its relations are exact, so the kit must pass it;
the ``Broken*`` variants each break one rule of DESIGN.md §2.1, and the kit must catch them.
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any

from hypothesis import strategies as st

from pubsift.core.errors import EventError, FilterSyntaxError
from pubsift.core.model import FilterIndex, FilterModel

Span = tuple[int, int]  # a filter: (lo, hi), lo <= hi

_TEXT = re.compile(r"\s*\[\s*(-?\d+)\s*,\s*(-?\d+)\s*\]\s*$")


class IntervalModel(FilterModel):
    name = "toy-intervals"
    capabilities = frozenset({"covers", "identical", "overlaps", "merge", "imperfect_merge",
                              "index"})

    def parse_filter(self, spec: str | Mapping[str, Any]) -> Span:
        if isinstance(spec, Mapping):
            lo, hi = spec.get("lo"), spec.get("hi")
        else:
            m = _TEXT.match(spec)
            if not m:
                raise FilterSyntaxError("expected [lo, hi]", spec, 0)
            lo, hi = int(m[1]), int(m[2])
        if not (isinstance(lo, int) and isinstance(hi, int) and lo <= hi):
            raise FilterSyntaxError(f"not an interval: {spec!r}")
        return (lo, hi)

    def parse_event(self, raw: bytes | str | Mapping[str, Any]) -> int:
        try:
            return int(raw)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise EventError(f"not an integer event: {raw!r}") from None

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
        return (obj[0], obj[1])

    def dump_event(self, e: int) -> Any:
        return e

    def load_event(self, obj: Any) -> int:
        return obj

    def new_index(self) -> "SortedIntervalIndex":
        return SortedIntervalIndex(self)


class SortedIntervalIndex(FilterIndex[Hashable]):
    """Keys per interval, intervals sorted by lower bound (match scans only lo <= e)."""

    def __init__(self, model: IntervalModel) -> None:
        self.model = model
        self._keys: dict[Span, set[Hashable]] = {}
        self._sorted: list[Span] = []

    def add(self, f: Span, key: Hashable) -> None:
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


# -- strategies -----------------------------------------------------------------------------

events = st.integers(-4, 7)
filters = st.tuples(st.integers(-3, 3), st.integers(0, 3)).map(lambda t: (t[0], t[0] + t[1]))


def matching_event(f: Span) -> st.SearchStrategy[int]:
    return st.integers(f[0], f[1])
