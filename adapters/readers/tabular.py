"""CSV (and TSV) files into events (docs/adapters.md §2): one event per data row.

**Header.** The first non-blank row names the columns; a header that is missing (an empty
file), repeats a column name or has no named column is quarantined as ``csv-header`` at
position 0 and nothing else of the file is read (without names a row means nothing). A
column whose name is empty is not an attribute: its cells are not part of the events (the
index column pandas' ``to_csv`` writes first, ``,a,b``; the empty column a trailing comma
makes, ``a,b,``); rows still have the header's number of fields, that column included.

**Dialect.** The delimiter is ``source.delimiter`` when given, a tab for ``.tsv`` files,
otherwise sniffed by :class:`csv.Sniffer` on the first 4 KiB among ``, ; TAB |``
(``,`` when the sniffer cannot tell). Quoting is the csv module's default (``"``,
doubled to escape) in strict mode: a quote followed by anything but a delimiter or a
line end is an error, not silently kept. Lines end in ``\\n``, ``\\r\\n`` or ``\\r``.

**Encoding.** ``source.encoding``; without it UTF-8, or the encoding a UTF-8, UTF-16 or
UTF-32 byte-order mark names (:mod:`pubsift.adapters.readers.lines`). A row holding bytes that are
not text in that encoding, or a NUL byte (binary data, or UTF-16 read as UTF-8: the message
then suggests the ``encoding`` setting), is quarantined as ``encoding`` (naming the byte
and the column) and the rows around it are read.

**Typing** (inference, for columns the source does not declare):

* an integer literal ``[+-]?(0|[1-9][0-9]*)`` -> ``int``; a decimal or exponent literal
  (``1.5``, ``-.5``, ``5.``, ``1e5``, ``2.5E-3``) -> ``float``;
* ``true``/``false`` as JSON, Python/pandas and spreadsheets write them (``true``,
  ``True``, ``TRUE``; the same for false) -> ``bool``; other casings stay strings;
* an empty cell -> the attribute is absent (not an empty string, not null);
* anything else -> ``str``, exactly as written. Deliberately strings: ``nan``, ``inf``,
  ``Infinity`` (a CSV user does not mean a number by them and the records model has no
  non-finite numbers), ``1_000`` and ``0x10`` (Python and C syntax, not data),
  ``007`` and ``-01`` (leading zeros are identifiers: zip codes, account numbers),
  `` 12 `` (surrounding spaces: the cell is kept as written), full-width or other
  non-ASCII digits;
* a number literal the records model cannot hold is a bad record, ``csv-type``: an
  exponent literal beyond the 64-bit float range (``1e999``; it is a number, but not one
  that can be compared) and an integer of more than 4,300 digits
  (:data:`pubsift.models.constraints.limits.MAX_INT_DIGITS`).

**Declared column types** (``source.columns``) replace inference for those columns and
are looser about spelling, since the source says what the column holds: surrounding
spaces are ignored, ``int`` accepts leading zeros and a sign, ``float`` any decimal or
exponent literal (an integer literal included, as a float), ``bool`` ``true``/``false``
in any case and ``1``/``0``; ``str`` keeps the cell as written. A value that does not fit
is a ``csv-type`` bad record naming the column and the value; an empty cell is still an
absent attribute. A declared column that a file's header does not have is ignored (one
source may cover files with different headers).

**Names.** A column's name is the attribute's name as written (not stripped). A dotted
name (``position.x``) is the records model's dotted attribute name, the same attribute a
nested JSON object ``{"position": {"x": ...}}`` gives.

**Positions.** The 1-based data-row number, header not counted; a quoted field spanning
lines is still one row; a blank line is not a row (as :class:`csv.DictReader` skips it).
Every row that is not an event is quarantined at its position: ``csv-field-count`` (more
or fewer fields than the header), ``csv-syntax`` (what the csv module refuses, e.g. a quote
left open), ``too-large`` (a row longer than ``ReadLimits.max_record_bytes`` bytes as
UTF-8, line ends of its last line not counted; a field is never longer than its row, and
the csv module's own ``field_size_limit`` is raised to cover the limit), ``encoding``,
``csv-type``, and what the converter refuses (``invalid-event``, ``concept-enrichment``).
After a syntax error or an oversized row reading resumes at the next line, and the rows
found from there are numbered on (when the row broke inside a quoted field, the lines after
it are read as rows: no recovery can know where the field was meant to end).

**Semantic objects.** With a publisher side (``source.publisher``) the undeclared cells
stay the strings they are, and the publisher types them by concept
(:func:`pubsift.adapters.readers.publisher.Publisher.enrich`); see :func:`~pubsift.adapters.readers.converting.converter`.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pubsift.adapters.readers.cells import (
    _BOOLS,
    _NUMBER,
    DECLARED,
    CellError,
    _as_is,
    infer,
    parse_number,
)
from pubsift.adapters.readers.converting import converter
from pubsift.adapters.readers.lines import (
    bad_bytes,
    codec_for,
    nul_problem,
    open_text,
    shown,
    skip_rest,
)
from pubsift.adapters.readers.outcomes import Event, Quarantined, excerpt
from pubsift.adapters.readers.registry import SNIFF_BYTES, Reader, strip_compression

if TYPE_CHECKING:
    from pubsift.adapters.readers.inputs import Input
    from pubsift.adapters.readers.limits import ReadLimits
    from pubsift.core.model import FilterModel

#: delimiters the sniffer chooses among
DELIMITERS = ",;\t|"

_NOT_TEXT = re.compile("[\x00\udc00-\udcff]")  # NUL or an escaped byte (lines.ESCAPE)
_LINE_ENDS = ("\r\n", "\n", "\r")


# -- the fast path of inference: row shapes ---------------------------------------------------
# Rows of one file mostly have the same shape: the same columns empty, integer, decimal,
# boolean or text. One regular expression per shape recognizes, in C, a row whose every cell
# is typed as the shape says (integers of at most 18 digits, decimals without exponent: no
# range check needed; text that is no number or boolean literal), and the row is typed by
# ``int``/``float`` per cell by a function generated for the shape, without a loop. Any other row takes the slow path
# (:func:`infer` per cell), whose result is the same by construction (tests compare both),
# and its shape becomes the one tried next.
_SEP = "\x1f"  # a cell holding it never matches a shape: slow path
_SAFE_INT = r"[+-]?(?:0|[1-9][0-9]{0,17})"
_SAFE_FLOAT = r"[+-]?(?:(?:0|[1-9][0-9]{0,17})\.[0-9]{0,17}|\.[0-9]{1,17})"
_BOOL_WORDS = "|".join(_BOOLS)
_KINDS: dict[str, tuple[str, Callable[[str], Any] | None]] = {
    "": ("", None),
    "int": (_SAFE_INT, int),
    "float": (_SAFE_FLOAT, float),
    "bool": (f"(?:{_BOOL_WORDS})", _BOOLS.__getitem__),
    "str": (rf"(?!(?:{_NUMBER.pattern}|{_BOOL_WORDS})(?:{_SEP}|\Z))[^{_SEP}]+", str),
}
_safe_int = re.compile(_SAFE_INT).fullmatch
_safe_float = re.compile(_SAFE_FLOAT).fullmatch
_NO_SHAPE: tuple[Any, ...] = (re.compile("(?!)").fullmatch, None)
_SHAPES_KEPT = 256
#: shapes learnt per file at most: rows whose shapes keep changing (a shape costs about
#: 0.3 ms to compile) are typed by the slow path from then on
_SHAPE_SWITCHES = 1024


def _kind(cell: str, value: Any) -> str | None:
    if not cell:
        return ""
    t = type(value)
    if t is str or t is bool:
        return t.__name__
    if t is int:
        return "int" if _safe_int(cell) else None
    return "float" if _safe_float(cell) else None


def _shape_of(
    header: tuple[str, ...], row: list[str], record: dict[str, Any]
) -> tuple[Any, ...] | None:
    """(fullmatch, typing function) of the row's shape, None if it has none."""
    kinds = []
    for column, cell in zip(header, row):
        k = _kind(cell, record.get(column))
        if k is None:
            return None
        kinds.append(k)
    return _compiled(header, tuple(kinds))


