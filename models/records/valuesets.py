"""Value sets L_A(c) of records constraints, exactly (Mühl 000, §4.3.2).

``L_A(A) = {v | Op(v, C) = true}`` is what identity, covering, overlap and merging of attribute
filters are defined on. :func:`value_set` turns any :class:`Constraint` into a
:class:`ValueSet`, a representation closed under union, intersection and complement, so
that ``covers`` (``L_A(b) ⊆ L_A(a)``), ``identical``, ``overlaps`` and the union of a merger
are all *decided exactly*, for every pair of operators, across kinds:

* ``absent`` — the point ``ABSENT`` (only ``not-exists`` holds it);
* numbers — a finite union of intervals over the reals with open/closed ends (±∞ allowed);
  with ``integer=True`` (the attribute's numbers are integers) the same over the integers,
  so ``price ∈ {20..25}`` equals ``price ∈ [20, 25]`` (slides 002, L560);
* strings — a minimal complete DFA over code points (classes of code-point ranges): every
  string operator denotes a regular language — lexical comparisons, ranges and prefixes
  (unions of lexical intervals, kept as such too, so that they can be read back as one
  constraint), suffix, substring (KMP automata), equals-ignore-case (the finite
  ``casefold`` preimage), sets and ``instanceof`` (tries);
* booleans and null — finite sets;
* multi values (lists as sets) — a union of *cubes* ``{X | X ⊆ U, L ⊆ X, X ∩ O_i ≠ ∅}``
  (U finite or co-finite, L finite, each O_i finite or co-finite); each multi-value
  operator of Table 4.7 is one cube and the complement of a cube is a union of cubes.

Numbers are reals: an open interval between two adjacent floats is treated as non-empty.
Nothing is approximated otherwise, so no pair of constraints is left undecided.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pubsift.models.records.constraints import ABSENT, Constraint, Op
from pubsift.models.records.values import BOOL, MULTI, NULL, NUM, STR, kind, skey

INF = math.inf
MAXCP = 0x110000


class _Top:
    """+∞ of the lexical order: greater than every string."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        return False

    def __le__(self, other: object) -> bool:
        return other is self

    def __gt__(self, other: object) -> bool:
        return other is not self

    def __ge__(self, other: object) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return 0x70B

    def __repr__(self) -> str:
        return "TOP"


TOP: Any = _Top()


# ---------------------------------------------------------------------------------------
# Interval unions over a totally ordered line (numbers, integers, lexical strings)
# ---------------------------------------------------------------------------------------
class Line:
    """A totally ordered domain; spans are (lo, lo_closed, hi, hi_closed) tuples."""

    bottom: tuple = (-INF, False)
    top: tuple = (INF, False)

    def canon(self, lo: Any, lc: bool, hi: Any, hc: bool) -> tuple | None:
        if lo == -INF:
            lc = False
        if hi == INF:
            hc = False
        if lo < hi or (lo == hi and lc and hc):
            return (lo, lc, hi, hc)
        return None

    def point(self, s: tuple) -> tuple[bool, Any]:
        return (s[0] == s[2], s[0])

    def member(self, v: Any) -> bool:
        return True


class IntLine(Line):
    """Integers; spans are canonical half-open ``[a, b)`` with integer ends."""

    def canon(self, lo, lc, hi, hc):
        if lo == -INF or lo == INF:
            lc = False
        else:
            lo, lc = (math.ceil(lo) if lc else math.floor(lo) + 1), True
        if hi != INF and hi != -INF:
            hi = (math.floor(hi) if hc else math.ceil(hi) - 1) + 1
        hc = False
        return (lo, lc, hi, hc) if lo < hi else None

    def point(self, s):
        return (s[0] != -INF and s[2] == s[0] + 1, s[0])

    def member(self, v):
        return v == int(v)


class StrLine(Line):
    """Strings in code-point order; spans are canonical half-open ``[lo, hi)``: an open
    lower end ``a`` is ``a + "\\0"`` closed (no string lies between them)."""

    bottom = ("", True)
    top = (TOP, False)

    def canon(self, lo, lc, hi, hc):
        if lo is TOP:
            return None
        if not lc:
            lo += "\0"
        if hi is None:
            hi = TOP
        elif hc and hi is not TOP:
            hi += "\0"
        return (lo, True, hi, False) if lo < hi else None

    def point(self, s):
        return (s[2] is not TOP and s[2] == s[0] + "\0", s[0])


REAL, INTEGER, LEX = Line(), IntLine(), StrLine()


