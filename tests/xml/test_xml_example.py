"""The end-to-end example of docs/xml.md: subscriptions on a real AP NITF wire document."""

from __future__ import annotations

from pubsift.core import load_model


def test_docs_example_on_ap_wire_document(data_dir):
    xml = load_model("xml")
    subs = {
        "climate": xml.parse_filter('//body.content//p[contains(., "climate")]'),
        "ap": xml.parse_filter('/nitf/head/docdata/doc-id[@regsrc = "AP"]'),
        "newyork": xml.parse_filter('//dateline/location[. = "NEW YORK"]'),
        "afp": xml.parse_filter('/nitf/head/docdata/doc-id[@regsrc = "AFP"]'),
    }
    index = xml.new_index()
    for who, f in subs.items():
        index.add(f, who)
    event = xml.parse_event((data_dir / "nitf" / "wire" / "ap-nitf.xml").read_bytes())
    assert sorted(index.match(event)) == ["ap", "climate", "newyork"]
    assert {k for k in subs if xml.matches(subs[k], event)} == {"ap", "climate", "newyork"}
    assert xml.covers(xml.parse_filter("//doc-id"), subs["ap"])
    # two doc-id elements may coexist, so these overlap; two root elements cannot
    assert xml.overlaps(subs["ap"], subs["afp"])
    assert not xml.overlaps(
        xml.parse_filter("/nitf[@version = 1]"), xml.parse_filter("/nitf[@version = 2]")
    )
