"""Merging of conjunctive filters (Mühl 2002, §4.3.7; Conan 2018, §4.3.10): perfect
mergers (N = ∪N(fs)) of filters identical but for one attribute, merged pairwise until one
is left; imperfect ones as the hull of every shared attribute; and how imperfect a merger
is. The filter relations it relies on are :mod:`.covering`'s.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from functools import lru_cache, reduce

from pubsift.models.constraints import TooComplex, everything, surely_equal, value_set
from pubsift.models.constraints import relations as rel
from pubsift.models.records import covering
from pubsift.models.records.covering import (
    attribute_set,
    covers,
    same_set,
    satisfiable,
)
from pubsift.models.records.filters import RecordFilter

_NO_INTS: frozenset[str] = frozenset()


def _prune(fs: Sequence[RecordFilter], ints: frozenset[str]) -> list[RecordFilter]:
    """Drop unsatisfiable filters and filters covered by another one (keeping one of
    several identical filters): the union is unchanged."""
    live = list(dict.fromkeys(f for f in fs if satisfiable(f, ints)))
    out = []
    for i, f in enumerate(live):
        if not any(
            j != i and covers(g, f, ints) and (j < i or not covers(f, g, ints))
            for j, g in enumerate(live)
        ):
            out.append(f)
    return out


def merge(
    fs: Iterable[RecordFilter], perfect: bool = True, integer_attrs: frozenset[str] = _NO_INTS
) -> RecordFilter | None:
    """A merger of ``fs`` (Mühl §4.3.7).

    ``perfect=True``: a filter with N = ∪N(fs) exactly, or None. Found when (after dropping
    covered filters) the filters are identical but for one attribute whose attribute
    filters merge perfectly (:func:`.relations.merge`; if their union admits any value or
    absence the attribute is dropped), or, failing that, by merging such pairs repeatedly
    until one filter is left (e.g. four quadrants into one box).
    ``perfect=False``: the perfect merger if any, else an imperfect one covering all of
    fs: the :func:`.relations.hull` on every attribute constrained in all of them; the
    others are dropped. None only for an empty ``fs``. More than :data:`MERGE_GROUP`
    filters are merged group by group (bounded time; see there)."""
    fs = list(fs)
    if not fs:
        return None
    ints = frozenset(integer_attrs)
    if len(fs) == 2:  # routing merges pairs, the same ones at many brokers
        return _merge_two(fs[0], fs[1], perfect, ints)
    if len(fs) > MERGE_GROUP:
        return _merge_groups(list(dict.fromkeys(fs)), perfect, ints)
    return _merge(fs, perfect, ints)


#: The most filters merged as one group. Merging n filters compares them pairwise
#: (pruning covered filters, searching pairs to merge): quadratic or worse, 25 s for
#: 2,000 filters. More filters (:func:`_merge_groups`) are first tried as filters
#: identical but for one attribute (O(n log n): ``x in [i, i+1]`` for 20,000 values of i
#: merge into ``x in [0, 20000]``); failing that, an imperfect merger is the hull of each
#: attribute over all of them (what merging all at once falls back to, without its
#: search for a perfect merger), and a perfect one is searched for in groups of this size,
#: then among the groups' mergers, and so on: linear in n, exact when found (every step
#: keeps the union), but one that only pairs across groups would reveal is missed (None:
#: sound).
MERGE_GROUP = 32


def _merge_groups(
    fs: list[RecordFilter], perfect: bool, ints: frozenset[str]
) -> RecordFilter | None:
    live = [f for f in fs if satisfiable(f, ints)]
    if not live:
        return fs[0]
    differing = _differing(live, ints)
    if not differing:
        return live[0]
    if len(differing) == 1:  # the union is one attribute's: exact without pruning or groups
        found = _merge_one_attribute(live, ints)
        if found is not None or perfect:
            return found
    if not perfect:
        return _hulls(live, ints)
    while len(fs) > MERGE_GROUP:
        merged = []
        for i in range(0, len(fs), MERGE_GROUP):
            m = _merge(fs[i : i + MERGE_GROUP], perfect, ints)
            if m is None:  # perfect only: this group has no perfect merger
                return None
            merged.append(m)
        fs = merged
    return _merge(fs, perfect, ints)


def cache_clear() -> None:
    """Forget the cached satisfiability and pairwise mergers (benchmarks comparing two
    ways of asking the same pairs start both cold)."""
    covering.cache_clear()
    _merge_two.cache_clear()


@lru_cache(maxsize=65536)
def _merge_two(
    f: RecordFilter, g: RecordFilter, perfect: bool, ints: frozenset[str]
) -> RecordFilter | None:
    return _merge([f, g], perfect, ints)


def _merge(fs: list[RecordFilter], perfect: bool, ints: frozenset[str]) -> RecordFilter | None:
    live = _prune(fs, ints)
    if not live:
        return fs[0]
    found = _merge_one_attribute(live, ints)
    if found is None and len(live) > 2:
        found = _merge_pairwise(live, ints)
    if found is not None or perfect:
        return found
    return _hulls(live, ints)


def _hulls(live: list[RecordFilter], ints: frozenset[str]) -> RecordFilter:
    """The imperfect merger: the hull of every attribute constrained in all filters."""
    out = {}
    for name in sorted(set().union(*(f.names for f in live))):
        found = [f.get(name) for f in live]
        cs = [c for c in found if c is not None]
        if len(cs) < len(found):
            continue
        try:
            out[name] = rel.hull(cs, name in ints)
        except rel.NotRepresentable:
            continue
    return RecordFilter.of(out)


def _merge_one_attribute(live: list[RecordFilter], ints: frozenset[str]) -> RecordFilter | None:
    """The perfect merger of satisfiable filters that are identical but for one attribute
    (§4.3.7), or None. (Filters covering others need not be pruned first: the union of
    the attribute filters is the same.)"""
    if len(live) == 1:
        return live[0]
    differing = _differing(live, ints)
    if len(differing) != 1:
        return None
    (name,) = differing
    out = live[0].as_dict()
    found = [f.get(name) for f in live]
    cs = [c for c in found if c is not None]
    if len(cs) == len(found):
        try:
            union = rel.union_all([value_set(c, name in ints) for c in cs])
        except TooComplex:  # too costly to decide: no perfect merger found (sound)
            return None
        if not surely_equal(union, everything(name in ints, absent=True)):
            m = rel.merge(cs, name in ints)
            if m is None:
                return None
            out[name] = m
            return RecordFilter.of(out)
    del out[name]  # any value or absent: no attribute filter
    return RecordFilter.of(out)


def _differing(live: list[RecordFilter], ints: frozenset[str]) -> list[str]:
    """The attributes on which some filter differs from the first one."""
    names = sorted(set().union(*(f.names for f in live)))
    return [
        n for n in names if not all(same_set(live[0].get(n), f.get(n), n in ints) for f in live[1:])
    ]


def _merge_pairwise(live: list[RecordFilter], ints: frozenset[str]) -> RecordFilter | None:
    """Repeatedly replace two filters by their perfect merger; the result if one is left.
    Every step keeps the union, so the last filter is a perfect merger."""
    items = list(live)
    while len(items) > 1:
        for i, j in itertools.combinations(range(len(items)), 2):
            pair = _prune([items[i], items[j]], ints)
            m = _merge_one_attribute(pair, ints)
            if m is not None:
                items = [m] + [f for k, f in enumerate(items) if k not in (i, j)]
                break
        else:
            return None
    return items[0]


def imperfection(
    merger: RecordFilter, fs: Iterable[RecordFilter], integer_attrs: frozenset[str] = _NO_INTS
) -> float:
    """How much more than ∪N(fs) the merger admits, as a ratio; 0.0 iff it is perfect.

    Definition: on each attribute the value sets of the merger and of every filter (an
    unconstrained attribute: any value or absent) partition the values (and ABSENT) into
    *atoms*, the non-empty regions no filter tells apart. A *cell* is a choice of one atom
    per attribute: all notifications in a cell are matched alike by every filter involved.
    The figure is (cells the merger admits that no filter admits) / (cells some filter
    admits): e.g. merging ``x ∈ [0,1]`` and ``x ∈ [3,4]`` into ``x ∈ [0,4]`` adds one cell
    ``(1,3)`` to two: 0.5; merging ``{x=1 ∧ y=1}`` and ``{x=2 ∧ y=2}`` into
    ``{x∈{1,2} ∧ y∈{1,2}}`` adds the cells (1,2) and (2,1): 1.0. ``inf`` when the filters
    admit nothing but the merger does, or when the partition is too costly to compute
    (unions of many multi-value constraints, :class:`~.multivalues.TooComplex`)."""
    try:
        return _imperfection(merger, list(fs), integer_attrs)
    except TooComplex:
        return math.inf


def _imperfection(
    merger: RecordFilter, fs: list[RecordFilter], integer_attrs: frozenset[str]
) -> float:
    names = sorted(set(merger.names).union(*(f.names for f in fs)))
    per_name = []  # for each attribute: list of (in merger, frozenset of filters containing)
    for name in names:
        sets = [attribute_set(merger, name, integer_attrs)]
        sets += [attribute_set(f, name, integer_attrs) for f in fs]
        atoms = [everything(name in integer_attrs, absent=True)]
        distinct = {merger.get(name)} | {f.get(name) for f in fs}
        for c in distinct:
            s = attribute_set(RecordFilter.of({} if c is None else {name: c}), name, integer_attrs)
            atoms = [p for a in atoms for p in (a & s, a - s) if not p.is_empty()]
        per_name.append(
            [
                (a.issubset(sets[0]), frozenset(i for i, s in enumerate(sets[1:]) if a.issubset(s)))
                for a in atoms
            ]
        )
    merger_atoms = [[m for m in atoms if m[0]] for atoms in per_name]
    union_cells = _union_cells(per_name, len(fs))
    excess = _count(merger_atoms) - _union_cells(merger_atoms, len(fs))
    if union_cells == 0:
        return math.inf if excess else 0.0
    return excess / union_cells


def _count(per_name: list[list]) -> int:
    n = 1
    for atoms in per_name:
        n *= len(atoms)
    return n


def _union_cells(per_name: list[list], k: int) -> int:
    """Cells (one atom per attribute) inside N(f_i) for some i."""
    if _count(per_name) <= 200_000:
        return sum(
            1
            for cell in itertools.product(*per_name)
            if reduce(lambda acc, m: acc & m[1], cell, frozenset(range(k)))
        )
    total = 0  # inclusion-exclusion over the filters
    for r in range(1, k + 1):
        for subset in itertools.combinations(range(k), r):
            s = set(subset)
            term = 1
            for atoms in per_name:
                term *= sum(1 for m in atoms if s <= m[1])
            total += term if r % 2 else -term
    return total


__all__ = ["cache_clear", "imperfection", "merge"]
