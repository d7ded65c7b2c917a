"""Matching a document against every pattern of a factorization tree at once.

YFilter-style sharing (Diao & Franklin): a prefix common to many patterns is evaluated once.
Walking T(R) top-down, each tree node t gets the set C(t) of elements its root-to-t path
(tag tests, positions, value predicates included) reaches in the document; a node whose set
is empty prunes its whole subtree. A chain pattern (no branching) matches iff the node of
its last step is reached. A branching pattern can match only if all of its leaves are
reached; those candidates are then decided exactly by :class:`.matching.Matcher`.
"""
from __future__ import annotations

from collections.abc import Callable

from pubsift.models.xml.document import Document
from pubsift.models.xml.factorization import FactorizationTree
from pubsift.models.xml.matching import Matcher
from pubsift.models.xml.patterns import DESCENDANT, WILDCARD, XPathFilter


def match_tree(tree: FactorizationTree, doc: Document, leaves: dict[int, int],
               pattern: Callable[[int], XPathFilter]) -> int:
    """Bitmask of the patterns of ``tree`` that match ``doc``. ``leaves[i]`` is the number
    of leaves of branching pattern i; ``pattern(i)`` gives it back for the exact check."""
    result = 0
    hits: dict[int, int] = {}
    children, by_tag_children = doc.children, doc.by_tag_children
    stack: list = [(tree.root, [0], False)]
    while stack:
        t, ctx, desc = stack.pop()
        for label, group in t.by_label.items():
            if label == DESCENDANT:
                ordered = sorted(ctx)
                for t2 in group:
                    stack.append((t2, ordered, True))
                continue
            if desc:
                cands = doc.descendants(ctx, None if label == WILDCARD else label)
            elif label == WILDCARD:
                cands = [y for x in ctx for y in children[x]]
            else:
                cands = []
                for x in ctx:
                    same = by_tag_children[x].get(label)
                    if same:
                        cands.extend(same)
            if not cands:
                continue
            pos = doc.pos_any if label == WILDCARD else doc.pos_tag
            for t2 in group:
                c = cands
                if t2.position is not None:
                    holds = t2.position.holds
                    c = [y for y in c if holds(pos[y])]
                if t2.preds:
                    preds = t2.preds
                    c = [y for y in c if doc.satisfies(y, preds)]
                if not c:
                    continue
                result |= t2.ends
                b = t2.bleaves
                while b:
                    low = b & -b
                    i = low.bit_length() - 1
                    hits[i] = hits.get(i, 0) + 1
                    b ^= low
                if t2.children:
                    stack.append((t2, c, False))
    if hits:
        m = Matcher(doc)
        for i, n in hits.items():
            if n == leaves[i] and all(m.below(u, 0) for u in pattern(i).root.children):
                result |= 1 << i
    return result