class Spans:
    """A finite union of disjoint, non-touching spans of a :class:`Line`, sorted."""

    __slots__ = ("line", "items")

    def __init__(self, line: Line, items: tuple) -> None:
        self.line = line
        self.items = items

    @classmethod
    def of(cls, line: Line, raw: list | tuple) -> "Spans":
        spans = sorted((s for s in (line.canon(*r) for r in raw) if s is not None),
                       key=lambda s: (s[0], not s[1]))
        out: list[tuple] = []
        for lo, lc, hi, hc in spans:
            if out:
                plo, plc, phi, phc = out[-1]
                if lo < phi or (lo == phi and (phc or lc)):
                    if (hi, hc) > (phi, phc):
                        out[-1] = (plo, plc, hi, hc)
                    continue
            out.append((lo, lc, hi, hc))
        return cls(line, tuple(out))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Spans) and self.items == other.items

    def __hash__(self) -> int:
        return hash(self.items)

    def __repr__(self) -> str:
        return f"Spans({self.items!r})"

    def __bool__(self) -> bool:
        return bool(self.items)

    def __or__(self, other: "Spans") -> "Spans":
        if not other.items:
            return self
        if not self.items:
            return other
        return Spans.of(self.line, self.items + other.items)

    def __and__(self, other: "Spans") -> "Spans":
        a, b, out, i, j = self.items, other.items, [], 0, 0
        canon = self.line.canon
        while i < len(a) and j < len(b):
            x, y = a[i], b[j]
            lo, nlc = max((x[0], not x[1]), (y[0], not y[1]))
            hi, hc = min((x[2], x[3]), (y[2], y[3]))
            s = canon(lo, not nlc, hi, hc)
            if s is not None:
                out.append(s)
            if (x[2], x[3]) < (y[2], y[3]):
                i += 1
            else:
                j += 1
        return Spans(self.line, tuple(out))

    def __invert__(self) -> "Spans":
        line = self.line
        out, (lo, lc) = [], line.bottom
        for s in self.items:
            out.append((lo, lc, s[0], not s[1]))
            lo, lc = s[2], not s[3]
        out.append((lo, lc) + line.top)
        return Spans.of(line, out)

    def __sub__(self, other: "Spans") -> "Spans":
        return self & ~other

    def issubset(self, other: "Spans") -> bool:
        """Every span of self lies inside one span of other (both canonical)."""
        b, j = other.items, 0
        for lo, lc, hi, hc in self.items:
            while j < len(b) and (b[j][2], b[j][3]) < (hi, hc):
                j += 1
            if j == len(b):
                return False
            blo, blc, _, _ = b[j]
            if (blo, not blc) > (lo, not lc):
                return False
        return True

    def contains(self, v: Any) -> bool:
        if not self.line.member(v):
            return False
        for lo, lc, hi, hc in self.items:
            if (v > lo or (lc and v == lo)) and (v < hi or (hc and v == hi)):
                return True
        return False

    def points(self, limit: int = 4096) -> list | None:
        """The members if the union is finite and has at most ``limit`` members."""
        out, point = [], self.line.point
        for s in self.items:
            is_point, v = point(s)
            if is_point:
                out.append(v)
            elif self.line is INTEGER and s[0] != -INF and s[2] != INF and s[2] - s[0] <= limit:
                out.extend(range(s[0], s[2]))
            else:
                return None
            if len(out) > limit:
                return None
        return out

    def samples(self) -> Iterator[Any]:
        """Some members, the simplest first."""
        for lo, lc, hi, hc in self.items:
            if self.line is LEX:
                yield lo
                continue
            cands = []
            if lc and lo != -INF:
                cands.append(lo)
            if hc and hi != INF:
                cands.append(hi)
            if lo == -INF and hi == INF:
                cands += [0, 1, -1, 2]
            elif lo == -INF:
                cands += [math.floor(hi) - 1, math.floor(hi) - 2, hi - 0.5, hi - 10]
            elif hi == INF:
                cands += [math.floor(lo) + 1, math.floor(lo) + 2, lo + 0.5, lo + 10]
            else:
                cands += [math.floor(lo) + 1, math.floor(lo) + 2, (lo + hi) / 2,
                          lo + (hi - lo) / 4]
            seen = set()
            for v in cands:
                if isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53:
                    v = int(v)
                if v not in seen and self.contains(v):
                    seen.add(v)
                    yield v


def _inc(p: str) -> Any:
    """The least string above every string with prefix ``p`` (TOP if none)."""
    while p and p[-1] == chr(MAXCP - 1):
        p = p[:-1]
    return p[:-1] + chr(ord(p[-1]) + 1) if p else TOP