@lru_cache(maxsize=_SHAPES_KEPT)
def _compiled(header: tuple[str, ...], kinds: tuple[str, ...]) -> tuple[Any, ...]:
    """(fullmatch of the shape, the function typing a row of that shape). The function is
    generated, as :mod:`dataclasses` generates ``__init__``: ``{n0: r[0], n1: c1(r[1]),
    ...}``, column names and converters passed as closure variables (never as source
    text), empty columns left out; it runs about a third faster than a loop."""
    match = re.compile(_SEP.join(f"(?:{_KINDS[k][0]})" for k in kinds)).fullmatch
    params: list[str] = []
    args: list[Any] = []  # column names, then converters
    items: list[str] = []
    for i, (column, k) in enumerate(zip(header, kinds)):
        if not k:
            continue
        params.append(f"n{i}")
        args.append(column)
        conv = _KINDS[k][1]
        if conv is str:
            items.append(f"n{i}: r[{i}]")
        else:
            params.append(f"c{i}")
            args.append(conv)
            items.append(f"n{i}: c{i}(r[{i}])")
    source = (
        f"def shape({', '.join(params)}):\n"
        f"    def typed(r):\n"
        f"        return {{{', '.join(items)}}}\n"
        f"    return typed\n"
    )
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    return match, namespace["shape"](*args)


