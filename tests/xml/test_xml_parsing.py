"""Hardened parsing of XML events: every refusal is an EventError naming its cause."""

from __future__ import annotations

import pytest
from lxml import etree
from pubsift.core.errors import EventError
from pubsift.models.xml import ParseLimits, XmlEvent, XmlModel, parse_document

XXE = b"""<?xml version="1.0"?>
<!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<r>&xxe;</r>"""

XXE_NETWORK = b"""<?xml version="1.0"?>
<!DOCTYPE r [<!ENTITY xxe SYSTEM "http://127.0.0.1:1/secret">]>
<r>&xxe;</r>"""

LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<lolz>&lol9;</lolz>"""

EXTERNAL_DTD = b"""<?xml version="1.0"?>
<!DOCTYPE r SYSTEM "http://127.0.0.1:1/evil.dtd">
<r>ok</r>"""


def test_xxe_is_refused():
    with pytest.raises(EventError, match="XXE") as e:
        parse_document(XXE)
    assert "xxe" in str(e.value)


def test_xxe_over_the_network_is_refused():
    with pytest.raises(EventError, match="XXE"):
        parse_document(XXE_NETWORK)


def test_billion_laughs_is_refused():
    with pytest.raises(EventError, match=r"billion laughs|entity expansion"):
        parse_document(LAUGHS)


def test_external_dtd_is_not_loaded():
    e = parse_document(EXTERNAL_DTD)  # no network access: the DTD is simply not read
    assert e.root.text == "ok"


def test_undeclared_entity_is_malformed_with_line_and_column():
    with pytest.raises(EventError) as e:
        parse_document(b"<r>\n  <a>&nbsp;</a></r>")
    assert e.value.where and "line 2" in e.value.where


def test_malformed_names_line_and_column():
    with pytest.raises(EventError, match="malformed XML") as e:
        parse_document(b"<a>\n<b></a>")
    assert e.value.where.startswith("line 2, column")


def test_oversize_is_refused_and_limit_can_be_raised():
    doc = b"<a>" + b"x" * 2000 + b"</a>"
    with pytest.raises(EventError, match="too large"):
        parse_document(doc, ParseLimits(max_bytes=1000))
    assert parse_document(doc, ParseLimits(max_bytes=4000)).root.tag == "a"


def test_too_deep_is_refused_and_limit_can_be_raised():
    doc = b"<a>" * 50 + b"</a>" * 50
    with pytest.raises(EventError, match="too deeply"):
        parse_document(doc, ParseLimits(max_depth=20))
    assert parse_document(doc, ParseLimits(max_depth=60)).root.tag == "a"
    deep = b"<a>" * 400 + b"</a>" * 400
    with pytest.raises(EventError, match="too deeply"):
        parse_document(deep)
    assert len(parse_document(deep, ParseLimits(max_depth=500)).document) == 401


def test_not_bytes_or_str():
    with pytest.raises(EventError, match="bytes or str"):
        parse_document(42)


def test_empty_document():
    with pytest.raises(EventError):
        parse_document(b"")


def test_str_with_encoding_declaration():
    e = parse_document('<?xml version="1.0" encoding="ISO-8859-1"?><a>é</a>')
    assert e.root.text == "é"


def test_namespaces_and_equality_and_wire_round_trip():
    m = XmlModel()
    raw = b'<feed xmlns="http://www.w3.org/2005/Atom"><entry><title>t</title></entry></feed>'
    e = m.parse_event(raw)
    assert e.root.tag == "{http://www.w3.org/2005/Atom}feed"
    again = m.load_event(m.dump_event(e))
    assert again == e and hash(again) == hash(e)
    f = m.parse_filter(
        {
            "xpath": "/a:feed/a:entry/a:title[. = 't']",
            "namespaces": {"a": "http://www.w3.org/2005/Atom"},
        }
    )
    assert m.matches(f, again)
    assert not m.matches(m.parse_filter("/feed/entry"), e)  # no-namespace names differ


def test_event_from_element_and_mapping():
    m = XmlModel()
    item = etree.fromstring(b"<rss><item><title>x</title></item></rss>")[0]
    e = m.parse_event(item)
    assert isinstance(e, XmlEvent) and e.root.tag == "item"
    assert m.matches(m.parse_filter("/item/title"), e)
    with pytest.raises(EventError):
        m.parse_event({"json": 1})


def test_nitf_wire_documents_parse(data_dir):
    files = sorted((data_dir / "nitf" / "wire").glob("*.xml"))
    assert files
    for p in files:
        assert parse_document(p.read_bytes()).root is not None


LAUGHS = (
    b'<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>'
    b"<r><x>&b;</x></r>"
)


def test_streaming_parsers_stay_hardened_whatever_options_they_are_given():
    """Only huge_tree comes from the caller's options (docs/xml.md, "Events and safe parsing")."""
    import io

    from pubsift.models.xml.parsing import hardened_iterparse, hardened_pull_parser

    unsafe = {"resolve_entities": True, "load_dtd": True, "no_network": False, "huge_tree": False}
    ((_, x),) = list(hardened_iterparse(io.BytesIO(LAUGHS), unsafe, events=("end",), tag="x"))
    assert x.text is None and x[0].tag is etree.Entity  # the reference is not expanded
    pull = hardened_pull_parser(unsafe, events=("end",))
    pull.feed(LAUGHS)
    x = next(el for _, el in pull.read_events() if el.tag == "x")
    assert x.text is None and x[0].tag is etree.Entity


