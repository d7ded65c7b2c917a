"""The ``concepts`` filter model: semantic objects over an ontology, matched in a matching
vocabulary and matching context (Cilia et al. 2004, §4), plugged into the routing core
through the FilterModel hooks (:mod:`pubsift.core.model`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pubsift.core import strict_json
from pubsift.core.errors import EventError, FilterSyntaxError
from pubsift.core.model import JSON, FilterModel, SubscriberView
from pubsift.models.concepts import merging
from pubsift.models.concepts.context import ClientContext, ContextRegistry
from pubsift.models.concepts.conversion import ConversionManager, PropertyConversion, RateTable
from pubsift.models.concepts.covering import Relations
from pubsift.models.concepts.filters import ConceptFilter, FilterBuilder, Matcher
from pubsift.models.concepts.forms import dump_filter, format_filter, load_filter
from pubsift.models.concepts.index import ConceptsIndex
from pubsift.models.concepts.ontology import MONEY, Ontology
from pubsift.models.concepts.semantic_objects import SemanticObject, from_json, to_json
from pubsift.models.concepts.syntax import parse_json, parse_text


def _filter(f: Any) -> ConceptFilter:
    """``f`` if it is a concept filter (FilterSyntaxError naming its type otherwise): the
    hooks' cheap entry check; the index checks filters it holds in full."""
    if not isinstance(f, ConceptFilter):
        raise FilterSyntaxError(
            f"not a concept filter: {type(f).__name__} (parse it with parse_filter or load_filter)"
        )
    return f


def _event(e: Any) -> SemanticObject:
    """``e`` if it is a semantic object (EventError naming its type otherwise)."""
    if not isinstance(e, SemanticObject):
        raise EventError(
            f"not a concepts event: {type(e).__name__} (parse it with parse_event or load_event)"
        )
    return e


def _filters(fs: Any) -> list[ConceptFilter]:
    """The filters of a sequence given to ``merge`` (FilterSyntaxError otherwise)."""
    if not isinstance(fs, Sequence) or isinstance(fs, (str, bytes, bytearray)):
        raise FilterSyntaxError(f"merge takes a list of concept filters, not {type(fs).__name__}")
    return [_filter(f) for f in fs]


