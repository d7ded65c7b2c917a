"""The factorization tree T(R) and XSEARCH (Chand & Felber 2004, §4, Algorithms 1-5).

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
the O(|T(R)|·|s|) bound of the paper (cover mode memoises only the pairs below a ``//``
of T(R): the others are reached once), and both carry a mask of the patterns still in
question, so subtrees holding none of them are not visited. The node order ⪯ is
:func:`.covering.label_leq`, which makes both modes agree with the pairwise
:func:`.covering.covers`.

Both start from the patterns whose tags and child edges s allows (a tag node maps onto a
node with that tag, a child edge between tags onto such an edge). A mask is as wide as the
highest pattern number in it and each operation allocates a new one, so at 10,000 patterns
cover mode takes the tags a group at a time and the edges through each tag's parents, and
its search tests equality (which only reads) where an or would allocate and stops at the
child of T(R) holding all of a node's patterns (docs/xml.md, "The index").
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence

from pubsift.models.xml.covering import label_leq
from pubsift.models.xml.patterns import DESCENDANT, ROOT, WILDCARD, Node


def bits(m: int) -> list[int]:
    """The set bit positions of m (pattern numbers of a pattern set), in increasing
    order."""
    out: list[int] = []
    if m.bit_count() < 64:
        while m:
            low = m & -m
            out.append(low.bit_length() - 1)
            m ^= low
        return out
    s = bin(m)[:1:-1]
    i = s.find("1")
    while i >= 0:
        out.append(i)
        i = s.find("1", i + 1)
    return out


#: a move of :attr:`TNode.moves`: (moves of the children that continue, their ``*``
#: moves, numbers of the chains ending at the children, the children's ``//`` children)
Move = tuple[tuple[dict, ...], tuple[tuple, ...], tuple[int, ...], tuple["TNode", ...]]


class TNode:
    """A factorization-tree node: extended label, children, sub(t) as a bitmask."""

    __slots__ = (
        "bleaves",
        "by_label",
        "children",
        "csub",
        "depth",
        "ending",
        "ends",
        "fixed",
        "key",
        "label",
        "moves",
        "multi",
        "parent",
        "plain",
        "plain_by_label",
        "position",
        "preds",
        "size",
        "sub",
    )

    def __init__(self, key: tuple | None, parent: TNode | None) -> None:
        self.key = key
        self.label, self.preds, self.position = key if key is not None else (None, (), None)
        if self.label is not None:
            # interned, as documents' tags are, so that tag look-ups compare identities
            self.label = sys.intern(self.label)
        self.parent = parent
        self.children: list[TNode] = []
        self.by_label: dict[str, list[TNode]] = {}
        # the children without predicates or position (bare tag tests, ``*``, ``//``)
        self.plain_by_label: dict[str, list[TNode]] = {}
        # what the plain children give a path automaton, by label (see :meth:`refresh`)
        self.moves: dict[str, Move] = {}
        self.sub = 0  # patterns with a node here
        self.ends = 0  # chain patterns whose last node is here
        self.ending: list[int] = []  # their numbers
        self.bleaves = 0  # branching patterns with a leaf here
        self.csub = 0  # patterns whose node here has children
        self.multi = 0  # patterns whose node here has two children or more
        self.depth: int = 0 if parent is None else parent.depth + 1
        self.size = 1  # nodes in the subtree rooted here
        self.plain = not self.preds and self.position is None  # a bare tag test, * or //
        # no ``//`` on the path from the root to here (this node included)
        self.fixed: bool = parent is None or (parent.fixed and self.label != DESCENDANT)

    def child(self, key: tuple, bit: int) -> TNode:
        """Alg. 1 lines 1-5: a child with this label not yet holding the pattern, or a
        new one."""
        for t in self.by_label.get(key[0], ()):
            if t.key == key and not t.sub & bit:
                return t
        t = TNode(key, self)
        self.children.append(t)
        self.by_label.setdefault(t.label, []).append(t)
        if t.plain:
            self.plain_by_label.setdefault(t.label, []).append(t)
        a: TNode | None = self
        while a is not None:
            a.size += 1
            a = a.parent
        return t

    def refresh(self, label: str) -> None:
        """Recompute ``moves[label]`` from the plain children labelled ``label`` (a tag or
        ``*``), once their own moves are up to date: the NFA transition of the lazy DFA of
        :mod:`.shared_matching` (Green et al., ICDT 2003, §3) compiled at insertion, as
        YFilter keeps its NFA (Diao & Franklin, §3.1). The entry is a :data:`Move`: the moves
        of the children that continue (having a useful plain child), those children's
        ``*`` moves, the numbers of the chains ending at the children, and the children's
        ``//`` children. Children giving nothing leave no entry."""
        kmoves: list[dict[str, Move]] = []
        kwild: list[Move] = []
        nums: list[int] = []
        desc: list[TNode] = []
        for c in self.plain_by_label.get(label, ()):
            nums.extend(c.ending)
            mv = c.moves
            if mv:
                kmoves.append(mv)
                w = mv.get(WILDCARD)
                if w is not None:
                    kwild.append(w)
            d = c.plain_by_label.get(DESCENDANT)
            if d:
                desc.extend(d)
        if kmoves or nums or desc:
            self.moves[label] = (tuple(kmoves), tuple(kwild), tuple(nums), tuple(desc))
        else:
            self.moves.pop(label, None)

    def drop(self, t: TNode) -> None:
        self.children.remove(t)
        same = self.by_label[t.label]
        same.remove(t)
        if not same:
            del self.by_label[t.label]
        if t.plain:
            same = self.plain_by_label[t.label]
            same.remove(t)
            if not same:
                del self.plain_by_label[t.label]
        a: TNode | None = self
        while a is not None:
            a.size -= 1
            a = a.parent

    def under(self, t: TNode) -> bool:
        """t is a strict ancestor of this node."""
        x, d = self, self.depth - t.depth
        if d <= 0:
            return False
        while d:
            x = x.parent  # type: ignore[assignment]  # d <= depth: never above the root
            d -= 1
        return x is t


