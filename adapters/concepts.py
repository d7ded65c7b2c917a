"""Adapters of the concepts model at the edges (Cilia et al. 2004, §4.2: "At the publisher
side they are responsible for resolving vocabulary issues and for enriching message content.
At the subscriber side they are in charge of transforming/converting message content
according to the subscriber preferences"). Only the concepts enrichment lives here
(docs/concepts.md, "Vocabulary agreement and the edges"); reading files is
:func:`pubsift.adapters.read`'s.

* :class:`Publisher` enriches plain records (JSON objects, CSV rows) into semantic objects
  with the publisher's declared vocabulary and context. A source with a ``publisher``
  table (:func:`publisher_for`) makes the CSV reader's and the JSON-lines reader's records
  semantic objects this way.
* :func:`ubl_semantic_objects` maps a parsed UBL 1.0 business document (orders, invoices,
  despatch advice): one semantic object per line, amounts in their ``currencyID`` and
  quantities in their ``unitCode`` (UN/ECE codes mapped to pint units); a UBL file is
  read by ``read(Source(path, model="concepts"))``, which calls it.
* :class:`Subscriber` is the subscriber side: subscriptions in the subscriber's vocabulary
  and context, deliveries converted back (:class:`pubsift.models.concepts.VocabularyAgreement`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from lxml import etree
from pubsift.adapters.readers.outcomes import Event, Quarantined, excerpt
from pubsift.adapters.readers.source import Source, SourceError
from pubsift.adapters.readers.tabular import parse_number
from pubsift.core.errors import ConversionError, EventError, PubsiftError
from pubsift.core.model import FilterModel
from pubsift.models.concepts import (
    MONEY,
    QUANTITY,
    UNECE,
    ClientContext,
    ConceptFilter,
    ConceptsModel,
    Delivery,
    SemanticObject,
    UnknownConcept,
    Vocabulary,
    VocabularyAgreement,
    canonical_unit,
    dimensionality,
)


@dataclass
class Publisher:
    """A publisher's declared vocabulary and context, used to enrich its plain records.

    ``concept``: the concept of every record (a shared term or a local one);
    ``time_field``: the field holding the event's time (ISO 8601), if any;
    ``ignore``: fields deliberately left out. Any other field that is neither a local term
    nor a shared term is an error (nothing is dropped silently)."""

    model: ConceptsModel
    concept: str
    vocabulary: Mapping[str, str] = field(default_factory=dict)
    context: ClientContext | Mapping[str, Any] | None = None
    time_field: str | None = None
    ignore: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        self.context = ClientContext.of(self.context)
        if not isinstance(self.vocabulary, Mapping):
            raise ConversionError(
                f"a vocabulary maps local terms to concepts (a JSON "
                f"object), not {type(self.vocabulary).__name__}"
            )
        self._terms = Vocabulary(dict(self.vocabulary)).resolved(self.model.ontology)
        self._concept = self._resolve(self.concept, "concept")

    def _resolve(self, term: str, where: str) -> str:
        if term in self._terms:
            return self._terms[term]
        try:
            return self.model.ontology.resolve(term)
        except UnknownConcept as exc:
            raise EventError(
                f"field {term!r} is not in the publisher's vocabulary nor the ontology ({exc})",
                where,
            ) from None

    def enrich(self, record: Mapping[str, Any], where: str = "record") -> SemanticObject:
        """A plain record -> a semantic object in the publisher's context (EventError says
        which field is wrong)."""
        if not isinstance(record, Mapping):
            raise EventError(f"a record is a JSON object, not {type(record).__name__}", where)
        onto = self.model.ontology
        value: dict[str, Any] = {}
        time = None
        for name, raw in record.items():
            if name in self.ignore:
                continue
            if name == self.time_field:
                time = raw
            c = self._resolve(name, f"{where}.{name}")
            kind = onto.kind(c)
            # a ClientContext since __post_init__
            ctx = self.context.context_for(onto, c).to_json()  # type: ignore[union-attr]
            value[onto.name(c)] = {"value": _typed(raw, kind, f"{where}.{name}"), "context": ctx}
        obj = {"concept": onto.name(self._concept), "value": value}
        if time:
            obj["time"] = time
        return self.model.parse_event(obj)


def _typed(raw: Any, kind: str, where: str) -> Any:
    """Amounts and quantities are numbers: a string (a CSV cell) is read as a number
    literal (:func:`pubsift.adapters.readers.tabular.parse_number`: surrounding spaces, a sign and
    leading zeros allowed; ``nan``, ``inf``, ``1_000``, out-of-range numbers refused); an
    ``int`` stays an ``int``. Values of other concepts are kept as they are."""
    if kind not in (QUANTITY, MONEY):
        return raw
    if isinstance(raw, str):
        try:
            return parse_number(raw)
        except ValueError as exc:
            raise EventError(str(exc), where) from None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise EventError(f"{raw!r} is not a number", where)
    return raw


# -- a source's publisher side -------------------------------------------------------------
PUBLISHER_SETTINGS = ("concept", "vocabulary", "context", "time_field", "ignore")
_PUBLISHERS: dict[tuple[int, str], Publisher] = {}
_PUBLISHERS_KEPT = 64


def publisher_for(model: FilterModel, source: Source) -> Publisher:
    """The Publisher of ``source.publisher`` (a mapping: ``concept``, ``vocabulary``,
    ``context``, ``time_field``, ``ignore``) for ``model``, built once per description and
    model (the inputs of one source share it). SourceError naming the setting when the
    description cannot be used, or when ``model`` is not the concepts model."""
    spec = source.publisher
    where = f"source {source.path}: publisher"
    if spec is None:
        raise SourceError(f"{where}: the source has no publisher side")
    try:
        key: tuple[int, str] | None = (
            id(model),
            json.dumps(dict(spec), sort_keys=True, default=repr),
        )
    except (TypeError, ValueError):
        key = None
    if key is not None:
        found = _PUBLISHERS.get(key)
        if found is not None and found.model is model:
            return found
    pub = _publisher(model, spec, where)
    if key is not None:
        if len(_PUBLISHERS) >= _PUBLISHERS_KEPT:
            _PUBLISHERS.clear()
        _PUBLISHERS[key] = pub
    return pub


def _publisher(model: FilterModel, spec: Mapping[str, Any], where: str) -> Publisher:
    if not isinstance(model, ConceptsModel):
        raise SourceError(
            f"{where}: a publisher side makes semantic objects of the concepts "
            f"model, but the source's model is {model.name!r} (set model = "
            '"concepts")'
        )
    unknown = sorted(map(str, set(spec) - set(PUBLISHER_SETTINGS)))
    if unknown:
        raise SourceError(
            f"{where}: unknown setting(s) {', '.join(unknown)}; the settings "
            f"are {', '.join(PUBLISHER_SETTINGS)}"
        )
    concept = spec.get("concept")
    if not isinstance(concept, str) or not concept:
        raise SourceError(
            f"{where}: concept is the concept of every record (a non-empty string), not {concept!r}"
        )
    vocabulary = spec.get("vocabulary") or {}
    if not isinstance(vocabulary, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in vocabulary.items()
    ):
        raise SourceError(f"{where}: vocabulary maps field names to concepts (strings)")
    time_field = spec.get("time_field")
    if time_field is not None and not isinstance(time_field, str):
        raise SourceError(f"{where}: time_field is a field name, not {time_field!r}")
    ignore = spec.get("ignore") or ()
    if not isinstance(ignore, (list, tuple, set, frozenset)) or not all(
        isinstance(x, str) for x in ignore
    ):
        raise SourceError(f"{where}: ignore is a list of field names, not {ignore!r}")
    try:
        return Publisher(
            model, concept, dict(vocabulary), spec.get("context"), time_field, frozenset(ignore)
        )
    except PubsiftError as exc:
        raise SourceError(f"{where}: {exc}") from None


# -- UBL -----------------------------------------------------------------------------------
_LINES = {"OrderLine", "InvoiceLine", "DespatchLine", "ReceiptLine", "LineItem"}
_DIMENSION_CONCEPT = {
    "[mass]": "NetWeight",
    "[length]": "Distance",
    "[]": "ItemCount",
    "[length] ** 3": "Volume",
}


def _local(el: etree._Element) -> str:
    return etree.QName(el).localname


def _first(el: etree._Element, name: str) -> etree._Element | None:
    for x in el.iter():
        if isinstance(x.tag, str) and _local(x) == name:
            return x
    return None


def ubl_semantic_objects(
    root: etree._Element, model: ConceptsModel, name: str
) -> Iterator[Event | Quarantined]:
    """The semantic objects of a parsed UBL document (parsed with the xml model's hardened
    parser: :func:`pubsift.models.xml.parse_document`), one per document line
    (``OrderLine``, ``InvoiceLine``, ``DespatchLine``, ``ReceiptLine``, ``LineItem``, the
    outermost ones), at position = the line's 1-based index in document order; a document
    without lines is one object at position 1.

    Concept = the document type (Order, Invoice, DespatchAdvice, ...); members Identifier,
    DateOfIssue, TotalAmount (the document's LineExtensionTotalAmount), UnitPrice (the
    line's PriceAmount) and the line's quantity as NetWeight / Distance / ItemCount / Volume
    by the dimension of its unit code; the object's time is the IssueDate.

    A line that cannot be enriched is quarantined with reason ``concept-enrichment``, the
    message naming the field and the XML line: a number that is not one, an amount without
    ``currencyID``, a document type that is not a concept (then every line is), and a
    quantity whose unit code is not a unit of measure (``PKG``, ``CTN``, or no code): such
    a line is quarantined whole rather than delivered without its quantity, since a
    subscriber filtering on quantities would otherwise never see it and not know why
    (docs/adapters.md §4: nothing dropped silently)."""
    onto = model.ontology
    head: dict[str, Any] = {}
    time: str | None = None
    problem = ""
    try:
        doc_type = _local(root)
        try:
            concept = onto.name(onto.resolve(doc_type))
        except UnknownConcept as exc:
            raise EventError(
                f"document type {doc_type} is not a concept ({exc})", f"XML line {root.sourceline}"
            ) from None
        ident = next((x for x in root if isinstance(x.tag, str) and _local(x) == "ID"), None)
        if ident is not None and ident.text:
            head["Identifier"] = ident.text.strip()
        issue = _first(root, "IssueDate")
        time = issue.text.strip() if issue is not None and issue.text else None
        if time:
            head["DateOfIssue"] = time
        total = next(
            (x for x in root if isinstance(x.tag, str) and _local(x) == "LineExtensionTotalAmount"),
            None,
        )
        if total is not None:
            head["TotalAmount"] = _amount(total, f"XML line {total.sourceline}")
    except EventError as exc:
        problem = str(exc)
    lines = [
        x
        for x in root.iter()
        if isinstance(x.tag, str)
        and _local(x) in _LINES
        and not any(_local(a) in _LINES for a in x.iterancestors())
    ]
    for position, line in enumerate(lines or [root], 1):  # a document without lines: one
        if problem:
            yield _refused(name, position, problem, line, model)
            continue
        where = f"XML line {line.sourceline}"
        try:
            value = dict(head)
            q = (
                next(
                    (
                        x
                        for x in line.iter()
                        if isinstance(x.tag, str) and _local(x).endswith("Quantity")
                    ),
                    None,
                )
                if lines
                else None
            )
            if q is not None:
                code = q.get("quantityUnitCode") or q.get("unitCode") or ""
                try:
                    unit = canonical_unit(UNECE.get(code, code)) if code else None
                except ConversionError:
                    unit = None
                member = _DIMENSION_CONCEPT.get(dimensionality(unit)) if unit else None
                if member is None:
                    what = (
                        f"quantity {(q.text or '').strip()} {code!r} is not a unit of measure"
                        if code
                        else f"quantity {(q.text or '').strip()} has no unit code"
                    )
                    raise EventError(
                        f"{_local(q)}: {what}; the line is not converted "
                        "(its quantity would be lost)",
                        where,
                    )
                value[member] = {"value": _number(q.text, where), "context": {"unit": unit}}
            price = _first(line, "PriceAmount") if lines else None
            if price is not None:
                value["UnitPrice"] = _amount(price, where)
            obj: dict[str, Any] = {"concept": concept, "value": value}
            if time:
                obj["time"] = time
            yield Event(model.name, name, position, model.parse_event(obj))
        except PubsiftError as exc:
            yield _refused(name, position, str(exc), line, model)


def _refused(
    name: str, position: int, message: str, line: etree._Element, model: ConceptsModel
) -> Quarantined:
    text = etree.tostring(line, encoding="unicode", with_tail=False)[:1000]
    return Quarantined(
        name, position, "concept-enrichment", " ".join(message.split()), excerpt(text), model.name
    )


def _number(text: str | None, where: str) -> float | int:
    try:
        return parse_number(text or "")
    except ValueError as exc:
        raise EventError(str(exc), where) from None


def _amount(el: etree._Element, where: str) -> dict[str, Any]:
    cur = el.get("amountCurrencyID") or el.get("currencyID")
    if not cur:
        raise EventError(f"{_local(el)}: an amount without currencyID", where)
    return {"value": _number(el.text, where), "context": {"currency": cur}}


# -- subscriber side ----------------------------------------------------------------------
class Subscriber:
    """A subscriber's edge: subscriptions in its vocabulary and context; matching objects
    delivered converted back (ready to process)."""

    def __init__(
        self,
        model: ConceptsModel,
        vocabulary: Mapping[str, str] | None = None,
        context: ClientContext | Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.agreement = VocabularyAgreement(model, vocabulary, context)
        self.filters: list[ConceptFilter] = []

    def subscribe(self, spec: Any) -> ConceptFilter:
        f = self.agreement.subscribe(spec)
        self.filters.append(f)
        return f

    def receive(self, e: SemanticObject) -> list[Delivery]:
        """The deliveries of ``e`` for each subscription it matches (once per filter)."""
        return [
            self.agreement.deliver(f, e)
            for f in dict.fromkeys(self.filters)
            if self.model.matches(f, e)
        ]


__all__ = ["PUBLISHER_SETTINGS", "Publisher", "Subscriber", "publisher_for", "ubl_semantic_objects"]
