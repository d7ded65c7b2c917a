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
