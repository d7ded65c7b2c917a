"""The XML model's FilterIndex: Chand & Felber's factorization tree (Chand & Felber 2004, §4).

Distinct patterns are numbered and inserted into one :class:`.factorization.FactorizationTree`
(Alg. 1-2); each number holds the keys the pattern was added under.

* ``covering`` / ``covered_by``: XSEARCH in cover / covered mode; ``identical``: both.
* ``match``: shared evaluation over the tree (:mod:`.shared_matching`): a lazy DFA for
  plain chains, a pruned top-down walk for the other patterns.
* ``overlapping``: only patterns whose root element could agree are tested.
* ``merge_candidates``: covering ∪ covered (a cover is a perfect merger) ∪ the patterns
  with the same predicate-free shape whose pairwise perfect merge exists.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterator
from typing import TYPE_CHECKING

import numpy as np
from pubsift.core.model import FilterIndex
from pubsift.models.xml.factorization import FactorizationTree, bits
from pubsift.models.xml.merging import merge_pair, skeleton
from pubsift.models.xml.overlap import overlaps
from pubsift.models.xml.parsing import XmlEvent
from pubsift.models.xml.path_arrays import ArrayPathAutomaton, PathArrays
from pubsift.models.xml.patterns import DESCENDANT, WILDCARD, XPathFilter
from pubsift.models.xml.shared_matching import PathAutomaton, match_tree

if TYPE_CHECKING:
    from pubsift.models.xml.model import XmlModel


#: The path automaton moves to arrays (:mod:`.path_arrays`) when its new states take at
#: least this many moves on average. Measured on YFilter's NITF workload: a new state
#: costs the object automaton about 2.5 µs per move, the array one about 170 µs
#: whatever its size (some forty NumPy calls), so arrays pay from about 70 moves; at
#: 10k queries states take 36 moves (objects 2× faster), at 100k 154 (arrays 2.2×).
ARRAY_MOVES = 100
#: ... once the object automaton has taken this many moves per tree node (building the
#: arrays costs about two moves' time per node).
ARRAY_PAYBACK = 1

#: marks a pattern number holding several keys in ``XmlIndex._single``
_SEVERAL = object()


def _plain_chain(f: XPathFilter) -> bool:
    """A linear path of tags, ``*`` and ``//`` without predicates."""
    return f.root.is_chain() and all(not n.preds and n.position is None for n in f.root.walk())


def _root_tag(f: XPathFilter) -> str | None:
    (first,) = f.root.children
    return None if first.label in (DESCENDANT, WILDCARD) else first.label


