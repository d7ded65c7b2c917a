"""hypothesis strategies for the xml model: random XPath filters of the supported subset (as
text) over a small vocabulary, random documents over the same vocabulary so that filters and
documents meet often, and events built to match a given filter (with
:mod:`pubsift.models.xml.witness_documents`) — the fixtures of the conformance kit, usable by
any test. Like the other models' ``testing`` modules it imports hypothesis (the ``kit``
extra): ``import pubsift`` and the model never load it.

The kit fixtures of an :class:`~pubsift.models.xml.XmlModel` ``model`` are
``filters(model)``, ``events(model)`` and ``matching_event(model)``.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable

from hypothesis import strategies as st
from lxml import etree
from pubsift.models.xml.model import XmlModel
from pubsift.models.xml.parsing import XmlEvent
from pubsift.models.xml.patterns import XPathFilter
from pubsift.models.xml.witness_documents import witness

TAGS = ("a", "b", "c")
ATTRS = ("x", "y")
VALUES = ("1", "2", "a", " 2 ", "2.5", "-1", "", "ab")
STRINGS = ('"1"', '"2"', '"a"', '"ab"', '"2.5"', '""', '"b"')
NUMBERS = ("1", "2", "2.5", "-1", "0")
OPS = ("=", "!=", "<", "<=", ">", ">=")


@st.composite
def _literal(draw) -> str:
    return draw(st.sampled_from(STRINGS + NUMBERS))


@st.composite
def _predicate(draw, depth: int) -> str:
    kinds = ["attr", "attrcmp", "text", "textcmp", "selfcmp", "childcmp", "func"]
    if depth > 0:
        kinds += ["path", "path", "and"]
    k = draw(st.sampled_from(kinds))
    attr = "@" + draw(st.sampled_from(ATTRS))
    op = draw(st.sampled_from(OPS))
    if k == "attr":
        return attr
    if k == "attrcmp":
        lit = draw(_literal())
        return f"{attr} {op} {lit}" if draw(st.booleans()) else f"{lit} {op} {attr}"
    if k == "text":
        return "text()"
    if k == "textcmp":
        return f"text() {op} {draw(_literal())}"
    if k == "selfcmp":
        return f". {op} {draw(_literal())}"
    if k == "childcmp":
        return f"{draw(st.sampled_from(TAGS + ('*',)))} {op} {draw(_literal())}"
    if k == "func":
        fn = draw(st.sampled_from(["starts-with", "contains"]))
        tgt = draw(st.sampled_from([attr, "."]))
        return f"{fn}({tgt}, {draw(st.sampled_from(STRINGS))})"
    if k == "and":
        return f"{draw(_predicate(depth - 1))} and {draw(_predicate(depth - 1))}"
    rel = draw(_steps(depth - 1, relative=True))
    return rel


@st.composite
def _step(draw, depth: int, allow_position: bool = True) -> str:
    test = draw(st.sampled_from(TAGS + ("*",)))
    preds = []
    if allow_position and draw(st.integers(0, 9)) == 0:
        preds.append(
            draw(
                st.sampled_from(["1", "2", "position() > 1", "position() != 1", "position() <= 2"])
            )
        )
    preds += [draw(_predicate(depth)) for _ in range(draw(st.integers(0, 2 if depth > 0 else 1)))]
    return test + "".join(f"[{p}]" for p in preds)


@st.composite
def _steps(draw, depth: int, relative: bool = False) -> str:
    n = draw(st.integers(1, 3))
    out = ""
    for i in range(n):
        sep = draw(st.sampled_from(["/", "/", "//"]))
        if i == 0 and relative:
            sep = {"/": "", "//": ".//"}[sep]
        out += sep + draw(_step(depth))
    if draw(st.integers(0, 5)) == 0:
        out += "/" + draw(st.sampled_from(["@x", "@y", "text()"]))
    return out


#: related filters (chains of generalizations), so pools hold covering pairs and triples
FAMILY = (
    "/a/b[@x > 2]",
    "/a/b[@x > 1]",
    "/a/b[@x]",
    "/a/b",
    "/a/*",
    "/a//b",
    "//b",
    "//*",
    "/a",
    "/a[b]",
    "/a[b/c]",
    "/a/b/c",
    "/a/b[c]",
    "//b[c]",
    "/a[@x = 1]/b",
    '/a/b[@x = "1"]',
    "/a/b[@x = 1]",
    "/a/b[@x < 5]",
    "/a/b[@x != 3]",
    '//c[text() = "a"]',
    "//c[text()]",
    '//c[starts-with(@y, "a")]',
    '//c[@y = "ab"]',
    "/a/b[2]",
    "/a/b[2][@x]",
    "/a/*/c",
    "/a//c",
    "//c",
)


def related_xpaths(depth: int = 1) -> st.SearchStrategy[str]:
    """Mostly FAMILY members, sometimes random ones."""
    family = st.sampled_from(FAMILY)
    return st.one_of(family, family, family, family, xpaths(depth))


def xpaths(depth: int = 2) -> st.SearchStrategy[str]:
    """XPath expressions of the supported subset (absolute, some relative)."""
    return st.one_of(
        _steps(depth),
        _steps(depth, relative=True).map(lambda s: s[2:] if s.startswith(".//") else s),
    )


def _element(rnd: random.Random, depth: int) -> etree._Element:
    el = etree.Element(rnd.choice(TAGS))
    for a in ATTRS:
        if rnd.random() < 0.5:
            el.set(a, rnd.choice(VALUES))
    if rnd.random() < 0.5:
        el.text = rnd.choice(VALUES[:-2])
    if depth > 0:
        for _ in range(rnd.randint(0, 3)):
            child = _element(rnd, depth - 1)
            if rnd.random() < 0.2:
                child.tail = rnd.choice(VALUES[:-2])
            el.append(child)
    return el


def documents(depth: int = 3) -> st.SearchStrategy[bytes]:
    """Serialized random documents over TAGS / ATTRS / VALUES (built from a drawn seed:
    cheap to draw, reproducible)."""
    return st.integers(0, 2**32 - 1).map(
        lambda seed: etree.tostring(_element(random.Random(seed), depth))
    )


def filters(model: XmlModel) -> st.SearchStrategy[XPathFilter]:
    """Parsed filters, mostly related ones (:func:`related_xpaths`)."""
    return related_xpaths().map(model.parse_filter)


def events(model: XmlModel) -> st.SearchStrategy[XmlEvent]:
    """Parsed random documents (:func:`documents`)."""
    return documents().map(model.parse_event)


def matching_event(
    model: XmlModel, seeds: int = 6
) -> Callable[[XPathFilter], st.SearchStrategy[XmlEvent] | None]:
    """``f -> strategy of events matching f``: the distinct witness documents of ``seeds``
    builder runs, or None when the builder finds none (memoized per filter)."""

    @functools.cache
    def build(f: XPathFilter) -> st.SearchStrategy[XmlEvent] | None:
        found: list[XmlEvent] = []
        for seed in range(seeds):
            raw = witness(f, random.Random(seed))
            if raw is not None:
                e = model.parse_event(raw)
                if e not in found:
                    found.append(e)
        return st.sampled_from(found) if found else None

    return build