def prefix_span(p: str) -> tuple:
    """``prefix p`` as the lexical span ``[p, inc(p))``."""
    return (p, True, _inc(p), False)


# ---------------------------------------------------------------------------------------
# Minimal DFAs over code points
# ---------------------------------------------------------------------------------------
class Dfa:
    """A complete, minimal, canonically numbered DFA; start state 0. Symbol classes are
    the code-point ranges ``[cuts[k], cuts[k+1])``. Equal languages give equal objects."""

    __slots__ = ("cuts", "delta", "accept")

    def __init__(self, cuts: tuple, delta: tuple, accept: tuple) -> None:
        self.cuts, self.delta, self.accept = cuts, delta, accept

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Dfa) and self.accept == other.accept
                and self.cuts == other.cuts and self.delta == other.delta)

    def __hash__(self) -> int:
        return hash((self.cuts, self.delta, self.accept))

    @staticmethod
    def build(edges: list[list[tuple[int, int, int]]], default: list[int],
              accept: list[bool]) -> "Dfa":
        """From per-state edges ``(lo, hi_excl, target)`` and a default target."""
        cutset = {0}
        for es in edges:
            for lo, hi, _ in es:
                cutset.add(lo)
                if hi < MAXCP:
                    cutset.add(hi)
        cuts = sorted(cutset)
        delta = []
        for s, es in enumerate(edges):
            row = [default[s]] * len(cuts)
            for lo, hi, t in es:
                k = bisect_right(cuts, lo) - 1
                while k < len(cuts) and cuts[k] < hi:
                    row[k] = t
                    k += 1
            delta.append(row)
        return _minimize(cuts, delta, accept)

    def complement(self) -> "Dfa":
        return Dfa(self.cuts, self.delta, tuple(not a for a in self.accept))

    def product(self, other: "Dfa", fn) -> "Dfa":
        cuts = sorted(set(self.cuts) | set(other.cuts))
        ia = [bisect_right(self.cuts, c) - 1 for c in cuts]
        ib = [bisect_right(other.cuts, c) - 1 for c in cuts]
        index = {(0, 0): 0}
        pairs = [(0, 0)]
        delta, accept = [], []
        for p, q in pairs:
            rp, rq = self.delta[p], other.delta[q]
            row = []
            for k in range(len(cuts)):
                t = (rp[ia[k]], rq[ib[k]])
                n = index.get(t)
                if n is None:
                    n = index[t] = len(pairs)
                    pairs.append(t)
                row.append(n)
            delta.append(row)
            accept.append(fn(self.accept[p], other.accept[q]))
        return _minimize(cuts, delta, accept)

    def is_empty(self) -> bool:
        return not any(self.accept)

    def is_universal(self) -> bool:
        return all(self.accept)

    def contains(self, s: str) -> bool:
        q = 0
        for ch in s:
            q = self.delta[q][bisect_right(self.cuts, ord(ch)) - 1]
        return self.accept[q]

    def _live(self) -> set[int]:
        live = {q for q, a in enumerate(self.accept) if a}
        changed = True
        while changed:
            changed = False
            for q, row in enumerate(self.delta):
                if q not in live and any(t in live for t in row):
                    live.add(q)
                    changed = True
        return live

    def strings(self, limit: int = 4096) -> list[str] | None:
        """The language if finite with at most ``limit`` strings, else None."""
        live = self._live()
        if 0 not in live:
            return []
        colour: dict[int, int] = {}

        def cyclic(q: int) -> bool:  # DFS over live states (minimal DFA: few states)
            colour[q] = 1
            for t in set(self.delta[q]):
                if t in live and (colour.get(t) == 1 or (t not in colour and cyclic(t))):
                    return True
            colour[q] = 2
            return False

        if cyclic(0):
            return None
        out: list[str] = []
        stack = [(0, "")]
        ends = self.cuts[1:] + (MAXCP,)
        while stack:
            q, s = stack.pop()
            if self.accept[q]:
                out.append(s)
                if len(out) > limit:
                    return None
            for k, t in enumerate(self.delta[q]):
                if t in live:
                    if ends[k] - self.cuts[k] > limit:
                        return None
                    stack.extend((t, s + chr(c)) for c in range(self.cuts[k], ends[k]))
                    if len(stack) > 4 * limit:
                        return None
        return sorted(out)

    def samples(self, count: int = 8) -> Iterator[str]:
        """Accepted strings, shortest first, built from readable characters."""
        live = self._live()
        if 0 not in live:
            return
        ends = self.cuts[1:] + (MAXCP,)
        frontier: dict[int, list[str]] = {0: [""]}  # a few strings per state and length
        seen = 0
        for _ in range(len(self.accept) + count):
            nxt: dict[int, list[str]] = {}
            for q, strs in frontier.items():
                for s in strs:
                    if self.accept[q]:
                        yield s
                        seen += 1
                        if seen >= count:
                            return
                    for k, t in enumerate(self.delta[q]):
                        if t in live:
                            bucket = nxt.setdefault(t, [])
                            for c in _nice(self.cuts[k], ends[k]):
                                if len(bucket) < 3:
                                    bucket.append(s + c)
            frontier = nxt
            if not frontier:
                return


