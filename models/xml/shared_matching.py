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
    found: list[int] = []
    hits: dict[int, int] = {}
    children, by_tag_children, by_tag = doc.children, doc.by_tag_children, doc.by_tag
    pos_any, pos_tag = doc.pos_any, doc.pos_tag
    present = by_tag.keys() | {WILDCARD, DESCENDANT}
    # a context is a tuple of element numbers; equal contexts are mostly the same object
    # (candidates are memoised), so memo keys use the object's id, and every context is
    # kept alive in `alive` so that ids stay unique
    memo: dict[tuple, tuple] = {}
    ordered_of: dict[int, tuple] = {}
    root_ctx = (0,)
    alive: list[tuple] = [root_ctx]
    stack: list = [(tree.root, root_ctx, False)]
    pop, push = stack.pop, stack.append
    while stack:
        t, ctx, desc = pop()
        by_label = t.by_label
        for label in (by_label.keys() & present if len(by_label) > 2 else by_label):
            group = by_label[label]
            if label == DESCENDANT:
                ordered = ordered_of.get(id(ctx))
                if ordered is None:
                    ordered = ordered_of[id(ctx)] = tuple(sorted(ctx))
                    alive.append(ordered)
                for t2 in group:
                    push((t2, ordered, True))
                continue
            key = (id(ctx), label, desc)
            cands = memo.get(key)
            if cands is None:
                if label not in present:
                    cands = ()
                elif desc:
                    cands = tuple(doc.descendants(ctx, None if label == WILDCARD else label))
                elif label == WILDCARD:
                    cands = tuple([y for x in ctx for y in children[x]])
                else:
                    out: list[int] = []
                    for x in ctx:
                        same = by_tag_children[x].get(label)
                        if same:
                            out.extend(same)
                    cands = tuple(out)
                memo[key] = cands
            if not cands:
                continue
            for t2 in group:
                c = cands
                if t2.position is not None:
                    holds = t2.position.holds
                    pos = pos_any if label == WILDCARD else pos_tag
                    c = tuple([y for y in c if holds(pos[y])])
                    alive.append(c)
                if t2.preds:
                    preds = t2.preds
                    c = tuple([y for y in c if doc.satisfies(y, preds)])
                    alive.append(c)
                if not c:
                    continue
                if t2.ends:
                    found.append(t2.ends)
                b = t2.bleaves
                while b:
                    low = b & -b
                    i = low.bit_length() - 1
                    hits[i] = hits.get(i, 0) + 1
                    b ^= low
                if t2.children:
                    push((t2, c, False))
    result = 0
    for m in found:
        result |= m
    if hits:
        m = Matcher(doc)
        for i, n in hits.items():
            if n == leaves[i] and all(m.below(u, 0) for u in pattern(i).root.children):
                result |= 1 << i
    return result
