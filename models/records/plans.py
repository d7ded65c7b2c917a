"""Compiled matching plans for the nodes of the records access tree (Mühl 2002, §4.3.8).

An :class:`~pubsift.models.records.attrindex.AttributeIndex` answers ``probe(v)`` with
buckets of items; the access tree of :mod:`~pubsift.models.records.index` then visits every
child node found, one Python step per node. A :class:`NodePlan` answers the same question
for all attributes of one node at once, with the children *folded*: each bucket is
precomputed as ``(keys, inner)``, the keys of every child's filter in one key set (a
frozenset; a tuple below :data:`SET_FROM` keys) and the children that have children of their own (to descend into). The walk hands each key
set found to ``update``; ``RecordsIndex.match`` collects them and builds the answer with
one ``set.update(*found)``, which copies frozensets with their stored hashes, table to
table, instead of hashing and probing key by key. The structures are those of the
attribute index, flattened:

* hash maps (``=``, ``in`` members, equals-ignore-case, ``instanceof``, prefixes,
  suffixes) map a value straight to its folded bucket;
* one-sided bounds (``<``, ``≤``, ``>``, ``≥``) keep their sorted bounds next to one flat
  list of keys in bound order, so the accepting run of items is one :mod:`bisect`; its
  keys are one precomputed frozenset of whole blocks (cumulated from the run's open end,
  :func:`run_block`) and a list slice shorter than a block;
* two-sided intervals become a table of *elementary regions*: the distinct endpoints
  ``p0 < p1 < ...`` cut the line into ``{v < p0}, {p0}, (p0, p1), {p1}, ...``; every region
  lies inside or outside each interval, so one :mod:`bisect` finds the region and its
  folded bucket. When the table would hold more than :data:`REGION_BUDGET` entries per
  interval (many long, nested intervals), the intervals are kept in a segment tree over
  the regions instead: a query unions the folded buckets on one leaf-to-root path,
  gathered per region when the plan is built (one bisect, one list lookup).
* everything else (``exists``, the residual operators, ``any`` over lists, values of
  other kinds than strings and numbers) goes through the attribute index's own
  ``probe`` and folds each item found.

The walk itself runs compiled when it can: :mod:`~pubsift.models.records._walk` (Cython,
built by ``pip install``) reads the parts' ``spec`` (the data of each closure below) and
runs the common parts as typed methods, with no Python call per part and per node; the
Python :func:`walk` is its reference and its fallback (no compiler, ``PUBSIFT_PURE_PYTHON``
set, or a build older than its source), and the tests run every script through both.

Answers are those of ``AttributeIndex.probe`` (the items of both are the same nodes);
the plans only change how they are reached. A plan is a snapshot: the index drops it when
the node's children change and builds it again (see ``RecordsIndex``).
"""

from __future__ import annotations

import os
import warnings
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pubsift.models.constraints import ABSENT
from pubsift.models.records.attrindex import AttributeIndex, SortedItems, _Ranges

#: Region tables hold at most this many (region, interval) entries per interval, plus
#: :data:`REGION_SLACK`; beyond that a segment tree (O(log) entries per interval) is used.
REGION_BUDGET = 16
REGION_SLACK = 256

Folded = tuple  # (keys: frozenset or tuple, see key_set; inner: tuple of nodes)
Part = Callable[[Any, Any, Any], None]  # part(value, update, extend)


def fold(nodes: Any) -> Folded:
    """The keys of the filters ending at ``nodes`` and those of them with children."""
    keys: list = []
    inner = []
    for n in nodes:
        if n.entry is not None:
            keys.extend(n.entry.keys)
        if n.children:
            inner.append(n)
    return (key_set(keys), tuple(inner))


#: Key sets of at least this many keys are frozensets (copied into the answer with their
#: stored hashes); smaller ones are tuples (a frozenset of a few keys costs 200 bytes and
#: more, and adding a few keys is as fast).
SET_FROM = 8


def key_set(keys: list) -> tuple | frozenset:
    """The keys of a folded bucket as the answer takes them fastest."""
    return frozenset(keys) if len(keys) >= SET_FROM else tuple(keys)


