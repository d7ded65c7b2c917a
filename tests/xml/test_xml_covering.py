"""Covering, identity and overlap of tree patterns: the seed vectors (Mühl's path filters,
slides 16-20; Chand & Felber's Fig. 1) and soundness against lxml on documents built to
match the covered pattern and on random documents."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree
from pubsift.models.constraints.constraints import Constraint, Op
from pubsift.models.xml import XmlModel
from pubsift.models.xml.minimize import minimize
from pubsift.models.xml.patterns import DESCENDANT, ROOT, WILDCARD, Node, XPathFilter, make
from pubsift.models.xml.predicates import NUM, Pred
from pubsift.models.xml.testing import documents, xpaths
from pubsift.models.xml.witness_documents import witness

M = XmlModel()
F = M.parse_filter

NOTIFICATION = b"""<notification>
  <auction endtime="05/18/02 22:17:42" minprice="$50">
    <seller name="Smith" id="1234"/>
    <item><board manufacturer="Elitegroup" type="K7S5" socket="Socket A"/></item>
    <item><cpu manufacturer="AMD" type="Athlon" socket="Socket A" clock="800"/></item>
  </auction>
</notification>"""

STOCKS = b"""<quotes>
  <Stock><Symbol>ABC</Symbol><Price>20</Price></Stock>
  <Stock><Symbol>GHI</Symbol><Price>12</Price></Stock>
