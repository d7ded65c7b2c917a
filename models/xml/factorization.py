"""The factorization tree T(R) and XSEARCH (Chand & Felber 003 §4, Algorithms 1-5).

T(R) factorizes the tree patterns of a search set R: each node t has a label and the set
sub(t) of patterns having a node there; the root r_T has no label and sub(r_T) = R.
Labels here are *extended labels* (:attr:`.patterns.Node.key`): tag test, value predicates
and positional predicate, so two patterns share a node only where they agree on all three.

Sets of patterns are bitmasks over pattern numbers (Python ints), so unions and
intersections cost a few machine words per 64 patterns.

* :meth:`FactorizationTree.add` / :meth:`remove`: Algorithms 1 and 2 (with the root's
  special case: the caller keeps sub(r_T)).
* :meth:`covered` — XSEARCH⊇ (Algorithm 3): the patterns of R covered by s.
* :meth:`covering` — XSEARCH⊆ (Algorithms 4 and 5, with r_T where Alg. 5 writes t, and the
  artificial root r_s above s's first step): the patterns of R that cover s.

Both are memoised on (tree node, pattern node) so each pair is decided once per search,
the O(|T(R)|·|s|) bound of the paper, and both carry a mask of the patterns still in
question, so subtrees holding none of them are not visited. The node order ⪯ is
:func:`.covering.label_leq`, which makes both modes agree with the pairwise
:func:`.covering.covers`.
"""
from __future__ import annotations

from collections.abc import Iterator

from pubsift.models.xml.covering import label_leq
from pubsift.models.xml.patterns import DESCENDANT, WILDCARD, Node


class TNode:
    """A factorization-tree node: extended label, children, sub(t) as a bitmask."""

    __slots__ = ("label", "preds", "position", "key", "parent", "children", "by_label",
                 "sub", "ends", "bleaves")

    def __init__(self, key: tuple | None, parent: "TNode | None") -> None:
        self.key = key
        self.label, self.preds, self.position = key if key is not None else (None, (), None)
        self.parent = parent
        self.children: list[TNode] = []
        self.by_label: dict[str, list[TNode]] = {}
        self.sub = 0          # patterns with a node here
        self.ends = 0         # chain patterns whose last node is here
        self.bleaves = 0      # branching patterns with a leaf here

    def child(self, key: tuple, bit: int) -> "TNode":
        """Alg. 1 lines 1-5: a child with this label not yet holding the pattern, or a
        new one."""
        for t in self.by_label.get(key[0], ()):
            if t.key == key and not t.sub & bit:
                return t
        t = TNode(key, self)
        self.children.append(t)
        self.by_label.setdefault(key[0], []).append(t)
        return t

    def drop(self, t: "TNode") -> None:
        self.children.remove(t)
        same = self.by_label[t.label]
        same.remove(t)
        if not same:
            del self.by_label[t.label]


