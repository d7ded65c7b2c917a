"""The xml reader on hand-made documents (docs/adapters.md §2, §4): kinds, split elements,
hostile inputs (XXE, billion laughs, deep nesting, oversize, bad encodings), a feed with
one broken item among good ones, streaming equal to in-memory reading, and errors of the
input stream passing through lxml."""

from __future__ import annotations

import contextlib
import io

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from lxml import etree
from pubsift.adapters import (
    Event,
    Input,
    Quarantined,
    ReadError,
    ReadLimits,
    Source,
    SourceError,
    read,
    read_input,
)
from pubsift.adapters.readers.limits import DEFAULT_READ_LIMITS
from pubsift.adapters.readers.xmlfiles.feeds import KINDS, detect
from pubsift.adapters.readers.xmlfiles.reader import XML_READER
from pubsift.models.xml import XmlModel
from pubsift.models.xml.parsing import ParseLimits

MODEL = XmlModel()
ATOM = "http://www.w3.org/2005/Atom"
STREAM = ReadLimits(stream_above=16)

RSS = b"""<?xml version="1.0" encoding="utf-8"?>
<!-- a comment before the root -->
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/">
  <channel>
    <title>News</title>
    <item><title>one</title><category>Sports</category></item>
    <link>http://example.com/</link>
    <!-- between items -->
    <item><title>two</title><dc:subject>x</dc:subject><category>Arts</category></item>
    <item xmlns:dc="http://purl.org/dc/elements/1.1/"><title>three</title>
      <category>Sports</category></item>
    <language>en</language>
  </channel>
</rss>
"""


def outcomes(
    raw: bytes, tmp_path, name: str = "feed.xml", limits: ReadLimits = DEFAULT_READ_LIMITS, **src
) -> list:
    path = tmp_path / name
    path.write_bytes(raw)
    return list(read(Source(str(path), **src), limits=limits))


def shape(got: list) -> list:
    return [(type(o).__name__, o.position, getattr(o, "reason", None)) for o in got]


def texts(got: list) -> list:
    return [o.event.xml if isinstance(o, Event) else (o.position, o.reason) for o in got]


# -- kinds and sniffing ------------------------------------------------------------------
@pytest.mark.parametrize(
    "tag, nsmap, kind",
    [
        ("rss", {}, "rss"),
        (
            "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}RDF",
            {None: "http://purl.org/rss/1.0/"},
            "rss1",
        ),
        (
            "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}RDF",
            {None: "http://my.netscape.com/rdf/simple/0.9/"},
            "rss090",
        ),
        ("{http://www.w3.org/1999/02/22-rdf-syntax-ns#}RDF", {}, "rdf"),
        (f"{{{ATOM}}}feed", {}, "atom"),
        ("{http://purl.org/atom/ns#}feed", {}, "atom03"),
        (f"{{{ATOM}}}entry", {}, "xml"),
        ("nitf", {}, "nitf"),
        ("{http://iptc.org/std/NITF/2006-10-18/}nitf", {}, "nitf"),
        ("NewsML", {}, "newsml"),
        ("{http://iptc.org/std/nar/2006-10-01/}newsMessage", {}, "newsml"),
        ("{urn:oasis:names:specification:ubl:schema:xsd:Invoice-2}Invoice", {}, "ubl"),
        ("{http://www.fpml.org/FpML-5/confirmation}dataDocument", {}, "fpml"),
        ("{http://www.fpml.org/2003/FpML-4-0}FpML", {}, "fpml"),
        ("weblogUpdates", {}, "xml"),
    ],
)
def test_detect_tells_the_kind_from_the_root(tag, nsmap, kind):
    assert detect(tag, nsmap) is KINDS[kind]
    assert KINDS[kind].is_feed == (kind in ("rss", "rss1", "rss090", "atom", "atom03"))


def test_kind_of_the_first_bytes():
    from pubsift.adapters.readers.xmlfiles.feeds import kind_of

    assert kind_of(RSS[:200]) is KINDS["rss"]
    assert kind_of(f'<?xml version="1.0"?><feed xmlns="{ATOM}"><title>t'.encode()) is KINDS["atom"]
    assert kind_of(b"<?xml version='1.0'?><!-- only a comment") is None
    assert kind_of(b"not xml") is None


