"""One XML input being read (:class:`Reading`): its model's converter, limits and split
element, and how each outcome is made (a whole-document quarantine record at the right
position, the event of a document or of an item, refusals of entities and depth, the
selector of the items). The phases (:mod:`.documents`, :mod:`.split`, :mod:`.salvaging`,
:mod:`.streamed`) are functions of a Reading."""

from __future__ import annotations

from typing import Any, cast

from lxml import etree
from pubsift.adapters.readers.converting import converter
from pubsift.adapters.readers.inputs import Input
from pubsift.adapters.readers.limits import ReadLimits
from pubsift.adapters.readers.outcomes import Event, Quarantined, excerpt
from pubsift.adapters.readers.xmlfiles.feeds import KINDS, detect, kind_of
from pubsift.adapters.readers.xmlfiles.problems import (
    declaration,
    refused_reference,
    too_deep_message,
)
from pubsift.adapters.readers.xmlfiles.splitting import (
    Selector,
    Skeleton,
    SplitName,
    UndeclaredPrefix,
)
from pubsift.core.errors import EventError
from pubsift.core.model import FilterModel
from pubsift.models.xml import (
    XmlModel,
    check_depth,
    check_entities,
    check_entity_declarations,
    event_of_tree,
    hardened_parser,
    parser_depth_ceiling,
)

#: the item selector of each feed kind
_FEEDS = {k.name: Selector.of_feed(k) for k in KINDS.values() if k.is_feed}
#: the most UTF-8 bytes an item event's serialization takes per byte of the well-formed
#: document without internal DTD subset it was split from: a ``"`` in an attribute value
#: quoted with ``'`` (1 byte) is written ``&quot;`` (6); every other construct grows less
#: (``>`` -> ``&gt;``, a character of a one-byte encoding -> at most 3 bytes of UTF-8,
#: character references stay as long; tested with such content in
#: tests/adapters/test_xml_reader_bound.py). An internal subset can default namespace
#: declarations (``<!ATTLIST item xmlns:a CDATA "...">``) onto every element, with no
#: bound: such events are measured exactly.
SERIALIZED_PER_BYTE = 6