class FactorizationTree:
    """T(R) over patterns numbered by the caller (bit i <-> pattern i)."""

    def __init__(self) -> None:
        self.root = TNode(None, None)
        self.nodes = 0  # |T(R)| without the root
        self.labelled: dict[str, set[TNode]] = {}  # tag label -> tree nodes carrying it
        self.tagged: dict[str, int] = {}  # tag -> patterns with a node of that tag
        # (parent tag or '/', child tag) -> patterns with such a child edge
        self.edged: dict[tuple[str, str], int] = {}
        self.edge_parents: dict[str, set[str]] = {}  # child tag -> its parents in edged
        # tags numbered in order of first sight, _GROUP to a group: group -> its tags, and
        # the patterns with a node of one of them (cover mode's prefilter or-s a whole
        # group at once where s has none of its tags)
        self.tag_group: dict[str, int] = {}
        self.group_tags: list[list[str]] = []
        self.grouped: list[int] = []

    # -- Algorithms 1 and 2 -------------------------------------------------------------
    def add(self, i: int, pattern: Node) -> None:
        """Insert pattern number i (its root is the artificial ``/``)."""
        bit = 1 << i
        root = self.root
        root.sub |= bit
        root.csub |= bit
        if len(pattern.children) > 1:
            root.multi |= bit
        chain = pattern.is_chain()
        for u in pattern.children:
            self._add(bit, root, u, chain)

    def _add(self, bit: int, t: TNode, u: Node, chain: bool) -> None:
        t2 = t.child(u.key, bit)
        if not t2.sub:
            self.nodes += 1
            if t2.label != DESCENDANT:
                self.labelled.setdefault(t2.label, set()).add(t2)
        t2.sub |= bit
        if u.label not in (DESCENDANT, WILDCARD):
            self.tagged[u.label] = self.tagged.get(u.label, 0) | bit
            g = self.tag_group.get(u.label)
            if g is None:
                g = self._new_tag(u.label)
            self.grouped[g] |= bit
            if t.label not in (DESCENDANT, WILDCARD):
                e = (t.label or ROOT, u.label)
                m = self.edged.get(e)
                self.edged[e] = bit if m is None else m | bit
                if m is None:
                    self.edge_parents.setdefault(u.label, set()).add(e[0])
        if not u.children:
            if chain:
                t2.ends |= bit
                t2.ending.append(bit.bit_length() - 1)
            else:
                t2.bleaves |= bit
        else:
            t2.csub |= bit
            if len(u.children) > 1:
                t2.multi |= bit
        for c in u.children:
            self._add(bit, t2, c, chain)
        if t2.plain and t2.label != DESCENDANT:
            t.refresh(t2.label)

    def _new_tag(self, tag: str) -> int:
        g = len(self.tag_group) // _GROUP
        if g == len(self.grouped):
            self.grouped.append(0)
            self.group_tags.append([])
        self.group_tags[g].append(tag)
        self.tag_group[tag] = g
        return g

    def remove(self, i: int) -> None:
        bit = 1 << i
        if not self.root.sub & bit:
            raise KeyError(i)
        root = self.root
        root.sub &= ~bit
        root.csub &= ~bit
        root.multi &= ~bit
        self._remove(bit, root)
        grouped = self.grouped
        for g, gm in enumerate(grouped):
            if gm & bit:
                grouped[g] = gm ^ bit

    def _remove(self, bit: int, t: TNode) -> None:
        keep = ~bit
        for t2 in [c for c in t.children if c.sub & bit]:
            t2.sub &= keep
            if t2.ends & bit:
                t2.ends &= keep
                t2.ending.remove(bit.bit_length() - 1)
            t2.bleaves &= keep
            t2.csub &= keep
            t2.multi &= keep
            if t2.label in self.tagged:
                rest = self.tagged[t2.label] & keep
                if rest:
                    self.tagged[t2.label] = rest
                else:
                    del self.tagged[t2.label]
            e = (t.label or ROOT, t2.label)
            if e in self.edged:
                rest = self.edged[e] & keep
                if rest:
                    self.edged[e] = rest
                else:
                    del self.edged[e]
                    parents = self.edge_parents.get(e[1])
                    if parents is not None:
                        parents.discard(e[0])
                        if not parents:
                            del self.edge_parents[e[1]]
            self._remove(bit, t2)
            if not t2.sub:
                t.drop(t2)
                self.nodes -= 1
                if t2.label != DESCENDANT:
                    same = self.labelled[t2.label]
                    same.discard(t2)
                    if not same:
                        del self.labelled[t2.label]
            if t2.plain and t2.label != DESCENDANT:
                t.refresh(t2.label)

    def walk(self) -> Iterator[TNode]:
        stack = list(self.root.children)
        while stack:
            t = stack.pop()
            yield t
            stack.extend(t.children)

    # -- Algorithm 3: covered mode -------------------------------------------------------
    def _tags(self, s: Node) -> set[str]:
        return {n.label for n in s.walk() if n.label not in (ROOT, DESCENDANT, WILDCARD)}

    @staticmethod
    def _edges(s: Node) -> set[tuple[str, str]]:
        """Child edges between tags (or the root and a tag) of s."""
        out = set()
        for n in s.walk():
            if n.label not in (DESCENDANT, WILDCARD):
                for c in n.children:
                    if c.label not in (DESCENDANT, WILDCARD):
                        out.add((n.label, c.label))
        return out

    def covered(self, s: Node) -> int:
        """Patterns of R covered by s (s ⊒ them): XSEARCH⊇(r_T, ·) over s's root children.

        A tag node of s maps onto a node with the same tag, and a child edge between tags
        onto a child edge between the same tags, so only patterns holding every tag and
        every such edge of s are searched for (the mask starts as their set)."""
        m = self.root.sub
        tagged, edged = self.tagged, self.edged
        for tag in self._tags(s):
            m &= tagged.get(tag, 0)
            if not m:
                return 0
        for e in self._edges(s):
            m &= edged.get(e, 0)
            if not m:
                return 0
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
            cands: Sequence[TNode]
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
        elif (
            len(u.children) == 1
            and u.children[0].label != WILDCARD
            and (len(self.labelled.get(u.children[0].label, ())) * 4 < t.size)
        ):
            # //c maps c onto any strict descendant of t labelled like c: found through
            # the label index instead of a walk over t's whole subtree
            (c,) = u.children
            r = 0
            for t2 in self.labelled.get(c.label, ()):
                mm = m & t2.sub
                if not mm or not t2.under(t) or not label_leq(t2, c):
                    continue
                for c2 in c.children if len(c.children) < 2 else _ordered(c.children):
                    mm = self._covered(t2, c2, mm, memo)
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
        """Patterns of R covering s (Alg. 5): sub(r_T) minus the failures below r_T,
        searched for among the candidates :meth:`_candidates` leaves."""
        x, m = self._candidates(s)
        if not m:
            return 0
        return m ^ _failing_under(self.root, x, m)

    def _candidates(self, s: Node) -> tuple[_SNode, int]:
        """s's nodes for the search, and the patterns of R that may cover s.

        A tag node of a covering pattern maps onto a node of s with the same tag, and a
        child edge between tags onto such an edge of s, so patterns holding a tag or an
        edge s lacks are left out before the search. The tags are taken a group at a
        time: a group with none of s's tags at once (s's tags are mostly the common ones,
        numbered first, so they fall in few groups), the others tag by tag."""
        tags: set[str] = set()
        edges: set[tuple[str, str]] = set()
        x = _SNode(s, tags, edges)
        out = 0
        tag_group, tagged = self.tag_group, self.tagged
        mixed = {tag_group.get(tag) for tag in tags}
        for g, gm in enumerate(self.grouped):
            if g not in mixed:
                if gm:
                    out |= gm
            else:
                for tag in self.group_tags[g]:
                    if tag not in tags:
                        m = tagged.get(tag)
                        if m:
                            out |= m
        edged, edge_parents = self.edged, self.edge_parents
        for b in tags:
            for a in edge_parents.get(b, ()):
                if (a == ROOT or a in tags) and (a, b) not in edges:
                    m = edged.get((a, b))
                    if m:
                        out |= m
        m = self.root.sub
        if out:
            m ^= m & out
        return x, m