@pytest.mark.parametrize(
    "head, yes",
    [
        (b"<?xml version='1.0'?><a/>", True),
        (b"\xef\xbb\xbf  \n<rss>", True),
        ("<a/>".encode("utf-16"), True),
        (b"  <!-- c --><a/>", True),
        (b'{"a": 1}', False),
        (b"a,b\n1,2", False),
        (b"", False),
    ],
)
def test_sniff_accepts_what_starts_with_a_tag(head, yes):
    assert XML_READER.sniff(head) is yes


def test_the_reader_claims_xml_extensions_and_is_registered():
    from pubsift.adapters.readers.registry import by_extension, readers

    assert readers()["xml"] is XML_READER
    for name in ("a.xml", "a.rss", "a.atom", "a.rdf", "a.nitf", "a.xml.gz"):
        assert by_extension(name) is XML_READER


# -- feeds -------------------------------------------------------------------------------
def test_a_feed_gives_one_event_per_item_in_its_place(tmp_path):
    got = outcomes(RSS, tmp_path)
    assert shape(got) == [("Event", 1, None), ("Event", 2, None), ("Event", 3, None)]
    assert [e.id for e in got] == [f"{tmp_path / 'feed.xml'}#{k}" for k in (1, 2, 3)]
    two = got[1].event.xml
    # metadata around the item kept, other items gone, namespaces kept, order kept
    assert "<title>News</title>" in two and "<language>en</language>" in two
    assert "one" not in two and "three" not in two and "<dc:subject>x</dc:subject>" in two
    assert two.index("<link>") < two.index("<!-- between items -->") < two.index("<item>")
    sports = MODEL.parse_filter('/rss/channel/item[category = "Sports"]')
    assert [MODEL.matches(sports, e.event) for e in got] == [True, False, True]
    meta = MODEL.parse_filter('/rss/channel[language = "en"]/item/title')
    assert all(MODEL.matches(meta, e.event) for e in got)


def test_a_feed_without_items_gives_no_event(tmp_path):
    assert outcomes(b"<rss><channel><title>t</title></channel></rss>", tmp_path) == []
    assert outcomes(f'<feed xmlns="{ATOM}"><title>t</title></feed>'.encode(), tmp_path) == []


def test_atom_entries_keep_their_namespace(tmp_path):
    raw = (
        f'<feed xmlns="{ATOM}" xmlns:m="urn:m"><title>f</title>'
        "<entry><title>a</title><m:x>1</m:x></entry><entry><title>b</title></entry>"
        "</feed>"
    ).encode()
    got = outcomes(raw, tmp_path)
    assert shape(got) == [("Event", 1, None), ("Event", 2, None)]
    f = MODEL.parse_filter(f'xmlns:a="{ATOM}" xmlns:m="urn:m" /a:feed/a:entry[m:x = 1]')
    assert [MODEL.matches(f, e.event) for e in got] == [True, False]


def test_rss1_items_are_children_of_rdf(tmp_path):
    raw = b"""<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
 xmlns="http://purl.org/rss/1.0/"><channel><title>c</title></channel>
 <item rdf:about="1"><link>l1</link></item><item rdf:about="2"><link>l2</link></item>
 <textinput/></rdf:RDF>"""
    got = outcomes(raw, tmp_path)
    f = MODEL.parse_filter(
        'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
        'xmlns:rss="http://purl.org/rss/1.0/" '
        '/rdf:RDF/rss:item[rss:link = "l2"]'
    )
    assert [MODEL.matches(f, e.event) for e in got] == [False, True]


# -- split elements ----------------------------------------------------------------------
DOC = b"""<doc xmlns="urn:d" xmlns:p="urn:p"><head>h</head>
<p:line n="1"><p:line n="1.1"/></p:line><body><p:line n="2"/></body></doc>"""


def test_split_takes_outermost_elements_anywhere(tmp_path):
    got = outcomes(DOC, tmp_path, split="p:line")
    assert shape(got) == [("Event", 1, None), ("Event", 2, None)]
    assert 'n="1.1"' in got[0].event.xml and 'n="2"' not in got[0].event.xml
    assert 'n="1"' not in got[1].event.xml and "<head>h</head>" in got[1].event.xml


def test_split_prefix_from_source_clark_and_default_namespace(tmp_path):
    a = outcomes(DOC, tmp_path, split="q:line", namespaces={"q": "urn:p"})
    b = outcomes(DOC, tmp_path, split="{urn:p}line")
    assert texts(a) == texts(b) == texts(outcomes(DOC, tmp_path, split="p:line"))
    # no prefix: the root's default namespace
    assert shape(outcomes(DOC, tmp_path, split="head")) == [("Event", 1, None)]
    assert shape(outcomes(DOC, tmp_path, split="{}head")) == [("Quarantined", 0, "xml-no-split")]