class ConceptsModel(FilterModel[ConceptFilter, SemanticObject]):
    """Filters: ``StockQuote where FinalPrice < 100 USD and NetWeight >= 2 kg``.
    Events: semantic objects (JSON form in :mod:`~pubsift.models.concepts.semantic_objects`).

    ``ontology``: the shared vocabulary (default: the project's own, ``pubsift.ttl``);
    ``rates``: exchange rates (default: none, so amounts match only in their own currency);
    ``conversions``: user-defined property conversions (default: entry-point group
    ``pubsift.conversions``); ``contexts``: named, shared contexts."""

    name = "concepts"
    capabilities = frozenset(
        {"covers", "identical", "overlaps", "merge", "imperfect_merge", "index"}
    )

    def __init__(
        self,
        ontology: Ontology | None = None,
        rates: RateTable | None = None,
        conversions: Mapping[str, PropertyConversion] | None = None,
        contexts: ContextRegistry | None = None,
    ) -> None:
        self.ontology = ontology or Ontology.default()
        self.manager = ConversionManager(rates, conversions)
        self.contexts = contexts if contexts is not None else ContextRegistry()
        self.builder = FilterBuilder(self.ontology, self.manager)
        self.matcher = Matcher(self.ontology, self.manager)
        self.relations = Relations(self.ontology, self.manager)

    def with_rates(self, source: str, base: str = "USD") -> ConceptsModel:
        """This model with the exchange rates of the CSV file ``source`` (rows
        ``currency,rate,valid_from,valid_to``, see :meth:`RateTable.from_csv`) quoted
        against ``base``; ontology, conversions and contexts are this model's
        (``pubsift match -m concepts --rates FILE``). Raises ConversionError."""
        return ConceptsModel(
            self.ontology, RateTable.from_csv(source, base), self.manager.conversions, self.contexts
        )

    # -- parsing ----------------------------------------------------------------------
    def parse_filter(
        self,
        spec: str | Mapping[str, Any],
        client: ClientContext | None = None,
        terms: Mapping[str, str] | None = None,
    ) -> ConceptFilter:
        """Text form, JSON form (a mapping or text starting with ``{``) or the wire form.
        ``client`` supplies units/currencies left implicit; ``terms`` a client vocabulary.
        Raises FilterSyntaxError, or ConversionError for impossible conversions."""
        if isinstance(spec, str) and spec.lstrip().startswith("{"):
            text = spec
            try:
                spec = strict_json.loads(text)
            except strict_json.JsonError as exc:
                if exc.kind == "syntax":
                    raise FilterSyntaxError(f"bad JSON: {exc.reason}", text, exc.pos) from None
                raise FilterSyntaxError(f"bad JSON: {exc.reason}", path="$") from None
        if isinstance(spec, Mapping):
            if "clauses" in spec:
                return load_filter(spec, self.ontology)
            return self.builder.build(parse_json(spec), client, terms)
        if not isinstance(spec, str):
            raise FilterSyntaxError(f"a filter is text or a JSON object, not {type(spec).__name__}")
        return self.builder.build(parse_text(spec), client, terms)

    def parse_event(self, raw: bytes | str | Mapping[str, Any]) -> SemanticObject:
        if isinstance(raw, (bytes, bytearray)):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise EventError(f"not UTF-8: {exc}") from None
        if isinstance(raw, str):
            try:
                raw = strict_json.loads(raw)
            except strict_json.JsonError as exc:
                if exc.kind == "syntax":
                    raise EventError(
                        f"bad JSON: {exc.reason}", f"line {exc.lineno}, column {exc.colno}"
                    ) from None
                raise EventError(f"bad JSON: {exc.reason}", "event") from None
        e = from_json(raw, self.ontology, self.contexts)
        if e.time is None and any(self.ontology.kind(o.concept) == MONEY for _, o in e.walk()):
            raise EventError(
                "an event with amounts of money needs a time: exchange rates "
                "are applied at the event's time",
                "event.time",
            )
        return e

    def format_filter(self, f: ConceptFilter) -> str:
        return format_filter(_filter(f), self.ontology)

    # -- semantics --------------------------------------------------------------------
    def matches(self, f: ConceptFilter, e: SemanticObject) -> bool:
        return self.matcher.matches(_filter(f), _event(e))

    def covers(self, f: ConceptFilter, g: ConceptFilter) -> bool:
        return self.relations.covers(_filter(f), _filter(g))

    def identical(self, f: ConceptFilter, g: ConceptFilter) -> bool:
        return self.relations.identical(_filter(f), _filter(g))

    def overlaps(self, f: ConceptFilter, g: ConceptFilter) -> bool:
        return self.relations.overlaps(_filter(f), _filter(g))

    def merge(self, fs: Sequence[ConceptFilter], perfect: bool = True) -> ConceptFilter | None:
        return merging.merge(self.relations, _filters(fs), perfect)

    # -- wire forms -------------------------------------------------------------------
    def dump_filter(self, f: ConceptFilter) -> JSON:
        return dump_filter(_filter(f), self.ontology)

    def load_filter(self, obj: JSON) -> ConceptFilter:
        return load_filter(obj, self.ontology)

    def dump_event(self, e: SemanticObject) -> JSON:
        return to_json(_event(e), self.ontology, self.contexts)

    def load_event(self, obj: JSON) -> SemanticObject:
        return self.parse_event(obj)

    # -- per-subscriber delivery --------------------------------------------------------
    subscriber_options = ("vocabulary", "context")

    def subscriber_view(
        self, options: Mapping[str, JSON]
    ) -> SubscriberView[ConceptFilter, SemanticObject]:
        """A subscriber's vocabulary and context (Cilia et al. 2004, §4.2): its filters
        rewritten into the matching ones, its deliveries converted back
        (:class:`~pubsift.models.concepts.deliveries.ConceptsSubscriberView`)."""
        from pubsift.models.concepts.deliveries import subscriber_view

        return subscriber_view(self, options)

    # -- indexing ---------------------------------------------------------------------
    def new_index(self) -> ConceptsIndex:
        """Matching through the records index over lazily converted values."""
        return ConceptsIndex(self)
