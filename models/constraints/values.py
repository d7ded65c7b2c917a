"""Values as the constraint algebra sees them (Mühl 2002, §4.3.1): scalars and multi values.

A value is *simple* (string, number, boolean, null) or a *multi value* (a list or tuple,
treated as a finite set by the multi-value operators).

Kinds: numbers (int and float, compared numerically; booleans are **not** numbers), strings,
booleans, null. Python's ``True == 1`` is avoided everywhere by keying scalars with
:func:`skey`, which tags each scalar with its kind.
"""

from __future__ import annotations

from typing import Any

Scalar = str | int | float | bool | None
Value = Scalar | tuple[Any, ...]  # a tuple is a multi value (list of scalars)

NUM, STR, BOOL, NULL, MULTI = "num", "str", "bool", "null", "multi"


def kind(v: Any) -> str:
    """The kind of a value: ``num``, ``str``, ``bool``, ``null`` or ``multi``."""
    if v is None:
        return NULL
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, (int, float)):
        return NUM
    if isinstance(v, str):
        return STR
    if isinstance(v, (tuple, list, frozenset, set)):
        return MULTI
    raise TypeError(f"not a records value: {v!r}")


def skey(v: Scalar) -> tuple[str, Scalar]:
    """Hash/equality key of a scalar that keeps booleans apart from numbers and makes
    ``1 == 1.0``: ``("num", 1)``, ``("bool", True)``, ``("str", "a")``, ``("null", None)``."""
    return (kind(v), v)


def sort_key(v: Scalar) -> tuple[Any, ...]:
    """A total order over scalars of all kinds, for canonical (deterministic) output."""
    k = kind(v)
    return (k, "" if v is None else v)


__all__ = ["BOOL", "MULTI", "NULL", "NUM", "STR", "Scalar", "Value", "kind", "skey", "sort_key"]