def test_no_xml_parser_outside_the_xml_models_parsing_module():
    """Every XML read of pubsift goes through pubsift.models.xml.parsing (docs/xml.md,
    "Events and safe parsing"):
    no other module makes an lxml parser, streams with iterparse, or parses without one."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    made_here = re.compile(
        r"etree\.(XMLParser|XMLPullParser|iterparse|XML|parse|HTMLParser)\(|"
        r"etree\.fromstring\([^,()]*\)"
    )
    found = [
        f"{p.relative_to(root)}: {line.strip()}"
        for d in ("core", "models", "adapters", "bench", "examples")
        for p in sorted((root / d).rglob("*.py"))
        if p.name != "parsing.py" or p.parent.name != "xml"
        for line in p.read_text().splitlines()
        if made_here.search(line)
    ]
    # (the adapters bench's baseline: etree.parse with the xml model's hardened parser)
    assert found == ["bench/adapters.py: root = etree.parse(p, parser).getroot()"], found


@pytest.mark.parametrize("chunk", [16, 4096, 1 << 20])
def test_hardened_iterparse_gives_the_events_before_an_error_whatever_the_chunk(monkeypatch, chunk):
    """The items parsed before a syntax error are given before it is raised, also when
    the error is in the same chunk (lxml 6.2.0's own iterparse drops them); a truncated
    document gives no end of the element left open (libxml2 ends it when it closes)."""
    import io

    from pubsift.models.xml import parsing

    monkeypatch.setattr(parsing, "CHUNK_BYTES", chunk)
    items = [b"<i>%d</i>" % k for k in range(30)]
    broken = b"<r>" + b"".join(items[:20]) + b"<i>20</j>" + b"".join(items[21:]) + b"</r>"
    parse = parsing.hardened_iterparse(io.BytesIO(broken), events=("end",), tag="i")
    got = []
    with pytest.raises(etree.XMLSyntaxError, match="mismatch"):
        got.extend(el.text for _, el in parse)
    assert got == [str(k) for k in range(20)]
    assert parse.root is None
    truncated = b"<r>" + b"".join(items[:5]) + b"<i>5"
    parse = parsing.hardened_iterparse(io.BytesIO(truncated), events=("start", "end"), tag="i")
    got = []
    with pytest.raises(etree.XMLSyntaxError, match="Premature end"):
        got.extend(ev for ev, _ in parse)
    assert got == ["start", "end"] * 5 + ["start"]
    whole = b"<r>" + b"".join(items) + b"</r>"
    parse = parsing.hardened_iterparse(io.BytesIO(whole), events=("end",), tag="i")
    assert [el.text for _, el in parse] == [str(k) for k in range(30)]
    assert parse.root is not None and parse.root.tag == "r"
