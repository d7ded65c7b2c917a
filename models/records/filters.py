"""Conjunctive filters of the records model (Mühl 2002, §4.3.2).

A :class:`RecordFilter` is a conjunction of attribute filters with **at most one constraint
per attribute** (the condition under which Cor. 4.1-4.3 reduce identity, covering and overlap
to the attribute filters). The empty filter matches every notification.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from pubsift.models.constraints import ABSENT, Constraint


@dataclass(frozen=True, slots=True)
class RecordFilter:
    """Immutable, hashable conjunction; ``constraints`` is sorted by attribute name."""

    constraints: tuple[tuple[str, Constraint], ...] = ()
    # The hash is cached: routing tables hash filters on every insert and lookup. It is
    # not pickled (string hashes differ between processes), see __reduce__.
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        h = self._hash
        if not h:
            h = hash(self.constraints) or 1
            object.__setattr__(self, "_hash", h)
        return h

    def __reduce__(self):
        return (RecordFilter, (self.constraints,))

    @classmethod
    def of(cls, constraints: Mapping[str, Constraint]) -> RecordFilter:
        return cls(tuple(sorted(constraints.items(), key=lambda kv: kv[0])))

    def __post_init__(self) -> None:
        names = [n for n, _ in self.constraints]
        if names != sorted(set(names)):
            raise ValueError(
                "RecordFilter: attribute names must be unique and sorted; "
                "use RecordFilter.of(mapping)"
            )

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.constraints)

    def get(self, name: str) -> Constraint | None:
        for n, c in self.constraints:
            if n == name:
                return c
        return None

    def as_dict(self) -> dict[str, Constraint]:
        return dict(self.constraints)

    def __iter__(self) -> Iterator[tuple[str, Constraint]]:
        return iter(self.constraints)

    def __len__(self) -> int:
        return len(self.constraints)

    def matches(self, record: Mapping) -> bool:
        """True iff the record satisfies every attribute filter (Mühl §4.3.2)."""
        get = record.get
        for name, c in self.constraints:
            if not c.matches(get(name, ABSENT)):
                return False
        return True