def _nice(lo: int, hi: int) -> list[str]:
    """One or two readable characters of the code-point range [lo, hi)."""
    out = []
    for a, b in ((97, 123), (65, 91), (48, 58), (32, 127)):
        x = max(lo, a)
        if x < min(hi, b):
            out.append(chr(x))
            if x + 1 < min(hi, b):
                out.append(chr(x + 1))
            return out
    return [chr(lo)] if hi - lo == 1 else [chr(lo), chr(lo + 1)]


def _minimize(cuts: list[int], delta: list[list[int]], accept: list[bool]) -> Dfa:
    order, seen = [0], {0}
    for q in order:
        for t in delta[q]:
            if t not in seen:
                seen.add(t)
                order.append(t)
    block = {q: int(bool(accept[q])) for q in order}
    count = len(set(block.values()))
    while True:
        sigs: dict[tuple, int] = {}
        new = {q: sigs.setdefault((block[q], tuple(block[t] for t in delta[q])), len(sigs))
               for q in order}
        block = new
        if len(sigs) == count:
            break
        count = len(sigs)
    rep: dict[int, int] = {}
    for q in order:
        rep.setdefault(block[q], q)
    num = {block[0]: 0}
    queue = [block[0]]
    for b in queue:
        for t in delta[rep[b]]:
            bt = block[t]
            if bt not in num:
                num[bt] = len(num)
                queue.append(bt)
    rows = [[num[block[t]] for t in delta[rep[b]]] for b in queue]
    keep = [0] + [k for k in range(1, len(cuts)) if any(r[k] != r[k - 1] for r in rows)]
    return Dfa(tuple(cuts[k] for k in keep), tuple(tuple(r[k] for k in keep) for r in rows),
               tuple(bool(accept[rep[b]]) for b in queue))


def _dfa_all(accepting: bool) -> Dfa:
    return Dfa((0,), ((0,),), (accepting,))


def dfa_words(words) -> Dfa:
    """A finite set of strings (a trie)."""
    edges: list[dict[int, int]] = [{}]
    accept = [False]
    for w in words:
        q = 0
        for ch in w:
            c = ord(ch)
            if c not in edges[q]:
                edges[q][c] = len(edges)
                edges.append({})
                accept.append(False)
            q = edges[q][c]
        accept[q] = True
    dead = len(edges)
    return Dfa.build([[(c, c + 1, t) for c, t in e.items()] for e in edges] + [[]],
                     [dead] * (dead + 1), accept + [False])


def _dfa_below(c: str, inclusive: bool) -> Dfa:
    """Strings ``< c`` (or ``<= c``) in code-point order."""
    n = len(c)
    every, dead = n + 1, n + 2
    edges, default, accept = [], [], []
    for i in range(n):
        o = ord(c[i])
        edges.append([(0, o, every), (o, o + 1, i + 1)])
        default.append(dead)
        accept.append(True)
    edges += [[], [], []]
    default += [dead, every, dead]
    accept += [inclusive, True, False]
    return Dfa.build(edges, default, accept)


def dfa_span(lo: str, hi: Any) -> Dfa:
    """The lexical span ``[lo, hi)`` (``hi`` may be TOP)."""
    d = _dfa_below(lo, False).complement()
    if hi is not TOP:
        d = d.product(_dfa_below(hi, False), lambda x, y: x and y)
    return d


def dfa_of_spans(spans: Spans) -> Dfa:
    points, d = [], _dfa_all(False)
    for s in spans.items:
        is_point, v = LEX.point(s)
        if is_point:
            points.append(v)
        else:
            d = d.product(dfa_span(s[0], s[2]), lambda x, y: x or y)
    if points:
        d = d.product(dfa_words(points), lambda x, y: x or y)
    return d