_GROUP = 8  # tags to a group of FactorizationTree.grouped


class _SNode:
    """A node u of s during one cover-mode search: its children, the labels of T(R)
    children that can map under it (each with the children of u it can map onto, those
    with label ⪯ it; None for ``//``, which maps anywhere below), its strict descendants
    by label (:func:`_below`, built on first use) and all of them, and the memos of
    (tree node, u) pairs, keyed by tree node. Building it collects the tags of s and its
    child edges between tags (or the root and a tag)."""

    __slots__ = ("anywhere", "below", "children", "desc", "kids", "node", "under")

    def __init__(self, u: Node, tags: set[str], edges: set[tuple[str, str]]) -> None:
        self.node = u
        lab = u.label
        if lab != ROOT and lab != DESCENDANT and lab != WILDCARD:
            tags.add(lab)
        self.below: dict[str, list[_SNode]] | None = None
        self.anywhere: list[_SNode] | None = None  # all of below's nodes
        self.under: dict[TNode, tuple[int, int]] = {}  # _failing_under
        self.desc: dict[TNode, tuple[int, int]] = {}  # _failing
        if not u.children:
            self.children: tuple[_SNode, ...] = ()
            self.kids = _LEAF
            return
        self.children = children = tuple([_SNode(c, tags, edges) for c in u.children])
        # tags first: a pattern's child is most often a tag, and the search stops at the
        # child of T(R) holding all its patterns
        kids: dict[str, tuple[_SNode, ...] | None] = {}
        steps = tuple([c for c in children if c.node.label != DESCENDANT])
        if steps:
            tag_parent = lab != DESCENDANT and lab != WILDCARD
            for c in steps:
                cl = c.node.label
                if cl not in kids and cl != WILDCARD:
                    kids[cl] = (
                        steps
                        if len(steps) == 1
                        else tuple([k for k in steps if k.node.label == cl])
                    )
                    if tag_parent:
                        edges.add((lab, cl))
            kids[WILDCARD] = steps
        kids[DESCENDANT] = None
        self.kids = kids


