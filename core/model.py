"""The filter-model plug-in contract.

A *filter model* supplies the semantics of events and filters; the routing core only ever
calls the hooks below. Notation follows Mühl (2002, §4.3.2): N(f) is the set of events that
match filter f.

Soundness rules (checked by :mod:`pubsift.core.conformance` against ``matches``):

============  ===============================  ============================================
hook          meaning                          soundness
============  ===============================  ============================================
matches       e ∈ N(f)                          exact
identical     N(f) = N(g)                       may say False when unsure, never True wrongly
covers        N(f) ⊇ N(g)                       may say False when unsure, never True wrongly
overlaps      N(f) ∩ N(g) ≠ ∅                   may say True when unsure, never False wrongly
merge         f' with N(f') ⊇ ∪N(fs)            perfect=True: N(f') = ∪N(fs) exactly, or None
============  ===============================  ============================================
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic

from pubsift.core.errors import PubsiftError
from typing_extensions import TypeVar

Filter = Hashable
"""A model's filter: immutable and hashable (equal filters must hash equally)."""
Event = Any
"""A model's parsed event."""
JSON = Any
"""A JSON-safe value (dict, list, str, int, float, bool, None)."""

K = TypeVar("K", bound=Hashable)
#: the filter type of a model (``FilterModel[XPathFilter, XmlEvent]``); a bare
#: ``FilterModel`` or ``FilterIndex[K]`` means any model's filters and events.
F = TypeVar("F", bound=Hashable, default=Hashable)
#: the event type of a model
E = TypeVar("E", default=Any)

#: Capability names a model may claim (used by the conformance kit to skip what a model
#: does not claim). ``merge`` = perfect merging, ``imperfect_merge`` = covering hulls.
CAPABILITIES = frozenset({"covers", "identical", "overlaps", "merge", "imperfect_merge", "index"})


