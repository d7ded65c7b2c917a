"""Identity, covering, overlap and merging of conjunctive filters (Mühl 2002, §4.3.4-4.3.7,
Cor. 4.1-4.3; Conan 2018, §4.3.4-4.3.10).

With at most one attribute filter per attribute the filter relations reduce to the
attribute filters (:mod:`.relations`). Two refinements make the corollaries exact here:

* An attribute a filter does not constrain may hold *any value or be absent*; since
  ``not-exists`` makes "absent" a value, no single constraint covers that (``exists`` does
  not admit absence), so ``F1 ⊒ F2`` needs every attribute of F1 to be constrained in F2.
* A filter with an unsatisfiable attribute filter (L_A = ∅, e.g. ``x != null``) matches
  nothing: it is covered by every filter and overlaps none.

``integer_attrs`` names the attributes whose numbers are integers (from the schema).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache, reduce
from typing import Any

from pubsift.models.constraints import (
    ABSENT,
    Constraint,
    TooComplex,
    ValueSet,
    everything,
    surely_equal,
    value_set,
)
from pubsift.models.constraints import relations as rel
from pubsift.models.records.filters import RecordFilter

_NO_INTS: frozenset[str] = frozenset()


def satisfiable(f: RecordFilter, integer_attrs: frozenset[str] = _NO_INTS) -> bool:
    """N(f) ≠ ∅: every attribute filter admits some value."""
    return _satisfiable(f, frozenset(integer_attrs))


@lru_cache(maxsize=65536)
def _satisfiable(f: RecordFilter, integer_attrs: frozenset[str]) -> bool:
    return all(_admits_some(c, n in integer_attrs) for n, c in f)


def _admits_some(c: Constraint, integer: bool) -> bool:
    """L_A(c) ≠ ∅; True for a constraint without an automaton (cidr, too large ones):
    covers then answers False and overlaps True, the sound answers."""
    try:
        return not value_set(c, integer).is_empty()
    except TooComplex:
        return True


def covers(f: RecordFilter, g: RecordFilter, integer_attrs: frozenset[str] = _NO_INTS) -> bool:
    """N(f) ⊇ N(g), exactly (Cor. 4.2: every attribute filter of f covers the one of g on
    the same attribute)."""
    if f == g:
        return True
    gd = g.as_dict()
    for name, c in f:
        d = gd.get(name)
        if d is None or not rel.covers(c, d, name in integer_attrs):
            return not satisfiable(g, integer_attrs)
    return True


def identical(f: RecordFilter, g: RecordFilter, integer_attrs: frozenset[str] = _NO_INTS) -> bool:
    """N(f) = N(g), exactly (Cor. 4.1: same attributes, pairwise identical)."""
    if f == g:
        return True
    sf, sg = satisfiable(f, integer_attrs), satisfiable(g, integer_attrs)
    if not (sf and sg):
        return sf == sg
    if f.names != g.names:
        return False
    return all(
        rel.identical(c, d, n in integer_attrs)
        for (n, c), (_, d) in zip(f.constraints, g.constraints)
    )


def overlaps(f: RecordFilter, g: RecordFilter, integer_attrs: frozenset[str] = _NO_INTS) -> bool:
    """N(f) ∩ N(g) ≠ ∅, exactly (Cor. 4.3: no attribute with disjoint attribute filters)."""
    if not (satisfiable(f, integer_attrs) and satisfiable(g, integer_attrs)):
        return False
    gd = g.as_dict()
    for name, c in f:
        d = gd.get(name)
        if d is not None and not rel.overlaps(c, d, name in integer_attrs):
            return False
    return True


def witness_record(
    f: RecordFilter,
    integer_attrs: frozenset[str] = _NO_INTS,
    avoid: Iterable[Mapping[str, Any]] = (),
) -> dict[str, Any] | None:
    """Attribute values of a notification in N(f) (absent attributes left out), preferring
    per attribute values that no mapping of ``avoid`` has; None if N(f) = ∅. The mapping
    is empty for a filter of ``not-exists`` tests only: add any other attribute."""
    if not satisfiable(f, integer_attrs):
        return None
    avoid = list(avoid)
    out = {}
    for name, c in f:
        v = rel.witness(c, [a[name] for a in avoid if name in a], name in integer_attrs)
        if v is not ABSENT:
            out[name] = v
    return out


def counterexample(
    f: RecordFilter, g: RecordFilter, integer_attrs: frozenset[str] = _NO_INTS
) -> dict[str, Any] | None:
    """Attribute values of a notification in N(g) \\ N(f) (the construction of Lemma 4.5),
    or None when f covers g. Attributes constrained by neither are left out."""
    if covers(f, g, integer_attrs):
        return None
    gd = g.as_dict()
    for name, c in f:
        d = gd.get(name)
        integer = name in integer_attrs
        allowed = _attr_set(g, name, integer_attrs)
        if d is None or not rel.covers(c, d, integer):
            v = rel.witness_of(allowed - value_set(c, integer))
            out = witness_record(
                RecordFilter.of({k: x for k, x in gd.items() if k != name}), integer_attrs
            )
            assert out is not None  # g without this attribute filter is satisfiable too
            if v is not ABSENT:
                out[name] = v
            return out
    raise AssertionError("unreachable: covers() is exact")


def conjoin_filters(
    f: RecordFilter, g: RecordFilter, integer_attrs: frozenset[str] = _NO_INTS
) -> RecordFilter:
    """The filter matching N(f) ∩ N(g), one constraint per attribute (§4.3.2). Raises
    :class:`~.relations.Unsatisfiable` / :class:`~.relations.NotRepresentable`."""
    out = f.as_dict()
    for name, d in g:
        c = out.get(name)
        out[name] = d if c is None else rel.conjoin(c, d, name in integer_attrs)
    return RecordFilter.of(out)


def _attr_set(f: RecordFilter, name: str, integer_attrs: frozenset[str]) -> ValueSet:
    c = f.get(name)
    integer = name in integer_attrs
    return everything(integer, absent=True) if c is None else value_set(c, integer)


def differing_attributes(
    f: RecordFilter, g: RecordFilter, integer_attrs: frozenset[str] = _NO_INTS
) -> frozenset[str]:
    """The attributes on which f and g impose different value sets (an attribute one of
    them leaves unconstrained counts as "any value or absent"). Merge candidates (§4.3.7,
    Fig. 4.9) are the filters that differ from f on exactly one attribute."""
    names = set(f.names) | set(g.names)
    return frozenset(n for n in names if not _same(f.get(n), g.get(n), n in integer_attrs))


def _same(c: Constraint | None, d: Constraint | None, integer: bool) -> bool:
    if c is None or d is None:
        return c is d
    return rel.identical(c, d, integer)


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
    _satisfiable.cache_clear()
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
        n for n in names if not all(_same(live[0].get(n), f.get(n), n in ints) for f in live[1:])
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
        sets = [_attr_set(merger, name, integer_attrs)]
        sets += [_attr_set(f, name, integer_attrs) for f in fs]
        atoms = [everything(name in integer_attrs, absent=True)]
        distinct = {merger.get(name)} | {f.get(name) for f in fs}
        for c in distinct:
            s = _attr_set(RecordFilter.of({} if c is None else {name: c}), name, integer_attrs)
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


__all__ = [
    "conjoin_filters",
    "counterexample",
    "covers",
    "differing_attributes",
    "identical",
    "imperfection",
    "merge",
    "overlaps",
    "satisfiable",
    "witness_record",
]
