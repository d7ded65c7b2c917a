"""Reading the command line's input files line by line, hostile input included
(bad input gets a clear error and loses nothing).

A file is read as bytes and each line decoded on its own, so one line that is not UTF-8 is
reported with its file and line number and the rest is still read. JSON is parsed strictly:
a duplicate key, ``NaN``/``Infinity``, an integer beyond Python's digit limit or a nesting
too deep for the parser is an error, as it is when the models parse JSON themselves.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pubsift.core.errors import PubsiftError

STDIN = "-"


class InputError(Exception):
    """A file cannot be read at all (missing, a directory, unreadable): a usage error."""


@dataclass(frozen=True)
class Line:
    """One non-blank line: ``where`` is ``file:number``; ``text`` is the decoded line, or
    None when it is not UTF-8 (then ``problem`` says why)."""

    where: str
    text: str | None
    problem: str = ""


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (multi-line messages are joined)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def _decode(raw: bytes) -> tuple[str | None, str]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, (
            f"not UTF-8 text (invalid byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
        )
    if "\x00" in text:
        return None, f"binary data (a NUL byte at column {text.index(chr(0)) + 1})"
    return text, ""


def read_lines(path: str, what: str) -> Iterator[Line]:
    """The non-blank lines of ``path`` (``-``: standard input). Raises InputError when the
    file cannot be opened or read, naming it and what it was to hold."""
    name = "stdin" if path == STDIN else path
    try:
        if path == STDIN:
            stream: Any = getattr(sys.stdin, "buffer", None) or _encoded(sys.stdin)
        else:
            stream = open(path, "rb")  # noqa: SIM115  closed in the finally below
    except OSError as exc:
        raise InputError(
            f"{name}: cannot read the {what} file: {exc.strerror or one_line(exc)}"
        ) from None
    n = 0
    try:
        for n, raw in enumerate(stream, 1):
            text, problem = _decode(raw.rstrip(b"\r\n"))
            if text is None:
                yield Line(f"{name}:{n}", None, problem)
            elif text.strip():
                yield Line(f"{name}:{n}", text)
    except OSError as exc:
        raise InputError(
            f"{name}:{n + 1}: cannot read the {what} file: {exc.strerror or one_line(exc)}"
        ) from None
    finally:
        if path != STDIN:
            stream.close()


def _encoded(text_stream: Any) -> Iterator[bytes]:
    """A text stream without a byte buffer (tests) as lines of bytes."""
    for line in text_stream:
        yield line.encode("utf-8", "surrogatepass")


class _Duplicate(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Duplicate(f"duplicate key {json.dumps(k)[:80]} in a JSON object")
        out[k] = v
    return out


def _constant(name: str) -> Any:
    raise _Duplicate(f"{name} is not JSON")


class JsonError(PubsiftError, ValueError):
    """A line is not strict JSON (what is wrong, on one line)."""


def strict_json(text: str) -> Any:
    """``json.loads`` refusing duplicate keys and NaN/Infinity; every problem is a
    :class:`JsonError` with a one-line message (column included when the parser knows it)."""
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise JsonError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except _Duplicate as exc:
        raise JsonError(f"invalid JSON: {exc}") from None
    except ValueError:  # an integer beyond the digit limit (Python's message advises a call)
        raise JsonError(
            f"invalid JSON: an integer of more than {sys.get_int_max_str_digits():,} digits"
        ) from None
    except RecursionError:
        raise JsonError("invalid JSON: nested too deeply") from None
