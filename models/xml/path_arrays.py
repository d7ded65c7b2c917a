"""The lazy DFA of the plain chains over arrays: the path automaton of
:mod:`.shared_matching` with its NFA compiled into NumPy arrays.

The NFA is the one YFilter builds from the queries (Diao & Franklin, §3.1) and Green,
Miklau, Onizuka & Suciu make deterministic lazily (ICDT 2003, §3): its states are the plain
nodes of the factorization tree (bare tag tests, ``*`` and ``//``, Chand & Felber 2004,
§4), a node's transitions lead to its plain children. A DFA state is (A, D): A the plain
non-``//`` nodes mapped to the element, D the ``//`` nodes active above it (their children
may map onto any strict descendant). On a tag t the next state is

* A' = the children labelled t or ``*`` of the nodes in A ∪ D,
* D' = D ∪ the ``//`` children of the nodes in A',

and the chains ending at the element are those ending at the nodes of A'.
:class:`.shared_matching.PathAutomaton` follows the same definition over the tree's
objects; on a large tree a new state touches thousands of Python objects, a cache miss
each. Here the tree is numbered once, breadth first, into sorted integer arrays (per label:
the parents having children so labelled and, in compressed rows, those children; per node:
its ``//`` children and the numbers of the chains ending at it), so a new state is a
handful of array operations (``searchsorted`` and gathers) whatever the size of A and D.
The arrays are a snapshot of the tree: the index builds them again after a change, once
matching has paid for it (see :class:`~pubsift.models.xml.index.XmlIndex`).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
from pubsift.models.xml import shared_matching
from pubsift.models.xml.document import Document
from pubsift.models.xml.factorization import FactorizationTree, TNode
from pubsift.models.xml.patterns import DESCENDANT, WILDCARD

_IDS = np.int32
_EMPTY_IDS = np.empty(0, dtype=_IDS)
_EMPTY_NUMS = np.empty(0, dtype=np.int64)

#: a compressed relation: (sorted distinct sources, row offsets, targets)
Rows = tuple[np.ndarray, np.ndarray, np.ndarray]


def _ranges(lo: np.ndarray, hi: np.ndarray, values: np.ndarray, nonempty: bool) -> np.ndarray:
    """``values[lo[0]:hi[0]] + values[lo[1]:hi[1]] + ...`` in one gather; ``nonempty``:
    no row is empty (rows of lengths 0 and 2 also sum to their count)."""
    n = hi - lo
    if not len(n):
        return values[:0]
    total = int(n.sum())
    if total == len(n) and (nonempty or n.min() == 1):  # one value per row, the usual case
        return values[lo]
    ends = np.cumsum(n)
    return values[np.repeat(lo - ends + n, n) + np.arange(total)]


def _sorted_union(x: np.ndarray) -> np.ndarray:
    """The distinct values of ``x``, ascending (a sort and a mask: on the few hundred
    values of a state this is several times faster than ``np.unique``)."""
    x = np.sort(x)
    if len(x) > 1:
        keep = np.empty(len(x), dtype=bool)
        keep[0] = True
        np.not_equal(x[1:], x[:-1], out=keep[1:])
        x = x[keep]
    return x


def _rows(pairs_src: Any, pairs_dst: Any, dtype: type) -> Rows:
    """Compressed rows of (source, target) pairs listed with ascending sources."""
    src = np.asarray(pairs_src, dtype=_IDS)
    uniq, first = np.unique(src, return_index=True)
    offsets = np.append(first, len(src)).astype(np.int64)
    return uniq, offsets, np.asarray(pairs_dst, dtype=dtype)


def _gather(rows: tuple[np.ndarray, np.ndarray], nodes: np.ndarray) -> np.ndarray:
    """The values of ``nodes`` in dense rows."""
    offsets, values = rows
    return _ranges(offsets[nodes], offsets[nodes + 1], values, nonempty=False)


def _lookup(rows: Rows, nodes: np.ndarray) -> np.ndarray:
    """The targets of ``nodes`` (distinct ids) in ``rows``."""
    uniq, offsets, targets = rows
    pos = np.searchsorted(uniq, nodes)
    if not len(uniq):
        return targets[:0]
    hit = uniq[np.minimum(pos, len(uniq) - 1)] == nodes
    p = pos[hit]
    return _ranges(offsets[p], offsets[p + 1], targets, nonempty=True)  # hit rows hold one or more


def _dense(n: int, pairs: tuple[list[int], list], dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """Row offsets over all ``n`` node ids (row i: ``values[offsets[i]:offsets[i + 1]]``)
    for pairs listed with ascending sources."""
    src = np.asarray(pairs[0], dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.add.at(offsets, src + 1, 1)
    return np.cumsum(offsets), np.asarray(pairs[1], dtype=dtype)


class PathArrays:
    """The plain nodes of a factorization tree, numbered breadth first from the root (0),
    and their relations: ``children[label]`` (plain children by label, a tag or ``*``) as
    compressed rows of the parents having such children, and per node id (dense rows)
    its ``//`` children (``desc``) and the numbers of the chains ending at it
    (``ending``); ``inner[i]``: node i has a child labelled with a tag or ``*``."""

    def __init__(self, tree: FactorizationTree) -> None:
        nodes: list[TNode] = [tree.root]
        by_label: dict[str, tuple[list[int], list[int]]] = {}
        desc: tuple[list[int], list[int]] = ([], [])
        ending: tuple[list[int], list[int]] = ([], [])
        inner: list[int] = []
        i = 0
        while i < len(nodes):
            t = nodes[i]
            for label, kids in t.plain_by_label.items():
                if label == DESCENDANT:
                    pairs = desc
                else:
                    pairs = by_label.setdefault(label, ([], []))
                    inner.append(i)
                for c in kids:
                    cid = len(nodes)
                    nodes.append(c)
                    pairs[0].append(i)
                    pairs[1].append(cid)
            if t.ending:
                ending[0].extend([i] * len(t.ending))
                ending[1].extend(t.ending)
            i += 1
        n = self.size = len(nodes)
        self.children = {label: _rows(s, d, _IDS) for label, (s, d) in by_label.items()}
        self.wild = self.children.get(WILDCARD)
        self.desc = _dense(n, desc, _IDS)
        self.ending = _dense(n, ending, np.int64)
        self.inner = np.zeros(n, dtype=bool)
        self.inner[inner] = True


class _State:
    """A DFA state: ``a`` (A) as a node-id array, ``numbers`` the chains ending at the
    element (an array), ``serial`` a number never reused, ``outputs`` as in
    :class:`.shared_matching._State`; ``d`` (D, sorted) and ``both`` (the nodes of A ∪ D
    having children to move to, sorted) are made by :meth:`ready` when a child element
    first steps from the state (about half the elements of a document are leaves), from
    ``above``, the parent's D."""

    __slots__ = ("a", "above", "both", "d", "numbers", "outputs", "serial")

    def __init__(self, a: np.ndarray, above: np.ndarray, numbers: np.ndarray, serial: int) -> None:
        self.a = a
        self.above = above
        self.d: np.ndarray | None = None
        self.both: np.ndarray | None = None
        self.numbers = numbers
        self.serial = serial
        self.outputs: frozenset | None = None

    def ready(self, arrays: PathArrays) -> np.ndarray:
        """``both``, made (with ``d``) on the first call."""
        both = self.both
        if both is None:
            a, d = self.a, self.above
            if len(a):
                new = _gather(arrays.desc, a)
                if len(new):
                    d = _sorted_union(np.concatenate((d, new)) if len(d) else new)
                # sorted: searchsorted then walks the parents' arrays in one direction
                a = a[arrays.inner[a]]
                both = np.sort(np.concatenate((a, d))) if len(d) else np.sort(a)
            else:
                both = d
            self.d, self.both = d, both
        return both