def _dfa_kmp(s: str, absorbing: bool) -> Dfa:
    """Strings ending with ``s`` (``absorbing``: containing ``s``) — a KMP automaton."""
    n = len(s)
    if n == 0:
        return _dfa_all(True)
    fail = [0] * (n + 1)
    k = 0
    for i in range(1, n):
        while k and s[i] != s[k]:
            k = fail[k]
        if s[i] == s[k]:
            k += 1
        fail[i + 1] = k

    def step(i: int, ch: str) -> int:
        while True:
            if i < n and s[i] == ch:
                return i + 1
            if i == 0:
                return 0
            i = fail[i]

    alphabet = sorted(set(s))
    edges, default = [], []
    for i in range(n + 1):
        if i == n and absorbing:
            edges.append([])
            default.append(n)
        else:
            edges.append([(ord(ch), ord(ch) + 1, step(i, ch)) for ch in alphabet])
            default.append(0)
    return Dfa.build(edges, default, [i == n for i in range(n + 1)])


@lru_cache(maxsize=1)
def _casefold_inverse() -> dict[str, tuple[int, ...]]:
    inv: dict[str, list[int]] = {}
    for cp in range(MAXCP):
        ch = chr(cp)
        f = ch.casefold()
        if f != ch:
            inv.setdefault(f, []).append(cp)
    return {k: tuple(v) for k, v in inv.items()}


def _dfa_caseless(c: str) -> Dfa:
    """``{v | v.casefold() == c.casefold()}``: the (finite) casefold preimage of ``c``;
    ``str.casefold`` folds character by character, each to 1-3 characters."""
    t = c.casefold()
    n = len(t)
    inv = _casefold_inverse()
    edges: list[list[tuple[int, int, int]]] = []
    for i in range(n):
        es = []
        for length in (1, 2, 3):
            if i + length <= n:
                s = t[i:i + length]
                cps = list(inv.get(s, ()))
                if length == 1 and s.casefold() == s:
                    cps.append(ord(s))
                es += [(cp, cp + 1, i + length) for cp in cps]
        edges.append(es)
    edges += [[], []]
    return Dfa.build(edges, [n + 1] * (n + 2), [i == n for i in range(n + 2)])


class StrSet:
    """A set of strings: a :class:`Dfa`, and its lexical spans when known."""

    __slots__ = ("lex", "_dfa")

    def __init__(self, lex: Spans | None = None, dfa: Dfa | None = None) -> None:
        self.lex, self._dfa = lex, dfa

    @property
    def dfa(self) -> Dfa:
        if self._dfa is None:
            self._dfa = dfa_of_spans(self.lex)
        return self._dfa

    def is_empty(self) -> bool:
        return not self.lex.items if self.lex is not None else self._dfa.is_empty()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StrSet):
            return NotImplemented
        if self.lex is not None and other.lex is not None:
            return self.lex == other.lex
        return self.dfa == other.dfa

    def __hash__(self) -> int:
        return hash(self.dfa)

    def _op(self, other: "StrSet", spans_op, fn) -> "StrSet":
        if self.lex is not None and other.lex is not None:
            return StrSet(spans_op(self.lex, other.lex))
        return StrSet(None, self.dfa.product(other.dfa, fn))

    def __and__(self, other: "StrSet") -> "StrSet":
        return self._op(other, Spans.__and__, lambda x, y: x and y)

    def __or__(self, other: "StrSet") -> "StrSet":
        return self._op(other, Spans.__or__, lambda x, y: x or y)

    def __sub__(self, other: "StrSet") -> "StrSet":
        return self._op(other, Spans.__sub__, lambda x, y: x and not y)

    def __invert__(self) -> "StrSet":
        if self.lex is not None:
            return StrSet(~self.lex)
        return StrSet(None, self.dfa.complement())

    def issubset(self, other: "StrSet") -> bool:
        if self.lex is not None and other.lex is not None:
            return self.lex.issubset(other.lex)
        return (self - other).is_empty()

    def contains(self, v: str) -> bool:
        return self.lex.contains(v) if self.lex is not None else self._dfa.contains(v)

    def strings(self, limit: int = 4096) -> list[str] | None:
        if self.lex is not None:
            return self.lex.points(limit)
        return self._dfa.strings(limit)

    def samples(self) -> Iterator[str]:
        if self.lex is not None:
            yield from self.lex.samples()
        yield from self.dfa.samples()


# ---------------------------------------------------------------------------------------
# Multi values: unions of cubes
# ---------------------------------------------------------------------------------------
# An element set is (neg, elems): elems (neg False) or everything but elems (neg True);
# elements are skey pairs.
ALL_ELEMS = (True, frozenset())


