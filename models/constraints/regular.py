"""Regular expressions over code points: EventBridge wildcards, quamina's shell-style
globs and I-Regexp (RFC 9485), as matchers and as minimal automata (Mühl 2002, §4.3.3:
string constraints denote regular languages; covering is language inclusion).

An expression is parsed into a small syntax tree (sets of code-point ranges, concatenation,
alternation, bounded and unbounded repetition), built into a Thompson NFA, and used two
ways:

* **matching** runs the NFA as a lazily built DFA (the sets of NFA states reached, cached per
  character): time linear in the value's length for every expression, so no pattern can
  make matching blow up the way a backtracking engine can (``(a|a)*b``), and memory is
  bounded (:data:`MAX_LAZY_STATES`, the cache starts over past it);
* **relations** use the subset construction into a :class:`~.automata.Dfa` (minimal,
  canonical), within :data:`~.automata.MAX_CELLS` transitions, else
  :class:`~.limits.TooComplex` (the callers answer soundly).

I-Regexp (RFC 9485 §3, the ABNF) is parsed exactly: it matches the whole string (§5: an
implicit anchoring; ``^`` and ``$`` are ordinary characters), ``.`` is any character but
``\\n`` and ``\\r`` (§5.3), character classes hold single characters, ranges and ``\\p{..}`` /
``\\P{..}`` Unicode general categories (taken from :mod:`unicodedata`), escapes are the
single-character escapes of §3 only (no ``\\d``, ``\\w``, backreferences, lookaround or
lazy quantifiers: they are outside I-Regexp and refused). Sizes are bounded:
:data:`MAX_REGEXP` characters, repetition counts up to :data:`MAX_REPEAT`, NFAs up to
:data:`MAX_NFA` states; beyond them :class:`RegexpError`.
"""

from __future__ import annotations

import itertools
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from pubsift.models.constraints.automata import MAX_CELLS, Dfa
from pubsift.models.constraints.intervals import MAXCP
from pubsift.models.constraints.limits import TooComplex

#: The longest I-Regexp accepted (characters).
MAX_REGEXP = 4096
#: The largest count of a ``{n,m}`` quantifier.
MAX_REPEAT = 1000
#: The most NFA states an expression may build into (quantifiers copy their operand).
MAX_NFA = 20_000
#: The most states the subset construction builds before it gives up (TooComplex: the
#: relations answer soundly); it bounds the time one expression costs (~0.1 s).
MAX_DFA_STATES = 2000
#: The most lazily built DFA states a matcher keeps: past it, the cache starts over
#: before the next string (one string adds at most one state per character).
MAX_LAZY_STATES = 4096

Ranges = tuple[tuple[int, int], ...]  # sorted, disjoint, non-adjacent [lo, hi) code points
Node = tuple[Any, ...]  # ("set", Ranges) | ("cat", nodes) | ("alt", nodes) | ("rep", n, lo, hi)

ANY_CHAR: Ranges = ((0, MAXCP),)


