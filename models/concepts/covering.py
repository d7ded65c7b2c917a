"""Covering, identity and overlap of concept filters (merging: :mod:`.merging`).

Mühl's conjunctive-filter rules (2002, Cor. 4.1-4.3, §4.3.7) carried over to concepts
(Cilia et al. 2004, §3.1, §4.3): the shared constraint algebra
(:mod:`pubsift.models.constraints.relations`) decides clause pairs whose constants were
normalized into the same matching context, and concept subsumption decides the concepts
(an event of a specialization matches a filter on its generalization).

* Fixed-in-time conversions (units, scale factors, date formats, fixed user conversions)
  take part in covering: filter constants are normalized into one matching context at
  subscription time, so ``NetWeight > 1 kg`` covers ``NetWeight > 3 lb``, and both
  clauses are evaluated on the same converted value of an event.
* Conversions that change over time (exchange rates, time-varying user conversions) never
  make the model claim covering or disjointness unless it holds *for every rate in force*:
  two clauses in currencies A and B are compared for every factor B→A of the
  :class:`~pubsift.models.concepts.conversion.RateTable`, with the B clause widened by a
  relative 1e-9 and an absolute 1e-300 (so floating-point rounding and underflow in the two
  conversions cannot break the claim; a scaled constant that overflows makes no claim);
  covering also needs both currencies quoted at every time (otherwise an event could be
  convertible into B and not into A). Time-varying user conversions: never claimed.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from pubsift.models.concepts.context import Context
from pubsift.models.concepts.conversion import ConversionManager
from pubsift.models.concepts.filters import Clause, ConceptFilter
from pubsift.models.concepts.ontology import Ontology
from pubsift.models.constraints import Constraint, Interval, Op, relations

EPS = 1e-9
"""Relative widening of constants compared across exchange rates."""

TINY = 1e-300
"""Absolute widening of constants compared across exchange rates (underflow)."""

_ANY_NUMBER = Constraint(Op.IN_RANGE, Interval(float("-inf"), float("inf")))


class Relations:
    """The filter relations of the concepts model over one ontology and conversion manager."""

    def __init__(self, ontology: Ontology, manager: ConversionManager) -> None:
        self.ontology = ontology
        self.manager = manager
        # pure functions of immutable inputs (contexts, constraints, the rate table),
        # remembered: a query compares one clause with thousands of held ones
        self._factors: dict[tuple[Context, Context], Any] = {}
        self._scaled: dict[tuple[Constraint, frozenset[float]], tuple[Constraint | None, ...]] = {}

    # -- covering ---------------------------------------------------------------------
    def covers(self, f: ConceptFilter, g: ConceptFilter) -> bool:
        """N(f) ⊇ N(g); False when unsure."""
        if f == g:
            return True
        if not self.ontology.is_a(g.concept, f.concept):
            return False
        by_path: dict = {}
        for cg in g.clauses:
            by_path.setdefault(cg.path, []).append(cg)
        return all(
            any(self.clause_covers(cf, cg) for cg in by_path.get(cf.path, ())) for cf in f.clauses
        )

    def clause_covers(self, cf: Clause, cg: Clause) -> bool:
        """Every event satisfying clause cg satisfies cf (same path)."""
        a, b = cf.constraint, cg.constraint
        if b.op is Op.NOT_EXISTS or a.op is Op.NOT_EXISTS:
            return a.op is Op.NOT_EXISTS and b.op is Op.NOT_EXISTS
        if cf.target == cg.target:
            return relations.covers(a, b)
        rates = self._rates(cg, cf)
        if rates is None:
            return False
        factors, total = rates
        if not total:
            return False
        for scaled in self._scaled_all(b, factors):
            if scaled is None or not relations.covers(a, scaled):
                return False
        return True

    def _scaled_all(
        self, c: Constraint, factors: frozenset[float]
    ) -> tuple[Constraint | None, ...]:
        """``_scaled(c, r)`` for every factor r (remembered)."""
        key = (c, factors)
        found = self._scaled.get(key)
        if found is None:
            found = tuple(_scaled(c, r) for r in factors)
            _remember(self._scaled, key, found)
        return found

    def identical(self, f: ConceptFilter, g: ConceptFilter) -> bool:
        return f == g or (self.covers(f, g) and self.covers(g, f))

    # -- overlap ----------------------------------------------------------------------
    def overlaps(self, f: ConceptFilter, g: ConceptFilter) -> bool:
        """N(f) ∩ N(g) ≠ ∅; True when unsure."""
        onto = self.ontology
        if not (onto.descendants(f.concept) & onto.descendants(g.concept)):
            return False
        by_path: dict = {}
        for cg in g.clauses:
            by_path.setdefault(cg.path, []).append(cg)
        for cf in f.clauses:
            for cg in by_path.get(cf.path, ()):
                # both directions, so that the answer is symmetric
                if self.clauses_disjoint(cf, cg) and self.clauses_disjoint(cg, cf):
                    return False
        return True

    def clauses_disjoint(self, cf: Clause, cg: Clause) -> bool:
        """No event satisfies both clauses (same path); False when unsure."""
        a, b = cf.constraint, cg.constraint
        if a.op is Op.NOT_EXISTS or b.op is Op.NOT_EXISTS:
            return (a.op is Op.NOT_EXISTS) != (b.op is Op.NOT_EXISTS)
        if cf.target == cg.target:
            return not relations.overlaps(a, b)
        rates = self._rates(cg, cf)
        if rates is None or not rates[0]:
            return False
        for scaled in self._scaled_all(b, rates[0]):
            if scaled is None or relations.overlaps(a, scaled):
                return False
        return True

    def _rates(self, src: Clause, dst: Clause) -> tuple[frozenset[float], bool] | None:
        """Factors converting src's target into dst's, when the two differ only in their
        currency (None otherwise: no claim is made)."""
        return self.factors(src.target, dst.target)

    def factors(self, s: Context, d: Context) -> tuple[frozenset[float], bool] | None:
        """Every factor converting values in context ``s`` into ``d`` at some time, and
        whether one is in force at every time, when the two contexts differ only in their
        currency (None otherwise: then no clause in ``s`` is related to one in ``d``)."""
        key = (s, d)
        try:
            return self._factors[key]
        except KeyError:
            pass
        found = self._factors_of(s, d)
        _remember(self._factors, key, found)
        return found

    def _factors_of(self, s: Context, d: Context) -> tuple[frozenset[float], bool] | None:
        if s.currency is None or d.currency is None or s.with_(currency=d.currency) != d:
            return None
        if any(self.manager.is_time_varying(p) for p, _ in d.extra):
            return None
        return self.manager.rates_in_force(s.currency, d.currency)


MEMO_SIZE = 65536
"""Entries each memo of :class:`Relations` keeps (oldest dropped first)."""


def _remember(memo: dict[Any, Any], key: Any, value: Any) -> None:
    if len(memo) >= MEMO_SIZE:
        del memo[next(iter(memo))]
    memo[key] = value


def _widen(b: float) -> float:
    """How far a scaled constant is widened: relatively by EPS, and absolutely by TINY,
    since conversions of tiny amounts underflow (1e-320 JPY is 0 EUR but not 0 USD)."""
    return 0.0 if math.isinf(b) else abs(b) * EPS + TINY


def _scaled(c: Constraint, r: float) -> Constraint | None:
    """A constraint containing r·L_A(c), enlarged by a relative EPS (None: not numeric, or
    a scaled bound overflows: no claim is made)."""
    out = _scaled_bounds(c, r)
    if out is None or out is _ANY_NUMBER or out.op is Op.EXISTS:
        return out
    x = out.operand
    bounds = (x.lo, x.hi) if isinstance(x, Interval) else (x,)
    if not all(-_MAX < b < _MAX for b in bounds):
        return None
    return out


_MAX = sys.float_info.max


def _scaled_bounds(c: Constraint, r: float) -> Constraint | None:
    op, x = c.op, c.operand
    if op is Op.EXISTS:
        return c

    def num(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if op in (Op.LT, Op.LE) and num(x):
        b = x * r
        return Constraint(Op.LE, b + _widen(b))
    if op in (Op.GT, Op.GE) and num(x):
        b = x * r
        return Constraint(Op.GE, b - _widen(b))
    if op is Op.EQ and num(x):
        b = x * r
        return Constraint(Op.IN_RANGE, Interval(b - _widen(b), b + _widen(b)))
    if op in (Op.NE, Op.NOT_IN_SET):
        return _ANY_NUMBER
    if op is Op.IN_RANGE and num(x.lo):
        lo, hi = x.lo * r, x.hi * r
        return Constraint(Op.IN_RANGE, Interval(lo - _widen(lo), hi + _widen(hi)))
    if op is Op.NOT_IN_RANGE and num(x.lo):
        lo, hi = x.lo * r, x.hi * r
        lo, hi = lo + _widen(lo), hi - _widen(hi)
        if not lo < hi:
            return _ANY_NUMBER
        return Constraint(Op.NOT_IN_RANGE, Interval(lo, hi, False, False))
    if op is Op.IN_SET and all(k == "num" for k, _ in x):
        vals = [v * r for _, v in x]
        lo, hi = min(vals), max(vals)
        return Constraint(Op.IN_RANGE, Interval(lo - _widen(lo), hi + _widen(hi)))
    return None
