"""The ``xml`` reader (docs/adapters.md §2): feeds into one event per item or entry, other XML
into one event per document or per split element, all parsed only with the xml model's
hardened settings (:func:`pubsift.models.xml.hardened_options`).

What it gives, per file:

* **Feeds** (RSS 2.0, RSS 1.0 and 0.90, Atom 1.0 and 0.3; :mod:`.feeds`): one event per
  item, position = its 1-based index in document order; the items are the outermost
  item/entry elements wherever they are in the feed (an RSS ``item`` directly under ``rss``
  too); the event is the feed with every other item removed (:mod:`.splitting`). A feed
  without items gives no event (like a CSV file with only its header: nothing to route,
  nothing lost).
* **Other XML**: one event, position 1, unless the source names a split element; then one
  event per outermost split element, split like a feed. A document without that element is
  quarantined at position 0 with reason ``xml-no-split`` (the source expected it: a wrong
  prefix or name is not silently read as nothing). A root that is itself the split element
  is one event.
* **Entity references**: a reference to an entity an external DTD would declare (RSS
  0.91's ``&eacute;`` under the Netscape DOCTYPE) is refused, never resolved: the item
  holding it is quarantined (``xml-entity`` at its position), or the whole document when it
  is outside the items.
* **The concepts model**: the parsed document goes to
  :func:`pubsift.adapters.readers.xmlfiles.ubl.ubl_semantic_objects` (one semantic object per UBL
  line).

**Positions of whole-document problems** (docs/adapters.md §3): a document read
whole (not a feed, no split element named) is quarantined at position 1 for every problem,
the id its event would have had; a feed or split document none of whose items could be
delimited is quarantined at position 0. A document that does not parse counts as a feed
when its first bytes (read strictly, else in recovery mode) show a feed root.

Refusals: an entity declaration or refused reference (``xml-entity``), nesting beyond
``ReadLimits.xml.max_depth`` (``xml-too-deep``: the item, or the whole document when the
metadata is too deep), bytes that are not text in the declared encoding (``encoding``;
also NUL bytes without a byte-order mark: UTF-16/32 without a BOM), a document libxml2
cannot hold (``too-large``), an event larger than ``ReadLimits.xml.max_bytes``
(``too-large`` at the event's position), and XML that is not well-formed (``xml-syntax``,
with line and column). Messages are one line, in our words where libxml2's name its own
options (the depth limit says how to raise ``ParseLimits.max_depth``). A feed or split
document that is not well-formed keeps its intact items, each exactly as a strict parse
gives it: the broken ones are quarantined at their positions (:mod:`.salvage` says exactly
how, for any line layout and encoding). A stream's own error (the archive reader's bomb
guard raises ReadError) passes through lxml unchanged.

Events are the model's: ``model.parse_event`` of the event's text (an EventError is
quarantined as ``invalid-event``). For the xml model with the reader's own parse limits
(``model.limits == ReadLimits.xml``, the default) the reader has already parsed and checked
the document exactly as ``parse_event`` would, so the event is built from that tree (one
copy of the skeleton per item) instead of serializing and parsing it again: the same
``XmlEvent``, tested equal on every real feed, in half the time or less. The event
serializes its tree on first use (matching needs only the tree); the reader serializes an
item's tree itself only when it could exceed ``xml.max_bytes`` (:data:`SERIALIZED_PER_BYTE`
times the document's bytes; always for a document with an internal DTD subset).

Files up to ``ReadLimits.stream_above`` bytes are parsed in memory; larger ones are
streamed twice with ``iterparse`` (skeleton, then items), memory bounded by the skeleton
and one item, and give the same events. Their skeleton is bounded too: more than twice
``xml.max_bytes`` outside the split elements (metadata no event could hold, or split
elements that are rare or absent) ends the document with ``too-large``. A streamed feed or
split document is read up to its first error: when that error is inside an item, the items
before it are events (their metadata is the metadata before that item: what follows is not
read), the broken item is quarantined at its position, and the rest of the document in one
more record at the next position (none when the document ends in that item); an error
outside the items quarantines the document whole. Items too deep for a lower
``max_depth`` are quarantined one by one. A streamed document read whole (not split) is
read in memory when within ``xml.max_bytes``, else ``too-large``.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, BinaryIO, cast

from lxml import etree
from pubsift.adapters.readers.converting import converter
from pubsift.adapters.readers.inputs import Input
from pubsift.adapters.readers.limits import ReadLimits
from pubsift.adapters.readers.outcomes import Event, Quarantined, excerpt
from pubsift.adapters.readers.registry import Reader, ReadError
from pubsift.adapters.readers.xmlfiles.feeds import KINDS, detect, kind_of
from pubsift.adapters.readers.xmlfiles.salvage import Lost, XmlProblem, salvage
from pubsift.adapters.readers.xmlfiles.splitting import (
    BrokenStream,
    Selector,
    Skeleton,
    SplitName,
    UndeclaredPrefix,
    stream_items,
    stream_skeleton,
)
from pubsift.core.errors import EventError
from pubsift.core.model import FilterModel
from pubsift.models.xml import (
    MAX_DEPTH_CEILING,
    ParseLimits,
    XmlModel,
    check_depth,
    check_entities,
    check_entity_declarations,
    event_of_tree,
    hardened_iterparse,
    hardened_options,
    hardened_parser,
    parser_depth_ceiling,
)

_E = etree.ErrorTypes
#: libxml2 errors about the bytes' encoding (invalid bytes, unknown or unsupported names)
ENCODING_ERRORS = frozenset(
    getattr(_E, n)
    for n in (
        "ERR_INVALID_ENCODING",
        "ERR_UNKNOWN_ENCODING",
        "ERR_UNSUPPORTED_ENCODING",
        "ERR_ENCODING_NAME",
        "ERR_MISSING_ENCODING",
        "I18N_CONV_FAILED",
        "I18N_NO_HANDLER",
        "IO_ENCODER",
    )
    if hasattr(_E, n)
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
_WHERE_SUFFIX = re.compile(r", line \d+, column \d+\Z")
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


def syntax_problem(
    exc: etree.XMLSyntaxError, limits: ParseLimits | None = None
) -> tuple[str, XmlProblem]:
    """The quarantine reason and the located problem of a document lxml refused, in one
    line and in our own words where libxml2's are about its options."""
    msg = " ".join(_WHERE_SUFFIX.sub("", (exc.msg or str(exc)).strip()).split())
    line, column = exc.position if exc.position else (exc.lineno or 0, 0)
    if exc.code in ENCODING_ERRORS:
        return "encoding", XmlProblem(line or 0, column or 0, msg)
    if exc.code == _E.ERR_ENTITY_LOOP or "amplification" in msg:
        return "xml-entity", XmlProblem(line or 0, column or 0, msg)
    if "Excessive depth" in msg:
        depth = (limits or ParseLimits()).max_depth
        ceiling = parser_depth_ceiling(limits or ParseLimits())
        return "xml-too-deep", XmlProblem(
            line or 0, column or 0, too_deep_message(min(depth, ceiling))
        )
    if exc.code == _E.ERR_RESOURCE_LIMIT:
        return "too-large", XmlProblem(line or 0, column or 0, msg)
    return "xml-syntax", XmlProblem(line or 0, column or 0, msg)