def test_split_problems(tmp_path):
    assert shape(outcomes(DOC, tmp_path, split="x:line")) == [("Quarantined", 0, "xml-no-split")]
    assert shape(outcomes(DOC, tmp_path, split="p:none")) == [("Quarantined", 0, "xml-no-split")]
    assert shape(outcomes(DOC, tmp_path, split="doc")) == [("Event", 1, None)]  # the root
    with pytest.raises(SourceError, match="not an element name"):
        outcomes(DOC, tmp_path, split="//p:line[1]")


def test_other_documents_are_one_event(tmp_path):
    raw = b'<?xml version="1.0" encoding="ISO-8859-1"?><nitf><body>caf\xe9</body></nitf>'
    got = outcomes(raw, tmp_path)
    assert shape(got) == [("Event", 1, None)]
    assert got[0].event == MODEL.parse_event(raw) and "café" in got[0].event.xml


# -- hostile inputs ----------------------------------------------------------------------
XXE = b"""<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<rss><channel><item><title>&x;</title></item></channel></rss>"""
LAUGHS = b"""<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">
<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<rss><channel><item><title>&lol3;</title></item></channel></rss>"""


@pytest.mark.parametrize("limits", [ReadLimits(), STREAM], ids=["memory", "stream"])
@pytest.mark.parametrize(
    "raw, reason",
    [
        (XXE, "xml-entity"),
        (LAUGHS, "xml-entity"),
        (b"<rss><channel>" + b"<a>" * 300 + b"</a>" * 300 + b"</channel></rss>", "xml-too-deep"),
        (
            b'<?xml version="1.0" encoding="utf-8"?><rss><channel><item>caf\xe9</item></channel>'
            b"</rss>",
            "encoding",
        ),
        (b"<rss><channel><item>\xff\xfe</item></channel></rss>", "encoding"),
        (b'<?xml version="1.0" encoding="x-no-such"?><rss/>', "encoding"),
        (b"<rss><channel><title>&nbsp;</title><item>a</item>", "xml-syntax"),
    ],
)
def test_hostile_documents_are_quarantined_whole(tmp_path, raw, reason, limits):
    got = outcomes(raw, tmp_path, limits=limits)
    assert shape(got) == [("Quarantined", 0, reason)], got
    assert "passwd" not in repr(got) or reason != "xml-entity" or "file:///" in got[0].message
    assert "\n" not in got[0].message


@pytest.mark.parametrize("limits", [ReadLimits(), STREAM], ids=["memory", "stream"])
def test_whole_document_problems_are_at_1_when_read_whole_at_0_when_split(tmp_path, limits):
    """Review finding 19: a document read whole is quarantined at position 1 (the id its
    event would have); a feed or split document none of whose items could be delimited at
    position 0."""
    assert shape(outcomes(b"", tmp_path, limits=limits)) == [("Quarantined", 1, "xml-syntax")]
    doc = b"<nitf><body>" + b"<a>" * 300 + b"</a>" * 300 + b"</body></nitf>"
    assert shape(outcomes(doc, tmp_path, limits=limits)) == [("Quarantined", 1, "xml-too-deep")]
    assert shape(outcomes(b"<nitf><body>a & b</body></nitf>", tmp_path, limits=limits)) == [
        ("Quarantined", 1, "xml-syntax")
    ]
    assert shape(
        outcomes(b"<nitf><head>a & b</head><body/></nitf>", tmp_path, limits=limits, split="body")
    ) == [("Quarantined", 0, "xml-syntax")]
    assert shape(
        outcomes(
            b"<nitf>" + b"y" * 400 + b"</nitf>",
            tmp_path,
            limits=ReadLimits(xml=ParseLimits(max_bytes=300), stream_above=limits.stream_above),
        )
    ) == [("Quarantined", 1, "too-large")]


