"""An XPath tree-pattern generator driven by a DTD (Chand & Felber 2004, §5), the way
YFilter's path generator (Diao & Franklin, YFilter 1.0) grows queries, with branches.

lxml reads the DTD's content models. A pattern follows one walk down the DTD from the root
element: at each level the next element is one of the current element's children, chosen
with a Zipf(``theta``) skew over the children in declaration order, and the walk stops at an
element without element children or after ``h`` levels. Each level's step is:

* with probability ``p_desc`` (not right after another ``//``), ``//``: the walk then skips
  ``floor(U * (h - level))`` levels of the DTD (U uniform in [0, 1)) without writing steps;
  skipped levels count towards ``h``, and a ``//`` whose skip reaches ``h`` is dropped;
* the element's name, or ``*`` with probability ``p_star`` (after ``//*``, the next step is
  a ``//`` step too, as YFilter writes ``//*//x``);
* with probability ``p_lambda``, when the element has two children or more and a level is
  left, a branch: a relative path grown the same way from another child than the one the
  walk goes on with (its first step a plain name), which may branch in turn.

Chand & Felber's workload: the NITF DTD, h = 10, p* = 0.1, p// = 0.05, pλ = 0.1, θ = 1.
The DTD is NITF 2.5 (the copy in YFilter's release, ``yfilter/nitf-2-5.dtd`` of the data set):
a 2004 paper could not use NITF 3.5 (2009). With it, the first n distinct patterns give
Σ|s| within 3% of their Table 2 at every size from 1k to 100k (docs/xml.md).
"""

from __future__ import annotations

import math
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

    def _zipf(self, element: str) -> int:
        ks = self.kids[element]
        return self.rnd.choices(range(len(ks)), weights=self._weights[element])[0]

    def _walk(self, element: str, level: int, relative: bool) -> Node | None:
        """The path grown from ``element`` at ``level`` (0 = the root element); a relative
        path (a branch) starts with a plain name step. None when a leading ``//`` skips
        every level (YFilter writes an empty query then)."""
        w, rnd, h = self.w, self.rnd, self.w.h
        start = level
        steps: list[tuple[str, bool, Node | None]] = []  # label, '//' before it, branch
        in_desc = False  # after a '//' (and the '*' steps right after it)
        desc = False  # the next written step is preceded by '//'
        skip = 0
        while level < h:
            kids = self.kids.get(element)
            free = not relative or level > start  # may be '//' or '*'
            if not kids:
                if not in_desc and free and rnd.random() < w.p_desc:
                    desc = True
                label = WILDCARD if free and rnd.random() < w.p_star else element
                steps.append((label, desc, None))
                break
            main = self._zipf(element)
            if in_desc and skip > 0:
                skip -= 1
            else:
                if not in_desc and free and rnd.random() < w.p_desc:
                    in_desc = desc = True
                    skip = math.floor(rnd.random() * (h - level))
                if skip > 0:
                    skip -= 1
                else:
                    if free and rnd.random() < w.p_star:
                        label = WILDCARD
                    else:
                        label, in_desc = element, False
                    branch = None
                    if rnd.random() < w.p_lambda and level < h - 1 and len(kids) > 1:
                        other = main
                        while other == main:
                            other = self._zipf(element)
                        branch = self._walk(kids[other], level + 1, True)
                    steps.append((label, desc, branch))
                    desc = in_desc
            element = kids[main]
            level += 1
        node: Node | None = None
        for label, before, branch in reversed(steps):
            children = [c for c in (branch, node) if c is not None]
            n = make(label, (), None, children)
            node = make(DESCENDANT, (), None, [n]) if before else n
        return node

    def pattern(self) -> XPathFilter:
        first = None
        while first is None:
            first = self._walk(self.root, 0, False)
        return XPathFilter(minimize(make(ROOT, (), None, [first])))

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