class Reading:
    """One input being read: the model's converter, the limits, the split element."""

    def __init__(self, inp: Input, model: FilterModel, limits: ReadLimits) -> None:
        self.inp = inp
        self.name = inp.name
        self.model = model
        self.limits = limits
        self.split = SplitName.parse(inp.source.split) if inp.source.split else None
        self.convert = converter(model, inp.source)
        # the xml model with the reader's own parse limits: an event is built from the
        # checked tree itself (see fast_event)
        self.fast = isinstance(model, XmlModel) and (
            model.limits is limits.xml or model.limits == limits.xml
        )
        # the bytes of the strictly parsed document without internal DTD subset the items
        # come from (None: another tree, whose events are measured exactly)
        self.source_bytes: int | None = None
        # split per item (a feed, a split element): whole-document problems at position 0
        self.splits = self.split is not None or model.name == "concepts"

    # -- outcomes --------------------------------------------------------------------------
    def whole(self, reason: str, message: str, raw: Any = "") -> Quarantined:
        """The whole document quarantined: at position 1 when it is read whole (the id its
        event would have), at 0 when it is a feed or split document none of whose items
        could be delimited."""
        return Quarantined(
            self.name, 0 if self.splits else 1, reason, message, excerpt(raw), self.model.name
        )

    def learn(self, head: bytes) -> None:
        """Whether a document that does not parse is split (a named split element, the
        concepts model's lines, or a feed root in its first bytes): its whole-document
        problems are then at 0."""
        kind = kind_of(head, self.limits.xml)
        if kind is None:
            try:  # the first bytes may hold an error before the parser gives events
                root = etree.fromstring(head, hardened_parser(self.limits.xml, recover=True))
            except etree.XMLSyntaxError:
                root = None
            # a parsed element's tag is text (types-lxml also allows bytes and QName)
            kind = None if root is None else detect(root.tag, root.nsmap)  # type: ignore[arg-type]
        # the concepts model splits a document into its lines (ubl_semantic_objects)
        self.splits = (
            self.split is not None
            or self.model.name == "concepts"
            or (kind is not None and kind.is_feed)
        )

    def event(self, position: int, raw: str | bytes) -> Event | Quarantined:
        """The model's event of one document text (``model.parse_event``), or
        ``too-large``."""
        return self.too_large(position, raw) or self.convert(raw, self.name, position)

    def too_large(self, position: int, raw: str | bytes) -> Quarantined | None:
        max_bytes = self.limits.xml.max_bytes
        size = len(raw)
        if isinstance(raw, str) and size * 4 > max_bytes:
            size = len(raw.encode("utf-8"))
        if size <= max_bytes:
            return None
        return Quarantined(
            self.name,
            position,
            "too-large",
            f"event of {size} bytes > ReadLimits.xml.max_bytes {max_bytes}",
            excerpt(raw),
            self.model.name,
        )

    def fast_event(self, position: int, root: etree._Element) -> Event | Quarantined:
        """The xml model's event of a tree lxml built under the same hardened settings and
        limits as the model's, from a document that passed the same checks (a copy of its
        skeleton with one of its items): the XmlEvent ``model.parse_event`` would build
        from its serialization, without parsing that again (tested equal to it on every
        real feed). The tree is handed over to the event, which serializes it when first
        asked; it is serialized here only when its size could exceed
        ``ReadLimits.xml.max_bytes`` (:data:`SERIALIZED_PER_BYTE`)."""
        size = self.source_bytes
        if size is not None and size * SERIALIZED_PER_BYTE <= self.limits.xml.max_bytes:
            return Event(self.model.name, self.name, position, event_of_tree(root))
        xml = etree.tostring(root, encoding="unicode", with_tail=False)
        return self.too_large(position, xml) or Event(
            self.model.name, self.name, position, event_of_tree(root, xml)
        )

    def document_event(self, root: etree._Element, data: bytes) -> Event | Quarantined:
        """The event of a whole document, sized by its bytes as ``parse_event`` does."""
        if not self.fast:
            return self.event(1, data)
        return self.too_large(1, data) or Event(self.model.name, self.name, 1, event_of_tree(root))

    def item_event(
        self, skeleton: Skeleton, index: int, el: etree._Element, references: bool = True
    ) -> Event | Quarantined:
        """The event of item ``index`` (``references=False``: the caller knows the item
        holds no entity reference)."""
        # (iter(Entity) yields entities; types-lxml types them as elements)
        ref = cast(
            "etree._Entity | None", next(el.iter(etree.Entity), None) if references else None
        )
        if ref is not None:
            return Quarantined(
                self.name,
                index + 1,
                "xml-entity",
                refused_reference(ref),
                f"&{ref.name};",
                self.model.name,
            )
        if self.fast:
            return self.fast_event(
                index + 1, skeleton.tree_with(index, el, last=index == len(skeleton) - 1)
            )
        return self.event(index + 1, skeleton.text_with(index, el))

    def too_deep(self, position: int, el: etree._Element) -> Quarantined:
        return Quarantined(
            self.name,
            position,
            "xml-too-deep",
            f"item {too_deep_message(self.limits.xml.max_depth)}",
            excerpt(etree.tostring(el, with_tail=False)[:200]),
            self.model.name,
        )

    def depth_checked(self) -> bool:
        """Whether depth is checked after parsing (a limit below libxml2's own)."""
        return self.limits.xml.max_depth < parser_depth_ceiling(self.limits.xml)

    def refused(
        self, root: etree._Element, references: bool = True, depth: bool = True
    ) -> Quarantined | None:
        """``xml-entity`` or ``xml-too-deep`` for a parsed document, else None
        (``references=False``: entity references are left to the caller; ``depth=False``:
        depth too, checked per item)."""
        try:
            (check_entities if references else check_entity_declarations)(root)
        except EventError as exc:
            return self.whole("xml-entity", str(exc), declaration(root))
        if depth and self.depth_checked():
            try:
                check_depth(root, self.limits.xml)
            except EventError as exc:
                where = f" (at {exc.where})" if exc.where else ""
                return self.whole(
                    "xml-too-deep", too_deep_message(self.limits.xml.max_depth) + where
                )
        return None

    def references(self, root: etree._Element) -> Quarantined | None:
        """``xml-entity`` for a tree (a document, a skeleton) that keeps an entity
        reference, else None."""
        ref = cast("etree._Entity | None", next(root.iter(etree.Entity), None))  # (as above)
        return (
            None
            if ref is None
            else self.whole("xml-entity", refused_reference(ref), f"&{ref.name};")
        )

    def selector(self, root_tag: str, nsmap: dict) -> Selector | Quarantined | None:
        """How the document splits: a Selector, None (read whole), or ``xml-no-split``."""
        if self.split is not None:
            try:
                return Selector(self.split.tag(self.inp.source.namespaces, nsmap))
            except UndeclaredPrefix as exc:
                return self.whole("xml-no-split", str(exc))
        kind = detect(root_tag, nsmap)
        return _FEEDS.get(kind.name)
