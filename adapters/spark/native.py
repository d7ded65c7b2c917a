"""CSV files converted by Spark itself: its text source reads the lines, Spark SQL splits
and types them, and only the rows it cannot type exactly cross into Python.

The Python reader (:mod:`pubsift.adapters.readers.tabular`) defines what a CSV file gives; this
module gives **the same events and quarantine records** (the same JSON text, positions,
reasons and messages) for the files it takes, or leaves a file to that reader:

* **Files taken** (:func:`probe`, on the driver): the source is plain records typing (no
  ``columns``, no publisher side, model ``records``, format ``csv`` or none) and UTF-8;
  the file is a plain or ``.gz`` file (a ``.gz`` is decompressed once on the driver through
  the bomb guard: corrupt, truncated or over the limits, the Python reader takes it); the
  CSV reader is the one the Python path would choose; its first line is the header,
  complete on one line and accepted by the reader's header rules; the delimiter (the
  reader's own: setting, ``.tsv`` or sniffed) is one ASCII character.
* **Lines** (Spark's text source: ``\\n``, ``\\r\\n`` and ``\\r`` end a line, as for the
  csv module; the bytes kept as they are): a line without ``"`` is one row; a line with
  quotes must be one complete row in the csv module's strict quoting (fields either
  unquoted, or quoted with ``""`` inside and followed by the delimiter or the line end).
  A file holding any other line (a quoted field spanning lines, a syntax error: what only
  a sequential reading can number) is read whole by the Python reader (only files holding
  a ``"`` at all are checked: one job). Every non-blank line after the header is one
  row and its position is its rank among them: a plain file without ``\r`` is read in
  blocks of one partition each, a line's rank its block's count of lines before it (the
  probe counted them) plus its rank in the block (``monotonically_increasing_id``); a
  ``.gz`` of more than :data:`.native_jsonl.MIN_BLOCK` decompressed bytes is read so
  too, from the plain copy the probe kept while decompressing it (:mod:`.spill`); any
  other file is one partition of its own scan (:func:`write_native`).
* **Rows typed by Spark SQL**: a file whose first rows nearly all have one shape
  (:func:`shape_of`; :data:`REGULAR`) is typed by that shape's regular expression alone,
  one ``regexp_replace`` writing the event from the line (:func:`shaped_rewrite`),
  the cells put between the header's keys (:func:`shaped_only`), its other rows handed to
  Python; the other files cell by cell (:func:`typed`): the fields are split, unquoted and
  typed by the reader's inference rules as regular expressions; the event's JSON text is
  built as ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))`` writes it: header
  order, empty cells left out, integers as ``int(cell)`` prints them, decimals as
  ``repr(float(cell))`` prints them (the literal shortened, for the literals where that is
  exactly repr: at most 15 significant digits, no exponent, 0.0001 or more), strings
  escaped as :mod:`json` escapes them.
* **Rows handed to Python** (:func:`delegate`): any row that is not such an event: a wrong
  number of fields, bytes that are not UTF-8, a NUL, a row over ``max_record_bytes``, a
  number Spark SQL does not spell as Python would (an exponent, 16 digits or more, an
  integer of more than 4,000 digits), a string holding a control character other than tab,
  backspace or form feed. Each is read by the Python reader itself, as the one row after
  the header of a file of two lines (a complete row is read alone as within its file), its
  outcome given the row's position: on the driver when they are few (:data:`ON_DRIVER`),
  else in ``mapInArrow`` tasks.
* **Written once**: the events go straight from the scan into the event store's Parquet
  files, the delegated rows beside them into a scratch dataset (one write: no rows kept in
  memory, no second pass), and the counts come from observations of that same scan.

The default of the Spark job (``Settings(native_csv=True)``, ``--csv-reader spark``); the
figures are in docs/spark.md, "CSV read by Spark".
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pubsift.adapters.readers.inputs import Input, expand
from pubsift.adapters.readers.limits import ReadLimits
from pubsift.adapters.readers.outcomes import Event, Quarantined
from pubsift.adapters.readers.source import Source
from pubsift.adapters.spark.native_jsonl import HADOOP_CODECS, _replacement
from pubsift.adapters.spark.spill import Budget, Spill

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

#: lines holding quotes longer than this (bytes) are not checked by a regular expression
#: (Java's regex engine recurses per field): their file is left to the Python reader
CHECKED_LINE_BYTES = 16384
#: lines holding more quotes than this are not checked either
CHECKED_QUOTES = 1000
#: the header's line is looked for in this many bytes
HEADER_BYTES = 1 << 16
#: digits of an integer literal typed by Spark SQL (the records model holds 4,300)
SQL_INT_DIGITS = 4000
_UTF8_BOM = codecs.BOM_UTF8
_BOOLS = {"true": "true", "True": "true", "TRUE": "true"}
_BOOLS |= {"false": "false", "False": "false", "FALSE": "false"}


@dataclass(frozen=True)
class CsvPlan:
    """How Spark reads one file: its label and source (as the Python reader sees them, the
    delimiter set), the header's columns and its line's bytes."""

    label: str
    source: Source
    delimiter: str
    header: tuple[str, ...]
    header_line: bytes
    #: the kind of each column's cells in most of the first rows (:func:`shape_of`)
    shape: tuple[str, ...] | None = None
    #: whether nearly all first rows have that shape (:data:`REGULAR`)
    regular: bool = False
    #: whether the file holds a ``"`` (else no line can be an incomplete row)
    quotes: bool = True
    #: a plain file without ``\r``, read in blocks: the non-blank lines starting at each
    #: multiple of :data:`.native_jsonl.COUNT_STEP` bytes or before (None: one partition)
    counts: tuple[int, ...] | None = None
    #: its bytes and non-blank lines (the header included)
    size: int = 0
    rows: int = 0
    #: a ``.gz`` kept decompressed (:mod:`.spill`): the plain file Spark reads in its place
    copy: str | None = None

    @property
    def gz(self) -> bool:
        """Whether the file is read whole (one block)."""
        return self.counts is None


def _row_pattern(d: str, python: bool = False) -> str:
    """A complete CSV row in the csv module's strict quoting, fields split by ``d``."""
    x = re.escape(d) if python else f"\\x{{{ord(d):x}}}"
    quoted = '"(?:[^"]++|"")*+"'
    plain = f'[^"{x}][^{x}]*+'
    field = f"(?:{quoted}|{plain}|)"
    end = "\\Z" if python else "\\z"  # the end of the text in Python's and Java's syntax
    return f"\\A{field}(?:{x}{field})*+{end}"