_LEAF: dict[str, tuple[_SNode, ...] | None] = {DESCENDANT: None}  # a leaf's kids, shared


def _failing_under(t: TNode, x: _SNode, m: int) -> int:
    """∪_{t' ∈ child(t)} XSEARCH⊆(t', u) ∩ m: the patterns with a branch at t that does
    not map under s's node u (x). Children whose label no child of u can carry fail
    without a visit: a pattern with a single branch at t fails exactly when that branch
    is such a child (``t.csub``, ``t.multi`` and the compatible children's sub tell
    which); patterns with several branches there are looked up child by child.

    Alg. 4 for a non-``//`` child t' is done in place: t' maps onto a child c of u with
    label(c) ⪯ label(t'), and fails unless some such c takes all of t''s branches (under
    a leaf c, every pattern with a branch at t' fails). Below a ``//``-free path of T(R)
    a pair (t, u) is reached at most once (from its parents' pair), so only the other
    pairs are memoised.

    Masks are Python ints as wide as the highest pattern number in them, and each
    operation on them allocates a new one, so the common case makes as few as it can:
    patterns ending at t are masked out only if there are some, and the shares of m in
    the children visited are or-ed (to find the single branches without a counterpart
    under u) only until one child holds all of them (at once when m is one pattern)."""
    if t.ends or t.bleaves:  # some patterns end at t
        single = m & t.csub
        if not single:  # every pattern of m ends at t: no branch to fail
            return 0
    else:
        single = m
    fixed = t.fixed
    if not fixed:
        hit = x.under.get(t)
        if hit is not None and hit[0] & m == m:
            return hit[1] & m
    g = 0
    multi = t.multi
    if multi:  # (most nodes hold no branching: a test instead of a long mask operation)
        multi &= single
        if multi:
            single ^= multi  # multi ⊆ csub; a ^ (a & b) beats a & ~b on long masks
    seen = 0
    full = False  # a child visited holds all of single
    by_label = t.by_label
    info = x.kids
    done = False
    for lab, cands in info.items():
        kids = by_label.get(lab)
        if kids is None:
            continue
        for t2 in kids:
            mm = m & t2.sub
            if not mm:
                continue
            if not full:
                if mm == single:  # (an equality test reads, an or allocates)
                    full = True
                    # without branching, no other child holds a pattern of m
                    done = not multi
                else:
                    seen |= mm
            if cands is None:  # t2 is a ``//`` node
                mm = _failing(t2, x, mm)
            elif not t2.plain and not any(label_leq(c.node, t2) for c in cands):
                pass  # no child of u can carry t2: all of mm fails
            elif t2.children:
                for c in cands:
                    if t2.plain or label_leq(c.node, t2):
                        mm = _failing_under(t2, c, mm) if c.children else mm & t2.csub
                        if not mm:
                            break
            else:
                mm = 0  # a leaf t2 maps onto any such child
            if mm:  # (or-ing a long mask into 0 copies it: skipped when nothing fails)
                g |= mm
            if done:
                break
        if done:
            break
    if not full:
        single ^= single & seen
        if single:
            g |= single
    if multi:
        for t2 in t.children:
            if t2.label not in info:
                mm = multi & t2.sub
                if mm:
                    g |= mm
    if not fixed:
        x.under[t] = (m, g)
    return g


