"""Matching one tree pattern against a document (Chand & Felber 2004, §3: a document matches
when evaluating the expression yields a non-empty result, XPath 1.0's boolean).

An embedding maps the pattern root to the document node, a ``//`` node to a path of
length >= 0, and every other node to an element passing its tag test, its positional
predicate (position among the parent's children passing the tag test) and its value
predicates, with child edges kept. Decisions are memoised per (pattern node, element).

A ``//`` node asked about a second element gets a table of its answer for every element,
filled bottom-up in reverse document order (a ``//`` holds under x iff it holds at a child
of x or under one): repeated lazy searches of nested subtrees would cost depth x size per
``//`` on a deep document (``//a//a//a[@x]`` on 2,048 nested elements), and a recursive
formulation would recurse as deep as the document.
"""

from __future__ import annotations

from pubsift.models.xml.document import Document
from pubsift.models.xml.patterns import DESCENDANT, WILDCARD, Node, XPathFilter


class Matcher:
    """Evaluates pattern nodes on one document, memoised on (node, element)."""

    __slots__ = ("_memo", "_tables", "doc")

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self._memo: dict[tuple[int, int], bool] = {}
        # '//' node -> None after its first (lazy) question, then its table
        self._tables: dict[int, bytearray | None] = {}

    def candidates(self, u: Node, x: int) -> list[int]:
        """Children of x passing u's tag and positional tests."""
        doc = self.doc
        if u.label == WILDCARD:
            kids = doc.children[x]
            pos = doc.pos_any
        else:
            kids = doc.by_tag_children[x].get(u.label, ())
            pos = doc.pos_tag
        if u.position is None:
            return kids
        test = u.position.holds
        return [y for y in kids if test(pos[y])]

    def at(self, u: Node, y: int) -> bool:
        """u (non-``//``, tag and position already checked) holds at element y."""
        key = (id(u), y)
        r = self._memo.get(key)
        if r is None:
            r = self.doc.satisfies(y, u.preds) and all(self.below(c, y) for c in u.children)
            self._memo[key] = r
        return r

    def below(self, u: Node, x: int) -> bool:
        """u holds somewhere under x: at a child (``//``: at descendants-or-self)."""
        if u.label == DESCENDANT:
            key = id(u)
            if key in self._tables:
                table = self._tables[key]
                if table is None:
                    table = self._tables[key] = self._table(u)
                return bool(table[x])
            self._tables[key] = None
            doc = self.doc
            if len(u.children) == 1:
                (c,) = u.children
                if c.position is None:
                    tag = None if c.label == WILDCARD else c.label
                    return any(self.at(c, y) for y in doc.descendants([x], tag))
            return any(all(self.below(c, z) for c in u.children) for z in range(x, doc.end[x] + 1))
        return any(self.at(u, y) for y in self.candidates(u, x))

    def _table(self, u: Node) -> bytearray:
        """below(u, x) for every node x of the document (u a ``//`` node)."""
        doc = self.doc
        parent, tags = doc.parent, doc.tags
        n = len(doc)
        out = bytearray(n)
        c = u.children[0]
        direct = len(u.children) == 1 and c.position is None
        tag = None if c.label == WILDCARD else c.label
        for y in range(n - 1, -1, -1):
            if direct:  # u holds under y's parent if c holds at y, or u holds under y
                if y and (out[y] or ((tag is None or tags[y] == tag) and self.at(c, y))):
                    out[parent[y]] = 1
            else:  # u's children all hold under some descendant-or-self of x
                if not out[y] and all(self.below(k, y) for k in u.children):
                    out[y] = 1
                if y and out[y]:
                    out[parent[y]] = 1
        return out


def matches(f: XPathFilter, doc: Document) -> bool:
    """True iff the XPath expression of f, evaluated on the document, is non-empty."""
    m = Matcher(doc)
    return all(m.below(u, 0) for u in f.root.children)
