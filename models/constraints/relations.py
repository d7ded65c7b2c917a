"""Identity, covering, overlap, conjunction and merging of attribute filters
(Mühl 2002, §4.3.2-4.3.3 and §4.3.7; Conan 2018, §4.3.3-4.3.10).

Every relation is derived from the value sets ``L_A`` of :mod:`.valuesets` and is exact for
every pair of operators, across kinds (the covering tables 4.1-4.7 are special cases):

* ``covers(a, b)``   ⇔ L_A(a) ⊇ L_A(b)
* ``identical(a, b)`` ⇔ L_A(a) = L_A(b)
* ``overlaps(a, b)``  ⇔ L_A(a) ∩ L_A(b) ≠ ∅
* ``conjoin(a, b)``  — one constraint with L_A = L_A(a) ∩ L_A(b) (conjunction-complete
  classes, e.g. ``x ≥ 3 ∧ x ≤ 5`` → ``x ∈ [3, 5]``, §4.3.2)
* ``merge(cs)``      — a perfect merger, L_A = ∪ L_A(cs) exactly (Table 4.8, unions of sets
  and connected intervals, ``x < a ∪ x > b`` → ``x ∉ [a, b]``, ``∃x`` when exact), or None
* ``hull(cs)``       — the tightest single constraint found that covers all of cs (imperfect
  merging, §4.3.7)

Kinds matter: a value of another kind never matches, so ``x = 5 ∪ x ≠ 5`` is *every number*
(``x ∈ (-∞, ∞)``), which is ``∃x`` only for an attribute whose values are numbers.
``integer=True`` says the attribute's numbers are integers (from the model's schema).

No pair of operators is left undecided: ``covers``, ``identical`` and ``overlaps`` are exact
for all of them (the one idealization: numbers are reals, so an open interval between two
adjacent floats counts as non-empty). ``conjoin`` and ``merge`` read the resulting value set
back with :func:`.representation.represent`, which is complete for the lexical, numeric,
boolean, null, set and single multi-value cases and otherwise verifies candidates exactly:
a result is always right, but for suffix / substring / equals-ignore-case / instanceof
combinations and unions of several multi-value cubes a representation may be missed
(``conjoin`` then raises ``NotRepresentable`` and ``merge`` returns None).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from functools import lru_cache, reduce, wraps
from typing import Any, ParamSpec, TypeVar

from pubsift.models.constraints.constraints import ABSENT, Constraint, Op
from pubsift.models.constraints.multivalues import TooComplex
from pubsift.models.constraints.representation import (
    canonical_hint,
    lex_span_constraint,
    part_keys,
    represent,
    span_constraint,
)
from pubsift.models.constraints.values import BOOL, MULTI, NULL, NUM, STR, skey
from pubsift.models.constraints.valuesets import (
    INF,
    INTEGER,
    LEX,
    REAL,
    TOP,
    Spans,
    ValueSet,
    prefix_span,
    value_set,
)


class Unsatisfiable(ValueError):
    """A conjunction of constraints that no value satisfies (L_A = ∅)."""


class NotRepresentable(ValueError):
    """A value set that no single constraint expresses exactly."""


_EXISTS, _NOT_EXISTS, _EQ, _IN_SET, _INSTANCEOF = (
    Op.EXISTS,
    Op.NOT_EXISTS,
    Op.EQ,
    Op.IN_SET,
    Op.INSTANCEOF,
)
_LT, _LE, _GT, _GE, _IN_RANGE, _PREFIX = Op.LT, Op.LE, Op.GT, Op.GE, Op.IN_RANGE, Op.PREFIX
_SUFFIX, _SUBSTRING, _ANY, _CIDR = Op.SUFFIX, Op.SUBSTRING, Op.ANY, Op.CIDR
_NOT_APPLICABLE = (None, None)
# affix constraints: "b's constant satisfies a's test" decides a ⊒ b (Table 4.5)
_AFFIX = {_PREFIX: str.startswith, _SUFFIX: str.endswith, _SUBSTRING: lambda s, t: t in s}


def _span_of(c: Constraint, integer: bool) -> tuple[Any, ...]:
    """(line, canonical span) when L_A(c) is one interval of numbers or of strings (span
    None: empty), else (None, None). The fast path of the routing hot spots: ranges,
    comparisons, equality and prefixes (Tables 4.2-4.5) without building value sets."""
    op, x = c.op, c.operand
    if op is _IN_RANGE:
        line = LEX if type(x.lo) is str else INTEGER if integer else REAL
        return line, line.canon(x.lo, x.lo_closed, x.hi, x.hi_closed)
    if op is _PREFIX:
        return LEX, LEX.canon(*prefix_span(x))
    t = type(x)
    bottom: Any
    top: Any
    if t is str:
        line, bottom, top = LEX, "", TOP
    elif t is int or t is float:
        line, bottom, top = (INTEGER if integer else REAL), -INF, INF
    else:
        return _NOT_APPLICABLE
    if op is _EQ:
        return line, line.canon(x, True, x, True)
    if op is _LT:
        return line, line.canon(bottom, True, x, False)
    if op is _LE:
        return line, line.canon(bottom, True, x, True)
    if op is _GT:
        return line, line.canon(x, False, top, False)
    if op is _GE:
        return line, line.canon(x, True, top, False)
    return _NOT_APPLICABLE


@lru_cache(maxsize=65536)
def _finite(c: Constraint, integer: bool) -> tuple[Any, ...] | None:
    """The members of L_A(c) for EQ / IN_SET / INSTANCEOF, else None."""
    op, x = c.op, c.operand
    if op is _EQ:
        keys = [skey(x)]
    elif op is _IN_SET:
        keys = list(x)
    elif op is _INSTANCEOF:
        return tuple(sorted(x.members))
    else:
        return None
    return tuple(
        v
        for k, v in keys
        if not (integer and k == NUM and isinstance(v, float) and not v.is_integer())
    )


def _same_scalar(x: Any, y: Any) -> bool:
    """skey(x) == skey(y) without building the keys."""
    tx, ty = type(x), type(y)
    if tx is ty or (tx is int and ty is float) or (tx is float and ty is int):
        same: bool = x == y
        return same
    return False


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _sound(answer: Any) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Answer ``answer`` (the sound one: covers/identical False, overlaps True, merge None;
    a callable is called with the arguments) when deciding exactly would be
    :class:`~.multivalues.TooComplex` (string automata past ``automata.MAX_CELLS``,
    unions of many multi-value cubes)."""

    def wrap(fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @wraps(fn)
        def sound(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return fn(*args, **kwargs)
            except TooComplex:
                found: _R = answer(*args, **kwargs) if callable(answer) else answer
                return found

        return sound

    return wrap


def _not_representable(*args: Any, **kwargs: Any) -> Constraint:
    raise NotRepresentable(
        "deciding this conjunction exactly is too costly (string automata too large)"
    )


@_sound(False)
def covers(a: Constraint, b: Constraint, integer: bool = False) -> bool:
    """L_A(a) ⊇ L_A(b), exactly (Mühl §4.3.2, Tables 4.1-4.7); False when too costly to
    decide (:func:`_sound`)."""
    if a is b:
        return True
    if a.op is _EQ and b.op is _EQ and not integer:
        return _same_scalar(a.operand, b.operand)
    inner = _both_any(a, b)
    if inner is not None:  # L(any a) ⊇ L(any b) ⇔ L(a) ⊇ L(b) (elements: over the reals)
        return covers(*inner)
    if a.op is _CIDR or b.op is _CIDR:
        return _cidr_covers(a, b)
    la, sa = _span_of(a, integer)
    if la is not None:
        lb, sb = _span_of(b, integer)
        if lb is not None:
            if sb is None:
                return True
            if sa is None or (la is LEX) != (lb is LEX):
                return False
            return (sa[0], not sa[1]) <= (sb[0], not sb[1]) and (sb[2], sb[3]) <= (sa[2], sa[3])
    opa, opb = a.op, b.op
    if opa is _EXISTS:  # every present value: all but ABSENT
        return opb is not _NOT_EXISTS and not (opb is _ANY and b.operand.op is _NOT_EXISTS)
    if opa in _AFFIX and opb in _AFFIX and (opa is opb or opa is _SUBSTRING):
        return _AFFIX[opa](b.operand, a.operand)  # Table 4.5
    if opa is _IN_SET and opb is _IN_SET and not integer:
        subset: bool = b.operand <= a.operand
        return subset
    if opb is _EQ and opa is _IN_SET and not integer:
        return skey(b.operand) in a.operand
    if a == b:
        return True
    vals = _finite(b, integer)
    if vals is not None:
        return all(a.matches(v) for v in vals)
    return value_set(b, integer).issubset(value_set(a, integer))


def span_key(c: Constraint, integer: bool = False) -> tuple[Any, ...] | None:
    """For a constraint whose L_A is one interval of numbers or of strings (ranges,
    comparisons, equality, prefixes), a hashable key such that two such constraints are
    :func:`identical` exactly when their keys are equal; None for other constraints (which
    may still be identical to one of these, e.g. a one-value set)."""
    line, span = _span_of(c, integer)
    if line is None:
        return None
    return ("empty",) if span is None else (line is LEX, span)


@_sound(False)
def identical(a: Constraint, b: Constraint, integer: bool = False) -> bool:
    """L_A(a) = L_A(b), exactly (False when too costly to decide)."""
    if a is b:
        return True
    if a.op is _EQ and b.op is _EQ and not integer:
        return _same_scalar(a.operand, b.operand)
    inner = _both_any(a, b)
    if inner is not None:
        return identical(*inner)
    if a.op is _CIDR or b.op is _CIDR:
        return a.op is b.op and a.operand == b.operand
    la, sa = _span_of(a, integer)
    if la is not None:
        lb, sb = _span_of(b, integer)
        if lb is not None:
            return sa == sb and (sa is None or (la is LEX) == (lb is LEX))
    if a.op is _IN_SET and b.op is _IN_SET and not integer:
        same: bool = a.operand == b.operand
        return same
    if a == b:
        return True
    return value_set(a, integer) == value_set(b, integer)


@_sound(True)
def overlaps(a: Constraint, b: Constraint, integer: bool = False) -> bool:
    """L_A(a) ∩ L_A(b) ≠ ∅, exactly (True when too costly to decide)."""
    if a.op is _EQ and b.op is _EQ and not integer:
        return _same_scalar(a.operand, b.operand)
    if a.op is _CIDR and b.op is _CIDR:
        x, y = a.operand, b.operand
        return bool(x.version == y.version and x.overlaps(y))
    if a.op is _CIDR or b.op is _CIDR:
        c, other = (a, b) if a.op is _CIDR else (b, a)
        vals = _finite(other, integer)
        if vals is not None:
            return any(c.matches(v) for v in vals)
    la, sa = _span_of(a, integer)
    if la is not None:
        lb, sb = _span_of(b, integer)
        if lb is not None:
            if sa is None or sb is None or (la is LEX) != (lb is LEX):
                return False
            lo, nlc = max((sa[0], not sa[1]), (sb[0], not sb[1]))
            hi, hc = min((sa[2], sa[3]), (sb[2], sb[3]))
            return la.canon(lo, not nlc, hi, hc) is not None
    opa, opb = a.op, b.op
    if opa is opb and opa in _AFFIX:
        x, y = a.operand, b.operand
        return opa is _SUBSTRING or _AFFIX[opa](x, y) or _AFFIX[opa](y, x)
    if opa is _IN_SET and not integer:
        if opb is _IN_SET:
            return not a.operand.isdisjoint(b.operand)
        if opb is _EQ:
            return skey(b.operand) in a.operand
    vals = _finite(b, integer)
    if vals is not None:
        return any(a.matches(v) for v in vals)
    vals = _finite(a, integer)
    if vals is not None:
        return any(b.matches(v) for v in vals)
    if opa is _EXISTS or opb is _EXISTS:
        other = b if opa is _EXISTS else a
        return other.op is not _NOT_EXISTS and not value_set(other, integer).is_empty()
    return not value_set(a, integer).isdisjoint(value_set(b, integer))


def _both_any(a: Constraint, b: Constraint) -> tuple[Constraint, Constraint] | None:
    """The inner constraints when both are ``any`` of a test on a present value:
    ``any c`` holds for the scalars of c and the lists with an element in c, so the
    relations of two of them are those of their inner constraints (over the reals)."""
    if a.op is not _ANY or b.op is not _ANY:
        return None
    x, y = a.operand, b.operand
    if x.op in (_EXISTS, _NOT_EXISTS) or y.op in (_EXISTS, _NOT_EXISTS):
        return None
    return x, y


def _cidr_covers(a: Constraint, b: Constraint) -> bool:
    """Covering with a ``cidr`` on one side: exact between two networks (the strings
    read as addresses of b's network are among a's iff b's network is within a's, of
    the same IP version); a finite b is tested value by value; else False (sound)."""
    if a.op is _CIDR and b.op is _CIDR:
        x, y = a.operand, b.operand
        return bool(x.version == y.version and y.subnet_of(x))
    vals = _finite(b, False)
    if vals is not None:
        return all(a.matches(v) for v in vals)
    if a.op is _EXISTS or (a.op is Op.ANYTHING_BUT and b.op is _CIDR):
        # every address string is present; anything-but: covers if no excluded value
        # can be an address of b's network
        return a.op is _EXISTS or not any(_may_be_address(e, b) for e in a.operand)
    return False


def _may_be_address(excluded: Constraint, net: Constraint) -> bool:
    """Whether an ``anything-but`` exclusion may hold for some address string of the
    network ``net`` (True when unsure)."""
    vals = _finite(excluded, False)
    if vals is not None:
        return any(net.matches(v) for v in vals)
    return True


def counterexample(a: Constraint, b: Constraint, integer: bool = False) -> Any:
    """A value in L_A(b) \\ L_A(a) (a witness that ``a`` does not cover ``b``), or the
    marker ``NotImplemented`` when there is none (``a`` covers ``b``)."""
    return next((value_set(b, integer) - value_set(a, integer)).samples(), NotImplemented)


def _key(v: Any) -> Any:
    if v is ABSENT:
        return ("absent",)
    if isinstance(v, (tuple, list)):
        return ("multi", frozenset(skey(x) for x in v))
    return skey(v)


def witness(c: Constraint, avoid: Iterable[Any] = (), integer: bool = False) -> Any:
    """A value in L_A(c) (``ABSENT`` for not-exists), preferring one not in ``avoid``.
    Raises :class:`Unsatisfiable` if L_A(c) is empty."""
    if c.op is _EQ and not avoid:
        x = c.operand
        if not (type(x) is float and integer and not x.is_integer()):
            return x
    inner = c.operand if c.op is _ANY else c
    if inner.op is _CIDR:  # (no automaton: its first address)
        return str(inner.operand.network_address)
    return witness_of(value_set(c, integer), avoid, what=c)


def witness_of(vs: ValueSet, avoid: Iterable[Any] = (), what: Any = None) -> Any:
    """A member of a value set, preferring one not in ``avoid``."""
    avoided = {_key(v) for v in avoid}
    first = NotImplemented
    for i, v in enumerate(vs.samples()):
        if first is NotImplemented:
            first = v
        if _key(v) not in avoided or i > 64:
            return v if _key(v) not in avoided else first
    if first is NotImplemented:
        raise Unsatisfiable(f"no value satisfies {what if what is not None else vs!r}")
    return first


def normalize(c: Constraint, integer: bool = False) -> Constraint:
    """A canonical form of ``c`` with the same L_A (idempotent): e.g. IN_SET of one value ->
    EQ, IN_RANGE [a, a] -> EQ, x ≥ a ∧ unbounded -> GE, prefix intervals -> PREFIX; with
    ``integer``, x > 3 -> x ≥ 4 and {20..25} -> [20, 25]. Raises Unsatisfiable if L_A(c)
    is empty (e.g. ``x != null``)."""
    if c.op is _EXISTS or c.op is _NOT_EXISTS:
        return c
    if c.op is _ANY:
        inner = c.operand
        if inner.op is _EXISTS or inner.op is _NOT_EXISTS:
            return c
        # the inner constraint also tests list elements, which are taken as reals
        n = _normalize(inner, False)
        return c if n == inner else Constraint(_ANY, n)
    return _normalize(c, integer)


#: The operators whose automata may be too large to build while their matching is not
#: (regexps over large classes, cidr, their combinations): such a constraint is kept as
#: written and its relations answer soundly; a too large automaton of the other string
#: operators (a suffix of thousands of characters) refuses the filter instead.
_SOUND_ONLY = frozenset(
    {
        Op.REGEXP,
        Op.WILDCARD,
        Op.CIDR,
        Op.ANYTHING_BUT,
        Op.ALL,
        Op.PREFIX_IGNORE_CASE,
        Op.SUFFIX_IGNORE_CASE,
    }
)


def _members(c: Constraint, integer: bool) -> Constraint:
    """``anything-but`` / ``all`` with each member in canonical form."""
    out = []
    for e in c.operand:
        try:
            out.append(normalize(e, integer))
        except Unsatisfiable:  # (an exclusion of nothing: kept as written)
            out.append(e)
    return Constraint(c.op, frozenset(out))


def glob_constraint(parts: tuple[str, ...]) -> Constraint:
    """The canonical constraint of a wildcard's parts: empty parts between two stars
    dropped (``a**b`` is ``a*b``); ``=``, ``prefix``, ``suffix`` and ``substring`` where
    they say it."""
    if len(parts) > 2:
        parts = (parts[0], *(p for p in parts[1:-1] if p), parts[-1])
    if len(parts) == 1:
        return Constraint(Op.EQ, parts[0])
    if len(parts) == 2 and parts[1] == "":
        return Constraint(Op.PREFIX, parts[0])
    if len(parts) == 2 and parts[0] == "":
        return Constraint(Op.SUFFIX, parts[1])
    if len(parts) == 3 and parts[0] == parts[2] == "":
        return Constraint(Op.SUBSTRING, parts[1])
    return Constraint(Op.WILDCARD, parts)


@lru_cache(maxsize=65536)
def _normalize(c: Constraint, integer: bool) -> Constraint:
    if c.op is Op.ANYTHING_BUT or c.op is Op.ALL:
        c = _members(c, integer)
    elif c.op is Op.WILDCARD:
        c = glob_constraint(c.operand)
    try:
        vs = value_set(c, integer)
    except TooComplex:
        if c.op in _SOUND_ONLY:  # no canonical form known: c stands for itself
            return c
        raise
    if vs.is_empty():
        raise Unsatisfiable(f"no value satisfies {c.op.value} {c.operand!r}")
    if c.op is Op.INSTANCEOF:
        return c
    try:
        found = represent(vs, integer, [c])
    except TooComplex:
        if c.op in _SOUND_ONLY:
            return c
        raise
    return found if found is not None else canonical_hint(c)


@_sound(_not_representable)
def conjoin(a: Constraint, b: Constraint, integer: bool = False) -> Constraint:
    """One constraint equivalent to ``a ∧ b`` (Mühl §4.3.2: conjunction-complete classes,
    ``{x ∈ [3,7] ∧ x ∈ [5,8]}`` -> ``{x ∈ [5,7]}``, ``{x ≥ 3 ∧ x ≤ 5}`` -> ``{x ∈ [3,5]}``).

    Raises :class:`Unsatisfiable` if no value satisfies both, :class:`NotRepresentable` if
    no single constraint expresses the conjunction."""
    vs = value_set(a, integer) & value_set(b, integer)
    if vs.is_empty():
        raise Unsatisfiable(f"no value satisfies both {_show(a)} and {_show(b)}")
    for c in (a, b):
        if value_set(c, integer).issubset(vs):  # c is covered by the other one
            return normalize(c, integer)
    found = represent(vs, integer, [a, b])
    if found is None:
        raise NotRepresentable(
            f"{_show(a)} and {_show(b)} cannot be expressed as one constraint on the attribute"
        )
    return found


class Conjunction:
    """The conjunction of constraints on one attribute, built clause by clause as the
    parsers read them: :meth:`add` raises like :func:`conjoin` (and leaves the conjunction
    unchanged then); :attr:`value` is the canonical constraint.

    Conjoining clause by clause costs the size of what is held so far, so clauses whose
    conjunction keeps growing would take quadratic time (2,000 ``x != ...`` clauses took
    8.5 s). Such a run of clauses of one *family* — exclusions of one kind
    (``x ∉ S ∧ x ∉ T = x ∉ S ∪ T``), ``superset``/``contains`` (``X ⊇ S ∧ X ⊇ T = X ⊇ S ∪
    T``), ``disjoint``/``not contains`` (likewise) — is held as the list of its sets and
    normalized once, when a clause of another family comes or the value is read: linear in
    the input, with the same canonical result (the value set is the same)."""

    __slots__ = ("_acc", "_family", "_parts", "integer")

    def __init__(self, integer: bool = False) -> None:
        self.integer = integer
        self._acc: Constraint | None = None
        self._family: tuple[Op, str | None] | None = None
        self._parts: list[frozenset[Any]] = []

    def __bool__(self) -> bool:
        """Whether a clause has been added."""
        return self._acc is not None

    def add(self, c: Constraint) -> None:
        try:
            n = normalize(c, self.integer)
        except (Unsatisfiable, NotRepresentable):
            if self._acc is not None or self._family is not None:
                # the error the fold gives (deciding the conjunction may fail first)
                conjoin(self.value, c, self.integer)
            raise
        fam = _family(n)
        if fam is not None and fam[:2] == self._family:
            self._parts.append(fam[2])
            return
        if self._acc is None and self._family is None:
            new = n
        else:
            new = conjoin(self.value, n, self.integer)
        self._set(new)

    def _set(self, c: Constraint) -> None:
        fam = _family(c)
        if fam is None:
            self._acc, self._family, self._parts = c, None, []
        else:
            self._acc, self._family, self._parts = c, fam[:2], [fam[2]]

    @property
    def value(self) -> Constraint:
        """The canonical constraint (``ValueError`` before the first :meth:`add`)."""
        if self._family is not None and len(self._parts) > 1:
            op = self._family[0]
            self._set(normalize(Constraint(op, frozenset().union(*self._parts)), self.integer))
        if self._acc is None:
            raise ValueError("an empty conjunction has no value")
        return self._acc


def _family(c: Constraint) -> tuple[Op, str | None, frozenset[Any]] | None:
    """(operator of the union form, kind, set) for the clauses :class:`Conjunction` joins
    by the union of their sets, else None."""
    op, x = c.op, c.operand
    if op is Op.NE and (
        isinstance(x, str) or (isinstance(x, (int, float)) and not isinstance(x, bool))
    ):
        k = skey(x)
        return Op.NOT_IN_SET, k[0], frozenset([k])
    if op is Op.NOT_IN_SET:
        kinds = {k for k, _ in x}
        if len(kinds) == 1 and kinds <= {NUM, STR}:
            return Op.NOT_IN_SET, kinds.pop(), x
        return None
    if op is Op.CONTAINS or op is Op.NOT_CONTAINS:
        return (Op.SUPERSET if op is Op.CONTAINS else Op.DISJOINT), None, frozenset([x])
    if op is Op.SUPERSET or op is Op.DISJOINT:
        return op, None, x
    return None


def _show(c: Constraint) -> str:
    return c.op.value if c.operand is None else f"{c.op.value} {c.operand!r}"


def _union(cs: Sequence[Constraint], integer: bool) -> ValueSet:
    return union_all([value_set(c, integer) for c in cs])


def union_all(sets: Sequence[ValueSet]) -> ValueSet:
    """The union of one or more value sets, joined pairwise in rounds: O(N log n) for n
    sets of N members in all (joining them one by one re-sorts what is held each time:
    quadratic, 269 s for 20,000 values)."""
    sets = list(sets)
    while len(sets) > 1:
        sets = [
            sets[i] | sets[i + 1] if i + 1 < len(sets) else sets[i] for i in range(0, len(sets), 2)
        ]
    return sets[0]


def _multi_candidates(cs: Sequence[Constraint]) -> list[Constraint]:
    """Merger / hull candidates for multi values (Table 4.8: overlaps of the union,
    disjoint from the intersection, and the subset / superset analogues)."""

    def elems(c: Constraint) -> frozenset[Any]:
        return frozenset([c.operand]) if c.op in (Op.CONTAINS, Op.NOT_CONTAINS) else c.operand

    out = []
    for ops, new, join in (
        ((Op.OVERLAPS, Op.CONTAINS, Op.SUPERSET), Op.OVERLAPS, frozenset.union),
        ((Op.DISJOINT, Op.NOT_CONTAINS), Op.DISJOINT, frozenset.intersection),
        ((Op.SUBSET,), Op.SUBSET, frozenset.union),
        ((Op.SUPERSET, Op.CONTAINS), Op.SUPERSET, frozenset.intersection),
    ):
        sets = [elems(c) for c in cs if c.op in ops]
        if sets:
            out.append(Constraint(new, reduce(join, sets)))
    return out


@_sound(None)
def merge(cs: Iterable[Constraint], integer: bool = False) -> Constraint | None:
    """A perfect merger: one constraint with L_A = ∪ L_A(cs) exactly (Mühl §4.3.7, Table
    4.8), or None when no single constraint is one."""
    cs = list(cs)
    if not cs:
        return None
    vs = _union(cs, integer)
    if vs.is_empty():
        return cs[0]
    for c in cs:
        if vs.issubset(value_set(c, integer)):  # c covers the others
            return normalize(c, integer)
    return represent(vs, integer, cs + _multi_candidates(cs) + _any_candidates(cs, merge))


def _any_candidates(cs: Sequence[Constraint], join: Any) -> list[Constraint]:
    """``any m`` for ``m`` the merger (hull) of the inner constraints when every one of cs
    is an "any element" constraint: ∪ any c_i = any ∪ c_i."""
    if not all(c.op is _ANY for c in cs):
        return []
    inner = [c.operand for c in cs]
    if any(c.op is _NOT_EXISTS for c in inner):
        return []
    try:
        m = join(inner, False)
    except NotRepresentable:
        return []
    return [] if m is None or m.op is _NOT_EXISTS else [Constraint(_ANY, m)]


def _common_prefix(words: Sequence[str]) -> str:
    return os.path.commonprefix(list(words))  # noqa: RUF071  words, not paths: by character


def _str_candidates(vs: ValueSet, cs: Sequence[Constraint]) -> list[Constraint]:
    """Hull candidates for strings: every string, the lexical hull and the exclusion of
    each gap, the common prefix / suffix / substring of the constants, equality ignoring
    case (each is checked to cover the union before use)."""
    out = [Constraint(Op.PREFIX, "")]
    if vs.str.lex is not None and vs.str.lex.items:
        items = vs.str.lex.items
        out.append(lex_span_constraint((items[0][0], True, items[-1][2], False), False))
        if len(items) > 1:  # the first gap only: see _num_candidates
            out.append(lex_span_constraint((items[0][2], True, items[1][0], False), True))
    heads: list[str] = []  # constants whose common prefix (suffix) all members share
    tails: list[str] = []
    for c in cs:
        if c.op in (Op.EQ, Op.PREFIX) and isinstance(c.operand, str):
            heads.append(c.operand)
        elif c.op is Op.IN_SET:
            heads += [v for k, v in c.operand if k == STR]
        if c.op in (Op.EQ, Op.SUFFIX) and isinstance(c.operand, str):
            tails.append(c.operand)
    if heads:
        out.append(Constraint(Op.PREFIX, _common_prefix(heads)))
    if tails:
        out.append(Constraint(Op.SUFFIX, _common_prefix([w[::-1] for w in tails])[::-1]))
    subs = [
        c.operand
        for c in cs
        if c.op in (Op.SUBSTRING, Op.SUFFIX, Op.PREFIX, Op.EQ) and isinstance(c.operand, str)
    ]
    if subs:
        out += [Constraint(Op.SUBSTRING, w) for w in _longest_common_substrings(subs)]
    folded = {
        c.operand.casefold()
        for c in cs
        if c.op in (Op.EQ, Op.EQ_IGNORE_CASE) and isinstance(c.operand, str)
    }
    if len(folded) == 1:
        out.append(Constraint(Op.EQ_IGNORE_CASE, folded.pop()))
    return out


def _longest_common_substrings(words: Sequence[str]) -> list[str]:
    """The longest substrings of the shortest word that every word contains (none if
    they share no character), found by binary search on the length (a common substring
    of length n has common substrings of every shorter length): O(log n) rounds."""
    shortest = min(words, key=len)

    def common(n: int) -> list[str]:
        found = dict.fromkeys(shortest[i : i + n] for i in range(len(shortest) - n + 1))
        return [w for w in found if all(w in s for s in words)]

    lo, hi, best = 1, len(shortest), []
    while lo <= hi:
        mid = (lo + hi) // 2
        found = common(mid)
        if found:
            best, lo = found, mid + 1
        else:
            hi = mid - 1
    return best


def _num_candidates(vs: ValueSet, integer: bool) -> list[Constraint]:
    """Hull candidates for numbers: the interval hull, then the exclusion of the largest
    gap (the first of several as large). Excluding one gap never covers excluding another
    (gaps are disjoint), so :func:`_hull` could prefer no later gap to the first: one
    candidate, not one per gap (a union of thousands of gaps would be checked against
    each in quadratic time)."""
    items = vs.num.items
    hull_span = (items[0][0], items[0][1], items[-1][2], items[-1][3])
    out = [span_constraint(hull_span, integer, False)]
    gaps = (~vs.num & Spans.of(vs.num.line, [hull_span])).items
    if gaps:
        out.append(span_constraint(max(gaps, key=_gap_size), integer, True))
    return out


def _gap_size(g: tuple[Any, ...]) -> tuple[bool, Fraction]:
    """The length of a numeric span, exactly: ends may be integers of thousands of digits
    and floats, whose difference as floats would overflow (or round)."""
    lo, hi = g[0], g[2]
    if lo == -INF or hi == INF:  # (math.isinf would convert a huge integer to a float)
        return True, Fraction(0)
    return False, Fraction(hi) - Fraction(lo)


def _any_value(cs: Iterable[Constraint], integer: bool = False) -> Constraint:
    if any(c.op is _NOT_EXISTS for c in cs):
        raise NotRepresentable(
            "no single constraint admits both a missing attribute and "
            "a value; drop the attribute filter instead"
        )
    return Constraint(Op.EXISTS)


def hull(cs: Iterable[Constraint], integer: bool = False) -> Constraint:
    """The tightest single constraint found that covers every constraint of ``cs``
    (imperfect merging, Mühl §4.3.7); the perfect merger when there is one. Raises
    :class:`NotRepresentable` when ``cs`` admits both ABSENT and values (no single
    constraint does: drop the attribute instead)."""
    return _hull(list(cs), integer)


@_sound(_any_value)
def _hull(cs: list[Constraint], integer: bool) -> Constraint:
    found = merge(cs, integer)
    if found is not None:
        return found
    vs = _union(cs, integer)
    kinds = vs.kinds()
    if "absent" in kinds:
        raise NotRepresentable(
            "no single constraint admits both a missing attribute and "
            "a value; drop the attribute filter instead"
        )
    cands: list[Constraint] = []
    if kinds == {NUM}:
        cands += _num_candidates(vs, integer)
    elif kinds == {STR}:
        cands += _str_candidates(vs, cs)
    elif kinds == {MULTI}:
        cands += _multi_candidates(cs) + [Constraint(Op.SUPERSET, frozenset())]
    elif kinds <= {NUM, STR, BOOL, NULL}:
        for k in kinds:
            if k == NUM and part_keys(vs, k, False) is None:
                break
            if k == STR and part_keys(vs, k, False) is None:
                break
        else:
            # the loop above ruled out None for the kinds that can have it
            keys = [key for k in kinds for key in part_keys(vs, k, False)]  # type: ignore[union-attr]
            cands.append(Constraint(Op.IN_SET, frozenset(keys)))
    cands += _any_candidates(cs, hull)
    cands.append(Constraint(Op.EXISTS))
    best: Constraint | None = None
    for c in cands:
        try:
            if not vs.issubset(value_set(c, integer)):
                continue
        except TooComplex:
            continue
        if best is None or (covers(best, c, integer) and not covers(c, best, integer)):
            best = c
    assert best is not None  # EXISTS, the last candidate, holds every value but ABSENT
    return normalize(best, integer)


__all__ = [
    "Conjunction",
    "NotRepresentable",
    "Unsatisfiable",
    "conjoin",
    "counterexample",
    "covers",
    "glob_constraint",
    "hull",
    "identical",
    "merge",
    "normalize",
    "overlaps",
    "union_all",
    "witness",
    "witness_of",
]