def _fc_and(a: tuple, b: tuple) -> tuple:
    (na, ea), (nb, eb) = a, b
    if na and nb:
        return (True, ea | eb)
    if na:
        return (False, eb - ea)
    if nb:
        return (False, ea - eb)
    return (False, ea & eb)


def _fc_not(a: tuple) -> tuple:
    return (not a[0], a[1])


def _fc_has(a: tuple, e: Any) -> bool:
    return (e in a[1]) != a[0]


def _fresh(avoid: frozenset) -> tuple:
    i = 0
    while ("str", f"x{i}") in avoid:
        i += 1
    return ("str", f"x{i}")


@dataclass(frozen=True, slots=True)
class Cube:
    """``{X | X ⊆ upper, lower ⊆ X, X ∩ o ≠ ∅ for o in hits}`` (non-empty when built
    by :func:`cube`)."""

    upper: tuple
    lower: frozenset
    hits: frozenset

    def contains(self, x: frozenset) -> bool:
        return (all(_fc_has(self.upper, e) for e in x) and self.lower <= x
                and all(any(_fc_has(o, e) for e in x) for o in self.hits))

    def samples(self) -> Iterator[frozenset]:
        """The least member, then members with one more element."""
        x = set(self.lower)
        for neg, elems in sorted(self.hits, key=repr):
            if any(_fc_has((neg, elems), e) for e in x):
                continue
            x.add(_fresh(elems | frozenset(x)) if neg else min(elems, key=repr))
        yield frozenset(x)
        neg, elems = self.upper
        extra = [_fresh(elems | frozenset(x))] if neg else sorted(elems - x, key=repr)
        for e in extra[:4]:
            yield frozenset(x | {e})


def cube(upper: tuple, lower: frozenset, hits) -> Cube | None:
    """The normalized cube, or None if it is empty."""
    if not all(_fc_has(upper, e) for e in lower):
        return None
    kept: list[tuple] = []
    for o in hits:
        o = _fc_and(o, upper)
        if any(_fc_has(o, e) for e in lower):
            continue
        if not o[0] and not o[1]:
            return None
        kept.append(o)
    minimal = set()
    for o in kept:  # X ∩ o ≠ ∅ implies X ∩ o' ≠ ∅ for o ⊆ o'
        if not any(p != o and _fc_and(p, _fc_not(o)) == (False, frozenset()) for p in kept):
            minimal.add(o)
    return Cube(upper, lower, frozenset(minimal))


ALL_CUBE = Cube(ALL_ELEMS, frozenset(), frozenset())


def _cube_and(a: Cube, b: Cube) -> Cube | None:
    return cube(_fc_and(a.upper, b.upper), a.lower | b.lower, a.hits | b.hits)


def _cube_not(c: Cube) -> list[Cube]:
    out = []
    if c.upper != ALL_ELEMS:
        out.append(cube(ALL_ELEMS, frozenset(), [_fc_not(c.upper)]))
    out += [cube((True, frozenset([e])), frozenset(), ()) for e in c.lower]
    out += [cube(_fc_not(o), frozenset(), ()) for o in c.hits]
    return [x for x in out if x is not None]


class MultiSet:
    """A set of multi values: a union of :class:`Cube`."""

    __slots__ = ("cubes",)

    def __init__(self, cubes) -> None:
        self.cubes = frozenset(c for c in cubes if c is not None)

    def is_empty(self) -> bool:
        return not self.cubes

    def __and__(self, other: "MultiSet") -> "MultiSet":
        return MultiSet(_cube_and(a, b) for a in self.cubes for b in other.cubes)

    def __or__(self, other: "MultiSet") -> "MultiSet":
        return MultiSet(self.cubes | other.cubes)

    def __invert__(self) -> "MultiSet":
        out = MultiSet([ALL_CUBE])
        for c in self.cubes:
            out = out & MultiSet(_cube_not(c))
        return out

    def __sub__(self, other: "MultiSet") -> "MultiSet":
        out = self
        for c in other.cubes:
            if out.is_empty():
                break
            out = out & MultiSet(_cube_not(c))
        return out

    def issubset(self, other: "MultiSet") -> bool:
        return self.cubes <= other.cubes or (self - other).is_empty()

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


