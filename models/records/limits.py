"""Input limits of the records model: what a hostile or broken peer may send is refused
with a clear error before any recursive or costly work (DESIGN.md §2.1: every hook answers
or raises a ``PubsiftError``; docs/records-syntax.md §4 lists the limits).

* **Nesting**: JSON objects and arrays nest at most :data:`MAX_DEPTH` levels (events,
  EventBridge patterns, wire forms; text and Python mappings alike; a mapping that contains
  itself is refused by the same check).
* **Integers** have at most :data:`MAX_INT_DIGITS` decimal digits (Python's own default
  ``int_max_str_digits``, independent of the interpreter's setting); within it every
  comparison of integers and floats is exact (Python compares ``int`` and ``float``
  exactly; nothing converts an integer to a float).
* **Floats** are finite: JSON has no NaN or infinity, and a literal like ``1e309``, which
  rounds to infinity, is refused (the text and wire forms spell unbounded ends ``inf``).
* **Strings** in filters (literals and attribute names) have at most :data:`MAX_STRING`
  characters: relations on them (automata, common substrings) take time linear in their
  length with large factors (a 1 MB literal took 8-12 s to merge); events' strings are
  not limited (matching is linear: ``str`` comparisons and affix tests).
* **Strings** hold Unicode scalar values: a lone surrogate (U+D800-U+DFFF, as a character
  or as a ``\\uXXXX`` escape not paired with its partner) has no UTF-8 encoding, so it
  could not be sent on the wire and two of them would come back as one other character;
  it is refused in names and values of every form.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

#: The deepest nesting of JSON objects/arrays accepted in an event or filter.
MAX_DEPTH = 128
#: The most decimal digits of an integer in an event or filter.
MAX_INT_DIGITS = 4300
#: The most characters of a string literal or attribute name in a filter (events' strings
#: are not limited: matching them is linear in their length).
MAX_STRING = 65536

_INT_BOUND = 10 ** MAX_INT_DIGITS
_SURROGATE = re.compile("[\ud800-\udfff]")
_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


class TooComplex(OverflowError):
    """Deciding a relation exactly would cost too much: a set operation on multi values
    would need more than ``multivalues.MAX_CUBES`` cubes (the difference of unions of cubes
    grows exponentially with their number), or a string automaton more than
    ``automata.MAX_CELLS`` transitions. Callers give the sound answer instead."""


class InputLimit(ValueError):
    """An input exceeds one of the limits; ``where`` names the place (a JSON path or a
    character offset), ``message`` what. Callers turn it into their own ``PubsiftError``."""

    def __init__(self, message: str, where: str | int | None = None) -> None:
        super().__init__(message)
        self.message, self.where = message, where


def int_too_large(v: int) -> bool:
    """More than :data:`MAX_INT_DIGITS` digits (booleans are never too large)."""
    return not -_INT_BOUND < v < _INT_BOUND


def int_message(digits: int | None = None) -> str:
    got = "" if digits is None else f" (this one has {digits})"
    return f"integers have at most {MAX_INT_DIGITS} digits{got}"


def string_too_long(s: str) -> bool:
    return len(s) > MAX_STRING


def string_message(s: str) -> str:
    return (f"a string in a filter has at most {MAX_STRING} characters (this one has "
            f"{len(s)})")


def has_surrogate(s: str) -> bool:
    return _SURROGATE.search(s) is not None


def first_surrogate(s: str) -> int:
    m = _SURROGATE.search(s)
    return -1 if m is None else m.start()


def printable(s: str) -> str:
    """``s`` with every surrogate replaced by U+FFFD (same length: offsets stay valid)."""
    return _SURROGATE.sub("\ufffd", s)


def surrogate_message(s: str) -> str:
    m = _SURROGATE.search(s)
    assert m is not None
    return (f"lone surrogate U+{ord(m.group()):04X} at character {m.start()} of a string; "
            "strings hold Unicode characters that UTF-8 can encode")


def show(v: Any, json_text: Callable[[Any], str] = repr) -> str:
    """A short, printable rendering of an input value for an error message: ``json_text``
    (e.g. ``json.dumps``) for scalars, the JSON type for containers, never a failure
    (integers beyond the digit limit, lone surrogates, huge strings)."""
    if isinstance(v, int) and not isinstance(v, bool) and int_too_large(v):
        return f"an integer of more than {MAX_INT_DIGITS} digits"
    if v is None or isinstance(v, (str, int, float)):
        try:
            s = json_text(v)
        except (TypeError, ValueError):
            s = repr(v)
    else:
        s = ("an object" if isinstance(v, Mapping) else "an array"
             if isinstance(v, (list, tuple)) else f"a {type(v).__name__}")
    s = printable(s)
    return s if len(s) <= 80 else s[:60] + "..." + s[-10:]


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
    return json.loads(text, object_pairs_hook=pairs_hook, parse_int=_parse_int,
                      parse_float=_parse_float, parse_constant=_constant)


__all__ = ["InputLimit", "MAX_DEPTH", "MAX_INT_DIGITS", "MAX_STRING", "check_depth",
           "check_text_depth", "first_surrogate", "has_surrogate", "string_message", "string_too_long", "printable",
           "show", "int_message", "int_too_large", "loads", "surrogate_message"]