def too_deep_message(limit: int) -> str:
    """Nesting beyond ``limit`` levels, and how to accept it."""
    if limit >= MAX_DEPTH_CEILING:
        return (
            f"nested more than {limit} levels deep, the most libxml2 parses (no setting accepts it)"
        )
    return (
        f"nested more than {limit} levels deep (raise ReadLimits.xml = ParseLimits("
        f"max_depth=...), at most {MAX_DEPTH_CEILING}, to accept it)"
    )


def _not_text(data: bytes) -> str | None:
    """Why bytes that start without a byte-order mark cannot be XML text in an
    ASCII-compatible encoding (NUL bytes: UTF-16/32 without a BOM), else None."""
    if data.startswith(_BOMS) or b"\x00" not in data[:512]:
        return None
    return (
        "NUL bytes: the text looks like UTF-16 or UTF-32 without a byte-order mark "
        "or encoding declaration (add a BOM or declare the encoding)"
    )


def _refused_reference(ref: etree._Entity) -> str:
    # strict parsing keeps one only under a DOCTYPE naming an external DTD (never loaded)
    return (
        f"reference to entity &{ref.name}; (line {ref.sourceline}) refused: only "
        "the predefined entities are read, no DTD is loaded"
    )


def _line_of(data: bytes, line: int, column: int = 0) -> bytes:
    """The bytes around (``line``, ``column``): the line, or a window around the column
    of a long line (a one-line feed)."""
    if line < 1:
        return data[:200]
    start = 0
    for _ in range(line - 1):
        start = data.find(b"\n", start) + 1
        if start == 0:
            return b""
    end = data.find(b"\n", start)
    end = end if end >= 0 else len(data)
    if column > 150 and end - start > 200:
        start = min(start + column - 100, end)
    return data[start : min(end, start + 200)]