def test_messages_are_one_line_in_our_words(tmp_path):
    """Review finding 14: one-line messages, UTF-16 without a BOM is ``encoding``, the
    depth limit named with how to raise it, real columns, excerpts."""
    got = outcomes("<r>h\u00e9llo</r>".encode("utf-16-le"), tmp_path, "u16.xml")
    assert shape(got) == [("Quarantined", 1, "encoding")] and "\n" not in got[0].message
    assert "byte-order mark" in got[0].message
    deep = b"<rss><channel><item>" + b"<a>" * 300 + b"</a>" * 300 + b"</item></channel></rss>"
    got = outcomes(deep, tmp_path)
    assert shape(got) == [("Quarantined", 1, "xml-too-deep")]
    assert "XML_PARSE_HUGE" not in got[0].message and "max_depth" in got[0].message
    assert got[0].excerpt.startswith("<item><a><a>")
    got = outcomes(
        b"<rss><channel>\n<item><title>a &nbsp; b</title></item>\n<item/></channel></rss>", tmp_path
    )
    assert shape(got) == [("Quarantined", 1, "xml-syntax"), ("Event", 2, None)]
    assert "line 2, column 22:" in got[0].message and "column 0" not in got[0].message
    assert "&nbsp;" in got[0].excerpt
    got = outcomes(NETSCAPE, tmp_path)
    assert got[1].reason == "xml-entity" and got[1].excerpt == "&eacute;"
    for limits in (ReadLimits(), STREAM):
        got = outcomes(XXE, tmp_path, limits=limits)
        assert got[0].excerpt == '<!ENTITY x SYSTEM "file:///etc/passwd">'
        got = outcomes(
            b"<rss><channel>\n<title>a &nbsp; b</title><item/></channel></rss>",
            tmp_path,
            limits=limits,
        )
        assert shape(got) == [("Quarantined", 0, "xml-syntax")]
        assert "&nbsp;" in got[0].excerpt and "line 2, column 16" in got[0].message


NETSCAPE = b"""<?xml version="1.0"?>
<!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN"
 "http://my.netscape.com/publish/formats/rss-0.91.dtd">
<rss version="0.91"><channel><title>t</title>
<item><title>one</title></item>
<item><title>caf&eacute;</title></item>
<item><title>three</title></item>
</channel></rss>"""


@pytest.mark.parametrize("limits", [ReadLimits(), STREAM], ids=["memory", "stream"])
def test_a_reference_to_an_external_dtds_entity_loses_its_item(tmp_path, limits):
    got = outcomes(NETSCAPE, tmp_path, limits=limits)
    assert shape(got) == [("Event", 1, None), ("Quarantined", 2, "xml-entity"), ("Event", 3, None)]
    assert "&eacute;" in got[1].message and "no DTD is loaded" in got[1].message
    in_meta = NETSCAPE.replace(b"<title>t</title>", b"<title>&copy;</title>")
    assert shape(outcomes(in_meta, tmp_path, limits=limits)) == [("Quarantined", 0, "xml-entity")]
    whole = NETSCAPE.replace(b"rss", b"nitf")
    assert shape(outcomes(whole, tmp_path, limits=limits)) == [("Quarantined", 1, "xml-entity")]


def test_lower_depth_limit_is_xml_too_deep_in_memory_and_streamed(tmp_path):
    """A too deep item loses that item only (review finding 6); too deep metadata loses
    the document."""
    deep = b"<item>" + b"<a>" * 20 + b"</a>" * 20 + b"</item>"
    raw = b"<rss><channel><item/>" + deep + b"<item><a/></item></channel></rss>"
    meta = b"<rss><channel>" + b"<a>" * 20 + b"</a>" * 20 + b"<item/></channel></rss>"
    for limits in (
        ReadLimits(xml=ParseLimits(max_depth=10)),
        ReadLimits(xml=ParseLimits(max_depth=10), stream_above=16),
    ):
        got = outcomes(raw, tmp_path, limits=limits)
        assert shape(got) == [
            ("Event", 1, None),
            ("Quarantined", 2, "xml-too-deep"),
            ("Event", 3, None),
        ]
        assert "ParseLimits(max_depth" in got[1].message
        assert shape(outcomes(meta, tmp_path, limits=limits)) == [
            ("Quarantined", 0, "xml-too-deep")
        ]


@pytest.mark.parametrize("limits", [ReadLimits(), STREAM], ids=["memory", "stream"])
def test_an_item_beyond_libxml2s_depth_loses_that_item_only(tmp_path, limits):
    """Review finding 6: libxml2's own depth limit (256) is fatal to its parse; in memory
    the other items are still read; streamed, the items before it are (finding 5)."""
    deep = b"<a>" * 300 + b"</a>" * 300
    raw = (
        b'<rss version="2.0"><channel><title>x</title>\n<item><title>1</title></item>\n'
        b"<item>" + deep + b"</item>\n<item><title>3</title></item>\n</channel></rss>\n"
    )
    got = outcomes(raw, tmp_path, limits=limits)
    if limits is STREAM:
        assert shape(got) == [
            ("Event", 1, None),
            ("Quarantined", 2, "xml-too-deep"),
            ("Quarantined", 3, "xml-too-deep"),
        ]
        assert "rest of the document" in got[2].message
    else:
        assert shape(got) == [
            ("Event", 1, None),
            ("Quarantined", 2, "xml-too-deep"),
            ("Event", 3, None),
        ]


