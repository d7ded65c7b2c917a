"""The records model's filter index (Mühl 2002, §4.3.8).

Matching. Mühl's algorithm (Fig. 4.6, predicate counting) finds every attribute filter an
event satisfies, counts them per filter and reports the filters whose count reaches their
size. Each satisfied attribute filter costs a counter update, so in the stock scenario a
price that lies in the quote-interval ranges of hundreds of *other* stocks costs hundreds of
updates per event. This index keeps Mühl's per-operator structures
(:mod:`~pubsift.models.records.attrindex`: hashing for equality and sets, sorted bounds for
comparisons and intervals, prefix/suffix maps, a residual list) but arranges each filter's
attribute filters as a path, most selective first (equality, set membership,
case-insensitive equality, ``instanceof``, prefix/suffix, intervals, comparisons, the
rest, ``not-exists`` last), in a tree that shares common prefixes of paths: all quote
subscriptions on one stock end in one node, and a stock's quote-interval ranges hang below
it in one interval structure. A node's children on one attribute are held in an
``AttributeIndex``, so matching descends only along attribute filters the event satisfies
(one probe per node and attribute, no counters, no verification): its cost follows the
matching subscriptions, not the held ones.

Compiled plans. ``match`` walks each node through its plan (:mod:`~pubsift.models.records.plans`):
the node's attribute indexes with the children *folded*, so a bucket of children costs one
key set (a frozenset, copied into the answer with its stored hashes) instead of one step
per child, one-sided bounds are one bisect, one precomputed set and a short slice,
intervals one bisect into a table of elementary regions (or into the gathered paths of a
segment tree), and the string parts of an attribute (``=``, ``in``, prefixes) one memo
lookup per value. The walk over the plans runs compiled
(:mod:`~pubsift.models.records._walk`, Cython) when it is built, else in Python. A plan is dropped when its node's children change (or their keys), and
rebuilt once enough matches have walked the node unfolded to pay for it
(``PLAN_SLACK``: once the unfolded walks have touched about as many items as building
touches): a node that changes more often than that is never compiled, and costs what it
cost before plans.

Measured with ``bench/records_match.py --quick`` (quotes workload, 5,000 sampled S&P 500
quote events, CPU time of one process on a 2-core machine, median of 3 runs, the answer
of each event dropped as a router does; baselines on the same events as the index; see
``bench/results.md`` for the latest ``make bench``) against Mühl's counting over the same
attribute structures, events/s, on 2026-11-28, two runs a few minutes apart::

    subscriptions   matches/event   compiled walk      Python walk       counting (Fig. 4.6)
    10,000               29.4       345,812  228,496   142,844   90,052    1,175    964
    100,000             296.0        81,572   74,263    58,635   41,876       51     50

(both walks over the same plans, timed one after the other in one run, once a pass over
the sample builds no plan. The machine's speed varies by up to 2× from minute to minute,
as the Python walk's column shows: compare figures of one run only. Interleaved in one
process, the compiled walk that prefetches the event's values before walking
against the one without: +5.3% in file order and +6.6% in date order at 10k; before it,
the walk that adds key sets to the answer without bound methods, slices or iterators
against that of the day before: 210,564 against 180,381 (10k) and 74,049 against 58,291
(100k); that of the day before against the earlier Python walk: 252,663 against
128,593 and 82,051 against 43,114.)
Before the compiled walk and the frozenset buckets, the same script gave 111,548 and
44,602 events/s. These are
steady-state figures over the sample in the file's order (by symbol, then date): in the
order a feed publishes (by date) the same events cost more cache misses, and building the
plans, keeping all answers (``match_batch``) cost more too; ``bench/results.md`` has all
of them.

Counting pays for every satisfied price range of other stocks; the tree pays per match.

Relations (Mühl Figs. 4.7-4.9). Each held filter f gets a *witness* event e_f ∈ N(f)
(its constants where they satisfy it, else ``relations.witness``; none when f is
unsatisfiable or no float value is found). Queries cut the candidates down with necessary
conditions that follow from the soundness rules, then verify each candidate with the
model's own hooks, so answers equal :class:`~pubsift.core.index.LinearIndex`'s:

* ``covering(f)``: g ⊒ f implies e_f ∈ N(g): the candidates are the filters matching e_f;
* ``identical(f)``: those of them with the same attribute names;
* ``covered_by(f)``: f ⊒ g implies e_g ∈ N(f): filters whose witness value on one
  selective attribute of f is accepted (hashing and sorted witness values,
  :mod:`~pubsift.models.records.witness_values`);
* ``merge_candidates(f)``: a perfect merger of two conjunctions exists only if one covers
  the other or they are identical in all but one attribute (the union of two boxes is a box
  only then). Mühl's count of identical attribute filters: per attribute of f, the held
  attribute filters identical to f's (one hash lookup by span when f's is one interval:
  ranges, comparisons, equality, prefixes) or that may be (a probe with e_f's value, then
  agreement on the sample values of both, as identical ones must); filters with f's
  names counting all but one;
* ``overlapping(f)``: the relations are exact (Cor. 4.3), so for ``a = x`` in f an
  overlapping g leaves a unconstrained or accepts x.

Filters without a witness are candidates of every query; a query for a filter without a
witness verifies every held filter.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator
from typing import Any, TypeVar

from pubsift.core.model import FilterIndex, FilterModel
from pubsift.models.constraints import (
    ABSENT,
    MAX_INT_DIGITS,
    Constraint,
    Op,
    TooComplex,
    Unsatisfiable,
    span_key,
    witness,
)
from pubsift.models.records import arrays, checks, plans
from pubsift.models.records.attrindex import AttributeIndex
from pubsift.models.records.compiled import compile_test
from pubsift.models.records.events import Record
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.limits import MAX_DEPTH
from pubsift.models.records.plans import NodePlan, walk
from pubsift.models.records.selection import FieldSelection
from pubsift.models.records.witness_values import WitnessValues

#: Path order by operator (lower: more selective, probed first). ``not-exists`` comes last:
#: it is the only attribute filter satisfied by an absent attribute.
_RANK = {
    Op.EQ: 0,
    Op.IN_SET: 1,
    Op.EQ_IGNORE_CASE: 2,
    Op.INSTANCEOF: 3,
    Op.PREFIX: 4,
    Op.SUFFIX: 4,
    Op.IN_RANGE: 5,
    Op.LT: 6,
    Op.LE: 6,
    Op.GT: 6,
    Op.GE: 6,
    Op.NOT_EXISTS: 8,
}
_OTHER = 7  # ≠, not-in, not-prefix, substring, multi-value operators, exists, ...

#: A node's plan is built once the matches that walked it unfolded since its last change
#: have found, together, as many items as building the plan touches (the items held by
#: its children) plus this many.
PLAN_SLACK = 16


def _order(nc: tuple[str, Constraint]) -> tuple[Any, ...]:
    name, c = nc
    if c.op is Op.ANY:  # "any element": as selective as its inner constraint
        c = c.operand
    if c.op is Op.IN_SET:
        sub = len(c.operand)
    elif c.op is Op.PREFIX or c.op is Op.SUFFIX:
        sub = -len(c.operand)
    else:
        sub = 0
    return (_RANK.get(c.op, _OTHER), sub, name)


class _Node:
    """A node of the access tree: reached by one attribute filter from its parent."""

    __slots__ = ("children", "cplan", "entry", "misses", "parent", "plan", "sub", "via")

    def __init__(self, parent: _Node | None, via: tuple[str, Constraint] | None) -> None:
        self.entry: _Entry | None = None
        self.children: dict[str, AttributeIndex] = {}
        self.sub: dict[tuple[str, Constraint], _Node] = {}
        self.parent = parent
        self.via = via
        # the compiled plan of the children (None: changed since it was built) and the
        # matches that walked the node unfolded since then
        self.plan: NodePlan | None = None
        self.cplan: Any = None  # the plan's compiled form (plans.ENGINE), if any
        self.misses = 0

    def changed(self) -> None:
        """The children changed: drop the plan (the next matches rebuild it)."""
        self.plan = None
        self.cplan = None
        self.misses = 0

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the plans (rebuilt by the matches after loading)."""
        state = {k: getattr(self, k) for k in self.__slots__}
        state["plan"] = state["cplan"] = None
        state["misses"] = 0
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v)

    def folded_changed(self) -> None:
        """What the parent's plan folds of this node (its keys, whether it has children)
        changed."""
        if self.parent is not None:
            self.parent.changed()

    def compile_after(self) -> int:
        """Work of unfolded walks (items found, attributes probed) before the plan is
        built: building costs about one step per held item, so it is built once the
        walks have spent as much; a node that changes between matches is never built."""
        return PLAN_SLACK + sum(ai.size for ai in self.children.values())