def apply_items(buckets: Any, update: Any, extend: Any) -> int:
    """Adds the keys of the nodes in ``buckets`` and queues their children (the unfolded
    path: dirty nodes and the operators without a compiled form); returns the number of
    nodes found."""
    inner = []
    found = 0
    for bucket in buckets:
        found += len(bucket)
        for n in bucket:
            if n.entry is not None:
                update(n.entry.keys)
            if n.children:
                inner.append(n)
    if inner:
        extend(inner)
    return found


#: A node's plan: per attribute name ``(name, on_str, on_num, absent, index)``: the parts
#: run for a string value, those for a number, the folded bucket for an absent attribute
#: (or None) and the attribute index itself (probed for values of other kinds).
NodePlan = tuple[Any, ...]


def compile_node(children: dict[str, AttributeIndex]) -> NodePlan:
    return tuple(_compile(name, ai) for name, ai in children.items())


def walk(root: Any, get: Any, update: Any) -> None:
    """Adds to the answer (``update``) the keys of every filter below ``root`` that the
    flat event (``get``) satisfies; ``root``'s own keys are the caller's. Nodes changed
    since their plan was built are walked unfolded until the walks have done the work
    :meth:`compile_after` says (their ``misses``), then compiled."""
    queue = [root]
    extend = queue.extend
    for node in queue:  # the loop sees the nodes extend() appends
        plan = node.plan
        if plan is None:
            plan = _unplanned(node, get, update, extend)
            if plan is None:
                continue
        run_plan(plan, get, update, extend)


def _unplanned(node: Any, get: Any, update: Any, extend: Any) -> NodePlan | None:
    """A node without a plan: walked unfolded (None), or its plan built now, once the
    unfolded walks have done the work :meth:`compile_after` says."""
    if not node.children:
        return None
    if node.misses < node.compile_after():
        node.misses += run_unfolded(node.children, get, update, extend)
        return None
    return compile_plan(node)


def run_plan(plan: NodePlan, get: Any, update: Any, extend: Any) -> None:
    """One node's walk through its plan: the keys found to ``update``, the inner nodes
    to ``extend``."""
    for name, on_str, on_num, absent, ai in plan:
        v = get(name, ABSENT)
        c = v.__class__
        if c is str:
            for p in on_str:
                p(v, update, extend)
        elif c is float or c is int:
            for p in on_num:
                p(v, update, extend)
        elif v is ABSENT:
            if absent is not None:
                update(absent[0])
                if absent[1]:
                    extend(absent[1])
        else:
            apply_items(ai.probe(v), update, extend)


def run_unfolded(children: dict[str, AttributeIndex], get: Any, update: Any, extend: Any) -> int:
    """What the plan does, straight from the attribute indexes; returns the work done
    (attributes probed and nodes found)."""
    work = 0
    for name, ai in children.items():
        work += 1
        v = get(name, ABSENT)
        if v is ABSENT and not ai.absent:
            continue
        work += apply_items(ai.probe(v), update, extend)
    return work


def compile_plan(node: Any) -> NodePlan:
    """Builds the node's plan (and its compiled form when the compiled walk is in use)."""
    plan = node.plan = compile_node(node.children)
    node.cplan = ENGINE.convert(plan) if ENGINE is not None else None
    return plan


def step(node: Any, attrs: dict[str, Any], found: set, queue: list) -> None:
    """One node of the compiled walk that has no compiled plan, in Python: walked
    unfolded, or compiled now (then walked through its plan once here); ``found`` is the
    answer."""
    update, get, extend = found.update, attrs.get, queue.extend
    plan = node.plan
    if plan is None:
        plan = _unplanned(node, get, update, extend)
        if plan is None:
            return
    elif ENGINE is not None:  # built while the Python walk was in use
        node.cplan = ENGINE.convert(plan)
    run_plan(plan, get, update, extend)


def _probe(ai: AttributeIndex, v: Any, found: set, queue: list) -> None:
    apply_items(ai.probe(v), found.update, queue.extend)


def _compile(name: str, ai: AttributeIndex) -> tuple:
    on_str, on_num = _parts(ai)
    absent = fold(ai.absent) if ai.absent else None
    return (name, _memoized(on_str), tuple(on_num), absent, ai)


