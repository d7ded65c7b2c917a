"""A document's navigation index for tree-pattern matching.

Nodes are numbered in document order: 0 is the document node, 1.. the elements. For each
node the index keeps its parent, the last number of its subtree (so descendants of n are
the numbers in (n, end[n]]), its element children grouped by tag, and its position among
the siblings with the same tag and among all element siblings (XPath ``position()`` for a
name test and for ``*``). Attributes and text nodes are read on demand and kept; string
values (``.``) are never built nor kept: in a document of nested elements they add up to
depth x size, so a predicate on one is decided over the element's text pieces
(:meth:`.predicates.Pred.holds_on_chunks`) and only its answer is kept.
"""

from __future__ import annotations

from bisect import bisect_right
from sys import intern

from lxml import etree
from pubsift.models.xml.predicates import SELF, Pred

_LAZY = frozenset(("by_tag", "by_tag_children", "children", "end", "pos_any", "pos_tag"))


class Document:
    __slots__ = (
        "_values",
        "by_tag",
        "by_tag_children",
        "children",
        "elements",
        "end",
        "parent",
        "pos_any",
        "pos_tag",
        "tags",
    )

    def __init__(self, root: etree._Element) -> None:
        elements: list = [None]
        tags: list = [None]
        parent_of: list[int] = [-1]
        ids: dict = {}
        for el in root.iter():
            tag = el.tag
            if not isinstance(tag, str):
                continue
            i = len(elements)
            ids[el] = i
            elements.append(el)
            tags.append(intern(tag))
            p = el.getparent()
            parent_of.append(ids[p] if p is not None else 0)
        self.elements = elements
        self.tags = tags
        self.parent = parent_of
        self._values: dict = {}

    def __getattr__(self, name: str) -> object:
        """The structure beyond tags and parents, built on first use (the path automaton
        of the index reads only those two)."""
        if name not in _LAZY:
            raise AttributeError(name)
        self._structure()
        return object.__getattribute__(self, name)

    def _structure(self) -> None:
        tags, parent_of = self.tags, self.parent
        n = len(tags)
        children: list[list[int]] = [[] for _ in range(n)]
        by_tag_children: list[dict] = [{} for _ in range(n)]
        pos_tag = [1] * n
        pos_any = [1] * n
        by_tag: dict[str, list[int]] = {}
        for i in range(1, n):
            up = parent_of[i]
            kids = children[up]
            kids.append(i)
            pos_any[i] = len(kids)
            same = by_tag_children[up].setdefault(tags[i], [])
            same.append(i)
            pos_tag[i] = len(same)
            by_tag.setdefault(tags[i], []).append(i)
        end = list(range(n))
        for i in range(n - 1, 0, -1):
            up = parent_of[i]
            if end[i] > end[up]:
                end[up] = end[i]
        self.end = end
        self.children = children
        self.by_tag_children = by_tag_children
        self.pos_tag = pos_tag
        self.pos_any = pos_any
        self.by_tag = by_tag

    def __len__(self) -> int:
        return len(self.elements)

    def values(self, i: int, target: str) -> list[str]:
        """The string values of ``target`` (``@name`` or ``text()``) of node i."""
        key = (i, target)
        v = self._values.get(key)
        if v is None:
            el = self.elements[i]
            if target.startswith("@"):
                a = el.get(target[1:])
                v = [] if a is None else [a]
            else:
                v = [t for t in [el.text] + [c.tail for c in el] if t]
            self._values[key] = v
        return v

    def satisfies(self, i: int, preds: tuple[Pred, ...]) -> bool:
        for p in preds:
            if p.target == SELF:
                key = (i, p)
                r = self._values.get(key)
                if r is None:
                    r = self._values[key] = p.holds_on_chunks(self.elements[i].itertext())
                if not r:
                    return False
            elif not p.holds(self.values(i, p.target)):
                return False
        return True

    def descendants(self, context: list[int], tag: str | None) -> list[int]:
        """Elements strictly below some node of ``context`` (sorted numbers) with tag
        ``tag`` (None: any), in document order."""
        end = self.end
        out: list[int] = []
        if tag is None:
            last = -1
            for x in context:
                if x <= last:
                    continue
                e = end[x]
                out.extend(range(max(x + 1, last + 1), e + 1))
                last = max(last, e)
            return out
        cands = self.by_tag.get(tag)
        if not cands:
            return out
        last = -1
        for x in context:
            e = end[x]
            if e <= last:
                continue
            lo = bisect_right(cands, max(x, last))
            hi = bisect_right(cands, e)
            out.extend(cands[lo:hi])
            last = e
        return out
