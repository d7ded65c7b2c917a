"""The CSV reader (docs/adapters.md §2, §3, §4): typing, declared types, positions, every bad row
quarantined, on hand-made files and on the real S&P 500 quotes (oracle: Python's csv
module)."""

from __future__ import annotations

import csv
import functools
import gzip
import io
import itertools
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pubsift.adapters import Event, Input, Quarantined, ReadLimits, Source, SourceError, read_input
from pubsift.adapters.readers.limits import DEFAULT_READ_LIMITS
from pubsift.adapters.readers.tabular import CSV_READER, CellError, infer, sniff_delimiter
from pubsift.models.constraints.limits import MAX_INT_DIGITS
from pubsift.models.records import RecordsModel

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
MODEL = RecordsModel()


def read_bytes(
    data: bytes, name: str = "t.csv", limits: ReadLimits = DEFAULT_READ_LIMITS, **settings_
) -> list[Event | Quarantined]:
    src = Source(name, format="csv", **settings_)
    return list(read_input(Input(name, src, lambda: io.BytesIO(data)), limits, {"records": MODEL}))


def records(out):
    return [o.event.raw if isinstance(o, Event) else (o.reason, o.position) for o in out]


# -- typing -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "cell, value",
    [
        ("12", 12),
        ("-0", 0),
        ("+5", 5),
        ("0", 0),
        ("1.5", 1.5),
        ("5.", 5.0),
        (".5", 0.5),
        ("-.5", -0.5),
        ("1e5", 100000.0),
        ("2.5E-3", 0.0025),
        ("1e-999", 0.0),
        ("9" * MAX_INT_DIGITS, int("9" * MAX_INT_DIGITS)),
        ("true", True),
        ("True", True),
        ("TRUE", True),
        ("false", False),
        ("False", False),
        ("FALSE", False),
        # deliberately strings: see adapters/readers/tabular.py
        ("tRuE", "tRuE"),
        ("yes", "yes"),
        ("nan", "nan"),
        ("NaN", "NaN"),
        ("inf", "inf"),
        ("-inf", "-inf"),
        ("Infinity", "Infinity"),
        ("1_000", "1_000"),
        ("0x10", "0x10"),
        ("007", "007"),
        ("-01", "-01"),
        ("00.5", "00.5"),
        (" 12 ", " 12 "),
        ("12 ", "12 "),
        ("\uff11\uff12", "\uff11\uff12"),
        ("\u0661", "\u0661"),
        ("-", "-"),
        (".", "."),
        ("e5", "e5"),
        ("1e", "1e"),
        ("1.2.3", "1.2.3"),
        ("2017-02-08", "2017-02-08"),
    ],
)
def test_literals_are_typed_as_documented(cell, value):
    got = infer(cell)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    "cell, message",
    [
        ("1e999", "beyond the range of a 64-bit float"),
        ("-1E400", "beyond the range"),
        ("9" * (MAX_INT_DIGITS + 1), f"beyond the records model's {MAX_INT_DIGITS}"),
    ],
)
def test_numbers_out_of_range_are_cell_errors(cell, message):
    with pytest.raises(CellError, match=message):
        infer(cell)
    (bad,) = read_bytes(f"a,b\n{cell},x\n".encode())
    assert (bad.reason, bad.position) == ("csv-type", 1) and "column 'a'" in bad.message


def test_a_file_is_typed_cell_by_cell_and_empty_cells_are_absent():
    out = read_bytes(b"a,b,c,d.e\n1,2.5,x,true\n,,007,\n-3,nan,,FALSE\n")
    assert records(out) == [
        {"a": 1, "b": 2.5, "c": "x", "d.e": True},
        {"c": "007"},
        {"a": -3, "b": "nan", "d.e": False},
    ]
    # a dotted column is the records model's dotted attribute name
    assert out[0].event["d.e"] is True


