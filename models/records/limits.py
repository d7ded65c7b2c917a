"""Input limits of the records model's JSON forms: what a hostile or broken peer may send
is refused with a clear error before any recursive or costly work (the FilterModel contract: every
hook answers or raises a ``PubsiftError``; docs/records-syntax.md §4 lists the limits).

* **Nesting**: JSON objects and arrays nest at most :data:`MAX_DEPTH` levels (events,
  EventBridge patterns, wire forms; text and Python mappings alike; a mapping that contains
  itself is refused by the same check).
* **Strict JSON** (:mod:`pubsift.core.strict_json`): :func:`loads` refuses duplicate keys,
  reads integers of at most :data:`~pubsift.models.constraints.limits.MAX_INT_DIGITS`
  digits and finite floats only (JSON has no NaN or infinity, and a literal like
  ``1e309``, which rounds to infinity, is refused; the text and wire forms spell unbounded
  ends ``inf``).

The limits on constants (integer digits, string length, lone surrogates) are the constraint
algebra's: :mod:`pubsift.models.constraints.limits`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pubsift.core import strict_json
from pubsift.models.constraints import int_message

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


def loads(text: str, what: str) -> Any:
    """The JSON text of an event or a pattern (``what``, for the messages) under the strict
    JSON policy of :mod:`pubsift.core.strict_json` (duplicate keys, NaN/Infinity, floats
    overflowing to infinity and integers of more than
    :data:`~pubsift.models.constraints.limits.MAX_INT_DIGITS` digits refused), nesting
    checked before parsing. Raises :class:`json.JSONDecodeError` for malformed text and
    :class:`InputLimit` (``where``: an offset when known) for the rest; lone surrogates are
    left to the caller's walk over the result (their place is a JSON path)."""
    check_text_depth(text)
    try:
        return strict_json.loads(text, max_depth=None)  # the depth: checked above
    except strict_json.JsonError as exc:
        if exc.kind == "syntax":
            raise json.JSONDecodeError(exc.reason, text, exc.pos or 0) from None
        if exc.kind == "duplicate":
            message = f"duplicate key {exc.key!r} in a JSON object of the {what}"
        elif exc.kind == "integer":
            message = int_message(exc.digits)
        elif exc.kind == "constant":
            message = f"{exc.reason}; numbers are finite"
        elif exc.kind == "depth":
            message = f"JSON nested deeper than {MAX_DEPTH} levels"
        else:
            message = exc.reason
        raise InputLimit(message) from None


__all__ = ["MAX_DEPTH", "InputLimit", "check_depth", "check_text_depth", "loads"]
