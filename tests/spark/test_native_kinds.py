"""The cell kinds of the CSV shapes read by Spark (``pubsift.adapters.spark.native._kinds``)
against the CSV reader's own typing (``pubsift.adapters.readers.cells.infer`` and
``json.dumps``): a cell a kind's pattern takes has that kind's JSON text, exactly (the
patterns run in Python's ``re`` here, in Java's in the job: the same syntax)."""

from __future__ import annotations

import json
import re

from hypothesis import example, given, settings
from hypothesis import strategies as st
from pubsift.adapters.readers.cells import infer
from pubsift.adapters.spark import native

KINDS = {k: re.compile(p) for k, p in native._kinds(native._x(","), r"\Z").items()}
#: the str kind as it was before its first-character guard (the reference of the guard)
SLOW_STR = re.compile(
    rf"(?!(?:{native._CELL_NUMBER}|{native._WORDS})(?:\x2c|\Z))" r'[^\x2c"\\\x00-\x1f]+'
)
CELLS = st.text(alphabet='0123456789+-.eEtrufalsTRUFALSx é"\\\t\x01', max_size=12)


def typed(cell: str) -> str | None:
    """The JSON text the reader writes for a non-empty cell (None: it refuses it)."""
    try:
        return json.dumps(infer(cell), ensure_ascii=False, separators=(",", ":"))
    except Exception:
        return None


@settings(max_examples=3000, deadline=None)
@given(CELLS)
@example("2013-02-08")
@example("1e5")
@example("tRUE")
@example("True")
@example("-.5")
@example("1.")
@example("00")
@example("AAL")
def test_a_cell_a_kind_takes_has_that_kinds_json_text(cell):
    for kind, pattern in KINDS.items():
        if kind in ("", "any") or not pattern.fullmatch(cell):
            continue
        want = f'"{cell}"' if kind == "str" else cell
        assert typed(cell) == want, (kind, cell)
    # the guard changed no answer of the str kind
    assert bool(KINDS["str"].fullmatch(cell)) == bool(SLOW_STR.fullmatch(cell)), cell


@settings(max_examples=2000, deadline=None)
@given(st.text(min_size=1, max_size=10))
def test_any_text_cell_the_str_kind_takes_is_a_string_written_as_it_is(cell):
    if KINDS["str"].fullmatch(cell):
        assert typed(cell) == f'"{cell}"', cell
    assert bool(KINDS["str"].fullmatch(cell)) == bool(SLOW_STR.fullmatch(cell)), cell


#: delimiters, those a number literal or a word can hold among them
DELIMITERS = [",", ";", "\t", "|", ":", " ", "x", "T", "é", ".", "e", "E", "0", "5", "+", "-", "t"]
ALPHABET = "0123456789+-.eEtrufalsTRUFALSx \u00e9\\\t"


@settings(max_examples=4000, deadline=None)
@given(st.sampled_from(DELIMITERS), st.text(alphabet=ALPHABET + ",;|:", max_size=14))
@example(".", "1.a")
@example("e", "1e5x")
@example("5", "155x")
@example("E", "1E5x")
def test_a_line_a_shape_takes_is_split_and_typed_as_the_reader_does(d, line):
    """A line of two columns (a kind, then an unnamed one) taken by the shape's pattern
    (the lookahead sees past the cell) has two cells, the first of that kind's JSON
    text; a delimiter a number or a word can hold gets no shape at all."""
    if d in native.NO_SHAPE_DELIMITERS:
        assert native.shape_of(b"1" + d.encode() + b"x\n", ("a", "b"), d) == (None, 0.0)
        return
    kinds = native._kinds(native._x(d), r"\Z")
    for kind in ("int", "float", "bool", "str", "bare", "str?", "bare?", ""):
        pattern = rf"\A(?:{native._pattern(kinds, kind)}){native._x(d)}(?:{kinds['any']})\Z"
        if not re.fullmatch(pattern, line):
            continue
        cells = line.split(d)
        assert len(cells) == 2, (kind, d, line)
        first = cells[0]
        if first == "":
            assert kind == "" or kind.endswith("?"), (kind, line)
            continue
        want = f'"{first}"' if kind.removesuffix("?") == "str" else first
        assert typed(first) == want, (kind, d, line)