CELLS = st.sampled_from(
    [
        "",
        "0",
        "12",
        "-7",
        "+5",
        "1.5",
        "-.5",
        "5.",
        "1e3",
        "007",
        "true",
        "TRUE",
        "False",
        "nan",
        "inf",
        "1_000",
        "x",
        "2017-01-02",
        " 1",
        "a b",
        "\u00e9",
        "12345678901234567890",
        "1.2345678901234567890",
        "\x1f",
        "1\x1f2",
        "tRue",
    ]
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(CELLS, min_size=3, max_size=3), min_size=1, max_size=12))
def test_fast_path_types_exactly_as_infer(rows):
    """Rows of the same shape take the generated fast path; every record equals the
    per-cell oracle :func:`infer` (empty cells absent)."""
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["a", "b", "c"])
    rows = rows + rows  # repeat: the second half meets a learnt shape
    w.writerows(rows)
    out = read_bytes(buf.getvalue().encode(), delimiter=",")
    assert len(out) == len(rows)
    for o, row in zip(out, rows):
        want = {c: infer(x) for c, x in zip("abc", row) if x}
        assert isinstance(o, Event) and o.event.raw == want  # a row of empty cells: {}
        assert [type(v) for v in o.event.raw.values()] == [type(v) for v in want.values()]


def test_rows_of_changing_shapes_are_typed_the_same_after_the_learning_budget(monkeypatch):
    from pubsift.adapters.readers import tabular

    monkeypatch.setattr(tabular, "_SHAPE_SWITCHES", 2)
    cells = ["1", "1.5", "", "x", "true"]
    rows = [[cells[(i + j) % 5] for j in range(3)] for i in range(40)]
    data = "a,b,c\n" + "".join(",".join(r) + "\n" for r in rows)
    out = read_bytes(data.encode())
    assert [o.event.raw for o in out] == [
        {c: infer(x) for c, x in zip("abc", r) if x} for r in rows
    ]


# -- declared types -------------------------------------------------------------------------
def test_declared_types_replace_inference():
    out = read_bytes(
        b"i,f,b,s,u\n 007 ,3, TRUE ,12,12\n-1,1e3,0,true,x\n,,,,\n",
        columns={"i": "int", "f": "float", "b": "bool", "s": "str"},
    )
    assert records(out)[:2] == [
        {"i": 7, "f": 3.0, "b": True, "s": "12", "u": 12},
        {"i": -1, "f": 1000.0, "b": False, "s": "true", "u": "x"},
    ]
    assert type(out[0].event["f"]) is float
    assert records(out)[2] == {}  # every cell empty: the event {} (docs/records-syntax.md §5)


@pytest.mark.parametrize(
    "column, typ, cell, words",
    [
        ("n", "int", "1.5", "'1.5' is not an int"),
        ("n", "int", "x", "'x' is not an int"),
        ("n", "int", "1_000", "not an int"),
        ("n", "float", "nan", "'nan' is not a float"),
        ("n", "float", "inf", "not a float"),
        ("n", "float", "1e999", "beyond the range"),
        ("n", "bool", "yes", "'yes' is not a bool"),
        ("n", "bool", "2", "not a bool"),
        ("n", "int", "9" * (MAX_INT_DIGITS + 1), "beyond the records model's"),
    ],
)
def test_a_value_that_does_not_fit_its_declared_type_is_csv_type(column, typ, cell, words):
    out = read_bytes(f"{column},m\n1,ok\n{cell},ok\n0,ok\n".encode(), columns={column: typ})
    assert [getattr(o, "reason", "event") for o in out] == ["event", "csv-type", "event"]
    bad = out[1]
    assert bad.position == 2 and f"column {column!r}" in bad.message and words in bad.message
    assert bad.excerpt.startswith(cell[:20])