def probe(
    path: str,
    label: str,
    source: Source,
    size: int | None,
    limits: ReadLimits,
    spill: Budget | None = None,
) -> CsvPlan | None:
    """The plan of a file Spark can read exactly as the CSV reader does, None for a file
    left to the Python reader (the module's docstring); a ``.gz`` it takes kept
    decompressed in ``spill``'s directory when it is large enough (:mod:`.spill`)."""
    from pubsift.adapters.spark.native_jsonl import MIN_BLOCK

    gz = path.endswith(".gz")
    with Spill(spill if gz else None, MIN_BLOCK) as copy:
        plan = _probe(path, label, source, size, limits, copy)
        if plan is None or not gz or plan.counts is None:
            return plan
        kept = copy.keep()
        return replace(plan, copy=kept) if kept else replace(plan, counts=None)


def _probe(
    path: str, label: str, source: Source, size: int | None, limits: ReadLimits, copy: Spill
) -> CsvPlan | None:
    from pubsift.adapters.readers.bombguard import compression_of
    from pubsift.adapters.readers.dispatch import reader_for
    from pubsift.adapters.readers.lines import UTF8, codec_for
    from pubsift.adapters.readers.tabular import CsvReader, delimiter_of, header_problem

    if source.columns or source.publisher is not None or source.model not in (None, "records"):
        return None
    if source.format not in (None, "csv"):
        return None
    lower = path.lower()
    gz = path.endswith(".gz")
    if compression_of(label) != (".gz" if gz else None) or lower.endswith(HADOOP_CODECS):
        return None
    try:
        found = list(expand(source, label, lambda: open(path, "rb"), size, limits, file=path))  # noqa: SIM115
        if len(found) != 1 or not isinstance(found[0], Input):
            return None
        inp = found[0]
        if not isinstance(reader_for(inp), CsvReader):
            return None
        with inp.open() as fh:
            # the whole stream once (a .gz: corrupt, truncated or over a limit -> Python),
            # looking for quotes and counting the lines
            counted = _Rows()
            head = b""
            while chunk := counted.read(fh):
                head = head or chunk[:HEADER_BYTES]
                copy.write(chunk)
            quotes = counted.quotes
        if codec_for(head, source.encoding) != UTF8:
            return None
        if head.startswith(_UTF8_BOM):
            head = head[len(_UTF8_BOM) :]
        m = re.search(rb"[\r\n]", head)
        if m is None:
            return None
        line = head[: m.start()]
        if not line or len(line) > limits.max_record_bytes or b"\x00" in line:
            return None
        text = line.decode("utf-8")
        delimiter = delimiter_of(inp)
        if len(delimiter) != 1 or not delimiter.isascii() or delimiter in '"\r\n':
            return None
        if '"' in text and re.fullmatch(_row_pattern(delimiter, True), text) is None:
            return None
        header = next(csv.reader([text], delimiter=delimiter, strict=True))
        if header_problem(header, False, UTF8, delimiter):
            return None
    except Exception:  # whatever it is, the Python reader reports it
        return None
    shape, share = shape_of(head[m.end() :], tuple(header), delimiter)
    return CsvPlan(
        label,
        source.with_path(label),
        delimiter,
        tuple(header),
        line,
        shape,
        share >= REGULAR,
        quotes,
        None if counted.cr else tuple(counted.counts),
        counted.size,
        counted.total(),
    )


class _Rows:
    """Counts of a CSV file read by steps of :data:`.native_jsonl.COUNT_STEP` bytes: the
    non-blank lines starting at each step or before (``counts``), whether a ``\r`` or a
    ``"`` occurs, the bytes, the non-blank lines (:meth:`total`)."""

    def __init__(self) -> None:
        self.counts: list[int] = []
        self.size = 0
        self.cr = self.quotes = False
        self._newlines = self._empty = 0
        self._last = b""

    def read(self, fh: Any) -> bytes:
        from pubsift.adapters.spark.native_jsonl import COUNT_STEP, _read

        chunk = _read(fh, COUNT_STEP)
        if not chunk:
            return chunk
        # an empty line starting at this step: a \n ending the step before, one here
        self._empty += self._last == b"\n" and chunk[:1] == b"\n"
        self.counts.append(1 + self._newlines - self._empty)  # the header starts at 0
        self._newlines += chunk.count(b"\n")
        self._empty += len(_EMPTY_LINE.findall(chunk))
        self._last = chunk[-1:]
        self.size += len(chunk)
        self.cr = self.cr or b"\r" in chunk
        self.quotes = self.quotes or b'"' in chunk
        return chunk

    def total(self) -> int:
        """The non-blank lines of the file (the last without line end counted)."""
        return 1 + self._newlines - (self._last == b"\n") - self._empty


#: a \n followed by a \n: an empty line starts after it
_EMPTY_LINE = re.compile(rb"\n(?=\n)")


# -- row shapes: most rows typed by one regular expression ---------------------------------------
# As the Python reader's fast path (pubsift.adapters.readers.tabular), a row whose cells all have the
# kinds of the file's usual row is recognised by one regular expression; here the kinds are
# those whose text is already the JSON text json.dumps writes for the typed value, so the
# event is the cells put between the header's keys. Other rows take the general path.
_CELL_NUMBER = r"[+-]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_WORDS = "true|True|TRUE|false|False|FALSE"


