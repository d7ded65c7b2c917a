"""EventBridge / aws event-ruler / quamina JSON patterns as records filters.

A pattern is a JSON object whose nested objects address dotted attribute names
(``{"detail": {"state": [...]}}`` -> ``detail.state``) and whose leaf arrays list what a field
may match: literals (one -> ``=``, several -> ``in {...}``) and matcher objects. Every matcher
tests the *leaves* of the field (Amazon EventBridge user guide, "Arrays in Amazon EventBridge
event patterns"; event-ruler README, "JSON Array Matching"): the value itself, or each
element when the event holds an array there, and holds when some leaf matches. So each
becomes an "any element" constraint (:data:`Op.ANY <.constraints.Op>`, text form ``any``).
The operators are those of "Content filtering in Amazon EventBridge event patterns" and
event-ruler's README, plus quamina's ``shellstyle`` and ``regexp``:

==============================================  ==========================================
pattern                                         records constraint (inside ``any``)
==============================================  ==========================================
``"s"``, ``5``, ``true``, ``null``              ``= v`` (several literals: ``in {...}``)
``{"exactly": "s"}``                            ``= "s"``
``{"prefix": "s"}`` / ``{"suffix": "s"}``       ``prefix "s"`` / ``suffix "s"``
``{"prefix": {"equals-ignore-case": "s"}}``     ``prefix-ignore-case "s"`` (suffix alike)
``{"equals-ignore-case": "s"}``                 ``equals-ignore-case "s"``
``{"wildcard": "a*b*c"}``                       ``wildcard "a*b*c"`` (any number of ``*``,
                                                ``\\*`` a literal star); ``"a*"``,
                                                ``"*a"``, ``"*a*"``, no star: ``prefix``,
                                                ``suffix``, ``substring``, ``=``
``{"shellstyle": "a*b"}`` (quamina)             the same, without escapes
``{"regexp": "a[bc]+"}`` (quamina)              ``regexp`` (I-Regexp, RFC 9485: the whole
                                                value matches)
``{"cidr": "10.0.0.0/24"}``                     ``cidr`` (IPv4 and IPv6)
``{"anything-but": v}`` / ``[v, ..]``           ``anything-but (= v)`` / ``(in {...})``
``{"anything-but": {"prefix": s | [s, ..]}}``   ``anything-but (prefix s, ...)``; likewise
                                                ``suffix``, ``equals-ignore-case``,
                                                ``wildcard``
``{"numeric": [">", a, "<=", b, ...]}``         every comparison: ``in (a, b]``, ``> a``,
                                                ``= a``; pairs in any order
``{"exists": true}`` / ``false``                ``exists`` (a scalar or a non-empty array)
                                                / ``not exists`` (absent, or ``[]``)
==============================================  ==========================================

``anything-but`` holds for a present scalar of *any* kind that none of its members accepts:
``null``, ``true`` and numbers are "anything but" a string, strings are anything but a
number (as event-ruler and quamina answer: they compare JSON texts); an array holds when
some element does.

Disjunctions become several conjunctive filters (Mühl 2002, §4.3.2: a compound filter is a
set of conjunctive filters interpreted disjunctively): ``"$or": [{...}, {...}]`` (at least
two objects, as in event-ruler; at any level), and a leaf array mixing several matchers
(``["a", {"prefix": "b"}]`` is ``any = "a"`` or ``any prefix "b"``). :func:`parse_pattern`
returns the list; a branch that can match nothing is dropped. Several patterns on one
attribute in one branch (a ``$or`` beside a test on the same field) must all hold: they are
combined with :func:`relations.conjoin` (``any = 1`` and ``any = 2``: an array holding both,
``superset {1, 2}``), and where no single constraint expresses them, held together by
``all`` (``any = 1`` and ``any prefix "x"``).

Rejected with a :class:`FilterSyntaxError` naming the JSON path: malformed matchers
(consecutive ``*`` or a stray backslash in a wildcard, an expression outside I-Regexp, a
malformed network, ``numeric`` comparisons that exclude each other, mixed kinds in an
``anything-but`` list, empty ``anything-but`` prefixes), empty objects/arrays, ``$or`` used
as a plain field name (event-ruler's legacy reading), unknown matchers, patterns that
expand into more than :data:`MAX_FILTERS` conjunctive filters, a field addressed twice in
one object (a dotted name and a nested object, in either order), and input beyond the
limits of :mod:`.limits` and :mod:`pubsift.models.constraints.limits` (nesting, integer
digits, non-finite numbers, lone surrogates).

Where this reading differs from event-ruler's (each difference is listed in
docs/records-syntax.md, "EventBridge patterns"): numbers compare exactly (event-ruler
within IEEE doubles, EventBridge's documentation within -5e9..5e9 and six decimals);
several patterns on one field in one branch must all hold (event-ruler keeps the last);
``equals-ignore-case`` and its prefix/suffix forms compare ``str.casefold()``; literal IP
addresses compare as strings (``cidr`` reads addresses).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from pubsift.core.errors import FilterSyntaxError
from pubsift.models.constraints import (
    Conjunction,
    Constraint,
    NotRepresentable,
    Op,
    RegexpError,
    TooComplex,
    Unsatisfiable,
    check_regexp,
    glob_constraint,
    limits,
    load_network,
    skey,
    value_set,
    wildcard_parts,
)
from pubsift.models.constraints import json_type as _json_type
from pubsift.models.records import limits as record_limits
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.formatting import (
    clause_text,
    too_complex_message,
    unsatisfiable_message,
)
from pubsift.models.records.typesystem import Schema

#: The largest number of conjunctive filters one pattern may expand into.
MAX_FILTERS = 256

OR = "$or"
_MATCHERS = (
    "exactly",
    "prefix",
    "suffix",
    "equals-ignore-case",
    "anything-but",
    "numeric",
    "exists",
    "wildcard",
    "shellstyle",
    "cidr",
    "regexp",
)
_PLAIN_KEY = re.compile(r"[A-Za-z_$][\w$-]*")


class _DeadBranch(Exception):
    """A conjunctive branch that can match nothing (it is dropped from the disjunction)."""

    def __init__(self, reason: str, path: str) -> None:
        super().__init__(reason, path)
        self.reason, self.path = reason, path


class _Clause(NamedTuple):
    name: str
    constraint: Constraint
    path: str


def parse_pattern(
    spec: str | Mapping[str, Any], schema: Schema | None = None
) -> list[RecordFilter]:
    """The conjunctive filters (at least one) whose union an EventBridge pattern denotes.

    ``spec`` is the parsed JSON object or its text. Raises :class:`FilterSyntaxError` with
    the JSON path (or, for malformed JSON text, the position) of the problem."""
    schema = schema or Schema()
    text = None
    if isinstance(spec, str):
        text = spec
        spec = _load_json(spec)
    if not isinstance(spec, Mapping):
        raise FilterSyntaxError(
            f"an EventBridge pattern is a JSON object, not {_json_type(spec)}", text, None, "$"
        )
    if text is None:
        try:
            record_limits.check_depth(spec)
        except record_limits.InputLimit as e:
            raise _err(e.message, str(e.where)) from None
    branches = _object(spec, "", "$", in_or=False, seen={})
    filters: list[RecordFilter] = []
    dead: FilterSyntaxError | None = None
    for branch in branches:
        try:
            f = _conjoin(branch, schema)
        except _DeadBranch as e:
            dead = dead or FilterSyntaxError(
                f"{e.reason}; the pattern would match nothing", None, None, e.path
            )
            continue
        if f not in filters:
            filters.append(f)
    if not filters:
        assert dead is not None
        raise dead
    return filters


def _conjoin(branch: tuple[_Clause, ...], schema: Schema) -> RecordFilter:
    """One attribute filter per attribute: the patterns on it conjoined where one
    constraint expresses them, else several held together by ``all`` (``any = 1`` and
    ``any prefix "x"``: some leaf equal to 1 and some leaf starting with "x")."""
    acc: dict[str, list[Conjunction]] = {}
    for name, c, path in branch:
        parts = acc.setdefault(name, [])
        for conj in parts:
            try:
                conj.add(c)
            except Unsatisfiable:
                prev = conj.value if conj else None
                raise _DeadBranch(unsatisfiable_message(name, prev, c), path) from None
            except TooComplex:
                raise _err(too_complex_message(name, c), path) from None
            except NotRepresentable:
                continue
            break
        else:
            conj = Conjunction(schema.is_integer(name))
            try:
                conj.add(c)
            except Unsatisfiable:
                raise _DeadBranch(unsatisfiable_message(name, None, c), path) from None
            except TooComplex:
                raise _err(too_complex_message(name, c), path) from None
            parts.append(conj)
    out: dict[str, Constraint] = {}
    for name, parts in acc.items():
        if len(parts) == 1:
            out[name] = parts[0].value
            continue
        both = Constraint(Op.ALL, frozenset(p.value for p in parts))
        try:
            empty = value_set(both, schema.is_integer(name)).is_empty()
        except TooComplex:
            empty = False  # not decided: kept (it matches what it matches)
        if empty:
            raise _DeadBranch(
                f"the patterns on attribute {name!r} exclude each other "
                f"({clause_text(name, both)})",
                branch[-1].path,
            )
        out[name] = both
    return RecordFilter.of(out)


# --------------------------------------------------------------------------------------
# structure: objects, $or, leaf arrays -> disjunctive normal form


def _object(
    obj: Mapping[str, Any], prefix: str, path: str, in_or: bool, seen: dict[str, str]
) -> list[tuple[_Clause, ...]]:
    """``seen``: the attributes constrained so far in this object and the objects nested
    in it (not through ``$or``), with their paths: a dotted field name and a nested object
    that address the same attribute are refused, in either order."""
    if not obj:
        raise _err("empty objects are not allowed in a pattern", path)
    dnf: list[tuple[_Clause, ...]] = [()]
    for key, val in obj.items():
        if not isinstance(key, str) or not key:
            raise _err(f"field names are non-empty strings, got {_show(key)}", path)
        if limits.has_surrogate(key):
            raise _err(f"field name {_show(key)}: {limits.surrogate_message(key)}", path)
        if limits.string_too_long(key):
            raise _err(f"field name {_show(key)}: {limits.string_message(key)}", path)
        kpath = path + _seg(key)
        if key == OR:
            alts = _or(val, prefix, kpath)
        elif in_or and key in _MATCHERS:
            raise _err(
                f"{_show(key)} is a matcher, not a field name: the objects of {OR} hold "
                'fields, e.g. {"$or": [{"a": [{"prefix": "x"}]}, {"b": [1]}]}',
                kpath,
            )
        elif isinstance(val, Mapping):
            alts = _object(val, f"{prefix}{key}.", kpath, in_or, seen)
        elif isinstance(val, (list, tuple)):
            name = prefix + key
            if name in seen:
                first, second = sorted((seen[name], kpath))
                raise _err(
                    f"field {_show(name)} is given twice (a dotted name and a nested "
                    f"object address the same attribute; also at {second})",
                    first,
                )
            seen[name] = kpath
            alts = [(c,) for c in _leaf(val, name, kpath)]
        else:
            raise _err(
                f"field {_show(key)} must be an object or an array of values/matchers, "
                f"not {_json_type(val)} (write [{_show(val)}])",
                kpath,
            )
        if len(dnf) * len(alts) > MAX_FILTERS:
            raise _err(
                f"the pattern expands into more than {MAX_FILTERS} conjunctive "
                "filters ($or branches and multi-matcher arrays multiply)",
                kpath,
            )
        dnf = [d + a for d in dnf for a in alts]
    return dnf


def _or(val: Any, prefix: str, path: str) -> list[tuple[_Clause, ...]]:
    if not isinstance(val, (list, tuple)):
        raise _err(
            f"{OR} must be followed by an array of at least two objects (using "
            f"{OR!r} as a plain field name is not supported)",
            path,
        )
    if len(val) < 2:
        raise _err(f"{OR} needs at least two objects (found {len(val)})", path)
    alts: list[tuple[_Clause, ...]] = []
    for i, item in enumerate(val):
        if not isinstance(item, Mapping):
            raise _err(
                f"only JSON objects are allowed in the array of {OR}, not {_json_type(item)}",
                f"{path}[{i}]",
            )
        alts.extend(_object(item, prefix, f"{path}[{i}]", in_or=True, seen={}))
    return alts


def _leaf(arr: list | tuple, name: str, path: str) -> list[_Clause]:
    """The alternatives of one field: the literals as one clause, each matcher as one."""
    if not arr:
        raise _err(
            "empty arrays are not allowed: a field's array lists the values or "
            "matchers it may match",
            path,
        )
    literals: list[Any] = []
    matchers: list[_Clause] = []
    for i, v in enumerate(arr):
        ipath = f"{path}[{i}]"
        if isinstance(v, Mapping):
            matchers.append(_Clause(name, _leaves(_matcher(v, ipath)), ipath))
        elif isinstance(v, (list, tuple)):
            raise _err(
                "nested arrays are not allowed; a field's array holds values and matcher objects",
                ipath,
            )
        else:
            literals.append(_scalar(v, ipath))
    out: list[_Clause] = []
    if literals:
        keys = frozenset(skey(v) for v in literals)
        c = Constraint(Op.EQ, literals[0]) if len(keys) == 1 else Constraint(Op.IN_SET, keys)
        out.append(_Clause(name, _leaves(c), path))
    return out + matchers


def _leaves(c: Constraint) -> Constraint:
    """A pattern tests the leaves of a field: the value, or each element of an array
    ("Arrays in Amazon EventBridge event patterns")."""
    return Constraint(Op.ANY, c)


# --------------------------------------------------------------------------------------
# matchers


def _matcher(m: Mapping[str, Any], path: str) -> Constraint:
    if len(m) != 1:
        raise _err(
            f"a matcher object has exactly one key (one of {', '.join(_MATCHERS)}), found {len(m)}",
            path,
        )
    ((key, v),) = m.items()
    if not isinstance(key, str):
        raise _err(
            f"a matcher's key is a string (one of {', '.join(_MATCHERS)}), not {_json_type(key)}",
            path,
        )
    kpath = path + _seg(key)
    if key == "exactly":
        return Constraint(Op.EQ, _string(v, key, kpath))
    if key in ("prefix", "suffix"):
        if isinstance(v, Mapping):
            return _caseless_affix(key, v, kpath)
        return Constraint(Op.PREFIX if key == "prefix" else Op.SUFFIX, _string(v, key, kpath))
    if key == "equals-ignore-case":
        return Constraint(Op.EQ_IGNORE_CASE, _string(v, key, kpath))
    if key == "anything-but":
        return _anything_but(v, kpath)
    if key == "numeric":
        return _numeric(v, kpath)
    if key == "exists":
        if not isinstance(v, bool):
            raise _err(f"exists takes true or false, not {_show(v)}", kpath)
        return Constraint(Op.EXISTS if v else Op.NOT_EXISTS)
    if key in ("wildcard", "shellstyle"):
        return _wildcard(_string(v, key, kpath), kpath, escapes=key == "wildcard")
    if key == "cidr":
        return Constraint(Op.CIDR, _network(v, kpath))
    if key == "regexp":
        src = _string(v, key, kpath)
        check_regexp(src, kpath)
        return Constraint(Op.REGEXP, src)
    raise _err(f"unknown matcher {_show(key)} (known: {', '.join(_MATCHERS)})", kpath)


def _caseless_affix(key: str, v: Mapping[str, Any], path: str) -> Constraint:
    """``{"prefix": {"equals-ignore-case": s}}`` and the suffix form (EventBridge, "Prefix
    matching while ignoring case")."""
    if len(v) != 1 or "equals-ignore-case" not in v:
        raise _err(f'{key} takes a string or {{"equals-ignore-case": s}}', path)
    s = _string(v["equals-ignore-case"], f"{key} equals-ignore-case", path + ".equals-ignore-case")
    return Constraint(Op.PREFIX_IGNORE_CASE if key == "prefix" else Op.SUFFIX_IGNORE_CASE, s)


_EXCLUDERS = ("prefix", "suffix", "equals-ignore-case", "wildcard")


def _anything_but(v: Any, path: str) -> Constraint:
    """``anything-but`` of values, or of prefix / suffix / equals-ignore-case / wildcard
    (each a string or a list of strings; event-ruler README, "Anything-but matching"): a
    present scalar of any kind that none of them accepts (so ``null`` and numbers are
    "anything but" a string, strings anything but a number, as event-ruler answers)."""
    if isinstance(v, Mapping):
        if len(v) != 1:
            raise _err(
                "anything-but takes a value, a list of values, or one of "
                + ", ".join(f'{{"{k}": ...}}' for k in _EXCLUDERS),
                path,
            )
        ((k, s),) = v.items()
        if not isinstance(k, str) or k not in _EXCLUDERS:
            raise _err(
                f"unsupported anything-but matcher {_show(k)} (use {', '.join(_EXCLUDERS)})",
                path,
            )
        kpath = path + _seg(k)
        items = s if isinstance(s, (list, tuple)) else [s]
        if not items:
            raise _err(f"anything-but {k} needs at least one string", kpath)
        out = []
        for i, x in enumerate(items):
            ipath = f"{kpath}[{i}]" if isinstance(s, (list, tuple)) else kpath
            x = _string(x, f"anything-but {k}", ipath)
            if k in ("prefix", "suffix") and not x:
                raise _err(f"anything-but {k} must not be empty", ipath)
            if k == "prefix":
                out.append(Constraint(Op.PREFIX, x))
            elif k == "suffix":
                out.append(Constraint(Op.SUFFIX, x))
            elif k == "equals-ignore-case":
                out.append(Constraint(Op.EQ_IGNORE_CASE, x))
            else:
                out.append(_wildcard(x, ipath, escapes=True))
        return Constraint(Op.ANYTHING_BUT, frozenset(out))
    if isinstance(v, (list, tuple)):
        if not v:
            raise _err("anything-but needs at least one value", path)
        vals = [_excluded(x, f"{path}[{i}]") for i, x in enumerate(v)]
        if len({isinstance(x, str) for x in vals}) > 1:
            raise _err("the values of anything-but are all strings or all numbers, not mixed", path)
        keys = frozenset(skey(x) for x in vals)
        one = Constraint(Op.EQ, vals[0]) if len(keys) == 1 else Constraint(Op.IN_SET, keys)
        return Constraint(Op.ANYTHING_BUT, frozenset([one]))
    return Constraint(Op.ANYTHING_BUT, frozenset([Constraint(Op.EQ, _excluded(v, path))]))


def _excluded(x: Any, path: str) -> str | int | float:
    if isinstance(x, str) or _is_number(x):
        return _scalar(x, path)
    raise _err(f"anything-but excludes strings or numbers, not {_show(x)}", path)


_CMP = {"=": Op.EQ, "<": Op.LT, "<=": Op.LE, ">": Op.GT, ">=": Op.GE}


def _numeric(v: Any, path: str) -> Constraint:
    """``[op, number, op, number, ...]``: every comparison holds (EventBridge "Numeric
    matching"; one ``"="``, or bounds in any order)."""
    if not isinstance(v, (list, tuple)) or not v or len(v) % 2:
        raise _err('numeric takes [op, number] pairs, e.g. [">", 0, "<=", 5]', path)
    conj = Conjunction(False)
    for i in range(0, len(v), 2):
        op = v[i]
        if not isinstance(op, str) or op not in _CMP:
            raise _err(
                f"unknown numeric operator {_show(op)} (use =, <, <=, >, >=)", f"{path}[{i}]"
            )
        c = Constraint(_CMP[op], _number(v[i + 1], f"{path}[{i + 1}]"))
        try:
            conj.add(c)
        except Unsatisfiable:
            raise _err(
                "the comparisons of numeric exclude each other: no number satisfies them all",
                f"{path}[{i}]",
            ) from None
    return conj.value


def _wildcard(s: str, path: str, escapes: bool) -> Constraint:
    """event-ruler wildcards (``*`` any run of characters, ``\\*`` and ``\\\\`` escapes)
    and quamina's shell-style patterns (no escapes): no star is ``=``, a trailing star
    ``prefix``, a leading one ``suffix``, both ``substring``, others ``wildcard``."""
    try:
        parts = wildcard_parts(s, escapes)
    except RegexpError as e:
        raise _err(f"{e.message} (at character {e.pos})", path) from None
    return glob_constraint(parts)


def _network(v: Any, path: str) -> Any:
    return load_network(_string(v, "cidr", path), path)


# --------------------------------------------------------------------------------------
# values, paths, JSON text


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _scalar(v: Any, path: str) -> Any:
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, str):
        return _checked_string(v, path)
    if isinstance(v, int):
        if limits.int_too_large(v):
            raise _err(limits.int_message(), path)
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise _err(f"numbers in patterns are finite, not {v!r}", path)
        return v
    raise _err(
        f"a pattern value is a string, number, true, false or null, not {_json_type(v)}", path
    )


