"""Overlap of tree patterns: may answer True when unsure, never False wrongly.

Two patterns are disjoint when no document matches both. The only node every embedding of
an absolute pattern shares is the root element (Mühl 2002, §4.4.3: the root element has a
unique name), so patterns are reported disjoint when

* one of them can match no document (a numeric comparison with NaN), or
* both fix the root element's tag to different names, or
* they put contradicting predicates on the same single-valued target (an attribute or the
  string value) of the root element (shared constraint algebra, NaN handled here).

Everything else is answered True.
"""

from __future__ import annotations

import math

from pubsift.models.constraints import relations
from pubsift.models.xml.patterns import DESCENDANT, WILDCARD, Node, XPathFilter
from pubsift.models.xml.predicates import ANY, NUM, Pred


def _root_element(f: XPathFilter) -> Node | None:
    (first,) = f.root.children
    return None if first.label == DESCENDANT else first


def _contradict(p: Pred, q: Pred) -> bool:
    if p.target != q.target or not p.single_valued or p.domain != q.domain:
        return False
    if p.domain == ANY:
        return False
    a, b = p.constraint, q.constraint
    if not p.satisfiable or not q.satisfiable or p.infinite or q.infinite:
        return False
    if p.domain == NUM and a.matches(math.nan) and b.matches(math.nan):
        return False
    return not relations.overlaps(a, b)


def overlaps(f: XPathFilter, g: XPathFilter) -> bool:
    for h in (f, g):
        if any(not p.satisfiable for n in h.root.walk() for p in n.preds):
            return False
    a, b = _root_element(f), _root_element(g)
    if a is None or b is None:
        return True
    if a.label != WILDCARD and b.label != WILDCARD and a.label != b.label:
        return False
    return not any(_contradict(p, q) for p in a.preds for q in b.preds)
