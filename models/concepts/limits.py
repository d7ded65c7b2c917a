"""Limits on hostile input (docs/concepts.md, "Limits"): what the concepts model accepts as a
number, as text and as nesting, checked when filters and events are parsed, before any recursive or
numeric work, so that every hook answers or raises a
:class:`~pubsift.core.errors.PubsiftError` in bounded time and memory.

* Numbers (filter constants, event values, scale factors, context properties) are finite
  and within the range of a double (``|x| <= 1.7976931348623157e308``): integers of up to
  309 digits are kept exact, larger ones and NaN / infinities are refused (the text form's
  ``inf`` keyword is the one way to write an unbounded range end).
* Text is Unicode: strings with lone surrogates (``"\\ud800"``, which no UTF-8 transport
  can carry and JSON reads back differently) are refused.
* Semantic objects nest at most :data:`MAX_DEPTH` levels of members; a cyclic mapping is
  refused as such.
* A filter's text form is at most :data:`MAX_TEXT_LENGTH` characters and
  :data:`MAX_TOKENS` tokens.
* Unit expressions are at most :data:`MAX_UNIT_LENGTH` characters with exponents of at most
  :data:`MAX_EXPONENT` (pint evaluates what it parses: ``m ** 99999999`` would not end).
"""

from __future__ import annotations

import math
import re
import sys
from typing import Any

MAX_DEPTH = 64
"""Nesting levels of members in a semantic object (the top-level object is level 0)."""

MAX_UNIT_LENGTH = 200
"""Characters of a unit expression."""

MAX_EXPONENT = 32
"""Largest absolute exponent in a unit expression (``meter ** 3``)."""

MAX_TEXT_LENGTH = 4_000_000
"""Characters of a filter's text form, checked before it is tokenized (a string literal
costs no memory beyond its text; JSON text has no such limit)."""

MAX_TOKENS = 100_000
"""Tokens (words, numbers, literals, operators, punctuation) of a filter's text form: each
costs about 150 bytes while the text is parsed. ``format_filter`` writes the JSON wire form
instead of text beyond this or :data:`MAX_TEXT_LENGTH`, so every filter round-trips."""

MAX_NUMBER_TEXT = 400
"""Characters of a number written in a filter's text form (more cannot be a double)."""

_FLOAT_MAX = sys.float_info.max
_SURROGATE = re.compile("[\ud800-\udfff]")


def number_problem(v: Any) -> str | None:
    """Why ``v`` (an int or float, not a bool) is not an acceptable number, or None."""
    if isinstance(v, float):
        return None if math.isfinite(v) else f"{v!r} is not a finite number"
    if isinstance(v, int) and not -_FLOAT_MAX <= v <= _FLOAT_MAX:
        return f"an integer of {v.bit_length()} bits is out of range (at most ±1.8e308)"
    return None


def text_problem(s: str) -> str | None:
    """Why ``s`` is not acceptable text, or None."""
    m = _SURROGATE.search(s)
    if m is None:
        return None
    return (
        f"text contains a lone surrogate U+{ord(m.group()):04X} at offset {m.start()} "
        "(not Unicode text)"
    )