def _kinds(x: str, end: str) -> dict[str, str]:
    """The cell kinds for delimiter ``x`` (a regex escape; ``end``: the end of the text,
    ``\\z`` in Java, ``\\Z`` in Python): the patterns of cells whose text is their JSON (no
    quote, backslash or control character in any)."""
    return {
        "": "",
        "int": r"(?:0|-?[1-9][0-9]{0,17})",
        # repr's own text: at most 14 digits, no exponent, 0.0001 or more, no trailing zero
        "float": r"-?(?:[1-9][0-9]{0,6}\.(?:0|[0-9]{0,6}[1-9])|0\.(?:0|0{0,3}[1-9](?:[0-9]{0,5}[1-9])?))",
        "bool": "(?:true|false)",
        # not a number or a word: a first character neither can start with, or else
        # neither as a whole (atomic: the number's greedy match is its only full match,
        # and it cannot run past the cell's end, the delimiter being none a number holds:
        # NO_SHAPE_DELIMITERS)
        "str": rf"(?:(?=[^+\-.0-9tTfF])|(?!(?>{_CELL_NUMBER}|{_WORDS})(?:{x}|{end})))"
        rf'[^{x}"\\\x00-\x1f]+',
        "any": rf'[^{x}"]*',
    }


def _x(d: str) -> str:
    return f"\\x{ord(d):02x}"


#: delimiters the text of a number (``+1.5E-3``) or of ``true``/``false`` can hold: a file
#: split by one of them has no shape (typed cell by cell, each cell split off first), as
#: a line's pattern could match across a cell's end
NO_SHAPE_DELIMITERS = frozenset("0123456789+-.eEtruefals")
#: the kinds whose JSON text is the cell itself (a column may mix them: ``"bare"``)
_BARE = ("int", "float", "bool")


def _pattern(kinds: Mapping[str, str], kind: str) -> str:
    """The pattern of a column's ``kind``: one of :func:`_kinds`, ``"bare"`` (any of
    :data:`_BARE`), either followed by ``?`` (or the empty cell)."""
    base = kind.removesuffix("?")
    p = "|".join(kinds[k] for k in _BARE) if base == "bare" else kinds[base]
    return f"(?:{p})?" if kind.endswith("?") else p


def shape_pattern(shape: Sequence[str], d: str) -> str:
    """The regular expression of a whole line of ``shape`` (Java's and Python's syntax)."""
    x = _x(d)
    kinds = _kinds(x, r"\z")
    return r"\A" + x.join(f"(?:{_pattern(kinds, k)})" for k in shape) + r"\z"


def _fits(kind: str, column: str) -> bool:
    """Whether a cell of ``kind`` (one of :func:`_kinds`) fits a column of kind ``column``."""
    if column.endswith("?") and kind == "":
        return True
    base = column.removesuffix("?")
    return kind == base or (base == "bare" and kind in _BARE)


def _merged(seen: Mapping[tuple[str, ...], int]) -> tuple[str, ...]:
    """One kind per column for the line shapes ``seen`` (with their counts): text, or the
    bare kinds (one of them, or ``"bare"`` for several), whichever more lines hold, ``?``
    after it when some lines leave the cell empty; ``"any"`` for an unnamed column."""
    width = len(next(iter(seen)))
    out = []
    for i in range(width):
        counts: dict[str, int] = {}
        for shape, n in seen.items():
            counts[shape[i]] = counts.get(shape[i], 0) + n
        if "any" in counts:
            out.append("any")
            continue
        bare = [k for k in _BARE if counts.get(k)]
        text = counts.get("str", 0)
        if not text and not bare:
            out.append("")
            continue
        if text >= sum(counts[k] for k in bare):
            kind = "str"
        else:
            kind = bare[0] if len(bare) == 1 else "bare"
        out.append(kind + "?" if counts.get("") else kind)
    return tuple(out)


def shape_of(data: bytes, header: tuple[str, ...], d: str) -> tuple[tuple[str, ...] | None, float]:
    """The most frequent shape among the complete lines of ``data`` (the file's first rows
    after the header; None when no line has one) and the share of the non-blank lines that
    have it; no shape for a delimiter a number or ``true``/``false`` can hold
    (:data:`NO_SHAPE_DELIMITERS`: a line's pattern could then match across a cell's end)."""
    from collections import Counter

    if d in NO_SHAPE_DELIMITERS:
        return None, 0.0
    x = _x(d)
    kinds = {k: re.compile(p) for k, p in _kinds(x, r"\Z").items() if k != "any"}
    lines = re.split(rb"\r\n|\r|\n", data)[:-1]  # complete lines only
    seen: Counter[tuple[str, ...]] = Counter()
    rows = 0
    for raw in lines[:512]:
        rows += bool(raw)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        cells = text.split(d)
        if not text or len(cells) != len(header):
            continue
        shape = []
        for name, cell in zip(header, cells):
            if not name:
                shape.append("any")
                continue
            k = next((k for k, p in kinds.items() if p.fullmatch(cell)), None)
            if k is None:
                break
            shape.append(k)
        else:
            seen[tuple(shape)] += 1
    if not seen:
        return None, 0.0
    best, n = seen.most_common(1)[0]
    # one kind per column, optional cells and mixed numbers allowed: often all the lines
    merged = _merged(seen)
    fitting = sum(c for shape, c in seen.items() if all(map(_fits, shape, merged)))
    if fitting > n:
        return merged, fitting / rows
    return best, n / rows


def shaped_event(cells: Column, plan: CsvPlan) -> Column:
    """The JSON text of a line of ``plan.shape`` (:func:`shape_pattern`) split into
    ``cells``."""
    from pyspark.sql import functions as F

    assert plan.shape is not None
    pairs: list[Column] = []
    for i, (name, kind) in enumerate(zip(plan.header, plan.shape)):
        if not name or not kind or kind == "any":
            continue
        key = json.dumps(name, ensure_ascii=False) + ":"
        cell = F.get(cells, i)
        if kind.removesuffix("?") == "str":
            pair = F.concat(F.lit(key + '"'), cell, F.lit('"'))
        else:
            pair = F.concat(F.lit(key), cell)
        pairs.append(F.when(cell != "", pair) if kind.endswith("?") else pair)
    if not pairs:
        return F.lit("{}")
    return F.concat(F.lit("{"), F.concat_ws(",", *pairs), F.lit("}"))