class RegexpError(ValueError):
    """An expression outside the accepted syntax or limits; ``pos`` is where (0-based)."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message, self.pos = message, pos


# --------------------------------------------------------------------------------------
# character sets


def ranges_of(pairs: Sequence[tuple[int, int]]) -> Ranges:
    """Sorted, merged ranges from any ``[lo, hi)`` pairs."""
    out: list[list[int]] = []
    for lo, hi in sorted(p for p in pairs if p[0] < p[1]):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return tuple((a, b) for a, b in out)


def complement(r: Ranges) -> Ranges:
    out, at = [], 0
    for lo, hi in r:
        if at < lo:
            out.append((at, lo))
        at = hi
    if at < MAXCP:
        out.append((at, MAXCP))
    return tuple(out)


def char(c: str) -> Node:
    o = ord(c)
    return ("set", ((o, o + 1),))


def literal(s: str) -> Node:
    return ("cat", tuple(char(c) for c in s))


@lru_cache(maxsize=64)
def category(name: str) -> Ranges:
    """The code points whose Unicode general category is ``name`` (``L``: every ``L*``)."""
    pairs: list[tuple[int, int]] = []
    start = -1
    for cp in range(MAXCP):
        hit = unicodedata.category(chr(cp)).startswith(name)
        if hit and start < 0:
            start = cp
        elif not hit and start >= 0:
            pairs.append((start, cp))
            start = -1
    if start >= 0:
        pairs.append((start, MAXCP))
    return tuple(pairs)


# --------------------------------------------------------------------------------------
# globs: EventBridge wildcards and quamina shell-style patterns


def glob(parts: Sequence[str]) -> Node:
    """``parts[0] * parts[1] * ... * parts[-1]``: the literal parts with any run of
    characters between them."""
    nodes: list[Node] = []
    for i, p in enumerate(parts):
        if i:
            nodes.append(("rep", ("set", ANY_CHAR), 0, None))
        nodes.append(literal(p))
    return ("cat", tuple(nodes))


def wildcard_parts(s: str, escapes: bool = True) -> tuple[str, ...]:
    """The literal parts between the ``*`` of an EventBridge wildcard (event-ruler
    README, "Wildcard matching": ``\\*`` is a literal star and ``\\\\`` a backslash, no
    other escapes, no consecutive stars); ``escapes=False``: quamina's shell-style
    patterns, where a backslash is an ordinary character. One part: no star."""
    parts: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and escapes:
            if i + 1 < len(s) and s[i + 1] in "*\\":
                cur.append(s[i + 1])
                i += 2
                continue
            raise RegexpError("in a wildcard, a backslash escapes only '*' or '\\'", i)
        if c == "*":
            if i + 1 < len(s) and s[i + 1] == "*":
                raise RegexpError("consecutive '*' are not allowed in a wildcard", i)
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return tuple(parts)


def wildcard_text(parts: Sequence[str]) -> str:
    """The EventBridge wildcard of ``parts`` (stars and backslashes escaped)."""
    return "*".join(p.replace("\\", "\\\\").replace("*", "\\*") for p in parts)


def glob_matcher(parts: tuple[str, ...]) -> Callable[[str], bool]:
    """A test of ``s`` against the glob ``parts`` (at least two): the first part is a
    prefix, the last a suffix, and the middle ones occur in order between them; the
    leftmost occurrence of each middle part is the right one to take (a later one leaves
    less room for the rest), so one pass decides."""
    head, tail, middle = parts[0], parts[-1], parts[1:-1]
    least = sum(map(len, parts))

    def test(s: str) -> bool:
        if len(s) < least or not s.startswith(head) or not s.endswith(tail):
            return False
        at, end = len(head), len(s) - len(tail)
        for m in middle:
            i = s.find(m, at, end)
            if i < 0:
                return False
            at = i + len(m)
        return True

    return test


# --------------------------------------------------------------------------------------
# I-Regexp (RFC 9485 §3)

_META = frozenset("()*+.?[\\]{|}")
_SINGLE_ESC = {**{c: c for c in "()*+-.?[\\]^{|}"}, "n": "\n", "r": "\r", "t": "\t"}
_CATEGORIES = {
    "L": "ultmo",
    "M": "nce",
    "N": "dlo",
    "P": "cdseifo",
    "Z": "slp",
    "S": "mcko",
    "C": "cfon",
}
_DOT = complement(((10, 11), (13, 14)))


def parse_iregexp(src: str) -> Node:
    """The syntax tree of the I-Regexp ``src``; :class:`RegexpError` outside RFC 9485 §3."""
    if len(src) > MAX_REGEXP:
        raise RegexpError(f"a regexp has at most {MAX_REGEXP} characters", MAX_REGEXP)
    p = _Parser(src)
    node = p.alternation()
    if p.i < len(src):
        c = src[p.i]
        raise RegexpError(f"unexpected {c!r} (an unmatched ')' or a stray metacharacter)", p.i)
    return node


class _Parser:
    def __init__(self, src: str) -> None:
        self.src, self.i = src, 0

    def peek(self) -> str:
        return self.src[self.i] if self.i < len(self.src) else ""

    def alternation(self) -> Node:
        branches = [self.branch()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.branch())
        return branches[0] if len(branches) == 1 else ("alt", tuple(branches))

    def branch(self) -> Node:
        pieces: list[Node] = []
        while self.peek() not in ("", "|", ")"):
            pieces.append(self.piece())
        return pieces[0] if len(pieces) == 1 else ("cat", tuple(pieces))

    def piece(self) -> Node:
        atom = self.atom()
        c = self.peek()
        if c == "*":
            self.i += 1
            node: Node = ("rep", atom, 0, None)
        elif c == "+":
            self.i += 1
            node = ("rep", atom, 1, None)
        elif c == "?":
            self.i += 1
            node = ("rep", atom, 0, 1)
        elif c == "{":
            lo, hi = self.quantifier()
            node = ("rep", atom, lo, hi)
        else:
            return atom
        if self.peek() in ("*", "+", "?", "{"):
            raise RegexpError(
                "a quantifier cannot follow a quantifier (no lazy or possessive forms in "
                "I-Regexp; group with parentheses)",
                self.i,
            )
        return node

    def quantifier(self) -> tuple[int, int | None]:
        start = self.i
        self.i += 1
        lo = self.number(start)
        hi: int | None = lo
        if self.peek() == ",":
            self.i += 1
            hi = None if self.peek() == "}" else self.number(start)
        if self.peek() != "}":
            raise RegexpError("a quantifier is {n}, {n,} or {n,m} with decimal n, m", start)
        self.i += 1
        if hi is not None and hi < lo:
            raise RegexpError(f"in {{{lo},{hi}}} the maximum is below the minimum", start)
        return lo, hi

    def number(self, start: int) -> int:
        j = self.i
        while self.peek().isascii() and self.peek().isdigit():
            self.i += 1
        if j == self.i:
            raise RegexpError("a quantifier is {n}, {n,} or {n,m} with decimal n, m", start)
        n = int(self.src[j : self.i])
        if n > MAX_REPEAT:
            raise RegexpError(f"repetition counts are at most {MAX_REPEAT}", j)
        return n

    def atom(self) -> Node:
        c, at = self.peek(), self.i
        if c == "(":
            self.i += 1
            if self.peek() == "?":
                raise RegexpError("(? groups are outside I-Regexp", self.i)
            inner = self.alternation()
            if self.peek() != ")":
                raise RegexpError("unclosed '('", at)
            self.i += 1
            return inner
        if c == ".":
            self.i += 1
            return ("set", _DOT)
        if c == "[":
            return ("set", self.char_class())
        if c == "\\":
            return ("set", self.escape(in_class=False))
        if c in _META:
            raise RegexpError(f"{c!r} must be escaped as \\{c} to match itself", at)
        self.i += 1
        return char(c)

    def escape(self, in_class: bool) -> Ranges:
        at = self.i
        self.i += 1
        c = self.peek()
        if c in _SINGLE_ESC:
            self.i += 1
            o = ord(_SINGLE_ESC[c])
            return ((o, o + 1),)
        if c in ("p", "P"):
            self.i += 1
            r = self.property(at)
            return complement(r) if c == "P" else r
        what = "a backreference" if c.isdigit() else f"\\{c}" if c else "a trailing backslash"
        raise RegexpError(
            f"{what} is outside I-Regexp (escapes: \\n \\r \\t, \\p{{..}}, \\P{{..}} and "
            "a backslash before one of ( ) * + - . ? [ \\ ] ^ { | })",
            at,
        )

    def property(self, at: int) -> Ranges:
        if self.peek() != "{":
            raise RegexpError("\\p and \\P take a category in braces, e.g. \\p{Lu}", at)
        end = self.src.find("}", self.i)
        name = self.src[self.i + 1 : end] if end > 0 else ""
        ok = len(name) in (1, 2) and name[0] in _CATEGORIES
        if not ok or (len(name) == 2 and name[1] not in _CATEGORIES[name[0]]):
            raise RegexpError(f"unknown Unicode category {name!r} in \\p{{..}}", at)
        self.i = end + 1
        return category(name)

    def char_class(self) -> Ranges:
        at = self.i
        self.i += 1
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        pairs: list[tuple[int, int]] = []
        first = True
        while True:
            c = self.peek()
            if c == "":
                raise RegexpError("unclosed '['", at)
            if c == "]" and not first:
                self.i += 1
                break
            if c == "-":
                self.i += 1
                if not first and self.peek() != "]":
                    raise RegexpError(
                        "a '-' in a character class comes first, last, or between the "
                        "ends of a range",
                        self.i - 1,
                    )
                pairs.append((45, 46))
            elif c == "\\" and self.src[self.i + 1 : self.i + 2] in ("p", "P"):
                pairs.extend(self.escape(in_class=True))
            else:
                lo = self.class_char()
                if self.peek() == "-" and self.src[self.i + 1 : self.i + 2] not in ("]", ""):
                    self.i += 1
                    hi = self.class_char()
                    if hi < lo:
                        raise RegexpError("a range in a character class runs backwards", at)
                    pairs.append((lo, hi + 1))
                else:
                    pairs.append((lo, lo + 1))
            first = False
        r = ranges_of(pairs)
        return complement(r) if negate else r

    def class_char(self) -> int:
        c = self.peek()
        if c == "\\":
            ((lo, _hi),) = self.escape(in_class=True)
            return lo
        if c in ("[", "]"):
            raise RegexpError(f"{c!r} in a character class must be escaped", self.i)
        self.i += 1
        return ord(c)


# --------------------------------------------------------------------------------------
# NFA


class Nfa:
    """A Thompson NFA: per state its range edges ``(lo, hi, target)`` and its epsilon
    edges; one start and one accepting state."""

    __slots__ = ("_closures", "accept", "edges", "eps", "start")

    def __init__(self, node: Node) -> None:
        self.edges: list[list[tuple[int, int, int]]] = []
        self.eps: list[list[int]] = []
        self.start, self.accept = self._build(node)
        self._closures: dict[int, frozenset[int]] = {}

    def _new(self) -> int:
        if len(self.edges) >= MAX_NFA:
            raise RegexpError(
                f"the expression expands into more than {MAX_NFA} automaton states "
                "(large repetition counts multiply)",
                0,
            )
        self.edges.append([])
        self.eps.append([])
        return len(self.edges) - 1

    def _build(self, node: Node) -> tuple[int, int]:
        kind = node[0]
        if kind == "set":
            s, e = self._new(), self._new()
            self.edges[s] = [(lo, hi, e) for lo, hi in node[1]]
            return s, e
        if kind == "cat":
            s = e = self._new()
            for part in node[1]:
                ps, pe = self._build(part)
                self.eps[e].append(ps)
                e = pe
            return s, e
        if kind == "alt":
            s, e = self._new(), self._new()
            for part in node[1]:
                ps, pe = self._build(part)
                self.eps[s].append(ps)
                self.eps[pe].append(e)
            return s, e
        _, inner, lo, hi = node
        s = e = self._new()
        for _ in range(lo):
            ps, pe = self._build(inner)
            self.eps[e].append(ps)
            e = pe
        if hi is None:
            ps, pe = self._build(inner)
            end = self._new()
            self.eps[e] += [ps, end]
            self.eps[pe] += [ps, end]
            return s, end
        end = self._new()
        for _ in range(hi - lo):
            ps, pe = self._build(inner)
            self.eps[e] += [ps, end]
            e = pe
        self.eps[e].append(end)
        return s, end

    def closure(self, states: Any) -> frozenset[int]:
        out: set[int] = set()
        for q in states:
            c = self._closures.get(q)
            if c is None:
                seen, stack = {q}, [q]
                while stack:
                    for t in self.eps[stack.pop()]:
                        if t not in seen:
                            seen.add(t)
                            stack.append(t)
                c = self._closures[q] = frozenset(seen)
            out |= c
        return frozenset(out)

    def step(self, states: frozenset[int], cp: int) -> frozenset[int]:
        return self.closure(t for q in states for lo, hi, t in self.edges[q] if lo <= cp < hi)

    def dfa(self) -> Dfa:
        """The minimal DFA (subset construction over range classes); TooComplex past
        :data:`~.automata.MAX_CELLS` transitions."""
        start = self.closure([self.start])
        index = {start: 0}
        order = [start]
        rows: list[list[tuple[int, int, int]]] = []
        cells = 0
        moved: dict[frozenset[int], frozenset[int]] = {}
        for sset in order:
            # a sweep over the edges' ends: the targets active between two cuts
            ends: dict[int, list[tuple[int, int]]] = {}
            for q in sset:
                for lo, hi, t in self.edges[q]:
                    ends.setdefault(lo, []).append((1, t))
                    ends.setdefault(hi, []).append((-1, t))
            active: dict[int, int] = {}
            row = []
            cuts = sorted(ends)
            for a, b in itertools.pairwise(cuts):
                for step, t in ends[a]:
                    k = active.get(t, 0) + step
                    if k:
                        active[t] = k
                    else:
                        del active[t]
                if not active:
                    continue
                key = frozenset(active)
                targets = moved.get(key)
                if targets is None:
                    targets = moved[key] = self.closure(key)
                n = index.get(targets)
                if n is None:
                    n = index[targets] = len(order)
                    order.append(targets)
                row.append((a, b, n))
            cells += len(row) + 1
            if cells > MAX_CELLS or len(order) > MAX_DFA_STATES:
                raise TooComplex(f"an automaton would need more than {MAX_CELLS} transitions")
            rows.append(row)
        dead = len(order)
        accept = [self.accept in s for s in order] + [False]
        return Dfa.build(rows + [[]], [dead] * (dead + 1), accept)

    def matcher(self) -> Callable[[str], bool]:
        """A test of a whole string: the NFA run as a lazily built DFA."""
        start = self.closure([self.start])
        ids: dict[frozenset[int], int] = {}
        sets: list[frozenset[int]] = []
        moves: list[dict[str, int]] = []
        final: list[bool] = []
        accept = self.accept

        def intern(s: frozenset[int]) -> int:
            n = ids.get(s)
            if n is None:
                n = ids[s] = len(sets)
                sets.append(s)
                moves.append({})
                final.append(accept in s)
            return n

        def test(s: str) -> bool:
            if len(sets) > MAX_LAZY_STATES:  # between strings: no state index is held
                ids.clear()
                sets.clear()
                moves.clear()
                final.clear()
            q = intern(start)
            for ch in s:
                n = moves[q].get(ch)
                if n is None:
                    nxt = self.step(sets[q], ord(ch))
                    if not nxt:
                        return False
                    n = moves[q][ch] = intern(nxt)
                q = n
            return final[q]

        return test


def dfa_of(node: Node) -> Dfa:
    try:
        return Nfa(node).dfa()
    except RegexpError as e:
        raise TooComplex(e.message) from None


def contains(d: Dfa, s: str) -> bool:
    q = 0
    for ch in s:
        q = d.delta[q][bisect_right(d.cuts, ord(ch)) - 1]
    return d.accept[q]


@lru_cache(maxsize=1024)
def iregexp_matcher(src: str) -> Callable[[str], bool]:
    """The whole-string test of an I-Regexp (validated: :class:`RegexpError`)."""
    return Nfa(parse_iregexp(src)).matcher()


def iregexp_dfa(src: str) -> Dfa:
    """The minimal DFA of an I-Regexp; TooComplex past the budget (remembered: a
    hostile expression costs its subset construction once)."""
    return _known(_regexp_dfa(src))


def glob_dfa(parts: tuple[str, ...]) -> Dfa:
    return _known(_glob_dfa(parts))


def _known(d: Dfa | str) -> Dfa:
    if isinstance(d, str):
        raise TooComplex(d)
    return d


@lru_cache(maxsize=1024)
def _regexp_dfa(src: str) -> Dfa | str:
    try:
        return dfa_of(parse_iregexp(src))
    except TooComplex as e:
        return str(e)


@lru_cache(maxsize=1024)
def _glob_dfa(parts: tuple[str, ...]) -> Dfa | str:
    try:
        return dfa_of(glob(parts))
    except TooComplex as e:
        return str(e)


__all__ = [
    "MAX_NFA",
    "MAX_REGEXP",
    "MAX_REPEAT",
    "Nfa",
    "RegexpError",
    "category",
    "contains",
    "dfa_of",
    "glob",
    "glob_dfa",
    "glob_matcher",
    "iregexp_dfa",
    "iregexp_matcher",
    "parse_iregexp",
    "wildcard_parts",
    "wildcard_text",
]
