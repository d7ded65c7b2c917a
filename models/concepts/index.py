"""The concepts model's filter index: matching and the relation queries through the records
index over lazily converted values (Cilia et al. 2004, §4.3: Rebeca "specialized in order to
delay the conversion as much as possible"; Mühl 2002, §4.3.8 for the index underneath).

A concept filter is its concept plus a conjunction of records constraints on (path,
matching context) pairs, so it is held as a :class:`~pubsift.models.records.RecordFilter`
over *virtual attributes*, one per (path, target context) that any held filter constrains,
in the records index of its concept (one per filter concept). Subscriptions that share a
concept and a (path, context) are grouped in one index and under one attribute.

Matching. An event's values are converted once into each target context the index knows
for their path — a handful of conversions, however many subscriptions — and the records
indexes of the concepts the event is (its concept and its generalizations) are probed.
They hold the records filters under the keys themselves, so their answer is the answer:
no concept filter is hashed while matching (a match reports hundreds of keys), and no
path of the records index spends a level on the concept. A concept and a records filter
determine the concept filter (a clause's kind is its concept's), so a (records filter,
key) pair of one concept's index is one (filter, key) pair. Exactness: a value that
cannot be converted (no rate in force) or a complex member is given to the records index
as ``null``, which no held constraint but ``exists`` accepts; the index then answers a
superset, which is verified with the model's ``matches``.

Relations (Mühl Figs. 4.7-4.9, as in :mod:`pubsift.models.records.index`): each query cuts
the held filters down with a necessary condition of the model's own rule
(:mod:`~pubsift.models.concepts.covering`), then verifies every candidate with the model's
hook, so answers equal :class:`~pubsift.core.index.LinearIndex`'s. ``g`` covers ``f`` only
if ``f``'s concept is ``g``'s or a specialization and every clause of ``g`` covers a clause
of ``f`` on its path: in the same context by the constraint algebra, or in another currency
for *every* exchange rate ``r`` in force (``r·L(cf)``, widened, inside it). Each clause has
two *witnesses*, the least and the greatest value it accepts (±1e300 for an unbounded end;
its one witness when it is not one interval of numbers).

* ``covering(f)``: two flat events, the least (greatest) witness of each clause of ``f`` on
  its own attribute and, times the rate that makes it least (greatest), on the attributes
  of its path in the other currencies; a covering ``g`` accepts both (every ``w·r`` lies in
  ``r·L(cf)``), so the filters both match in the records indexes of ``f``'s concept and its
  generalizations are the candidates. ``identical(f)``: the same candidates.
* ``covered_by(f)``: ``f ⊒ g`` implies that each clause of ``f`` accepts both witnesses of
  ``g``'s clause on its path, converted into its context at every rate, i.e. they lie in
  ``L(cf)/r`` widened as the relations widen, for the least and the greatest ``r``; the
  held filters whose witnesses lie there are found per attribute by hashing and bisection
  (:class:`~pubsift.models.records.WitnessValues`), and the sets of the
  clauses of ``f`` are intersected, the clause with the fewest first.
* ``merge_candidates(f)``: a perfect merger exists only if one covers the other or both
  have the same concept and clause places and differ in one clause (Mühl's count of
  identical attribute filters).

* ``overlapping(f)``: the held filters of concepts that share a specialization with f's,
  and, where f has an equality or a set clause, leave its attribute unconstrained or
  accept its value (Mühl Cor. 4.3: the constraint relations are exact on equalities).

A query filter with two clauses on one path (in two currencies) or a clause without a
known witness is answered by a scan, and held filters without one are candidates of every
``covered_by``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from pubsift.core.errors import EventError, FilterSyntaxError
from pubsift.core.model import FilterIndex
from pubsift.models.concepts.context import Context
from pubsift.models.concepts.covering import _ANY_NUMBER, _scaled
from pubsift.models.concepts.filters import _FAIL, Clause, ConceptFilter
from pubsift.models.concepts.forms import check_filter
from pubsift.models.concepts.semantic_objects import SemanticObject
from pubsift.models.constraints import (
    ABSENT,
    Constraint,
    Interval,
    Op,
    TooComplex,
    Unsatisfiable,
    witness,
)
from pubsift.models.records import RecordFilter, RecordsIndex, RecordsModel, WitnessValues

if TYPE_CHECKING:
    from pubsift.models.concepts.model import ConceptsModel

_EXISTS = Constraint(Op.EXISTS)
_NONE = object()  # no witness known


def _query(f: Any) -> ConceptFilter:
    """``f`` if it is a concept filter (FilterSyntaxError naming its type otherwise)."""
    if not isinstance(f, ConceptFilter):
        raise FilterSyntaxError(f"not a concept filter: {type(f).__name__}")
    return f


def _key(key: Any) -> Hashable:
    """``key`` if it is hashable (FilterSyntaxError naming its type otherwise)."""
    try:
        hash(key)
    except TypeError:
        raise FilterSyntaxError(f"an index key is hashable, not {type(key).__name__}") from None
    return cast(Hashable, key)  # hash(key) succeeded


def _number(v: Any) -> bool:
    return (v.__class__ is float or v.__class__ is int) and not isinstance(v, bool)


_BIG = 1e300
"""Stands for an unbounded end in :func:`_extremes` (finite after any rate)."""


def _extremes(c: Constraint) -> tuple[Any, Any] | None:
    """The least and the greatest value ``c`` accepts, for one interval of numbers (an
    unbounded end: ±1e300); else its witness twice (None: none known)."""
    op, x = c.op, c.operand
    lo: Any = None
    hi: Any = None
    if isinstance(x, Interval) and not (_number(x.lo) and _number(x.hi)):
        pass  # strings, dates
    elif not isinstance(x, Interval) and not _number(x):
        pass
    elif op is Op.EQ or op is Op.LE or op is Op.LT:
        lo, hi = -_BIG, x if op is not Op.LT else math.nextafter(x, -math.inf)
        if op is Op.EQ:
            lo = hi = x
    elif op is Op.GE or op is Op.GT:
        lo, hi = x if op is Op.GE else math.nextafter(x, math.inf), _BIG
    elif op is Op.IN_RANGE and isinstance(x, Interval):
        lo = x.lo if x.lo_closed else math.nextafter(x.lo, math.inf)
        hi = x.hi if x.hi_closed else math.nextafter(x.hi, -math.inf)
    if (
        _number(lo)
        and _number(hi)
        and math.isfinite(lo)
        and math.isfinite(hi)
        and c.matches(lo)
        and c.matches(hi)
    ):
        return lo, hi
    v = _sample(c)
    return None if v is _NONE else (v, v)


def _sample(c: Constraint) -> Any:
    """A value ``c`` accepts (``ABSENT`` for not-exists; ``_NONE`` if none is known): its
    constant where it is one, else the constraint algebra's witness. Events hold finite
    numbers only, so an infinite value is none."""
    if c.op is Op.NOT_EXISTS:
        return ABSENT
    x = c.operand
    tried: list[Any] = []
    if c.op in (Op.EQ, Op.LE, Op.GE):
        tried.append(x)
    elif c.op is Op.IN_RANGE and isinstance(x, Interval):
        tried += (x.lo, x.hi)
    for v in tried:
        if not (v.__class__ is float and not math.isfinite(v)) and c.matches(v):
            return v
    try:
        v = witness(c)
    except (Unsatisfiable, TooComplex):
        return _NONE
    if v is ABSENT or (v.__class__ is float and not math.isfinite(v)) or not c.matches(v):
        return _NONE
    return v


class _Held:
    """One held filter: its keys, its records filter, its integer id in the records index
    and its witness event over the virtual attributes (None: none known)."""

    __slots__ = ("fid", "filter", "keys", "record", "witness")

    def __init__(
        self,
        f: ConceptFilter,
        fid: int,
        record: RecordFilter,
        witness: tuple[dict[str, Any], dict[str, Any]] | None,
    ) -> None:
        self.filter = f
        self.fid = fid
        self.record = record
        self.witness = witness
        self.keys: dict[Hashable, None] = {}


class ConceptsIndex(FilterIndex[Hashable, ConceptFilter]):
    """(filter, key) pairs; ``match`` and the relation queries through a records index over
    converted values (see the module docstring)."""

    model: ConceptsModel

    def __init__(self, model: ConceptsModel) -> None:
        self.model = model
        # one records index per filter concept, holding (records filter, key) pairs
        self._parts: dict[str, FilterIndex[Hashable, RecordFilter]] = {}
        # the distinct filters held, by (concept, records filter), and by id (relations)
        self._held: dict[ConceptFilter, _Held] = {}
        self._by_record: dict[tuple[str, RecordFilter], _Held] = {}
        self._by_fid: dict[int, _Held] = {}
        self._fids = 0
        # the (filter, key) pairs in insertion order, and the filters of each key
        self._pairs: dict[tuple[ConceptFilter, Hashable], None] = {}
        self._by_key: dict[Hashable, dict[ConceptFilter, None]] = {}
        # virtual attributes
        self._names: dict[tuple[Any, ...], str] = {}  # (path, target) -> virtual attribute
        self._by_path: dict[Any, dict[str, Clause]] = {}  # path -> virtual attribute -> clause
        self._uses: dict[str, int] = {}  # virtual attribute -> held filters using it
        self._counter = 0
        # relations: held filters (ids) by witness values, by concept and clause places,
        # and by clause
        self._witnesses = (WitnessValues(), WitnessValues())  # least and greatest values
        self._no_witness: dict[int, None] = {}
        self._by_shape: dict[tuple[Any, ...], dict[int, None]] = {}
        self._by_clause: dict[Clause, dict[int, None]] = {}

    def _translate(
        self, f: ConceptFilter
    ) -> tuple[RecordFilter, list[tuple[tuple[Any, ...], str]]]:
        """The records filter of ``f`` and the virtual attributes it would create (nothing
        is changed: a failed :meth:`add` must leave the index as it was)."""
        attrs = {}
        fresh: list[tuple[tuple[Any, ...], str]] = []
        for c in f.clauses:
            key = (c.path, c.target)
            name = self._names.get(key)
            if name is None:  # never reuse a name: held filters may still use it
                name = f"v{self._counter + len(fresh) + 1}"
                fresh.append((key, name))
            attrs[name] = c.constraint
        return RecordFilter.of(attrs), fresh

    @staticmethod
    def _shape(f: ConceptFilter) -> tuple[Any, ...]:
        return (f.concept, tuple(c.key for c in f.clauses))

    def add(self, f: ConceptFilter, key: Hashable) -> None:
        """Hold (f, key); when it raises, the index is exactly as it was."""
        check_filter(f, self.model.ontology)  # hand-made filters: refused before any change
        _key(key)
        if (f, key) in self._pairs:
            return
        h = self._held.get(f)
        if h is None:
            rf, fresh = self._translate(f)
        else:
            rf, fresh = h.record, []
        part = self._parts.get(f.concept)
        if part is None:
            part = RecordsModel().new_index()
        part.add(rf, key)  # the one step that may fail: before any change
        self._parts[f.concept] = part
        if h is None:
            h = self._insert(f, rf, fresh)
        h.keys[key] = None
        self._pairs[(f, key)] = None
        self._by_key.setdefault(key, {})[f] = None

    def _insert(
        self, f: ConceptFilter, rf: RecordFilter, fresh: list[tuple[tuple[Any, ...], str]]
    ) -> _Held:
        shape = self._shape(f)
        wit: tuple[dict[str, Any], dict[str, Any]] | None = ({}, {})
        for name, c in rf.constraints:
            ends = _extremes(c)
            if ends is None:
                wit = None
                break
            if ends[0] is not ABSENT and wit is not None:
                wit[0][name], wit[1][name] = ends
        fid = self._fids = self._fids + 1
        clauses = {(c.path, c.target): c for c in f.clauses}
        for k, name in fresh:
            self._names[k] = name
            self._by_path.setdefault(k[0], {})[name] = clauses[k]
        self._counter += len(fresh)
        for name, _ in rf.constraints:
            self._uses[name] = self._uses.get(name, 0) + 1
        h = self._held[f] = self._by_fid[fid] = _Held(f, fid, rf, wit)
        self._by_record[(f.concept, rf)] = h
        if wit is None:
            self._no_witness[fid] = None
        else:
            for values, w in zip(self._witnesses, wit):
                values.add(w, fid)
        self._by_shape.setdefault(shape, {})[fid] = None
        for clause in f.clauses:
            self._by_clause.setdefault(clause, {})[fid] = None
        return h

    def bulk_add(self, pairs: Iterable[tuple[ConceptFilter, Hashable]]) -> None:
        """Hold every pair, or (when one raises) none of those not held before."""
        added: list[tuple[ConceptFilter, Hashable]] = []
        if not isinstance(pairs, Iterable) or isinstance(pairs, (str, bytes, Mapping)):
            raise FilterSyntaxError(
                f"bulk_add takes (filter, key) pairs, not {type(pairs).__name__}"
            )
        try:
            for pair in pairs:
                if not isinstance(pair, tuple) or len(pair) != 2:
                    raise FilterSyntaxError(
                        f"bulk_add takes (filter, key) pairs, not {type(pair).__name__}"
                    )
                f, key = _query(pair[0]), _key(pair[1])
                if (f, key) not in self:
                    self.add(f, key)
                    added.append((f, key))
        except BaseException:
            for f, key in reversed(added):
                self.remove(f, key)
            raise

    def remove(self, f: ConceptFilter, key: Hashable) -> None:
        pair = (_query(f), _key(key))
        if pair not in self._pairs:
            raise KeyError(f"({f!r}, {key!r}) is not in the index")
        del self._pairs[pair]
        by_key = self._by_key[key]
        del by_key[f]
        if not by_key:
            del self._by_key[key]
        h = self._held[f]
        part = self._parts[f.concept]
        part.remove(h.record, key)
        if not len(part):
            del self._parts[f.concept]
        del h.keys[key]
        if not h.keys:
            self._delete(h)

    def _delete(self, h: _Held) -> None:
        f, fid, rf = h.filter, h.fid, h.record
        del self._held[f]
        del self._by_record[(f.concept, rf)]
        del self._by_fid[fid]
        for name, _ in rf.constraints:
            self._uses[name] -= 1
            if not self._uses[name]:
                del self._uses[name]
                c = next(c for cs in self._by_path.values() for n, c in cs.items() if n == name)
                del self._by_path[c.path][name]
                if not self._by_path[c.path]:
                    del self._by_path[c.path]
                del self._names[(c.path, c.target)]
        if h.witness is None:
            del self._no_witness[fid]
        else:
            for values, w in zip(self._witnesses, h.witness):
                values.remove(w, fid)
        _discard(self._by_shape, self._shape(f), fid)
        for c in f.clauses:
            _discard(self._by_clause, c, fid)

    # -- matching ---------------------------------------------------------------------
    def _flat(self, e: SemanticObject) -> tuple[dict[str, Any], bool]:
        """The event's values in every target context the index knows, and whether a
        stand-in ``null`` was used (then answers must be verified)."""
        flat: dict[str, Any] = {}
        verify = False
        value = self.model.matcher.value
        if e.size < len(self._by_path):  # the event's paths or the index's: the fewer
            known = self._by_path.get
            found = [(p, cs) for p, cs in ((p, known(p)) for p, _ in e.walk()) if cs]
        else:
            found = [(p, cs) for p, cs in self._by_path.items() if e.find(p) is not None]
        for _path, clauses in found:
            for name, c in clauses.items():
                v = value(e, c)
                if v is _FAIL or v.__class__ is tuple:
                    v, verify = None, True
                flat[name] = v
        return flat, verify

    def _parts_for(self, concept: str) -> list[tuple[str, FilterIndex[Hashable, RecordFilter]]]:
        """The records indexes of the filter concepts ``concept`` is (or specializes)."""
        parts = self._parts
        ancestors = self.model.ontology.ancestors(concept)
        if len(ancestors) < len(parts):
            return [(c, parts[c]) for c in ancestors if c in parts]
        return [(c, p) for c, p in parts.items() if c in ancestors]

    def _pairs_of(self, concept: str, flat: dict[str, Any]) -> list[tuple[_Held, Hashable]]:
        """The held (filter, key) pairs whose records filter the flat event satisfies, over
        the filter concepts ``concept`` is."""
        by_record = self._by_record
        return [
            (by_record[(c, rf)], k)
            for c, part in self._parts_for(concept)
            for rf, k in part.match_pairs(flat)
        ]

    def match_pairs(self, event: SemanticObject) -> list[tuple[ConceptFilter, Hashable]]:
        if not isinstance(event, SemanticObject):
            raise EventError(f"not a concepts event: {type(event).__name__}")
        flat, verify = self._flat(event)
        pairs = [(h.filter, k) for h, k in self._pairs_of(event.concept, flat)]
        if verify:
            matches = self.model.matches
            return [(f, k) for f, k in pairs if matches(f, event)]
        return pairs

    def match(self, event: SemanticObject) -> set[Hashable]:
        if not isinstance(event, SemanticObject):
            raise EventError(f"not a concepts event: {type(event).__name__}")
        flat, verify = self._flat(event)
        if verify:
            return {k for _, k in self.match_pairs(event)}
        # the records indexes hold the keys: their answers are the answer
        parts = self._parts_for(event.concept)
        if len(parts) == 1:
            return parts[0][1].match(flat)
        out: set[Hashable] = set()
        for _, part in parts:
            out.update(part.match(flat))
        return out

    # -- contents ---------------------------------------------------------------------
    def __iter__(self) -> Iterator[tuple[ConceptFilter, Hashable]]:
        return iter(list(self._pairs))

    def __len__(self) -> int:
        return len(self._pairs)

    def __contains__(self, pair: object) -> bool:
        try:
            return pair in self._pairs
        except TypeError:  # unhashable
            return False

    def filters(self, key: Hashable) -> list[ConceptFilter]:
        try:
            return list(self._by_key.get(key, ()))
        except TypeError:  # unhashable: no pair has it
            return []

    # -- relations --------------------------------------------------------------------
    def _factors(self, src: Context, dst: Context) -> frozenset[float] | None:
        """The factors converting values in ``src`` into ``dst`` if the relations ever
        relate clauses in the two contexts (they differ only in their currency and both
        are quoted at every time), else None."""
        rates = self.model.relations.factors(src, dst)
        if rates is None or not rates[1] or not rates[0]:
            return None
        return rates[0]

    @staticmethod
    def _keys_where(cands: Iterable[_Held], test: Callable[[ConceptFilter], bool]) -> set[Hashable]:
        out: set[Hashable] = set()
        for h in cands:
            if test(h.filter):
                out.update(h.keys)
        return out

    def _covering_candidates(self, f: ConceptFilter) -> Iterable[_Held]:
        """Held filters that may cover f: those matching both of f's extreme witness
        events (the least and the greatest value each clause accepts, spread over the
        attributes of every context a covering clause may be in, times the least and the
        greatest rate); all held filters when f has two clauses on one path or a clause
        without a known witness."""
        paths = [c.path for c in f.clauses]
        if len(set(paths)) != len(paths):
            return self._held.values()
        low: dict[str, Any] = {}
        high: dict[str, Any] = {}
        for cf in f.clauses:
            ends = _extremes(cf.constraint)
            if ends is None:
                return self._held.values()
            if ends[0] is ABSENT:  # not-exists: only not-exists covers it, accepting absence
                continue
            for name, held in self._by_path.get(cf.path, {}).items():
                target = held.target
                if target == cf.target:
                    low[name], high[name] = ends
                    continue
                rates = self._factors(cf.target, target)
                if rates is None:  # no clause in that context covers cf
                    continue
                for w, v, least in ((low, ends[0], True), (high, ends[1], False)):
                    if not _number(v):  # exists: only clauses accepting every value cover it
                        w[name] = v
                        continue
                    # every v·r lies in a covering clause: the extreme one prunes most
                    scaled = min(v * r for r in rates) if least else max(v * r for r in rates)
                    if not math.isfinite(scaled):
                        return self._held.values()
                    w[name] = scaled
        # held filters (_Held) hash by identity: no concept filter is hashed
        both = {h for h, _ in self._pairs_of(f.concept, low)}
        both.intersection_update(h for h, _ in self._pairs_of(f.concept, high))
        return both

    def covering(self, f: ConceptFilter) -> set[Hashable]:
        """g ⊒ f (Mühl Fig. 4.7); candidates: the held filters matching f's witness."""
        f = _query(f)
        covers = self.model.covers
        return self._keys_where(self._covering_candidates(f), lambda g: covers(g, f))

    def identical(self, f: ConceptFilter) -> set[Hashable]:
        """g ≡ f: among the filters that may cover f and that f may cover."""
        f = _query(f)
        cands = set(self._covering_candidates(f)).intersection(self._covered_candidates(f))
        same = self.model.identical
        return self._keys_where(cands, lambda g: same(g, f))

    def _covered_candidates(self, f: ConceptFilter) -> Iterable[_Held]:
        """Held filters f may cover: those whose least and greatest witness values on the
        path of each clause of f, converted into the clause's context at the least and
        the greatest rate, the clause accepts (clauses with the fewest first)."""
        plans: list[tuple[int, list[tuple[str, list[Constraint]]]]] = []
        low, high = self._witnesses
        for cf in f.clauses:
            c = cf.constraint
            if c.op is Op.NOT_EXISTS or c.matches(ABSENT):
                continue
            probes: list[tuple[str, list[Constraint]]] = []
            cost = 0
            for name, held in self._by_path.get(cf.path, {}).items():
                target = held.target
                if target == cf.target:
                    tests = [c]
                else:
                    rates = self._factors(target, cf.target)
                    if rates is None:  # cf covers no clause in that context
                        continue
                    # values v with v·r accepted by c for every r lie in each L(c)/r, widened
                    tests = []
                    for r in {min(rates), max(rates)}:
                        scaled = _scaled(c, 1.0 / r)
                        if scaled is not None and scaled is not _ANY_NUMBER:
                            tests.append(scaled)
                    tests = tests or [_EXISTS]
                probes.append((name, tests))
                cost += low.estimate(name, tests[0])
            plans.append((cost, probes))
        if not plans:
            return self._held.values()
        plans.sort(key=lambda p: p[0])
        found: set[int] | None = None
        for _, probes in plans:
            on_clause: set[int] = set()
            for name, tests in probes:
                inside: set[int] | None = None
                for values in (low, high):
                    for t in tests:
                        got = values.accepted(name, t)
                        inside = set(got) if inside is None else inside.intersection(got)
                on_clause.update(inside or ())
            found = on_clause if found is None else found & on_clause
            if not found:
                break
        by_fid = self._by_fid
        return [by_fid[i] for i in dict.fromkeys([*(found or ()), *self._no_witness])]

    def covered_by(self, f: ConceptFilter) -> set[Hashable]:
        """f ⊒ g (Mühl Fig. 4.8); candidates by witness values."""
        f = _query(f)
        covers = self.model.covers
        return self._keys_where(self._covered_candidates(f), lambda g: covers(f, g))

    def merge_candidates(self, f: ConceptFilter) -> set[Hashable]:
        """Filters g with a perfect merger of g and f (Mühl Fig. 4.9): one covers the
        other, or they differ in one clause of the same place."""
        f = _query(f)
        cands: dict[_Held, None] = dict.fromkeys(self._covering_candidates(f))
        cands.update(dict.fromkeys(self._covered_candidates(f)))
        same = self._by_shape.get(self._shape(f), {})
        k = len(f.clauses)
        if k <= 1:
            near: Iterable[int] = same
        else:
            counts: dict[int, int] = {}
            for c in f.clauses:
                for fid in self._by_clause.get(c, ()):
                    counts[fid] = counts.get(fid, 0) + 1
            near = [fid for fid, n in counts.items() if n >= k - 1 and fid in same]
        by_fid = self._by_fid
        cands.update(dict.fromkeys(by_fid[i] for i in near))
        merge = self.model.merge
        return self._keys_where(cands, lambda g: merge([g, f], perfect=True) is not None)

    def overlapping(self, f: ConceptFilter) -> set[Hashable]:
        """N(g) ∩ N(f) ≠ ∅ by the model's rule; candidates by concept and equalities."""
        f = _query(f)
        overlaps = self.model.overlaps
        return self._keys_where(self._overlap_candidates(f), lambda g: overlaps(g, f))

    def _overlap_candidates(self, f: ConceptFilter) -> list[_Held]:
        """Held filters that may overlap f. The rule says no when the two concepts have no
        specialization in common, so only the records indexes of concepts sharing one
        with f's are asked; and when two clauses on one path and context are disjoint both
        ways, which for f's ``= x`` (``in S``) and a clause in its context means that
        the clause rejects x (every member of S): the constraint relations are exact on
        equalities. Those records indexes give the filters leaving one such attribute of f
        unconstrained or accepting its value (:meth:`RecordsIndex.overlap_candidates`)."""
        onto = self.model.ontology
        mine = onto.descendants(f.concept)
        attrs: dict[str, Constraint] = {}
        for cf in f.clauses:
            name = self._names.get((cf.path, cf.target))
            if name is not None and cf.constraint.op in (Op.EQ, Op.IN_SET):
                attrs[name] = cf.constraint
        query = RecordFilter.of(attrs) if attrs else None
        by_record = self._by_record
        out: list[_Held] = []
        for c, part in self._parts.items():
            if mine.isdisjoint(onto.descendants(c)):
                continue
            if query is None:
                out.extend(by_record[(c, rf)] for rf in dict.fromkeys(rf for rf, _ in part))
            else:
                cands = cast(RecordsIndex, part).overlap_candidates(query)
                out.extend(by_record[(c, rf)] for rf in cands)
        return out


def _discard(d: dict[Any, dict[int, None]], key: Any, item: int) -> None:
    held = d[key]
    del held[item]
    if not held:
        del d[key]
