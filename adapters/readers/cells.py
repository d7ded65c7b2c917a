"""Typing the text of a cell: the number, boolean and declared-type literals of the CSV
reader (docs/adapters.md §2, "CSV"; :mod:`pubsift.adapters.readers.tabular`'s docstring
states the rules), and :func:`parse_number`, the loose number literal a publisher side
reads amounts and quantities with (:mod:`pubsift.adapters.readers.publisher`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pubsift.models.constraints import MAX_INT_DIGITS

_NUMBER = re.compile(r"[+-]?(?:(?:0|[1-9][0-9]*)(\.[0-9]*)?|(\.[0-9]+))([eE][+-]?[0-9]+)?")
_LOOSE_NUMBER = re.compile(r"[+-]?(?:[0-9]+(\.[0-9]*)?|(\.[0-9]+))([eE][+-]?[0-9]+)?")
_LOOSE_INT = re.compile(r"[+-]?[0-9]+")
_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_DECLARED_BOOLS = {"true": True, "1": True, "false": False, "0": False}


class CellError(ValueError):
    """A cell that does not fit its declared type or is a number out of range; the
    message names the value (the reader adds the column)."""


def _float(text: str) -> float:
    v = float(text)
    if v - v != 0:  # inf (nan is never produced from our grammar)
        raise CellError(f"{_show(text)} is beyond the range of a 64-bit float")
    return v


def _int(text: str) -> int:
    digits = len(text) - (text[0] in "+-")
    if digits > MAX_INT_DIGITS:
        raise CellError(
            f"an integer of {digits} digits is beyond the records model's {MAX_INT_DIGITS}"
        )
    return int(text)


def _show(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:40] + "…" + text[-10:])


def infer(cell: str) -> Any:
    """A non-empty cell typed from its literal (see the module's docstring)."""
    m = _NUMBER.fullmatch(cell)
    if m is None:
        return _BOOLS.get(cell, cell)
    if m.lastindex is None:  # no fraction, no exponent: an integer literal
        return _int(cell) if len(cell) > MAX_INT_DIGITS else int(cell)
    return _float(cell)


def parse_number(text: str) -> int | float:
    """A number written loosely (surrounding spaces, a sign, leading zeros): ``int`` for an
    integer literal, ``float`` for a decimal or exponent literal. CellError (a ValueError)
    for anything else, ``nan``/``inf``/``1_000`` included, and for numbers out of range."""
    s = text.strip()
    m = _LOOSE_NUMBER.fullmatch(s)
    if m is None:
        raise CellError(f"{_show(text)} is not a number")
    return _int(s) if m.lastindex is None else _float(s)


def _declared_int(cell: str) -> int:
    s = cell.strip()
    if _LOOSE_INT.fullmatch(s) is None:
        raise CellError(f"{_show(cell)} is not an int")
    return _int(s)


def _declared_float(cell: str) -> float:
    s = cell.strip()
    if _LOOSE_NUMBER.fullmatch(s) is None:
        raise CellError(f"{_show(cell)} is not a float")
    return _float(s)


def _declared_bool(cell: str) -> bool:
    v = _DECLARED_BOOLS.get(cell.strip().lower())
    if v is None:
        raise CellError(f"{_show(cell)} is not a bool (true/false, 1/0)")
    return v


def _as_is(cell: str) -> str:
    return cell


DECLARED: dict[str, Callable[[str], Any]] = {
    "int": _declared_int,
    "float": _declared_float,
    "bool": _declared_bool,
    "str": _as_is,
}