class XmlIndex(FilterIndex[Hashable, XPathFilter]):
    model: XmlModel

    def __init__(self, model: XmlModel) -> None:
        self.model = model
        self.tree = FactorizationTree()
        self._number: dict[XPathFilter, int] = {}
        self._filters: list[XPathFilter | None] = []  # None: a free number
        self._keys: list[dict[Hashable, None]] = []  # {} for a free number
        # number -> its key when it has exactly one, else _SEVERAL (or None when free)
        self._single: list[Hashable] = []
        self._several = 0  # patterns held under two keys or more
        self._free: list[int] = []
        self._leaves: dict[int, int] = {}  # branching pattern -> leaves
        self._shapes: dict[XPathFilter, set[int]] = {}
        self._by_root: dict[str | None, set[int]] = {}
        self._pairs = 0
        self._complex = 0  # patterns that are not plain chains
        self._dfa: PathAutomaton | ArrayPathAutomaton | None = None
        self._arrays: PathArrays | None = None  # the tree's plain paths as arrays
        self._single_array: np.ndarray | None = None

    def __getstate__(self) -> dict[str, object]:
        """Pickled (the Spark job ships indexes to its workers) without the path
        automaton's cache of states (up to ``DFA_CACHE_SIZE`` of them) and the keys'
        object array: both are rebuilt on demand. The arrays of the tree are kept."""
        state = self.__dict__.copy()
        state["_dfa"] = None
        state["_single_array"] = None
        return state

    # -- contents ------------------------------------------------------------------------
    def add(self, f: XPathFilter, key: Hashable) -> None:
        """Insert (f, key); if it fails (an unhashable key, no memory left), the index is
        left exactly as it was."""
        f = self.model.parse_filter(f)
        hash(key)
        i = self._number.get(f)
        if i is None:
            # everything that can fail on f is computed before anything changes
            shape = XPathFilter(skeleton(f.root))
            plain, chain = _plain_chain(f), f.root.is_chain()
            leaves = 0 if chain else sum(1 for n in f.root.walk() if not n.children)
            tag = _root_tag(f)
            i = self._free[-1] if self._free else len(self._filters)
            try:
                self.tree.add(i, f.root)
            except BaseException:
                if self.tree.root.sub >> i & 1:
                    self.tree.remove(i)  # undoes the part inserted
                raise
            if self._free:
                self._free.pop()
            else:
                self._filters.append(None)
                self._keys.append({})
                self._single.append(None)
            self._filters[i], self._keys[i] = f, {}
            self._number[f] = i
            self._dfa = None
            self._arrays = None
            if not plain:
                self._complex |= 1 << i
            if not chain:
                self._leaves[i] = leaves
            self._shapes.setdefault(shape, set()).add(i)
            self._by_root.setdefault(tag, set()).add(i)
        keys = self._keys[i]
        if key not in keys:
            keys[key] = None
            if len(keys) == 2:
                self._several += 1
            self._single[i] = key if len(keys) == 1 else _SEVERAL
            self._single_array = None
            self._pairs += 1
            self._dfa = None  # its states hold the keys of the chains ending there

    def remove(self, f: XPathFilter, key: Hashable) -> None:
        f = self.model.parse_filter(f)
        i = self._number.get(f)
        if i is None or key not in self._keys[i]:
            raise KeyError(f"({f!r}, {key!r}) is not in the index")
        keys = self._keys[i]
        del keys[key]
        if len(keys) == 1:
            self._several -= 1
        self._single_array = None
        self._single[i] = next(iter(keys)) if len(keys) == 1 else _SEVERAL if keys else None
        self._pairs -= 1
        self._dfa = None
        if keys:
            return
        self.tree.remove(i)
        self._dfa = None
        self._arrays = None
        self._complex &= ~(1 << i)
        del self._number[f]
        self._leaves.pop(i, None)
        shape = XPathFilter(skeleton(f.root))
        self._shapes[shape].discard(i)
        if not self._shapes[shape]:
            del self._shapes[shape]
        self._by_root[_root_tag(f)].discard(i)
        self._filters[i] = None
        self._free.append(i)

    def __iter__(self) -> Iterator[tuple[XPathFilter, Hashable]]:
        return iter(
            [(f, k) for f, ks in zip(self._filters, self._keys) if f is not None for k in ks]
        )

    def __len__(self) -> int:
        return self._pairs

    def __contains__(self, pair: object) -> bool:
        f: object
        k: object
        try:
            f, k = pair  # type: ignore[misc]  # any pair-like object; others fail below
            i = self._number.get(f)  # type: ignore[call-overload]  # an unhashable f raises
        except (TypeError, ValueError):
            return False
        return i is not None and k in self._keys[i]

    def filters(self, key: Hashable) -> list[XPathFilter]:
        return [f for f, ks in zip(self._filters, self._keys) if f is not None and key in ks]

    def _held(self, i: int) -> XPathFilter:
        """The pattern numbered i, which is held."""
        f = self._filters[i]
        assert f is not None
        return f

    @property
    def patterns(self) -> int:
        """|R|: distinct patterns held."""
        return len(self._number)

    def _keys_of(self, m: int) -> set[Hashable]:
        out: set[Hashable] = set()
        for i in bits(m):
            out.update(self._keys[i])
        return out

    def _keys_of_numbers(self, numbers: Collection[int]) -> set[Hashable]:
        """The keys of the patterns numbered ``numbers``: a list look-up per number for
        patterns with one key (the others, marked :data:`_SEVERAL`, through their dict)."""
        single = self._single
        out = set(map(single.__getitem__, numbers))
        if _SEVERAL in out:
            out.discard(_SEVERAL)
            keys = self._keys
            for i in numbers:
                if single[i] is _SEVERAL:
                    out.update(keys[i])
        return out

    def _keys_of_array(self, numbers: np.ndarray) -> set[Hashable]:
        """:meth:`_keys_of_numbers` of an array of distinct numbers: one gather from an
        object array of the single keys while no pattern has several."""
        if self._several:
            return self._keys_of_numbers(numbers.tolist())
        single = self._single_array
        if single is None:
            single = self._single_array = np.fromiter(
                self._single, dtype=object, count=len(self._single)
            )
        return set(single[numbers])

    # -- queries -------------------------------------------------------------------------
    def _automaton(self) -> PathAutomaton | ArrayPathAutomaton:
        """The path automaton of the plain chains: over the tree's objects
        (:mod:`.shared_matching`) until the states it makes take many moves each
        (:data:`ARRAY_MOVES` on average: a large tree, where each move is a cache miss)
        and it has taken as many moves as the tree has nodes (so building the arrays,
        which touches every node once, is paid for), then over arrays
        (:mod:`.path_arrays`), kept until the tree changes."""
        dfa = self._dfa
        if dfa is None:
            if self._arrays is not None:
                dfa = ArrayPathAutomaton(self._arrays, outputs=self._keys_of_array)
            else:
                dfa = PathAutomaton(self.tree, outputs=self._keys_of_numbers)
            self._dfa = dfa
        elif (
            type(dfa) is PathAutomaton
            and dfa.moves >= ARRAY_PAYBACK * self.tree.nodes
            and dfa.moves >= ARRAY_MOVES * dfa.made
        ):
            self._arrays = PathArrays(self.tree)
            dfa = self._dfa = ArrayPathAutomaton(self._arrays, dfa.cache_size, self._keys_of_array)
        return dfa

    def match_numbers(self, event: XmlEvent) -> set[int]:
        """Numbers of the patterns matching ``event``."""
        event = self.model.parse_event(event)
        doc = event.document
        found = self._automaton().match(doc)
        if self._complex:
            found.update(bits(match_tree(self.tree, doc, self._leaves, self._held, self._complex)))
        return found

    def match_mask(self, event: XmlEvent) -> int:
        m = 0
        for i in self.match_numbers(event):
            m |= 1 << i
        return m

    def match(self, event: XmlEvent) -> set[Hashable]:
        event = self.model.parse_event(event)
        doc = event.document
        out = self._automaton().match_outputs(doc)
        if self._complex:
            out |= self._keys_of(
                match_tree(self.tree, doc, self._leaves, self._held, self._complex)
            )
        return out

    def match_pairs(self, event: XmlEvent) -> list[tuple[XPathFilter, Hashable]]:
        return [
            (self._held(i), k) for i in sorted(self.match_numbers(event)) for k in self._keys[i]
        ]

    def covering(self, f: XPathFilter) -> set[Hashable]:
        f = self.model.parse_filter(f)
        return self._keys_of(self.tree.covering(f.root))

    def covered_by(self, f: XPathFilter) -> set[Hashable]:
        f = self.model.parse_filter(f)
        return self._keys_of(self.tree.covered(f.root))

    def identical(self, f: XPathFilter) -> set[Hashable]:
        f = self.model.parse_filter(f)
        return self._keys_of(self.tree.covering(f.root) & self.tree.covered(f.root))

    def overlapping(self, f: XPathFilter) -> set[Hashable]:
        f = self.model.parse_filter(f)
        tag = _root_tag(f)
        groups = (
            self._by_root.items()
            if tag is None
            else [(t, s) for t, s in self._by_root.items() if t is None or t == tag]
        )
        out: set[Hashable] = set()
        for _, numbers in groups:
            for i in numbers:
                if overlaps(self._held(i), f):
                    out.update(self._keys[i])
        return out

    def merge_candidates(self, f: XPathFilter) -> set[Hashable]:
        f = self.model.parse_filter(f)
        m = self.tree.covering(f.root) | self.tree.covered(f.root)
        for i in self._shapes.get(XPathFilter(skeleton(f.root)), ()):
            if not (m >> i) & 1 and merge_pair(self._held(i), f) is not None:
                m |= 1 << i
        return self._keys_of(m)
