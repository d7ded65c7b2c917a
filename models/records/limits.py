"""Input limits of the records model's JSON forms: what a hostile or broken peer may send
is refused with a clear error before any recursive or costly work (the FilterModel contract: every
hook answers or raises a ``PubsiftError``; docs/records-syntax.md §4 lists the limits).

* **Nesting**: JSON objects and arrays nest at most :data:`MAX_DEPTH` levels (events,
  EventBridge patterns, wire forms; text and Python mappings alike; a mapping that contains
  itself is refused by the same check).
* **Numbers**: :func:`loads` reads integers of at most
  :data:`~pubsift.models.constraints.limits.MAX_INT_DIGITS` digits and finite floats only
  (JSON has no NaN or infinity, and a literal like ``1e309``, which rounds to infinity, is
  refused; the text and wire forms spell unbounded ends ``inf``).

The limits on constants (integer digits, string length, lone surrogates) are the constraint
algebra's: :mod:`pubsift.models.constraints.limits`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pubsift.models.constraints.limits import MAX_INT_DIGITS, int_message

#: The deepest nesting of JSON objects/arrays accepted in an event or filter.
MAX_DEPTH = 128

_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


class InputLimit(ValueError):
    """An input exceeds one of the limits; ``where`` names the place (a JSON path or a
    character offset), ``message`` what. Callers turn it into their own ``PubsiftError``."""

    def __init__(self, message: str, where: str | int | None = None) -> None:
        super().__init__(message)
        self.message, self.where = message, where


def check_text_depth(text: str) -> None:
    """Raise :class:`InputLimit` (``where``: the offset) if the JSON text nests objects and
    arrays deeper than :data:`MAX_DEPTH`. Linear; brackets inside strings do not count."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    depth = 0
    stripped = _STRINGS.sub(_blank, text)  # same length: offsets stay valid
    for m in _BRACKETS.finditer(stripped):
        if m.group() in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise InputLimit(f"JSON nested deeper than {MAX_DEPTH} levels", m.start())
        else:
            depth -= 1


def _blank(m: re.Match) -> str:
    return " " * len(m.group())


def check_depth(obj: Any, path: str = "$") -> None:
    """Raise :class:`InputLimit` (``where``: the JSON path) if objects and arrays in the
    Python structure nest deeper than :data:`MAX_DEPTH` (a structure that contains itself
    does). Iterative."""
    stack: list[tuple[Any, int, str]] = [(obj, 1, path)]
    while stack:
        v, depth, p = stack.pop()
        items: Iterable[tuple[Any, Any]]
        if isinstance(v, Mapping):
            items = v.items()
        elif isinstance(v, (list, tuple)):
            items = enumerate(v)
        else:
            continue
        if depth > MAX_DEPTH:
            raise InputLimit(f"JSON nested deeper than {MAX_DEPTH} levels", p)
        for k, x in items:
            if isinstance(x, (Mapping, list, tuple)):
                stack.append((x, depth + 1, p if depth > 8 else f"{p}{_seg(k)}"))


_PLAIN = re.compile(r"[A-Za-z_$][\w$-]*")


def _seg(k: Any) -> str:
    """A JSON path step as the records error messages write them: ``.name``, ``["a b"]``,
    ``[0]``."""
    if isinstance(k, int):
        return f"[{k}]"
    k = str(k)
    return f".{k}" if _PLAIN.fullmatch(k) else f"[{json.dumps(k)}]"


def _parse_int(lexeme: str) -> int:
    digits = len(lexeme) - lexeme.startswith("-")
    if digits > MAX_INT_DIGITS:
        raise InputLimit(int_message(digits))
    return int(lexeme)


def _parse_float(lexeme: str) -> float:
    v = float(lexeme)
    if v in (float("inf"), float("-inf")):
        raise InputLimit(f"number {_short(lexeme)} is too large for a 64-bit float")
    return v


def _short(s: str) -> str:
    return s if len(s) <= 40 else s[:20] + "..." + s[-10:]


def _constant(name: str) -> Any:
    raise InputLimit(f"{name} is not JSON; numbers are finite")


def loads(text: str, pairs_hook: Callable[[list[tuple[str, Any]]], Any]) -> Any:
    """``json.loads`` under the limits: nesting checked before parsing, integers of at most
    :data:`MAX_INT_DIGITS` digits, finite floats, no NaN/Infinity. Raises
    :class:`json.JSONDecodeError` for malformed text and :class:`InputLimit` (``where``:
    an offset when known) for the limits; lone surrogates are left to the caller's walk
    over the result (their place is a JSON path)."""
    check_text_depth(text)
    return json.loads(
        text,
        object_pairs_hook=pairs_hook,
        parse_int=_parse_int,
        parse_float=_parse_float,
        parse_constant=_constant,
    )


__all__ = ["MAX_DEPTH", "InputLimit", "check_depth", "check_text_depth", "loads"]
