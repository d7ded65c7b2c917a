"""The default filter index: a correct linear scan over the model's hooks.

It lets a new model route on day one; built-in models ship faster indexes whose answers
must equal this one's (the conformance kit checks that).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from typing import Any

from pubsift.core.model import Event, F, FilterIndex, FilterModel


class LinearIndex(FilterIndex[Hashable, F]):
    """Holds (filter, key) pairs in insertion order; every query scans all of them."""

    def __init__(self, model: FilterModel[F, Any]) -> None:
        self.model = model
        self._pairs: dict[tuple[F, Hashable], None] = {}

    def add(self, f: F, key: Hashable) -> None:
        self._pairs[(f, key)] = None

    def remove(self, f: F, key: Hashable) -> None:
        try:
            del self._pairs[(f, key)]
        except KeyError:
            raise KeyError(f"({f!r}, {key!r}) is not in the index") from None

    def __iter__(self) -> Iterator[tuple[F, Hashable]]:
        return iter(list(self._pairs))

    def __len__(self) -> int:
        return len(self._pairs)

    def __contains__(self, pair: object) -> bool:
        return pair in self._pairs

    def _select(self, test: Any) -> set[Hashable]:
        return {k for g, k in self._pairs if test(g)}

    def match(self, event: Event) -> set[Hashable]:
        return self._select(lambda g: self.model.matches(g, event))

    def match_pairs(self, event: Event) -> list[tuple[F, Hashable]]:
        return [(g, k) for g, k in self._pairs if self.model.matches(g, event)]

    def covering(self, f: F) -> set[Hashable]:
        return self._select(lambda g: self.model.covers(g, f))

    def covered_by(self, f: F) -> set[Hashable]:
        return self._select(lambda g: self.model.covers(f, g))

    def identical(self, f: F) -> set[Hashable]:
        return self._select(lambda g: self.model.identical(g, f))

    def overlapping(self, f: F) -> set[Hashable]:
        return self._select(lambda g: self.model.overlaps(g, f))

    def merge_candidates(self, f: F) -> set[Hashable]:
        return self._select(lambda g: self.model.merge([g, f], perfect=True) is not None)

    def filters(self, key: Hashable) -> list[F]:
        return [g for g, k in self._pairs if k == key]
