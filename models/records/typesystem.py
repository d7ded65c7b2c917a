"""Declared notification types for ``instanceof`` (Mühl 2002, §4.3.3, Table 4.1) and the
records model's configuration (:class:`Schema`).

Mühl argues for direct support of notification types instead of dotted type strings because
it allows *multiple inheritance*. A :class:`TypeHierarchy` is declared as a mapping
``type -> supertypes``; a type named only as a supertype is a root type. Cycles are rejected.
``n instanceof T`` matches the names of ``T`` and all its (transitive) subtypes, so Table 4.1
(``n instanceof T1`` covers ``n instanceof T2`` iff ``T1 = T2`` or ``T1`` is a supertype of
``T2``) is exactly set inclusion of the :class:`~pubsift.models.constraints.constraints.TypeSet`
operands.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pubsift.models.constraints import TypeSet


class TypeHierarchyError(ValueError):
    """The declared hierarchy is malformed (a cycle, a bad type name)."""


class UnknownTypeError(LookupError):
    """A type name that the hierarchy does not declare."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.name = name
        known = sorted(known)
        shown = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
        super().__init__(f"unknown type {name!r} (declared types: {shown or 'none'})")


class TypeHierarchy:
    """An immutable type hierarchy with multiple inheritance.

    ``TypeHierarchy({"StockQuote": ["Quote"], "Quote": [], "Bond": ["Quote", "Security"]})``.
    Cycles are found at construction (Kahn's algorithm); closures are computed iteratively
    on first use and cached (no recursion limits, no quadratic tables for deep chains).
    """

    __slots__ = ("_down", "_subs", "_supers", "_up")

    def __init__(self, declared: Mapping[str, Iterable[str]] | None = None) -> None:
        supers: dict[str, frozenset[str]] = {}
        for t, ss in (declared or {}).items():
            _check_name(t)
            if isinstance(ss, str):
                raise TypeHierarchyError(
                    f"supertypes of {t!r} must be a list of type names, not the string {ss!r}"
                )
            ss = frozenset(ss)
            for s in ss:
                _check_name(s)
            supers[t] = ss
        for ss in list(supers.values()):
            for s in ss:
                supers.setdefault(s, frozenset())
        subs: dict[str, set[str]] = {t: set() for t in supers}
        for t, ss in supers.items():
            for s in ss:
                subs[s].add(t)
        _check_acyclic(supers, subs)
        self._supers = supers
        self._subs = {t: frozenset(s) for t, s in subs.items()}
        self._up: dict[str, frozenset[str]] = {}  # closures, computed on first use
        self._down: dict[str, frozenset[str]] = {}

    # -- queries -------------------------------------------------------------------
    @property
    def types(self) -> frozenset[str]:
        return frozenset(self._supers)

    def __contains__(self, name: object) -> bool:
        return name in self._supers

    def supertypes(self, name: str) -> frozenset[str]:
        """``name`` and all its transitive supertypes."""
        return _closure(self._known(name), self._supers, self._up)

    def subtypes(self, name: str) -> frozenset[str]:
        """``name`` and all its transitive subtypes."""
        return _closure(self._known(name), self._subs, self._down)

    def is_subtype(self, sub: str, sup: str) -> bool:
        """True iff ``sub`` is ``sup`` or a (transitive) subtype of it."""
        return self._known(sup) in self.supertypes(sub)

    def typeset(self, name: str) -> TypeSet:
        """The ``instanceof`` operand: ``name`` with the closure of its subtypes."""
        return TypeSet(name, self.subtypes(name))

    def declared(self) -> dict[str, list[str]]:
        """The declaration as a JSON-safe mapping (sorted), e.g. for configuration files."""
        return {t: sorted(self._supers[t]) for t in sorted(self._supers)}

    def _known(self, name: str) -> str:
        if name not in self._supers:
            raise UnknownTypeError(name, self._supers)
        return name

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TypeHierarchy):
            return self._supers == other._supers
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self._supers.items()))

    def __repr__(self) -> str:
        return f"TypeHierarchy({self.declared()!r})"


def _check_name(t: object) -> None:
    if not isinstance(t, str) or not t:
        raise TypeHierarchyError(f"type names are non-empty strings, got {t!r}")


def _closure(
    t: str, edges: Mapping[str, frozenset[str]], cache: dict[str, frozenset[str]]
) -> frozenset[str]:
    """``t`` and everything reachable from it along ``edges`` (iterative search, cached:
    the hierarchy is immutable)."""
    found = cache.get(t)
    if found is None:
        seen, todo = {t}, [t]
        while todo:
            for u in edges[todo.pop()]:
                if u not in seen:
                    seen.add(u)
                    todo.append(u)
        found = cache[t] = frozenset(seen)
    return found


def _check_acyclic(supers: Mapping[str, frozenset[str]], subs: Mapping[str, set[str]]) -> None:
    """Kahn's algorithm over the edges supertype -> subtype; a cycle is reported by name."""
    pending = {t: len(ss) for t, ss in supers.items()}
    ready = [t for t, n in pending.items() if n == 0]
    done = 0
    while ready:
        t = ready.pop()
        done += 1
        for u in subs[t]:
            pending[u] -= 1
            if pending[u] == 0:
                ready.append(u)
    if done < len(supers):
        left = {t for t, n in pending.items() if n > 0}
        raise TypeHierarchyError(
            "the type hierarchy has a cycle: " + " -> ".join(_find_cycle(supers, left))
        )


def _find_cycle(supers: Mapping[str, frozenset[str]], left: set[str]) -> list[str]:
    """A cycle among the types Kahn's algorithm could not order (each has a supertype in
    ``left``, so walking upwards must revisit a type)."""
    t = min(left)
    seen: dict[str, int] = {}
    path: list[str] = []
    while t not in seen:
        seen[t] = len(path)
        path.append(t)
        t = min(s for s in supers[t] if s in left)
    return path[seen[t] :] + [t]


@dataclass(frozen=True)
class Schema:
    """Configuration of the records model.

    ``integer_attrs``: attributes whose values are integers (so ``x > 3 and x < 5`` is
    ``x = 4``; passed to :func:`relations.conjoin`/``normalize`` as ``integer=True``).
    ``types``: the declared type hierarchy for ``instanceof``.
    """

    integer_attrs: frozenset[str] = frozenset()
    types: TypeHierarchy = field(default_factory=TypeHierarchy)

    @classmethod
    def of(
        cls,
        integer_attrs: Iterable[str] = (),
        types: Mapping[str, Iterable[str]] | TypeHierarchy | None = None,
    ) -> Schema:
        if isinstance(integer_attrs, str):
            raise TypeError("integer_attrs is a collection of attribute names, not a string")
        h = types if isinstance(types, TypeHierarchy) else TypeHierarchy(types)
        return cls(frozenset(integer_attrs), h)

    def is_integer(self, name: str) -> bool:
        return name in self.integer_attrs


__all__ = ["Schema", "TypeHierarchy", "TypeHierarchyError", "UnknownTypeError"]
