"""An XML document in memory (a file up to ``ReadLimits.stream_above``): parsed strictly
once, then read whole (one event at position 1), split in memory (:mod:`.split`), salvaged
when it does not parse (:mod:`.salvaging`), or, for the concepts model, its UBL lines
(:mod:`.ubl`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from lxml import etree
from pubsift.adapters.readers.outcomes import Event, Quarantined
from pubsift.adapters.readers.xmlfiles.salvaging import salvaged
from pubsift.adapters.readers.xmlfiles.split import split_items
from pubsift.adapters.readers.xmlfiles.state import Reading
from pubsift.models.xml import ParseLimits, hardened_parser


def from_bytes(r: Reading, data: bytes) -> Iterator[Event | Quarantined]:
    """The outcomes of a document held in memory: its UBL lines (the concepts model), one
    event (read whole), its items (a feed, a split element), or what survives of it when
    it does not parse (:func:`~.salvaging.salvaged`)."""
    try:
        root = etree.fromstring(data, _parser(r.limits.xml))
    except etree.XMLSyntaxError as exc:
        yield from salvaged(r, data, exc)
        return
    if root.getroottree().docinfo.internalDTD is None:
        r.source_bytes = len(data)
    if r.model.name == "concepts":
        bad = r.refused(root, references=False) or r.references(root)
        if bad is not None:
            yield bad
        else:
            yield from ubl_lines(r, root)
        return
    sel = r.selector(root.tag, root.nsmap)  # type: ignore[arg-type]  # (text)
    if isinstance(sel, Quarantined):
        yield sel
        return
    if sel is None or root.tag == sel.tag:
        r.splits = False
        # entity references are refused per item (one in the metadata: the document)
        yield (
            r.refused(root, references=False) or r.references(root) or r.document_event(root, data)
        )
        return
    r.splits = True
    bad = r.refused(root, references=False, depth=False)
    if bad is not None:
        yield bad
        return
    yield from split_items(r, root, sel, {}, None)


def ubl_lines(r: Reading, root: etree._Element) -> Iterator[Event | Quarantined]:
    """The concepts model's semantic objects of a parsed UBL document, one per line."""
    # the concepts enrichment (adapters/readers/xmlfiles/ubl.py); imported when first needed
    from pubsift.adapters.readers.xmlfiles.ubl import ubl_semantic_objects

    # (for the concepts model only)
    yield from ubl_semantic_objects(root, r.model, r.name)  # type: ignore[arg-type]


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