def _parts(ai: AttributeIndex) -> tuple[list[Part], list[Part]]:
    """The parts probing ``ai`` with a string and with a number; those of its ``any``
    constraints (``ai.elements``: probed with the scalar itself) among them, compiled as
    the attribute's own (a node reached through one folds into this plan as any other:
    its changes drop the plan)."""
    on_str: list[Part] = []
    on_num: list[Part] = []
    if ai.eq_str:
        on_str.append(_hashed(ai.eq_str, None))
    if ai.ieq:
        on_str.append(_hashed(ai.ieq, str.casefold))
    if ai.inst:
        on_str.append(_hashed(ai.inst, None))
    if ai.pre_lens:
        on_str.append(_affixes(ai.pre, tuple(ai.pre_lens), prefix=True))
    if ai.suf_lens:
        on_str.append(_affixes(ai.suf, tuple(ai.suf_lens), prefix=False))
    if ai.strings.size:
        on_str.extend(_ranges(ai.strings))
    if ai.eq_num:
        on_num.append(_hashed(ai.eq_num, None))
    if ai.numbers.size:
        on_num.extend(_ranges(ai.numbers))
    common: list[Part] = []
    if ai.present:
        common.append(_always(fold(ai.present)))
    if ai.residual:
        common.append(_residual(ai.residual))
    on_str += common
    on_num += common
    if ai.elements is not None:
        sub_str, sub_num = _parts(ai.elements)
        on_str += sub_str
        on_num += sub_num
    return on_str, on_num


#: Distinct string values remembered per attribute plan (the memo is emptied when full).
MEMO_SIZE = 4096


def _memoized(parts: list[Part]) -> tuple[Part, ...]:
    """Several parts for strings (say ``=``, ``in`` and prefixes on ``symbol``) become
    one: the folded answer of all of them per string value, remembered (string values
    of an attribute repeat: symbols, types, sources)."""
    if len(parts) < 2 and all(_cheap(p) for p in parts):
        return tuple(parts)  # nothing to gain: one part the compiled walk runs in one step
    memo: dict[str, Folded] = {}
    get = memo.get

    def part(v: Any, update: Any, extend: Any) -> None:
        r = get(v)
        if r is None:
            keys: list = []
            inner: list = []
            for p in parts:
                p(v, keys.extend, inner.extend)
            if len(memo) >= MEMO_SIZE:
                memo.clear()
            r = memo[v] = (key_set(keys), tuple(inner))
        update(r[0])
        if r[1]:
            extend(r[1])

    # the compiled walk fills the same memo from the parts' compiled forms
    # (SET_FROM as it is now: key sets of that many keys on are frozensets)
    part.spec = ("memo", memo, tuple(parts), key_set, MEMO_SIZE, SET_FROM)  # type: ignore[attr-defined]
    return (part,)


def _cheap(p: Part) -> bool:
    """Whether the compiled walk runs ``p`` in one step: it has a spec, and is not a
    residual of several tests (anything-but on one attribute in several filters: a test
    per filter, where the memo answers a repeated value with one lookup)."""
    spec = getattr(p, "spec", None)
    return spec is not None and not (spec[0] == "residual" and len(spec[1]) > 1)


def _hashed(buckets: dict, normalize: Any) -> Part:
    table = {k: fold(b) for k, b in buckets.items()}
    get = table.get
    if normalize is None:

        def part(v: Any, update: Any, extend: Any) -> None:
            r = get(v)
            if r is not None:
                update(r[0])
                if r[1]:
                    extend(r[1])

        part.spec = ("hashed", table)  # type: ignore[attr-defined]
    else:

        def part(v: Any, update: Any, extend: Any) -> None:
            r = get(normalize(v))
            if r is not None:
                update(r[0])
                if r[1]:
                    extend(r[1])

    return part


def _affixes(buckets: dict, lengths: tuple[int, ...], prefix: bool) -> Part:
    get = {k: fold(b) for k, b in buckets.items()}.get

    def part(v: Any, update: Any, extend: Any) -> None:
        n = len(v)
        for length in lengths:
            if length <= n:
                r = get(v[:length] if prefix else v[n - length :])
                if r is not None:
                    update(r[0])
                    if r[1]:
                        extend(r[1])

    return part


