"""The size bound of the xml reader's item events (docs/adapters.md §5): an event's serialization
takes at most ``SERIALIZED_PER_BYTE`` UTF-8 bytes per byte of a well-formed document
without internal DTD subset, so the reader measures an event exactly only when the document
is large enough for one to exceed ``ReadLimits.xml.max_bytes``; the events themselves
serialize on first use (lazy ``XmlEvent``) and are the model's ``parse_event`` of their
text. Adversarial content (the escapes that grow most, one-byte encodings whose characters
take three bytes of UTF-8, an internal subset defaulting namespace declarations) checks
the factor and the exact measurement both ways."""

from __future__ import annotations

import pytest
from lxml import etree
from pubsift.adapters import Event, Quarantined, ReadLimits, Source, read
from pubsift.adapters.readers.xmlfiles.state import SERIALIZED_PER_BYTE
from pubsift.models.xml import XmlModel
from pubsift.models.xml.parsing import ParseLimits, XmlEvent, parse_document

N = 200


def _feed(item: bytes, n: int = 1, head: bytes = b"", meta: bytes = b"") -> bytes:
    return head + b"<rss><channel>" + meta + item * n + b"</channel></rss>"


#: items whose serialization grows most per byte of the document
GROWING = {
    "quote in a single-quoted attribute": _feed(b"<item a='" + b'"' * N + b"'/>"),
    "greater-than in text": _feed(b"<item>" + b">" * N + b"</item>"),
    "greater-than in CDATA": _feed(b"<item><![CDATA[" + b">" * N + b"]]></item>"),
    "greater-than in an attribute": _feed(b"<item a='" + b">" * N + b"'/>"),
    "character references": _feed(
        b"<item a='" + b"&#13;&#9;&#10;&#34;" * N + b"'>" + b"&#13;" * N + b"</item>"
    ),
    "windows-1252 euro signs": _feed(
        b"<item a='" + b"\x80" * N + b"'>" + b"\x80" * N + b"</item>",
        head=b'<?xml version="1.0" encoding="windows-1252"?>',
    ),
    "latin-1 in names": _feed(
        b"<item><\xe9\xe9 \xe9='\xe9'/></item>" * N,
        head=b'<?xml version="1.0" encoding="iso-8859-1"?>',
    ),
    "many items, one event each": _feed(b"<item a='\"'/>", n=N),
}


def _read(raw: bytes, tmp_path, max_bytes: int = 10_000_000) -> list:
    path = tmp_path / "feed.xml"
    path.write_bytes(raw)
    limits = ReadLimits(xml=ParseLimits(max_bytes=max_bytes))
    # the xml model with the reader's own limits: the reader builds the events itself
    return list(read(Source(str(path)), limits=limits, models={"xml": XmlModel(limits.xml)}))


@pytest.mark.parametrize("name", sorted(GROWING))
def test_no_event_serializes_beyond_the_factor(name, tmp_path):
    raw = GROWING[name]
    got = _read(raw, tmp_path)
    assert got and all(isinstance(o, Event) for o in got)
    for o in got:
        size = len(o.event.xml.encode("utf-8"))
        assert size <= SERIALIZED_PER_BYTE * len(raw), name
        assert o.event == parse_document(o.event.xml)


def test_the_factor_is_reached_by_quotes_in_single_quoted_attributes(tmp_path):
    # a looser constant would waste the exact measurement's saving; a tighter one is wrong
    raw = _feed(b"<item a='" + b'"' * 100_000 + b"'/>")
    (o,) = _read(raw, tmp_path)
    assert len(o.event.xml.encode()) > (SERIALIZED_PER_BYTE - 0.01) * len(raw)


@pytest.mark.parametrize("name", sorted(GROWING))
def test_too_large_exactly_at_the_limit(name, tmp_path):
    """With max_bytes at an event's exact size it is read, one byte less it is
    too-large: the bound never skips a measurement that matters."""
    raw = GROWING[name]
    sizes = [len(o.event.xml.encode()) for o in _read(raw, tmp_path)]
    biggest = max(sizes)
    assert all(isinstance(o, Event) for o in _read(raw, tmp_path, max_bytes=biggest))
    got = _read(raw, tmp_path, max_bytes=biggest - 1)
    assert [(o.position, o.reason) for o in got if isinstance(o, Quarantined)] == [
        (k + 1, "too-large") for k, s in enumerate(sizes) if s == biggest
    ]


def test_an_internal_subset_defaulting_namespaces_is_measured_exactly(tmp_path):
    # libxml2 applies a DTD's defaulted namespace declaration to every element, even
    # without loading or validating: the serialization outgrows any factor
    uri = b"urn:" + b"z" * 500
    head = b'<!DOCTYPE rss [<!ATTLIST x xmlns:a CDATA "' + uri + b'">]>'
    raw = _feed(b"<item>" + b"<x/>" * 100 + b"</item>", head=head)
    (o,) = _read(raw, tmp_path)
    size = len(o.event.xml.encode())
    assert size > SERIALIZED_PER_BYTE * len(raw)
    got = _read(raw, tmp_path, max_bytes=size - 1)
    assert [(type(g).__name__, g.position, getattr(g, "reason", None)) for g in got] == [
        ("Quarantined", 1, "too-large")
    ]


def test_lazy_events_equal_eager_ones():
    raw = "<a xmlns:p='urn:p'><p:b c='\"'>&gt;x<!--c--></p:b></a>"
    lazy = parse_document(raw)
    root = etree.fromstring(raw)
    eager = XmlEvent(root, etree.tostring(root, encoding="unicode", with_tail=False))
    assert lazy == eager and hash(lazy) == hash(eager)
    assert lazy.xml == eager.xml == '<a xmlns:p="urn:p"><p:b c="&quot;">&gt;x<!--c--></p:b></a>'
    assert lazy != parse_document("<a/>") and {lazy, eager} == {eager}
    assert repr(lazy).startswith("XmlEvent('<a xmlns:p=")
    assert XmlModel().dump_event(lazy) == {"xml": lazy.xml}
