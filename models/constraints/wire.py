"""JSON-safe wire forms of constraints (the FilterModel contract: round-trip exact), shared by the
models that use the constraint algebra (records filters, xml value predicates, concepts
clauses).

A constraint is a JSON object with ``"op"`` (the :class:`~.constraints.Op` value) and its
operand::

    {"op": "in-range", "lo": 10, "hi": {"float": "inf"}, "lo_closed": false, "hi_closed": true}
    {"op": "in", "values": ["IBM", "MSFT"]}
    {"op": "instanceof", "type": "Quote", "members": ["Quote", "StockQuote"]}

======================  ===========================================================
op                      operand members
======================  ===========================================================
exists, not-exists      (none)
instanceof              ``type``: name, ``members``: sorted list of names
= != < <= > >=          ``value``: scalar
contains, not-contains  ``value``: scalar
in-range, not-in-range  ``lo``, ``hi`` (``null`` = unbounded above, strings only),
                        ``lo_closed``, ``hi_closed``
in, not-in, subset,     ``values``: list of scalars in a deterministic order
superset, disjoint,
overlaps
prefix, not-prefix,     ``value``: string
suffix, not-suffix,
substring,
equals-ignore-case
any                     ``of``: the inner constraint (a scalar one, ``exists`` or
                        ``not-exists``), e.g. ``{"op": "any", "of": {"op": "=",
                        "value": "admin"}}``
prefix-ignore-case,     ``value``: string (regexp: an I-Regexp, RFC 9485; cidr: a
suffix-ignore-case,     network such as ``"10.0.0.0/24"`` or ``"2001:db8::/32"``)
regexp, cidr
wildcard                ``parts``: the literal strings between the ``*`` (at least
                        two), e.g. ``{"op": "wildcard", "parts": ["VA", "IL"]}``
anything-but, all       ``of``: a list of constraints (anything-but: the excluded
                        positive tests; all: at least two), in a deterministic order
======================  ===========================================================

Scalars keep their kind exactly: ``true`` is not ``1``, ``1.0`` stays a float and ``-0.0``
keeps its sign (Python's ``json`` writes floats with ``repr``); the infinities, which JSON
lacks, are ``{"float": "inf"}`` / ``{"float": "-inf"}``. The wire form is not normalized:
``load_constraint(dump_constraint(c)) == c`` for every constraint, canonical or not.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from pubsift.core.errors import FilterSyntaxError
from pubsift.models.constraints import limits
from pubsift.models.constraints.constraints import (
    ELEMENT_OPS,
    EXCLUDABLE_OPS,
    Constraint,
    Interval,
    Op,
    TypeSet,
)
from pubsift.models.constraints.regular import RegexpError, iregexp_matcher
from pubsift.models.constraints.values import skey, sort_key

JSON = Any

_NONE = frozenset({Op.EXISTS, Op.NOT_EXISTS})
_VALUE = frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE})
_ELEMENT = frozenset({Op.CONTAINS, Op.NOT_CONTAINS})
_RANGE = frozenset({Op.IN_RANGE, Op.NOT_IN_RANGE})
_SETS = frozenset({Op.IN_SET, Op.NOT_IN_SET, Op.SUBSET, Op.SUPERSET, Op.DISJOINT, Op.OVERLAPS})
_STRINGS = frozenset(
    {
        Op.PREFIX,
        Op.NOT_PREFIX,
        Op.SUFFIX,
        Op.NOT_SUFFIX,
        Op.SUBSTRING,
        Op.EQ_IGNORE_CASE,
        Op.PREFIX_IGNORE_CASE,
        Op.SUFFIX_IGNORE_CASE,
        Op.REGEXP,
    }
)
_GROUPS = frozenset({Op.ANYTHING_BUT, Op.ALL})
_OPS = {o.value: o for o in Op}
_MEMBERS = {
    **dict.fromkeys(_NONE, ("op",)),
    Op.INSTANCEOF: ("op", "type", "members"),
    **dict.fromkeys(_VALUE | _ELEMENT | _STRINGS, ("op", "value")),
    **dict.fromkeys(_RANGE, ("op", "lo", "hi", "lo_closed", "hi_closed")),
    **dict.fromkeys(_SETS, ("op", "values")),
    Op.ANY: ("op", "of"),
    Op.CIDR: ("op", "value"),
    Op.WILDCARD: ("op", "parts"),
    Op.ANYTHING_BUT: ("op", "of"),
    Op.ALL: ("op", "of"),
}


def dump_constraint(c: Constraint) -> JSON:
    op, x = c.op, c.operand
    out: dict[str, Any] = {"op": op.value}
    if op is Op.INSTANCEOF:
        out["type"] = x.name
        out["members"] = sorted(x.members)
    elif op in _VALUE or op in _STRINGS:
        out["value"] = _dump_scalar(x)
    elif op in _ELEMENT:
        out["value"] = _dump_scalar(x[1])
    elif op in _RANGE:
        out.update(
            lo=_dump_scalar(x.lo),
            hi=None if x.hi is None else _dump_scalar(x.hi),
            lo_closed=x.lo_closed,
            hi_closed=x.hi_closed,
        )
    elif op in _SETS:
        out["values"] = [_dump_scalar(v) for v in sorted((v for _, v in x), key=sort_key)]
    elif op is Op.ANY:
        out["of"] = dump_constraint(x)
    elif op is Op.CIDR:
        out["value"] = str(x)
    elif op is Op.WILDCARD:
        out["parts"] = list(x)
    elif op in _GROUPS:
        parts = [dump_constraint(c) for c in x]
        out["of"] = sorted(parts, key=lambda d: json.dumps(d, sort_keys=True))
    return out


def _dump_scalar(v: Any) -> JSON:
    if isinstance(v, float) and not math.isfinite(v):
        if math.isnan(v):
            raise ValueError("NaN has no wire form (it never matches anything)")
        return {"float": "inf" if v > 0 else "-inf"}
    return v


def load_constraint(obj: JSON, path: str = "$") -> Constraint:
    if not isinstance(obj, Mapping):
        raise _ferr(f'a constraint is a JSON object with "op", not {json_type(obj)}', path)
    op = obj.get("op")
    if not isinstance(op, str) or op not in _OPS:
        known = ", ".join(o.value for o in Op)
        raise _ferr(f"unknown op {_show(op)} (known: {known})", path + ".op")
    op = _OPS[op]
    expected = _MEMBERS[op]
    extra = sorted(set(obj) - set(expected), key=str)
    if extra:
        raise _ferr(
            f"unexpected member {_show(extra[0])} for op {op.value!r} (members: "
            f"{', '.join(expected)})",
            path,
        )
    missing = [m for m in expected if m not in obj]
    if missing:
        raise _ferr(f"op {op.value!r} needs member {missing[0]!r}", path)
    if op in _NONE:
        return Constraint(op)
    if op is Op.ANY:
        inner = obj["of"]
        if isinstance(inner, Mapping) and inner.get("op") == Op.ANY.value:
            raise _ferr(
                '"any" applies to a scalar constraint, not to another "any"', path + ".of.op"
            )
        c = load_constraint(inner, path + ".of")
        if c.op not in ELEMENT_OPS:
            raise _ferr(
                f'"any" applies to a scalar constraint, exists or not-exists, not '
                f"to {c.op.value!r}",
                path + ".of.op",
            )
        return Constraint(op, c)
    if op is Op.INSTANCEOF:
        name = load_string(obj["type"], path + ".type")
        members = obj["members"]
        if not isinstance(members, list):
            raise _ferr("members is a list of type names", path + ".members")
        ms = frozenset(load_string(m, f"{path}.members[{i}]") for i, m in enumerate(members))
        if name not in ms:
            raise _ferr(
                f"the members of instanceof {name!r} include the type itself", path + ".members"
            )
        return Constraint(op, TypeSet(name, ms))
    if op in _STRINGS:
        v = load_string(obj["value"], path + ".value")
        if op is Op.REGEXP:
            check_regexp(v, path + ".value")
        return Constraint(op, v)
    if op is Op.CIDR:
        return Constraint(op, load_network(obj["value"], path + ".value"))
    if op is Op.WILDCARD:
        parts = obj["parts"]
        if not isinstance(parts, list) or len(parts) < 2:
            raise _ferr("parts is a list of at least two strings", path + ".parts")
        return Constraint(
            op, tuple(load_string(x, f"{path}.parts[{i}]") for i, x in enumerate(parts))
        )
    if op in _GROUPS:
        return Constraint(op, _load_group(op, obj["of"], path + ".of"))
    if op in _VALUE:
        v = _load_scalar(obj["value"], path + ".value")
        if op not in (Op.EQ, Op.NE) and (isinstance(v, bool) or v is None):
            raise _ferr(f"{op.value} compares numbers or strings, not {v!r}", path + ".value")
        return Constraint(op, v)
    if op in _ELEMENT:
        return Constraint(op, skey(_load_scalar(obj["value"], path + ".value")))
    if op in _RANGE:
        return Constraint(op, _load_interval(obj, path))
    vals = obj["values"]
    if not isinstance(vals, list):
        raise _ferr("values is a list of scalars", path + ".values")
    s = frozenset(skey(_load_scalar(v, f"{path}.values[{i}]")) for i, v in enumerate(vals))
    if not s and op in (Op.IN_SET, Op.NOT_IN_SET):
        raise _ferr(f"the set of {op.value!r} must not be empty", path + ".values")
    return Constraint(op, s)


def _load_group(op: Op, items: Any, path: str) -> frozenset[Constraint]:
    least = 1 if op is Op.ANYTHING_BUT else 2
    if not isinstance(items, list) or len(items) < least:
        raise _ferr(f"of is a list of at least {least} constraint(s)", path)
    out = []
    for i, item in enumerate(items):
        c = load_constraint(item, f"{path}[{i}]")
        if op is Op.ANYTHING_BUT and c.op not in EXCLUDABLE_OPS:
            raise _ferr(
                f"anything-but excludes with =, in, prefix, suffix, equals-ignore-case, "
                f"their ignore-case forms or wildcard, not {c.op.value!r}",
                f"{path}[{i}].op",
            )
        out.append(c)
    return frozenset(out)


def check_regexp(src: str, path: str) -> None:
    """A :class:`FilterSyntaxError` naming ``path`` unless ``src`` is an I-Regexp within
    the limits of :mod:`.regular`."""
    try:
        iregexp_matcher(src)
    except RegexpError as e:
        raise _ferr(f"regexp {_show(src)}: {e.message} (at character {e.pos})", path) from None


def load_network(v: JSON, path: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """A cidr operand: an IPv4 or IPv6 network (``"10.0.0.0/24"``; bits past the prefix
    length are cleared; an address alone is its /32 or /128)."""
    s = load_string(v, path)
    try:
        return ipaddress.ip_network(s, strict=False)
    except ValueError as e:
        raise _ferr(f"cidr takes an IPv4 or IPv6 network such as 10.0.0.0/24: {e}", path) from None


def _load_interval(obj: Mapping[Any, Any], path: str) -> Interval:
    lo = _load_scalar(obj["lo"], path + ".lo")
    hi = obj["hi"]
    hi = None if hi is None else _load_scalar(hi, path + ".hi")
    for k in ("lo_closed", "hi_closed"):
        if not isinstance(obj[k], bool):
            raise _ferr(f"{k} is true or false", f"{path}.{k}")
    if isinstance(lo, str):
        if not (hi is None or isinstance(hi, str)):
            raise _ferr("a string interval ends at a string or null (unbounded)", path + ".hi")
    elif _is_number(lo):
        if not _is_number(hi):
            raise _ferr("a numeric interval ends at a number", path + ".hi")
    else:
        raise _ferr(f"interval ends are numbers or strings, not {lo!r}", path + ".lo")
    return Interval(lo, hi, obj["lo_closed"], obj["hi_closed"])


def _load_scalar(v: JSON, path: str) -> Any:
    if isinstance(v, Mapping):
        if set(v) == {"float"} and v["float"] in ("inf", "-inf"):
            return math.inf if v["float"] == "inf" else -math.inf
        raise _ferr('a scalar object is {"float": "inf"} or {"float": "-inf"}', path)
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, str):
        return load_string(v, path)
    if isinstance(v, int):
        if limits.int_too_large(v):
            raise _ferr(limits.int_message(), path)
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise _ferr(f'{v!r} is not JSON; write {{"float": "inf"}}', path)
        return v
    raise _ferr(f"expected a string, number, boolean or null, not {json_type(v)}", path)


def load_string(v: JSON, path: str) -> str:
    """``v`` if it is a string within the algebra's limits (no lone surrogate, at most
    ``MAX_STRING`` characters), else a :class:`FilterSyntaxError` naming ``path``."""
    if not isinstance(v, str):
        raise _ferr(f"expected a string, not {json_type(v)}", path)
    if limits.has_surrogate(v):
        raise _ferr(limits.surrogate_message(v), path)
    if limits.string_too_long(v):
        raise _ferr(limits.string_message(v), path)
    return v


def _show(v: Any) -> str:
    return limits.show(v)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def json_type(v: Any) -> str:
    """How an error message names the JSON type of ``v`` ("a number", "an array", ...)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if _is_number(v):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, (list, tuple)):
        return "an array"
    if isinstance(v, Mapping):
        return "an object"
    return f"a {type(v).__name__}"


_PLAIN = re.compile(r"[A-Za-z_$][\w$-]*")


def path_step(key: Any) -> str:
    """The JSON path step of a member name in messages: ``.name`` or ``["a b"]``."""
    key = str(key)
    return f".{key}" if _PLAIN.fullmatch(key) else f"[{json.dumps(key)}]"


def _ferr(msg: str, path: str) -> FilterSyntaxError:
    return FilterSyntaxError(msg, None, None, path)


__all__ = [
    "check_regexp",
    "dump_constraint",
    "json_type",
    "load_constraint",
    "load_network",
    "load_string",
    "path_step",
]
