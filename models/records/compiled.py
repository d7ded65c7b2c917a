"""Compiled attribute tests: one constraint as a small closure ``test(v) -> bool``.

:meth:`Constraint.matches` is the reference semantics (Mühl 2002, §4.3.3); it dispatches on
the operator for every call. The index verifies candidate filters millions of times, so the
common operators are compiled once into closures that give exactly the same answer for every
value (``ABSENT``, other kinds and multi values included: the kind checks come first, as in
``constraints``). Operators without a specialised form fall back to ``Constraint.matches``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pubsift.models.constraints import NUM, STR, Constraint, Interval, Op, glob_test

Test = Callable[[Any], bool]


def _is_num(v: Any) -> bool:
    c = v.__class__
    return c is int or c is float or (c is not bool and isinstance(v, (int, float)))


def _cmp_num(op: Op, x: Any) -> Test:
    if op is Op.LT:
        return lambda v: _is_num(v) and v < x
    if op is Op.LE:
        return lambda v: _is_num(v) and v <= x
    if op is Op.GT:
        return lambda v: _is_num(v) and v > x
    return lambda v: _is_num(v) and v >= x


def _cmp_str(op: Op, x: str) -> Test:
    if op is Op.LT:
        return lambda v: isinstance(v, str) and v < x
    if op is Op.LE:
        return lambda v: isinstance(v, str) and v <= x
    if op is Op.GT:
        return lambda v: isinstance(v, str) and v > x
    return lambda v: isinstance(v, str) and v >= x


def _range(i: Interval) -> Test:
    lo, hi = i.lo, i.hi
    if i.kind == STR:
        return lambda v: isinstance(v, str) and i.contains(v)
    if i.lo_closed and i.hi_closed:
        return lambda v: _is_num(v) and lo <= v <= hi
    if i.lo_closed:
        return lambda v: _is_num(v) and lo <= v < hi
    if i.hi_closed:
        return lambda v: _is_num(v) and lo < v <= hi
    return lambda v: _is_num(v) and lo < v < hi


def _in_set(c: Constraint) -> Test:
    strs = frozenset(x for k, x in c.operand if k == STR)
    nums = frozenset(x for k, x in c.operand if k == NUM)
    slow = c.matches

    def test(v: Any) -> bool:
        t = v.__class__
        if t is str:
            return v in strs
        if t is int or t is float:
            return v in nums
        return slow(v)

    return test


def _anything_but(c: Constraint) -> Test:
    """EventBridge ``anything-but``: a scalar of any kind that no member accepts; strings
    and numbers excluded by value are tested by hashing."""
    strs: set[Any] = set()
    nums: set[Any] = set()
    others: list[Constraint] = []
    for e in c.operand:
        if e.op is Op.EQ and e.operand.__class__ in (str, int, float):
            (strs if e.operand.__class__ is str else nums).add(e.operand)
        elif e.op is Op.IN_SET and all(k in (STR, NUM) for k, _ in e.operand):
            for k, x in e.operand:
                (strs if k == STR else nums).add(x)
        else:
            others.append(e)
    tests = tuple(compile_test(e) for e in others)
    slow = c.matches

    def test(v: Any) -> bool:
        t = v.__class__
        if t is str:
            if v in strs:
                return False
        elif t is int or t is float:
            if v in nums:
                return False
        elif t is not bool and v is not None:
            return slow(v)  # lists, ABSENT: not a scalar
        for f in tests:
            if f(v):
                return False
        return True

    specs = [_string_spec(e) for e in others]
    if all(x is not None for x in specs):  # the compiled walk runs it (_walk.But)
        test.spec = ("but", frozenset(strs), frozenset(nums), tuple(specs))  # type: ignore[attr-defined]
    return test


#: The string tests an anything-but's compiled form runs itself (``_walk.But``): each
#: accepts strings only, as its closure in :func:`compile_test` does.
PREFIX, SUFFIX, EQ_FOLDED, PREFIX_FOLDED, SUFFIX_FOLDED, GLOB = range(6)


def _string_spec(c: Constraint) -> tuple | None:
    """(kind, operand) of a string test the compiled walk runs (casefolded operands for
    the ignore-case ones, a wildcard's parts), or None."""
    op, x = c.op, c.operand
    if op is Op.PREFIX and x.__class__ is str:
        return (PREFIX, x)
    if op is Op.SUFFIX and x.__class__ is str:
        return (SUFFIX, x)
    if op is Op.EQ_IGNORE_CASE and x.__class__ is str:
        return (EQ_FOLDED, x.casefold())
    if op is Op.PREFIX_IGNORE_CASE and x.__class__ is str:
        return (PREFIX_FOLDED, x.casefold())
    if op is Op.SUFFIX_IGNORE_CASE and x.__class__ is str:
        return (SUFFIX_FOLDED, x.casefold())
    if (
        op is Op.WILDCARD
        and x.__class__ is tuple
        and len(x) >= 2
        and all(p.__class__ is str for p in x)
    ):
        return (GLOB, x)
    return None


def compile_test(c: Constraint) -> Test:
    """A closure equal to ``c.matches`` on every value, faster for the common operators."""
    op, x = c.op, c.operand
    if op is Op.EQ:
        if isinstance(x, str):
            return lambda v: v == x and isinstance(v, str)
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return lambda v: v == x and _is_num(v)
    elif op in (Op.LT, Op.LE, Op.GT, Op.GE):
        if isinstance(x, str):
            return _cmp_str(op, x)
        return _cmp_num(op, x)
    elif op is Op.IN_RANGE:
        return _range(x)
    elif op is Op.IN_SET:
        return _in_set(c)
    elif op is Op.PREFIX:
        return lambda v: isinstance(v, str) and v.startswith(x)
    elif op is Op.SUFFIX:
        return lambda v: isinstance(v, str) and v.endswith(x)
    elif op is Op.PREFIX_IGNORE_CASE:
        folded = x.casefold()
        return lambda v: isinstance(v, str) and v.casefold().startswith(folded)
    elif op is Op.SUFFIX_IGNORE_CASE:
        folded = x.casefold()
        return lambda v: isinstance(v, str) and v.casefold().endswith(folded)
    elif op is Op.EQ_IGNORE_CASE:
        folded = x.casefold()
        return lambda v: isinstance(v, str) and v.casefold() == folded
    elif op is Op.WILDCARD:
        g = glob_test(x)
        return lambda v: isinstance(v, str) and g(v)
    elif op is Op.ANYTHING_BUT:
        return _anything_but(c)
    return c.matches