class _TooLarge(Exception):
    """Raised through the csv module by :class:`_Lines` (never escapes the reader)."""

    def __init__(self, head: str) -> None:
        super().__init__(head)
        self.head = head


class _Lines:
    """The lines of a text stream for :func:`csv.reader`, with the bytes of the row being
    read counted (``size``, reset by the reader after each row) and whether one of its
    lines holds bytes that are not text or a NUL (``bad``). A row growing beyond ``limit``
    bytes raises :class:`_TooLarge` after skipping to the end of the line it was found on,
    so that memory stays bounded by the limit."""

    __slots__ = ("_cap", "_limit", "_readline", "bad", "last", "size")

    def __init__(self, text: io.TextIOBase, limit: int) -> None:
        self._readline = text.readline
        self._limit = limit
        self._cap = limit + 2  # characters; a character is at least one byte
        self.size = 0
        self.bad = False
        self.last = ""

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        line = self._readline(self._cap)
        if not line:
            raise StopIteration
        if line.isascii():
            size = self.size = self.size + len(line)
            if "\x00" in line:
                self.bad = True
        else:
            if _NOT_TEXT.search(line) is not None:
                self.bad = True
            size = self.size = self.size + len(line.encode("utf-8", "surrogatepass"))
        if size > self._limit:
            self._overflow(line)
        self.last = line
        return line

    def _overflow(self, line: str) -> None:
        end = line.endswith(_LINE_ENDS)
        if end:
            tail = line[-2:] if line.endswith("\r\n") else line[-1]
            if self.size - len(tail.encode()) <= self._limit:
                return  # the limit was reached by the line end only
        head = line[:400]
        skip_rest(self._readline, line, _LINE_ENDS)
        self.size = 0
        raise _TooLarge(head)


def sniff_delimiter(sample: str) -> str:
    """The delimiter of a CSV sample among :data:`DELIMITERS` (``,`` when unsure); blank
    lines are left out, they confuse :class:`csv.Sniffer`."""
    sample = "".join(ln for ln in sample.splitlines(keepends=True) if ln.strip())
    try:
        return csv.Sniffer().sniff(sample, delimiters=DELIMITERS).delimiter
    except csv.Error:
        return ","


