"""Covering and identity of tree patterns (Chand & Felber 2004, §4; Mühl 2002, §4.4.3).

``covers(f, g)`` (N(f) ⊇ N(g)) is a tree-pattern homomorphism from f into g (Miklau &
Suciu; Chan et al., VLDB 2002): the artificial roots correspond, a ``//`` node of f maps to
a path of length >= 0 of g, and any other node u of f maps to a node v of g with
label(v) ⪯ label(u) in the order x ⪯ * ⪯ // (Chand & Felber), extended to value and
positional predicates: every value predicate of u must cover one of v (records constraint
algebra, :func:`.predicates.pred_covers`), and a positional predicate of u needs the same
tag test and the same positional predicate on v. A homomorphism exists only if f covers g,
so the test is sound; like Chand & Felber's, it may miss rare coverings (the problem is
coNP-complete). The recursion is exactly XSEARCH's (Alg. 3) on a one-pattern tree, so the
factorization-tree index answers what this pairwise test answers.
"""

from __future__ import annotations

from pubsift.models.xml.patterns import DESCENDANT, WILDCARD, Labelled, Node, XPathFilter
from pubsift.models.xml.predicates import pred_covers


def label_leq(v: Labelled, u: Labelled) -> bool:
    """label(v) ⪯ label(u) for a non-``//`` node u: v is at least as specific as u."""
    lv, lu = v.label, u.label
    if lv == DESCENDANT:
        return False
    if lu != WILDCARD and lu != lv:
        return False
    if u.position is not None and (u.position != v.position or lu != lv):
        return False
    vp = v.preds
    for p in u.preds:
        if p not in vp and not any(pred_covers(p, q) for q in vp):
            return False
    return True


class Homomorphism:
    """Memoised on (pattern node, pattern node), each pair is decided once."""

    def __init__(self) -> None:
        self._below: dict[tuple[int, int], bool] = {}

    def below(self, u: Node, v: Node) -> bool:
        """u (a child of an f-node mapped to v) maps under v: onto a child of v, or for
        ``//``, its children under v (path length 0) or u itself under a child of v."""
        key = (id(u), id(v))
        r = self._below.get(key)
        if r is None:
            if u.label == DESCENDANT:
                r = all(self.below(c, v) for c in u.children) or any(
                    self.below(u, w) for w in v.children
                )
            else:
                r = any(self.maps(u, w) for w in v.children)
            self._below[key] = r
        return r

    def maps(self, u: Node, v: Node) -> bool:
        """Non-``//`` node u maps onto v."""
        return label_leq(v, u) and all(self.below(c, v) for c in u.children)


def covers(f: XPathFilter, g: XPathFilter) -> bool:
    """N(f) ⊇ N(g), soundly (may miss a covering, never claims a false one)."""
    if f == g:
        return True
    h = Homomorphism()
    return all(h.below(u, g.root) for u in f.root.children)


def identical(f: XPathFilter, g: XPathFilter) -> bool:
    """N(f) = N(g): mutual covering of the minimized patterns."""
    return f == g or (covers(f, g) and covers(g, f))
