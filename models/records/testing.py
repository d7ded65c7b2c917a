"""hypothesis strategies for the records model: filters over every operator of Mühl 2002,
§4.3.3 (and the EventBridge ones), events mixing kinds, and events built to match a given
filter — the fixtures the conformance kit (docs/conformance.md) needs, usable by any test.

Constants are small on purpose so that relations hold often: attribute names ``a``, ``b``,
``c``, ``d.e``, ``d.f`` (nested), numbers in [-1, 3] including halves and ``2.0``, strings
of up to three letters over ``abA``, booleans and null, lists of those. ``instanceof`` uses
:data:`TYPES`, a small hierarchy with multiple inheritance whose type names are such
strings too. Filters are brought into the canonical form the parsers produce with
:func:`relations.normalize` (per attribute, integer-aware for the schema's integer
attributes), so they are exactly the filters the model can be given.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from functools import cache
from typing import Any, cast

from hypothesis import strategies as st
from pubsift.models.constraints import (
    Constraint,
    Interval,
    NotRepresentable,
    Op,
    Unsatisfiable,
    normalize,
    skey,
    witness,
)
from pubsift.models.records.events import Record
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.typesystem import Schema

#: attribute names filters use; events may also carry ``z``, which no filter constrains.
NAMES = ("a", "b", "c", "d.e", "d.f")
FREE = "z"

#: a small declared hierarchy (Mühl Table 4.1) with multiple inheritance; type names are
#: strings over the same letters as the string constants, so instanceof meets the string ops.
TYPES: dict[str, list[str]] = {
    "a": [],
    "b": [],
    "aa": ["a"],
    "ab": ["a", "b"],
    "aab": ["aa", "ab"],
    "ba": ["b"],
}
#: the schema the conformance tests configure the model with: ``c`` holds integers.
SCHEMA = Schema.of(integer_attrs=["c"], types=TYPES)

NUMBERS = (-1, 0, 1, 2, 3, 0.5, 1.5, 2.0)
INTEGERS = (-1, 0, 1, 2, 3)


_NONE: st.SearchStrategy[None] = st.none()


@cache
def strings() -> st.SearchStrategy[str]:
    return st.text(alphabet="abA", max_size=3)


#: I-Regexps (RFC 9485) and networks for the regexp and cidr operators
REGEXPS = ["a*", "(a|b)A?", "[^a]b*", "a.|bA", "(ab){1,2}", "[A-Z]"]
NETWORKS = ["10.0.0.0/24", "10.0.0.0/8", "2001:db8::/32"]


@cache
def numbers(integer: bool = False) -> st.SearchStrategy[int | float]:
    return st.sampled_from(INTEGERS if integer else NUMBERS)


@cache
def scalars(integer: bool = False) -> st.SearchStrategy[Any]:
    """Strings, numbers, booleans and null; on integer attributes (whose values the model
    checks) integers and null only."""
    if integer:
        return st.one_of(numbers(True), st.none())
    return st.one_of(numbers(), strings(), st.booleans(), st.none())


@cache
def values(integer: bool = False) -> st.SearchStrategy[Any]:
    """Attribute values: scalars or multi values (tuples, as :class:`Record` holds them);
    on integer attributes the elements of a multi value are integers."""
    elems = numbers(True) if integer else scalars()
    return st.one_of(scalars(integer), st.lists(elems, max_size=3).map(tuple))


def _skeys(integer: bool, min_size: int) -> st.SearchStrategy[frozenset]:
    return st.frozensets(scalars(integer).map(skey), min_size=min_size, max_size=3)


def _num_interval(integer: bool) -> st.SearchStrategy[Interval]:
    ends = st.one_of(numbers(integer), st.just(-math.inf), st.just(math.inf))
    return st.builds(
        lambda a, b, lc, hc: Interval(min(a, b), max(a, b), lc, hc),
        ends,
        ends,
        st.booleans(),
        st.booleans(),
    )


def _str_interval() -> st.SearchStrategy[Interval]:
    def build(a: str, b: str | None, lc: bool, hc: bool) -> Interval:
        if b is not None and b < a:
            a, b = b, a
        return Interval(a, b, lc or a == "", hc)

    return st.builds(
        build, strings(), st.one_of(strings(), st.none()), st.booleans(), st.booleans()
    )


@cache
def raw_constraints(
    schema: Schema = SCHEMA, integer: bool = False
) -> st.SearchStrategy[Constraint]:
    """One constraint per operator of :class:`Op`, with operands as the parsers build them
    (before :func:`relations.normalize`); on integer attributes only the operators that
    can hold for integers, null or lists of integers, with such operands."""

    def c(op: Op, operand: st.SearchStrategy[Any] = _NONE) -> st.SearchStrategy:
        return operand.map(lambda x: Constraint(op, x))

    if integer:  # values are integers, null or lists of integers (the model checks)
        scalar = [
            c(Op.EXISTS),
            c(Op.NOT_EXISTS),
            c(Op.EQ, scalars(True)),
            c(Op.NE, scalars(True)),
            *(c(op, numbers(True)) for op in (Op.LT, Op.LE, Op.GT, Op.GE)),
            *(c(op, _num_interval(True)) for op in (Op.IN_RANGE, Op.NOT_IN_RANGE)),
            *(c(op, _skeys(True, 1)) for op in (Op.IN_SET, Op.NOT_IN_SET)),
        ]
        return st.one_of(
            *scalar,
            c(Op.ANY, st.one_of(scalar)),
            *(
                c(op, st.frozensets(numbers(True).map(skey), max_size=3))
                for op in (Op.SUBSET, Op.SUPERSET, Op.DISJOINT, Op.OVERLAPS)
            ),
            *(c(op, numbers(True).map(skey)) for op in (Op.CONTAINS, Op.NOT_CONTAINS)),
        )
    ordered = st.one_of(numbers(), strings())
    types = sorted(schema.types.types)
    scalar = [
        c(Op.EXISTS),
        c(Op.NOT_EXISTS),
        c(Op.EQ, scalars()),
        c(Op.NE, scalars()),
        *(c(op, ordered) for op in (Op.LT, Op.LE, Op.GT, Op.GE)),
        *(
            c(op, st.one_of(_num_interval(False), _str_interval()))
            for op in (Op.IN_RANGE, Op.NOT_IN_RANGE)
        ),
        *(c(op, _skeys(False, 1)) for op in (Op.IN_SET, Op.NOT_IN_SET)),
        *(
            c(op, strings())
            for op in (
                Op.PREFIX,
                Op.NOT_PREFIX,
                Op.SUFFIX,
                Op.NOT_SUFFIX,
                Op.SUBSTRING,
                Op.EQ_IGNORE_CASE,
            )
        ),
    ]
    if types:
        scalar.append(c(Op.INSTANCEOF, st.sampled_from(types).map(schema.types.typeset)))
    # the operators of EventBridge patterns (docs/records-syntax.md, section 2)
    excluded = [
        c(Op.EQ, st.one_of(numbers(), strings())),
        c(Op.IN_SET, _skeys(False, 1)),
        *(c(op, strings()) for op in (Op.PREFIX, Op.SUFFIX, Op.EQ_IGNORE_CASE)),
        c(Op.PREFIX_IGNORE_CASE, strings()),
        c(Op.WILDCARD, st.lists(strings(), min_size=2, max_size=3).map(tuple)),
    ]
    scalar += [
        *excluded[5:],
        c(Op.SUFFIX_IGNORE_CASE, strings()),
        c(Op.REGEXP, st.sampled_from(REGEXPS)),
        c(Op.CIDR, st.sampled_from(NETWORKS).map(ipaddress.ip_network)),
        c(Op.ANYTHING_BUT, st.frozensets(st.one_of(excluded), min_size=1, max_size=2)),
    ]
    exact = [o for o in scalar if o is not scalar[-2]]  # (cidr's relations are sound only)
    options = [
        *scalar,
        c(Op.ALL, st.frozensets(c(Op.ANY, st.one_of(exact)), min_size=2, max_size=2)),
        c(Op.ANY, st.one_of(scalar)),  # EventBridge: some leaf satisfies it
        *(c(op, _skeys(False, 0)) for op in (Op.SUBSET, Op.SUPERSET, Op.DISJOINT, Op.OVERLAPS)),
        *(c(op, scalars().map(skey)) for op in (Op.CONTAINS, Op.NOT_CONTAINS)),
    ]
    return st.one_of(options)


@cache
def constraints(schema: Schema = SCHEMA, integer: bool = False) -> st.SearchStrategy[Constraint]:
    """Canonical, satisfiable constraints (raw ones the parsers would reject are dropped)."""

    def canonical(c: Constraint) -> Constraint | None:
        try:
            return normalize(c, integer=integer)
        except (Unsatisfiable, NotRepresentable):
            return None

    kept = raw_constraints(schema, integer).map(canonical).filter(lambda c: c is not None)
    return cast("st.SearchStrategy[Constraint]", kept)  # the filter drops the Nones


@st.composite
def filters(draw: st.DrawFn, schema: Schema = SCHEMA, max_size: int = 3) -> RecordFilter:
    """Conjunctive filters over up to ``max_size`` of :data:`NAMES` (the empty filter too)."""
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=max_size))
    return RecordFilter.of(
        {n: draw(constraints(schema, schema.is_integer(n)), label=n) for n in names}
    )


def _listed(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


@st.composite
def _list_shape(draw: st.DrawFn, v: tuple) -> list:
    """A multi value as a JSON array, split into nested arrays now and then (the same
    elements: arrays in arrays are flattened)."""
    if len(v) < 2 or not draw(st.booleans(), label="nested arrays"):
        return list(v)
    cut = draw(st.integers(1, len(v) - 1), label="cut")
    return [list(v[:cut]), *v[cut:]] if draw(st.booleans()) else [[*v[:cut]], [*v[cut:]]]


@st.composite
def _shaped(draw: st.DrawFn, flat: Mapping[str, Any]) -> dict[str, Any]:
    """The nested event of the dotted attributes ``flat``, in a random JSON shape that keeps
    its views' values: ``d``'s attributes in one object, alone or as one element of an
    array (nested in an array now and then) among other elements drawn at random."""
    out: dict[str, Any] = {}
    inner: dict[str, Any] = {}
    for name, v in flat.items():
        if name.startswith("d."):
            inner[name[2:]] = _listed(v)
        else:
            out[name] = draw(_list_shape(v)) if isinstance(v, tuple) else v
    shape = draw(st.sampled_from(("object", "array", "nested")), label="shape of d")
    if shape == "object":
        if inner:
            out["d"] = inner
        return out
    others = draw(
        st.lists(
            st.dictionaries(st.sampled_from(("e", "f")), values().map(_listed), max_size=2),
            max_size=2,
        ),
        label="other elements",
    )
    at = draw(st.integers(0, len(others)), label="position")
    elements: list[Any] = [*others[:at], inner, *others[at:]]
    if shape == "nested":
        elements = [elements[:1], *elements[1:]] if draw(st.booleans()) else [elements]
    out["d"] = elements
    return out


@st.composite
def events(draw: st.DrawFn, schema: Schema = SCHEMA) -> Record:
    """Events over :data:`NAMES` and ``z`` with values of every kind, in every JSON shape
    (arrays of objects, nested arrays, ``{}``: see the module docstring)."""
    names = draw(st.lists(st.sampled_from(NAMES + (FREE,)), unique=True, max_size=4))
    flat = {n: draw(values(schema.is_integer(n)), label=n) for n in names}
    return Record.of(draw(_shaped(flat)))


def _natural(c: Constraint, integer: bool) -> list[Any]:
    """Values read off the operand that often lie in L_A(c) (the operand of ``=``, a set's
    members, a range's ends, the string of ``prefix``, ...): candidates independent of
    :mod:`relations`, tried before its witness."""
    x = c.operand
    if c.op is Op.ANY:  # the inner constraint's values, alone and in lists
        inner = _natural(x, integer)
        return inner + [tuple(v for v in inner[:2] if not isinstance(v, tuple))]
    if isinstance(x, Interval):
        ends = [
            e for e in (x.lo, x.hi) if isinstance(e, str) or (e is not None and math.isfinite(e))
        ]
        step: Any = (
            "a" if isinstance(x.lo, str) else 1 if integer else 0.5
        )  # added to str or number ends
        return ends + [e + step for e in ends]
    if c.op is Op.ANYTHING_BUT or c.op is Op.ALL:  # their members' values, and others
        return [v for m in x for v in _natural(m, integer)] + [None, 0, "x"]
    if c.op is Op.WILDCARD:
        return ["".join(x), "a".join(x), x[0]]
    if c.op is Op.CIDR:
        return [str(x.network_address), str(x.broadcast_address), "10.1.2.3", "::1"]
    if isinstance(x, frozenset):
        elems = tuple(v for _, v in x)
        return [*elems, elems, ()]
    if isinstance(x, tuple):  # a skey: contains / not-contains
        return [(x[1],), ()]
    if c.op is Op.INSTANCEOF:
        return sorted(x.members)
    if isinstance(x, str):
        return [x, x + "a", "a" + x, x.swapcase(), ""]
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return [x, x - 1, x + 1]
    return [x]


def _integral(v: Any) -> bool:
    """An acceptable value of an integer attribute: null, an integer, a list of integers."""
    if v is None:
        return True
    return all(
        (isinstance(x, int) and not isinstance(x, bool))
        or (isinstance(x, float) and x.is_integer())
        for x in (v if isinstance(v, tuple) else (v,))
    )


def matching_event(f: RecordFilter, schema: Schema = SCHEMA) -> st.SearchStrategy[Record]:
    """Events that match ``f``: per constrained attribute, a random value the constraint
    accepts (random, then read off its operand, else :func:`relations.witness` of it),
    nothing for ``not-exists``; other attributes random; in a random JSON shape, the values
    of ``d`` in one element when ``d`` is an array (a view holds them all)."""

    @st.composite
    def build(draw: st.DrawFn) -> Record:
        attrs: dict[str, Any] = {}
        for name, c in f:
            if c.op is Op.NOT_EXISTS or (c.op is Op.ANY and c.operand.op is Op.NOT_EXISTS):
                continue
            integer = schema.is_integer(name)
            tried = draw(st.lists(values(integer), max_size=4), label=name)
            hits = [
                v
                for v in tried + _natural(c, integer)
                if c.matches(v) and (not integer or _integral(v))
            ]
            attrs[name] = hits[0] if hits else witness(c, avoid=tried, integer=integer)
        for name in NAMES + (FREE,):
            if name not in f.names and draw(st.booleans(), label=f"with {name}"):
                attrs[name] = draw(values(schema.is_integer(name)), label=name)
        return Record.of(draw(_shaped(attrs)))

    return build()


__all__ = [
    "FREE",
    "NAMES",
    "SCHEMA",
    "TYPES",
    "constraints",
    "events",
    "filters",
    "matching_event",
    "numbers",
    "raw_constraints",
    "scalars",
    "strings",
    "values",
]