# ---------------------------------------------------------------------------------------
# Value sets over all kinds
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, eq=False)
class ValueSet:
    """``L_A``: a set of attribute values of every kind, plus possibly ``ABSENT``."""

    absent: bool
    num: Spans
    str: StrSet
    bools: frozenset
    null: bool
    multi: MultiSet

    def kinds(self) -> frozenset[str]:
        """The kinds with members (``"absent"`` for ABSENT)."""
        out = set()
        if self.absent:
            out.add("absent")
        if self.num:
            out.add(NUM)
        if not self.str.is_empty():
            out.add(STR)
        if self.bools:
            out.add(BOOL)
        if self.null:
            out.add(NULL)
        if not self.multi.is_empty():
            out.add(MULTI)
        return frozenset(out)

    def is_empty(self) -> bool:
        return not (self.absent or self.num or self.bools or self.null
                    or not self.str.is_empty() or not self.multi.is_empty())

    def __and__(self, o: "ValueSet") -> "ValueSet":
        return ValueSet(self.absent and o.absent, self.num & o.num, self.str & o.str,
                        self.bools & o.bools, self.null and o.null, self.multi & o.multi)

    def __or__(self, o: "ValueSet") -> "ValueSet":
        return ValueSet(self.absent or o.absent, self.num | o.num, self.str | o.str,
                        self.bools | o.bools, self.null or o.null, self.multi | o.multi)

    def __sub__(self, o: "ValueSet") -> "ValueSet":
        return ValueSet(self.absent and not o.absent, self.num - o.num, self.str - o.str,
                        self.bools - o.bools, self.null and not o.null, self.multi - o.multi)

    def __invert__(self) -> "ValueSet":
        return ValueSet(not self.absent, ~self.num, ~self.str,
                        frozenset({True, False}) - self.bools, not self.null, ~self.multi)

    def issubset(self, o: "ValueSet") -> bool:
        """self ⊆ o, checking the cheap kinds first."""
        return ((not self.absent or o.absent) and (not self.null or o.null)
                and self.bools <= o.bools
                and (not self.num or self.num.issubset(o.num))
                and (self.str.is_empty() or self.str.issubset(o.str))
                and (self.multi.is_empty() or self.multi.issubset(o.multi)))

    def isdisjoint(self, o: "ValueSet") -> bool:
        if (self.absent and o.absent) or (self.null and o.null) or (self.bools & o.bools):
            return False
        if self.num and o.num and (self.num & o.num):
            return False
        if not self.str.is_empty() and not o.str.is_empty() and not (self.str & o.str).is_empty():
            return False
        if not self.multi.is_empty() and not o.multi.is_empty():
            return (self.multi & o.multi).is_empty()
        return True

    def __eq__(self, o: object) -> bool:
        if not isinstance(o, ValueSet):
            return NotImplemented
        return (self.absent == o.absent and self.null == o.null and self.bools == o.bools
                and self.num == o.num and self.str == o.str and self.multi == o.multi)

    __hash__ = None  # type: ignore[assignment]

    def contains(self, v: Any) -> bool:
        """v ∈ self (for values as :meth:`Constraint.matches` takes them)."""
        if v is ABSENT:
            return self.absent
        k = kind(v)
        if k == NUM:
            return self.num.contains(v)
        if k == STR:
            return self.str.contains(v)
        if k == BOOL:
            return v in self.bools
        if k == NULL:
            return self.null
        return self.multi.contains(tuple(v))

    def samples(self) -> Iterator[Any]:
        """Members of the set, a few of each kind, the simplest first."""
        gens = []
        if self.absent:
            gens.append(iter([ABSENT]))
        if self.num:
            gens.append(self.num.samples())
        if not self.str.is_empty():
            gens.append(self.str.samples())
        if self.bools:
            gens.append(iter(sorted(self.bools)))
        if self.null:
            gens.append(iter([None]))
        if not self.multi.is_empty():
            gens.append(self.multi.samples())
        while gens:  # round robin over kinds
            for g in list(gens):
                v = next(g, StopIteration)
                if v is StopIteration:
                    gens.remove(g)
                else:
                    yield v


def _line(integer: bool) -> Line:
    return INTEGER if integer else REAL


def empty(integer: bool = False) -> ValueSet:
    """The empty value set."""
    return ValueSet(False, Spans(_line(integer), ()), StrSet(Spans(LEX, ())), frozenset(),
                    False, MultiSet(()))


def everything(integer: bool = False, absent: bool = False) -> ValueSet:
    """Every present value of every kind (``absent``: and ABSENT)."""
    return ValueSet(absent, Spans.of(_line(integer), [(-INF, False, INF, False)]),
                    StrSet(Spans.of(LEX, [("", True, TOP, False)])),
                    frozenset({True, False}), True, MultiSet([ALL_CUBE]))


