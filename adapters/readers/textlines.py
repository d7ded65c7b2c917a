"""The non-blank lines of a UTF-8 text file, each decoded on its own (hostile input
included: bad input gets a clear error and loses nothing).

What the command line reads line by line (filter files, the event lines of ``pubsift
match``) and the Spark job's subscriptions are read as bytes, and each line is decoded on
its own, so one line that is not UTF-8 (or holds a NUL byte: binary data) is reported with
its file and line number and the rest is still read.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pubsift.core.errors import one_line

STDIN = "-"
#: the longest line read (the default of the readers' ``max_record_bytes``, 10 MiB)
MAX_LINE_BYTES = 10 << 20


class InputError(Exception):
    """A file cannot be read at all (missing, a directory, unreadable): a usage error."""


@dataclass(frozen=True)
class Line:
    """One non-blank line: ``where`` is ``file:number``; ``text`` is the decoded line, or
    None when it is not UTF-8 (then ``problem`` says why)."""

    where: str
    text: str | None
    problem: str = ""


def decode_line(raw: bytes) -> tuple[str | None, str]:
    """(text, "") of a line of UTF-8 without NUL; else (None, what is wrong, with the
    column)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, (
            f"not UTF-8 text (invalid byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
        )
    if "\x00" in text:
        return None, f"binary data (a NUL byte at column {text.index(chr(0)) + 1})"
    return text, ""


def read_lines(path: str, what: str, max_bytes: int = MAX_LINE_BYTES) -> Iterator[Line]:
    """The non-blank lines of ``path`` (``-``: standard input). Raises InputError when the
    file cannot be opened or read, naming it and what it was to hold. A line longer than
    ``max_bytes`` is a problem line (its bytes are read past, never held: memory stays
    bounded whatever comes in)."""
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
        for n, raw in enumerate(_bounded(stream, max_bytes), 1):
            if raw is None:
                yield Line(f"{name}:{n}", None, f"a line longer than {max_bytes} bytes")
                continue
            text, problem = decode_line(raw.rstrip(b"\r\n"))
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


def _bounded(stream: Any, max_bytes: int) -> Iterator[bytes | None]:
    """The lines of a binary stream, None for a line longer than ``max_bytes`` (read past
    in pieces of at most a MiB)."""
    readline = getattr(stream, "readline", None)
    if readline is None:  # a generator of lines (tests' text streams)
        for raw in stream:
            yield None if len(raw.rstrip(b"\r\n")) > max_bytes else raw
        return
    while raw := readline(max_bytes + 2):  # the line, "\r\n" and one byte more
        if len(raw.rstrip(b"\r\n")) > max_bytes:
            while raw and not raw.endswith(b"\n"):
                raw = readline(1 << 20)
            yield None
        else:
            yield raw


def _encoded(text_stream: Any) -> Iterator[bytes]:
    """A text stream without a byte buffer (tests) as lines of bytes."""
    for line in text_stream:
        yield line.encode("utf-8", "surrogatepass")


__all__ = ["MAX_LINE_BYTES", "STDIN", "InputError", "Line", "decode_line", "read_lines"]
