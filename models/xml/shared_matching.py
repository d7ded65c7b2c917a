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
from collections.abc import Callable, Hashable, Iterable

from pubsift.models.xml.document import Document
from pubsift.models.xml.factorization import FactorizationTree
from pubsift.models.xml.matching import Matcher
from pubsift.models.xml.patterns import DESCENDANT, WILDCARD, XPathFilter

#: transitions the lazy DFA keeps (least recently used evicted first)
DFA_CACHE_SIZE = 65_536


class _Layer:
    """A set D of active ``//`` tree nodes (their children may map onto any strict
    descendant of the element where they became active), built as a parent layer plus the
    nodes added at one element, so that the states below share it. ``steps[tag]`` caches
    what D contributes to the next state on ``tag`` (``None``: a tag no tree node carries,
    so only ``*`` children): :func:`_reach` of its nodes' plain children labelled ``tag``
    or ``*``, each layer adding its own nodes' part to its parent's."""

    __slots__ = ("by_label", "members", "nodes", "parent", "steps")

    def __init__(self, parent: _Layer | None, nodes: tuple) -> None:
        self.parent = parent
        self.nodes = nodes
        self.by_label: dict[str, list] | None = None  # its nodes' plain children by label
        self.members: frozenset = (
            parent.members.union(nodes) if parent is not None else frozenset(nodes)
        )
        self.steps: dict[str | None, tuple] = {}


def _reach(reached: list, members: frozenset) -> tuple[tuple, tuple, tuple]:
    """For the tree nodes ``reached`` at an element: those with plain children other than
    ``//`` (they continue), the numbers of the chains ending there, and their ``//``
    children not in ``members`` (they become active)."""
    keep = []
    nums: list[int] = []
    new = []
    for c in reached:
        e = c.ending
        if e:
            nums.extend(e)
        pb = c.plain_by_label
        if pb:
            d = pb.get(DESCENDANT)
            if d is None:
                keep.append(c)
            else:
                new.extend([x for x in d if x not in members])
                if len(pb) > 1:
                    keep.append(c)
    return tuple(keep), tuple(nums), tuple(new)


_EMPTY: frozenset = frozenset()
_NOTHING: tuple = ((), (), (), _EMPTY, _EMPTY)


def _layer_step(
    layer: _Layer, tag: str | None, outputs: Callable[[tuple], frozenset]
) -> tuple[tuple, tuple, tuple, frozenset, frozenset]:
    """What ``layer`` contributes on ``tag`` (see :class:`_Layer`); cached per layer and
    computed from the nearest ancestor layer that has the answer, without recursion, since
    layers nest as deep as documents. The answer is (continuing nodes, numbers of the chains
    ending, new ``//`` nodes, those numbers as a frozenset, their outputs as a frozenset).
    """
    hit = layer.steps.get(tag)
    if hit is not None:
        return hit
    chain = []
    x: _Layer | None = layer
    while x is not None and tag not in x.steps:
        chain.append(x)
        x = x.parent
    base = x.steps[tag] if x is not None else _NOTHING
    for y in reversed(chain):
        by_label = y.by_label
        if by_label is None:
            by_label = y.by_label = {}
            for d in y.nodes:
                for label, kids in d.plain_by_label.items():
                    if label != DESCENDANT:
                        by_label.setdefault(label, []).extend(kids)
        reached: list = []
        if tag is not None:
            got = by_label.get(tag)
            if got:
                reached.extend(got)
        got = by_label.get(WILDCARD)
        if got:
            reached.extend(got)
        members = y.members
        inherited = base[2]
        if inherited:
            inherited = tuple([n for n in inherited if n not in members])
        if reached:
            keep, nums, new = _reach(reached, members)
            if nums:
                base = (
                    base[0] + keep,
                    base[1] + nums,
                    inherited + new,
                    base[3].union(nums),
                    base[4].union(outputs(nums)),
                )
            else:
                base = (base[0] + keep, base[1], inherited + new, base[3], base[4])
        elif inherited is not base[2]:
            base = (base[0], base[1], inherited, base[3], base[4])
        y.steps[tag] = base
    return base


