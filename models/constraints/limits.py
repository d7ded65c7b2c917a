"""Input limits of the constraint algebra: what a constraint's constants may be, so that
relations stay cheap and every constant has an exact JSON form (the FilterModel contract: every hook
answers or raises a ``PubsiftError``; docs/records-syntax.md §4 lists the limits).

* **Integers** have at most :data:`MAX_INT_DIGITS` decimal digits (Python's own default
  ``int_max_str_digits``, independent of the interpreter's setting); within it every
  comparison of integers and floats is exact (Python compares ``int`` and ``float``
  exactly; nothing converts an integer to a float).
* **Strings** in constraints (literals, and the attribute names of the models that use the
  algebra) have at most :data:`MAX_STRING` characters: relations on them (automata, common
  substrings) take time linear in their length with large factors (a 1 MB literal took
  8-12 s to merge); events' strings are not limited (matching is linear: ``str``
  comparisons and affix tests).
* **Strings** hold Unicode scalar values: a lone surrogate (U+D800-U+DFFF, as a character
  or as a ``\\uXXXX`` escape not paired with its partner) has no UTF-8 encoding, so it
  could not be sent on the wire and two of them would come back as one other character.
* **Relations** that would cost too much (string automata beyond ``automata.MAX_CELLS``
  transitions, multi-value sets beyond ``multivalues.MAX_CUBES`` cubes) raise
  :class:`TooComplex`; callers give the sound answer instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

#: The most decimal digits of an integer in an event or filter.
MAX_INT_DIGITS = 4300
#: The most characters of a string literal or attribute name in a filter (events' strings
#: are not limited: matching them is linear in their length).
MAX_STRING = 65536

_INT_BOUND = 10**MAX_INT_DIGITS
_SURROGATE = re.compile("[\ud800-\udfff]")


class TooComplex(OverflowError):
    """Deciding a relation exactly would cost too much: a set operation on multi values
    would need more than ``multivalues.MAX_CUBES`` cubes (the difference of unions of cubes
    grows exponentially with their number), or a string automaton more than
    ``automata.MAX_CELLS`` transitions. Callers give the sound answer instead."""


def int_too_large(v: int) -> bool:
    """More than :data:`MAX_INT_DIGITS` digits (booleans are never too large)."""
    return not -_INT_BOUND < v < _INT_BOUND


def int_message(digits: int | None = None) -> str:
    got = "" if digits is None else f" (this one has {digits})"
    return f"integers have at most {MAX_INT_DIGITS} digits{got}"


def string_too_long(s: str) -> bool:
    return len(s) > MAX_STRING


def string_message(s: str) -> str:
    return f"a string in a filter has at most {MAX_STRING} characters (this one has {len(s)})"


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
    return (
        f"lone surrogate U+{ord(m.group()):04X} at character {m.start()} of a string; "
        "strings hold Unicode characters that UTF-8 can encode"
    )


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
        s = (
            "an object"
            if isinstance(v, Mapping)
            else "an array"
            if isinstance(v, (list, tuple))
            else f"a {type(v).__name__}"
        )
    s = printable(s)
    return s if len(s) <= 80 else s[:60] + "..." + s[-10:]


__all__ = [
    "MAX_INT_DIGITS",
    "MAX_STRING",
    "TooComplex",
    "first_surrogate",
    "has_surrogate",
    "int_message",
    "int_too_large",
    "printable",
    "show",
    "string_message",
    "string_too_long",
    "surrogate_message",
]
