"""The XPath subset: what is accepted, what is rejected (with the construct and its
position), canonical forms and text round-trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from pubsift.core.errors import FilterSyntaxError
from pubsift.models.xml import XmlModel, parse_xpath
from pubsift.models.xml.patterns import DESCENDANT, WILDCARD
from pubsift.models.xml.testing import xpaths

M = XmlModel()


@pytest.mark.parametrize(
    "q,construct,column",
    [
        ("//a[@x = 1 or @y]", "'or'", 12),
        ("//a[not(b)]", "'not'", 5),
        ("//a[last()]", "'last'", 5),
        ("//a | //b", "'|'", 5),
        ("//a/..", "'..'", 5),
        ("//a/following-sibling::b", "'following-sibling'", 5),
        ("//a[@x = $v]", "'$'", 10),
        ("//a[@*]", "attribute wildcard", 5),
        ("//a[b = c]", "a comparison must have a path on one side and a literal", 7),
        ('//a["x" = 1]', "a comparison of two literals", 9),
        ("//a[@x][1]", "a positional predicate after another predicate", 9),
        ("//a[starts-with(text(), 'x')]", "starts-with() on anything but @name or '.'", 17),
        ("//a[count(b) = 1]", "'count'", 5),
        ("/a/@x/b", "a step after an attribute or text() step", 7),
        ("//a//@x", "'//' before an attribute or text() step", 4),
        ("/", "the root node alone", 1),
        ("//a[1.5]", "position() compared with a non-integer", 5),
    ],
)
def test_rejected_constructs_name_the_construct_and_position(q, construct, column):
    with pytest.raises(FilterSyntaxError) as e:
        parse_xpath(q)
    assert construct in str(e.value)
    assert e.value.column == column, str(e.value)


@pytest.mark.parametrize("q", ["//a[", "//a[@x=]", "", "   ", "a:b"])
def test_syntax_errors(q):
    with pytest.raises(FilterSyntaxError):
        parse_xpath(q)


def test_unbound_prefix_and_bound_prefix():
    with pytest.raises(FilterSyntaxError, match="prefix 'z' is not declared"):
        M.parse_filter("//z:a")
    f = M.parse_filter({"xpath": "//z:a[@z:b = 1]", "namespaces": {"z": "urn:z"}})
    (first,) = f.root.children
    assert first.label == DESCENDANT and first.children[0].label == "{urn:z}a"
    assert M.format_filter(f) == 'xmlns:ns0="urn:z" //ns0:a[@ns0:b = 1]'
    assert M.parse_filter(M.format_filter(f)) == f
    assert M.load_filter(M.dump_filter(f)) == f


def test_bad_filter_objects():
    with pytest.raises(FilterSyntaxError):
        M.parse_filter({"path": "//a"})
    with pytest.raises(FilterSyntaxError):
        M.parse_filter({"xpath": "//a", "namespaces": ["a"]})
    with pytest.raises(FilterSyntaxError):
        M.parse_filter(42)


def test_tree_pattern_shapes():
    f = parse_xpath("/nitf[./head//title]/body/body.head//hl2/object.title")
    nitf = f.root.children[0]
    assert nitf.label == "nitf" and sorted(c.label for c in nitf.children) == ["body", "head"]
    rel = parse_xpath("head/title")
    assert rel.root.children[0].label == WILDCARD  # relative to the root element
    assert parse_xpath("./a") == parse_xpath("a") == parse_xpath("child::a")
    assert parse_xpath("/a/attribute::x") == parse_xpath("/a[@x]") == parse_xpath("/a/@x")
    assert parse_xpath("/a[1]") == parse_xpath("/a[position() = 1]")
    assert parse_xpath("//a[5 < @x]") == parse_xpath("//a[@x > 5]")
    assert parse_xpath("//a[b and c]") == parse_xpath("//a[b][c]")
    assert parse_xpath('//a[starts-with(@x, "")]') == parse_xpath("//a")


@settings(max_examples=200, deadline=None)
@given(xpaths())
def test_text_and_wire_forms_round_trip(q):
    f = M.parse_filter(q)
    assert M.parse_filter(M.format_filter(f)) == f
    g = M.load_filter(M.dump_filter(f))
    assert g == f and hash(g) == hash(f)