def test_oversize_events_are_too_large(tmp_path):
    small = ReadLimits(xml=ParseLimits(max_bytes=300))
    big_item = b"<item><title>" + b"x" * 400 + b"</title></item>"
    raw = b"<rss><channel><item><title>ok</title></item>" + big_item + b"</channel></rss>"
    assert shape(outcomes(raw, tmp_path, limits=small)) == [
        ("Event", 1, None),
        ("Quarantined", 2, "too-large"),
    ]
    doc = b"<nitf>" + b"y" * 400 + b"</nitf>"
    assert shape(outcomes(doc, tmp_path, limits=small)) == [("Quarantined", 1, "too-large")]
    streamed = ReadLimits(xml=ParseLimits(max_bytes=300), stream_above=16)
    assert shape(outcomes(doc, tmp_path, limits=streamed)) == [("Quarantined", 1, "too-large")]


def test_oversize_items_streamed_and_a_bounded_skeleton(tmp_path):
    streamed = ReadLimits(xml=ParseLimits(max_bytes=300), stream_above=16)
    big_item = b"<item><title>" + b"x" * 400 + b"</title></item>"
    raw = b"<rss><channel><item><title>ok</title></item>" + big_item + b"</channel></rss>"
    assert shape(outcomes(raw, tmp_path, limits=streamed)) == [
        ("Event", 1, None),
        ("Quarantined", 2, "too-large"),
    ]
    # many small items stream fine; metadata beyond the budget ends the document
    many = b"<rss><channel>" + b"<item><title>i</title></item>" * 200 + b"</channel></rss>"
    assert len(outcomes(many, tmp_path, limits=streamed)) == 200
    fat = b"<rss><channel>" + b"<x>meta</x>" * 100 + b"<item/></channel></rss>"
    assert shape(outcomes(fat, tmp_path, limits=streamed)) == [("Quarantined", 0, "too-large")]
    absent = b"<doc>" + b"<x>no split element</x>" * 100 + b"</doc>"
    assert shape(outcomes(absent, tmp_path, limits=streamed, split="trade")) == [
        ("Quarantined", 0, "too-large")
    ]


# -- broken items ------------------------------------------------------------------------
GOOD = [
    b"    <item><title>one</title></item>",
    b"    <item>\n      <title>two</title>\n    </item>",
    b"    <item><title>three</title></item>",
    b"    <item><title>four</title></item>",
]


def feed(items: list[bytes]) -> bytes:
    return (
        b"<rss version='2.0'>\n  <channel>\n    <title>t</title>\n"
        + b"\n".join(items)
        + b"\n  </channel>\n</rss>\n"
    )


@pytest.mark.parametrize(
    "bad",
    [
        b"    <item><title>a &nbsp; b</title></item>",
        b"    <item><title>fish & chips</title></item>",
        b"    <item>\n      <title>x</titel>\n    </item>",
        b"    <item><title>\x01</title></item>",
        b"    <item\n      about='a&b'><title>t</title></item>",
        b"    <item><title>\n&nbsp; x</title></item>",
        b"    <item><bad:tag>x</bad:tag></item>",
    ],
)
def test_a_broken_item_loses_that_item_only(tmp_path, bad):
    good = outcomes(feed(GOOD), tmp_path, "good.xml")
    got = outcomes(feed(GOOD[:2] + [bad] + GOOD[2:]), tmp_path)
    assert shape(got) == [
        ("Event", 1, None),
        ("Event", 2, None),
        ("Quarantined", 3, "xml-syntax"),
        ("Event", 4, None),
        ("Event", 5, None),
    ], got
    # the intact items give exactly the events they give in the good feed
    assert [e.event for e in got if isinstance(e, Event)] == [e.event for e in good]
    assert "line " in got[2].message and got[2].excerpt


