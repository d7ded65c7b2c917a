"""Array-consistent matching of records events that hold arrays of objects.

An event is any JSON object, as in event-ruler. Objects nest as dotted names; an array of scalars
(and arrays of arrays of scalars, flattened) is one multi value; an array that holds objects (also
inside nested arrays) is a *group*: each of its objects is an *element*, a sub-event whose
attribute names are the dotted paths from the top (``geometry.coordinates.x``), and which may
hold groups of its own. The group's scalars, if it has any, are the multi value of its own
path; an array of objects only leaves its path without a value.

Semantics, as aws/event-ruler's ``rulesForJSONEvent`` answers them (its README, "JSON Array
Matching", and ``GenericMachineTest.nestedArraysTest``): the fields one filter tests must come
from the same array element. Here: a *view* of an event picks one element of each group (and,
inside it, one element of each of its groups) and is the flat event of the attributes outside
every group and those of the picked elements; a filter matches the event iff it matches one
of its views (Mühl 2002, §4.3.2, on the view). An event without groups is its own only view.

Consequences for the relations of the FilterModel contract. Covering, identity and perfect
merging over flat events carry over unchanged: if f ⊒ g on every flat event, then g matching
a view makes f match it. Overlap does not: ``a.x = 1`` and ``a.x = 2`` never hold on one flat
event, but both hold on ``{"a": [{"x": 1}, {"x": 2}]}``. :func:`overlaps` says True whenever
every attribute on which the two filters are disjoint is a dotted name (some prefix of it may
be an array), the conservative answer.

Difference from event-ruler, documented: the scalars of a mixed array (``[1, {"c": 2}]``) are
the multi value of its path whatever element is picked, where event-ruler's leaf ``1`` and
field ``c`` belong to different elements; a filter telling them apart needs both the path and
a name below it, which an EventBridge pattern cannot write (a key is either a list of tests or
an object).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Container, Sequence
from typing import Any

from pubsift.models.constraints import ABSENT, Constraint

#: An index matches an event through at most this many views; past it (a hostile event of
#: several long arrays whose products explode) it answers by the exact per-filter test.
MAX_VIEWS = 1024


def group_of(name: str, groups: Container[str]) -> str | None:
    """The path of the group of ``groups`` that ``name`` lies under (``a`` for ``a.x.y``
    when ``a`` is a group), or None."""
    i = name.find(".")
    while i > 0:
        p = name[:i]
        if p in groups:
            return p
        i = name.find(".", i + 1)
    return None


def satisfies(event: Any, constraints: Sequence[tuple[str, Constraint]]) -> bool:
    """Does some view of ``event`` (a :class:`~.events.Record`) satisfy every constraint?
    Decomposed: the constraints outside every group on the event's own attributes, and for
    each group the constraints below it on one of its elements (recursively); linear in the
    size of the event per filter."""
    get = event._attrs.get
    groups = event.groups
    if not groups:
        for n, c in constraints:
            if not c.matches(get(n, ABSENT)):
                return False
        return True
    parts: dict[str, list[tuple[str, Constraint]]] = {}
    for n, c in constraints:
        p = group_of(n, groups)
        if p is None:
            if not c.matches(get(n, ABSENT)):
                return False
        else:
            parts.setdefault(p, []).append((n, c))
    for p, cs in parts.items():
        if not any(satisfies(el, cs) for el in groups[p]):
            return False
    return True


def count_views(event: Any, relevant: Container[str], budget: int = MAX_VIEWS) -> int:
    """The number of views of ``event`` over the groups whose paths are in ``relevant``
    (the others left out), or ``budget + 1`` once it exceeds ``budget``."""
    total = 1
    for p, elements in event.groups.items():
        if p not in relevant:
            continue
        n = 0
        for el in elements:
            n += count_views(el, relevant, budget) if el.groups else 1
            if n > budget:
                return budget + 1
        total *= n
        if total > budget:
            return budget + 1
    return total


def views(event: Any, relevant: Container[str]) -> list[dict[str, Any]]:
    """The views of ``event`` as flat attribute dicts, over the groups whose paths are in
    ``relevant``: the attributes of a group no filter reads are left out, and so are the
    group's elements as choices (call :func:`count_views` first: their number is a product)."""
    base = event._attrs
    out = [base]
    for p, elements in event.groups.items():
        if p not in relevant:
            continue
        options: list[dict[str, Any]] = []
        for el in elements:
            options.extend(views(el, relevant) if el.groups else (el._attrs,))
        out = [{**v, **o} for v in out for o in options]
    return out


def flat_group(event: Any, relevant: Container[str]) -> Sequence[Any] | None:
    """The elements of the one group of ``event`` whose path is in ``relevant`` when
    there is exactly one and none of its elements has groups of its own (each view is
    then the event's attributes with one element's: :func:`views`), else None."""
    found = None
    for p, elements in event.groups.items():
        if p in relevant:
            if found is not None:
                return None
            found = elements
    if found is None:
        return None
    for el in found:
        if el.groups:
            return None
    return found


def base_for(event: Any, names: Collection[str]) -> dict[str, Any]:
    """The attributes of ``event`` outside its groups that are in ``names`` (those some
    filter reading the views names: the others answer none of them)."""
    attrs = event._attrs
    if len(names) < len(attrs):
        return {n: attrs[n] for n in names if n in attrs}
    return {n: v for n, v in attrs.items() if n in names}


def overlaps(f: Any, g: Any, disjoint: Callable[[str, Constraint, Constraint], bool]) -> bool:
    """For satisfiable f and g that no flat event satisfies together (Cor. 4.3): may an
    event with arrays satisfy both (see the module docstring)? False iff they are disjoint
    on some name without a dot, whose value is the same in every view (``disjoint(name, c,
    d)``: the attribute filters never hold together); else True, the sound answer."""
    gd = g.as_dict()
    for name, c in f:
        d = gd.get(name)
        if d is not None and "." not in name and disjoint(name, c, d):
            return False
    return True


__all__ = [
    "MAX_VIEWS",
    "base_for",
    "count_views",
    "flat_group",
    "group_of",
    "overlaps",
    "satisfies",
    "views",
]