# -- Spark SQL ---------------------------------------------------------------------------------
def _int_json(c: Column) -> Column:
    from pyspark.sql import functions as F

    v = F.regexp_replace(c, r"\A\+", "")
    return F.when(v == "-0", F.lit("0")).otherwise(v)


def _float_text(c: Column) -> Column:
    """A decimal literal without exponent shortened as ``repr(float(c))`` writes it when
    that is the literal's value (no sign ``+``, ``0`` before a bare point, trailing zeros of
    the fraction dropped but one)."""
    from pyspark.sql import functions as F

    t = F.regexp_replace(c, r"\A\+", "")
    t = F.regexp_replace(t, r"\A(-?)\.", "$10.")
    t = F.regexp_replace(t, r"(\.[0-9]*?)0*\z", "$1")
    return F.regexp_replace(t, r"\.\z", ".0")


#: a shortened literal (:func:`_float_text`) that is ``repr`` of its value: fixed notation
#: (0.0001 or more, below 1e15), at most 15 significant digits (counted by :func:`_float_json`)
_REPR_FIXED = r"\A-?(?:[1-9][0-9]{0,14}\.[0-9]+|0\.(?:0{0,3}[1-9][0-9]*|0))\z"


def _float_json(t: Column, bad: Column) -> Column:
    """``t`` (:func:`_float_text`) when it is ``repr(float(literal))``, else ``bad``: at most
    15 significant digits round-trip through a double exactly, and repr writes the shortest
    such literal (a trailing ``.0`` counted as a digit: only ever too careful)."""
    from pyspark.sql import functions as F

    digits = F.regexp_replace(F.regexp_replace(t, r"[-.]", ""), r"\A0+", "")
    return F.when(t.rlike(_REPR_FIXED) & (F.length(digits) <= 15), t).otherwise(bad)


_INT = r"\A[+-]?(?:0|[1-9][0-9]*)\z"
_SIMPLE_FLOAT = r"\A[+-]?(?:(?:0|[1-9][0-9]*)\.[0-9]*|\.[0-9]+)\z"
_NUMBER = r"\A[+-]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\z"
#: a control character json.dumps writes as \\u00XX (tab, backspace, form feed have short
#: escapes; line ends cannot be inside a line)
_LONG_ESCAPE = "[\\x00-\\x07\\x0b\\x0e-\\x1f]"


def _string_json(c: Column, bad: Column) -> Column:
    from pyspark.sql import functions as F

    plain = F.concat(F.lit('"'), c, F.lit('"'))
    escaped = c
    for ch, esc in (("\\", "\\\\"), ('"', '\\"'), ("\t", "\\t"), ("\b", "\\b"), ("\f", "\\f")):
        escaped = F.replace(escaped, F.lit(ch), F.lit(esc))
    return (
        F.when(~c.rlike('[\\x00-\\x1f"\\\\]'), plain)
        .when(c.rlike(_LONG_ESCAPE), bad)
        .otherwise(F.concat(F.lit('"'), escaped, F.lit('"')))
    )


#: what a cell's JSON is when Spark SQL cannot spell it as Python does (never in a JSON text)
DELEGATE = "\x00"


def cell_json(c: Column, f: Column) -> Column:
    """The JSON text of a non-empty cell ``c`` as the reader types it (:func:`infer` and
    ``json.dumps``; ``f``: :func:`_float_text` of ``c``), :data:`DELEGATE` where only
    Python says it exactly; null for an empty cell (the attribute is absent)."""
    from pyspark.sql import functions as F

    bad = F.lit(DELEGATE)
    trues = [k for k, v in _BOOLS.items() if v == "true"]
    falses = [k for k, v in _BOOLS.items() if v == "false"]
    return (
        F.when(c == "", F.lit(None).cast("string"))
        .when(c.isin(*trues), F.lit("true"))
        .when(c.isin(*falses), F.lit("false"))
        .when(c.rlike(_INT), F.when(F.length(c) > SQL_INT_DIGITS, bad).otherwise(_int_json(c)))
        .when(f.isNotNull(), _float_json(f, bad))
        .when(c.rlike(_NUMBER), bad)
        .otherwise(_string_json(c, bad))
    )


def fields(value: Column, d: str) -> Column:
    """The fields of a line that is one complete row (unquoted)."""
    from pyspark.sql import functions as F

    x = f"\\x{{{ord(d):x}}}"
    split = F.split(value, x, -1)
    tokens = F.regexp_extract_all(
        F.concat(F.lit(d), value), F.lit(f'{x}("(?:[^"]++|"")*+"|[^{x}]*+)'), F.lit(1)
    )
    unquoted = F.transform(
        tokens,
        lambda f: F.when(
            f.startswith('"'),
            F.replace(F.substring(f, 2, F.length(f) - 2), F.lit('""'), F.lit('"')),
        ).otherwise(f),
    )
    return F.when(F.instr(value, '"') > 0, unquoted).otherwise(split)


#: the share of the first rows of a file that have its shape above which the other rows
#: are read by Python (:func:`shaped_only`) rather than typed by Spark SQL cell by cell:
#: the per-cell steps cost more to compile than a few rows cost in Python
REGULAR = 0.99


def shaped_only(part: DataFrame, plan: CsvPlan, limit: int) -> DataFrame:
    """:func:`typed` without the per-cell steps: the line of the plan's shape rewritten
    into its event by one regular expression (:func:`shaped_rewrite`), the other rows
    handed to Python. A line of the shape holds no ``"`` and its event always does, so a
    line the expression left as it was is one of another shape."""
    from pyspark.sql import functions as F

    rewrite = shaped_rewrite(plan)
    assert rewrite is not None
    pattern, template = rewrite
    value = F.col("value")
    part = part.select("local", "value", F.regexp_replace(value, pattern, template).alias("e"))
    fast = (
        (F.col("e") != value) & (F.octet_length(value) <= limit) & F.is_valid_utf8(value)
    ).alias("fast")
    part = part.select("local", "value", "e", fast)
    fast = F.col("fast")
    event = F.col("e")
    for a, b in shaped_cleanup(plan):
        event = F.replace(event, F.lit(a), F.lit(b))
    return part.select(
        "local",
        F.when(fast, event).alias("event"),
        (~fast).alias("d"),
        F.when(~fast, value.cast("binary")).alias("line"),
    )


