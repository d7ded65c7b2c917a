"""Merging tree patterns (Mühl 2002, §4.3.7 carried over to §4.4; Chan et al., VLDB 2002).

* Perfect merging (N(merger) = ∪ N(inputs)): when one input covers the others it is the
  merger; when two patterns are identical but for one value predicate on the same node and
  target whose constraints merge perfectly in the constraint algebra (and the result is one
  XPath comparison, NaN behaving the same), the merger replaces that predicate. Several
  inputs are merged pairwise, each step exact.
* Imperfect merging (only when asked): the most specific of a fixed ladder of
  generalizations of the inputs (predicates dropped; the main path alone; its suffixes as
  ``//x/y``; finally ``//*``, which matches every document) that covers every input,
  checked with :func:`.covering.covers`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from pubsift.models.constraints import Constraint, Op, relations
from pubsift.models.xml import lexical
from pubsift.models.xml.covering import covers
from pubsift.models.xml.minimize import minimize
from pubsift.models.xml.patterns import DESCENDANT, ROOT, WILDCARD, Node, XPathFilter, make
from pubsift.models.xml.predicates import ANY, NUM, SELF, STR, Pred, exists
from pubsift.models.xml.xpath import format_text

_RENDERABLE = {
    STR: {Op.EQ, Op.NE, Op.PREFIX, Op.SUBSTRING},
    NUM: {Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE},
}


def _merge_preds(p: Pred, q: Pred) -> Pred | None:
    if (
        p.target != q.target
        or p.domain != q.domain
        or p.domain == ANY
        or not (p.satisfiable and q.satisfiable)
        or p.infinite
        or q.infinite
    ):
        return None
    try:
        c = relations.merge([p.constraint, q.constraint])
    except (ValueError, TypeError):
        return None
    if c is None:
        return None
    if p.domain == NUM and c.matches(math.nan) != (
        p.constraint.matches(math.nan) or q.constraint.matches(math.nan)
    ):
        return None
    if p.domain == STR and (
        c.op is Op.EXISTS or (c.op in (Op.PREFIX, Op.SUBSTRING) and c.operand == "")
    ):
        return exists(p.target)  # every string: the target exists
    if c.op not in _RENDERABLE[p.domain]:
        return None
    if p.domain == NUM and type(c.operand) is int:  # the algebra may give 5 for 5.0
        c = Constraint(c.op, float(c.operand))
    merged = Pred(p.target, p.domain, c)
    return merged if merged.renderable else None


def _diff(a: Node, b: Node) -> Node | None:
    """a and b identical but for one predicate of one node, merged; else None."""
    if a.label != b.label or a.position != b.position or len(a.children) != len(b.children):
        return None
    if a.preds != b.preds:
        if a.children != b.children:
            return None
        pa, pb = set(a.preds) - set(b.preds), set(b.preds) - set(a.preds)
        if len(pa) != 1 or len(pb) != 1:
            return None
        m = _merge_preds(pa.pop(), pb.pop())
        if m is None:
            return None
        common = list(set(a.preds) & set(b.preds))
        if not (m.domain == ANY and m.target == SELF):  # every element has a string value
            common.append(m)
        return make(a.label, common, a.position, a.children)
    ca, cb = Counter(a.children), Counter(b.children)
    ra, rb = list((ca - cb).elements()), list((cb - ca).elements())
    if len(ra) != 1 or len(rb) != 1:
        return None
    sub = _diff(ra[0], rb[0])
    if sub is None:
        return None
    rest = list((ca & cb).elements())
    return make(a.label, a.preds, a.position, rest + [sub])


def merge_pair(f: XPathFilter, g: XPathFilter) -> XPathFilter | None:
    """A perfect merger of two patterns, or None."""
    if covers(f, g):
        return f
    if covers(g, f):
        return g
    root = _diff(f.root, g.root)
    return None if root is None else XPathFilter(minimize(root))


def merge_perfect(fs: Sequence[XPathFilter]) -> XPathFilter | None:
    if not fs:
        return None
    m = fs[0]
    for f in fs[1:]:
        merged = merge_pair(m, f)
        if merged is None:
            return None
        m = merged
    return m if _writable(m) else None


def _writable(f: XPathFilter) -> bool:
    """Whether f's text form reads back (within the length limit): a merger that could
    not be written is not returned."""
    return len(format_text(f)) <= lexical.MAX_LENGTH


def skeleton(n: Node) -> Node:
    """n without value and positional predicates (its shape)."""
    return make(n.label, (), None, [skeleton(c) for c in n.children])


def _main_path(n: Node) -> list[str]:
    """Labels along the last child at every node (the path rendering continues)."""
    out = []
    while n.children:
        n = n.children[-1]
        out.append(n.label)
    return out


def _suffix_pattern(labels: list[str]) -> XPathFilter:
    node = None
    for lab in reversed(labels):
        node = make(lab, (), None, [node] if node is not None else [])
    return XPathFilter(make(ROOT, (), None, [make(DESCENDANT, (), None, [node])]))


def generalizations(f: XPathFilter) -> list[XPathFilter]:
    """Ever more general patterns covering f, ending with ``//*``."""
    out = [XPathFilter(minimize(skeleton(f.root)))]
    path = list(_main_path(f.root))
    # cut at the last '//' so the suffix is a plain child path
    if DESCENDANT in path:
        path = path[len(path) - path[::-1].index(DESCENDANT) :]
    out.extend(_suffix_pattern(path[i:]) for i in range(len(path)))
    out.append(_suffix_pattern([WILDCARD]))
    return out


def merge_imperfect(fs: Sequence[XPathFilter]) -> XPathFilter:
    """A pattern covering every input: a perfect merger if there is one, else the first
    generalization of an input that covers all inputs."""
    m = merge_perfect(fs)
    if m is not None:
        return m
    for f in fs:
        for g in generalizations(f):
            if all(covers(g, h) for h in fs):
                return g
    return _suffix_pattern([WILDCARD])
