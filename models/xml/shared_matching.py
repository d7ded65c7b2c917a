"""Matching a document against every pattern of a factorization tree at once.

YFilter-style sharing (Diao & Franklin): a prefix common to many patterns is evaluated once,
in two ways.

* Plain chains (linear paths of tags, ``*`` and ``//`` without predicates) go through a lazy
  DFA over the tree (Green, Miklau, Onizuka & Suciu, ICDT 2003): the tree nodes form an NFA
  over the tag path from the root to each element; the set of NFA states reached by a tag
  path, and the chains ending there, are computed once per distinct tag path and cached
  across documents, so a document costs a dictionary step per element once its paths are
  known. The NFA's transitions are compiled into the tree as it is built
  (:meth:`.factorization.TNode.refresh`), so a new DFA state costs one dictionary look-up
  per NFA state and tuple concatenations. The cache is dropped when patterns are added or
  removed, and holds at most :data:`DFA_CACHE_SIZE` transitions, least recently used first
  out (documents with ever new tag names would otherwise grow it without bound).
* Every other pattern (predicates, positions, branches): walking T(R) top-down, each tree
  node t gets the set C(t) of elements its root-to-t path (tag tests, positions, value
  predicates included) reaches in the document; an empty set prunes the subtree. A chain
  matches iff the node of its last step is reached; a branching pattern can match only if
  all its leaves are reached, and those candidates are decided exactly by
  :class:`.matching.Matcher`.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable
from typing import Any

from pubsift.models.xml.document import Document
from pubsift.models.xml.factorization import FactorizationTree, Move, TNode
from pubsift.models.xml.matching import Matcher
from pubsift.models.xml.patterns import DESCENDANT, WILDCARD, XPathFilter

#: transitions the lazy DFA keeps (least recently used evicted first)
DFA_CACHE_SIZE = 65_536

_chain = itertools.chain.from_iterable


class _Layer:
    """A set D of active ``//`` tree nodes (their children may map onto any strict
    descendant of the element where they became active), built as a parent layer plus the
    nodes added at one element, so that the states below share it. ``members``: the nodes
    of this layer and of its ancestors; ``moves`` / ``wild``: the moves (and ``*`` moves)
    of this layer's own nodes; ``steps[tag]`` caches the moves this layer's own nodes make
    on ``tag`` (``None``: a tag no tree node carries, so only ``*`` moves)."""

    __slots__ = ("members", "moves", "nodes", "parent", "steps", "wild")

    def __init__(self, parent: _Layer | None, nodes: tuple[TNode, ...]) -> None:
        self.parent = parent
        self.nodes = nodes
        self.members: frozenset = (
            parent.members.union(nodes) if parent is not None else frozenset(nodes)
        )
        self.moves = tuple([d.moves for d in nodes if d.moves])
        self.wild = tuple([w for mv in self.moves if (w := mv.get(WILDCARD)) is not None])
        self.steps: dict[str | None, list[Move]] = {}

    def step(self, tag: str | None) -> list[Move]:
        got = self.steps.get(tag)
        if got is None:
            got = [m for mv in self.moves if (m := mv.get(tag)) is not None] if tag else []
            got += self.wild
            self.steps[tag] = got
        return got


_EMPTY: tuple = ()


class _State:
    """A DFA state: ``moves`` (A) the moves (:attr:`.factorization.TNode.moves`) of the
    plain non-``//`` tree nodes mapped to the element that can continue, ``wild`` their
    ``*`` moves, ``layer`` (D) the :class:`_Layer` of active ``//`` nodes, ``numbers`` the
    chains ending at the element (a tuple), ``serial`` a number never reused, and
    ``outputs`` those chains' outputs as a frozenset, made when a later document reaches
    the state again: a document's new states are mostly used once, and their numbers are
    turned into outputs once for the document instead."""

    __slots__ = ("layer", "moves", "numbers", "outputs", "serial", "wild")

    def __init__(
        self, moves: tuple, wild: tuple, layer: _Layer, numbers: tuple, serial: int
    ) -> None:
        self.moves = moves
        self.wild = wild
        self.layer = layer
        self.numbers = numbers
        self.serial = serial
        self.outputs: frozenset | None = None


class LazyDFA(ABC):
    """What both path automata share (this module's :class:`PathAutomaton` over the tree's
    objects, :class:`.path_arrays.ArrayPathAutomaton` over arrays): the walk of a document
    through the cached transitions, keyed by (serial of the parent state, tag) in an LRU of
    ``cache_size``; a subclass makes the start state ``_start`` and new states
    (``_step``), each with a ``serial`` never reused."""

    cache_size: int
    _start: Any
    _next: OrderedDict[tuple[int, str], Any]
    _outputs: Callable[[Any], set[Hashable]]

    @abstractmethod
    def _step(self, state: Any, tag: str) -> Any:
        """The state reached from ``state`` on an element tagged ``tag``."""

    @abstractmethod
    def _numbers(self, states: list[Any]) -> Any:
        """The numbers of the chains ending at ``states``, as ``_outputs`` takes them."""

    def match_outputs(self, doc: Document) -> set[Hashable]:
        """``outputs`` of the plain chains matching ``doc``: the states a document made
        turn their numbers into outputs together; those found made keep theirs (a
        frozenset made on the first reuse)."""
        made, found = self.states(doc)
        outputs = self._outputs
        out = outputs(self._numbers(made))
        if found:
            parts = []
            for s in found:
                o = s.outputs
                if o is None:
                    o = s.outputs = frozenset(outputs(s.numbers))
                parts.append(o)
            out.update(*parts)
        return out

    @property
    def cached(self) -> int:
        """Transitions held."""
        return len(self._next)

    def states(self, doc: Document) -> tuple[list[Any], list[Any]]:
        """The distinct states reached by the elements of ``doc``: those made for it, and
        those it found made."""
        step, cache = self._step, self._next
        touch, size = cache.move_to_end, self.cache_size
        tags, parent = doc.tags, doc.parent
        states: list = [self._start] + [None] * (len(tags) - 1)
        seen: dict[int, Any] = {}
        made: list[Any] = []
        for i in range(1, len(tags)):
            ps = states[parent[i]]
            key = (ps.serial, tags[i])
            s = cache.get(key)
            if s is None:
                s = cache[key] = step(ps, tags[i])
                made.append(s)
                if len(cache) > size:
                    cache.popitem(last=False)
            else:
                touch(key)
                seen[s.serial] = s
            states[i] = s
        for s in made:
            seen.pop(s.serial, None)
        return made, list(seen.values())


class PathAutomaton(LazyDFA):
    """The lazy DFA of the plain chains of a factorization tree (see the module doc), its
    states :class:`_State`. ``outputs`` turns pattern numbers into what
    :meth:`match_outputs` returns (the index's keys)."""

    def __init__(
        self,
        tree: FactorizationTree,
        cache_size: int | None = None,
        outputs: Callable[[Collection[int]], set[Hashable]] = set,
    ) -> None:
        self.tree = tree
        self.cache_size = DFA_CACHE_SIZE if cache_size is None else cache_size
        self._outputs = outputs
        self._labelled = tree.labelled
        self._serials = itertools.count()
        # new states made and the moves they took: what matching costs here (the index
        # moves to :mod:`.path_arrays` when states take many moves)
        self.made = 0
        self.moves = 0
        root = tree.root
        mv = root.moves
        start: Move = (
            (mv,) if mv else (),
            (mv[WILDCARD],) if WILDCARD in mv else (),
            (),
            tuple(root.plain_by_label.get(DESCENDANT, ())),
        )
        self._start = self._state([start], _Layer(None, ()))
        # transitions keyed by (serial of the parent state, tag)
        self._next: OrderedDict[tuple[int, str], _State] = OrderedDict()

    def _state(self, moves: list[Move], layer: _Layer) -> _State:
        """The state after taking ``moves`` with ``layer`` active."""
        self.made += 1
        self.moves += len(moves)
        if not moves:
            return _State(_EMPTY, _EMPTY, layer, _EMPTY, next(self._serials))
        if len(moves) == 1:
            kmoves, kwild, nums, desc = moves[0]
        else:
            k, w, n, d = zip(*moves)
            kmoves, kwild, nums, desc = (
                tuple(_chain(k)),
                tuple(_chain(w)),
                tuple(_chain(n)),
                tuple(_chain(d)),
            )
        if desc:
            members = layer.members
            new = tuple([x for x in desc if x not in members])
            if new:
                layer = _Layer(layer, new)
        return _State(kmoves, kwild, layer, nums, next(self._serials))

    def _step(self, state: _State, tag: str) -> _State:
        moves = [m for mv in state.moves if (m := mv.get(tag)) is not None]
        if state.wild:
            moves += state.wild
        layer = state.layer
        if layer.nodes:  # the moves of every active '//' node, layer by layer
            ltag = tag if tag in self._labelled else None
            y: _Layer | None = layer
            while y is not None and y.nodes:
                moves += y.step(ltag)
                y = y.parent
        return self._state(moves, layer)

    def match(self, doc: Document) -> set[int]:
        """Numbers of the plain chains matching ``doc``."""
        made, found = self.states(doc)
        return set().union(*[s.numbers for s in made], *[s.numbers for s in found])

    def _numbers(self, states: list[_State]) -> set[int]:
        return set().union(*[s.numbers for s in states])


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
