"""UBL 1.0 business documents (orders, invoices, despatch advice) as semantic objects of the
concepts model: the last phase of the XML reader for a UBL file read with
``model = "concepts"`` (docs/adapters.md §2; docs/concepts.md, "Vocabulary agreement and
the edges"): one semantic object per document line, amounts in their ``currencyID`` and
quantities in their ``unitCode`` (UN/ECE codes mapped to pint units)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lxml import etree
from pubsift.adapters.readers.cells import parse_number
from pubsift.adapters.readers.outcomes import Event, Quarantined, excerpt
from pubsift.core.errors import ConversionError, EventError, PubsiftError
from pubsift.models.concepts import (
    UNECE,
    ConceptsModel,
    UnknownConcept,
    canonical_unit,
    dimensionality,
)

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


__all__ = ["ubl_semantic_objects"]
