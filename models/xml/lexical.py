"""Lexical checks and size limits of XPath filter text, applied before elementpath parses it.

A filter is text from the network: before any recursive work is done on it, its tokens are
scanned once, iteratively, and it is refused with a
:class:`~pubsift.core.errors.FilterSyntaxError` giving the position when

* it is longer than :data:`MAX_LENGTH` characters, holds more than :data:`MAX_TOKENS`
  tokens or :data:`MAX_STEPS` location steps (``/`` and ``//``), or nests brackets and
  parentheses deeper than :data:`MAX_NESTING`;
* it holds a character XML does not allow (NUL, other C0 controls, lone surrogates, U+FFFE,
  U+FFFF): such a text cannot be compared with a document, and lxml refuses it too;
* a number starts with a digit other than ``0``-``9`` (XPath 1.0 §3.7: ``Digits ::=
  [0-9]+``; elementpath would read ``٣`` or ``１`` as 3 and 1, lxml refuses them);
* a string literal is followed by its own quote (``"a""b"``): XPath 1.0 has no escape
  inside a literal, so this is two literals to lxml, while elementpath would read one.

Number literals longer than :data:`LONG_NUMBER` characters are handed to elementpath as a
short placeholder of the same length (elementpath converts digits with ``int()``, which
refuses 4,300 digits); the reader takes every number's value from the original text
(:func:`.numbers.xpath_number`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from pubsift.core.errors import FilterSyntaxError

MAX_LENGTH = 100_000
MAX_TOKENS = 4_000
MAX_STEPS = 256
MAX_NESTING = 32
LONG_NUMBER = 100

# characters outside XML 1.0's Char production (str holds lone surrogates as code points)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]*)?", re.ASCII)
_SPACE = frozenset(" \t\r\n")
_OPEN, _CLOSE = "([", ")]"


@dataclass
class Scan:
    """What the scan found: the text to hand to elementpath (long numbers replaced) and
    the original text of each number literal by start offset."""

    text: str
    numbers: dict[int, str] = field(default_factory=dict)


def _error(message: str, text: str, pos: int) -> FilterSyntaxError:
    return FilterSyntaxError(message, text, pos)


def check_chars(text: str, what: str = "XPath") -> None:
    """Refuse characters XML does not allow (FilterSyntaxError with the position)."""
    m = _NOT_XML.search(text)
    if m is not None:
        raise _error(
            f"character U+{ord(m.group()):04X} is not allowed in {what} (XML 1.0 characters only)",
            text,
            m.start(),
        )


def _name_char(ch: str) -> bool:
    return ch.isalnum() or ch in "_-.\u00b7" or unicodedata.category(ch) in ("Mn", "Mc", "Pc")


def scan(text: str) -> Scan:
    """Check ``text`` (see the module doc) and return what elementpath should parse."""
    if len(text) > MAX_LENGTH:
        raise _error(
            f"XPath filter too long: {len(text)} characters > {MAX_LENGTH}", text, MAX_LENGTH
        )
    check_chars(text)
    out = Scan(text)
    parts: list[str] = []
    last = 0
    tokens = steps = 0
    stack: list[int] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _SPACE:
            i += 1
            continue
        tokens += 1
        if tokens > MAX_TOKENS:
            raise _error(f"XPath filter has too many tokens: more than {MAX_TOKENS}", text, i)
        if ch in "\"'":
            end = text.find(ch, i + 1)
            if end < 0:
                raise _error("unterminated string literal", text, i)
            if end + 1 < n and text[end + 1] == ch:
                raise _error(
                    "a quote doubled inside a string literal: XPath 1.0 has no "
                    "escapes (delimit the literal with the other quote)",
                    text,
                    end,
                )
            i = end + 1
            continue
        m = _NUMBER.match(text, i)
        if m is not None:
            if m.end() - i > LONG_NUMBER:
                out.numbers[i] = m.group()
                parts.append(text[last:i] + "0" + " " * (m.end() - i - 1))
                last = m.end()
            i = m.end()
            continue
        if unicodedata.category(ch) == "Nd":
            raise _error(
                f"non-ASCII digit {ch!r} (U+{ord(ch):04X}): XPath numbers are written with 0-9",
                text,
                i,
            )
        if ch.isalpha() or ch == "_":
            i += 1
            while i < n and _name_char(text[i]):
                i += 1
            continue
        if ch == "/":
            steps += 1
            if steps > MAX_STEPS:
                raise _error(
                    f"XPath filter has too many location steps: more than {MAX_STEPS}", text, i
                )
            i += 2 if text.startswith("//", i) else 1
            continue
        if ch in _OPEN:
            stack.append(i)
            if len(stack) > MAX_NESTING:
                raise _error(
                    f"XPath filter nested too deeply: more than {MAX_NESTING} "
                    "brackets and parentheses",
                    text,
                    i,
                )
        elif ch in _CLOSE and stack:
            stack.pop()
        i += 1
    if parts:
        out.text = "".join(parts) + text[last:]
    return out