class _Entry:
    """One held filter: its keys, the node its path ends at, and its witness event."""

    __slots__ = ("filter", "keys", "node", "witness")

    def __init__(self, f: RecordFilter, node: _Node, witness: dict[str, Any] | None) -> None:
        self.filter = f
        self.keys: dict[Hashable, None] = {}
        self.node = node
        self.witness = witness


class _Group:
    """The entries sharing one attribute filter (name, constraint), with values the
    attribute filter accepts (``_samples``) and its compiled test."""

    __slots__ = ("entries", "samples", "test")

    def __init__(self, c: Constraint, samples: tuple[Any, ...]) -> None:
        self.entries: dict[_Entry, None] = {}
        self.samples = samples
        self.test = compile_test(c)


class RecordsIndex(FilterIndex[Hashable, RecordFilter]):
    """Filter index of the records model: see the module docstring."""

    def __init__(self, model: FilterModel[RecordFilter, Any]) -> None:
        self.model = model
        schema = getattr(model, "schema", None)
        self.integer_attrs: frozenset[str] = frozenset(getattr(schema, "integer_attrs", ()))
        self._entries: dict[RecordFilter, _Entry] = {}
        self._npairs = 0
        self._by_key: dict[Hashable, dict[_Entry, None]] = {}
        self._root = _Node(None, None)
        # relations: every attribute filter, grouped by (name, constraint)
        self._groups: dict[str, dict[Constraint, _Group]] = {}
        # the proper dotted prefixes of the held names (``a`` and ``a.b`` of ``a.b.c``),
        # with how many held names have each: the arrays of objects matching looks into
        self._prefixes: dict[str, int] = {}
        # the names parse_wire reads (FieldSelection), made on demand, dropped when a
        # name is first held or no longer held
        self._fields: FieldSelection | None = None
        # for events with arrays of objects: the held filters split by whether they read
        # below an array seen in an event (made on the first such event, then kept up)
        self._split: _Split | None = None
        self._cindex: dict[str, AttributeIndex] = {}
        # the same groups for identity lookups: one-interval attribute filters by their
        # span (identical iff equal spans), the others in attribute indexes of their own
        self._by_span: dict[str, dict[tuple[Any, ...], dict[_Group, None]]] = {}
        self._odd: dict[str, AttributeIndex] = {}
        # entries (hashed by identity) by attribute names and by witness values
        self._by_names: dict[tuple[str, ...], dict[_Entry, None]] = {}
        self._witnesses = WitnessValues()
        self._no_witness: dict[_Entry, None] = {}
        # match_wire_batch's plan (models/records/columnar.py): built on first use,
        # dropped by add/remove, not pickled
        self._columnar: dict[str, Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_columnar"] = None
        state["_split"] = None
        return state

    # -- maintenance ------------------------------------------------------------------
    def add(self, f: RecordFilter, key: Hashable) -> None:
        e = self._entries.get(checks.record_filter(f))
        if e is None:
            e = self._insert(f)
        if key in e.keys:
            return
        self._columnar = None
        if self._split is not None:
            self._split.add(f, key)
        e.keys[key] = None
        e.node.folded_changed()
        self._by_key.setdefault(key, {})[e] = None
        self._npairs += 1

    def remove(self, f: RecordFilter, key: Hashable) -> None:
        e = self._entries.get(f) if isinstance(f, RecordFilter) else None
        if e is None or key not in e.keys:
            raise KeyError(f"({f!r}, {key!r}) is not in the index")
        self._columnar = None
        if self._split is not None:
            self._split.remove(f, key)
        del e.keys[key]
        e.node.folded_changed()
        _discard(self._by_key, key, e)
        self._npairs -= 1
        if not e.keys:
            self._delete(e)

    def _insert(self, f: RecordFilter) -> _Entry:
        """Everything that can fail (samples, witness, compiled tests, span keys) is
        computed before the first change, so a failing insertion leaves the index as it
        was; the changes themselves are dictionary and sorted-list insertions."""
        if not isinstance(f, RecordFilter):
            raise TypeError(f"RecordsIndex holds RecordFilter objects, not {type(f).__name__}")
        samples = {nc: self._samples(*nc) for nc in f.constraints}
        witness = self._witness_of(samples)
        fresh = {
            (n, c): (_Group(c, samples[(n, c)]), span_key(c, n in self.integer_attrs))
            for n, c in f.constraints
            if c not in self._groups.get(n, {})
        }
        path = sorted(f.constraints, key=_order)
        node = self._root
        for nc in path:
            child = node.sub.get(nc)
            if child is None:
                if not node.sub:
                    node.folded_changed()  # it gets children
                child = node.sub[nc] = _Node(node, nc)
                _attr_index(node.children, nc[0]).add(nc[1], child)
                node.changed()
            node = child
        e = node.entry = self._entries[f] = _Entry(f, node, None)
        node.folded_changed()
        for n, c in f.constraints:
            if n not in self._groups:
                _count_prefixes(self._prefixes, n, 1)
                self._fields = None
            groups = self._groups.setdefault(n, {})
            g = groups.get(c)
            if g is None:
                g, key = fresh[(n, c)]
                groups[c] = g
                _attr_index(self._cindex, n).add(c, g)
                if key is None:
                    _attr_index(self._odd, n).add(c, g)
                else:
                    self._by_span.setdefault(n, {}).setdefault(key, {})[g] = None
            g.entries[e] = None
        e.witness = witness
        self._by_names.setdefault(f.names, {})[e] = None
        if e.witness is None:
            self._no_witness[e] = None
        else:
            self._witnesses.add(e.witness, e)
        return e

    def _delete(self, e: _Entry) -> None:
        f = e.filter
        del self._entries[f]
        node = e.node
        node.entry = None
        node.folded_changed()
        while (
            node.parent is not None and node.via is not None and node.entry is None and not node.sub
        ):
            parent, (n, c) = node.parent, node.via
            del parent.sub[(n, c)]
            _detach(parent.children, n, c, node)
            parent.changed()
            if not parent.sub:
                parent.folded_changed()  # it has no children left
            node = parent
        for n, c in f.constraints:
            groups = self._groups[n]
            g = groups[c]
            del g.entries[e]
            if not g.entries:
                del groups[c]
                if not groups:
                    del self._groups[n]
                    _count_prefixes(self._prefixes, n, -1)
                    self._fields = None
                _detach(self._cindex, n, c, g)
                key = span_key(c, n in self.integer_attrs)
                if key is None:
                    _detach(self._odd, n, c, g)
                else:
                    spans = self._by_span[n]
                    _discard(spans, key, g)
                    if not spans:
                        del self._by_span[n]
        _discard(self._by_names, f.names, e)
        if e.witness is None:
            del self._no_witness[e]
        else:
            self._witnesses.remove(e.witness, e)

    def _samples(self, n: str, c: Constraint) -> tuple[Any, ...]:
        """Values of attribute n that c accepts, the first one its witness (integers for
        integer attributes, where ``valuesets`` works over the integers; ``ABSENT`` for
        not-exists); empty if none is known. The constants of the common operators are
        tried before :func:`relations.witness`."""
        g = self._groups.get(n, {}).get(c)
        if g is not None:
            return g.samples
        integer = n in self.integer_attrs

        def accepted(v: Any) -> bool:
            # events hold finite numbers only (values.Record rejects ±inf and NaN), so a
            # constant like -inf is no witness: [-inf, -inf] is unsatisfiable
            if isinstance(v, float) and not math.isfinite(v):
                return False
            return c.matches(v) and not (integer and isinstance(v, float) and not v.is_integer())

        found = tuple(v for v in _obvious(c) if accepted(v))
        if found:
            return found
        try:
            v = witness(c, integer=integer)
        except (Unsatisfiable, TooComplex):  # none known: the filter has no witness event
            return ()
        return (v,) if accepted(v) else ()

    def _witness(self, f: RecordFilter) -> dict[str, Any] | None:
        """A flat event in N(f), or None if none is known (f may be unsatisfiable)."""
        return self._witness_of({nc: self._samples(*nc) for nc in f.constraints})

    @staticmethod
    def _witness_of(
        samples: dict[tuple[str, Constraint], tuple[Any, ...]],
    ) -> dict[str, Any] | None:
        out: dict[str, Any] = {}
        for (n, _), found in samples.items():
            if not found:
                return None
            if found[0] is not ABSENT:
                out[n] = found[0]
        return out

    # -- contents ---------------------------------------------------------------------
    def __iter__(self) -> Iterator[tuple[RecordFilter, Hashable]]:
        return iter([(f, k) for f, e in self._entries.items() for k in e.keys])

    def __len__(self) -> int:
        return self._npairs

    def __contains__(self, pair: object) -> bool:
        if not isinstance(pair, tuple) or len(pair) != 2 or not isinstance(pair[0], RecordFilter):
            return False
        e = self._entries.get(pair[0])
        return e is not None and pair[1] in e.keys

    def filters(self, key: Hashable) -> list[RecordFilter]:
        return [e.filter for e in self._by_key.get(key, ())]

    def keys(self) -> set[Hashable]:
        return set(self._by_key)

    # -- matching ---------------------------------------------------------------------
    def _matching(self, d: dict[str, Any]) -> list[_Entry]:
        """The entries whose filter the flat event ``d`` satisfies: a walk of the access
        tree that descends only along attribute filters the event satisfies."""
        get = d.get
        out: list[_Entry] = []
        stack = [self._root]
        pop, push = stack.pop, stack.extend
        while stack:
            node = pop()
            if node.entry is not None:
                out.append(node.entry)
            if node.children:
                for name, ai in node.children.items():
                    v = get(name, ABSENT)
                    if v is ABSENT and not ai.absent:
                        continue
                    for bucket in ai.probe(v):
                        push(bucket)
        return out

    def match(self, event: Record) -> set[Hashable]:
        # the walk of _matching through the nodes' compiled plans (:mod:`plans`): compiled
        # (_walk.match, which builds the answer as it goes), or in Python, which hands
        # over key sets (mostly frozensets) that one update turns into the answer
        if event.__class__ is Record:
            if event.groups:
                return self._match_arrays(event)
            attrs = event._attrs
        else:
            attrs = _flat(event)
        engine = plans.ENGINE
        if engine is not None:
            return engine.match(self._root, attrs)  # type: ignore[no-any-return]
        found: list[Any] = []
        root = self._root
        if root.entry is not None:
            found.append(root.entry.keys)
        walk(root, attrs.get, found.append)
        out: set[Hashable] = set()
        out.update(*found)
        return out

    def _match_arrays(self, event: Record) -> set[Hashable]:
        """An event with arrays of objects: the views of the event over the arrays some
        held filter reads below (:mod:`~pubsift.models.records.arrays`), walked by the
        filters that read below an array (:class:`_Split`), the others walking the
        event's attributes outside the arrays once; past :data:`arrays.MAX_VIEWS` views,
        the exact test of every held filter."""
        prefixes = self._prefixes
        if arrays.count_views(event, prefixes) > arrays.MAX_VIEWS:
            return {k for e in self._matching_arrays(event) for k in e.keys}
        split = self._split
        if split is None:
            split = self._split = _Split(self)
        split.learn(event, prefixes)
        out = split.rest.match(Record(event._attrs, event.raw))
        inner = split.inner
        if inner._entries:
            engine = plans.ENGINE
            root = inner._root
            if engine is not None:
                # one array of flat elements (the usual case): each view made and walked
                # in one compiled call, of only the attributes outside it inner reads
                elements = arrays.flat_group(event, inner._prefixes)
                if elements is not None:
                    base = arrays.base_for(event, inner._groups)
                    engine.match_elements(root, base, elements, out)
                    return out
                for view in arrays.views(event, inner._prefixes):
                    out |= engine.match(root, view)
            else:
                found: list[Any] = []
                if root.entry is not None:
                    found.append(root.entry.keys)
                for view in arrays.views(event, inner._prefixes):
                    walk(root, view.get, found.append)
                out.update(*found)
        return out

    def _matching_arrays(self, event: Record) -> list[_Entry]:
        """The entries whose filter an event with arrays of objects satisfies."""
        prefixes = self._prefixes
        if arrays.count_views(event, prefixes) > arrays.MAX_VIEWS:
            sat = arrays.satisfies
            return [e for e in self._entries.values() if sat(event, e.filter.constraints)]
        found: dict[_Entry, None] = {}
        for view in arrays.views(event, prefixes):
            found.update(dict.fromkeys(self._matching(view)))
        return list(found)

    # -- reading only what the filters use --------------------------------------------
    def fields(self) -> FieldSelection:
        """The attribute names the held filters read, with the schema's integer
        attributes (whose check the full parse makes): the set changes when a filter
        naming an attribute no held filter names is added, or the last filter naming one
        is removed (``add``/``remove``; the selection is made again on the next call)."""
        fields = self._fields
        if fields is None:
            fields = self._fields = FieldSelection([*self._groups, *self.integer_attrs])
        return fields

    def parse_wire(self, text: bytes | str) -> Record:
        """The event of a JSON text (bytes or str), holding only the attributes some held
        filter names (:mod:`~pubsift.models.records.selection`): ``match`` and
        ``match_pairs`` answer on it exactly what they answer on
        ``model.parse_event(text)``, which refuses exactly the texts this refuses
        (EventError naming the byte). Not for the other hooks (``dump_event`` of it holds
        the read attributes only), and only for this index while it holds the same
        names (see :meth:`fields`)."""
        return self.fields().parse(text, self.model)

    def match_wire(self, text: bytes | str) -> set[Hashable]:
        """``match(parse_wire(text))``: the keys of the filters the event's text matches.
        Under the compiled walk, bytes and ASCII texts are read and walked in one call
        (``_walk.match_text``: no event object made for a flat event)."""
        fields = self.fields()
        engine = plans.ENGINE
        if engine is not None and fields._tree is not None and not self.integer_attrs:
            got = engine.match_text(text, fields._tree, MAX_DEPTH, MAX_INT_DIGITS, self._root)
            if got is not None:
                return got if got.__class__ is set else self.match(got)
        return self.match(fields.parse(text, self.model))

    def match_batch(self, events: Any) -> list[set[Hashable]]:
        """One answer per event, ``match``'s. ``events``: records events (a loop over
        :meth:`match`, the garbage collector paused per chunk), or a pyarrow ``Table`` or
        ``RecordBatch`` holding one event per row, decoded column-wise and matched
        column-wise or row by row by the compiled walk, whichever measures faster on
        this index (see :mod:`~pubsift.models.records.columnar`): columns
        are attributes, struct columns
        nest them (dotted names), a null is a missing attribute. Row r's answer is
        ``match(load_event(row))`` with the row's nulls left out; a row that holds a list,
        an integer past 2^53, a non-finite number or a type the columns do not trust is
        answered that way, and one ``load_event`` refuses raises EventError naming it."""
        from pubsift.models.records import columnar

        if columnar.is_table(events):
            return columnar.match_table(self, events)
        return super().match_batch(events)

    def match_wire_batch(self, wires: Any) -> tuple[Any, Any]:
        """(rows, keys): wires[rows[i]] matches a filter indexed under keys[i]; each (row,
        key) pair once, rows ascending (keys in any order within a row). ``wires``: a
        sequence of str or a pyarrow string array (large_string too) of JSON texts of the
        model's dump_event form. Equal to the per-row answer ``[(i, k) for i, w in
        enumerate(wires) for k in self.match(model.load_event(json.loads(w)))]``.
        keys is an int64 array when every key the index holds is an int of that range,
        else an object array. A wire that ``json.loads`` or ``load_event`` refuses raises
        EventError naming its row. Each text read by the selective scan and walked, or
        the batch parsed column-wise by Arrow and matched column-wise over NumPy or row by
        row by the compiled walk, whichever measures faster on this index: see
        :mod:`~pubsift.models.records.wire_batches` and
        :mod:`~pubsift.models.records.columnar`."""
        from pubsift.models.records import wire_batches

        return wire_batches.match_wire_batch(self, wires)

    def _columnar_cache(self) -> dict[str, Any]:
        cache = getattr(self, "_columnar", None)
        if cache is None:
            from pubsift.models.records import columnar

            cache = self._columnar = columnar.new_cache(self)
        return cache

    def match_pairs(self, event: Record) -> list[tuple[RecordFilter, Hashable]]:
        if event.__class__ is Record and event.groups:
            entries = self._matching_arrays(event)
        else:
            entries = self._matching(_flat(event))
        return [(e.filter, k) for e in entries for k in e.keys]

    # -- relations --------------------------------------------------------------------
    @staticmethod
    def _keys_where(candidates: Any, test: Any) -> set[Hashable]:
        out: set[Hashable] = set()
        for e in candidates:
            if test(e.filter):
                out.update(e.keys)
        return out

    def _with_no_witness(self, entries: Any) -> dict[_Entry, None]:
        cands = dict.fromkeys(entries)
        cands.update(self._no_witness)
        return cands

    def covering(self, f: RecordFilter) -> set[Hashable]:
        """g ⊒ f (Mühl Fig. 4.7); candidates: the filters matching f's witness event."""
        w = self._witness(checks.record_filter(f))
        cands = self._entries.values() if w is None else self._with_no_witness(self._matching(w))
        covers = self.model.covers
        return self._keys_where(cands, lambda g: covers(g, f))

    def identical(self, f: RecordFilter) -> set[Hashable]:
        """g ≡ f; candidates: filters with f's attribute names matching f's witness."""
        w = self._witness(checks.record_filter(f))
        if w is None:
            cands: Any = self._entries.values()
        else:
            cands = self._with_no_witness(e for e in self._matching(w) if e.filter.names == f.names)
        same = self.model.identical
        return self._keys_where(cands, lambda g: same(g, f))

    def covered_by(self, f: RecordFilter) -> set[Hashable]:
        """f ⊒ g (Mühl Fig. 4.8); candidates: filters whose witness value on f's most
        selective attribute f accepts (:mod:`~pubsift.models.records.witness_values`)."""
        covers = self.model.covers
        cands = self._covered_candidates(checks.record_filter(f))
        return self._keys_where(cands, lambda g: covers(f, g))

    def _covered_candidates(self, f: RecordFilter) -> Any:
        # a witness leaves out absent attributes: filters accepting ABSENT cannot search
        usable = [(n, c) for n, c in f.constraints if not c.matches(ABSENT)]
        if not usable:
            return self._entries.values()
        witnesses = self._witnesses
        n, c = min(usable, key=lambda nc: witnesses.estimate(*nc))
        return self._with_no_witness(witnesses.accepted(n, c))

    def overlapping(self, f: RecordFilter) -> set[Hashable]:
        """N(g) ∩ N(f) ≠ ∅. The records relations are exact (Cor. 4.3), so if f has
        ``a = x`` (or ``a in S``) an overlapping g leaves a unconstrained or accepts x (a
        member of S) there: candidates come from the attribute filters accepting x. Only
        for a name without a dot: below an array of objects, g's ``a.b = y`` and f's ``a.b
        = x`` hold in different elements (:func:`arrays.overlaps`)."""
        overlaps = self.model.overlaps
        cands = self._overlap_candidates(checks.record_filter(f), undotted=True)
        return self._keys_where(cands, lambda g: overlaps(g, f))

    def overlap_candidates(self, f: RecordFilter) -> list[RecordFilter]:
        """The held filters that may overlap f: if f has ``a = x`` (or ``a in S``), those
        leaving a unconstrained or accepting x (a member of S) there, probed in the
        attribute index; else all. A superset of :meth:`overlapping`'s filters for any
        overlap rule under which an attribute filter rejecting x is disjoint from ``a = x``
        (the concepts index builds on it)."""
        return [e.filter for e in self._overlap_candidates(checks.record_filter(f))]

    def _overlap_candidates(self, f: RecordFilter, undotted: bool = False) -> Any:
        eqs = [
            (n, c)
            for n, c in f.constraints
            if (c.op is Op.EQ or c.op is Op.IN_SET) and not (undotted and "." in n)
        ]
        if not eqs:
            return self._entries.values()
        n, c = min(eqs, key=_order)
        cindex = self._cindex.get(n)
        cands = self._with_no_witness(())
        for names, held in self._by_names.items():
            if n not in names:
                cands.update(held)
        values = [c.operand] if c.op is Op.EQ else [x for _, x in c.operand]
        for v in values:
            for bucket in cindex.probe(v) if cindex is not None else ():
                for group in bucket:
                    cands.update(group.entries)
        return cands

    def merge_candidates(self, f: RecordFilter) -> set[Hashable]:
        """Filters g with a perfect merger of g and f (Mühl Fig. 4.9)."""
        w = self._witness(checks.record_filter(f))
        if w is None:
            cands: Any = self._entries.values()
        else:
            cands = self._with_no_witness(self._matching(w))  # g ⊒ f
            cands.update(dict.fromkeys(self._covered_candidates(f)))  # f ⊒ g
            cands.update(dict.fromkeys(self._nearly_identical(f, w)))
        merge = self.model.merge
        return self._keys_where(cands, lambda g: merge([g, f], perfect=True) is not None)

    def _nearly_identical(self, f: RecordFilter, w: dict[str, Any]) -> list[_Entry]:
        """Entries with f's attribute names whose attribute filters may be identical to
        f's on all but at most one attribute (Mühl Fig. 4.9, counting identical attribute
        filters; "may be identical": accepts f's samples, and f accepts theirs)."""
        same = self._by_names.get(f.names)
        if not same:
            return []
        k = len(f.constraints)
        if k <= 1:
            return list(same)
        counts: dict[_Entry, int] = {}
        for n, c in f.constraints:
            for group in self._identical_groups(n, c, w):
                for e in group.entries:
                    counts[e] = counts.get(e, 0) + 1
        return [e for e, m in counts.items() if m >= k - 1 and e in same]

    def _identical_groups(self, n: str, c: Constraint, w: dict[str, Any]) -> Iterator[_Group]:
        """Groups of attribute n whose attribute filter may be identical to c (c accepts
        w's value): those with c's span, found by hashing, when c is one interval, and
        the others that agree with c on the sample values of both (identical ones must)."""
        key = span_key(c, n in self.integer_attrs)
        if key is not None:
            yield from self._by_span.get(n, {}).get(key, ())
            ci = self._odd.get(n)
        else:
            ci = self._cindex.get(n)
        if ci is None:
            return
        mine, test = self._samples(n, c), compile_test(c)
        for bucket in ci.probe(w.get(n, ABSENT)):
            for group in bucket:
                if all(map(group.test, mine)) and all(map(test, group.samples)):
                    yield group


class _Split:
    """The held filters in two indexes of their own, for events with arrays of objects:
    ``inner`` holds those that name an attribute below a path seen as an array of objects
    in some event (``arrays``), ``rest`` the others. On an event whose arrays are all
    known, a filter of ``rest`` reads below none of them: the event's attributes outside
    the arrays answer it (one walk), and only ``inner`` walks the views."""

    __slots__ = ("arrays", "inner", "rest")

    def __init__(self, index: RecordsIndex) -> None:
        self.arrays: set[str] = set()
        self.inner = RecordsIndex(index.model)
        self.rest = RecordsIndex(index.model)
        for f, e in index._entries.items():
            for k in e.keys:
                self.rest.add(f, k)

    def _of(self, f: RecordFilter) -> RecordsIndex:
        arrays_ = self.arrays
        for n in f.names:
            if arrays.group_of(n, arrays_) is not None:
                return self.inner
        return self.rest

    def add(self, f: RecordFilter, key: Hashable) -> None:
        self._of(f).add(f, key)

    def remove(self, f: RecordFilter, key: Hashable) -> None:
        self._of(f).remove(f, key)

    def learn(self, event: Record, prefixes: dict[str, int]) -> None:
        """Make the arrays of ``event`` that held filters read below known (moving the
        filters that read below them from ``rest`` to ``inner``)."""
        new = [p for p in _group_paths(event) if p in prefixes and p not in self.arrays]
        if not new:
            return
        self.arrays.update(new)
        rest = self.rest
        moved = [(f, list(e.keys)) for f, e in rest._entries.items() if self._of(f) is self.inner]
        for f, keys in moved:
            for k in keys:
                rest.remove(f, k)
                self.inner.add(f, k)


def _group_paths(event: Record) -> Iterator[str]:
    """The paths of the arrays of objects of ``event``, in its elements too."""
    for p, elements in event.groups.items():
        yield p
        for el in elements:
            if el.groups:
                yield from _group_paths(el)


def _obvious(c: Constraint) -> tuple[Any, ...]:
    if c.op is Op.ANY:  # a scalar is the one leaf of itself
        c = c.operand
    x = c.operand
    if c.op in (Op.EQ, Op.PREFIX, Op.SUFFIX, Op.SUBSTRING, Op.LE, Op.GE):
        return (x,)
    if c.op is Op.IN_SET:
        return tuple(v for _, v in sorted(x, key=repr))
    if c.op is Op.IN_RANGE:
        return (x.lo, x.hi)
    return ()


def _flat(event: Any) -> dict[str, Any]:
    if event.__class__ is Record:
        return event._attrs
    return dict(checks.event(event).items())


def _count_prefixes(prefixes: dict[str, int], name: str, step: int) -> None:
    i = name.find(".")
    while i > 0:
        p = name[:i]
        n = prefixes.get(p, 0) + step
        if n:
            prefixes[p] = n
        else:
            del prefixes[p]
        i = name.find(".", i + 1)


def _attr_index(indexes: dict[str, AttributeIndex], name: str) -> AttributeIndex:
    ai = indexes.get(name)
    if ai is None:
        ai = indexes[name] = AttributeIndex()
    return ai


def _detach(indexes: dict[str, AttributeIndex], name: str, c: Constraint, item: Any) -> None:
    ai = indexes[name]
    ai.remove(c, item)
    if not ai.size:
        del indexes[name]


_K = TypeVar("_K", bound=Hashable)
_T = TypeVar("_T")


def _discard(d: dict[_K, dict[_T, None]], key: _K, item: _T) -> None:
    held = d[key]
    del held[item]
    if not held:
        del d[key]