#: the marks around each pair of a rewrite with optional cells (:func:`shaped_cleanup`):
#: control characters, which neither a key's JSON nor a cell of a shape's kinds holds
_OPEN, _CLOSE = "\x01", "\x02"


def _optional(plan: CsvPlan) -> bool:
    assert plan.shape is not None
    return any(k.endswith("?") for name, k in zip(plan.header, plan.shape) if name and k != "any")


def shaped_rewrite(plan: CsvPlan) -> tuple[str, str] | None:
    """The regular expression of a line of ``plan.shape`` (:func:`shape_pattern`) with a
    group per cell of a named column, and the replacement that writes the event's JSON
    text from them (as :func:`shaped_event`); None when no cell would be in the event.
    With optional cells (a kind ``?``), each pair is written between marks, which
    :func:`shaped_cleanup` then removes with the pairs of the empty cells."""
    if plan.shape is None:
        return None
    x = _x(plan.delimiter)
    kinds = _kinds(x, r"\z")
    cells = []
    pairs: list[str] = []
    for name, kind in zip(plan.header, plan.shape):
        if not name or not kind or kind == "any":
            cells.append(f"(?:{_pattern(kinds, kind)})")
            continue
        cells.append(f"({_pattern(kinds, kind)})")
        key = json.dumps(name, ensure_ascii=False) + ":"
        quote = '"' if kind.removesuffix("?") == "str" else ""
        pairs.append(_replacement(key) + quote + f"${len(pairs) + 1}" + quote)
    if not pairs:
        return None
    if _optional(plan):
        body = "".join(_OPEN + pair + _CLOSE for pair in pairs)
    else:
        body = ",".join(pairs)
    return r"\A" + x.join(cells) + r"\z", "{" + body + "}"


def shaped_cleanup(plan: CsvPlan) -> list[tuple[str, str]]:
    """The literal replacements, in order, that make the event's JSON text of a rewrite
    with marks (:func:`shaped_rewrite`): each optional cell's pair when the cell is empty
    removed (its exact text: the key's JSON, nothing or ``""`` after it: a text cell is
    never empty otherwise), the marks between two pairs made a comma, the others dropped.
    Empty for a shape without optional cells."""
    if plan.shape is None or not _optional(plan):
        return []
    out = []
    for name, kind in zip(plan.header, plan.shape):
        if name and kind.endswith("?") and kind != "any":
            key = json.dumps(name, ensure_ascii=False) + ":"
            empty = '""' if kind == "str?" else ""
            out.append((_OPEN + key + empty + _CLOSE, ""))
    return [*out, (_CLOSE + _OPEN, ","), (_OPEN, ""), (_CLOSE, "")]


def typed(part: DataFrame, plan: CsvPlan, limit: int) -> DataFrame:
    """``part`` (``local`` passed through, ``value``: a row's line, ``fast``: whether it
    has the plan's shape) with ``event`` (its JSON text), ``d``
    (whether the row is delegated to Python) and ``line`` (its bytes, for a delegated row
    only). In
    steps of one projection each, so that no expression is computed twice; a row of the
    shape skips the per-cell steps (each a ``CASE`` on ``fast``)."""
    from pyspark.sql import functions as F

    if plan.regular and shaped_rewrite(plan) is not None:
        return shaped_only(part, plan, limit)

    def slow(c: Column) -> Column:
        return F.when(~F.col("fast"), c)

    named = [(i, name) for i, name in enumerate(plan.header) if name]
    keys: tuple[str, ...] = ("local", "value", "fast")
    split = F.split(F.col("value"), _x(plan.delimiter), -1)  # a row of the shape has no quote
    cells = F.when(F.col("fast"), split).otherwise(fields(F.col("value"), plan.delimiter))
    part = part.select(*keys, cells.alias("cells"))
    shaped = shaped_event(F.col("cells"), plan) if plan.shape is not None else F.lit(None)
    part = part.select(
        *keys,
        F.when(F.col("fast"), shaped).alias("shaped"),
        F.size("cells").alias("n"),
        *(slow(F.get("cells", i)).alias(f"c{i}") for i, _ in named),
    )
    keys = (*keys, "shaped")
    simple = [
        F.when(F.col(f"c{i}").rlike(_SIMPLE_FLOAT), _float_text(F.col(f"c{i}"))).alias(f"f{i}")
        for i, _ in named
    ]
    part = part.select(*keys, "n", *(f"c{i}" for i, _ in named), *simple)
    part = part.select(
        *keys,
        "n",
        *(slow(cell_json(F.col(f"c{i}"), F.col(f"f{i}"))).alias(f"v{i}") for i, _ in named),
    )
    values = [F.col(f"v{i}") for i, _ in named]
    pieces = [
        F.concat(F.lit(json.dumps(name, ensure_ascii=False) + ":"), v)
        for (_, name), v in zip(named, values)
    ]
    general = F.concat(F.lit("{"), F.concat_ws(",", *pieces), F.lit("}"))
    value = F.col("value")
    delegated = (
        (F.col("n") != len(plan.header))
        | (F.octet_length(value) > limit)
        | ~F.is_valid_utf8(value)
        | (F.instr(value, DELEGATE) > 0)
        | F.coalesce(F.array_contains(F.array(*values), DELEGATE), F.lit(False))
    )
    part = part.select(
        "local",
        "value",
        F.when(F.col("fast"), F.col("shaped")).otherwise(general).alias("event"),
        F.when(F.col("fast"), F.lit(False)).otherwise(delegated).alias("d"),
    )
    return part.select(
        "local",
        F.when(~F.col("d"), F.col("event")).alias("event"),
        "d",
        F.when(F.col("d"), F.col("value").cast("binary")).alias("line"),
    )