# -- header ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "data, reason, words",
    [
        (b"", "csv-header", "empty"),
        (b"\n\n", "csv-header", "empty"),
        (b",,\n1,2,3\n", "csv-header", "no column of the header has a name"),
        (b'""\n1\n', "csv-header", "no column of the header has a name"),
        (b"a,b,a\n1,2,3\n", "csv-header", "column 3 repeats the name 'a'"),
        (b",a,,a\n1,2,3,4\n", "csv-header", "column 4 repeats the name 'a'"),
        (b"a,\xffb\n1,2\n", "encoding", "byte 0xff"),
        (b'a,"b\n', "csv-syntax", "header cannot be read"),
    ],
)
def test_a_bad_header_quarantines_the_file_at_position_0(data, reason, words):
    (bad,) = read_bytes(data)
    assert (bad.reason, bad.position) == (reason, 0) and words in bad.message


def test_a_column_without_a_name_is_not_an_attribute():
    """Review finding 12: the index column pandas' to_csv writes and the empty column of a
    trailing comma; the oracle is csv.DictReader (its "" key is the unnamed column)."""
    pandas = b",a,b\n0,1,x\n1,2.5,\n"
    trailing = b"a,b,\n1,2,\n3,,\n"
    middle = b"a,,b\n1,2,3\n"
    for data in (pandas, trailing, middle):
        out = read_bytes(data)
        assert all(isinstance(o, Event) for o in out), out
        oracle = [
            {k: infer(v) for k, v in row.items() if k and v}
            for row in csv.DictReader(io.StringIO(data.decode()))
        ]
        assert records(out) == oracle and [o.position for o in out] == [1, 2][: len(oracle)]
    assert records(read_bytes(pandas)) == [{"a": 1, "b": "x"}, {"a": 2.5}]
    # the rows keep the header's width, the unnamed column included; declared types too
    assert records(read_bytes(b",a\n0,1\n0\n", columns={"a": "str"})) == [
        {"a": "1"},
        ("csv-field-count", 2),
    ]
    # the unnamed column's cells are not typed either: no csv-type for them
    assert records(read_bytes(b"a,b,\n1,2,junk\n", columns={"b": "int"})) == [{"a": 1, "b": 2}]


def test_blank_lines_before_the_header_and_a_bom_are_skipped():
    out = read_bytes(b"\xef\xbb\xbf\n\na;b\r\n1;2\r\n\r\n3;4")
    assert records(out) == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]
    assert [o.position for o in out] == [1, 2]
    assert read_bytes(b"a,b\n") == []  # a header and no rows: nothing to read


# -- bad rows lose that row only -------------------------------------------------------------
def test_each_bad_row_is_quarantined_at_its_position_and_the_others_are_read():
    data = (
        b"a,b,c\n"
        b"1,2,3\n"  # 1
        b"1,2\n"  # 2 field count
        b"\xff,2,3\n"  # 3 encoding
        b'"x\ny",2,3\n'  # 4 a quoted field over two lines: one row
        b"\n"  # blank: not a row
        b'"ab"c,2,3\n'  # 5 strict: nothing may follow a closing quote
        b"1,2,3,4\n"  # 6 field count
        b"7,8,9\n"  # 7
        b'"open,2,3\n'
    )  # 8 a quote left open up to the end
    out = read_bytes(data)
    assert [(o.position, getattr(o, "reason", "event")) for o in out] == [
        (1, "event"),
        (2, "csv-field-count"),
        (3, "encoding"),
        (4, "event"),
        (5, "csv-syntax"),
        (6, "csv-field-count"),
        (7, "event"),
        (8, "csv-syntax"),
    ]
    assert out[3].event["a"] == "x\ny"
    assert "2 fields, the header has 3 columns" in out[1].message
    assert "byte 0xff in column 'a'" in out[2].message and out[2].excerpt == "\\xff,2,3"
    assert "unexpected end of data" in out[7].message


def test_an_unterminated_quote_mid_file_loses_the_rows_it_swallows_as_one():
    data = b'a,b\n1,2\n"x,2\n3,4\n5,"6"\n7,8\n'
    out = read_bytes(data)
    # the open quote runs to the next quote, then the strict parser refuses what follows
    assert [(o.position, getattr(o, "reason", "event")) for o in out] == [
        (1, "event"),
        (2, "csv-syntax"),
        (3, "event"),
    ]
    assert out[2].event.raw == {"a": 7, "b": 8}