def _sample(inp: Input) -> str:
    with inp.open() as fh:
        head = fh.read(SNIFF_BYTES)
    text = head.decode(codec_for(head, inp.source.encoding), "replace")
    if len(head) >= SNIFF_BYTES:  # drop the last, probably partial, line
        cut = max(text.rfind("\n"), text.rfind("\r"))
        if cut > 0:
            text = text[: cut + 1]
    return text


def delimiter_of(inp: Input) -> str:
    """The source's delimiter, a tab for ``.tsv``, else sniffed on the file's start."""
    if inp.source.delimiter is not None:
        return inp.source.delimiter
    if strip_compression(inp.name).lower().endswith(".tsv"):
        return "\t"
    return sniff_delimiter(_sample(inp))


def _encoding_problem(row: list[str], header: list[str] | None, codec: str, delimiter: str) -> str:
    for i, cell in enumerate(row):
        m = _NOT_TEXT.search(cell)
        if m is not None:
            where = (
                f" in column {header[i]!r}"
                if header is not None and i < len(header) and header[i]
                else f" in field {i + 1}"
            )
            if m.group() == "\x00":
                return nul_problem(cell, where, delimiter.join(row))
            return bad_bytes(cell, codec, where)
    return bad_bytes("", codec)  # the byte is in a line break inside the row


class CsvReader(Reader):
    """CSV and TSV files (see the module's docstring)."""

    name = "csv"
    extensions = (".csv", ".tsv")
    default_model = "records"

    def sniff(self, head: bytes) -> bool:
        """Text whose first complete lines (at least two) split into the same number (two
        or more) of fields on one delimiter; not JSON, not XML."""
        text = head.decode("utf-8-sig", "ignore")
        stripped = text.lstrip()
        if not stripped or stripped[0] in "{[<":
            return False
        lines = text.splitlines(keepends=True)
        if len(head) >= SNIFF_BYTES or not text.endswith(("\n", "\r")):
            lines = lines[:-1]
        lines = [ln for ln in lines if ln.strip()]
        if len(lines) < 2:
            return False
        try:
            delim = csv.Sniffer().sniff("".join(lines), delimiters=DELIMITERS).delimiter
            widths = {len(r) for r in csv.reader(lines, delimiter=delim, strict=True)}
        except csv.Error:
            return False
        return len(widths) == 1 and widths.pop() >= 2

    def read(
        self, inp: Input, model: FilterModel, limits: ReadLimits
    ) -> Iterator[Event | Quarantined]:
        convert = converter(model, inp.source)
        delimiter = delimiter_of(inp)
        typed = inp.source.publisher is None
        limit = limits.max_record_bytes
        # The csv module's field_size_limit (128 KiB by default) is process-wide module state:
        # it is raised (never lowered) so that max_record_bytes is the only limit. A field is
        # never longer than its row, which _Lines bounds (in bytes, hence in characters).
        if csv.field_size_limit() < limit + 2:
            csv.field_size_limit(limit + 2)
        with inp.open() as fh:
            text, codec = open_text(fh, inp.source.encoding, newline="")
            yield from _rows(inp, model.name, text, delimiter, typed, convert, limit, codec)