</quotes>"""


# -- Mühl §4.4 / slides 16-20 ------------------------------------------------------------
def test_muehl_fig_4_10_notification_matches_path_filter():
    e = M.parse_event(NOTIFICATION)
    assert M.matches(
        F('/notification/auction/item/cpu[@manufacturer = "AMD" and @clock >= 700]'), e
    )
    assert not M.matches(F("/notification/auction/item/cpu[@clock >= 900]"), e)
    assert M.matches(F("//item"), e)


def test_slide_16_clock_600_covers_clock_700_and_amd_clock_700():
    f = F("//cpu[@clock >= 600]")
    assert M.covers(f, F("//cpu[@clock >= 700]"))
    assert M.covers(f, F('//cpu[@manufacturer = "AMD" and @clock >= 700]'))
    assert not M.covers(F("//cpu[@clock >= 700]"), f)


def test_slide_17_disjoint_constrained_attributes_still_overlap():
    # [@minprice <= 100] and [@name = "Pu"] constrain no common attribute: neither covers
    # the other, and a document can satisfy both
    f, g = F("//auction[@minprice <= 100]"), F('//auction[@name = "Pu"]')
    assert not M.covers(f, g) and not M.covers(g, f)
    assert M.overlaps(f, g)
    assert M.matches(f, M.parse_event(b'<auction minprice="50" name="Pu"/>'))


def test_slide_18_abbreviated_path_covers_longer_suffix():
    assert M.covers(F("//cpu"), F("//item/cpu"))
    assert not M.covers(F("//item/cpu"), F("//cpu"))
    assert M.covers(F("//cpu"), F("/notification/auction/item/cpu"))
    # an absolute path covers another absolute path iff identical
    assert not M.covers(F("/notification/item/cpu"), F("/notification/auction/item/cpu"))
    assert M.covers(F("/notification/auction"), F("/notification/auction"))


def test_slide_19_element_filter_with_fewer_attribute_filters_covers():
    assert M.covers(
        F('//cpu[@manufacturer = "AMD"]'), F('//cpu[@manufacturer = "AMD" and @clock >= 700]')
    )
    assert not M.covers(
        F('//cpu[@manufacturer = "AMD" and @clock >= 700]'), F('//cpu[@manufacturer = "AMD"]')
    )


def test_slide_20_filter_covers_conjunction_of_path_filters():
    g = F('/notification[.//seller[@name = "Pu"]][.//cpu[@type = "Athlon" and @clock >= 600]]')
    assert M.covers(F('//cpu[@type = "Athlon"]'), g)
    assert M.covers(F('//seller[@name = "Pu"]'), g)
    assert not M.covers(F('//cpu[@type = "Duron"]'), g)


# -- Chand & Felber Fig. 1 ---------------------------------------------------------------
def test_chand_felber_fig_1_stock_pattern_does_not_match():
    f = F('//Stock[Symbol="GHI"][Price>15]')
    e = M.parse_event(STOCKS)
    # each branch has a matching node, but not under the same Stock
    assert M.matches(F('//Stock[Symbol="GHI"]'), e) and M.matches(F("//Stock[Price>15]"), e)
    assert not M.matches(f, e)
    assert not etree.XPath('//Stock[Symbol="GHI"][Price>15]')(e.tree())
    assert M.matches(
        f, M.parse_event(b"<q><Stock><Symbol>GHI</Symbol><Price>16</Price></Stock></q>")
    )


def test_chand_felber_fig_1_stock_pattern_covering():
    f = F('//Stock[Symbol="GHI"][Price>15]')
    assert M.covers(F('//Stock[Symbol="GHI"]'), f)
    assert M.covers(F("//Stock[Price>10]"), f)
    assert M.covers(F("//*[Price>10]"), f)
    assert M.covers(F("//Stock"), f)
    assert not M.covers(F("//Stock[Price>20]"), f)
    assert not M.covers(f, F('//Stock[Symbol="GHI"]'))


def test_label_order_tag_wildcard_descendant():
    assert M.covers(F("/a/*/c"), F("/a/b/c"))
    assert M.covers(F("/a//c"), F("/a/*/c"))
    assert M.covers(F("/a//c"), F("/a/b/c"))
    assert not M.covers(F("/a/*/c"), F("/a//c"))
    assert not M.covers(F("/a/b/c"), F("/a/*/c"))


def test_value_predicates_in_the_label_order():
    assert M.covers(F("//a[@x > 1]"), F("//a[@x = 3]"))
    assert M.covers(F("//a[@x = 3]"), F('//a[@x = "3"]'))  # "3" is the number 3
    assert not M.covers(F('//a[@x = "3"]'), F("//a[@x = 3]"))  # " 3 " = 3 too
    assert M.covers(F("//a[@x != 3]"), F("//a[@x > 5]"))
    assert not M.covers(F("//a[@x > 0]"), F("//a[@x != 3]"))  # NaN != 3
    assert M.covers(F('//a[starts-with(@x, "ab")]'), F('//a[@x = "abc"]'))
    assert M.covers(F("//a[@x]"), F('//a[contains(@x, "q")]'))
    assert M.covers(F("//a[text()]"), F('//a[text() = "q"]'))
    assert M.covers(F("/a[b > 1]"), F("/a[b = 4]"))


def test_positional_predicates_cover_only_the_same_position():
    assert M.covers(F("/a/b"), F("/a/b[2]"))
    assert M.covers(F("/a/b[2]"), F("/a/b[2][@x]"))
    assert not M.covers(F("/a/*[2]"), F("/a/b[2]"))
    assert not M.covers(F("/a/b[position() > 1]"), F("/a/b[2]"))
    assert M.covers(F("/a/b[2]"), F("/a/b[position() = 2]"))


def test_identity_is_mutual_covering_after_minimization():
    assert F("/a[b][b]") == F("/a[b]")
    assert F("/a[b/c][b]") == F("/a[b/c]")
    assert F("//a[@x = 1][@x > 0]") == F("//a[@x = 1]")
    assert M.identical(F("/a[b][c]"), F("/a[c]/b"))
    assert M.identical(F("a/b"), F("/*/a/b"))
    assert not M.identical(F("/a/b"), F("/a//b"))


def test_overlap():
    assert not M.overlaps(F("/a/b"), F("/c/b"))
    assert not M.overlaps(F("/a[@x = 1]"), F("/a[@x = 2]"))
    assert not M.overlaps(F('/a[@x < "abc"]'), F("//a"))  # a NaN comparison matches nothing
    assert M.overlaps(F("//a[@x = 1]"), F("//a[@x = 2]"))  # two different a elements
    assert M.overlaps(F("/a[@x != 1]"), F("/a[@x != 2]"))
    assert M.overlaps(F("/*/b"), F("/c/b"))


# -- soundness against lxml ---------------------------------------------------------------
def _generalize(n: Node, rnd: random.Random) -> Node:
    """A random node-wise generalization: drop/weaken predicates, tag -> *, child -> //,
    drop branches. The result covers n semantically."""
    if n.label == DESCENDANT:
        return make(DESCENDANT, (), None, [_generalize(c, rnd) for c in n.children])
    label = n.label
    if label not in (ROOT, WILDCARD) and n.position is None and rnd.random() < 0.2:
        label = WILDCARD
    preds = []
    for p in n.preds:
        r = rnd.random()
        if r < 0.3:
            continue
        c = p.constraint
        if r < 0.5 and p.satisfiable and p.domain == NUM and c.op in (Op.GT, Op.GE):
            p = Pred(p.target, NUM, Constraint(c.op, c.operand - 1))
        preds.append(p)
    position = n.position if rnd.random() < 0.7 else None
    children = []
    for c in n.children:
        if rnd.random() < 0.15 and len(n.children) > 1:
            continue
        g = _generalize(c, rnd)
        if g.label != DESCENDANT and n.label != ROOT and rnd.random() < 0.15:
            g = make(DESCENDANT, (), None, [g])
        children.append(g)
    return make(label, preds, position, children)


def _lxml(f: XPathFilter, tree) -> bool:
    return bool(etree.XPath(f.xpath(), namespaces=f.namespaces())(tree))


@settings(max_examples=150, deadline=None)
@given(xpaths(), st.randoms(use_true_random=False), st.lists(documents(), max_size=3))
def test_covers_is_sound_on_witnesses_and_random_documents(q, rnd, raws):
    g = F(q)
    f = XPathFilter(minimize(_generalize(g.root, rnd)))
    for a, b in ((f, g), (g, f)):
        if not M.covers(a, b):
            continue
        docs = [witness(b, random.Random(s)) for s in range(4)] + raws
        for raw in docs:
            if raw is None:
                continue
            tree = etree.fromstring(raw).getroottree()
            if _lxml(b, tree):
                assert _lxml(a, tree), (a.xpath(), b.xpath(), raw)


@settings(max_examples=150, deadline=None)
@given(xpaths(), xpaths(), st.lists(documents(), min_size=1, max_size=3))
def test_relations_are_sound_on_random_pairs(q1, q2, raws):
    f, g = F(q1), F(q2)
    cov, ident, ovl = M.covers(f, g), M.identical(f, g), M.overlaps(f, g)
    wit = [witness(g, random.Random(s)) for s in range(2)]
    for raw in raws + [w for w in wit if w is not None]:
        e = M.parse_event(raw)
        mf, mg = M.matches(f, e), M.matches(g, e)
        if cov and mg:
            assert mf, (q1, q2, raw)
        if ident:
            assert mf == mg, (q1, q2, raw)
        if mf and mg:
            assert ovl, (q1, q2, raw)


def test_witnesses_match_their_patterns():
    built = 0
    for q in [
        '//Stock[Symbol="GHI"][Price>15]',
        "/a[@x > 3][@x < 5]/b[2]//c[text() = 'q']",
        "a/*[. = 'zz']",
        '/a[@x != "v"][@x = 3]',
    ]:
        f = F(q)
        raw = witness(f, random.Random(3))
        assert raw is not None, q
        assert M.matches(f, M.parse_event(raw))
        built += 1
    assert built == 4


@pytest.mark.parametrize("q", ["/a//b[@x > 2]/c", "//a[b/c][d]//e", "/a/*[2]/b"])
def test_covering_is_reflexive_and_generalizations_cover(q):
    f = F(q)
    assert M.covers(f, f) and M.identical(f, f)
    assert M.covers(F("//*"), f)
