"""JSON-lines files converted by Spark itself: its text source reads the lines, Spark SQL
checks them and writes each event's JSON text, and only the lines whose answer it cannot
give exactly cross into Python.

The Python reader (:mod:`pubsift.adapters.readers.jsonlines`, :mod:`pubsift.core.strict_json`'s
policy) defines what a JSON-lines file gives; this module gives **the same events and
quarantine records** (the same JSON text, positions, reasons, messages and excerpts) for
the files it takes (docs/spark.md, "JSON lines read by Spark"):

* **Files taken** (:func:`probe`, on the driver): the source is plain records (no
  ``columns``, no publisher side, model ``records``, format ``jsonl`` or none), the file
  a plain or ``.gz`` file the JSON-lines reader would read (``.jsonl``, ``.ndjson``, a
  ``.json`` whose content is JSON lines), UTF-8 (no other encoding, no UTF-16/32 mark); a
  ``.gz`` is decompressed once on the driver through the bomb guard (corrupt, truncated or
  over the limits: the Python reader takes it, keeping what precedes the damage). A file
  whose last line ends in ``\\r`` without ``\\n`` is left to the Python reader (it keeps
  that ``\\r``, which a line end would drop).
* **Lines**: Spark's text source with ``\\n`` as the only line end (``\\r\\n`` ends a line
  too: the ``\\r`` is dropped, as the reader drops it); a UTF-8 byte-order mark at the
  start of the file is skipped by the source, as by the reader. A line's position is its
  number: a plain file is read in blocks (:func:`block_size`), each one partition, and
  the driver counted the lines before each block while probing (:attr:`JsonlPlan.counts`);
  a line's number is its block's count plus its rank in the block
  (``monotonically_increasing_id``); a ``.gz`` of more than :data:`MIN_BLOCK`
  decompressed bytes is read so too, from the plain copy the probe kept while
  decompressing it (:mod:`.spill`), a smaller one as one block.
* **Lines converted by Spark SQL** (:func:`converted`): a line that is a JSON object in
  the form whose text ``json.dumps(obj, ensure_ascii=False, separators=(",", ":"))`` writes
  again once the spaces between tokens are dropped: strings without ``\\u`` or ``\\/``
  escapes and without control characters, integers of at most :data:`SQL_INT_DIGITS`
  digits (not ``-0``), decimals in ``repr``'s own fixed notation with at most 15
  significant digits, ``true``/``false``/``null``, nesting at most :data:`ROUNDS` levels,
  no key given twice anywhere in the line, no empty key, no dotted key in a nested event.
  Checked by regular expressions: the tokens replaced by one character each, the
  skeleton left is reduced level by level (pairs, lists, then empty containers) and must
  end as one value that was an object. Its event is the line without those spaces.
  Where most of the first lines are flat objects of the same keys in the same order
  (:func:`shape_of`), a line of that shape is rewritten into its event by one regular
  expression (:func:`shape_rewrite`) and skips those steps.
* **Lines handed to Python**: every other non-blank line (invalid UTF-8, a NUL, beyond
  ``max_record_bytes``: its first ``max_record_bytes + 1`` bytes are enough; JSON syntax,
  not an object, NaN, a duplicate key, deep nesting, exponents, big integers, escapes the
  writing changes, what the records model refuses). Each is read by the Python reader
  itself, as the second line of a file whose first is blank (:meth:`JsonlPlan.one`), its
  outcome given the line's number.

The default of the Spark job (``Settings(native_jsonl=True)``, ``--jsonl-reader spark``);
the stage that writes the events is :func:`pubsift.adapters.spark.native.write_native`.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pubsift.adapters.readers.inputs import Input, expand
from pubsift.adapters.readers.limits import ReadLimits
from pubsift.adapters.readers.outcomes import Event, Quarantined
from pubsift.adapters.readers.source import Source
from pubsift.adapters.spark.spill import Budget, Spill

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

#: Hadoop's codecs by file suffix: a file named so is decompressed by Spark's text source
#: (left to the Python readers, CSV and JSON lines alike)
HADOOP_CODECS = (".bz2", ".deflate", ".lz4", ".snappy", ".zst", ".zstd", ".br", ".lzo", ".xz")
#: the driver counts lines at every multiple of this many bytes; blocks are multiples
COUNT_STEP = 1 << 20
#: a plain file is read in blocks of at least this many bytes
MIN_BLOCK = 2 << 20
#: levels of nesting Spark SQL reduces (deeper lines are read by Python)
ROUNDS = 5
#: digits of an integer Spark SQL passes through (the records model holds 4,300)
SQL_INT_DIGITS = 4000
#: lines holding more backslashes than this are read by Python (Java's regex engine
#: recurses per escape)
MAX_ESCAPES = 4096
#: the first bytes of a file in which the usual keys are looked for (:func:`shape_of`)
HEAD_BYTES = 1 << 16
#: the first lines in which they are looked for
SHAPE_LINES = 512
#: the bits of ``monotonically_increasing_id`` numbering the rows of a partition
_ROW_BITS = (1 << 33) - 1
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class JsonlPlan:
    """How Spark reads one JSON-lines file: its label and source (format ``jsonl``),
    whether it is gzipped (one block), its size and ``counts``: the lines starting before
    multiple of :data:`COUNT_STEP` bytes (``counts[j]``: the lines whose first byte is at
    ``j * COUNT_STEP`` or before)."""

    label: str
    source: Source
    gz: bool
    size: int
    counts: tuple[int, ...]
    #: the lines of the file (the last one without line end counted)
    lines: int = 0
    #: the keys of most of the first lines, in order, when those are flat objects
    #: (:func:`shape_of`)
    keys: tuple[str, ...] | None = None
    #: a ``.gz`` kept decompressed (:mod:`.spill`): the plain file Spark reads in its place
    #: (in blocks: ``gz`` is then False)
    copy: str | None = None

    def bases(self, block: int) -> dict[int, int]:
        """The lines before each block of ``block`` bytes (a multiple of
        :data:`COUNT_STEP`), by the block's first byte: Hadoop's line reader gives a block
        the lines that start after its first byte, up to and including the one starting
        at its end, so the lines before block ``[s, e)`` are those starting at ``s`` or
        before."""
        return {0: 0} if self.gz else block_bases(self.counts, self.size, block)

    def one(
        self, position: int, line: bytes, limits: ReadLimits, read_input: Callable[..., Any]
    ) -> list[Event | Quarantined]:
        """What the Python reader gives for ``line`` at ``position``: read as the second
        line of a file whose first line is blank (so that a byte-order mark it starts
        with stays part of it, and a ``\\r`` it ends with too)."""
        data = b"\n" + line
        inp = Input(self.label, self.source, lambda: io.BytesIO(data), len(data))
        got = []
        for item in read_input(inp, limits):
            if item.position != 2:
                raise AssertionError(f"{self.label}: a line read alone gave {item.position}")
            got.append(replace(item, position=position))
        return got


def _replacement(text: str) -> str:
    """``text`` as itself in a replacement of Java's ``Matcher`` (``$`` and ``\\`` escaped;
    the CSV shapes of :mod:`.native` use it too)."""
    return re.sub(r"([\\$])", r"\\\1", text)


def probe(
    path: str,
    label: str,
    source: Source,
    size: int | None,
    limits: ReadLimits,
    spill: Budget | None = None,
) -> JsonlPlan | None:
    """The plan of a file Spark reads exactly as the JSON-lines reader does, None for a
    file left to the Python reader (the module's docstring); a ``.gz`` it takes kept
    decompressed in ``spill``'s directory when it is large enough (:mod:`.spill`)."""
    gz = path.endswith(".gz")
    with Spill(spill if gz else None, MIN_BLOCK) as copy:
        plan = _probe(path, label, source, size, limits, copy)
        kept = copy.keep() if plan is not None and gz else None
        return replace(plan, gz=False, copy=kept) if plan is not None and kept else plan


def _probe(
    path: str, label: str, source: Source, size: int | None, limits: ReadLimits, copy: Spill
) -> JsonlPlan | None:
    from pubsift.adapters.readers.bombguard import compression_of
    from pubsift.adapters.readers.dispatch import reader_for
    from pubsift.adapters.readers.jsonlines import JsonLinesReader
    from pubsift.adapters.readers.lines import UTF8, codec_for

    if source.columns or source.publisher is not None or source.model not in (None, "records"):
        return None
    if source.format not in (None, "jsonl"):
        return None
    gz = path.endswith(".gz")
    if compression_of(label) != (".gz" if gz else None) or path.lower().endswith(HADOOP_CODECS):
        return None
    try:
        found = list(expand(source, label, lambda: open(path, "rb"), size, limits, file=path))  # noqa: SIM115
        if len(found) != 1 or not isinstance(found[0], Input):
            return None
        inp = found[0]
        if not isinstance(reader_for(inp), JsonLinesReader):
            return None
        counts = [1]
        total = 0
        lines = 0
        last = b""
        head = b""
        first = b""
        with inp.open() as fh:
            # the whole stream once (a .gz: corrupt, truncated or over a limit -> Python),
            # the lines counted at every step
            while chunk := _read(fh, COUNT_STEP):
                copy.write(chunk)
                if not head:
                    head, first = chunk[:4], chunk[:HEAD_BYTES]
                lines += chunk.count(b"\n")
                total += len(chunk)
                last = chunk[-1:]
                # lines starting at the next step or before: the first, and one after
                # each \n before the step
                counts.append(1 + lines)
        if codec_for(head, source.encoding) != UTF8:
            return None
        if last == b"\r":  # its last line keeps the \r (no line end follows it)
            return None
    except Exception:  # whatever it is, the Python reader reports it
        return None
    return JsonlPlan(
        inp.name,
        replace(source.with_path(inp.name), format="jsonl"),
        gz,
        total,
        tuple(counts),
        lines + (last not in (b"", b"\n")),
        shape_of(first.removeprefix(_BOM)),
    )


def shape_of(head: bytes) -> tuple[str, ...] | None:
    """The key sequence of most (half or more) of the non-blank complete lines of
    ``head``, when those lines are objects of distinct non-empty keys and scalar values;
    else None."""
    import json
    from collections import Counter

    seen: Counter[tuple[str, ...]] = Counter()
    rows = 0
    for raw in head.split(b"\n")[:-1][:SHAPE_LINES]:
        if not raw.strip():
            continue
        rows += 1
        try:
            obj = json.loads(raw.decode("utf-8"), object_pairs_hook=lambda p: ("{}", p))
        except ValueError:
            continue
        if type(obj) is not tuple:
            continue
        keys = tuple(k for k, _ in obj[1])
        scalars = all(k and not isinstance(v, (tuple, list)) for k, v in obj[1])
        if scalars and len(set(keys)) == len(keys):
            seen[keys] += 1
    if not seen:
        return None
    keys, n = seen.most_common(1)[0]
    return keys if keys and 2 * n >= rows else None


def _read(fh: Any, n: int) -> bytes:
    """``n`` bytes of ``fh``, fewer only at its end."""
    out = fh.read(n)
    while out and len(out) < n and (more := fh.read(n - len(out))):
        out += more
    return out


def block_bases(counts: Sequence[int], size: int, block: int) -> dict[int, int]:
    """The lines before each block of ``block`` bytes of a file of ``size`` bytes, by the
    block's first byte, from ``counts`` (the lines starting at each multiple of
    :data:`COUNT_STEP` or before; ``block`` is a multiple of it)."""
    out = {0: 0}
    for start in range(block, size, block):
        out[start] = counts[start // COUNT_STEP]
    return out


def block_size(plans: Sequence[Any], parallelism: int) -> int:
    """The block of one job over ``plans`` (with ``size`` and ``gz``): the plain files'
    bytes shared by the cores, at least :data:`MIN_BLOCK`, a multiple of
    :data:`COUNT_STEP`."""
    plain = sum(p.size for p in plans if not p.gz)
    share = -(-plain // max(1, parallelism))
    return max(MIN_BLOCK, -(-share // COUNT_STEP) * COUNT_STEP)


# -- Spark SQL ---------------------------------------------------------------------------------
# placeholders of the skeleton: control characters, which a line Spark converts never holds
_S, _V, _P = "\\x01", "\\x02", "\\x03"
#: a string whose escapes json.dumps writes again as they are
_STRING = r'"[^"\\\x00-\x1f]*+(?:\\["\\bfnrt][^"\\\x00-\x1f]*+)*+"'
#: any string (the lines converted hold only the strings above)
_ANY_STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
#: numbers written as json.dumps writes their value (repr's fixed notation, at most 15
#: significant digits, for decimals), and the literals
_VALUE = (
    r"-?(?:[1-9](?=[0-9.]{2,15}(?![0-9.]))[0-9]*+\.(?:[0-9]*[1-9]|0)"
    r"|0\.(?:0{0,3}[1-9](?:[0-9]{0,13}[1-9])?|0))"
    rf"|-?[1-9][0-9]{{0,{SQL_INT_DIGITS - 1}}}|0|true|false|null"
)
_FLAT = rf"\A\{{(?:{_S}:[{_S}{_V}](?:,{_S}:[{_S}{_V}])*+)?\}}\z"


def skeleton(text: Column) -> Column:
    """The tokens of ``text`` replaced: strings by ``\\x01``, numbers and literals by
    ``\\x02``; the spaces between them dropped."""
    from pyspark.sql import functions as F

    sk = F.regexp_replace(text, _STRING, "\x01")
    sk = F.regexp_replace(sk, _VALUE, "\x02")
    return F.regexp_replace(sk, r"[ \t\r]++", "")


def reduced(sk: Column) -> Column:
    """``sk`` after :data:`ROUNDS` rounds, each: key-value pairs to ``\\x03``, lists of
    pairs and of values to their first, empty containers to a value."""
    from pyspark.sql import functions as F

    for _ in range(ROUNDS):
        sk = F.regexp_replace(sk, f"{_S}:[{_S}{_V}]", "\x03")
        sk = F.regexp_replace(sk, f"(?<={_P}),{_P}(?=[,}}])", "")
        sk = F.regexp_replace(sk, f"(?<=[{_S}{_V}]),[{_S}{_V}](?=[,\\]])", "")
        sk = F.regexp_replace(sk, f"\\{{{_P}?\\}}|\\[[{_S}{_V}]?\\]", "\x02")
    return sk


def shape_rewrite(keys: tuple[str, ...]) -> tuple[str, str]:
    """The regular expression of a flat object of ``keys`` in this order, spaces between
    tokens allowed, each value a string or number or literal in the form json.dumps
    writes again (a group each), and the replacement writing its event after a
    ``\\x01`` (the mark of a line it matched: a line that holds one is never matched)."""
    ws = "[ \\t\\r]*+"
    value = f"({_STRING}|{_VALUE})"
    pairs = []
    out = []
    for i, key in enumerate(keys, 1):
        literal = json.dumps(key, ensure_ascii=False)
        quoted = "".join(
            c if c.isascii() and c.isalnum() else f"\\x{{{ord(c):x}}}" for c in literal
        )
        pairs.append(f"{quoted}{ws}:{ws}{value}")
        out.append(_replacement(literal) + f":${i}")
    pattern = f"\\A{ws}\\{{{ws}" + f"{ws},{ws}".join(pairs) + f"{ws}\\}}{ws}\\z"
    return pattern, "\x01{" + ",".join(out) + "}"


def converted(lines: DataFrame, limit: int, keys: tuple[str, ...] | None = None) -> DataFrame:
    """``lines`` (``position``, ``value``: the line as the text source gives it) with
    ``event`` (its JSON text, for a line Spark SQL converts), ``d`` (whether Python reads
    it) and ``line`` (its bytes, for those), the blank lines dropped. A line of the flat
    object of ``keys`` (the file's usual lines) is rewritten by one regular expression
    (:func:`shape_rewrite`); the others take the general steps (each a ``CASE`` on that)."""
    from pyspark.sql import functions as F

    value = F.col("value")
    cr = value.endswith("\r")
    size = F.octet_length(value) - F.when(cr, 1).otherwise(0)
    part = lines.select(
        "position",
        value,
        size.alias("size"),
        F.when(cr, F.regexp_replace(value, "\r\\z", "")).otherwise(value).alias("text"),
    )
    text = F.col("text")
    big = F.col("size") > limit
    # blank lines (spaces, tabs, \r, \v, \f only) dropped: trimmed, not matched by a regular
    # expression (which would decode every line into a Java string first)
    part = part.where(big | (F.ltrim(text, F.lit(" \t\r\x0b\x0c")) != ""))
    if keys:
        pattern, template = shape_rewrite(keys)
        part = part.select(
            "position",
            "value",
            "size",
            "text",
            F.regexp_replace(text, pattern, template).alias("e"),
        )
        fast = (
            ~big & F.col("e").startswith("\x01") & ~text.startswith("\x01") & F.is_valid_utf8(value)
        )
        part = part.select(
            "position",
            "value",
            "size",
            "text",
            F.when(fast, F.col("e")).alias("e"),
            fast.alias("fast"),
        )
    else:
        part = part.select(
            "position",
            "value",
            "size",
            "text",
            F.lit(None).cast("string").alias("e"),
            F.lit(False).alias("fast"),
        )
    fast = F.col("fast")
    checked = (
        F.is_valid_utf8(value)
        & ~text.rlike("[\\x00-\\x08\\x0a-\\x0c\\x0e-\\x1f]")
        & ((F.length(text) - F.length(F.replace(text, F.lit("\\"), F.lit("")))) <= MAX_ESCAPES)
    )
    part = part.select(
        "position",
        "value",
        "size",
        "text",
        "e",
        "fast",
        F.when(~fast & ~big & checked, skeleton(text)).alias("sk"),
    )
    sk = F.col("sk")
    flat = sk.rlike(_FLAT)
    shaped = sk.startswith("{") & F.when(flat, F.lit(True)).otherwise(reduced(sk) == "\x02")
    part = part.select(
        "position",
        "value",
        "size",
        "e",
        "fast",
        F.when(shaped, F.regexp_replace(text, f"({_ANY_STRING})|[ \\t\\r]++", "$1")).alias("c"),
        flat.alias("flat"),
    )
    names = F.regexp_extract_all(F.col("c"), F.lit(f"({_ANY_STRING})(?=:)"), F.lit(1))
    part = part.select("position", "value", "size", "e", "fast", "c", "flat", names.alias("keys"))
    names = F.col("keys")
    ok = (
        F.col("c").isNotNull()
        & (F.size(F.array_distinct(names)) == F.size(names))
        & ~F.array_contains(names, '""')
        # no dotted key in a nested event (the keys joined: a higher-order function such
        # as exists() is not compiled, and makes every row cross into interpreted code)
        & (F.col("flat") | (F.instr(F.array_join(names, ","), ".") == 0))
    )
    ok = fast | F.coalesce(ok, F.lit(False))
    binary = value.cast("binary")
    return part.select(
        "position",
        F.when(fast, F.substr(F.col("e"), F.lit(2))).when(ok, F.col("c")).alias("event"),
        (~ok).alias("d"),
        F.when(
            ~ok, F.substring(binary, 1, F.least(F.col("size"), F.lit(limit + 1)).cast("int"))
        ).alias("line"),
    )


def lines_of(spark: SparkSession, path: str, plan: JsonlPlan, block: int) -> DataFrame:
    """The file's lines (``value``) with their numbers (``position``, from 1), read in
    blocks of ``block`` bytes (one partition each: the caller's settings)."""
    from pubsift.adapters.spark.ingest import hadoop_path
    from pyspark.sql import functions as F

    bases = plan.bases(block)
    base = F.element_at(
        F.create_map(*(F.lit(x) for kv in sorted(bases.items()) for x in kv)),
        F.input_file_block_start(),
    )
    return (
        spark.read.option("lineSep", "\n")
        .text(hadoop_path(plan.copy or path))
        .select(
            "value",
            (base + F.monotonically_increasing_id().bitwiseAND(_ROW_BITS) + 1).alias("position"),
        )
    )


__all__ = ["JsonlPlan", "block_size", "converted", "lines_of", "probe"]