def test_oversized_rows_are_too_large_and_reading_resumes():
    limits = ReadLimits(max_record_bytes=20)
    row = b"x" * 20
    data = b"a\n" + row + b"\r\n" + row + b"y\n" + b"z" * 100 + b"\nok\n"
    out = read_bytes(data, limits=limits)
    assert records(out) == [{"a": "x" * 20}, ("too-large", 2), ("too-large", 3), {"a": "ok"}]
    assert "longer than 20 bytes" in out[1].message and out[2].excerpt.startswith("zzz")
    # a multi-byte character counts its bytes
    out = read_bytes(b"a\n" + "é".encode() * 11 + b"\n", limits=limits)
    assert [o.reason for o in out] == ["too-large"]


def test_an_oversized_quoted_field_resumes_at_the_next_line():
    """Recovery cannot know where a field that outgrew the limit was meant to end: the
    lines after the one the limit was reached on are read as rows (documented)."""
    data = b'a\n"' + b"q\n" * 15 + b'"\n'
    out = read_bytes(data, limits=ReadLimits(max_record_bytes=20))
    # 11 lines make the row too large (3 + 2 * 10 bytes), the other 4 are read as rows
    assert records(out) == [("too-large", 1)] + [{"a": "q"}] * 4 + [("csv-syntax", 6)]


def test_the_field_limit_is_max_record_bytes():
    """Review finding 11: a 200 KB field is read when max_record_bytes allows it, whatever
    the csv module's default field_size_limit (128 KiB); the limit is never lowered."""
    blob = b"x" * 200_000
    out = read_bytes(b"id,blob\n1," + blob + b"\n", limits=ReadLimits(max_record_bytes=100 << 20))
    assert records(out) == [{"id": 1, "blob": blob.decode()}]
    before = csv.field_size_limit()
    out = read_bytes(
        b"id,blob\n1," + blob + b"\n2,y\n", limits=ReadLimits(max_record_bytes=150_000)
    )
    assert records(out) == [("too-large", 1), {"id": 2, "blob": "y"}]
    assert "the row is longer than 150000 bytes" in out[0].message
    assert csv.field_size_limit() == before


def test_a_field_limit_lowered_by_other_code_while_reading_is_too_large():
    """csv.field_size_limit is process-wide: code lowering it during a read gets a
    too-large record naming it, not an exception."""
    before = csv.field_size_limit()
    src = Source("t.csv", format="csv")
    data = b"a,b\n1,2\n" + b"x" * 100 + b",1\n2,3\n"
    it = read_input(Input("t.csv", src, lambda: io.BytesIO(data)), ReadLimits(), {"records": MODEL})
    try:
        first = next(it)
        csv.field_size_limit(50)
        out = [first, *it]
    finally:
        csv.field_size_limit(before)
    assert [(o.position, getattr(o, "reason", "event")) for o in out] == [
        (1, "event"),
        (2, "too-large"),
        (3, "event"),
    ]
    assert "field_size_limit (50 characters)" in out[1].message


def test_a_huge_line_is_not_held_in_memory():
    line = b"y" * (8 << 20)
    data = b"a\n1\n" + line + b"\n2\n"
    tracemalloc.start()
    try:
        out = read_bytes(data, limits=ReadLimits(max_record_bytes=1000))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert records(out) == [{"a": 1}, ("too-large", 2), {"a": 2}]
    assert peak < (1 << 20), f"peak {peak} bytes while skipping an 8 MiB line"


# -- dialect ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "sample, delimiter",
    [
        ("date,open,Name\n2017-02-08,45.26,AAL\n", ","),
        ("a;b;c\n1,5;2;3\n", ";"),
        ("a|b\n1|2\n", "|"),
        ("a\tb\n1\t2\n", "\t"),
        ("name\nAlice\nBob\n", ","),
    ],
)
def test_the_delimiter_is_sniffed_among_four(sample, delimiter):
    assert sniff_delimiter(sample) == delimiter
    assert records(read_bytes(sample.encode()))[0] == dict(
        zip(
            sample.split("\n")[0].split(delimiter),
            map(infer, sample.split("\n")[1].split(delimiter)),
        )
    )


