"""A routing-table index partitioned by stock symbol, for Mühl's stock-quote experiments
(Mühl 2002, Large-Scale Content-Based Publish/Subscribe Systems, §6.2).

Every filter of the experiments names its stock (``symbol = S`` or, after merging,
``symbol in {S1, ...}``), so a routing table is a union of small per-stock tables. This
index keeps one bucket per symbol and answers every query by applying the model's own hooks
to the few entries the query can concern; its answers equal those of
:class:`~pubsift.core.index.LinearIndex` (tests/routing/test_rebeca_experiment.py checks it
against the linear scan). Why the buckets are enough, for non-empty conjunctive filters
(Mühl §4.3.2: N(f) is a box over the attributes):

* g matches an event, covers f, is covered by f, is identical to f or overlaps f only if
  g's symbols meet f's (an event of N(f) has one of f's symbols);
* g and f have a perfect merger only if one covers the other, or they differ in one
  attribute (the union of two boxes is a box only then). If their symbols are disjoint,
  that attribute is the symbol, so the rest of g equals the rest of f: a second
  bucket is keyed by the filter without its symbol constraint (canonical forms).

Filters that name no string symbol go to a *wild* bucket that every query scans, and a
query with such a filter scans everything. Filters are taken to be satisfiable, as the
records model makes them (its parser refuses a constraint no value satisfies, and mergers
of satisfiable filters are satisfiable).

:class:`PartitionedModel` wraps a model and hands out this index, delegating every other
hook, so a :class:`~pubsift.core.network.Network` built on it runs the same brokers and
strategies with faster routing tables.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from pubsift.core.model import Event, Filter, FilterIndex, FilterModel
from pubsift.models.constraints import Op
from pubsift.models.records import RecordFilter

Pair = tuple[Filter, Hashable]
WILD = None


def symbols(f: Filter) -> frozenset[str] | None:
    """The stock symbols a records filter allows, or None if it allows any or is not a
    records filter."""
    if not isinstance(f, RecordFilter):
        return None
    c = f.get("symbol")
    if c is None:
        return None
    if c.op is Op.EQ and isinstance(c.operand, str):
        return frozenset((c.operand,))
    if c.op is Op.IN_SET and all(k == "str" for k, _ in c.operand):
        return frozenset(v for _, v in c.operand)
    return None


def rest(f: Filter) -> tuple[Any, ...]:
    """The filter without its symbol constraint (of a records filter: the index calls it
    where :func:`symbols` found symbols)."""
    assert isinstance(f, RecordFilter)
    return tuple(kv for kv in f.constraints if kv[0] != "symbol")


class SymbolIndex(FilterIndex[Hashable]):
    """(filter, key) pairs bucketed by symbol; see the module docstring. Buckets hold pair
    numbers, so a pair's filter is hashed once per insertion."""

    def __init__(self, model: FilterModel) -> None:
        self.model = model
        self._ids: dict[Pair, int] = {}
        self._pairs: dict[int, Pair] = {}
        self._next = 0
        self._by_symbol: dict[str, dict[int, Pair]] = {}
        self._by_rest: dict[tuple, dict[int, Pair]] = {}
        self._wild: dict[int, Pair] = {}

    def add(self, f: Filter, key: Hashable) -> None:
        pair = (f, key)
        if pair in self._ids:
            return
        i = self._ids[pair] = self._next
        self._next += 1
        self._pairs[i] = pair
        syms = symbols(f)
        if syms is WILD:
            self._wild[i] = pair
            return
        for s in syms:
            self._by_symbol.setdefault(s, {})[i] = pair
        self._by_rest.setdefault(rest(f), {})[i] = pair

    def remove(self, f: Filter, key: Hashable) -> None:
        pair = (f, key)
        try:
            i = self._ids.pop(pair)
        except KeyError:
            raise KeyError(f"({f!r}, {key!r}) is not in the index") from None
        del self._pairs[i]
        syms = symbols(f)
        if syms is WILD:
            del self._wild[i]
            return
        for s in syms:
            _discard(self._by_symbol, s, i)
        _discard(self._by_rest, rest(f), i)

    def __iter__(self) -> Iterator[Pair]:
        return iter(list(self._pairs.values()))

    def __len__(self) -> int:
        return len(self._pairs)

    def __contains__(self, pair: object) -> bool:
        return pair in self._ids

    # -- candidates ---------------------------------------------------------------------
    def _near(self, f: Filter, by_rest: bool = False) -> Iterable[Pair]:
        syms = symbols(f)
        if syms is WILD:
            return self._pairs.values()
        found: dict[int, Pair] = dict(self._wild)
        for s in syms:
            found.update(self._by_symbol.get(s, {}))
        if by_rest:
            found.update(self._by_rest.get(rest(f), {}))
        return found.values()

    def _select(self, pairs: Iterable[Pair], test: Callable[[Filter], bool]) -> set[Hashable]:
        return {k for g, k in pairs if test(g)}

    # -- queries ------------------------------------------------------------------------
    def match(self, event: Event) -> set[Hashable]:
        return {k for _, k in self.match_pairs(event)}

    def match_pairs(self, event: Event) -> list[Pair]:
        s = event.get("symbol") if isinstance(event, Mapping) else None
        if isinstance(s, str):
            pairs: Iterable[Pair] = {**self._wild, **self._by_symbol.get(s, {})}.values()
        else:
            pairs = self._pairs.values()
        return [(g, k) for g, k in pairs if self.model.matches(g, event)]

    def covering(self, f: Filter) -> set[Hashable]:
        return self._select(self._near(f), lambda g: self.model.covers(g, f))

    def covered_by(self, f: Filter) -> set[Hashable]:
        return self._select(self._near(f), lambda g: self.model.covers(f, g))

    def identical(self, f: Filter) -> set[Hashable]:
        return self._select(self._near(f), lambda g: self.model.identical(g, f))

    def overlapping(self, f: Filter) -> set[Hashable]:
        return self._select(self._near(f), lambda g: self.model.overlaps(g, f))

    def merge_candidates(self, f: Filter) -> set[Hashable]:
        return self._select(
            self._near(f, by_rest=True),
            lambda g: self.model.merge([g, f], perfect=True) is not None,
        )

    def filters(self, key: Hashable) -> list[Filter]:
        return [g for g, k in self._pairs.values() if k == key]