class PathAutomaton:
    """The lazy DFA of the plain chains of a factorization tree (see the module doc).

    A state is (A, D, numbers, outputs, serial, shared numbers, shared outputs): A the
    plain non-``//`` tree nodes mapped to the element that have plain children other than
    ``//``, D a :class:`_Layer` of active ``//`` nodes, the chains ending at the element as
    frozensets of pattern numbers and of ``outputs(i)`` (the index's keys), reached from A's
    nodes and from D's (the latter shared by all the states of D on the same tag), and a
    serial number never reused. Frozensets of numbers, not bitmasks: a bitmask over 100,000
    patterns is a 12.5 kB integer, and OR-ing one per tree node reached made a state cost
    milliseconds."""

    def __init__(
        self,
        tree: FactorizationTree,
        cache_size: int | None = None,
        outputs: Callable[[int], Iterable[Hashable]] | None = None,
    ) -> None:
        self.tree = tree
        self.cache_size = DFA_CACHE_SIZE if cache_size is None else cache_size
        self._outputs = outputs
        self._serials = itertools.count()
        empty = _Layer(None, ())
        self._start = self._state(_reach([tree.root], empty.members), _NOTHING, empty)
        # transitions keyed by (serial of the parent state, tag)
        self._next: OrderedDict[tuple[int, str], tuple] = OrderedDict()

    def _keys(self, nums: tuple) -> frozenset:
        out = self._outputs
        if out is None:
            return frozenset(nums)
        return frozenset(itertools.chain.from_iterable(map(out, nums)))

    def _state(self, mine: tuple[tuple, tuple, tuple], shared: tuple, layer: _Layer) -> tuple:
        keep, nums, new = mine
        if shared[0]:
            keep += shared[0]
        if shared[2]:
            new = tuple(dict.fromkeys(new + shared[2]))
        if new:
            layer = _Layer(layer, new)
        if nums:
            numbers, keys = frozenset(nums), self._keys(nums)
        else:
            numbers = keys = _EMPTY
        return (keep, layer, numbers, keys, next(self._serials), shared[3], shared[4])

    @property
    def cached(self) -> int:
        """Transitions held."""
        return len(self._next)

    def _step(self, state: tuple, tag: str) -> tuple:
        reached: list = []
        for t in state[0]:
            pb = t.plain_by_label
            got = pb.get(tag)
            if got:
                reached.extend(got)
            got = pb.get(WILDCARD)
            if got:
                reached.extend(got)
        layer = state[1]
        shared = (
            _layer_step(layer, tag if tag in self.tree.labelled else None, self._keys)
            if layer.nodes
            else _NOTHING
        )
        return self._state(_reach(reached, layer.members), shared, layer)

    def states(self, doc: Document) -> list[tuple]:
        """The distinct states reached by the elements of ``doc``."""
        step, cache = self._step, self._next
        touch, size = cache.move_to_end, self.cache_size
        tags, parent = doc.tags, doc.parent
        states: list = [self._start] + [None] * (len(tags) - 1)
        seen: dict[int, tuple] = {}
        for i in range(1, len(tags)):
            ps = states[parent[i]]
            key = (ps[4], tags[i])
            s = cache.get(key)
            if s is None:
                s = cache[key] = step(ps, tags[i])
                if len(cache) > size:
                    cache.popitem(last=False)
            else:
                touch(key)
            states[i] = s
            seen[s[4]] = s
        return list(seen.values())

    def match(self, doc: Document) -> set[int]:
        """Numbers of the plain chains matching ``doc``."""
        seen = self.states(doc)
        return set().union(*[s[2] for s in seen], *[s[5] for s in seen])

    def match_outputs(self, doc: Document) -> set[Hashable]:
        """``outputs(i)`` of the plain chains matching ``doc``, united."""
        seen = self.states(doc)
        return set().union(*[s[3] for s in seen], *[s[6] for s in seen])


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
