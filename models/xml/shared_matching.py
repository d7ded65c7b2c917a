"""Matching a document against every pattern of a factorization tree at once.

YFilter-style sharing (Diao & Franklin): a prefix common to many patterns is evaluated once,
in two ways.

* Plain chains (linear paths of tags, ``*`` and ``//`` without predicates) go through a lazy
  DFA over the tree (Green, Miklau, Onizuka & Suciu, ICDT 2003): the tree nodes form an NFA
  over the tag path from the root to each element; the set of NFA states reached by a tag
  path, and the chains ending there, are computed once per distinct tag path and cached
  across documents, so a document costs a dictionary step per element once its paths are
  known. The cache is dropped when patterns are added or removed, and holds at most
  :data:`DFA_CACHE_SIZE` transitions, least recently used first out (documents with
  ever new tag names would otherwise grow it without bound).
* Every other pattern (predicates, positions, branches): walking T(R) top-down, each tree
  node t gets the set C(t) of elements its root-to-t path (tag tests, positions, value
  predicates included) reaches in the document; an empty set prunes the subtree. A chain
  matches iff the node of its last step is reached; a branching pattern can match only if
  all its leaves are reached, and those candidates are decided exactly by
  :class:`.matching.Matcher`.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable

from pubsift.models.xml.document import Document
from pubsift.models.xml.factorization import FactorizationTree
from pubsift.models.xml.matching import Matcher
from pubsift.models.xml.patterns import DESCENDANT, WILDCARD, XPathFilter

#: transitions the lazy DFA keeps (least recently used evicted first)
DFA_CACHE_SIZE = 65_536


class PathAutomaton:
    """The lazy DFA of the plain chains of a factorization tree (see the module doc)."""

    def __init__(self, tree: FactorizationTree, cache_size: int | None = None) -> None:
        self.tree = tree
        self.cache_size = DFA_CACHE_SIZE if cache_size is None else cache_size
        # state: (A = plain non-'//' tree nodes mapped to the element, D = active '//'
        # nodes, M = chains ending at the element, a serial number never reused);
        # transitions keyed by (serial of the parent state, tag)
        self._serials = itertools.count()
        self._start = self._state((tree.root,), ())
        self._next: OrderedDict[tuple[int, str], tuple] = OrderedDict()

    def _state(self, at: tuple, active: tuple) -> tuple:
        ends = 0
        desc = list(active)
        for t in at:
            ends |= t.ends
            d = t.by_label.get(DESCENDANT)
            if d:
                desc.extend(d)
        return (at, tuple(dict.fromkeys(desc)), ends, next(self._serials))

    @property
    def cached(self) -> int:
        """Transitions held."""
        return len(self._next)

    def _step(self, state: tuple, tag: str) -> tuple:
        at, active = state[0], state[1]
        nxt = [
            c
            for t in at + active
            for label in (tag, WILDCARD)
            for c in t.by_label.get(label, ())
            if c.position is None and not c.preds
        ]
        return self._state(tuple(dict.fromkeys(nxt)), active)

    def match(self, doc: Document) -> int:
        """Bitmask of the plain chains matching ``doc``."""
        step, cache = self._step, self._next
        touch, size = cache.move_to_end, self.cache_size
        tags, parent = doc.tags, doc.parent
        states: list = [self._start] + [None] * (len(tags) - 1)
        seen: dict[int, tuple] = {}
        for i in range(1, len(tags)):
            ps = states[parent[i]]
            key = (ps[3], tags[i])
            s = cache.get(key)
            if s is None:
                s = cache[key] = step(ps, tags[i])
                if len(cache) > size:
                    cache.popitem(last=False)
            else:
                touch(key)
            states[i] = s
            seen[s[3]] = s
        result = 0
        for s in seen.values():
            result |= s[2]
        return result


def match_tree(
    tree: FactorizationTree,
    doc: Document,
    leaves: dict[int, int],
    pattern: Callable[[int], XPathFilter],
    only: int = -1,
) -> int:
    """Bitmask of the patterns of ``tree`` among ``only`` that match ``doc``. ``leaves[i]``
    is the number of leaves of branching pattern i; ``pattern(i)`` gives it back for the
    exact check."""
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
        for label in by_label.keys() & present if len(by_label) > 2 else by_label:
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
                if not t2.sub & only:
                    continue
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
    result &= only
    if hits:
        matcher = Matcher(doc)
        for i, n in hits.items():
            if n == leaves[i] and all(matcher.below(u, 0) for u in pattern(i).root.children):
                result |= 1 << i
    return result