def test_tsv_files_default_to_tabs_and_a_given_delimiter_wins():
    assert records(read_bytes(b"a,b\tc\n1,2\t3\n", name="t.tsv")) == [{"a,b": "1,2", "c": 3}]
    assert records(read_bytes(b"a;b,c\n1;2,3\n", delimiter=",")) == [{"a;b": "1;2", "c": 3}]


def test_bare_carriage_returns_end_lines():
    assert records(read_bytes(b"a,b\r1,2\r3,4\r")) == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]


def test_sniffing_claims_csv_and_not_json_or_xml():
    assert CSV_READER.sniff(b"a,b\n1,2\n3,4\n")
    assert not CSV_READER.sniff(b'{"a": 1}\n{"a": 2}\n')
    assert not CSV_READER.sniff(b"<rss><channel/></rss>\n")
    assert not CSV_READER.sniff(b"just one line\n")
    assert not CSV_READER.sniff(b"a,b\n1,2,3\n")


def test_gzip_input(tmp_path):
    p = tmp_path / "q.csv.gz"
    with gzip.open(p, "wb") as fh:
        fh.write(b"a,b\n1,x\n")
    out = list(read_input(Input(str(p), Source(str(p)), functools.partial(gzip.open, p))))
    assert records(out) == [{"a": 1, "b": "x"}] and out[0].source == str(p)


# -- hostile bytes: nothing escapes, every position once, counts add up ------------------------
GOOD = (
    b"date,open,high,low,close,volume,Name\n"
    b"2017-02-08,45.26,45.26,44.51,45.06,4330414,AAL\n"
    b'2017-02-09,45.07,"46,6",44.94,46.3,7089902,"A ""B"""\n'
    b"2017-02-10,,46.7,46.17,46.45,4040567,AAL\n"
    b'2017-02-13,46.56,47.78,46.5,47.41,6158580,"multi\nline"\n'
)


def _oracle_rows(data: bytes) -> int | None:
    """Data rows as Python's csv module counts them (strict, same decoding), when the file
    parses and its header is good; None when the count is not well defined."""
    text = data.decode("utf-8", "surrogateescape").removeprefix("\ufeff")
    try:
        rows = [r for r in csv.reader(io.StringIO(text, newline=""), strict=True) if r]
    except csv.Error:
        return None
    if (
        not rows
        or any(not c for c in rows[0])
        or len(set(rows[0])) < len(rows[0])
        or any("\udc80" <= ch <= "\udcff" for c in rows[0] for ch in c)
    ):
        return None
    return len(rows) - 1


@st.composite
def mutated(draw, good: bytes) -> bytes:
    data = bytearray(good)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        i = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[i] = draw(st.integers(0, 255))
        elif op == "insert":
            data[i:i] = draw(
                st.binary(min_size=1, max_size=4)
                | st.sampled_from([b'"', b",", b"\n", b"\r", b"\xff", b"\x00", b"\xef\xbb\xbf"])
            )
        elif op == "delete" and data:
            del data[i : i + draw(st.integers(1, 5))]
        else:
            del data[i:]
    return bytes(data)


def check_outcomes(out, expected_rows):
    positions = [o.position for o in out]
    assert len(positions) == len(set(positions)), positions
    records_ = [p for p in positions if p > 0]
    assert records_ == list(range(1, len(records_) + 1))
    if 0 in positions:
        assert len(out) == 1  # the header: the file as a whole
    elif expected_rows is not None:
        assert len(out) == expected_rows  # read = events + quarantined


