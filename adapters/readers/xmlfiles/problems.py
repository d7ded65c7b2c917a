"""What went wrong in an XML document, located and in one line: libxml2's errors in our words
(:func:`syntax_problem`: the quarantine reason and an :class:`~.salvage.XmlProblem`), the
depth limit's message, refused entity references, and the bytes around a problem shown in
the quarantine record's excerpt (docs/adapters.md §4)."""

from __future__ import annotations

import re
from typing import BinaryIO

from lxml import etree
from pubsift.adapters.readers.xmlfiles.salvage import XmlProblem
from pubsift.models.xml import MAX_DEPTH_CEILING, ParseLimits, hardened_parser, parser_depth_ceiling

_E = etree.ErrorTypes
#: libxml2 errors about the bytes' encoding (invalid bytes, unknown or unsupported names)
ENCODING_ERRORS = frozenset(
    getattr(_E, n)
    for n in (
        "ERR_INVALID_ENCODING",
        "ERR_UNKNOWN_ENCODING",
        "ERR_UNSUPPORTED_ENCODING",
        "ERR_ENCODING_NAME",
        "ERR_MISSING_ENCODING",
        "I18N_CONV_FAILED",
        "I18N_NO_HANDLER",
        "IO_ENCODER",
    )
    if hasattr(_E, n)
)
_WHERE_SUFFIX = re.compile(r", line \d+, column \d+\Z")
BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


def syntax_problem(
    exc: etree.XMLSyntaxError, limits: ParseLimits | None = None
) -> tuple[str, XmlProblem]:
    """The quarantine reason and the located problem of a document lxml refused, in one
    line and in our own words where libxml2's are about its options."""
    msg = " ".join(_WHERE_SUFFIX.sub("", (exc.msg or str(exc)).strip()).split())
    line, column = exc.position if exc.position else (exc.lineno or 0, 0)
    if exc.code in ENCODING_ERRORS:
        return "encoding", XmlProblem(line or 0, column or 0, msg)
    if exc.code == _E.ERR_ENTITY_LOOP or "amplification" in msg:
        return "xml-entity", XmlProblem(line or 0, column or 0, msg)
    if "Excessive depth" in msg:
        depth = (limits or ParseLimits()).max_depth
        ceiling = parser_depth_ceiling(limits or ParseLimits())
        return "xml-too-deep", XmlProblem(
            line or 0, column or 0, too_deep_message(min(depth, ceiling))
        )
    if exc.code == _E.ERR_RESOURCE_LIMIT:
        return "too-large", XmlProblem(line or 0, column or 0, msg)
    return "xml-syntax", XmlProblem(line or 0, column or 0, msg)


def too_deep_message(limit: int) -> str:
    """Nesting beyond ``limit`` levels, and how to accept it."""
    if limit >= MAX_DEPTH_CEILING:
        return (
            f"nested more than {limit} levels deep, the most libxml2 parses (no setting accepts it)"
        )
    return (
        f"nested more than {limit} levels deep (raise ReadLimits.xml = ParseLimits("
        f"max_depth=...), at most {MAX_DEPTH_CEILING}, to accept it)"
    )


def not_text(data: bytes) -> str | None:
    """Why bytes that start without a byte-order mark cannot be XML text in an
    ASCII-compatible encoding (NUL bytes: UTF-16/32 without a BOM), else None."""
    if data.startswith(BOMS) or b"\x00" not in data[:512]:
        return None
    return (
        "NUL bytes: the text looks like UTF-16 or UTF-32 without a byte-order mark "
        "or encoding declaration (add a BOM or declare the encoding)"
    )


def refused_reference(ref: etree._Entity) -> str:
    # strict parsing keeps one only under a DOCTYPE naming an external DTD (never loaded)
    return (
        f"reference to entity &{ref.name}; (line {ref.sourceline}) refused: only "
        "the predefined entities are read, no DTD is loaded"
    )


def line_of(data: bytes, line: int, column: int = 0) -> bytes:
    """The bytes around (``line``, ``column``): the line, or a window around the column
    of a long line (a one-line feed)."""
    if line < 1:
        return data[:200]
    start = 0
    for _ in range(line - 1):
        start = data.find(b"\n", start) + 1
        if start == 0:
            return b""
    end = data.find(b"\n", start)
    end = end if end >= 0 else len(data)
    if column > 150 and end - start > 200:
        start = min(start + column - 100, end)
    return data[start : min(end, start + 200)]


def stream_line(fh: BinaryIO, line: int, column: int) -> bytes:
    """:func:`_line_of` of a stream, reading it up to there (memory: one chunk and the
    window)."""
    n, tail = 1, b""
    while True:
        chunk = fh.read(1 << 20)
        if not chunk:
            return line_of(tail, 1, column) if n == line else b""
        buf = tail + chunk
        while n < line:
            at = buf.find(b"\n")
            if at < 0:
                break
            buf = buf[at + 1 :]
            n += 1
        if n < line:
            tail = b""
            continue
        tail = buf
        if len(tail) >= column + 200 or b"\n" in tail[column:]:
            return line_of(tail, 1, column)


def first_error(head: bytes, limits: ParseLimits) -> etree.XMLSyntaxError | None:
    """libxml2's own (first) error in the first bytes of a document, if they hold one
    before their end."""
    try:
        etree.fromstring(head, hardened_parser(limits))
    except etree.XMLSyntaxError as exc:
        cut = len(head) >= 65536 and "Premature end" in (exc.msg or "")
        return None if cut else exc
    return None


def declaration(root: etree._Element) -> str:
    """The first entity declaration of the document, as written (an excerpt), or ""."""
    dtd = root.getroottree().docinfo.internalDTD
    for ent in dtd.iterentities() if dtd is not None else ():
        if ent.system_url:
            return f'<!ENTITY {ent.name} SYSTEM "{ent.system_url}">'
        return f'<!ENTITY {ent.name} "{ent.orig or ""}">'
    return ""


def too_deep_item(el: etree._Element, max_depth: int) -> bool:
    """Whether the item ``el`` (in its document) nests elements deeper than
    ``max_depth`` counted from the document's root."""
    below = max_depth + 1 - (sum(1 for _ in el.iterancestors()) + 1)
    return below <= 0 or bool(el.xpath("(" + "/".join(["*"] * below) + ")[1]"))