class FactorizationTree:
    """T(R) over patterns numbered by the caller (bit i <-> pattern i)."""

    def __init__(self) -> None:
        self.root = TNode(None, None)
        self.nodes = 0  # |T(R)| without the root

    # -- Algorithms 1 and 2 -------------------------------------------------------------
    def add(self, i: int, pattern: Node) -> None:
        """Insert pattern number i (its root is the artificial ``/``)."""
        bit = 1 << i
        self.root.sub |= bit
        chain = pattern.is_chain()
        for u in pattern.children:
            self._add(bit, self.root, u, chain)

    def _add(self, bit: int, t: TNode, u: Node, chain: bool) -> None:
        t2 = t.child(u.key, bit)
        if not t2.sub:
            self.nodes += 1
        t2.sub |= bit
        if not u.children:
            if chain:
                t2.ends |= bit
            else:
                t2.bleaves |= bit
        for c in u.children:
            self._add(bit, t2, c, chain)

    def remove(self, i: int) -> None:
        bit = 1 << i
        if not self.root.sub & bit:
            raise KeyError(i)
        self.root.sub &= ~bit
        self._remove(bit, self.root)

    def _remove(self, bit: int, t: TNode) -> None:
        for t2 in [c for c in t.children if c.sub & bit]:
            t2.sub &= ~bit
            t2.ends &= ~bit
            t2.bleaves &= ~bit
            self._remove(bit, t2)
            if not t2.sub:
                t.drop(t2)
                self.nodes -= 1

    def walk(self) -> Iterator[TNode]:
        stack = list(self.root.children)
        while stack:
            t = stack.pop()
            yield t
            stack.extend(t.children)

    # -- Algorithm 3: covered mode -------------------------------------------------------
    def covered(self, s: Node) -> int:
        """Patterns of R covered by s (s ⊒ them): XSEARCH⊇(r_T, ·) over s's root children."""
        m = self.root.sub
        memo: dict = {}
        for u in _ordered(s.children):
            if not m:
                break
            m = self._covered(self.root, u, m, memo)
        return m

    def _covered(self, t: TNode, u: Node, m: int, memo: dict) -> int:
        """XSEARCH⊇(t, u) ∩ m: patterns with u's subtree mapping under their node t."""
        key = (id(t), id(u))
        hit = memo.get(key)
        if hit is not None and not m & ~hit[0]:
            return hit[1] & m
        if not t.children:
            r = 0
        elif u.label != DESCENDANT:
            r = 0
            kids = u.children if len(u.children) < 2 else _ordered(u.children)
            if u.label == WILDCARD:
                cands = [c for c in t.children if c.label != DESCENDANT]
            else:
                cands = t.by_label.get(u.label, ())
            for t2 in cands:
                mm = m & t2.sub
                if not mm or not label_leq(t2, u):
                    continue
                for c in kids:
                    mm = self._covered(t2, c, mm, memo)
                    if not mm:
                        break
                r |= mm
        else:
            s0 = m
            for c in u.children:
                s0 = self._covered(t, c, s0, memo)
                if not s0:
                    break
            rest = m & ~s0
            s1 = 0
            if rest:
                for t2 in t.children:
                    mm = rest & t2.sub
                    if mm:
                        s1 |= self._covered(t2, u, mm, memo)
            r = s0 | s1
        memo[key] = (m, r)
        return r

    # -- Algorithms 4 and 5: cover mode --------------------------------------------------
    def covering(self, s: Node) -> int:
        """Patterns of R covering s (Alg. 5): sub(r_T) minus the failures below r_T."""
        fails = 0
        memo: dict = {}
        for t2 in self.root.children:
            fails |= self._failing(t2, s, t2.sub, memo)
        return self.root.sub & ~fails

    def _failing(self, t: TNode, u: Node, m: int, memo: dict) -> int:
        """XSEARCH⊆(t, u) ∩ m (Alg. 4): patterns whose subtree at t does not map under
        s's node u."""
        key = (id(t), id(u))
        hit = memo.get(key)
        if hit is not None and not m & ~hit[0]:
            return hit[1] & m
        if not u.children:
            r = m
        elif t.label != DESCENDANT:
            compatible = [c for c in u.children if label_leq(c, t)]
            if not compatible:
                r = m
            elif not t.children:
                r = 0
            else:
                r = m
                for c in compatible:
                    g = 0
                    for t2 in t.children:
                        mm = r & t2.sub
                        if mm:
                            g |= self._failing(t2, c, mm, memo)
                    r = g
                    if not r:
                        break
        else:
            s0 = 0
            for t2 in t.children:
                mm = m & t2.sub
                if mm:
                    s0 |= self._failing(t2, u, mm, memo)
            r = s0
            for c in u.children:
                if not r:
                    break
                r = self._failing(t, c, r, memo)
        memo[key] = (m, r)
        return r


def _ordered(nodes: tuple[Node, ...]) -> list[Node]:
    """Selective branches first: tags, then ``*``, then ``//``."""
    return sorted(nodes, key=lambda n: (n.label == DESCENDANT, n.label == WILDCARD))