def _always(r: Folded) -> Part:
    def part(v: Any, update: Any, extend: Any) -> None:
        update(r[0])
        if r[1]:
            extend(r[1])

    part.spec = ("always", r)  # type: ignore[attr-defined]
    return part


def _residual(residual: list) -> Part:
    tests = tuple((test, fold((item,))) for test, item in residual)

    def part(v: Any, update: Any, extend: Any) -> None:
        for test, r in tests:
            if test(v):
                update(r[0])
                if r[1]:
                    extend(r[1])

    # each test with its folded bucket and its ``spec`` (compiled.py: the data of an
    # anything-but test, which the compiled walk runs itself), or None
    part.spec = (  # type: ignore[attr-defined]
        "residual",
        tuple((test, r, getattr(test, "spec", None)) for test, r in tests),
    )
    return part


# -- ranges ------------------------------------------------------------------------------
def _ranges(r: _Ranges) -> list[Part]:
    parts: list[Part] = []
    for s, below, right in (
        (r.ge, True, True),
        (r.gt, True, False),
        (r.le, False, False),
        (r.lt, False, True),
    ):
        if s.bounds:
            parts.append(_one_sided(s, below, right))
    if r.two.los:
        parts.append(_two_sided(r.two.los, r.two.rest))
    if r.all:
        parts.append(_always(fold(r.all)))
    return parts