def incomplete(value: Column, d: str) -> Column:
    """Whether a line holding quotes is not one complete row (or too long to check)."""
    from pyspark.sql import functions as F

    quotes = F.length(value) - F.length(F.replace(value, F.lit('"'), F.lit("")))
    checked = (F.octet_length(value) <= CHECKED_LINE_BYTES) & (quotes <= CHECKED_QUOTES)
    complete = checked & value.rlike(_row_pattern(d))
    return (F.instr(value, '"') > 0) & ~F.coalesce(complete, F.lit(False))


# -- Python for the rows Spark SQL does not type -------------------------------------------------
def delegate(
    plans: Mapping[str, Plan], limits: ReadLimits
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function reading delegated rows (``label``, ``position``, ``line``)
    with the Python reader: each as the one row after its file's header (a CSV file), or
    as the one line of its own (JSON lines: :meth:`.native_jsonl.JsonlPlan.one`)."""
    from pubsift.adapters.readers.dispatch import read_input
    from pubsift.adapters.spark.ingest import BATCH_ROWS, _arrow_schema, _rows, event_dumper

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        dump = event_dumper()
        schema = _arrow_schema()
        out: list[dict[str, Any]] = []
        for batch in batches:
            for label, position, line in zip(
                batch.column("label").to_pylist(),
                batch.column("position").to_pylist(),
                batch.column("line").to_pylist(),
            ):
                out.extend(
                    _rows(iter(read_one(plans[label], position, line, limits, read_input)), dump)
                )
                if len(out) >= BATCH_ROWS:
                    yield pa.RecordBatch.from_pylist(out, schema=schema)
                    out = []
        if out:
            yield pa.RecordBatch.from_pylist(out, schema=schema)

    return run


def read_one(
    plan: Plan, position: int, line: bytes, limits: ReadLimits, read_input: Callable[..., Any]
) -> list[Event | Quarantined]:
    """What the Python reader gives for the delegated row or line ``line`` at ``position``
    of ``plan``'s file."""
    if isinstance(plan, CsvPlan):
        return one_row(plan, position, line, limits, read_input)
    return plan.one(position, line, limits, read_input)


def one_row(
    plan: CsvPlan, position: int, line: bytes, limits: ReadLimits, read_input: Callable[..., Any]
) -> list[Event | Quarantined]:
    """What the Python reader gives for ``line`` at ``position`` of ``plan``'s file."""
    data = plan.header_line + b"\n" + line
    source = replace(plan.source, delimiter=plan.delimiter)
    inp = Input(plan.label, source, lambda: io.BytesIO(data), len(data))
    got = []
    for item in read_input(inp, limits):
        if item.position != 1:
            raise AssertionError(f"{plan.label}: a row read alone gave position {item.position}")
        got.append(replace(item, position=position))
    return got


# -- the stage ---------------------------------------------------------------------------------
#: Python tasks reading the delegated rows, at most
DELEGATE_TASKS = 8
#: delegated rows up to this many are read on the driver (no Python worker to start)
ON_DRIVER = 2000
#: the bits of ``monotonically_increasing_id`` numbering the rows of a partition
_ROW_BITS = (1 << 33) - 1
#: files read by one Spark job (one scan each, unioned; one observation each)
FILES_PER_JOB = 64
#: the partition of the scratch dataset holding the delegated rows
_DELEGATED = "_delegated"


#: what :func:`write_native` converts: a CSV or a JSON-lines file's plan
Plan = Any  # CsvPlan | native_jsonl.JsonlPlan (imported lazily: Spark SQL helpers)


@dataclass
class Written:
    """What :func:`write_native` did: ``counts`` of the events it wrote and of the files it
    read (``(kind, source, model, reason, count)``), the converted rows of the delegated
    rows (``CONVERTED_SCHEMA``): ``rows`` when they were read on the driver, else ``rest``
    (lazy: read from ``scratch``), and ``left``: the paths left to the Python reader (a
    line that is not one complete row)."""

    counts: list[tuple[str, str, str | None, str | None, int]]
    rest: DataFrame | None
    rows: list[tuple[Any, ...]]
    left: set[str]


def _lines(spark: SparkSession, path: str, plan: CsvPlan, block: int) -> DataFrame:
    """A file's non-blank lines numbered from 0 (``local``): each block of ``block`` bytes
    (the whole file unless it has ``counts``) is one partition, its lines numbered from the
    lines before it."""
    from pubsift.adapters.spark.ingest import hadoop_path
    from pubsift.adapters.spark.native_jsonl import block_bases
    from pyspark.sql import functions as F

    local = F.monotonically_increasing_id().bitwiseAND(_ROW_BITS)
    if plan.counts is not None:
        bases = block_bases(plan.counts, plan.size, block)
        if len(bases) > 1:
            lookup = F.create_map(*(F.lit(x) for kv in sorted(bases.items()) for x in kv))
            local = F.element_at(lookup, F.input_file_block_start()) + local
    return (
        spark.read.text(hadoop_path(plan.copy or path))
        .where(F.col("value") != "")
        .select("value", local.alias("local"))
    )


def _incomplete_files(spark: SparkSession, plans: Mapping[str, CsvPlan]) -> set[str]:
    """The files holding a line that is not one complete row (one job over the files that
    hold quotes at all)."""
    from pubsift.adapters.spark.ingest import hadoop_path
    from pyspark.sql import functions as F

    quoted = [p for p, plan in plans.items() if plan.quotes]
    bad: set[str] = set()
    for at in range(0, len(quoted), FILES_PER_JOB):
        chunk = quoted[at : at + FILES_PER_JOB]
        frames = [
            spark.read.text(hadoop_path(plans[p].copy or p))
            .where(incomplete(F.col("value"), plans[p].delimiter))
            .select(F.lit(i).alias("i"))
            .limit(1)
            for i, p in enumerate(chunk)
        ]
        df = frames[0]
        for f in frames[1:]:
            df = df.unionAll(f)
        bad |= {chunk[r[0]] for r in df.collect()}
    return bad


def write_native(
    spark: SparkSession,
    plans: Mapping[str, Plan],
    limits: ReadLimits,
    events: str,
    scratch: str,
) -> Written:
    """Convert the files ``plans`` maps by path (CSV and JSON-lines plans): their events
    written as Parquet files of the event store's ``events`` directory
    (``events/model=records/``), counted by an observation of the same scan, and their
    delegated rows written to ``scratch`` (read back for the Python reader:
    ``Written.rest``; the caller removes ``scratch`` once it wrote what ``rest`` gives).

    CSV: each file is one scan and one partition (the split size set above any file's
    while the job runs), so that ``monotonically_increasing_id`` numbers its non-blank
    lines from 0 in order: a line's rank is its position, the header's 0. Files holding
    quotes are checked first (:func:`incomplete`, one job): one with a line that is not a
    complete row is left to the Python reader. Then one job per :data:`FILES_PER_JOB`
    files reads, types and writes them, each file observed (events, delegated rows, lines,
    the last line's rank: a check that its lines were numbered in one partition).
    JSON lines (:mod:`.native_jsonl`): in jobs of their own, the plain files read in
    blocks of one partition each, numbered by the lines the driver counted before each
    block; each file observed alike (its lines and its last line's number checked against
    the driver's count)."""
    from pubsift.adapters.spark.native_jsonl import JsonlPlan

    csv_plans = {p: plan for p, plan in plans.items() if isinstance(plan, CsvPlan)}
    jsonl_plans = {p: plan for p, plan in plans.items() if isinstance(plan, JsonlPlan)}
    conf = {
        # the two partitions of the scratch dataset written side by side, not sorted apart
        "spark.sql.optimizer.plannedWrite.enabled": "false",
        "spark.sql.maxConcurrentOutputFileWriters": "2",
    }
    saved = {
        k: spark.conf.get(k, None)
        for k in (*conf, "spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    }
    for k, v in conf.items():
        spark.conf.set(k, v)
    counts: list[tuple[str, str, str | None, str | None, int]] = []
    delegated = 0
    left: set[str] = set()
    try:
        if csv_plans:
            left, n = _write_csv(spark, csv_plans, limits, scratch, counts)
            delegated += n
        if jsonl_plans:
            delegated += _write_jsonl(spark, jsonl_plans, limits, scratch, counts)
    finally:
        for key, old in saved.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)
    return _delegated(spark, plans, limits, events, scratch, counts, delegated, left)


def _file_split(spark: SparkSession, size: int) -> None:
    """Files read in blocks of ``size`` bytes, each block a partition of its own."""
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(size))
    spark.conf.set("spark.sql.files.openCostInBytes", str(size))


#: the writer's options of the event store's files: events are nearly all distinct, so a
#: Parquet dictionary of them only costs its attempt
WRITE_OPTIONS = {"parquet.enable.dictionary#event": "false"}


def _append(frames: list[DataFrame], scratch: str) -> None:
    df = frames[0]
    for f in frames[1:]:
        df = df.unionAll(f)
    writer = df.write.mode("append").options(**WRITE_OPTIONS)
    writer.partitionBy("model").parquet("file://" + scratch)


def _stored(rows: DataFrame, label: str, data: Column, position: Column) -> DataFrame:
    """The rows of the scratch dataset: events, delegated rows (base64) apart."""
    from pyspark.sql import functions as F

    return rows.where(data).select(
        F.when(F.col("d"), F.lit(_DELEGATED)).otherwise("records").alias("model"),
        F.lit(label).alias("source"),
        position.alias("position"),
        F.when(F.col("d"), F.base64("line")).otherwise(F.col("event")).alias("event"),
    )


def _counted(
    counts: list[tuple[str, str, str | None, str | None, int]], label: str, got: Mapping[str, Any]
) -> int:
    counts.append(("seen", label, None, None, 1))
    if got["events"]:
        counts.append(("event", label, "records", None, got["events"]))
    return int(got["delegated"])


def _write_csv(
    spark: SparkSession,
    plans: Mapping[str, CsvPlan],
    limits: ReadLimits,
    scratch: str,
    counts: list[tuple[str, str, str | None, str | None, int]],
) -> tuple[set[str], int]:
    """The CSV part of :func:`write_native`: the paths left to Python, the rows delegated."""
    from pubsift.adapters.spark.ingest import _has_context
    from pubsift.adapters.spark.native_jsonl import block_size
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    cores = spark.sparkContext.defaultParallelism if _has_context(spark) else 2
    limit = limits.max_record_bytes
    delegated = 0
    left = _incomplete_files(spark, plans) if any(p.quotes for p in plans.values()) else set()
    todo = [p for p in plans if p not in left and plans[p].counts is None]
    split = [p for p in plans if p not in left and plans[p].counts is not None]
    jobs = [todo[at : at + FILES_PER_JOB] for at in range(0, len(todo), FILES_PER_JOB)]
    jobs += [split[at : at + FILES_PER_JOB] for at in range(0, len(split), FILES_PER_JOB)]
    for chunk in jobs:
        # a file is one partition, or (plain files counted by the probe) each of its blocks
        whole = plans[chunk[0]].counts is None
        block = 1 << 50 if whole else block_size([plans[p] for p in chunk], cores)
        _file_split(spark, block)
        observed = []
        frames = []
        for i, path in enumerate(chunk):
            plan = plans[path]
            lines = _lines(spark, path, plan, block)
            fast = F.lit(False)
            if plan.shape is not None and not plan.regular:
                fast = (
                    F.col("value").rlike(shape_pattern(plan.shape, plan.delimiter))
                    & (F.octet_length("value") <= limit)
                    & F.is_valid_utf8("value")
                )
            rows = typed(lines.select("local", "value", fast.alias("fast")), plan, limit)
            obs = Observation(f"csv{i}")
            data = F.col("local") > 0
            rows = rows.observe(
                obs,
                F.count_if(data & ~F.col("d")).alias("events"),
                F.count_if(data & F.col("d")).alias("delegated"),
                F.count(F.lit(1)).alias("lines"),
                F.max("local").alias("last"),
            )
            observed.append((path, obs))
            frames.append(_stored(rows, plan.label, data, F.col("local")))
        _append(frames, scratch)
        for path, obs in observed:
            got = obs.get
            want = plans[path].rows
            if got["lines"] != want or (got["lines"] and got["last"] != want - 1):
                raise AssertionError(
                    f"{path}: {got['lines']} lines numbered up to {got['last']}, the probe "
                    f"counted {want}"
                )
            delegated += _counted(counts, plans[path].label, got)
    return left, delegated


def _write_jsonl(
    spark: SparkSession,
    plans: Mapping[str, Any],
    limits: ReadLimits,
    scratch: str,
    counts: list[tuple[str, str, str | None, str | None, int]],
) -> int:
    """The JSON-lines part of :func:`write_native`: the lines delegated."""
    from pubsift.adapters.spark.ingest import _has_context
    from pubsift.adapters.spark.native_jsonl import block_size, converted, lines_of
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    cores = spark.sparkContext.defaultParallelism if _has_context(spark) else 2
    limit = limits.max_record_bytes
    delegated = 0
    todo = list(plans)
    for at in range(0, len(todo), FILES_PER_JOB):
        chunk = todo[at : at + FILES_PER_JOB]
        block = block_size([plans[p] for p in chunk], cores)
        _file_split(spark, block)
        observed = []
        frames = []
        for i, path in enumerate(chunk):
            plan = plans[path]
            seen = Observation(f"jsonl_lines{i}")
            lines = lines_of(spark, path, plan, block).observe(
                seen, F.count(F.lit(1)).alias("lines"), F.max("position").alias("last")
            )
            rows = converted(lines, limit, plan.keys)
            obs = Observation(f"jsonl{i}")
            rows = rows.observe(
                obs,
                F.count_if(~F.col("d")).alias("events"),
                F.count_if(F.col("d")).alias("delegated"),
            )
            observed.append((path, seen, obs))
            frames.append(_stored(rows, plan.label, F.lit(True), F.col("position")))
        _append(frames, scratch)
        for path, seen, obs in observed:
            got, numbered = obs.get, seen.get
            want = plans[path].lines
            if numbered["lines"] != want or (want and numbered["last"] != want):
                raise AssertionError(
                    f"{path}: {numbered['lines']} lines numbered up to {numbered['last']}, "
                    f"the driver counted {want}"
                )
            delegated += _counted(counts, plans[path].label, got)
    return delegated


def _delegated(
    spark: SparkSession,
    plans: Mapping[str, Plan],
    limits: ReadLimits,
    events: str,
    scratch: str,
    counts: list[tuple[str, str, str | None, str | None, int]],
    delegated: int,
    left: set[str],
) -> Written:
    """The events moved into the event store, the delegated rows read (or planned)."""
    from pubsift.adapters.spark.store import CONVERTED_SCHEMA
    from pyspark.sql import functions as F

    _move(os.path.join(scratch, "model=records"), os.path.join(events, "model=records"))
    rest = None
    got_rows: list[tuple[Any, ...]] = []
    if delegated:
        taken = {plans[p].label: plans[p] for p in plans if p not in left}
        where = os.path.join(scratch, f"model={_DELEGATED}")
        if delegated > ON_DRIVER:
            back = spark.read.schema("source string, position long, event string").parquet(
                "file://" + where
            )
            back = back.select(
                F.col("source").alias("label"), "position", F.unbase64("event").alias("line")
            )
            rest = back.coalesce(DELEGATE_TASKS).mapInArrow(
                delegate(taken, limits), CONVERTED_SCHEMA
            )
        else:  # read here, by pyarrow: no Spark job, no Python worker started for them
            import base64

            import pyarrow.parquet as pq
            from pubsift.adapters.readers.dispatch import read_input
            from pubsift.adapters.spark.ingest import _rows, event_dumper

            dump = event_dumper()
            back = pq.read_table(where, columns=["source", "position", "event"]).to_pydict()
            got_rows = [
                tuple(row.values())
                for label, position, text in zip(back["source"], back["position"], back["event"])
                for row in _rows(
                    iter(
                        read_one(taken[label], position, base64.b64decode(text), limits, read_input)
                    ),
                    dump,
                )
            ]
    return Written(counts, rest, got_rows, left)


def _move(src: str, dst: str) -> None:
    """The Parquet files of ``src`` moved into ``dst`` (created)."""
    if not os.path.isdir(src):
        return
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(src):
        if not name.startswith((".", "_")):
            os.replace(os.path.join(src, name), os.path.join(dst, name))


def probe_listing(
    listing: Any,
    limits: ReadLimits,
    csv: bool = True,
    jsonl: bool = False,
    spill: str | None = None,
) -> dict[str, Plan]:
    """The plans of a listing's files Spark reads itself (files read once, by one source):
    CSV files (``csv``), JSON-lines files (``jsonl``: :func:`.native_jsonl.probe`); large
    ``.gz`` files kept decompressed in the directory ``spill`` (:mod:`.spill`; None: read
    as they are, one task each)."""
    from pubsift.adapters.spark import native_jsonl
    from pubsift.adapters.spark.ingest import task_opens

    budget = Budget(spill) if spill is not None else None
    plans: dict[str, Plan] = {}
    for path, pairs in listing.files.items():
        size = listing.sizes.get(path)
        if len(pairs) != 1 or task_opens(path, size):
            continue
        label, source = pairs[0]
        plan: Plan = None
        if csv:
            plan = probe(path, label, source, size, limits, budget)
        if plan is None and jsonl:
            plan = native_jsonl.probe(path, label, source, size, limits, budget)
        if plan is not None:
            plans[path] = plan
    return plans


__all__ = [
    "CsvPlan",
    "Plan",
    "Written",
    "cell_json",
    "delegate",
    "probe",
    "probe_listing",
    "read_one",
    "write_native",
]
