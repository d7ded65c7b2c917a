"""JSON lines into events (docs/adapters.md §2): one event per line holding a JSON object.

* **Lines** end in ``\\n`` (``\\r\\n`` too). **Encoding**: ``source.encoding``; without it
  UTF-8, or the encoding a UTF-8, UTF-16 or UTF-32 byte-order mark names (the mark is
  skipped; :mod:`pubsift.adapters.readers.lines`). A blank line (only ASCII whitespace) counts as a
  line — positions are line numbers, as an editor shows them — but is not a record: it
  yields nothing and is not counted as read, so read = events + quarantined holds over the
  non-blank lines.
* **Each non-blank line** is parsed by :func:`pubsift.core.strict_json.strict_json` (a
  duplicate key, ``NaN``/``Infinity``, an integer beyond Python's digit limit or nesting
  too deep is refused) and keeps JSON's own types. Quarantined, that line only:
  ``json-syntax`` (the message gives the column), ``not-an-object`` (valid JSON that is
  an array, a string, a number ...), ``encoding`` (bytes that are not text in the
  encoding, or a NUL byte: binary data, or UTF-16/UTF-32 without a byte-order mark read as
  UTF-8, when the message suggests the ``encoding`` setting), ``too-large`` (more than
  ``ReadLimits.max_record_bytes`` bytes, as UTF-8, before the line end; the
  line is skipped in chunks, never held whole in memory), and what the converter refuses
  (``invalid-event``; ``concept-enrichment`` with a publisher side).
* **File names**: ``.jsonl`` and ``.ndjson`` (also compressed). A ``.json`` file is not
  claimed by its name, since it usually holds one pretty-printed document or an array,
  which is not JSON lines; it is read as JSON lines when its content says so: the first
  non-blank line is a complete JSON object (:meth:`JsonLinesReader.sniff`).

``pubsift match`` reads its event lines (standard input, ``*.jsonl`` named on the command
line; ids ``file:line``) with :func:`json_values`: the same strict parse, line by line, any
JSON value handed to the model, and each bad line reported to be skipped.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pubsift.adapters.readers.converting import converter
from pubsift.adapters.readers.lines import (
    ESCAPE,
    UTF8,
    bad_bytes,
    has_bad_bytes,
    nul_problem,
    open_bytes,
    shown,
    skip_rest,
)
from pubsift.adapters.readers.outcomes import Event, Quarantined, excerpt
from pubsift.adapters.readers.registry import Reader
from pubsift.adapters.readers.textlines import MAX_LINE_BYTES, read_lines
from pubsift.core.strict_json import JsonError, strict_json

if TYPE_CHECKING:
    from pubsift.adapters.readers.inputs import Input
    from pubsift.adapters.readers.limits import ReadLimits
    from pubsift.core.model import FilterModel

_BOM = b"\xef\xbb\xbf"
_JSON_TYPES = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


class JsonLinesReader(Reader):
    """JSON lines (see the module's docstring)."""

    name = "jsonl"
    extensions = (".jsonl", ".ndjson")
    default_model = "records"

    def sniff(self, head: bytes) -> bool:
        """The first non-blank line is complete and a strict JSON object."""
        if head.startswith(_BOM):
            head = head[len(_BOM) :]
        for line in head.split(b"\n")[:-1]:  # complete lines only
            if line.strip():
                try:
                    return isinstance(strict_json(line.decode("utf-8")), dict)
                except (UnicodeDecodeError, JsonError):
                    return False
        return False

    def read(
        self, inp: Input, model: FilterModel, limits: ReadLimits
    ) -> Iterator[Event | Quarantined]:
        convert = converter(model, inp.source)
        name, model_name = inp.name, model.name
        limit = limits.max_record_bytes
        cap = limit + 2  # room for the line end after a line at the limit

        def bad(position: int, reason: str, message: str, raw: object) -> Quarantined:
            return Quarantined(name, position, reason, message, excerpt(raw), model_name)

        with inp.open() as fh:
            stream, codec = open_bytes(fh, inp.source.encoding)
            if codec == UTF8:  # lines of bytes, each decoded on its own
                if stream.peek(len(_BOM)).startswith(_BOM):  # type: ignore[attr-defined]  # (open_bytes)
                    stream.read(len(_BOM))  # before the line limit counts the line
                readline = stream.readline
                raw = readline(cap)
                number = 0
                while raw:
                    number += 1
                    line = (
                        raw[:-2]
                        if raw.endswith(b"\r\n")
                        else raw[:-1]
                        if raw.endswith(b"\n")
                        else raw
                    )
                    if len(line) > limit:
                        skip_rest(readline, raw, (b"\n",))
                        yield bad(
                            number,
                            "too-large",
                            f"the line is longer than {limit} bytes",
                            line[:800],
                        )
                    elif line.strip():
                        yield self._record(line, name, number, convert, bad)
                    raw = readline(cap)
                return
            text_stream = io.TextIOWrapper(stream, encoding=codec, errors=ESCAPE, newline="\n")
            yield from self._decoded(text_stream, codec, limit, name, convert, bad)

    def _decoded(
        self, text_stream, codec: str, limit: int, name: str, convert, bad
    ) -> Iterator[Event | Quarantined]:
        """The lines of a file in another encoding than UTF-8, decoded by the stream; the
        size of a line is counted as UTF-8."""
        readline = text_stream.readline
        number = 0
        while raw := readline(limit + 2):
            number += 1
            line = raw[:-2] if raw.endswith("\r\n") else raw[:-1] if raw.endswith("\n") else raw
            size = len(line.encode("utf-8", "surrogatepass"))
            if size > limit:
                skip_rest(readline, raw, ("\n",))
                yield bad(
                    number, "too-large", f"the line is longer than {limit} bytes", shown(line[:800])
                )
            elif has_bad_bytes(line):
                yield bad(number, "encoding", bad_bytes(line, codec), shown(line))
            elif "\x00" in line:
                yield bad(number, "encoding", nul_problem(line), line)
            elif line.strip(" \t\n\r\x0b\x0c"):
                yield self._parsed(line, name, number, convert, bad)

    @classmethod
    def _record(cls, line: bytes, name: str, number: int, convert, bad) -> Event | Quarantined:
        if b"\x00" in line:  # before UTF-8: UTF-16 read as UTF-8 says so
            return bad(number, "encoding", nul_problem(line.decode("utf-8", "replace")), line)
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            return bad(
                number,
                "encoding",
                f"not UTF-8: byte 0x{line[exc.start]:02x} at column {exc.start + 1}",
                line,
            )
        return cls._parsed(text, name, number, convert, bad)

    @staticmethod
    def _parsed(text: str, name: str, number: int, convert, bad) -> Event | Quarantined:
        try:
            obj = strict_json(text)
        except JsonError as exc:
            return bad(number, "json-syntax", str(exc), text)
        if type(obj) is not dict:
            return bad(
                number,
                "not-an-object",
                f"the line is {_JSON_TYPES[type(obj)]}, not a JSON object",
                text,
            )
        return convert(obj, name, number)


JSONL_READER = JsonLinesReader()


def json_values(path: str, max_bytes: int = MAX_LINE_BYTES) -> Iterator[tuple[str, Any, str]]:
    """The JSON value of each non-blank line of ``path`` (``-``: standard input), as
    (``file:line``, value, ""), or (``file:line``, None, what is wrong) for a line that is
    not UTF-8 text, longer than ``max_bytes`` or not strict JSON. Any JSON value is given
    (the model says what is an event). Raises
    :class:`~pubsift.adapters.readers.textlines.InputError` when the file cannot be read."""
    for line in read_lines(path, "events", max_bytes):
        if line.text is None:
            yield line.where, None, line.problem
            continue
        try:
            value = strict_json(line.text)
        except JsonError as exc:
            yield line.where, None, str(exc)
            continue
        yield line.where, value, ""


__all__ = ["JSONL_READER", "JsonLinesReader", "json_values"]
