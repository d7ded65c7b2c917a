"""Decoded, bounded lines for the line-based readers (CSV, JSON lines; docs/adapters.md §2).

**Encoding.** A source's ``encoding`` setting names the codec of its files (any text
encoding Python knows: ``latin-1``, ``cp1252``, ``utf-16`` ...). Without it a file is UTF-8,
unless it starts with a byte-order mark: a UTF-8, UTF-16 or UTF-32 BOM selects that
encoding (and is not part of the text). A UTF-8 BOM is skipped when the setting says UTF-8
too. Bytes that are not text in the encoding are decoded as lone surrogates U+DC00 + byte
(:data:`ESCAPE`, like ``surrogateescape`` but for every byte value, since UTF-16 and UTF-32
errors can hold bytes below 0x80), so a reader finds them in the line it reports
(:func:`bad_bytes`) and the lines around it are read. A NUL character is not text either
(``pubsift match`` calls it binary data): :func:`nul_problem` describes it, and suggests
the ``encoding`` setting when the line looks like UTF-16 or UTF-32 read as UTF-8.

**Oversized lines.** A reader reads a line at most ``limit`` (+ its line end) long and, when
it is longer, skips the rest in chunks (:func:`skip_rest`), so memory stays bounded.
"""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Callable
from typing import IO, AnyStr

#: the error handler decoding a byte that is not text as U+DC00 + byte
ESCAPE = "pubsift-bytes"
#: characters (or bytes) read at a time while skipping the rest of an oversized line
SKIP_CHUNK = 1 << 16
#: byte-order marks, longest first (a UTF-32-LE BOM starts like a UTF-16-LE one); the codec
#: named consumes the BOM itself
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
#: the codec of a file without setting and without BOM
UTF8 = "utf-8-sig"
_ESCAPED = re.compile("[\udc00-\udcff]")


def _escape(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    bad = exc.object[exc.start : exc.end]
    return "".join(chr(0xDC00 + b) for b in bad), exc.end


codecs.register_error(ESCAPE, _escape)


def check_encoding(name: str) -> None:
    """LookupError unless ``name`` is a text encoding Python knows (``rot13`` and
    ``hex`` are codecs, but not text encodings)."""
    b"a".decode(name, "replace")  # (an empty input is not looked up)


def codec_for(head: bytes, declared: str | None) -> str:
    """The codec a file starting with ``head`` (its first 4 bytes at least, when it has
    them) is decoded with: the declared encoding (a BOM of that encoding skipped: UTF-8 as
    ``utf-8-sig``, ``utf-16-le`` with a BOM as ``utf-16``), else the one its BOM names,
    else :data:`UTF8`."""
    if declared is not None:
        name = codecs.lookup(declared).name
        if name == "utf-8":
            return UTF8
        return next(
            (codec for bom, codec in BOMS if head.startswith(bom) and name.startswith(codec)),
            declared,
        )
    for bom, codec in BOMS:
        if head.startswith(bom):
            return codec
    return UTF8


def encoding_name(codec: str) -> str:
    """How a message names the codec (``UTF-8``, ``UTF-16``, ``latin-1``)."""
    return {"utf-8-sig": "UTF-8", "utf-16": "UTF-16", "utf-32": "UTF-32"}.get(codec, codec)


class _Prefixed(io.RawIOBase):
    """A binary stream whose first bytes were already read (to look for a BOM)."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        super().__init__()
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def open_bytes(fh: IO[bytes], declared: str | None) -> tuple[IO[bytes], str]:
    """``fh`` (at its start) as a buffered binary stream (with ``peek``), and the codec of
    its text (:func:`codec_for`); nothing of the stream is consumed. A stream that can
    ``peek`` (files, gzip, bzip2, zip members) is returned as it is."""
    peek = getattr(fh, "peek", None)
    if peek is not None:
        head = peek(4)
        if len(head) >= 4:
            return fh, codec_for(head, declared)
    head = b""
    while len(head) < 4:
        more = fh.read(4 - len(head))
        if not more:
            break
        head += more
    return io.BufferedReader(_Prefixed(head, fh), 1 << 16), codec_for(head, declared)


def open_text(fh: IO[bytes], declared: str | None, newline: str) -> tuple[io.TextIOWrapper, str]:
    """``fh`` decoded by its codec (:func:`codec_for`), bad bytes escaped (:data:`ESCAPE`)."""
    stream, codec = open_bytes(fh, declared)
    return io.TextIOWrapper(stream, encoding=codec, errors=ESCAPE, newline=newline), codec


def bad_bytes(text: str, codec: str, where: str = "") -> str:
    """Why ``text`` (holding an escaped byte: :func:`has_bad_bytes`) is not text, naming the
    first bad byte, ``where`` (`` in column 'x'``) and its character position (1-based):
    ``"not UTF-8: byte 0xff in column 'x' at character 3"``."""
    m = _ESCAPED.search(text)
    if m is None:
        return f"not {encoding_name(codec)} (a line break inside the record holds the byte)"
    return (
        f"not {encoding_name(codec)}: byte 0x{ord(m.group()) - 0xDC00:02x}{where} at "
        f"character {m.start() + 1}"
    )


def shown(text: str) -> str:
    """``text`` with its escaped bytes written ``\\xff`` (for an excerpt)."""
    return _ESCAPED.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)


def has_bad_bytes(text: str) -> bool:
    """Whether a decoded line holds a byte that is not text (always False for ASCII)."""
    return not text.isascii() and _ESCAPED.search(text) is not None


def nul_problem(text: str, where: str = "", line: str | None = None) -> str:
    """Why ``text`` holding a NUL character is binary data, ``where`` (`` in column 'x'``)
    and at which character (1-based). A line (``line``, default ``text``) of which a quarter
    or more is NUL is most likely UTF-16 or UTF-32 read as UTF-8: the message then suggests
    the ``encoding`` setting."""
    at = text.index("\x00") + 1
    whole = text if line is None else line
    hint = ""
    if whole.count("\x00") * 4 >= len(whole.rstrip("\r\n")):
        hint = (
            "; UTF-16 or UTF-32 text without a byte-order mark? Set the source's "
            'encoding (e.g. encoding = "utf-16-le")'
        )
    return f"binary data: a NUL byte{where} at character {at}{hint}"


def skip_rest(readline: Callable[[int], AnyStr], line: AnyStr, ends: tuple[AnyStr, ...]) -> None:
    """Read, in chunks of :data:`SKIP_CHUNK`, to the end of the line that ``line`` began."""
    while line and not line.endswith(ends):
        line = readline(SKIP_CHUNK)


__all__ = [
    "BOMS",
    "ESCAPE",
    "SKIP_CHUNK",
    "UTF8",
    "bad_bytes",
    "check_encoding",
    "codec_for",
    "encoding_name",
    "has_bad_bytes",
    "nul_problem",
    "open_bytes",
    "open_text",
    "shown",
    "skip_rest",
]
