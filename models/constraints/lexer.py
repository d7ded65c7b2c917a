"""The lexical parts shared by the filter text forms of the records and concepts models.

Both text forms write constants as JSON does: one :class:`Token` type, one number grammar
(:data:`NUMBER`, JSON's: ``-3``, ``0.5``, ``2.5e-3``; no leading zeros, digits after
``.``) and JSON string literals, matched by :data:`STRING` and decoded by ``json.loads``
(:func:`read_string`), written back by ``json.dumps`` (:func:`quote`). Each model keeps its
own token set and grammar on top (records: dotted names, ``-inf``; concepts: dates, unit
expressions). Errors are :class:`~pubsift.core.errors.FilterSyntaxError` with the offset of
the offending character, so the message shows a caret under it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pubsift.core.errors import FilterSyntaxError

#: Token kinds (the concepts text form adds ``date``, ``op`` and ``unitsym``).
WORD, STRING, NUMBER, PUNCT, END = "word", "string", "number", "punct", "end"

#: A JSON number (RFC 8259 §6).
NUMBER_RE = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
#: A JSON string literal, as written (possessive, unrolled: no backtracking, memory bounded
#: by the text; Friedl, *Mastering Regular Expressions*, "unrolling the loop").
STRING_RE = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)

_VALID_ESCAPES = '\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX'
_U_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})|\\.", re.DOTALL)
_NONPRINTABLE = re.compile(r"[^\x20-\x7e]")
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Token:
    """One token: its kind, its text as written, its value (the decoded string, the number;
    the text for words and punctuation) and its offset in the filter text."""

    kind: str
    text: str
    value: Any
    pos: int

    def describe(self) -> str:
        if self.kind == END:
            return "the end of the filter"
        if self.kind == STRING:
            return f"string {self.text}"
        return f"{self.kind} {self.text!r}" if self.kind != PUNCT else repr(self.text)


def number_value(lexeme: str) -> int | float:
    """The value of a :data:`NUMBER_RE` lexeme: an ``int`` if it has no fraction or exponent,
    else a ``float`` (callers check their limits on the lexeme first)."""
    if "." in lexeme or "e" in lexeme or "E" in lexeme:
        return float(lexeme)
    return int(lexeme)


def read_string(text: str, start: int) -> tuple[str, int]:
    """The JSON string literal at ``text[start] == '"'``: its value and its end offset.
    Raises :class:`FilterSyntaxError` at the offending character: unterminated literal,
    invalid escape, control character, lone surrogate escape."""
    m = STRING_RE.match(text, start)
    if m is None:
        raise FilterSyntaxError("unterminated string: missing closing '\"'", text, start)
    lexeme = m.group()
    try:
        value = json.loads(lexeme)
    except json.JSONDecodeError as e:
        raise _string_error(text, start, lexeme, e) from None
    if _has_surrogate(value):
        raise _surrogate_error(text, start, lexeme)
    return value, m.end()


def _string_error(text: str, start: int, lexeme: str, e: json.JSONDecodeError) -> FilterSyntaxError:
    if e.msg.startswith("Invalid control character"):
        c = lexeme[e.pos]
        return FilterSyntaxError(
            f"bad string: control character U+{ord(c):04X} inside a "
            "string; write it as an escape such as \\n or \\u0000",
            text,
            start + e.pos,
        )
    # an escape: json reports the backslash (\x) or the 'u' (\uXXXX); point at the backslash
    pos = e.pos if lexeme[e.pos] == "\\" else e.pos - 1
    if lexeme.startswith("\\u", pos):
        return FilterSyntaxError(
            "bad string: \\u must be followed by four hex digits", text, start + pos
        )
    return FilterSyntaxError(
        f"bad string: invalid escape '\\{lexeme[pos + 1]}' in a string (valid: {_VALID_ESCAPES})",
        text,
        start + pos,
    )


def _has_surrogate(s: str) -> bool:
    return _SURROGATE.search(s) is not None


def _surrogate_error(text: str, start: int, lexeme: str) -> FilterSyntaxError:
    """The first ``\\uXXXX`` escape in ``lexeme`` that is a surrogate without its partner."""
    high: tuple[int, int] | None = None  # (code point, offset) of an unpaired high surrogate
    for m in _U_ESCAPE.finditer(lexeme):
        cp = int(m.group(1), 16) if m.group(1) else None
        if high is not None:
            if cp is not None and 0xDC00 <= cp < 0xE000 and m.start() == high[1] + 6:
                high = None
                continue
            break
        if cp is not None and 0xD800 <= cp < 0xE000:
            high = (cp, m.start())
            if cp >= 0xDC00:
                break
    assert high is not None
    cp, pos = high
    return FilterSyntaxError(
        f"bad string: \\u{cp:04x} is a lone surrogate; strings hold "
        "Unicode characters (a surrogate escape pairs a high "
        "\\uD800-\\uDBFF with a low \\uDC00-\\uDFFF)",
        text,
        start + pos,
    )


def quote(s: str) -> str:
    """The JSON string literal of ``s`` (``json.dumps``), readable: printable characters as
    they are, the others (controls, separators such as U+2028, unassigned) as escapes."""
    return _NONPRINTABLE.sub(_escape, json.dumps(s, ensure_ascii=False))


def _escape(m: re.Match) -> str:
    ch = m.group()
    if ch.isprintable():
        return ch
    return json.dumps(ch)[1:-1]  # \uXXXX, a surrogate pair beyond the BMP


__all__ = [
    "END",
    "NUMBER",
    "NUMBER_RE",
    "PUNCT",
    "STRING",
    "STRING_RE",
    "WORD",
    "Token",
    "number_value",
    "quote",
    "read_string",
]
