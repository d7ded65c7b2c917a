"""String value sets as minimal DFAs over code points (Mühl 2002, §4.3.3: constraints on
strings).

Every string operator denotes a regular language: lexical comparisons, ranges and prefixes
(unions of lexical spans, :mod:`.intervals`), suffix and substring (KMP automata), equality
ignoring case (the finite ``str.casefold`` preimage), sets and ``instanceof`` (tries). A
:class:`Dfa` is complete, minimal and canonically numbered, so equal languages give equal
objects; symbols are classes of code-point ranges. :class:`StrSet` keeps the lexical spans
too when it has them, so that lexical sets can be read back as one constraint.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from pubsift.models.constraints.intervals import LEX, MAXCP, TOP, Spans
from pubsift.models.constraints.limits import TooComplex

#: The most transitions (states × symbol classes) of an automaton built for a string
#: constraint or a combination of two; beyond it :class:`TooComplex` is raised and the
#: callers answer soundly or refuse the filter (a suffix of a few hundred characters
#: against a case-insensitive equality of as many would otherwise take minutes).
MAX_CELLS = 100_000


def _budget(states: int, classes: int) -> None:
    if states * classes > MAX_CELLS:
        raise TooComplex(f"a string automaton would need more than {MAX_CELLS} transitions")


class Dfa:
    """A complete, minimal, canonically numbered DFA; start state 0. Symbol classes are
    the code-point ranges ``[cuts[k], cuts[k+1])``. Equal languages give equal objects."""

    __slots__ = ("accept", "cuts", "delta")

    def __init__(self, cuts: tuple, delta: tuple, accept: tuple) -> None:
        self.cuts, self.delta, self.accept = cuts, delta, accept

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Dfa)
            and self.accept == other.accept
            and self.cuts == other.cuts
            and self.delta == other.delta
        )

    def __hash__(self) -> int:
        return hash((self.cuts, self.delta, self.accept))

    @staticmethod
    def build(
        edges: list[list[tuple[int, int, int]]], default: list[int], accept: list[bool]
    ) -> Dfa:
        """From per-state edges ``(lo, hi_excl, target)`` and a default target."""
        cutset = {0}
        for es in edges:
            for lo, hi, _ in es:
                cutset.add(lo)
                if hi < MAXCP:
                    cutset.add(hi)
        cuts = sorted(cutset)
        _budget(len(edges), len(cuts))
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

    def complement(self) -> Dfa:
        return Dfa(self.cuts, self.delta, tuple(not a for a in self.accept))

    def product(self, other: Dfa, fn) -> Dfa:
        cuts = sorted(set(self.cuts) | set(other.cuts))
        ia = [bisect_right(self.cuts, c) - 1 for c in cuts]
        ib = [bisect_right(other.cuts, c) - 1 for c in cuts]
        index = {(0, 0): 0}
        pairs = [(0, 0)]
        delta, accept = [], []
        limit = MAX_CELLS // len(cuts)
        for p, q in pairs:
            if len(pairs) > limit:
                _budget(len(pairs), len(cuts))
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
        """The states from which an accepting state is reachable."""
        preds: dict[int, list[int]] = {}
        for q, row in enumerate(self.delta):
            for t in set(row):
                preds.setdefault(t, []).append(q)
        live = [q for q, a in enumerate(self.accept) if a]
        seen = set(live)
        for q in live:
            for p in preds.get(q, ()):
                if p not in seen:
                    seen.add(p)
                    live.append(p)
        return seen

    def strings(self, limit: int = 4096) -> list[str] | None:
        """The language if finite with at most ``limit`` strings, else None."""
        live = self._live()
        if 0 not in live:
            return []
        order = self._postorder(live)
        if order is None:
            return None
        ends = self.cuts[1:] + (MAXCP,)
        count: dict[int, int] = {}
        for q in order:  # successors first: count the strings each state accepts
            n = int(self.accept[q])
            for k, t in enumerate(self.delta[q]):
                if t in live:
                    n += (ends[k] - self.cuts[k]) * count[t]
            count[q] = min(n, limit + 1)
        if count[0] > limit:
            return None
        out: list[str] = []
        stack = [(0, "")]
        while stack:
            q, s = stack.pop()
            if self.accept[q]:
                out.append(s)
            for k, t in enumerate(self.delta[q]):
                if t in live:
                    stack.extend((t, s + chr(c)) for c in range(self.cuts[k], ends[k]))
        return sorted(out)

    def _postorder(self, live: set[int]) -> list[int] | None:
        """The live states reachable from the start, successors first; None if they form a
        cycle (an infinite language). Iterative: strings may be long."""
        colour = {0: 1}
        order: list[int] = []
        stack = [(0, iter(set(self.delta[0])))]
        while stack:
            q, successors = stack[-1]
            for t in successors:
                if t not in live:
                    continue
                c = colour.get(t)
                if c == 1:
                    return None
                if c is None:
                    colour[t] = 1
                    stack.append((t, iter(set(self.delta[t]))))
                    break
            else:
                stack.pop()
                colour[q] = 2
                order.append(q)
        return order

    def samples(self, count: int = 8) -> Iterator[str]:
        """Accepted strings, shortest first, built from readable characters: the shortest
        one by a breadth-first search (linear in the automaton), then others found in a
        bounded amount of work (:data:`MAX_CELLS` characters and transitions: a suffix of
        thousands of characters would otherwise build cubically many)."""
        live = self._live()
        if 0 not in live:
            return
        ends = self.cuts[1:] + (MAXCP,)
        first = self._shortest(live, ends)
        yield first
        given = {first}
        frontier: dict[int, list[str]] = {0: [""]}  # a few strings per state and length
        budget = MAX_CELLS
        for _ in range(len(self.accept) + count):
            nxt: dict[int, list[str]] = {}
            for q, strs in frontier.items():
                row = self.delta[q]
                for s in strs:
                    budget -= len(row) + len(s)
                    if budget < 0:
                        return
                    if self.accept[q] and s not in given:
                        yield s
                        given.add(s)
                        if len(given) >= count:
                            return
                    for k, t in enumerate(row):
                        if t in live:
                            bucket = nxt.setdefault(t, [])
                            for c in _nice(self.cuts[k], ends[k]):
                                if len(bucket) < 3:
                                    bucket.append(s + c)
            frontier = nxt
            if not frontier:
                return

    def _shortest(self, live: set[int], ends: tuple) -> str:
        """A shortest accepted string (the start state is live)."""
        parent: dict[int, tuple[int, str] | None] = {0: None}
        order = [0]
        for q in order:
            if self.accept[q]:
                break
            for k, t in enumerate(self.delta[q]):
                if t in live and t not in parent:
                    parent[t] = (q, _nice(self.cuts[k], ends[k])[0])
                    order.append(t)
        chars = []
        step = parent[q]
        while step is not None:
            q, c = step
            chars.append(c)
            step = parent[q]
        return "".join(reversed(chars))


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
    """Hopcroft's partition refinement over the reachable states, then a canonical
    numbering (breadth-first by symbol class) and maximal symbol classes."""
    order, seen = [0], {0}
    for q in order:
        for t in delta[q]:
            if t not in seen:
                seen.add(t)
                order.append(t)
    block = _hopcroft(order, delta, accept, len(cuts))
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
    return Dfa(
        tuple(cuts[k] for k in keep),
        tuple(tuple(r[k] for k in keep) for r in rows),
        tuple(bool(accept[rep[b]]) for b in queue),
    )


def _hopcroft(
    states: list[int], delta: list[list[int]], accept: list[bool], k: int
) -> dict[int, int]:
    """The coarsest partition of ``states`` compatible with ``accept`` and ``delta``:
    state -> block number (Hopcroft, O(k n log n))."""
    inverse: list[dict[int, list[int]]] = [{} for _ in range(k)]
    for q in states:
        for c, t in enumerate(delta[q]):
            inverse[c].setdefault(t, []).append(q)
    blocks = [
        b for b in ({q for q in states if accept[q]}, {q for q in states if not accept[q]}) if b
    ]
    block = {q: i for i, b in enumerate(blocks) for q in b}
    work = [min(range(len(blocks)), key=lambda i: len(blocks[i]))] if len(blocks) == 2 else []
    pending = set(work)
    while work:
        a = work.pop()
        pending.discard(a)
        splitter = list(blocks[a])
        for c in range(k):
            inv = inverse[c]
            touched: dict[int, set[int]] = {}
            for q in splitter:
                for p in inv.get(q, ()):
                    touched.setdefault(block[p], set()).add(p)
            for b, part in touched.items():
                if len(part) == len(blocks[b]):
                    continue
                new = len(blocks)
                blocks[b] -= part
                blocks.append(part)
                for p in part:
                    block[p] = new
                if b in pending:
                    pending.add(new)
                    work.append(new)
                else:
                    smaller = new if len(part) <= len(blocks[b]) else b
                    pending.add(smaller)
                    work.append(smaller)
    return block


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
    return Dfa.build(
        [[(c, c + 1, t) for c, t in e.items()] for e in edges] + [[]],
        [dead] * (dead + 1),
        accept + [False],
    )


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
    """The union of lexical spans: the points as one trie, each other span as an
    automaton, united pairwise in a balanced tree (O(total size × log spans); one by one
    took quadratic time for a set of 20,000 excluded strings)."""
    points, parts = [], []
    for s in spans.items:
        is_point, v = LEX.point(s)
        if is_point:
            points.append(v)
        else:
            parts.append(dfa_span(s[0], s[2]))
    if points:
        parts.append(dfa_words(points))
    if not parts:
        return _dfa_all(False)
    while len(parts) > 1:
        united = [a.product(b, lambda x, y: x or y) for a, b in zip(parts[::2], parts[1::2])]
        parts = united + parts[len(united) * 2 :]
    return parts[0]


def dfa_kmp(s: str, absorbing: bool) -> Dfa:
    """Strings ending with ``s`` (``absorbing``: containing ``s``) — a KMP automaton, its
    transitions computed row by row from the row of the failure state (linear in
    ``len(s)`` × the distinct characters; following failure links per transition took
    quadratic time on ``abab…``)."""
    n = len(s)
    if n == 0:
        return _dfa_all(True)
    alphabet = sorted(set(s))
    _budget(n + 1, len(alphabet) + 1)  # a lower bound of the cells: refuse before work
    col = {ch: j for j, ch in enumerate(alphabet)}
    rows = [[0] * len(alphabet)]
    rows[0][col[s[0]]] = 1
    k = 0  # the failure state of the state being built
    for i in range(1, n + 1):
        row = list(rows[k])
        if i < n:
            row[col[s[i]]] = i + 1
            k = rows[k][col[s[i]]]
        rows.append(row)
    edges: list[list[tuple[int, int, int]]] = []
    default: list[int] = []
    for i, row in enumerate(rows):
        if i == n and absorbing:
            edges.append([])
            default.append(n)
        else:
            edges.append([(ord(ch), ord(ch) + 1, row[j]) for j, ch in enumerate(alphabet)])
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


def dfa_caseless(c: str) -> Dfa:
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
                s = t[i : i + length]
                cps = list(inv.get(s, ()))
                if length == 1 and s.casefold() == s:
                    cps.append(ord(s))
                es += [(cp, cp + 1, i + length) for cp in cps]
        edges.append(es)
    edges += [[], []]
    return Dfa.build(edges, [n + 1] * (n + 2), [i == n for i in range(n + 2)])


#: The most states of an automaton whose case-folding preimage is built (each state runs
#: the ~1,400 characters that fold to another string: ~0.3 s at this bound).
MAX_PREIMAGE_STATES = 256


def dfa_casefold_preimage(d: Dfa) -> Dfa:
    """``{v | v.casefold() ∈ L(d)}``: ``str.casefold`` maps each character to 1-3
    characters, so the preimage has d's states, a character ``ch`` moving state q to
    where ``casefold(ch)`` leads from q. Characters that fold to themselves keep d's
    transitions; each of the others gets a class of its own only where it leads
    elsewhere (few: those folding into d's alphabet)."""
    if len(d.accept) > MAX_PREIMAGE_STATES:  # each state runs every folding character
        raise TooComplex(
            f"a case-folding automaton of more than {MAX_PREIMAGE_STATES} states is not built"
        )
    cuts, delta = d.cuts, d.delta
    ends = cuts[1:] + (MAXCP,)

    def run(q: int, s: str) -> int:
        for ch in s:
            q = delta[q][bisect_right(cuts, ord(ch)) - 1]
        return q

    edges: list[list[tuple[int, int, int]]] = [
        [(cuts[k], ends[k], t) for k, t in enumerate(row)] for row in delta
    ]
    for folded, cps in _casefold_inverse().items():
        for q, row in enumerate(delta):
            t = run(q, folded)
            for cp in cps:
                if row[bisect_right(cuts, cp) - 1] != t:
                    edges[q].append((cp, cp + 1, t))
    return Dfa.build(edges, [0] * len(delta), list(d.accept))


class StrSet:
    """A set of strings: a :class:`Dfa`, and its lexical spans when known."""

    __slots__ = ("_dfa", "lex")

    def __init__(self, lex: Spans | None = None, dfa: Dfa | None = None) -> None:
        self.lex, self._dfa = lex, dfa

    @property
    def dfa(self) -> Dfa:
        if self._dfa is None:
            assert self.lex is not None  # a StrSet holds spans, an automaton or both
            self._dfa = dfa_of_spans(self.lex)
        return self._dfa

    def is_empty(self) -> bool:
        return not self.lex.items if self.lex is not None else self.dfa.is_empty()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StrSet):
            return NotImplemented
        if self.lex is not None and other.lex is not None:
            return self.lex == other.lex
        return self.dfa == other.dfa

    def __hash__(self) -> int:
        return hash(self.dfa)

    def _op(self, other: StrSet, spans_op, fn) -> StrSet:
        if (self.lex is None) != (other.lex is None):
            self._lexical()
            other._lexical()
        if self.lex is not None and other.lex is not None:
            return StrSet(spans_op(self.lex, other.lex))
        return StrSet(None, self.dfa.product(other.dfa, fn))

    def _lexical(self) -> None:
        """Give an automaton of every string or of none its spans, so that an operation
        with a set that has spans keeps them (``prefix-ignore-case ""`` is ``prefix ""``:
        ``any < "A"`` and either is ``< "A"``, which only the spans represent)."""
        if self.lex is None:
            if self.dfa.is_universal():
                self.lex = Spans.of(LEX, [("", True, TOP, False)])
            elif self.dfa.is_empty():
                self.lex = Spans(LEX, ())

    def __and__(self, other: StrSet) -> StrSet:
        return self._op(other, Spans.__and__, lambda x, y: x and y)

    def __or__(self, other: StrSet) -> StrSet:
        return self._op(other, Spans.__or__, lambda x, y: x or y)

    def __sub__(self, other: StrSet) -> StrSet:
        return self._op(other, Spans.__sub__, lambda x, y: x and not y)

    def __invert__(self) -> StrSet:
        if self.lex is not None:
            return StrSet(~self.lex)
        return StrSet(None, self.dfa.complement())

    def issubset(self, other: StrSet) -> bool:
        if self.lex is not None and other.lex is not None:
            return self.lex.issubset(other.lex)
        return (self - other).is_empty()

    def contains(self, v: str) -> bool:
        return self.lex.contains(v) if self.lex is not None else self.dfa.contains(v)

    def strings(self, limit: int = 4096) -> list[str] | None:
        if self.lex is not None:
            return self.lex.points(limit)
        return self.dfa.strings(limit)

    def samples(self) -> Iterator[str]:
        if self.lex is not None:
            yield from self.lex.samples()
        yield from self.dfa.samples()


__all__ = [
    "Dfa",
    "StrSet",
    "dfa_casefold_preimage",
    "dfa_caseless",
    "dfa_kmp",
    "dfa_of_spans",
    "dfa_span",
    "dfa_words",
]