def _with(integer: bool, **parts: Any) -> ValueSet:
    e = empty(integer)
    return ValueSet(parts.get("absent", False), parts.get("num", e.num),
                    parts.get("str", e.str), parts.get("bools", e.bools),
                    parts.get("null", False), parts.get("multi", e.multi))


def _scalar_part(integer: bool, keys, negate: bool) -> ValueSet:
    """IN_SET (or NOT_IN_SET when ``negate``) of skey pairs, kind by kind."""
    by_kind: dict[str, list] = {}
    for k, v in keys:
        by_kind.setdefault(k, []).append(v)
    line = _line(integer)
    parts: dict[str, Any] = {}
    if NUM in by_kind:
        s = Spans.of(line, [(v, True, v, True) for v in by_kind[NUM]])
        parts["num"] = ~s if negate else s
    if STR in by_kind:
        s = Spans.of(LEX, [(v, True, v, True) for v in by_kind[STR]])
        parts["str"] = StrSet(~s if negate else s)
    if BOOL in by_kind:
        b = frozenset(by_kind[BOOL])
        parts["bools"] = frozenset({True, False}) - b if negate else b
    if NULL in by_kind:
        parts["null"] = not negate
    return _with(integer, **parts)


def _cmp_span(op: Op, x: Any) -> tuple:
    hi = TOP if isinstance(x, str) else INF
    lo = "" if isinstance(x, str) else -INF
    return {Op.LT: (lo, True, x, False), Op.LE: (lo, True, x, True),
            Op.GT: (x, False, hi, False), Op.GE: (x, True, hi, False)}[op]


def _ordered(integer: bool, x: Any, raw: list[tuple], negate: bool = False) -> ValueSet:
    if isinstance(x, str):
        s = Spans.of(LEX, raw)
        return _with(integer, str=StrSet(~s if negate else s))
    s = Spans.of(_line(integer), raw)
    return _with(integer, num=~s if negate else s)


@lru_cache(maxsize=65536)
def value_set(c: Constraint, integer: bool = False) -> ValueSet:
    """``L_A(c)``; ``integer``: the attribute's numbers are integers."""
    op, x = c.op, c.operand
    if op is Op.EXISTS:
        return everything(integer)
    if op is Op.NOT_EXISTS:
        return _with(integer, absent=True)
    if op is Op.INSTANCEOF:
        return _with(integer, str=StrSet(None, dfa_words(sorted(x.members))))
    if op in (Op.EQ, Op.NE):
        return _scalar_part(integer, [skey(x)], op is Op.NE)
    if op in (Op.IN_SET, Op.NOT_IN_SET):
        return _scalar_part(integer, x, op is Op.NOT_IN_SET)
    if op in (Op.LT, Op.LE, Op.GT, Op.GE):
        return _ordered(integer, x, [_cmp_span(op, x)])
    if op in (Op.IN_RANGE, Op.NOT_IN_RANGE):
        span = (x.lo, x.lo_closed, x.hi, x.hi_closed)
        return _ordered(integer, x.lo if x.kind == STR else 0, [span], op is Op.NOT_IN_RANGE)
    if op in (Op.PREFIX, Op.NOT_PREFIX):
        return _ordered(integer, x, [prefix_span(x)], op is Op.NOT_PREFIX)
    if op in (Op.SUFFIX, Op.NOT_SUFFIX, Op.SUBSTRING):
        d = _dfa_kmp(x, absorbing=op is Op.SUBSTRING)
        return _with(integer, str=StrSet(None, d.complement() if op is Op.NOT_SUFFIX else d))
    if op is Op.EQ_IGNORE_CASE:
        return _with(integer, str=StrSet(None, _dfa_caseless(x)))
    none = frozenset()
    cubes = {
        Op.SUBSET: lambda: cube((False, x), none, ()),
        Op.SUPERSET: lambda: cube(ALL_ELEMS, x, ()),
        Op.CONTAINS: lambda: cube(ALL_ELEMS, frozenset([x]), ()),
        Op.NOT_CONTAINS: lambda: cube((True, frozenset([x])), none, ()),
        Op.DISJOINT: lambda: cube((True, x), none, ()),
        Op.OVERLAPS: lambda: cube(ALL_ELEMS, none, [(False, x)]),
    }
    return _with(integer, multi=MultiSet([cubes[op]()]))


__all__ = ["ALL_CUBE", "ALL_ELEMS", "Cube", "Dfa", "INF", "INTEGER", "LEX", "Line",
           "MultiSet", "REAL", "Spans", "StrSet", "TOP", "ValueSet", "cube", "dfa_words",
           "empty", "everything", "prefix_span", "value_set"]
