"""An exact toy filter model for the routing tests: integer points 0..15.

A filter is an interval [lo, hi] or an explicit set of points; the two forms of the same
point set are identical but not equal (so identity differs from equality, as Mühl's
identity-based routing needs). Every relation is computed on point sets, hence exact;
perfect mergers exist when the union is an interval, or as a set when every input is one;
the imperfect merger is the hull interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from pubsift.core.model import FilterModel

DOMAIN = 16


@dataclass(frozen=True)
class Iv:
    lo: int
    hi: int

    @property
    def points(self) -> frozenset[int]:
        return frozenset(range(self.lo, self.hi + 1))

    def __repr__(self) -> str:
        return f"[{self.lo},{self.hi}]"


@dataclass(frozen=True)
class Pts:
    pts: frozenset[int]

    @property
    def points(self) -> frozenset[int]:
        return self.pts

    def __repr__(self) -> str:
        return "{" + ",".join(map(str, sorted(self.pts))) + "}"


class ToyModel(FilterModel):
    capabilities = frozenset({"covers", "identical", "overlaps", "merge", "imperfect_merge"})

    def __init__(self, name: str = "toy") -> None:
        self.name = name

    def parse_filter(self, spec: str | Mapping[str, Any]) -> Iv | Pts:
        text = str(spec).strip()
        if text.startswith("["):
            lo, hi = text[1:-1].split(",")
            return Iv(int(lo), int(hi))
        return Pts(frozenset(int(x) for x in text.strip("{}").split(",")))

    def parse_event(self, raw: Any) -> int:
        return int(raw)

    def matches(self, f: Iv | Pts, e: int) -> bool:
        return e in f.points

    def covers(self, f: Iv | Pts, g: Iv | Pts) -> bool:
        return f.points >= g.points

    def identical(self, f: Iv | Pts, g: Iv | Pts) -> bool:
        return f.points == g.points

    def overlaps(self, f: Iv | Pts, g: Iv | Pts) -> bool:
        return bool(f.points & g.points)

    def merge(self, fs: Sequence[Iv | Pts], perfect: bool = True) -> Iv | Pts | None:
        union = frozenset().union(*(f.points for f in fs))
        lo, hi = min(union), max(union)
        if len(union) == hi - lo + 1:
            return Iv(lo, hi)
        if not perfect:
            return Iv(lo, hi)
        if all(isinstance(f, Pts) for f in fs):
            return Pts(union)
        return None

    def dump_filter(self, f: Iv | Pts) -> Any:
        return {"iv": [f.lo, f.hi]} if isinstance(f, Iv) else {"pts": sorted(f.pts)}

    def load_filter(self, obj: Any) -> Iv | Pts:
        return Iv(*obj["iv"]) if "iv" in obj else Pts(frozenset(obj["pts"]))

    def dump_event(self, e: int) -> Any:
        return e

    def load_event(self, obj: Any) -> int:
        return int(obj)


@st.composite
def toy_filters(draw: st.DrawFn) -> Iv | Pts:
    """Mostly intervals (small and large, so covering is frequent), some point sets."""
    lo = draw(st.integers(0, DOMAIN - 1))
    hi = min(DOMAIN - 1, lo + draw(st.sampled_from([0, 1, 2, 4, 8, 15])))
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return Pts(frozenset(range(lo, hi + 1)))
    if kind == 1:
        return Pts(frozenset(draw(st.lists(st.integers(0, DOMAIN - 1), min_size=1, max_size=4))))
    return Iv(lo, hi)


def toy_events() -> st.SearchStrategy[int]:
    return st.integers(0, DOMAIN - 1)