class ArrayPathAutomaton(shared_matching.LazyDFA):
    """:class:`.shared_matching.PathAutomaton` (same interface, same answers) over
    :class:`PathArrays`; ``outputs`` takes an array of pattern numbers."""

    def __init__(
        self,
        arrays: PathArrays,
        cache_size: int | None = None,
        outputs: Callable[[np.ndarray], set[Hashable]] = lambda a: set(a.tolist()),
    ) -> None:
        self.arrays = arrays
        self.cache_size = shared_matching.DFA_CACHE_SIZE if cache_size is None else cache_size
        self._outputs = outputs
        self._serials = itertools.count()
        self._start = _State(np.zeros(1, dtype=_IDS), _EMPTY_IDS, _EMPTY_NUMS, 0)
        next(self._serials)
        self._next: OrderedDict[tuple[int, str], _State] = OrderedDict()

    def _step(self, state: _State, tag: str) -> _State:
        arrays = self.arrays
        both = state.ready(arrays)
        d = state.d
        assert d is not None
        if not len(both):
            return _State(_EMPTY_IDS, d, _EMPTY_NUMS, next(self._serials))
        rows = arrays.children.get(tag) if tag != WILDCARD else None
        parts = []
        if rows is not None:
            parts.append(_lookup(rows, both))
        if arrays.wild is not None:
            parts.append(_lookup(arrays.wild, both))
        a = (np.concatenate(parts) if len(parts) > 1 else parts[0]) if parts else _EMPTY_IDS
        numbers = _gather(arrays.ending, a) if len(a) else _EMPTY_NUMS
        return _State(a, d, numbers, next(self._serials))

    def _numbers(self, states: list[_State]) -> np.ndarray:
        arrays = [s.numbers for s in states if len(s.numbers)]
        if not arrays:
            return _EMPTY_NUMS
        return _sorted_union(np.concatenate(arrays))

    def match(self, doc: Document) -> set[int]:
        """Numbers of the plain chains matching ``doc``."""
        made, found = self.states(doc)
        return set(self._numbers(made + found).tolist())