def _number(v: Any, path: str) -> int | float:
    if not _is_number(v):
        raise _err(f"expected a number, found {_show(v)}", path)
    return _scalar(v, path)


def _string(v: Any, what: str, path: str) -> str:
    if not isinstance(v, str):
        raise _err(f"{what} takes a string, not {_show(v)}", path)
    return _checked_string(v, path)


def _checked_string(v: str, path: str) -> str:
    if limits.has_surrogate(v):
        raise _err(limits.surrogate_message(v), path)
    if limits.string_too_long(v):
        raise _err(limits.string_message(v), path)
    return v


def _seg(key: str) -> str:
    return f".{key}" if _PLAIN_KEY.fullmatch(key) else f"[{json.dumps(key)}]"


def _err(msg: str, path: str) -> FilterSyntaxError:
    return FilterSyntaxError(msg, None, None, path)


def _show(v: Any) -> str:
    """A short JSON rendering of ``v`` for messages."""
    return limits.show(v, lambda x: json.dumps(x, ensure_ascii=False))


def _load_json(text: str) -> Any:
    """The JSON text of a pattern, strict (:mod:`pubsift.core.strict_json`: no duplicate
    keys) and under the records model's limits."""
    try:
        return record_limits.loads(text, "pattern")
    except json.JSONDecodeError as e:
        raise FilterSyntaxError(f"malformed JSON: {e.msg}", limits.printable(text), e.pos) from None
    except record_limits.InputLimit as e:
        pos = e.where if isinstance(e.where, int) else None
        raise FilterSyntaxError(
            e.message, limits.printable(text) if pos is not None else None, pos
        ) from None


__all__ = ["MAX_FILTERS", "parse_pattern"]