def test_an_unclosed_item_takes_what_recovery_put_inside_it(tmp_path):
    """Recovery nests the items after an unclosed one inside it: they are lost with it,
    in one quarantine record at its position (counts still add up)."""
    got = outcomes(feed(GOOD[:2] + [b"    <item><title>unclosed</title>"] + GOOD[2:]), tmp_path)
    assert shape(got) == [("Event", 1, None), ("Event", 2, None), ("Quarantined", 3, "xml-syntax")]
    assert "Opening and ending tag mismatch" in got[2].message


def test_broken_metadata_or_truncation(tmp_path):
    broken_meta = feed(GOOD).replace(b"<title>t</title>", b"<title>t &nbsp;</title>")
    assert shape(outcomes(broken_meta, tmp_path)) == [("Quarantined", 0, "xml-syntax")]
    truncated = feed(GOOD)[: feed(GOOD).index(b"three") + 2]
    assert shape(outcomes(truncated, tmp_path)) == [
        ("Event", 1, None),
        ("Event", 2, None),
        ("Quarantined", 3, "xml-syntax"),
    ]
    # an error in a metadata element right before the first item, or between items
    before = feed(GOOD).replace(b"<title>t</title>", b"<description>a\nb & c\n</description>")
    assert shape(outcomes(before, tmp_path)) == [("Quarantined", 0, "xml-syntax")]
    between = feed(GOOD[:2] + [b"    <link>a & b</link>"] + GOOD[2:])
    assert shape(outcomes(between, tmp_path)) == [("Quarantined", 0, "xml-syntax")]
    one_line = feed(GOOD[:1] + [b"<item>&</item>"]).replace(b"\n", b"")
    assert shape(outcomes(one_line, tmp_path)) == [
        ("Event", 1, None),
        ("Quarantined", 2, "xml-syntax"),
    ]
    # a document that ends after an item: read as closed there, the end is a record
    got = outcomes(b"<rss><channel><item>a &amp; b</item>", tmp_path)
    assert shape(got) == [("Event", 1, None), ("Quarantined", 2, "xml-syntax")]
    assert got[0].event.xml == "<rss><channel><item>a &amp; b</item></channel></rss>"
    assert "ends early" in got[1].message


# -- streaming -------------------------------------------------------------------------
def test_streaming_gives_the_same_events_as_in_memory(tmp_path):
    for raw, split in ((RSS, None), (DOC, "p:line"), (feed(GOOD), None)):
        assert texts(outcomes(raw, tmp_path, limits=STREAM, split=split)) == texts(
            outcomes(raw, tmp_path, split=split)
        )


class _Stream(io.RawIOBase):
    """A stream that raises ``exc`` after ``good`` bytes (the archive bomb guard)."""

    def __init__(self, data: bytes, good: int, exc: BaseException) -> None:
        self.data, self.good, self.exc, self.pos = data, good, exc, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self.pos >= self.good:
            raise self.exc
        n = min(len(b), self.good - self.pos, 7)
        b[:n] = self.data[self.pos : self.pos + n]
        self.pos += n
        return n


