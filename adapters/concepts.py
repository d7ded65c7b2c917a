"""Adapters of the concepts model at the edges (Cilia et al., 003 §4.2: "At the publisher
side they are responsible for resolving vocabulary issues and for enriching message content.
At the subscriber side they are in charge of transforming/converting message content
according to the subscriber preferences").

* :class:`Publisher` enriches plain records (JSON objects, CSV rows) into semantic objects
  with the publisher's declared vocabulary and context.
* :func:`read_csv` does that for a CSV file (e.g. the S&P 500 quotes, prices in USD).
* :func:`ubl_events` reads UBL 1.0 business documents (orders, invoices, despatch advice):
  one semantic object per line, amounts in their ``currencyID`` and quantities in their
  ``unitCode`` (UN/ECE codes mapped to pint units).
* :class:`Subscriber` is the subscriber side: subscriptions in the subscriber's vocabulary
  and context, deliveries converted back (:mod:`pubsift.models.concepts.vocabulary`).
"""
from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lxml import etree

from pubsift.core.errors import ConversionError, EventError
from pubsift.models.concepts.context import ClientContext
from pubsift.models.concepts.filters import ConceptFilter
from pubsift.models.concepts.model import ConceptsModel
from pubsift.models.concepts.ontology import MONEY, QUANTITY, UnknownConcept
from pubsift.models.concepts.semantic_objects import SemanticObject
from pubsift.models.concepts.units import UNECE, canonical_unit, dimensionality
from pubsift.models.concepts.vocabulary import Delivery, Vocabulary, VocabularyAgreement


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
            raise ConversionError(f"a vocabulary maps local terms to concepts (a JSON "
                                  f"object), not {type(self.vocabulary).__name__}")
        self._terms = Vocabulary(dict(self.vocabulary)).resolved(self.model.ontology)
        self._concept = self._resolve(self.concept, "concept")

    def _resolve(self, term: str, where: str) -> str:
        if term in self._terms:
            return self._terms[term]
        try:
            return self.model.ontology.resolve(term)
        except UnknownConcept as exc:
            raise EventError(f"field {term!r} is not in the publisher's vocabulary nor the "
                             f"ontology ({exc})", where) from None

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
            ctx = self.context.context_for(onto, c).to_json()
            value[onto.name(c)] = {"value": _typed(raw, kind, f"{where}.{name}"),
                                   "context": ctx}
        obj = {"concept": onto.name(self._concept), "value": value}
        if time:
            obj["time"] = time
        return self.model.parse_event(obj)


def _typed(raw: Any, kind: str, where: str) -> Any:
    """CSV fields are strings: numbers for amounts and quantities."""
    if kind in (QUANTITY, MONEY) and isinstance(raw, str):
        try:
            v = float(raw)
        except ValueError:
            raise EventError(f"{raw!r} is not a number", where) from None
        if not math.isfinite(v):
            raise EventError(f"{raw!r} is not a finite number", where)
        return int(v) if v.is_integer() and "." not in raw and "e" not in raw.lower() else v
    return raw


def read_csv(path: str | Path, publisher: Publisher, limit: int | None = None
             ) -> Iterator[SemanticObject]:
    """The rows of a CSV file enriched by ``publisher``; an error names the line."""
    name = Path(path).name
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = csv.DictReader(fh)
            count = 0
            while limit is None or count < limit:
                try:
                    row = next(rows)
                except StopIteration:
                    return
                except (csv.Error, UnicodeDecodeError) as exc:
                    raise EventError(f"unreadable CSV: {exc}", f"{name}:{rows.line_num + 1}") \
                        from None
                count += 1
                yield publisher.enrich(row, where=f"{name}:{rows.line_num}")
    except OSError as exc:
        raise EventError(f"cannot read {path}: {exc.strerror or exc}", str(path)) from None


# -- UBL ----------------------------------------------------------------------------------
_CBC = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-1.0"
_LINES = {"OrderLine", "InvoiceLine", "DespatchLine", "ReceiptLine", "LineItem"}
_DIMENSION_CONCEPT = {"[mass]": "NetWeight", "[length]": "Distance", "[]": "ItemCount",
                      "[length] ** 3": "Volume"}


@dataclass
class UBLReport:
    """What :func:`ubl_events` read and what it could not enrich (kept, not lost)."""

    events: list[SemanticObject] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _parser() -> etree.XMLParser:
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                           huge_tree=False, remove_comments=True)


def _local(el: etree._Element) -> str:
    return etree.QName(el).localname


def _first(el: etree._Element, name: str) -> etree._Element | None:
    for x in el.iter():
        if isinstance(x.tag, str) and _local(x) == name:
            return x
    return None


