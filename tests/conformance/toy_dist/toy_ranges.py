"""A third-party filter model: closed integer ranges ``lo..hi`` over integer events, the
smallest model that claims everything but an index (pubsift's conformance-kit example)."""

import re

from pubsift.core.errors import EventError, FilterSyntaxError
from pubsift.core.model import FilterModel

_RANGE = re.compile(r"(-?[0-9]{1,9})\.\.(-?[0-9]{1,9})")
_INT = re.compile(r"-?[0-9]{1,9}")


def _range(lo, hi):
    if type(lo) is not int or type(hi) is not int or not -(10**9) < lo <= hi < 10**9:
        raise FilterSyntaxError("a range is lo..hi, integers of at most 9 digits, lo <= hi")
    return (lo, hi)


class RangeModel(FilterModel):
    capabilities = frozenset({"covers", "identical", "overlaps", "merge", "imperfect_merge"})

    def parse_filter(self, spec):
        m = _RANGE.fullmatch(spec) if isinstance(spec, str) else None
        return _range(int(m[1]), int(m[2])) if m else _range(None, None)

    def format_filter(self, f):
        return f"{f[0]}..{f[1]}"

    def parse_event(self, raw):
        if isinstance(raw, bytes):
            raw = raw.decode("latin-1")
        if isinstance(raw, str) and _INT.fullmatch(raw):
            raw = int(raw)
        if type(raw) is not int or not -(10**9) < raw < 10**9:
            raise EventError("an event is an integer of at most 9 digits")
        return raw

    def matches(self, f, e):
        return f[0] <= e <= f[1]

    def covers(self, f, g):
        return f[0] <= g[0] and g[1] <= f[1]

    def overlaps(self, f, g):
        return max(f[0], g[0]) <= min(f[1], g[1])

    def merge(self, fs, perfect=True):
        (lo, reach), *rest = sorted(fs)
        for a, b in rest:
            if perfect and a > reach + 1:
                return None  # a gap: the hull would match more than the union
            reach = max(reach, b)
        return (lo, reach)

    def dump_filter(self, f):
        return list(f)

    def load_filter(self, obj):
        return _range(*obj) if isinstance(obj, list) and len(obj) == 2 else _range(None, None)

    def dump_event(self, e):
        return e

    def load_event(self, obj):
        return self.parse_event(obj if type(obj) is int else None)