@pytest.mark.parametrize("limits", [ReadLimits(), STREAM], ids=["memory", "stream"])
def test_an_error_of_the_input_stream_passes_through_lxml(limits):
    data = feed(GOOD * 20)
    inp = Input(
        "a.zip!feed.xml",
        Source("a.zip!feed.xml"),
        lambda: io.BufferedReader(
            _Stream(data, len(data) // 2, ReadError("archive-bomb", "too big"))
        ),
    )
    got = list(read_input(inp, limits))
    assert shape(got) == [("Quarantined", 0, "archive-bomb")]
    assert got[0].message == "too big"


def test_a_stream_that_changes_between_passes_is_reported():
    first = feed(GOOD)
    calls = []

    def opener():
        calls.append(1)
        return io.BytesIO(first if len(calls) < 4 else feed(GOOD[:2]))  # pass 2 differs

    got = list(read_input(Input("f.xml", Source("f.xml"), opener), STREAM))
    assert shape(got)[-1] == ("Quarantined", 3, "unreadable") and "changed" in got[-1].message


# -- other models --------------------------------------------------------------------------
def test_concepts_model_reads_ubl_semantic_objects(tmp_path):
    concepts = pytest.importorskip("pubsift.adapters.concepts")
    if not hasattr(concepts, "ubl_semantic_objects"):
        pytest.skip(
            "pubsift.adapters.concepts.ubl_semantic_objects is written by the "
            "concepts adapters (not installed)"
        )
    from pathlib import Path

    data = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
    path = data / "business" / "ubl" / "UBL-Order-1.0-Office-Example.xml"
    if not path.is_file():
        pytest.skip(f"shared data folder {data} is absent")
    got = list(read(Source(str(path), model="concepts")))
    assert got and all(o.model == "concepts" for o in got)
    assert [o.position for o in got] == list(range(1, len(got) + 1))


def test_a_model_that_refuses_the_xml_gives_invalid_event(tmp_path):
    got = outcomes(RSS, tmp_path, model="records")
    assert shape(got) == [("Quarantined", k, "invalid-event") for k in (1, 2, 3)]


# -- mutations -----------------------------------------------------------------------------
@settings(max_examples=150)
@example(edits=[(43, b""), (43, b""), (244, b"")])  # recovery keeps a tag lxml calls invalid
@given(
    st.lists(st.tuples(st.integers(0, len(RSS) - 1), st.binary(max_size=3)), min_size=1, max_size=4)
)
def test_mutated_feeds_never_raise_and_every_outcome_is_placed(edits):
    raw = bytearray(RSS)
    for at, new in edits:
        raw[at : at + 1] = new
    inp = Input("m.xml", Source("m.xml"), lambda: io.BytesIO(bytes(raw)))
    got = list(read_input(inp))
    assert all(isinstance(o, (Event, Quarantined)) for o in got)
    positions = [o.position for o in got]
    assert positions == sorted(set(positions))
    assert not any(o.reason == "reader-error" for o in got if isinstance(o, Quarantined))
    for o in got:
        if isinstance(o, Event):
            assert etree.fromstring(o.event.xml.encode()).tag == "rss"


# -- found by review ----------------------------------------------------------------------
def _read(name: str, data: bytes, limits: ReadLimits = DEFAULT_READ_LIMITS) -> list:
    return list(read_input(Input(name, Source(name), lambda: io.BytesIO(data), len(data)), limits))


def test_salvaged_neighbour_items_keep_their_ampersands():
    """Finding 1: libxml2's recovery drops predefined entity references after the first
    error; a salvaged item is what a strict parse gives, never the recovered one."""
    feed = (
        b'<rss version="2.0"><channel><title>x &amp; y</title>\n'
        b"<item><title>a &nbsp; b</title></item>\n"
        b'<item a="1&amp;2"><title>AT&amp;T &lt;3 &#233;</title></item>\n'
        b"</channel></rss>\n"
    )
    out = _read("amp.rss", feed)
    assert [type(o).__name__ for o in out] == ["Quarantined", "Event"]
    assert '<item a="1&amp;2"><title>AT&amp;T &lt;3 \u00e9</title></item>' in out[1].event.xml
    assert "<title>x &amp; y</title>" in out[1].event.xml


ITEM = (
    "<item id=\"a&amp;b{i}\" q='&quot;x&apos;'>\n  <title>AT&amp;T &lt;{i}&gt; "
    "caf&#233;</title>\n  <description>D &amp;amp; {i} <![CDATA[x<y&amp;]]></description>"
    "\n</item>\n"
)
AMP_FEED = (
    '<?xml version="1.0"?>\n<rss version="2.0">\n<channel>\n<title>F &amp; G</title>\n'
    + "".join(ITEM.format(i=i) for i in range(5))
    + "</channel>\n</rss>\n"
).encode()


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 4), st.data())
def test_mutating_one_item_never_changes_another(k, data):
    """Finding 1, fuzzed: one item of a feed full of entity references is mutated (the
    reviewer's fuzz_salvage*.py); every event's item is an original item exactly, or
    the mutated item's own text parsed strictly; the metadata is unchanged."""
    parser = etree.XMLParser(resolve_entities=False)
    orig = [
        etree.tostring(e, with_tail=False) for e in etree.fromstring(AMP_FEED, parser).iter("item")
    ]
    start = AMP_FEED.index(b"<item", AMP_FEED.index(b'b%d"' % k) - 20)
    end = AMP_FEED.index(b"</item>", start) + len(b"</item>")
    at = data.draw(st.integers(start + 1, end - 2))
    new = data.draw(
        st.sampled_from([b"<", b"&", b"&zz;", b"&amp", b"]]>", b"</title>", b'"', b"", b"<!--"])
    )
    cut = data.draw(st.integers(0, 2))
    raw = AMP_FEED[:at] + new + AMP_FEED[at + cut :]
    end += len(new) - cut
    # the mutated item's own text, or with its next neighbour (a CDATA section left open
    # swallows it: the strict lexer reads both as one item)
    after = raw.find(b"</item>", end) + len(b"</item>")
    allowed = set(orig[:k] + orig[k + 1 :])
    for text in (raw[start:end], raw[start:after]):
        with contextlib.suppress(etree.XMLSyntaxError):
            allowed.add(etree.tostring(etree.fromstring(text, parser), with_tail=False))
    for o in _read("m.rss", raw):
        if isinstance(o, Event):
            root = etree.fromstring(o.event.xml.encode(), parser)
            assert next(etree.tostring(e, with_tail=False) for e in root.iter("item")) in allowed, (
                raw,
                o.position,
            )
            assert (
                etree.tostring(root.find("channel/title"), with_tail=False)
                == b"<title>F &amp; G</title>"
            )