def ubl_events(path: str | Path, model: ConceptsModel) -> UBLReport:
    """One semantic object per document line: concept = the document type (Order,
    Invoice, DespatchAdvice, ...), members Identifier, DateOfIssue, TotalAmount (the
    document's LineExtensionTotalAmount), UnitPrice (the line's PriceAmount) and the line's
    quantity as NetWeight / Distance / ItemCount by the dimension of its unit code; the
    event's time is the IssueDate. Quantities whose unit code is not a unit of measure
    (CTN, PKG) are reported in ``skipped``."""
    path = Path(path)
    try:
        root = etree.parse(str(path), _parser()).getroot()
    except etree.XMLSyntaxError as exc:
        raise EventError(f"not well-formed XML: {exc}", str(path)) from None
    except OSError as exc:
        raise EventError(f"cannot read {path}: {exc}", str(path)) from None
    onto = model.ontology
    doc_type = _local(root)
    try:
        concept = onto.name(onto.resolve(doc_type))
    except UnknownConcept as exc:
        raise EventError(f"document type {doc_type} is not a concept ({exc})", str(path)) \
            from None
    report = UBLReport()
    head: dict[str, Any] = {}
    ident = next((x for x in root if isinstance(x.tag, str) and _local(x) == "ID"), None)
    if ident is not None and ident.text:
        head["Identifier"] = ident.text.strip()
    issue = _first(root, "IssueDate")
    time = issue.text.strip() if issue is not None and issue.text else None
    if time:
        head["DateOfIssue"] = time
    total = next((x for x in root if isinstance(x.tag, str)
                  and _local(x) == "LineExtensionTotalAmount"), None)
    if total is not None:
        head["TotalAmount"] = _amount(total, f"{path.name}:{total.sourceline}")
    lines = [x for x in root.iter() if isinstance(x.tag, str) and _local(x) in _LINES
             and not any(_local(a) in _LINES for a in x.iterancestors())]
    for line in lines or [root]:  # a document without lines is one event
        where = f"{path.name}:{line.sourceline}"
        value = dict(head)
        q = next((x for x in line.iter() if isinstance(x.tag, str)
                  and _local(x).endswith("Quantity")), None) if lines else None
        if q is not None:
            code = q.get("quantityUnitCode") or q.get("unitCode") or ""
            try:
                unit = canonical_unit(UNECE.get(code, code)) if code else None
            except ConversionError:
                unit = None
            member = _DIMENSION_CONCEPT.get(dimensionality(unit)) if unit else None
            if member is None:
                report.skipped.append(f"{where}: quantity {q.text} {code!r} is not a unit "
                                      "of measure")
            else:
                value[member] = {"value": _number(q.text, where), "context": {"unit": unit}}
        price = _first(line, "PriceAmount") if lines else None
        if price is not None:
            value["UnitPrice"] = _amount(price, where)
        obj: dict[str, Any] = {"concept": concept, "value": value}
        if time:
            obj["time"] = time
        report.events.append(model.parse_event(obj))
    return report


def _number(text: str | None, where: str) -> float | int:
    try:
        v = float((text or "").strip())
    except ValueError:
        raise EventError(f"{text!r} is not a number", where) from None
    return int(v) if v.is_integer() else v


def _amount(el: etree._Element, where: str) -> dict[str, Any]:
    cur = el.get("amountCurrencyID") or el.get("currencyID")
    if not cur:
        raise EventError("an amount without currencyID", where)
    return {"value": _number(el.text, where), "context": {"currency": cur}}


# -- subscriber side ----------------------------------------------------------------------
class Subscriber:
    """A subscriber's edge: subscriptions in its vocabulary and context; matching objects
    delivered converted back (ready to process)."""

    def __init__(self, model: ConceptsModel, vocabulary: Mapping[str, str] | None = None,
                 context: ClientContext | Mapping[str, Any] | None = None) -> None:
        self.model = model
        self.agreement = VocabularyAgreement(model, vocabulary, context)
        self.filters: list[ConceptFilter] = []

    def subscribe(self, spec: Any) -> ConceptFilter:
        f = self.agreement.subscribe(spec)
        self.filters.append(f)
        return f

    def receive(self, e: SemanticObject) -> list[Delivery]:
        """The deliveries of ``e`` for each subscription it matches (once per filter)."""
        return [self.agreement.deliver(f, e) for f in dict.fromkeys(self.filters)
                if self.model.matches(f, e)]


__all__ = ["Publisher", "Subscriber", "UBLReport", "read_csv", "ubl_events"]