def _discard(buckets: dict[Any, dict[int, Pair]], b: Any, i: int) -> None:
    bucket = buckets[b]
    del bucket[i]
    if not bucket:
        del buckets[b]


class PartitionedModel(FilterModel):
    """``model`` with :class:`SymbolIndex` routing tables; every other hook is the model's."""

    def __init__(self, model: FilterModel) -> None:
        self.inner = model
        self.name = model.name
        self.capabilities = model.capabilities

    def parse_filter(self, spec: str | Mapping[str, Any]) -> Filter:
        return self.inner.parse_filter(spec)

    def parse_filters(self, spec: str | Mapping[str, Any]) -> list[Filter]:
        return self.inner.parse_filters(spec)

    def format_filter(self, f: Filter) -> str:
        return self.inner.format_filter(f)

    def parse_event(self, raw: bytes | str | Mapping[str, Any]) -> Event:
        return self.inner.parse_event(raw)

    def matches(self, f: Filter, e: Event) -> bool:
        return self.inner.matches(f, e)

    def covers(self, f: Filter, g: Filter) -> bool:
        return self.inner.covers(f, g)

    def identical(self, f: Filter, g: Filter) -> bool:
        return self.inner.identical(f, g)

    def overlaps(self, f: Filter, g: Filter) -> bool:
        return self.inner.overlaps(f, g)

    def merge(self, fs: Sequence[Filter], perfect: bool = True) -> Filter | None:
        return self.inner.merge(fs, perfect)

    def dump_filter(self, f: Filter) -> Any:
        return self.inner.dump_filter(f)

    def load_filter(self, obj: Any) -> Filter:
        return self.inner.load_filter(obj)

    def dump_event(self, e: Event) -> Any:
        return self.inner.dump_event(e)

    def load_event(self, obj: Any) -> Event:
        return self.inner.load_event(obj)

    def new_index(self) -> SymbolIndex:
        return SymbolIndex(self)
