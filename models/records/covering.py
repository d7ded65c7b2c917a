"""Identity, covering and overlap of conjunctive filters (Mühl 2002, §4.3.4-4.3.6,
Cor. 4.1-4.3; Conan 2018, §4.3.4-4.3.9); merging is :mod:`.merging`.

With at most one attribute filter per attribute the filter relations reduce to the
attribute filters (:mod:`pubsift.models.constraints.relations`). Two refinements make the corollaries exact here:

* An attribute a filter does not constrain may hold *any value or be absent*; since
  ``not-exists`` makes "absent" a value, no single constraint covers that (``exists`` does
  not admit absence), so ``F1 ⊒ F2`` needs every attribute of F1 to be constrained in F2.
* A filter with an unsatisfiable attribute filter (L_A = ∅, e.g. ``x != null``) matches
  nothing: it is covered by every filter and overlaps none.

``integer_attrs`` names the attributes whose numbers are integers (from the schema).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from pubsift.models.constraints import (
    ABSENT,
    Constraint,
    TooComplex,
    ValueSet,
    everything,
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
        allowed = attribute_set(g, name, integer_attrs)
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


def attribute_set(f: RecordFilter, name: str, integer_attrs: frozenset[str]) -> ValueSet:
    """L_A of f's attribute filter on ``name`` (unconstrained: any value or absent)."""
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
    return frozenset(n for n in names if not same_set(f.get(n), g.get(n), n in integer_attrs))


def same_set(c: Constraint | None, d: Constraint | None, integer: bool) -> bool:
    """Two attribute filters (None: unconstrained) with the same value set."""
    if c is None or d is None:
        return c is d
    return rel.identical(c, d, integer)


def cache_clear() -> None:
    """Forget the cached satisfiability answers."""
    _satisfiable.cache_clear()


__all__ = [
    "attribute_set",
    "cache_clear",
    "conjoin_filters",
    "counterexample",
    "covers",
    "differing_attributes",
    "identical",
    "overlaps",
    "same_set",
    "satisfiable",
    "witness_record",
]
