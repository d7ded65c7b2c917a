"""The text form of records filters written back (docs/records-syntax.md): the formatter
(``parse_text(format_filter(f)) == f`` for every canonical filter, see
:mod:`~pubsift.models.records.syntax`) and the messages that quote a clause, used by the
text parser and by :mod:`~pubsift.models.records.eventbridge` alike. It imports neither,
so the pattern parser and the text parser (which hands JSON patterns to it) need not
import each other."""

from __future__ import annotations

import math
import re

from pubsift.models.constraints import (
    MAX_CELLS,
    Constraint,
    Interval,
    Op,
    Scalar,
    TypeSet,
    quote,
    sort_key,
    wildcard_text,
)
from pubsift.models.records.filters import RecordFilter

#: an attribute name written bare (also what the tokenizer reads as a word)
_WORD = r"(?:[^\W\d]|\$)[\w$-]*(?:\.[\w$-]+)*"
_WORD_RE = re.compile(_WORD)
#: the comparison operators by their text
_CMP = {"=": Op.EQ, "!=": Op.NE, "<": Op.LT, "<=": Op.LE, ">": Op.GT, ">=": Op.GE}


# --------------------------------------------------------------------------------------
# messages


def clause_text(name: str, c: Constraint) -> str:
    return f"{format_name(name)} {format_constraint(c)}"


def too_complex_message(name: str, c: Constraint) -> str:
    """The message for a clause whose string automaton exceeds ``automata.MAX_CELLS``."""
    return (
        f"{_short(clause_text(name, c))} is too complex: its string automaton would "
        f"need more than {MAX_CELLS} transitions (shorten the string)"
    )


def _short(s: str) -> str:
    return s if len(s) <= 80 else s[:60] + "..." + s[-10:]


def unsatisfiable_message(name: str, prev: Constraint | None, c: Constraint) -> str:
    """The message for a clause that leaves no value for ``name`` (also used by
    :mod:`eventbridge`)."""
    if prev is None:
        return f"{clause_text(name, c)} can never hold: no value satisfies it"
    return (
        f"this clause contradicts the earlier clauses on attribute {name!r}: no value "
        f"satisfies both {clause_text(name, prev)} and {clause_text(name, c)}"
    )


# --------------------------------------------------------------------------------------
# formatter

_KEYWORDS = frozenset({"and", "true", "false", "null", "inf"})


def format_filter(f: RecordFilter) -> str:
    """The text form of ``f``; ``parse_text(format_filter(f))`` equals ``f`` when ``f`` is
    canonical (as every parsed filter is). The empty filter is ``true``."""
    if not f.constraints:
        return "true"
    return " and ".join(f"{format_name(n)} {format_constraint(c)}" for n, c in f.constraints)


def format_name(name: str) -> str:
    bare = _WORD_RE.fullmatch(name) and name.casefold() not in _KEYWORDS
    return name if bare else quote(name)


def format_constraint(c: Constraint) -> str:
    """The predicate part of a clause, e.g. ``in [3, 5)``."""
    op, x = c.op, c.operand
    if op is Op.EXISTS:
        return "exists"
    if op is Op.NOT_EXISTS:
        return "not exists"
    if op is Op.INSTANCEOF:
        return f"instanceof {_format_type(x)}"
    if op in _CMP_TEXT:
        return f"{_CMP_TEXT[op]} {format_literal(x)}"
    if op in (Op.IN_RANGE, Op.NOT_IN_RANGE):
        return f"{'not in' if op is Op.NOT_IN_RANGE else 'in'} {_format_interval(x)}"
    if op in (Op.IN_SET, Op.NOT_IN_SET):
        return f"{'not in' if op is Op.NOT_IN_SET else 'in'} {_format_set(x)}"
    if op in _STRING_TEXT:
        return f"{_STRING_TEXT[op]} {quote(x)}"
    if op in _MULTI_TEXT:
        return f"{_MULTI_TEXT[op]} {_format_set(x)}"
    if op in (Op.CONTAINS, Op.NOT_CONTAINS):
        return f"{'not contains' if op is Op.NOT_CONTAINS else 'contains'} {format_literal(x[1])}"
    if op is Op.ANY:
        return f"any {format_constraint(x)}"
    if op is Op.WILDCARD:  # (an empty part between two stars says nothing: left out)
        return f"wildcard {quote(wildcard_text((x[0], *(p for p in x[1:-1] if p), x[-1])))}"
    if op is Op.REGEXP:
        return f"regexp {quote(x)}"
    if op is Op.CIDR:
        return f"cidr {quote(str(x))}"
    if op is Op.ANYTHING_BUT or op is Op.ALL:
        return f"{op.value} ({', '.join(sorted(format_constraint(c) for c in x))})"
    raise ValueError(f"no text form for operator {op!r}")


_CMP_TEXT = {v: k for k, v in _CMP.items()}
_STRING_TEXT = {
    Op.PREFIX: "prefix",
    Op.NOT_PREFIX: "not prefix",
    Op.SUFFIX: "suffix",
    Op.NOT_SUFFIX: "not suffix",
    Op.SUBSTRING: "substring",
    Op.EQ_IGNORE_CASE: "equals-ignore-case",
    Op.PREFIX_IGNORE_CASE: "prefix-ignore-case",
    Op.SUFFIX_IGNORE_CASE: "suffix-ignore-case",
}
_MULTI_TEXT = {
    Op.SUBSET: "subset",
    Op.SUPERSET: "superset",
    Op.DISJOINT: "disjoint",
    Op.OVERLAPS: "overlaps",
}


def _format_type(t: TypeSet) -> str:
    return t.name if _WORD_RE.fullmatch(t.name) else quote(t.name)


def _format_interval(i: Interval) -> str:
    lo = format_literal(i.lo)
    hi = "inf" if i.hi is None else format_literal(i.hi)
    return f"{'[' if i.lo_closed else '('}{lo}, {hi}{']' if i.hi_closed else ')'}"


def _format_set(s: frozenset) -> str:
    vals = sorted((v for _, v in s), key=sort_key)
    return "{" + ", ".join(format_literal(v) for v in vals) + "}"


def format_literal(v: Scalar) -> str:
    """A literal that the parser reads back as exactly ``v`` (kind, sign and float bits)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            raise ValueError("NaN has no text form (it never matches anything)")
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return quote(v)
    raise TypeError(f"not a records scalar: {v!r}")


__all__ = [
    "clause_text",
    "format_constraint",
    "format_filter",
    "format_literal",
    "format_name",
    "too_complex_message",
    "unsatisfiable_message",
]
