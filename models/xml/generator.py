"""An XPath tree-pattern generator driven by a DTD (Chand & Felber 2004, §5, after the
generators of YFilter and Chan et al.).

lxml reads the DTD's content models; a pattern is grown from the root element by choosing,
at each node, one child element (or, with probability ``p_lambda``, two) among those its
content model allows, with a Zipf(``theta``) skew over the children in declaration order.
A node becomes ``*`` with probability ``p_star``; with probability ``p_desc`` the edge to it
becomes ``//`` and the walk skips one to three further levels of the DTD first. Growth stops
at elements without element children and at height ``h``.

Chand & Felber's workload: the NITF DTD, h = 10, p* = 0.1, p// = 0.05, pλ = 0.1, θ = 1.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lxml import etree
from pubsift.models.xml.minimize import minimize
from pubsift.models.xml.patterns import DESCENDANT, ROOT, WILDCARD, Node, XPathFilter, make


def _content_names(c: Any, names: list[str]) -> None:
    """Add the element names of the DTD content model ``c`` to ``names`` (once each)."""
    if c is None:
        return
    if c.type == "element" and c.name not in names:
        names.append(c.name)
    _content_names(c.left, names)
    _content_names(c.right, names)


@dataclass(frozen=True)
class Workload:
    h: int = 10
    p_star: float = 0.1
    p_desc: float = 0.05
    p_lambda: float = 0.1
    theta: float = 1.0


CHAND_FELBER = Workload()


def content_models(dtd_path: str | Path) -> tuple[str, dict[str, list[str]]]:
    """(root element, element -> child element names in declaration order) of a DTD.
    The root is the declared element that no content model mentions (the first such)."""
    dtd = etree.DTD(str(dtd_path))
    kids: dict[str, list[str]] = {}
    for el in dtd.iterelements():
        names: list[str] = []
        _content_names(el.content, names)
        kids[el.name] = names  # type: ignore[index]  # a declared element has a name
    mentioned = {n for names in kids.values() for n in names}
    roots = [n for n in kids if n not in mentioned]
    return (roots[0] if roots else next(iter(kids))), kids


class PatternGenerator:
    """Random tree patterns valid for a DTD (each pattern matches some valid document)."""

    def __init__(
        self, dtd_path: str | Path, workload: Workload = CHAND_FELBER, seed: int = 0
    ) -> None:
        self.root, self.kids = content_models(dtd_path)
        self.w = workload
        self.rnd = random.Random(seed)
        self._weights: dict[str, list[float]] = {
            n: [1.0 / (k + 1) ** workload.theta for k in range(len(ks))]
            for n, ks in self.kids.items()
        }

    def _child(self, element: str) -> str | None:
        ks = self.kids.get(element)
        if not ks:
            return None
        return self.rnd.choices(ks, weights=self._weights[element])[0]

    def _grow(self, element: str, height: int) -> Node:
        """The node for ``element`` at ``height`` (1 = just below the root)."""
        label = WILDCARD if self.rnd.random() < self.w.p_star else element
        children: list[Node] = []
        if height < self.w.h and self.kids.get(element):
            n = 2 if self.rnd.random() < self.w.p_lambda else 1
            children.extend(self._edge(element, height) for _ in range(n))
        return make(label, (), None, children)

    def _edge(self, parent: str, height: int) -> Node:
        child = self._child(parent)
        assert child is not None  # called for elements with children only
        if self.rnd.random() < self.w.p_desc:
            for _ in range(self.rnd.randint(1, 3)):
                nxt = self._child(child)
                if nxt is None:
                    break
                child = nxt
            return make(DESCENDANT, (), None, [self._grow(child, height + 1)])
        return self._grow(child, height + 1)

    def pattern(self) -> XPathFilter:
        if self.rnd.random() < self.w.p_desc:
            first = make(DESCENDANT, (), None, [self._grow(self._random_element(), 1)])
        else:
            first = self._grow(self.root, 1)
        return XPathFilter(minimize(make(ROOT, (), None, [first])))

    def _random_element(self) -> str:
        """An element reached by a Zipf walk of 0-3 steps from the root (for a leading
        ``//``)."""
        el = self.root
        for _ in range(self.rnd.randint(0, 3)):
            nxt = self._child(el)
            if nxt is None:
                break
            el = nxt
        return el

    def patterns(self, n: int, distinct: bool = True) -> list[XPathFilter]:
        """n patterns (distinct ones when ``distinct``, as in Chand & Felber's search
        sets)."""
        out: dict[XPathFilter, None] = {}
        result: list[XPathFilter] = []
        tries = 0
        while len(result) < n:
            f = self.pattern()
            tries += 1
            if distinct:
                if f in out:
                    if tries > 50 * n:
                        raise ValueError(f"the workload yields fewer than {n} distinct patterns")
                    continue
                out[f] = None
            result.append(f)
        return result

    def xpaths(self, n: int, distinct: bool = True) -> Iterator[str]:
        for f in self.patterns(n, distinct):
            yield f.xpath()