@settings(max_examples=300, deadline=None)
@given(mutated(GOOD))
def test_mutated_csv_never_escapes_and_counts_add_up(data):
    out = read_bytes(data, delimiter=",")
    assert all(isinstance(o, (Event, Quarantined)) for o in out)
    assert all(
        o.reason not in ("reader-error", "unreadable") for o in out if isinstance(o, Quarantined)
    ), out
    check_outcomes(out, _oracle_rows(data))


@settings(max_examples=100, deadline=None)
@given(mutated(GOOD), st.integers(8, 60))
def test_mutated_csv_with_a_small_row_limit(data, limit):
    out = read_bytes(data, delimiter=",", limits=ReadLimits(max_record_bytes=limit))
    assert all(o.reason != "reader-error" for o in out if isinstance(o, Quarantined))
    check_outcomes(out, None)


# -- real data: the S&P 500 quotes ------------------------------------------------------------
def quotes(name: str) -> Path:
    p = DATA / "quotes" / name
    if not p.exists():
        pytest.skip(f"real data not available: {p} is absent")
    return p


def test_one_year_of_quotes_matches_the_csv_module():
    p = quotes("all_stocks_1yr_2017-02-08_2018-02-07.csv")
    with open(p, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    out = list(
        read_input(
            Input(str(p), Source(str(p)), functools.partial(open, p, "rb")),
            models={"records": MODEL},
        )
    )
    assert len(out) == len(rows) == 126_663
    assert all(isinstance(o, Event) for o in out)
    assert [o.position for o in out[:3]] == [1, 2, 3] and out[-1].position == len(rows)
    assert out[0].event.raw == {
        "date": "2017-02-08",
        "open": 45.26,
        "high": 45.26,
        "low": 44.51,
        "close": 45.06,
        "volume": 4330414,
        "Name": "AAL",
    }
    for i in range(0, len(rows), 997):  # spot checks against the csv module
        row, raw = rows[i], out[i].event.raw
        assert raw["Name"] == row["Name"] and raw["date"] == row["date"]
        assert raw["volume"] == int(row["volume"]) and type(raw["volume"]) is int
        for c in ("open", "high", "low", "close"):
            assert raw.get(c) == (float(row[c]) if row[c] else None)


@pytest.mark.slow
def test_five_years_of_quotes_gz_matches_the_csv_module():
    p = quotes("all_stocks_5yr_2013-02-08_2018-02-07.csv.gz")
    with gzip.open(p, "rt", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    out = read_input(
        Input(str(p), Source(str(p)), functools.partial(gzip.open, p)), models={"records": MODEL}
    )
    n = 0
    for n, (o, row) in enumerate(zip(out, rows), 1):
        assert isinstance(o, Event) and o.position == n
        if n % 1009 == 0 or not row["open"]:
            assert o.event.raw == {k: infer(v) for k, v in row.items() if v}
    assert n == len(rows) == 619_040
    assert next(out, None) is None


def test_the_first_rows_of_five_years_gz_through_the_reader():
    p = quotes("all_stocks_5yr_2013-02-08_2018-02-07.csv.gz")
    out = list(
        itertools.islice(
            read_input(Input(str(p), Source(str(p)), functools.partial(gzip.open, p))), 2000
        )
    )
    with gzip.open(p, "rt", newline="") as fh:
        rows = list(itertools.islice(csv.DictReader(fh), 2000))
    assert [o.event.raw for o in out] == [{k: infer(v) for k, v in r.items() if v} for r in rows]


# -- encodings (review finding 13) -----------------------------------------------------------
TEXT = "name,city,n\nJosé,Zürich,1\nŁukasz,Kraków,2\n"
ORACLE = [{k: infer(v) for k, v in row.items()} for row in csv.DictReader(io.StringIO(TEXT))]


@pytest.mark.parametrize("codec", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_a_byte_order_mark_selects_the_encoding(codec):
    data = TEXT.encode(codec)
    if codec in ("utf-16-le", "utf-16-be"):  # the BOM written by hand
        data = "\ufeff".encode(codec) + data
    assert records(read_bytes(data)) == ORACLE


@pytest.mark.parametrize(
    "codec, setting",
    [
        ("latin-1", "latin-1"),
        ("cp1252", "cp1252"),
        ("utf-16-le", "utf-16-le"),
        ("utf-16", "utf-16"),
        ("utf-8-sig", "utf-8"),
        ("utf-8", "UTF8"),
        ("utf-16", "utf-16-le"),
        ("utf-32", "utf-32-le"),
    ],
)  # a BOM of that encoding is skipped
def test_the_encoding_setting_reads_other_encodings(codec, setting):
    text = TEXT.replace("Łukasz,Kraków", "Lukas,Köln") if codec in ("latin-1", "cp1252") else TEXT
    oracle = [{k: infer(v) for k, v in row.items()} for row in csv.DictReader(io.StringIO(text))]
    assert records(read_bytes(text.encode(codec), encoding=setting)) == oracle


def test_a_latin_1_file_without_the_setting_quarantines_its_non_utf8_rows():
    out = read_bytes("a,b\nJosé,1\nplain,2\n".encode("latin-1"))
    assert records(out) == [("encoding", 1), {"a": "plain", "b": 2}]
    assert "not UTF-8: byte 0xe9 in column 'a' at character 4" in out[0].message


def test_utf16_without_a_bom_or_setting_is_an_encoding_record_suggesting_the_setting():
    out = read_bytes(TEXT.encode("utf-16-le"))
    assert [(o.reason, o.position) for o in out] == [("encoding", 0)]
    assert "NUL byte" in out[0].message and "encoding" in out[0].message.split("?")[1]


def test_bytes_that_are_not_in_the_declared_encoding_lose_their_row_only():
    data = "a,b\n1,x\n".encode("utf-16-le") + b"\x00\xd8" + ",2\n3,y\n".encode("utf-16-le")
    out = read_bytes(data, encoding="utf-16-le")
    assert records(out) == [{"a": 1, "b": "x"}, ("encoding", 2), {"a": 3, "b": "y"}]
    assert "not utf-16-le: byte 0x00 in column 'a'" in out[1].message
    # an odd byte at the end of a UTF-16 file
    out = read_bytes("a\n1\n".encode("utf-16") + b"\x41", encoding="utf-16")
    assert records(out) == [{"a": 1}, ("encoding", 2)]


def test_a_nul_byte_in_a_cell_is_binary_data():
    out = read_bytes(b"a,b\n1,x\x00y\n2,z\n")
    assert records(out) == [("encoding", 1), {"a": 2, "b": "z"}]
    assert out[0].message == "binary data: a NUL byte in column 'b' at character 2"
    assert read_bytes(b"a,b\x00\n1,2\n")[0].reason == "encoding"  # in the header


@pytest.mark.parametrize("setting", ["rot13", "no-such-codec", "hex"])
def test_a_bad_encoding_name_is_a_source_error(setting):
    with pytest.raises(SourceError, match="encoding"):
        Source("x.csv", encoding=setting)
    with pytest.raises(SourceError, match="encoding"):
        Source.from_mapping({"path": "x.csv", "encoding": setting})


def test_encodings_in_files_compressed_files_and_archive_members(tmp_path):
    """The same through read(): a plain file and a .gz (streams that can peek at the BOM),
    a zip member (one that cannot)."""
    import zipfile

    from pubsift.adapters import read

    data = TEXT.encode("utf-16")
    (tmp_path / "plain.csv").write_bytes(data)
    (tmp_path / "packed.csv.gz").write_bytes(gzip.compress(data))
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as z:
        z.writestr("member.csv", data)
        z.writestr("latin.csv", "a\nJosé\n".encode("latin-1"))
    for name in ("plain.csv", "packed.csv.gz", "a.zip"):
        out = [o for o in read(str(tmp_path / name)) if "latin" not in o.source]
        assert records(out) == ORACLE, name
    latin = [
        o for o in read(Source(str(tmp_path / "a.zip"), encoding="latin-1")) if "latin" in o.source
    ]
    assert records(latin) == [{"a": "José"}]