class FilterModel(ABC, Generic[F, E]):
    """Base class of filter models. Subclasses register under the entry-point group
    ``pubsift.models``; the entry point names the class (instantiated without arguments) or
    a ready instance. A model states its filter and event types as type arguments,
    ``class XmlModel(FilterModel[XPathFilter, XmlEvent])``, and may accept wider inputs in
    its hooks (text forms, raw documents).

    Only ``parse_filter``, ``parse_event``, ``matches``, the wire forms and ``covers`` are
    required; the defaults of the others are sound but weak.
    """

    #: registered name, e.g. ``"records"``; events and subscriptions carry it.
    name: str = ""
    #: what the model claims beyond the required hooks; see :data:`CAPABILITIES`.
    capabilities: frozenset[str] = frozenset()

    # -- parsing ----------------------------------------------------------------------
    @abstractmethod
    def parse_filter(self, spec: str | Mapping[str, Any]) -> F:
        """Text or JSON form -> immutable, hashable filter.

        Raises :class:`~pubsift.core.errors.FilterSyntaxError` naming the position."""

    @abstractmethod
    def parse_event(self, raw: bytes | str | Mapping[str, Any]) -> E:
        """bytes/str/mapping -> event. Raises :class:`~pubsift.core.errors.EventError`;
        never parses unsafely (no network, no external entities)."""

    def parse_filters(self, spec: str | Mapping[str, Any]) -> list[F]:
        """Like :meth:`parse_filter`, for forms that denote a disjunction (e.g. ``$or``):
        returns the conjunctive filters whose union is meant. Default: one filter."""
        return [self.parse_filter(spec)]

    def format_filter(self, f: F) -> str:
        """A readable text form that :meth:`parse_filter` reads back (default: repr)."""
        return repr(f)

    # -- semantics --------------------------------------------------------------------
    @abstractmethod
    def matches(self, f: F, e: E) -> bool:
        """e ∈ N(f), exactly."""

    @abstractmethod
    def covers(self, f: F, g: F) -> bool:
        """N(f) ⊇ N(g). May say False when unsure; never True wrongly."""

    def identical(self, f: F, g: F) -> bool:
        """N(f) = N(g). May say False when unsure; never True wrongly.
        Default: mutual covering."""
        return f == g or (self.covers(f, g) and self.covers(g, f))

    def overlaps(self, f: F, g: F) -> bool:
        """N(f) ∩ N(g) ≠ ∅. May say True when unsure; never False wrongly.
        Default: True (always sound)."""
        return True

    def merge(self, fs: Sequence[F], perfect: bool = True) -> F | None:
        """A filter covering every filter in ``fs``, or None if the model cannot merge them.

        With ``perfect=True`` the merger must match exactly the union of the inputs;
        with ``perfect=False`` it may match more (an imperfect merger). Default: None."""
        return None

    # -- wire forms -------------------------------------------------------------------
    @abstractmethod
    def dump_filter(self, f: F) -> JSON:
        """JSON-safe wire form; ``load_filter(dump_filter(f)) == f``."""

    @abstractmethod
    def load_filter(self, obj: JSON) -> F:
        """Inverse of :meth:`dump_filter`."""

    @abstractmethod
    def dump_event(self, e: E) -> JSON:
        """JSON-safe wire form; ``load_event(dump_event(e))`` equals ``e``."""

    @abstractmethod
    def load_event(self, obj: JSON) -> E:
        """Inverse of :meth:`dump_event`."""

    def load_wire(self, data: bytes) -> E | None:
        """The event of ``data``, the UTF-8 JSON text of a wire form, where the model
        reads such texts faster than ``load_event(json.loads(data))`` (the brokers and
        clients load every event they route or deliver from the bytes that came): equal
        to that event, or None for a text the model leaves to that path (which reads it
        or says what is wrong). Never raises. Default: None."""
        return None

    def wire_reader(self, indexes: Sequence[FilterIndex[Any, F]]) -> Callable[[bytes], E | None]:
        """A reader of wire texts (as :meth:`load_wire`) for events that are only matched
        through ``indexes`` (indexes this model made; a broker's routing tables and the
        authorized filters it checks publications with): ``read(data)`` is an event on
        which every one of them answers ``match`` as on ``load_event(json.loads(data))``,
        whatever they hold at the time of the call (filters added or removed between
        calls included), or None for a text left to that path. Never raises. The event
        serves those matches only (a model may read just the fields their filters name,
        DESIGN §2.6): not the other hooks, not an index that is not among ``indexes``.
        Default: :meth:`load_wire`."""
        return self.load_wire

    # -- per-subscriber delivery --------------------------------------------------------
    #: keys of a subscriber's entry, beside its id, model and filter, that
    #: :meth:`subscriber_view` reads (e.g. a vocabulary and a context); default: none.
    subscriber_options: tuple[str, ...] = ()

    def subscriber_view(self, options: Mapping[str, JSON]) -> SubscriberView[F, E]:
        """How the model serves one subscriber whose entry gives ``options`` (keys among
        :attr:`subscriber_options`, values JSON): the view parses its filters and makes
        what each delivery carries (Cilia et al. 2004, §4.2: matching objects delivered
        "already converted into the subscriber's vocabulary and context"). Raises a
        :class:`~pubsift.core.errors.PubsiftError` for options it cannot use. Default: the
        model's own forms, deliveries as :meth:`dump_event` writes them."""
        if options:
            raise PubsiftError(f"model {self.name!r} reads no {', '.join(options)}")
        return SubscriberView(self)

    # -- indexing ---------------------------------------------------------------------
    def new_index(self) -> FilterIndex[Any, F]:
        """A fresh :class:`FilterIndex` for routing tables. Default: linear scan."""
        return LinearIndex(self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class SubscriberView(Generic[F, E]):
    """One subscriber's view of a model (:meth:`FilterModel.subscriber_view`): the default
    parses with the model's :meth:`~FilterModel.parse_filters` and delivers the event's
    wire form (``converts`` False: an edge may deliver the wire form it stored). A model
    whose deliveries depend on the subscriber overrides :meth:`parse_filters` and
    :meth:`delivery` and sets ``converts``."""

    #: whether :meth:`delivery` differs from the model's ``dump_event``
    converts: bool = False

    def __init__(self, model: FilterModel[F, E]) -> None:
        self.model = model

    def parse_filters(self, spec: str | Mapping[str, Any]) -> list[F]:
        """The subscriber's filter ``spec`` (text or JSON form) as the model's filters
        (several for a disjunction); raises as :meth:`FilterModel.parse_filters`."""
        return self.model.parse_filters(spec)

    def delivery(self, f: F, e: E) -> JSON:
        """What a delivery of ``e`` (which matched ``f``, one of this subscriber's filters)
        carries, JSON-safe (``json.dumps(..., allow_nan=False)`` accepts it)."""
        return self.model.dump_event(e)


class FilterIndex(ABC, Generic[K, F]):
    """A multiset of (filter, key) pairs answering the routing queries fast.

    A key is whatever the caller attaches (a destination, a subscription id); the same
    filter may be held under several keys and one key may hold several filters. Every query
    answers the set of keys whose filter stands in the relation; answers must equal those
    of :class:`~pubsift.core.index.LinearIndex` over the model's hooks. The second type
    argument is the model's filter type (default: any hashable filter).
    """

    model: FilterModel[F, Any]

    @abstractmethod
    def add(self, f: F, key: K) -> None:
        """Insert the pair (f, key); adding a present pair again is a no-op."""

    @abstractmethod
    def remove(self, f: F, key: K) -> None:
        """Remove the pair (f, key); raises KeyError if it is absent."""

    @abstractmethod
    def __iter__(self) -> Iterator[tuple[F, K]]:
        """All (filter, key) pairs."""

    @abstractmethod
    def __len__(self) -> int:
        """Number of (filter, key) pairs."""

    def __contains__(self, pair: object) -> bool:
        return any(p == pair for p in self)

    @abstractmethod
    def match(self, event: Event) -> set[K]:
        """Keys of filters f with event ∈ N(f)."""

    def match_batch(self, events: Iterable[Event]) -> list[set[K]]:
        """``[match(e) for e in events]``: one answer per event, in order. Indexes that
        can answer many events at once (columnar, shared work) override it; the answers
        must be those of :meth:`match`. Default: a loop over :meth:`match`."""
        match = self.match
        return [match(e) for e in events]

    def match_pairs(self, event: Event) -> list[tuple[F, K]]:
        """(filter, key) pairs whose filter matches; default: via :meth:`match`-style scan."""
        return [(f, k) for f, k in self if self.model.matches(f, event)]

    @abstractmethod
    def covering(self, f: F) -> set[K]:
        """Keys of filters g with g ⊒ f (model.covers(g, f))."""

    @abstractmethod
    def covered_by(self, f: F) -> set[K]:
        """Keys of filters g with f ⊒ g (model.covers(f, g))."""

    @abstractmethod
    def identical(self, f: F) -> set[K]:
        """Keys of filters g with model.identical(g, f)."""

    @abstractmethod
    def overlapping(self, f: F) -> set[K]:
        """Keys of filters g with model.overlaps(g, f)."""

    @abstractmethod
    def merge_candidates(self, f: F) -> set[K]:
        """Keys of filters g that can be merged perfectly with f
        (model.merge([g, f], perfect=True) is not None)."""

    def filters(self, key: K) -> list[F]:
        """The filters held under ``key``."""
        return [f for f, k in self if k == key]

    def keys(self) -> set[K]:
        return {k for _, k in self}

    def bulk_add(self, pairs: Iterable[tuple[F, K]]) -> None:
        """Add every pair, all or nothing: if one ``add`` raises, the pairs this call added
        are removed again before the exception propagates (a failed index operation
        changes nothing; ``add`` itself must be atomic)."""
        added: list[tuple[F, K]] = []
        try:
            for f, k in pairs:
                before = len(self)
                self.add(f, k)
                if len(self) != before:
                    added.append((f, k))
        except BaseException:
            for f, k in reversed(added):
                self.remove(f, k)
            raise


class LinearIndex(FilterIndex[Hashable, F]):
    """The default index (:meth:`FilterModel.new_index`, also :mod:`pubsift.core.index`):
    holds (filter, key) pairs in insertion order; every query scans all of them."""

    def __init__(self, model: FilterModel[F, Any]) -> None:
        self.model = model
        self._pairs: dict[tuple[F, Hashable], None] = {}

    def add(self, f: F, key: Hashable) -> None:
        self._pairs[(f, key)] = None

    def remove(self, f: F, key: Hashable) -> None:
        try:
            del self._pairs[(f, key)]
        except KeyError:
            raise KeyError(f"({f!r}, {key!r}) is not in the index") from None

    def __iter__(self) -> Iterator[tuple[F, Hashable]]:
        return iter(list(self._pairs))

    def __len__(self) -> int:
        return len(self._pairs)

    def __contains__(self, pair: object) -> bool:
        return pair in self._pairs

    def _select(self, test: Any) -> set[Hashable]:
        return {k for g, k in self._pairs if test(g)}

    def match(self, event: Event) -> set[Hashable]:
        return self._select(lambda g: self.model.matches(g, event))

    def match_pairs(self, event: Event) -> list[tuple[F, Hashable]]:
        return [(g, k) for g, k in self._pairs if self.model.matches(g, event)]

    def covering(self, f: F) -> set[Hashable]:
        return self._select(lambda g: self.model.covers(g, f))

    def covered_by(self, f: F) -> set[Hashable]:
        return self._select(lambda g: self.model.covers(f, g))

    def identical(self, f: F) -> set[Hashable]:
        return self._select(lambda g: self.model.identical(g, f))

    def overlapping(self, f: F) -> set[Hashable]:
        return self._select(lambda g: self.model.overlaps(g, f))

    def merge_candidates(self, f: F) -> set[Hashable]:
        return self._select(lambda g: self.model.merge([g, f], perfect=True) is not None)

    def filters(self, key: Hashable) -> list[F]:
        return [g for g, k in self._pairs if k == key]
