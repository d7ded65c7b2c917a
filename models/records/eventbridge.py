"""EventBridge / aws event-ruler JSON patterns as records filters.

A pattern is a JSON object whose nested objects address dotted attribute names
(``{"detail": {"state": [...]}}`` -> ``detail.state``) and whose leaf arrays list what a field
may match: literals (one -> ``=``, several -> ``in {...}``) and matcher objects. Every matcher
tests the *leaves* of the field (Amazon EventBridge user guide, "Arrays in Amazon EventBridge
event patterns"; event-ruler README, "JSON Array Matching"): the value itself, or each
element when the event holds an array there, and holds when some leaf matches. So each
becomes an "any element" constraint (:data:`Op.ANY <.constraints.Op>`, text form ``any``):

=====================================  =============================================
pattern                                records constraint
=====================================  =============================================
``"s"``, ``5``, ``true``, ``null``     ``any = v`` (several literals: ``any in {...}``)
``{"exactly": "s"}``                   ``any = "s"``
``{"prefix": "s"}``                    ``any prefix "s"``
``{"suffix": "s"}``                    ``any suffix "s"``
``{"equals-ignore-case": "s"}``        ``any equals-ignore-case "s"``
``{"anything-but": v}`` / ``[v, ..]``  ``any != v`` / ``any not in {...}`` (all strings or all
                                       numbers; an array matches when some element is
                                       not excluded, as event-ruler matches per leaf)
``{"anything-but": {"prefix": "s"}}``  ``any not prefix "s"`` (likewise ``suffix``)
``{"numeric": [">", a, "<=", b]}``     ``any in (a, b]``; one comparison: ``any > a``;
                                       ``"="``
``{"exists": true}`` / ``false``       ``any exists`` (a scalar or a non-empty array) /
                                       ``any not exists`` (absent, or ``[]``: no leaf)
``{"wildcard": "s*"}``                 ``any prefix``; ``"*s"`` suffix; ``"*s*"``
                                       substring; no ``*``: ``any =``
=====================================  =============================================

Disjunctions become several conjunctive filters (Mühl 2002, §4.3.2: a compound filter is a
set of conjunctive filters interpreted disjunctively): ``"$or": [{...}, {...}]`` (at least
two objects, as in event-ruler), and a leaf array mixing several matchers
(``["a", {"prefix": "b"}]`` is ``any = "a"`` or ``any prefix "b"``). :func:`parse_pattern`
returns the list; a branch that can match nothing is dropped. Several patterns on one
attribute in one branch are combined with :func:`relations.conjoin` (``any = 1`` and
``any = 2``: an array holding both, ``superset {1, 2}``).

Rejected with a :class:`FilterSyntaxError` naming the JSON path: ``cidr`` (no IP-address
type), ``wildcard`` with a ``*`` inside the value, case-insensitive prefix/suffix and
``anything-but`` + ``equals-ignore-case`` (no such operators), empty objects/arrays, ``$or``
used as a plain field name (event-ruler's legacy reading), unknown matchers, patterns that
expand into more than :data:`MAX_FILTERS` conjunctive filters, a field addressed twice in one
object (a dotted name and a nested object, in either order), and input beyond the limits
of :mod:`.limits` and :mod:`pubsift.models.constraints.limits` (nesting, integer digits,
non-finite numbers, lone surrogates).

Semantic differences to event-ruler (documented in docs/records-syntax.md):

* **Arrays of objects** in events (``{"a": [{"b": 1}, {"b": 2}]}``, which event-ruler
  flattens into the leaves ``a.b`` = 1, 2 with array-consistent matching across fields) are
  not records events: :class:`~.values.Record` refuses them with an ``EventError``.
* **Kinds.** ``anything-but`` here excludes values among values of the same kind (strings or
  numbers); event-ruler compares JSON text, so a string exclusion also accepts numbers.
* **Numbers** compare exactly here; event-ruler's ``numeric`` works in -5e9..5e9 with six
  decimal places.
* **Repeated attributes.** When ``$or`` branches and the enclosing object constrain the same
  field, event-ruler keeps only the last pattern; here both must hold (conjunction), as one
  attribute filter: two element tests that no single constraint expresses (``any > 1`` and
  ``any < 5``: some element above 1, some perhaps other element below 5) are refused with
  the JSON path of the second pattern.
* **IP addresses** in literals are compared as strings (event-ruler also matches other
  spellings of the same address).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from pubsift.core.errors import FilterSyntaxError
from pubsift.models.constraints import limits
from pubsift.models.constraints.constraints import Constraint, Interval, Op
from pubsift.models.constraints.multivalues import TooComplex
from pubsift.models.constraints.relations import Conjunction, NotRepresentable, Unsatisfiable
from pubsift.models.constraints.values import skey
from pubsift.models.constraints.wire import json_type as _json_type
from pubsift.models.records import limits as record_limits
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.syntax import clause_text, too_complex_message, unsatisfiable_message
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
    "cidr",
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
    acc: dict[str, Conjunction] = {}
    for name, c, path in branch:
        conj = acc.get(name)
        if conj is None:
            conj = acc[name] = Conjunction(schema.is_integer(name))
        try:
            conj.add(c)
        except Unsatisfiable:
            prev = conj.value if conj else None
            raise _DeadBranch(unsatisfiable_message(name, prev, c), path) from None
        except TooComplex:
            raise _err(too_complex_message(name, c), path) from None
        except NotRepresentable:
            raise FilterSyntaxError(
                f"the patterns on attribute {name!r} cannot be combined into one attribute "
                f"filter ({clause_text(name, conj.value)} and {clause_text(name, c)})",
                None,
                None,
                path,
            ) from None
    return RecordFilter.of({n: k.value for n, k in acc.items()})


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
        if isinstance(v, Mapping) and "equals-ignore-case" in v:
            raise _err(
                f"a case-insensitive {key} cannot be represented: the records model "
                f"has {key} and equals-ignore-case, but not both at once",
                kpath,
            )
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
    if key == "wildcard":
        return _wildcard(_string(v, key, kpath), kpath)
    if key == "cidr":
        raise _err(
            "cidr (IP address ranges) cannot be represented: the records model "
            "has no IP-address type",
            kpath,
        )
    raise _err(f"unknown matcher {_show(key)} (known: {', '.join(_MATCHERS)})", kpath)


def _anything_but(v: Any, path: str) -> Constraint:
    if isinstance(v, Mapping):
        if len(v) != 1:
            raise _err('anything-but takes one of {"prefix": s} or {"suffix": s}', path)
        ((k, s),) = v.items()
        if not isinstance(k, str):
            raise _err(
                f'anything-but takes {{"prefix": s}} or {{"suffix": s}}, not a '
                f"key that is {_json_type(k)}",
                path,
            )
        kpath = path + _seg(k)
        if k in ("prefix", "suffix"):
            s = _string(s, f"anything-but {k}", kpath)
            if not s:
                raise _err(f"anything-but {k} must not be empty", kpath)
            return Constraint(Op.NOT_PREFIX if k == "prefix" else Op.NOT_SUFFIX, s)
        if k in ("equals-ignore-case", "wildcard"):
            raise _err(
                f"anything-but {k} cannot be represented: the records model has no "
                f"negated {k} operator",
                kpath,
            )
        raise _err(f"unsupported anything-but matcher {_show(k)} (use prefix or suffix)", kpath)
    if isinstance(v, (list, tuple)):
        if not v:
            raise _err("anything-but needs at least one value", path)
        vals = [_excluded(x, f"{path}[{i}]") for i, x in enumerate(v)]
        if len({isinstance(x, str) for x in vals}) > 1:
            raise _err("the values of anything-but are all strings or all numbers, not mixed", path)
        return Constraint(Op.NOT_IN_SET, frozenset(skey(x) for x in vals))
    return Constraint(Op.NE, _excluded(v, path))


def _excluded(x: Any, path: str) -> str | int | float:
    if isinstance(x, str) or _is_number(x):
        return _scalar(x, path)
    raise _err(f"anything-but excludes strings or numbers, not {_show(x)}", path)


_CMP = {"=": Op.EQ, "<": Op.LT, "<=": Op.LE, ">": Op.GT, ">=": Op.GE}


def _numeric(v: Any, path: str) -> Constraint:
    if not isinstance(v, (list, tuple)) or len(v) not in (2, 4):
        raise _err('numeric takes [op, number] or [">"|">=", low, "<"|"<=", high]', path)
    op = v[0]
    if not isinstance(op, str) or op not in _CMP:
        raise _err(f"unknown numeric operator {_show(op)} (use =, <, <=, >, >=)", f"{path}[0]")
    a = _number(v[1], f"{path}[1]")
    if len(v) == 2:
        return Constraint(_CMP[op], a)
    if op not in (">", ">="):
        raise _err(f"a numeric range starts with > or >=, not {op}", f"{path}[0]")
    op2 = v[2]
    if not isinstance(op2, str) or op2 not in ("<", "<="):
        raise _err(f"the upper end of a numeric range is < or <=, not {_show(op2)}", f"{path}[2]")
    b = _number(v[3], f"{path}[3]")
    return Constraint(Op.IN_RANGE, Interval(a, b, op == ">=", op2 == "<="))


def _wildcard(s: str, path: str) -> Constraint:
    """event-ruler wildcards: ``*`` matches any run of characters; ``\\*`` and ``\\\\`` are
    escapes. Representable: no star (=), a trailing star (prefix), a leading star (suffix),
    both (substring)."""
    parts: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            if i + 1 < len(s) and s[i + 1] in "*\\":
                cur.append(s[i + 1])
                i += 2
                continue
            raise _err("in a wildcard, a backslash escapes only '*' or '\\'", path)
        if c == "*":
            if i + 1 < len(s) and s[i + 1] == "*":
                raise _err("consecutive '*' are not allowed in a wildcard", path)
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    if len(parts) == 1:
        return Constraint(Op.EQ, parts[0])
    if len(parts) == 2 and parts[1] == "":
        return Constraint(Op.PREFIX, parts[0])
    if len(parts) == 2 and parts[0] == "":
        return Constraint(Op.SUFFIX, parts[1])
    if len(parts) == 3 and parts[0] == parts[2] == "":
        return Constraint(Op.SUBSTRING, parts[1])
    raise _err(
        f"wildcard {_show(s)} cannot be represented: only a leading and/or trailing '*' "
        "map onto prefix, suffix and substring",
        path,
    )


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
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        d: dict[str, Any] = {}
        for k, v in items:
            if k in d:
                raise FilterSyntaxError(f"duplicate key {k!r} in a JSON object of the pattern")
            d[k] = v
        return d

    try:
        return record_limits.loads(text, pairs)
    except json.JSONDecodeError as e:
        raise FilterSyntaxError(f"malformed JSON: {e.msg}", limits.printable(text), e.pos) from None
    except record_limits.InputLimit as e:
        pos = e.where if isinstance(e.where, int) else None
        raise FilterSyntaxError(
            e.message, limits.printable(text) if pos is not None else None, pos
        ) from None


__all__ = ["MAX_FILTERS", "parse_pattern"]
