"""Sets of multi values (lists taken as sets) for the operators of Mühl 2002, §4.3.3 and
Table 4.7: subset, superset, contains, not-contains, disjoint, overlaps.

Each operator denotes a *cube* ``{X | X ⊆ U, L ⊆ X, X ∩ O_i ≠ ∅ for all i}`` with U and
each O_i a set of scalars (:class:`~.elements.Elems`: finite or co-finite for the operators
of Table 4.7; the value set of a scalar constraint for the "any element" constraints of
EventBridge patterns, ``X ∩ L_A(c) ≠ ∅``) and L finite; intersections of cubes are cubes,
the complement of a cube is a union of cubes, and a cube is non-empty iff ``L ⊆ U`` and
every ``O_i ∩ U`` is non-empty (then ``L`` plus one element of each ``O_i ∩ U`` is a
member). A :class:`MultiSet` is a finite union of cubes: closed under union, intersection
and complement, with emptiness decidable, so every relation is exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pubsift.models.constraints.elements import ALL_ELEMS, Elems
from pubsift.models.constraints.limits import TooComplex
from pubsift.models.constraints.values import skey


def _fresh(avoid: frozenset) -> tuple:
    i = 0
    while ("str", f"x{i}") in avoid:
        i += 1
    return ("str", f"x{i}")


def _member(o: Elems, avoid: frozenset, count: int) -> list[tuple]:
    """Up to ``count`` members of o not in ``avoid`` (skeys)."""
    if o.fin is not None:
        neg, elems = o.fin
        if neg:
            out: list[tuple] = []
            while len(out) < count:
                out.append(_fresh(elems | avoid | frozenset(out)))
            return out
        return sorted(elems - avoid, key=repr)[:count]
    out = []
    for e in o.samples():
        if e not in avoid and e not in out:
            out.append(e)
            if len(out) == count:
                break
    return out


@dataclass(frozen=True, slots=True)
class Cube:
    """``{X | X ⊆ upper, lower ⊆ X, X ∩ o ≠ ∅ for o in hits}`` (non-empty when built
    by :func:`cube`); ``upper`` and each hit are :class:`~.elements.Elems`, ``lower`` a
    frozenset of skeys."""

    upper: Elems
    lower: frozenset
    hits: frozenset

    def contains(self, x: frozenset) -> bool:
        up = self.upper
        return (
            all(up.has(e) for e in x)
            and self.lower <= x
            and all(any(o.has(e) for e in x) for o in self.hits)
        )

    def samples(self) -> Iterator[frozenset]:
        """The least member, then members with one more element."""
        x = set(self.lower)
        for o in sorted(self.hits, key=repr):
            if any(o.has(e) for e in x):
                continue
            x.update(_member(o, frozenset(x), 1))
        yield frozenset(x)
        for e in _member(self.upper, frozenset(x), 4):
            yield frozenset(x | {e})


def cube(upper: Elems, lower: frozenset, hits) -> Cube | None:
    """The normalized cube, or None if it is empty (exact: a finite X in the cube exists
    iff ``lower ⊆ upper`` and every hit meets ``upper``)."""
    if not all(upper.has(e) for e in lower):
        return None
    kept: list[Elems] = []
    for o in hits:
        o = o & upper
        if any(o.has(e) for e in lower):
            continue
        one = o.members(1)
        if one is not None:
            if not one:
                return None
            return cube(upper, lower | frozenset(one), hits)  # X ∩ {e} ≠ ∅ iff e ∈ X
        if o not in kept:
            kept.append(o)
    minimal = set()
    for o in kept:  # X ∩ o ≠ ∅ implies X ∩ o' ≠ ∅ for o ⊆ o'
        if not any(p != o and p.issubset(o) for p in kept):
            minimal.add(o)
    return Cube(upper, lower, frozenset(minimal))


ALL_CUBE = Cube(ALL_ELEMS, frozenset(), frozenset())


def _cube_and(a: Cube, b: Cube) -> Cube | None:
    return cube(a.upper & b.upper, a.lower | b.lower, a.hits | b.hits)


def _cube_not(c: Cube) -> list[Cube]:
    out = []
    if c.upper != ALL_ELEMS:
        out.append(cube(ALL_ELEMS, frozenset(), [~c.upper]))
    out += [cube(Elems((True, frozenset([e]))), frozenset(), ()) for e in c.lower]
    out += [cube(~o, frozenset(), ()) for o in c.hits]
    return [x for x in out if x is not None]


MAX_CUBES = 4096


class MultiSet:
    """A set of multi values: a union of :class:`Cube`. Operations on single constraints
    stay small; on unions of many cubes an operation may raise :class:`TooComplex`."""

    __slots__ = ("cubes",)

    def __init__(self, cubes) -> None:
        self.cubes = frozenset(c for c in cubes if c is not None)

    def is_empty(self) -> bool:
        return not self.cubes

    def __and__(self, other: MultiSet) -> MultiSet:
        if len(self.cubes) * len(other.cubes) > MAX_CUBES:
            raise TooComplex(f"intersecting {len(self.cubes)} by {len(other.cubes)} cubes")
        return MultiSet(_cube_and(a, b) for a in self.cubes for b in other.cubes)

    def __or__(self, other: MultiSet) -> MultiSet:
        return MultiSet(self.cubes | other.cubes)

    def __invert__(self) -> MultiSet:
        out = MultiSet([ALL_CUBE])
        for c in self.cubes:
            out = out & MultiSet(_cube_not(c))
        return out

    def __sub__(self, other: MultiSet) -> MultiSet:
        out = self
        for c in other.cubes:
            if out.is_empty():
                break
            out = out & MultiSet(_cube_not(c))
        return out

    def issubset(self, other: MultiSet) -> bool:
        if self.cubes <= other.cubes or all(
            any((MultiSet([a]) - MultiSet([b])).is_empty() for b in other.cubes) for a in self.cubes
        ):
            return True
        return (self - other).is_empty()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MultiSet):
            return NotImplemented
        return self.cubes == other.cubes or (self.issubset(other) and other.issubset(self))

    __hash__ = None  # type: ignore[assignment]

    def contains(self, v: tuple) -> bool:
        x = frozenset(skey(e) for e in v)
        return any(c.contains(x) for c in self.cubes)

    def samples(self) -> Iterator[tuple]:
        for c in sorted(self.cubes, key=repr):
            for x in c.samples():
                yield tuple(e[1] for e in sorted(x, key=repr))


__all__ = ["ALL_CUBE", "ALL_ELEMS", "MAX_CUBES", "Cube", "MultiSet", "TooComplex", "cube"]