def _stream_line(fh: BinaryIO, line: int, column: int) -> bytes:
    """:func:`_line_of` of a stream, reading it up to there (memory: one chunk and the
    window)."""
    n, tail = 1, b""
    while True:
        chunk = fh.read(1 << 20)
        if not chunk:
            return _line_of(tail, 1, column) if n == line else b""
        buf = tail + chunk
        while n < line:
            at = buf.find(b"\n")
            if at < 0:
                break
            buf = buf[at + 1 :]
            n += 1
        if n < line:
            tail = b""
            continue
        tail = buf
        if len(tail) >= column + 200 or b"\n" in tail[column:]:
            return _line_of(tail, 1, column)


class _Reading:
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
                _refused_reference(ref),
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
            return self.whole("xml-entity", str(exc), _declaration(root))
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
            else self.whole("xml-entity", _refused_reference(ref), f"&{ref.name};")
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

    # -- in memory ---------------------------------------------------------------------------
    def from_bytes(self, data: bytes) -> Iterator[Event | Quarantined]:
        try:
            root = etree.fromstring(data, _parser(self.limits.xml))
        except etree.XMLSyntaxError as exc:
            yield from self.salvage(data, exc)
            return
        if root.getroottree().docinfo.internalDTD is None:
            self.source_bytes = len(data)
        if self.model.name == "concepts":
            bad = self.refused(root, references=False) or self.references(root)
            if bad is not None:
                yield bad
            else:
                yield from self.concepts(root)
            return
        sel = self.selector(root.tag, root.nsmap)  # type: ignore[arg-type]  # (text)
        if isinstance(sel, Quarantined):
            yield sel
            return
        if sel is None or root.tag == sel.tag:
            self.splits = False
            # entity references are refused per item (one in the metadata: the document)
            yield (
                self.refused(root, references=False)
                or self.references(root)
                or self.document_event(root, data)
            )
            return
        self.splits = True
        bad = self.refused(root, references=False, depth=False)
        if bad is not None:
            yield bad
            return
        yield from self.items(root, sel, {}, None)

    def items(
        self,
        root: etree._Element,
        sel: Selector,
        broken: dict[int, tuple[str, XmlProblem]],
        count: int | None,
        shown: dict[int, str] | None = None,
    ) -> Iterator[Event | Quarantined]:
        """Split events of a strictly parsed document; with ``count``, it is a broken
        document's salvaged rest (:mod:`.salvage`): ``count`` items in the original, the
        ``broken`` ones (0-based index -> reason and problem) cut out of ``root``."""
        items = sel.find(root)
        if not items and not broken:
            if self.split is not None:
                yield self.whole(
                    "xml-no-split", f"no {self.split.text} element ({sel.tag}) in the document"
                )
            return
        deep: set[int] = set()
        if self.depth_checked():
            deep = {
                k for k, el in enumerate(items) if _too_deep_item(el, self.limits.xml.max_depth)
            }
        # one look for entity references in the whole tree (there are none, as a rule)
        references = next(root.iter(etree.Entity), None) is not None
        skeleton = Skeleton(root)
        for el in items:
            skeleton.take(el)
        bad = (self.references(root) if references else None) or self.refused(
            root, references=False
        )
        if bad is not None:
            yield bad
            return
        total = len(items) if count is None else count
        good = iter(range(len(items)))
        for position in range(1, total + 1):
            if position - 1 in broken:
                reason, problem = broken[position - 1]
                yield Quarantined(
                    self.name,
                    position,
                    reason,
                    f"item not well-formed: {problem}"
                    if reason == "xml-syntax"
                    else f"item {problem}",
                    excerpt((shown or {}).get(position - 1, "")),
                    self.model.name,
                )
                continue
            k = next(good)
            if k in deep:
                yield self.too_deep(position, items[k])
            elif count is None:
                yield self.item_event(skeleton, k, items[k], references)
            else:
                out = self.item_event(skeleton, k, items[k], references)
                if out.position != position:  # the k-th good item is item ``position``
                    out = _moved(out, position)
                yield out

    def salvage(self, data: bytes, exc: etree.XMLSyntaxError) -> Iterator[Event | Quarantined]:
        """A document the strict parser refused: whole-document quarantine, or its intact
        items, strictly parsed, when only items are broken (:mod:`.salvage`)."""
        reason, problem = syntax_problem(exc, self.limits.xml)
        if reason == "xml-syntax" and (not_text := _not_text(data)):
            reason, problem = "encoding", XmlProblem(problem.line, problem.column, not_text)
        self.learn(data[:65536])
        raw = _line_of(data, problem.line, problem.column)
        whole = self.whole(
            reason, f"not well-formed: {problem}" if reason == "xml-syntax" else str(problem), raw
        )
        if (
            reason not in ("xml-syntax", "xml-too-deep")
            or self.model.name == "concepts"
            or not self.splits
        ):
            yield whole
            return
        # recovery only delimits the items; an item beyond libxml2's plain depth (256)
        # ends its parse, so that one delimits with huge_tree (2048 levels), still
        # hardened otherwise; the events come from strict parses with the real limits
        recover = hardened_parser(
            self.limits.xml, recover=True, huge=True if reason == "xml-too-deep" else None
        )
        # which elements are items is told by the recovered root (a named split: its tag)
        sels: list[Selector | None] = []

        def find(root: etree._Element) -> list:
            if not sels:
                sel = self.selector(root.tag, root.nsmap)  # type: ignore[arg-type]  # (text)
                sels.append(sel if isinstance(sel, Selector) and root.tag != sel.tag else None)
            return [] if sels[0] is None else sels[0].find(root)

        found = salvage(
            data,
            find,
            hardened_options(self.limits.xml),
            recover,
            lambda e: syntax_problem(e, self.limits.xml),
        )
        if isinstance(found, Lost):
            lost = found.problem
            if found.outside:
                yield self.whole(
                    reason,
                    (
                        "not well-formed outside the items: "
                        if reason == "xml-syntax"
                        else "outside the items: "
                    )
                    + str(lost),
                    _line_of(data, lost.line, lost.column),
                )
            else:
                yield self.whole(
                    reason, f"{whole.message} (its items cannot be read apart: {lost.message})", raw
                )
            return
        bad = self.refused(found.root, references=False, depth=False)
        if bad is not None:
            yield bad
            return
        assert sels[0] is not None  # items were found with it
        yield from self.items(found.root, sels[0], found.broken, found.count, found.shown)
        if found.truncated is not None:
            yield Quarantined(
                self.name,
                found.count + 1,
                "xml-syntax",
                (
                    f"the document ends early ({found.truncated}): its items up to there are "
                    "read as if it were closed there, anything after is missing"
                ),
                excerpt(data[-200:]),
                self.model.name,
            )

    def concepts(self, root: etree._Element) -> Iterator[Event | Quarantined]:
        # the concepts enrichment (adapters/readers/xmlfiles/ubl.py); imported when first needed
        from pubsift.adapters.readers.xmlfiles.ubl import ubl_semantic_objects

        # (for the concepts model only)
        yield from ubl_semantic_objects(root, self.model, self.name)  # type: ignore[arg-type]

    # -- streamed ----------------------------------------------------------------------------
    def from_stream(self) -> Iterator[Event | Quarantined]:
        options = hardened_options(self.limits.xml)
        try:
            with self.inp.open() as fh:
                root = next(
                    (el for _, el in hardened_iterparse(fh, options, events=("start",))), None
                )
                if root is None:
                    yield self.whole("xml-syntax", "empty XML document")
                    return
                tag, nsmap = root.tag, dict(root.nsmap)
                self.splits = self.split is not None or detect(tag, nsmap).is_feed
                # the first chunk's items may be in the tree: their references are theirs
                bad = self.refused(root, references=False, depth=False)
        except etree.XMLSyntaxError as exc:
            with self.inp.open() as fh:
                head = _read_at_most(fh.read, 65536)
            self.learn(head)
            yield self.stream_problem(exc)
            return
        if bad is not None:
            yield bad
            return
        sel = None if self.model.name == "concepts" else self.selector(tag, nsmap)
        if isinstance(sel, Quarantined):
            yield sel
        elif sel is None or tag == sel.tag:
            self.splits = False
            yield from self.whole_streamed()
        else:
            self.splits = True
            yield from self.split_streamed(sel, options)

    def stream_problem(self, exc: etree.XMLSyntaxError) -> Quarantined:
        if not exc.lineno:
            # iterparse reports an error in its first chunk, before any event, as lxml's
            # "no element found": libxml2's own error is in the first bytes
            with self.inp.open() as fh:
                exc = _first_error(_read_at_most(fh.read, 65536), self.limits.xml) or exc
        reason, problem = syntax_problem(exc, self.limits.xml)
        try:
            with self.inp.open() as fh:
                shown = _stream_line(fh, problem.line, problem.column)
        except (OSError, ReadError):
            shown = b""
        where = "outside the items" if self.splits else "(a streamed document)"
        return self.whole(
            reason,
            (f"not well-formed {where}: {problem}") if reason == "xml-syntax" else str(problem),
            shown,
        )

    def whole_streamed(self) -> Iterator[Event | Quarantined]:
        max_bytes = self.limits.xml.max_bytes
        with self.inp.open() as fh:
            data = _read_at_most(fh.read, max_bytes + 1)
        if len(data) > max_bytes:
            yield Quarantined(
                self.name,
                1,
                "too-large",
                f"document of more than {max_bytes} bytes (ReadLimits.xml.max_bytes) is one event",
                excerpt(data),
                self.model.name,
            )
            return
        yield from self.from_bytes(data)

    def split_streamed(self, sel: Selector, options: dict) -> Iterator[Event | Quarantined]:
        deep: set[int] = set()
        seen = [0]
        check = None
        if self.depth_checked():

            def check(el: etree._Element) -> None:
                if _too_deep_item(el, self.limits.xml.max_depth):
                    deep.add(seen[0])
                seen[0] += 1

        broken: BrokenStream | None = None
        try:
            with self.inp.open() as fh:
                # the skeleton is in every event: beyond max_bytes, no event can be made
                skeleton = stream_skeleton(
                    fh, sel, options, check, budget=2 * self.limits.xml.max_bytes
                )
        except etree.XMLSyntaxError as exc:
            yield self.stream_problem(exc)
            return
        except BrokenStream as exc:
            if not exc.in_item or syntax_problem(exc.error)[0] not in (
                "xml-syntax",
                "xml-too-deep",
            ):
                yield self.stream_problem(exc.error)
                return
            broken, skeleton = exc, exc.skeleton
        bad = self.refused(skeleton.root)
        if bad is not None:
            yield bad
            return
        if not len(skeleton) and broken is None:
            if self.split is not None:
                yield self.whole(
                    "xml-no-split", f"no {self.split.text} element ({sel.tag}) in the document"
                )
            return
        done = 0
        try:
            with self.inp.open() as fh:
                for k, el in stream_items(fh, sel, options, skeleton):
                    done = k + 1
                    yield (
                        self.too_deep(k + 1, el) if k in deep else self.item_event(skeleton, k, el)
                    )
        except etree.XMLSyntaxError as exc:
            if broken is None or done != len(skeleton):
                raise ReadError(
                    "unreadable",
                    f"the document changed while it was read: {syntax_problem(exc)[1]}",
                ) from None
        if broken is not None:
            yield from self.stream_rest(broken, len(skeleton))

    def stream_rest(self, broken: BrokenStream, done: int) -> Iterator[Quarantined]:
        """After the items read before a streamed document's first error (inside an item):
        that item, then the rest of the document, which is not read."""
        reason, problem = syntax_problem(broken.error, self.limits.xml)
        with self.inp.open() as fh:
            shown = _stream_line(fh, problem.line, problem.column)
        yield Quarantined(
            self.name,
            done + 1,
            reason,
            (f"item not well-formed: {problem}" if reason == "xml-syntax" else f"item {problem}"),
            excerpt(shown),
            self.model.name,
        )
        if broken.error.msg and broken.error.msg.startswith("Premature end of data"):
            return  # the document ends in that item: no rest
        yield Quarantined(
            self.name,
            done + 2,
            reason,
            (
                f"the rest of the document after line {problem.line} is not read: a streamed "
                "document is read up to its first error (the items after it, if any, are "
                "this record; read the file with ReadLimits.stream_above above its size to "
                "salvage them)"
            ),
            "",
            self.model.name,
        )


