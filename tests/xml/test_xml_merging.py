"""Merging tree patterns: perfect mergers match exactly the union of their inputs (checked
with lxml on random and witness documents); imperfect mergers cover every input."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree
from pubsift.models.xml import XmlModel
from pubsift.models.xml.testing import documents, related_xpaths
from pubsift.models.xml.witness_documents import witness

M = XmlModel()
F = M.parse_filter


def test_perfect_merge_of_one_predicate():
    assert M.merge([F("//a[@x < 5]"), F("//a[@x = 5]")]) == F("//a[@x <= 5]")
    assert M.merge([F('/r/a[@x = "1"]/b'), F('/r/a[@x != "1"]/b')]) == F("/r/a[@x]/b")
    assert M.merge([F('//a[starts-with(@x, "ab")]'), F('//a[@x = "abc"]')]) == F(
        '//a[starts-with(@x, "ab")]'
    )


def test_perfect_merge_is_a_cover_when_one_covers():
    assert M.merge([F("//cpu"), F("//item/cpu")]) == F("//cpu")
    assert M.merge([F("//a[@x > 1]"), F("//a[@x > 5]"), F("//a[@x > 3]")]) == F("//a[@x > 1]")


def test_no_perfect_merge_across_structures():
    assert M.merge([F("/a/b"), F("/a/c")]) is None
    assert M.merge([F("//a[@x < 1]"), F("//a[@x > 2]")]) is None  # two ranges: not one XPath
    assert M.merge([F("//a[@x = 1]"), F("//a[@x != 1]")]) is None  # NaN != 1: not exact


def test_imperfect_merge_only_when_asked_and_covers_inputs():
    fs = [F("/a/b/c[@x = 1]"), F("/a/d/c")]
    assert M.merge(fs) is None
    g = M.merge(fs, perfect=False)
    assert g is not None and all(M.covers(g, f) for f in fs)
    assert g == F("//c")
    assert M.merge([F("/a/b"), F("/c/d")], perfect=False) == F("//*")


def _agree_on(raws, fs, merged, perfect):
    for raw in raws:
        tree = etree.fromstring(raw).getroottree()
        any_in = any(etree.XPath(f.xpath())(tree) for f in fs)
        got = bool(etree.XPath(merged.xpath())(tree))
        if any_in:
            assert got, (merged.xpath(), [f.xpath() for f in fs], raw)
        elif perfect:
            assert not got, (merged.xpath(), [f.xpath() for f in fs], raw)


@settings(max_examples=120, deadline=None)
@given(st.lists(related_xpaths(), min_size=2, max_size=3), st.lists(documents(), max_size=3))
def test_mergers_against_lxml(qs, raws):
    fs = [F(q) for q in qs]
    wit = [w for f in fs for s in range(2) if (w := witness(f, random.Random(s)))]
    perfect = M.merge(fs)
    if perfect is not None:
        _agree_on(
            raws + wit + [w for s in range(2) if (w := witness(perfect, random.Random(s)))],
            fs,
            perfect,
            True,
        )
    imperfect = M.merge(fs, perfect=False)
    assert all(M.covers(imperfect, f) for f in fs)
    _agree_on(raws + wit, fs, imperfect, False)
