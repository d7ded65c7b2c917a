"""The concepts model's filter index: matching through the records index after lazy
conversion (Cilia et al. 2004, §4.3: Rebeca "specialized in order to delay the conversion as
much as possible"; Mühl 2002, §4.3.8 for the index underneath).

A concept filter is a conjunction of records constraints on (path, matching context) pairs
plus the concept test, so it is held as a :class:`~pubsift.models.records.RecordFilter`
over *virtual attributes*: one per (path, target context) that any held filter constrains,
and ``@concept`` (the set of the filter concept's specializations). An event is matched by
converting each of its values once into each target context the index knows for its path —
a handful of conversions, however many subscriptions — and probing the records index.

Exactness: a value that cannot be converted (no rate in force) or a complex member is
given to the records index as ``null``, which no held constraint but ``exists`` accepts; the
index then answers a superset, which is verified with the model's ``matches``. The other
queries (covering, overlap, merging) scan with the model's hooks, like
:class:`~pubsift.core.index.LinearIndex`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from pubsift.core.errors import EventError, FilterSyntaxError
from pubsift.core.index import LinearIndex
from pubsift.core.model import FilterIndex
from pubsift.models.concepts.filters import _FAIL, Clause, ConceptFilter
from pubsift.models.concepts.forms import check_filter
from pubsift.models.concepts.semantic_objects import SemanticObject
from pubsift.models.constraints import Constraint, Op, skey
from pubsift.models.records import RecordFilter, RecordsModel

if TYPE_CHECKING:
    from pubsift.models.concepts.model import ConceptsModel

_CONCEPT = "@concept"


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


class ConceptsIndex(FilterIndex[Hashable, ConceptFilter]):
    """(filter, key) pairs; ``match`` through a records index over converted values, the
    relation queries by a linear scan over the model's hooks."""

    model: ConceptsModel

    def __init__(self, model: ConceptsModel) -> None:
        self.model = model
        self._scan = LinearIndex(model)
        # keys: the (filter, key) pairs held
        self._records = RecordsModel().new_index()
        self._names: dict[tuple[Any, ...], str] = {}  # (path, target) -> virtual attribute
        self._by_path: dict[Any, dict[str, Clause]] = {}  # path -> virtual attribute -> clause
        self._uses: dict[str, int] = {}
        self._counter = 0

    def _translate(
        self, f: ConceptFilter
    ) -> tuple[RecordFilter, list[tuple[tuple[Any, ...], str]]]:
        """The records filter of ``f`` and the virtual attributes it would create (nothing
        is changed: a failed :meth:`add` must leave the index as it was)."""
        onto = self.model.ontology
        attrs = {
            _CONCEPT: Constraint(Op.IN_SET, frozenset(skey(c) for c in onto.descendants(f.concept)))
        }
        fresh: list[tuple[tuple[Any, ...], str]] = []
        for c in f.clauses:
            key = (c.path, c.target)
            name = self._names.get(key)
            if name is None:  # never reuse a name: held filters may still use it
                name = f"v{self._counter + len(fresh) + 1}"
                fresh.append((key, name))
            attrs[name] = c.constraint
        return RecordFilter.of(attrs), fresh

    def add(self, f: ConceptFilter, key: Hashable) -> None:
        """Hold (f, key); when it raises, the index is exactly as it was."""
        check_filter(f, self.model.ontology)  # hand-made filters: refused before any change
        _key(key)
        if (f, key) in self._scan:
            return
        rf, fresh = self._translate(f)
        self._records.add(rf, (f, key))  # the one step that may fail: before any change
        clauses = {(c.path, c.target): c for c in f.clauses}
        for k, name in fresh:
            self._names[k] = name
            self._by_path.setdefault(k[0], {})[name] = clauses[k]
        self._counter += len(fresh)
        for name, _ in rf.constraints:
            if name != _CONCEPT:
                self._uses[name] = self._uses.get(name, 0) + 1
        self._scan.add(f, key)

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
        self._scan.remove(_query(f), _key(key))
        rf, _ = self._translate(f)  # a held filter: its virtual attributes exist
        self._records.remove(rf, (f, key))
        for name, _ in rf.constraints:
            if name == _CONCEPT:
                continue
            self._uses[name] -= 1
            if not self._uses[name]:
                del self._uses[name]
                c = next(c for cs in self._by_path.values() for n, c in cs.items() if n == name)
                del self._by_path[c.path][name]
                if not self._by_path[c.path]:
                    del self._by_path[c.path]
                del self._names[(c.path, c.target)]

    def _flat(self, e: SemanticObject) -> tuple[dict[str, Any], bool]:
        """The event's values in every target context the index knows, and whether a
        stand-in ``null`` was used (then answers must be verified)."""
        flat: dict[str, Any] = {_CONCEPT: e.concept}
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

    def match_pairs(self, event: SemanticObject) -> list[tuple[ConceptFilter, Hashable]]:
        if not isinstance(event, SemanticObject):
            raise EventError(f"not a concepts event: {type(event).__name__}")
        flat, verify = self._flat(event)
        # the records index holds the (filter, key) pairs as its keys
        pairs = cast("set[tuple[ConceptFilter, Hashable]]", self._records.match(flat))
        if verify:
            matches = self.model.matches
            return [p for p in pairs if matches(p[0], event)]
        return list(pairs)

    def match(self, event: SemanticObject) -> set[Hashable]:
        return {k for _, k in self.match_pairs(event)}

    # -- the rest: the linear scan over the model's hooks ----------------------------
    def __iter__(self) -> Iterator[tuple[ConceptFilter, Hashable]]:
        return iter(self._scan)

    def __len__(self) -> int:
        return len(self._scan)

    def __contains__(self, pair: object) -> bool:
        return pair in self._scan

    def covering(self, f: ConceptFilter) -> set[Hashable]:
        return self._scan.covering(_query(f))

    def covered_by(self, f: ConceptFilter) -> set[Hashable]:
        return self._scan.covered_by(_query(f))

    def identical(self, f: ConceptFilter) -> set[Hashable]:
        return self._scan.identical(_query(f))

    def overlapping(self, f: ConceptFilter) -> set[Hashable]:
        return self._scan.overlapping(_query(f))

    def merge_candidates(self, f: ConceptFilter) -> set[Hashable]:
        return self._scan.merge_candidates(_query(f))

    def filters(self, key: Hashable) -> list[ConceptFilter]:
        return self._scan.filters(key)