class XmlReader(Reader):
    """XML files: feeds per item, other documents whole or per split element."""

    name = "xml"
    extensions = (".xml", ".rss", ".atom", ".rdf", ".nitf", ".newsml")
    default_model = "xml"

    def sniff(self, head: bytes) -> bool:
        """An optional byte-order mark and blanks, then ``<``."""
        for bom in _BOMS:
            if head.startswith(bom):
                head = head[len(bom) :]
                if bom != _BOMS[0]:
                    enc = "utf-16-le" if bom == b"\xff\xfe" else "utf-16-be"
                    head = head[: len(head) // 2 * 2].decode(enc, "ignore").encode()
                break
        return head.lstrip()[:1] == b"<"

    def read(
        self, inp: Input, model: FilterModel, limits: ReadLimits
    ) -> Iterator[Event | Quarantined]:
        reading = _Reading(inp, model, limits)
        if inp.size is None or inp.size <= limits.stream_above:
            if inp.file is None:
                with inp.open() as fh:
                    data = _read_at_most(fh.read, limits.stream_above + 1, inp.size)
            else:
                data = _read_file(inp.file, limits.stream_above + 1, inp.size)
            if len(data) <= limits.stream_above:
                yield from reading.from_bytes(data)
                return
        yield from reading.from_stream()


def _first_error(head: bytes, limits: ParseLimits) -> etree.XMLSyntaxError | None:
    """libxml2's own (first) error in the first bytes of a document, if they hold one
    before their end."""
    try:
        etree.fromstring(head, hardened_parser(limits))
    except etree.XMLSyntaxError as exc:
        cut = len(head) >= 65536 and "Premature end" in (exc.msg or "")
        return None if cut else exc
    return None


def _declaration(root: etree._Element) -> str:
    """The first entity declaration of the document, as written (an excerpt), or ""."""
    dtd = root.getroottree().docinfo.internalDTD
    for ent in dtd.iterentities() if dtd is not None else ():
        if ent.system_url:
            return f'<!ENTITY {ent.name} SYSTEM "{ent.system_url}">'
        return f'<!ENTITY {ent.name} "{ent.orig or ""}">'
    return ""


def _too_deep_item(el: etree._Element, max_depth: int) -> bool:
    """Whether the item ``el`` (in its document) nests elements deeper than
    ``max_depth`` counted from the document's root."""
    below = max_depth + 1 - (sum(1 for _ in el.iterancestors()) + 1)
    return below <= 0 or bool(el.xpath("(" + "/".join(["*"] * below) + ")[1]"))


def _moved(out: Event | Quarantined, position: int) -> Event | Quarantined:
    """An outcome made for another position (the k-th intact item of a salvaged document
    is item ``position`` of the original)."""
    return replace(out, position=position)


_parsers = threading.local()


def _parser(limits: ParseLimits) -> etree.XMLParser:
    """This thread's strict :func:`hardened_parser` for ``limits``, made once (a parser is
    per thread in lxml; making one per file costs more than parsing a small feed)."""
    last = getattr(_parsers, "last", None)
    if last is not None and last[0] is limits:
        return last[1]
    cache = _parsers.__dict__.setdefault("by_limits", {})
    parser = cache.get(limits)
    if parser is None:
        parser = cache[limits] = hardened_parser(limits)
    _parsers.last = (limits, parser)
    return parser


#: the first read of a stream of unknown size, doubled per read up to :data:`_MAX_CHUNK`
_CHUNK = 64 << 10
_MAX_CHUNK = 4 << 20


def _read_file(path: str, n: int, size: int | None) -> bytes:
    """Up to ``n`` bytes of a file on disk (:attr:`Input.file`), read unbuffered: no
    buffer, no copy."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | os.O_CLOEXEC)
    try:
        return _read_at_most(functools.partial(os.read, fd), n, size)
    finally:
        os.close(fd)


def _read_at_most(read: Callable[[int], bytes], n: int, size: int | None = None) -> bytes:
    """Up to ``n`` bytes from ``read`` (a stream's, which may return fewer per call before
    its end). ``size``:
    the stream's expected size, a hint (a file may change while it is read) that sizes the
    first read; a read of ``n`` bytes costs an allocation of ``n`` bytes however few the
    stream holds, more than parsing a small feed."""
    parts: list[bytes] = []
    chunk = _CHUNK if size is None else size + 1
    while n > 0:
        data = read(min(n, chunk))
        if not data:
            break
        parts.append(bytes(data))
        n -= len(data)
        chunk = min(max(chunk, _CHUNK) * 2, _MAX_CHUNK)
    return b"".join(parts)


XML_READER = XmlReader()