def _rows(
    inp: Input,
    model: str,
    text: io.TextIOBase,
    delimiter: str,
    typed: bool,
    convert: Callable[[Any, str, int], Event | Quarantined],
    limit: int,
    codec: str,
) -> Iterator[Event | Quarantined]:
    name = inp.name
    lines = _Lines(text, limit)
    rows = csv.reader(lines, delimiter=delimiter, strict=True)

    def bad(position: int, reason: str, message: str, raw: Any = "") -> Quarantined:
        return Quarantined(name, position, reason, message, excerpt(raw), model)

    # -- the header: the first non-blank row ---------------------------------------------
    try:
        header = next(rows)
        while not header:
            lines.size = 0
            header = next(rows)
    except StopIteration:
        yield bad(0, "csv-header", "no header row: the file is empty")
        return
    except _TooLarge as exc:
        yield bad(0, "too-large", f"the header is longer than {limit} bytes", exc.head)
        return
    except csv.Error as exc:
        yield bad(0, "csv-syntax", f"the header cannot be read: {exc}", lines.last)
        return
    problem = header_problem(header, lines.bad, codec, delimiter)
    if problem:
        yield bad(
            0, "encoding" if lines.bad else "csv-header", problem, shown(delimiter.join(header))
        )
        return
    width = len(header)
    named = [i for i, column in enumerate(header) if column]
    # cells of columns without a name are not part of the event (the module's docstring)
    project = None if len(named) == width else (lambda r: [r[i] for i in named])
    names = [header[i] for i in named]
    declared = inp.source.columns
    default = infer if typed else _as_is
    convs = [DECLARED[declared[c]] if c in declared else default for c in names]
    columns = list(zip(names, convs))
    inferred_only = all(c is infer for c in convs)
    header_key = tuple(names)
    shape_match, shape_typed = _NO_SHAPE
    switches = _SHAPE_SWITCHES

    # -- the rows -------------------------------------------------------------------------
    position = 0
    while True:
        lines.size = 0
        lines.bad = False
        try:
            for row in rows:
                lines.size = 0
                if len(row) != width:
                    if not row:
                        continue  # a blank line is not a row
                    position += 1
                    yield bad(
                        position,
                        "csv-field-count",
                        f"{len(row)} fields, the header has {width} columns",
                        delimiter.join(row),
                    )
                    lines.bad = False
                    continue
                position += 1
                if lines.bad:
                    lines.bad = False
                    yield bad(
                        position,
                        "encoding",
                        _encoding_problem(row, header, codec, delimiter),
                        shown(delimiter.join(row)),
                    )
                    continue
                cells = row if project is None else project(row)
                record = {}
                try:
                    if inferred_only:
                        if shape_match(_SEP.join(cells)) is not None:  # the fast path
                            record = shape_typed(cells)
                        else:
                            for column, cell in zip(names, cells):
                                if cell:
                                    record[column] = infer(cell)
                            if switches:
                                shape = _shape_of(header_key, cells, record)
                                if shape is not None:
                                    shape_match, shape_typed = shape
                                    switches -= 1
                    else:
                        for (column, conv), cell in zip(columns, cells):
                            if cell:
                                record[column] = conv(cell)
                except CellError as exc:
                    yield bad(
                        position, "csv-type", f"column {column!r}: {exc}", delimiter.join(row)
                    )
                    continue
                yield convert(record, name, position)
            return
        except _TooLarge as exc:
            position += 1
            yield bad(
                position,
                "too-large",
                f"the row is longer than {limit} bytes; reading resumes at the next line",
                exc.head,
            )
        except csv.Error as exc:
            position += 1
            message = str(exc)
            if "field larger than field limit" in message:
                yield bad(
                    position,
                    "too-large",
                    f"a field is longer than the csv module's "
                    f"field_size_limit ({csv.field_size_limit()} characters); reading "
                    "resumes at the next line",
                    lines.last,
                )
            else:
                yield bad(
                    position,
                    "csv-syntax",
                    f"{message}; reading resumes at the next line",
                    lines.last,
                )


def header_problem(header: list[str], not_text: bool, codec: str, delimiter: str) -> str:
    """What makes ``header`` (its cells; ``not_text``: whether its line held bytes that are
    not text in ``codec``) no header (the ``csv-header`` message: a repeated name, no
    named column), or "" for a header the reader accepts (docs/adapters.md, "CSV
    header")."""
    if not_text:
        return "the header is " + _encoding_problem(header, None, codec, delimiter)
    seen: set[str] = set()
    for i, column in enumerate(header, 1):
        if column in seen:
            return f"column {i} repeats the name {column!r}"
        if column:
            seen.add(column)
    if not seen:
        return "no column of the header has a name"
    return ""


CSV_READER = CsvReader()

__all__ = [
    "CSV_READER",
    "DECLARED",
    "CellError",
    "CsvReader",
    "delimiter_of",
    "header_problem",
    "infer",
    "parse_number",
    "sniff_delimiter",
]
