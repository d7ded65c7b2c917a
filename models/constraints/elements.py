"""Sets of the scalars a multi value (a list) may hold: the element sets of the multi-value
cubes of :mod:`.multivalues` (Mühl 2002, §4.3.3, Table 4.7, extended with EventBridge's
"any element" constraints).

The operators of Table 4.7 only ever need *finite* element sets and their complements
(``tags subset {"a", "b"}``, ``tags not contains "x"``); the "any element" constraints of
EventBridge patterns (``tags any prefix "ad"``: some element starts with ``ad``) need the
value set of a scalar constraint as an element set: an interval of numbers, a regular
language of strings. :class:`Elems` is both: the finite / co-finite form ``(neg, keys)``
(``keys`` a frozenset of :func:`~.values.skey` pairs, ``neg``: everything but them), on
which every operation is a frozenset operation, and the general form (numbers as spans of
the reals, strings as a :class:`~.automata.StrSet`, booleans, null) that the other sets
need and that the finite form is converted into on demand. Equality is equality of sets in
both forms. Element numbers are taken as reals even on integer attributes (sound: an
answer over the reals holds over the integers).
"""

from __future__ import annotations

from collections.abc import Iterator

from pubsift.models.constraints.automata import StrSet
from pubsift.models.constraints.intervals import INF, LEX, REAL, TOP, Spans
from pubsift.models.constraints.values import BOOL, NULL, NUM, STR, kind

_BOOLS = frozenset({True, False})
#: finite (co-finite) sets up to this size are kept in the finite form
LIMIT = 4096


class Elems:
    """A set of scalars (see the module docstring); immutable."""

    __slots__ = ("_gen", "_hash", "fin")

    def __init__(self, fin: tuple | None = None, gen: tuple | None = None) -> None:
        self.fin = fin  # (neg, frozenset of skeys) or None
        self._gen = gen  # (num Spans, StrSet, bools, null) or None
        self._hash: int | None = None

    @classmethod
    def of(cls, num: Spans, strs: StrSet, bools: frozenset, null: bool) -> Elems:
        """The set with these parts (numbers on the real line), in the finite form when it
        is finite or co-finite with at most :data:`LIMIT` exceptions (so that equal sets
        hash alike)."""
        e = cls(None, (num, strs, frozenset(bools), bool(null)))
        keys = e.members(LIMIT)
        if keys is not None:
            return cls((False, frozenset(keys)), e._gen)
        keys = (~e).members(LIMIT)
        if keys is not None:
            return cls((True, frozenset(keys)), e._gen)
        return e

    @property
    def gen(self) -> tuple:
        g = self._gen
        if g is None:
            assert self.fin is not None  # an Elems holds the finite form, the general or both
            neg, keys = self.fin
            by: dict[str, list] = {NUM: [], STR: [], BOOL: [], NULL: []}
            for k, v in keys:
                by[k].append(v)
            num = Spans.of(REAL, [(v, True, v, True) for v in by[NUM]])
            strs = Spans.of(LEX, [(v, True, v, True) for v in by[STR]])
            bools, null = frozenset(by[BOOL]), bool(by[NULL])
            if neg:
                num, strs, bools, null = ~num, ~strs, _BOOLS - bools, not null
            g = self._gen = (num, StrSet(strs), bools, null)
        return g

    # -- set algebra ------------------------------------------------------------------
    def __and__(self, o: Elems) -> Elems:
        a, b = self.fin, o.fin
        if a is not None and b is not None:
            (na, ea), (nb, eb) = a, b
            if na and nb:
                return Elems((True, ea | eb))
            if na:
                return Elems((False, eb - ea))
            if nb:
                return Elems((False, ea - eb))
            return Elems((False, ea & eb))
        (n1, s1, b1, z1), (n2, s2, b2, z2) = self.gen, o.gen
        return Elems.of(n1 & n2, s1 & s2, b1 & b2, z1 and z2)

    def __invert__(self) -> Elems:
        if self.fin is not None:
            return Elems((not self.fin[0], self.fin[1]))
        n, s, b, z = self.gen
        return Elems(None, (~n, ~s, _BOOLS - b, not z))  # neither finite nor co-finite

    def is_empty(self) -> bool:
        if self.fin is not None:
            return not self.fin[0] and not self.fin[1]
        n, s, b, z = self.gen
        return not (n or b or z) and s.is_empty()

    def issubset(self, o: Elems) -> bool:
        return (self & ~o).is_empty()

    def has(self, e: tuple) -> bool:
        """The scalar with skey ``e`` is a member."""
        if self.fin is not None:
            return (e in self.fin[1]) != self.fin[0]
        n, s, b, z = self.gen
        k, v = e
        if k == NUM:
            return n.contains(v)
        if k == STR:
            return s.contains(v)
        if k == BOOL:
            return v in b
        return z

    def members(self, limit: int) -> list | None:
        """The skeys of the members if there are at most ``limit``, else None."""
        if self.fin is not None:
            neg, keys = self.fin
            return None if neg or len(keys) > limit else list(keys)
        n, s, b, z = self.gen
        nums, strs = n.points(limit), s.strings(limit)
        if nums is None or strs is None:
            return None
        out = (
            [(NUM, v) for v in nums]
            + [(STR, v) for v in strs]
            + [(BOOL, v) for v in sorted(b)]
            + ([(NULL, None)] if z else [])
        )
        return out if len(out) <= limit else None

    def samples(self) -> Iterator[tuple]:
        """Some members (skeys), the simplest first."""
        n, s, b, z = self.gen
        if z:
            yield (NULL, None)
        for v in sorted(b):
            yield (BOOL, v)
        nums = (v for v in n.samples() if v not in (INF, -INF))
        strs = (v for v in s.samples() if v is not TOP)
        for i, v in enumerate(nums):
            if i >= 6:
                break
            yield (kind(v), v)
        for i, v in enumerate(strs):
            if i >= 6:
                break
            yield (STR, v)

    # -- identity ---------------------------------------------------------------------
    def __eq__(self, o: object) -> bool:
        if self is o:
            return True
        if not isinstance(o, Elems):
            return NotImplemented
        if self.fin is not None and o.fin is not None:
            return self.fin == o.fin
        (n1, s1, b1, z1), (n2, s2, b2, z2) = self.gen, o.gen
        return n1 == n2 and b1 == b2 and z1 == z2 and s1 == s2

    def __hash__(self) -> int:
        # equal sets hash alike: a set with at most LIMIT members or exceptions always has
        # the finite form (Elems.of); the others hash by their booleans and null only
        h = self._hash
        if h is None:
            fin = self.fin
            if fin is not None and len(fin[1]) <= LIMIT:
                h = hash(fin)
            else:
                _, _, b, z = self.gen
                h = hash((b, z))
            self._hash = h
        return h

    def __repr__(self) -> str:
        if self.fin is not None:
            neg, keys = self.fin
            return f"Elems({'not ' if neg else ''}{sorted(keys, key=repr)!r})"
        return f"Elems{self.gen!r}"


NO_ELEMS = Elems((False, frozenset()))
ALL_ELEMS = Elems((True, frozenset()))

__all__ = ["ALL_ELEMS", "LIMIT", "NO_ELEMS", "Elems"]
