"""Column-wise matching of a parsed chunk against the index's filters in arrays (step 3 of
:mod:`~pubsift.models.records.columnar`).

Each held filter is *anchored* by one of its constraints, the most selective first, as
the index orders paths: an equality or set membership on strings or numbers (a hash by
value, probed with the chunk's distinct strings from Arrow's dictionary encoding, or
``np.searchsorted`` into the sorted numbers), a prefix or suffix (a hash by affix, probed
with each distinct string's affixes of the held lengths), or a numeric bound (the filters
sorted by their finite end, so that those a value may satisfy are a prefix of the sorted
list: one ``np.searchsorted`` per row). NumPy ``repeat`` turns the anchors into (row,
filter) candidate pairs, in blocks of at most :data:`PAIR_BUDGET` pairs. The filters'
numeric constraints (``=``, ``<``, ``≤``, ``>``, ``≥``, intervals; a range anchor's other
end too) are compared on the pairs as float64 arrays (exact: every value and bound is a
double or an integer of magnitude at most 2^53); any other constraint is tested with the
model's compiled test (``compiled.compile_test``) on the pair's exact Python value. Filters
with no anchor are candidates of every row. The pairs that pass become (row, key) pairs
through the filters' key table. The :class:`Plan` built from the index (anchors, bounds,
key table) is cached on the index (``RecordsIndex._columnar_cache``), dropped when
``add``/``remove`` change it and not pickled. Answers equal ``RecordsIndex.match``'s
row by row (docs/records-syntax.md §5; tests/records/test_columnar.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from typing import Any

from pubsift.core.gc_pause import paused
from pubsift.models.constraints import ABSENT, NUM, STR, Constraint, Op
from pubsift.models.records.column_views import EXACT
from pubsift.models.records.compiled import compile_test

#: Candidate (row, filter) pairs are checked in blocks of rows holding at most this many
#: (memory stays bounded when many filters are candidates of every row).
PAIR_BUDGET = 1 << 20


# ------------------------------------------------------------------------------------------
# the plan: the index's filters as arrays


def _exact_number(x: Any) -> bool:
    """A number whose float64 is exact and comparable (bool is not a number)."""
    c = x.__class__
    if c is float:
        return x == x  # ±inf are fine bounds; NaN never occurs in filters
    return c is int and -EXACT <= x <= EXACT


def _anchor_values(c: Constraint) -> list | None:
    """The values an anchoring constraint accepts (strings or exact numbers), or None."""
    if c.op is Op.EQ:
        x = c.operand
        return [x] if (x.__class__ is str or _exact_number(x)) else None
    if c.op is Op.IN_SET:
        vals = []
        for k, x in c.operand:
            if not ((k == STR and x.__class__ is str) or (k == NUM and _exact_number(x))):
                return None
            vals.append(x)
        return vals
    return None


def _bounds(c: Constraint) -> tuple | None:
    """(lo, hi, lo_closed, hi_closed) of a numeric constraint, or None."""
    op, x = c.op, c.operand
    if op is Op.IN_RANGE:
        if x.kind != NUM or not (_exact_number(x.lo) and _exact_number(x.hi)):
            return None
        return (float(x.lo), float(x.hi), x.lo_closed, x.hi_closed)
    if op in (Op.EQ, Op.LT, Op.LE, Op.GT, Op.GE) and _exact_number(x):
        v = float(x)
        inf = float("inf")
        return {
            Op.EQ: (v, v, True, True),
            Op.LT: (-inf, v, True, False),
            Op.LE: (-inf, v, True, True),
            Op.GT: (v, inf, False, True),
            Op.GE: (v, inf, True, True),
        }[op]
    return None


def _anchor(c: Constraint) -> tuple | None:
    """How a constraint can anchor its filter, most selective first: (rank, kind, data)
    with kind "hash" (values: strings and exact numbers), "prefix"/"suffix" (a string)
    or "range" (numeric bounds); None if it cannot."""
    vals = _anchor_values(c)
    if vals is not None:
        return ((0 if c.op is Op.EQ else 1, len(vals)), "hash", vals)
    if c.op is Op.PREFIX or c.op is Op.SUFFIX:
        return ((2, -len(c.operand)), c.op.value, c.operand)
    b = _bounds(c)
    if b is not None:
        return ((3, 0), "range", b)
    return None


class _Anchors:
    """The filters anchored on one attribute: strings and numbers by value, prefixes and
    suffixes by string, ranges by their finite end (sorted, so that the filters a value
    may fall into are a prefix of the sorted list)."""

    def __init__(self) -> None:
        self.strs: dict[str, list[int]] = {}
        self.nums: dict[float, list[int]] = {}
        self.prefix: dict[str, list[int]] = {}
        self.suffix: dict[str, list[int]] = {}
        self.ranges: list[tuple[int, float, float, bool, bool]] = []

    def add(self, fid: int, kind: str, data: Any) -> None:
        if kind == "hash":
            for v in data:
                (
                    self.strs.setdefault(v, [])
                    if v.__class__ is str
                    else self.nums.setdefault(float(v), [])
                ).append(fid)
        elif kind == "prefix":
            self.prefix.setdefault(data, []).append(fid)
        elif kind == "suffix":
            self.suffix.setdefault(data, []).append(fid)
        else:
            self.ranges.append((fid, *data))

    def freeze(self) -> None:
        import numpy as np

        nums = sorted(self.nums.items())
        self.num_values = np.array([v for v, _ in nums], dtype=np.float64)
        flat: list[int] = []
        starts = []
        for _, fids in nums:
            starts.append(len(flat))
            flat.extend(fids)
        self.num_start = np.array(starts, dtype=np.int64)
        self.num_count = np.array([len(f) for _, f in nums], dtype=np.int64)
        self.num_flat = np.array(flat, dtype=np.int64)
        self.prefix_lengths = sorted({len(p) for p in self.prefix})
        self.suffix_lengths = sorted({len(s) for s in self.suffix})
        # ranges: by a finite lower end (v >= lo or v > lo), else by the upper end negated
        # (v <= hi iff -hi <= -v); (lo, hi) = (-inf, inf) sorts first by its lower end
        sides: dict[tuple[str, bool], list[tuple[float, int]]] = {}
        for fid, lo, hi, lc, hc in self.ranges:
            if lo != float("-inf") or hi == float("inf"):
                sides.setdefault(("lo", lc), []).append((lo, fid))
            else:
                sides.setdefault(("hi", hc), []).append((-hi, fid))
        self.sorted_ranges = []
        for (side, closed), items in sides.items():
            items.sort()
            self.sorted_ranges.append(
                (
                    np.array([v for v, _ in items], dtype=np.float64),
                    np.array([f for _, f in items], dtype=np.int64),
                    closed,
                    side == "hi",
                )
            )
        self.has_strings = bool(self.strs or self.prefix or self.suffix)

    def for_strings(self, dictionary: list[str]) -> tuple[Any, Any, Any]:
        """(start, count, flat): the filters anchored on each string of ``dictionary``
        (plus one empty slot for nulls), as runs of one flat array."""
        import numpy as np

        strs, prefix, suffix = self.strs, self.prefix, self.suffix
        plen, slen = self.prefix_lengths, self.suffix_lengths
        flat: list[int] = []
        starts, counts = [], []
        for s in dictionary:
            start = len(flat)
            hit = strs.get(s)
            if hit:
                flat.extend(hit)
            for n in plen:
                if n > len(s):
                    break
                hit = prefix.get(s[:n])
                if hit:
                    flat.extend(hit)
            for n in slen:
                if n > len(s):
                    break
                hit = suffix.get(s[len(s) - n :])
                if hit:
                    flat.extend(hit)
            starts.append(start)
            counts.append(len(flat) - start)
        return (
            np.array(starts + [0], dtype=np.int64),
            np.array(counts + [0], dtype=np.int64),
            np.array(flat, dtype=np.int64),
        )


class Plan:
    """The index's filters in arrays: anchors by attribute, numeric bounds by attribute,
    the other constraints as compiled tests, and the keys of each filter."""

    def __init__(self, index: Any) -> None:
        import numpy as np

        entries = list(index._entries.values())
        key_ids: dict[Hashable, int] = {}
        keys: list[Hashable] = []
        fk_start: list[int] = []
        fk_count: list[int] = []
        fk_flat: list[int] = []
        self.duplicates = False  # some key is held by several filters
        for e in entries:
            fk_start.append(len(fk_flat))
            fk_count.append(len(e.keys))
            for k in e.keys:
                kid = key_ids.get(k)
                if kid is None:
                    kid = key_ids[k] = len(keys)
                    keys.append(k)
                else:
                    self.duplicates = True
                fk_flat.append(kid)
        self.key_table = _key_array(np, keys)
        # the keys themselves, for answer sets (no new int objects per delivery)
        self.key_objects = np.empty(len(keys), dtype=object)
        self.key_objects[:] = keys
        self.fk_start = np.array(fk_start, dtype=np.int64)
        self.fk_count = np.array(fk_count, dtype=np.int64)
        self.fk_flat = np.array(fk_flat, dtype=np.int64)

        n = len(entries)
        self.anchors: dict[str, _Anchors] = {}
        floating: list[int] = []  # filters without an anchor: candidates of every row
        bounds: dict[str, list] = {}
        str_eq: dict[str, tuple] = {}
        self.general: dict[int, list[tuple[str, Any]]] = {}
        for fid, e in enumerate(entries):
            best = None
            for name, c in e.filter.constraints:
                a = _anchor(c)
                if a is not None and (best is None or a[0] < best[0][0]):
                    best = (a, name)
            if best is None:
                floating.append(fid)
                exact = None
            else:
                (_, kind, data), exact = best
                self.anchors.setdefault(exact, _Anchors()).add(fid, kind, data)
                if kind == "range":
                    exact = None  # candidates lie below one end: test both ends
            for name, c in e.filter.constraints:
                if name == exact:
                    continue
                b = _bounds(c)
                if c.op is Op.EQ and c.operand.__class__ is str:
                    col = str_eq.get(name)
                    if col is None:
                        col = str_eq[name] = (np.zeros(n, bool), [None] * n)
                    col[0][fid] = True
                    col[1][fid] = c.operand
                elif b is None:
                    self.general.setdefault(fid, []).append((name, compile_test(c)))
                else:
                    bcol = bounds.get(name)
                    if bcol is None:
                        inf = float("inf")
                        bcol = bounds[name] = [
                            np.zeros(n, bool),
                            np.full(n, -inf),
                            np.full(n, inf),
                            np.ones(n, bool),
                            np.ones(n, bool),
                        ]
                    bcol[0][fid] = True
                    bcol[1][fid], bcol[2][fid], bcol[3][fid], bcol[4][fid] = b
        for anchor in self.anchors.values():
            anchor.freeze()
        self.floating_ids = np.array(floating, dtype=np.int64)
        self.bounds = bounds
        # string equalities besides the anchor: per attribute, which filters have one,
        # their distinct constants and each filter's constant as an index into them
        self.str_eq: dict[str, tuple] = {}
        for name, (has, consts) in str_eq.items():
            distinct = sorted({c for c in consts if c is not None})
            where = {c: i for i, c in enumerate(distinct)}
            self.str_eq[name] = (
                has,
                distinct,
                np.array([-1 if c is None else where[c] for c in consts], dtype=np.int64),
            )
        self.has_general = np.zeros(n, bool)
        self.has_general[list(self.general)] = True
        # attributes where JSON null and a missing attribute answer differently
        self.null_names = null_names(index)


# ------------------------------------------------------------------------------------------
# matching one chunk: candidates and checks


def _expand(starts: Any, counts: Any, flat: Any) -> tuple[Any, Any]:
    """For each i, flat[starts[i]:starts[i] + counts[i]]: (owner i of each item, items)."""
    import numpy as np

    total = int(counts.sum())
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    if not total:
        return owner, np.empty(0, np.int64)
    ends = np.cumsum(counts)
    pos = np.arange(total, dtype=np.int64) - np.repeat(ends - counts, counts)
    return owner, flat[np.repeat(starts, counts) + pos]


def _sources(plan: Plan, view: Any, fast: Any) -> list[tuple[Any, Any, Any]]:
    """The candidate filters of the chunk's rows ``fast``: a list of (starts, counts,
    flat), row i of ``fast`` having the candidates flat[starts[i]:starts[i] + counts[i]]
    of each, read through ``view`` (an :class:`ArrowView`)."""
    import numpy as np

    out = []
    zeros = np.zeros(len(fast), np.int64)
    for name, a in plan.anchors.items():
        strings = view.strings(name) if a.has_strings else None
        if strings is not None:
            dictionary, codes = strings
            dstart, dcount, dflat = a.for_strings(dictionary)
            codes = codes[fast]
            out.append((dstart[codes], dcount[codes], dflat))
        if not (len(a.num_values) or a.sorted_ranges):
            continue
        v = view.numbers(name)
        if v is None:
            continue  # missing, an object, or no number: nothing to anchor
        v = v[fast]
        number = ~np.isnan(v)  # null: no number
        if len(a.num_values):
            pos = np.minimum(np.searchsorted(a.num_values, v), len(a.num_values) - 1)
            hit = a.num_values[pos] == v
            out.append(
                (
                    np.where(hit, a.num_start[pos], 0),
                    np.where(hit, a.num_count[pos], 0),
                    a.num_flat,
                )
            )
        for ends, fids, closed, negated in a.sorted_ranges:
            x = -v if negated else v
            count = np.searchsorted(ends, x, side="right" if closed else "left")
            out.append((zeros, np.where(number, count, 0), fids))
    if len(plan.floating_ids):
        out.append((zeros, np.full(len(fast), len(plan.floating_ids), np.int64), plan.floating_ids))
    return out


def _blocks(sources: list, n: int, budget: int) -> list[tuple[int, int]]:
    """Ranges of rows whose candidate pairs number at most ``budget`` (or one row)."""
    import numpy as np

    if not sources or not n:
        return []
    cum = np.cumsum(sum(c for _, c, _ in sources))
    edges = [0]
    while edges[-1] < n:
        start = edges[-1]
        base = int(cum[start - 1]) if start else 0
        end = int(np.searchsorted(cum, base + budget, side="right"))
        edges.append(min(n, max(end, start + 1)))
    return list(itertools.pairwise(edges))


def _candidates(sources: list, fast: Any, lo: int, hi: int) -> tuple[Any, Any]:
    """(row, filter) candidate pairs of the rows fast[lo:hi] (in no order)."""
    import numpy as np

    prs, pfs = [], []
    for starts, counts, flat in sources:
        owner, fids = _expand(starts[lo:hi], counts[lo:hi], flat)
        prs.append(fast[lo:hi][owner])
        pfs.append(fids)
    if not prs:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(prs), np.concatenate(pfs)


def _check(plan: Plan, view: Any, pr: Any, pf: Any) -> Any:
    """The candidate pairs whose filters hold on their rows, read through ``view``."""
    import numpy as np

    keep = np.ones(len(pr), bool)
    for name, (has, lo, hi, loc, hic) in plan.bounds.items():
        sel = np.flatnonzero(has[pf])
        if not len(sel):
            continue
        nums = view.numbers(name)
        if nums is None:
            keep[sel] = False  # not a number: no numeric constraint holds
            continue
        v = nums[pr[sel]]
        f = pf[sel]
        with np.errstate(invalid="ignore"):
            ok = np.where(loc[f], v >= lo[f], v > lo[f])
            ok &= np.where(hic[f], v <= hi[f], v < hi[f])  # NaN (null) fails both
        keep[sel] &= ok
    for name, (has, distinct, const) in plan.str_eq.items():
        sel = np.flatnonzero(has[pf])
        if not len(sel):
            continue
        strings = view.strings(name)
        if strings is None:
            keep[sel] = False  # not a string: no string equals
            continue
        dictionary, codes = strings
        code_of = {s: i for i, s in enumerate(dictionary)}
        # each constant's code in this chunk (-1: absent); a row without a string has
        # code len(dictionary): never equal
        const_code = np.array([code_of.get(c, -1) for c in distinct] + [-1], dtype=np.int64)
        keep[sel] &= codes[pr[sel]] == const_code[const[pf[sel]]]
    if plan.general:
        idx = np.flatnonzero(keep & plan.has_general[pf])
        if len(idx):
            general, value = plan.general, view.value
            for i in idx.tolist():
                r = int(pr[i])
                for name, test in general[int(pf[i])]:
                    if not test(value(name, r)):
                        keep[i] = False
                        break
    return keep


def match_view(plan: Plan, view: Any, fast: Any) -> tuple[Any, Any]:
    """(rows, key ids) of the chunk's rows ``fast`` (chunk row numbers, in no order; a
    key twice for a row when two of its filters share it, see ``plan.duplicates``)."""
    import numpy as np

    sources = _sources(plan, view, fast)
    out_r, out_k = [], []
    for lo, hi in _blocks(sources, len(fast), PAIR_BUDGET):
        pr, pf = _candidates(sources, fast, lo, hi)
        keep = _check(plan, view, pr, pf)
        pr, pf = pr[keep], pf[keep]
        owner, kids = _expand(plan.fk_start[pf], plan.fk_count[pf], plan.fk_flat)
        out_r.append(pr[owner])
        out_k.append(kids)
    if not out_r:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(out_r), np.concatenate(out_k)


# ------------------------------------------------------------------------------------------
# answers and keys


def answer_sets(plan: Plan, rows: Any, kids: Any, run: Any) -> list[set[Hashable]]:
    """The answer set of each row of ``run`` (ascending), from its (row, key id) pairs."""
    import numpy as np

    if len(rows) > 1 and (np.diff(rows) < 0).any():
        order = np.argsort(rows, kind="stable")
        rows, kids = rows[order], kids[order]
    keys = plan.key_objects[kids].tolist()
    ends = np.searchsorted(rows, run, side="left").tolist()
    ends.append(len(keys))
    with paused():  # the sets hold keys only: no cycles for the collector to find
        return [set(keys[a:b]) for a, b in itertools.pairwise(ends)]


def _int64_key(k: Any) -> bool:
    return k.__class__ is int and -(2**63) <= k < 2**63


def _key_array(np: Any, keys: list, ints: bool | None = None) -> Any:
    """``keys`` as an array: int64 if ``ints`` (by default: if each of them is an int of
    that range), else objects."""
    if ints if ints is not None else all(map(_int64_key, keys)):
        return np.array(keys, dtype=np.int64)
    out = np.empty(len(keys), dtype=object)
    out[:] = keys
    return out


def columnar_plan(index: Any) -> Plan:
    """The index's filters as arrays (step 3), made on first use."""
    cache = index._columnar_cache()
    if "plan" not in cache:
        cache["plan"] = Plan(index)
    return cache["plan"]


def null_names(index: Any) -> set[str]:
    """The attributes where JSON null and a missing attribute answer differently (some
    held filter's constraint on them tells the two apart)."""
    cache = index._columnar_cache()
    if "null_names" not in cache:
        cache["null_names"] = {
            name
            for e in index._entries.values()
            for name, c in e.filter.constraints
            if c.matches(None) != c.matches(ABSENT)
        }
    return cache["null_names"]


def answer_keys(index: Any, keys: list) -> Any:
    """Keys of answers as an array: int64 when every key the index holds is an int of
    that range, else objects (the same type whatever the batch finds)."""
    import numpy as np

    return _key_array(np, keys, int64_keys(index))


def int64_keys(index: Any) -> bool:
    """Whether every key the index holds is an int of int64's range (remembered until the
    index changes)."""
    cache = index._columnar_cache()
    if "int_keys" not in cache:
        cache["int_keys"] = all(_int64_key(k) for e in index._entries.values() for k in e.keys)
    return cache["int_keys"]