def _one_sided(s: SortedItems, below: bool, right: bool) -> Part:
    """Items accepting v form a run of the sorted items: ``items[:i]`` (lower bounds,
    ``below``) or ``items[i:]`` (upper bounds), i from bisect_right or bisect_left. The
    keys of a run are handed over as at most one precomputed frozenset (the keys of every
    whole block of :func:`run_block` keys the run covers, cumulated from the run's open
    end) and a slice shorter than a block."""
    keys: list = []
    inner: list = []
    koff = [0]
    ioff = [0]
    for n in s.items:
        if n.entry is not None:
            keys.extend(n.entry.keys)
        if n.children:
            inner.append(n)
        koff.append(len(keys))
        ioff.append(len(inner))
    bounds = list(s.bounds)
    search = bisect_right if right else bisect_left
    nk = len(keys)
    block = run_block(nk)
    if below:
        # heads[b]: the keys of keys[:b * block]
        heads = [frozenset(keys[: b * block]) for b in range(nk // block + 1)]

        def part(v: Any, update: Any, extend: Any) -> None:
            i = search(bounds, v)
            if i:
                k = koff[i]
                b = k // block
                if b:
                    update(heads[b])
                if k > b * block:
                    update(keys[b * block : k])
                j = ioff[i]
                if j:
                    extend(inner[:j])

        part.spec = ("below", bounds, keys, koff, ioff, inner, heads, block, right)  # type: ignore[attr-defined]
    else:
        # tails[b]: the keys of keys[b * block:]
        tails = [frozenset(keys[b * block :]) for b in range(nk // block + 1)]
        tails.append(frozenset())

        def part(v: Any, update: Any, extend: Any) -> None:
            i = search(bounds, v)
            k = koff[i]
            b = -(-k // block)
            if k < b * block:
                update(keys[k : b * block])
            if b * block < nk:
                update(tails[b])
            j = ioff[i]
            if j < len(inner):
                extend(inner[j:])

        part.spec = ("above", bounds, keys, koff, ioff, inner, tails, block, right)  # type: ignore[attr-defined]

    return part


#: Runs of one-sided bounds hand their keys over in blocks of at least this many keys.
RUN_BLOCK = 32
#: ... and in at most about this many blocks (the precomputed sets hold this many times
#: the run's keys at most).
RUN_BLOCKS = 16


def run_block(n: int) -> int:
    """The block size of a run of n keys."""
    return max(RUN_BLOCK, -(-n // RUN_BLOCKS))


def _two_sided(los: list, rest: list) -> Part:
    """Elementary regions of the endpoints: region 2i+1 is {p_i}, region 2i the values
    strictly between p_(i-1) and p_i (region 0 below p_0, region 2m above p_(m-1))."""
    points: list = sorted(set(los) | {hi for _, hi, _, _ in rest})
    m = len(points)
    spans = []
    for lo, (lc, hi, hc, item) in zip(los, rest):
        a = 2 * bisect_left(points, lo) + (1 if lc else 2)
        b = 2 * bisect_left(points, hi) + (1 if hc else 0)
        if a <= b:
            spans.append((a, b, item))
    total = sum(b - a + 1 for a, b, _ in spans)
    if total <= REGION_BUDGET * len(spans) + REGION_SLACK:
        regions: list[list] = [[] for _ in range(2 * m + 1)]
        for a, b, item in spans:
            for r in range(a, b + 1):
                regions[r].append(item)
        table = [fold(r) if r else None for r in regions]

        def by_region(v: Any, update: Any, extend: Any) -> None:
            i = bisect_left(points, v)
            r = table[2 * i + 1 if i < m and points[i] == v else 2 * i]
            if r is not None:
                update(r[0])
                if r[1]:
                    extend(r[1])

        by_region.spec = ("regions", points, table)  # type: ignore[attr-defined]
        return by_region
    # segment tree over the 2m + 1 regions: an interval sits in O(log m) canonical nodes
    size = 1
    while size < 2 * m + 1:
        size *= 2
    nodes: dict[int, list] = {}
    for a, b, item in spans:
        lo_, hi_ = a + size, b + size + 1
        while lo_ < hi_:
            if lo_ & 1:
                nodes.setdefault(lo_, []).append(item)
                lo_ += 1
            if hi_ & 1:
                hi_ -= 1
                nodes.setdefault(hi_, []).append(item)
            lo_ >>= 1
            hi_ >>= 1
    tree = {k: fold(items) for k, items in nodes.items()}
    # per region, the folded buckets on its leaf-to-root path, gathered once: (the
    # non-empty key sets, the inner nodes of all), None where the path holds nothing
    paths: list = []
    for r in range(2 * m + 1):
        keysets: list = []
        inner: list = []
        k = size + r
        while k:
            f = tree.get(k)
            if f is not None:
                if f[0]:
                    keysets.append(f[0])
                inner.extend(f[1])
            k >>= 1
        paths.append((tuple(keysets), tuple(inner)) if keysets or inner else None)

    def part(v: Any, update: Any, extend: Any) -> None:
        i = bisect_left(points, v)
        r = paths[2 * i + 1 if i < m and points[i] == v else 2 * i]
        if r is not None:
            for keys in r[0]:
                update(keys)
            if r[1]:
                extend(r[1])

    part.spec = ("paths", points, paths)  # type: ignore[attr-defined]
    return part


# -- the compiled walk -------------------------------------------------------------------
#: The layout of the parts' ``spec`` attributes (``_walk.SPEC`` must be equal).
SPEC = 4


def _engine() -> Any:
    """The compiled walk (:mod:`pubsift.models.records._walk`), or None: not built, built
    for other specs, or ``PUBSIFT_PURE_PYTHON`` set to a non-empty value."""
    if os.environ.get("PUBSIFT_PURE_PYTHON"):
        return None
    try:
        from pubsift.models.records import _walk  # type: ignore[attr-defined]
    except ImportError:
        return None
    if getattr(_walk, "SPEC", None) != SPEC:
        warnings.warn(
            f"{_walk.__file__} reads plans of another layout (SPEC {getattr(_walk, 'SPEC', None)}"
            f", plans.py has {SPEC}): walking in Python until it is rebuilt",
            stacklevel=2,
        )
        return None
    source = Path(__file__).with_name("_walk.pyx")
    if source.is_file() and source.stat().st_mtime > Path(_walk.__file__).stat().st_mtime:
        warnings.warn(
            f"{_walk.__file__} is older than {source}: walking in Python until it is "
            "rebuilt (pip install -e . or make install)",
            stacklevel=2,
        )
        return None
    _walk.setup(step, _probe)
    return _walk


#: The compiled walk in use (None: the Python walk, :func:`walk`).
ENGINE: Any = _engine()