def _failing(t: TNode, x: _SNode, m: int) -> int:
    """XSEARCH⊆(t, u) ∩ m (Alg. 4) for a ``//`` node t: patterns whose subtree at t does
    not map under s's node u (x): t's branches map under u itself (path length 0), or t
    maps under one of u's children.

    A pattern's ``//`` node has a single child, so a pattern whose child t' at t is a tag
    or ``*`` maps under u iff t' maps onto a strict descendant of u (with t''s tag): those
    are looked up by tag (:func:`_below`) instead of recursing over u's subtree. The
    patterns whose child is ``//`` follow Alg. 4. The failures are or-ed as found, and
    the shares of m in the children visited only until one holds all of m: the patterns
    left over have a child whose tag is nowhere below u."""
    hit = x.desc.get(t)
    if hit is not None and hit[0] & m == m:
        return hit[1] & m
    if not x.children:
        r = m
    else:
        by_label = t.by_label
        below = x.below
        if below is None:
            below = _below(x)
        r = 0  # failures among the children visited
        seen = 0  # patterns of m in the children visited
        full = False  # one of them holds all of m
        # the fewer labels are looked up in the longer dict
        short = len(by_label) <= len(below) + 2
        todo: list[tuple[list[TNode], list[_SNode]]] = []
        if short:
            for lab, kids in by_label.items():
                if lab == DESCENDANT:
                    continue
                vs = below.get(lab) if lab != WILDCARD else _anywhere(x, below)
                if vs:
                    todo.append((kids, vs))
        else:
            for lab, vs in below.items():
                if lab != WILDCARD:  # ``*`` nodes of s: only ``*`` of T(R) maps onto them
                    some = by_label.get(lab)
                    if some is not None:
                        todo.append((some, vs))
            some = by_label.get(WILDCARD)
            if some is not None:
                vs = _anywhere(x, below)
                if vs:
                    todo.append((some, vs))
        for kids, vs in todo:
            for t2 in kids:
                mm = m & t2.sub
                if not mm:
                    continue
                if not full:
                    if mm == m:  # t2 holds all of m (no other child holds any)
                        full = True
                    else:
                        seen |= mm
                if not t2.children:  # a leaf: any v (with a compatible label) takes it
                    if t2.plain or any(label_leq(v.node, t2) for v in vs):
                        mm = 0
                else:
                    for v in vs:
                        if not t2.plain and not label_leq(v.node, t2):
                            continue
                        mm = _failing_under(t2, v, mm) if v.children else mm & t2.csub
                        if not mm:
                            break
                if mm:
                    r |= mm
                if full:
                    break
            if full:
                break
        other = 0  # the patterns whose child here is ``//``
        if not full:
            for t2 in by_label.get(DESCENDANT, ()):
                mm = m & t2.sub
                if mm:
                    other |= mm
        if other:
            if not full:
                seen |= other
            o = _failing_under(t, x, other)
            for c in x.children:
                if not o:
                    break
                o = _failing(t, c, o)
            if o:
                r |= o
        if not full:  # the patterns whose child's tag is nowhere below u fail
            rest = m ^ (m & seen)
            if rest:
                r |= rest
    x.desc[t] = (m, r)
    return r


def _anywhere(x: _SNode, below: dict[str, list[_SNode]]) -> list[_SNode]:
    """All strict descendants of s's node x that are not ``//`` nodes."""
    vs = x.anywhere
    if vs is None:
        vs = x.anywhere = [v for vs in below.values() for v in vs]
    return vs


def _below(x: _SNode) -> dict[str, list[_SNode]]:
    """The strict descendants of s's node x that are not ``//`` nodes, by label."""
    out = x.below
    if out is None:
        out = x.below = {}
        for c in x.children:
            if c.node.label != DESCENDANT:
                out.setdefault(c.node.label, []).append(c)
            for lab, vs in _below(c).items():
                out.setdefault(lab, []).extend(vs)
    return out


def _ordered(nodes: tuple[Node, ...]) -> list[Node]:
    """Selective branches first: tags, then ``*``, then ``//``."""
    return sorted(nodes, key=lambda n: (n.label == DESCENDANT, n.label == WILDCARD))