def test_rss_item_outside_channel_is_read():
    """Finding 2: the items of a feed are its outermost item/entry elements wherever they
    are (an RSS item directly under rss, no channel)."""
    out = _read(
        "nochannel.rss",
        b"<rss>\n<item>\n<description>hello</description>\n"
        b"</item>\n<channel><item><item>nested</item></item></channel></rss>\n",
    )
    assert [(type(o).__name__, o.position) for o in out] == [("Event", 1), ("Event", 2)]
    assert "nested" in out[1].event.xml and "hello" not in out[1].event.xml


def test_streamed_feed_with_one_broken_item_keeps_the_others():
    """Finding 5: streamed, the items before a broken item are events, the broken item is
    quarantined at its position and the unread rest in one record after it."""
    items = [b"<item><title>%d &amp; x</title></item>\n" % i for i in range(50)]
    items[20] = b"<item><title>20</titl></item>\n"
    feed = (
        b'<rss version="2.0"><channel><title>x</title>\n' + b"".join(items) + b"</channel></rss>\n"
    )
    out = _read("big.rss", feed, ReadLimits(stream_above=64))
    assert shape(out) == [("Event", k, None) for k in range(1, 21)] + [
        ("Quarantined", 21, "xml-syntax"),
        ("Quarantined", 22, "xml-syntax"),
    ]
    assert [o.event for o in out[:20]] == [o.event for o in _read("big.rss", feed)[:20]]
    assert "titl" in out[20].message and "</titl>" in out[20].excerpt
    assert "rest of the document" in out[21].message
    truncated = feed[: feed.index(b"<item><title>30")] + b"<item><title>3"
    out = _read("cut.rss", truncated.replace(b"</titl>", b"</title>"), ReadLimits(stream_above=64))
    assert shape(out)[-2:] == [("Event", 30, None), ("Quarantined", 31, "xml-syntax")]


def test_a_too_deep_item_loses_only_that_item():
    """An item nested too deep is quarantined alone; the other items are events."""
    deep = b"<a>" * 300 + b"</a>" * 300
    feed = (
        b'<rss version="2.0"><channel><title>x</title>\n<item><title>1</title></item>\n'
        b"<item>" + deep + b"</item>\n<item><title>3</title></item>\n</channel></rss>\n"
    )
    out = _read("deep.rss", feed)
    assert shape(out) == [
        ("Event", 1, None),
        ("Quarantined", 2, "xml-too-deep"),
        ("Event", 3, None),
    ]


@pytest.mark.parametrize(
    "encode",
    [lambda t: t.replace("\n", "").encode(), lambda t: t.encode("utf-16")],
    ids=["one-line", "utf-16"],
)
def test_one_line_and_utf16_feeds_keep_their_good_items(encode):
    """Finding 7: a minified feed and a UTF-16 feed lose only their broken item."""
    text = AMP_FEED.decode().replace("<title>AT&amp;T &lt;2&gt;", "<title>AT&T &lt;2&gt;")
    text = text.replace('<?xml version="1.0"?>', "")
    out = _read("f.rss", encode(text))
    assert shape(out) == [
        ("Event", 1, None),
        ("Event", 2, None),
        ("Quarantined", 3, "xml-syntax"),
        ("Event", 4, None),
        ("Event", 5, None),
    ]
    assert "AT&amp;T &lt;4&gt;" in out[4].event.xml
    bad_meta = encode(text.replace("<title>F &amp; G</title>", "<title>F & G</title>"))
    got = _read("f.rss", bad_meta)
    assert shape(got) == [("Quarantined", 0, "xml-syntax")]
    assert "outside the items" in got[0].message
