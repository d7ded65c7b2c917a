from pubsift.core.errors import EventError, FilterSyntaxError


def test_filter_syntax_error_points_at_line_and_column():
    text = 'symbol = "IBM"\nand price >> 4'
    err = FilterSyntaxError("unexpected '>'", text, text.index(">>") + 1)
    assert (err.line, err.column) == (2, 12)
    rendered = str(err).splitlines()
    assert rendered[0] == "unexpected '>' (at line 2, column 12)"
    assert rendered[1] == "  and price >> 4"
    assert rendered[2] == "  " + " " * 11 + "^"


def test_filter_syntax_error_with_json_path():
    err = FilterSyntaxError("cidr is not supported", path="$.detail.ip")
    assert str(err) == "cidr is not supported (at $.detail.ip)"
    assert err.line is None and err.column is None


def test_event_error_names_the_place():
    assert str(EventError("invalid JSON", "events.jsonl:3")) == "invalid JSON (at events.jsonl:3)"


def test_filter_syntax_error_shows_a_bounded_excerpt_of_a_long_line():
    text = "a" * 1_000_000 + " >> 1" + "b" * 1_000_000
    pos = text.index(">>") + 1
    err = FilterSyntaxError("unexpected '>'", text, pos)
    rendered = str(err).splitlines()
    assert len(str(err)) < 400
    assert rendered[1] == "  …" + text[pos - 60 : pos + 60] + "…"
    caret = rendered[2].index("^")
    assert rendered[1][caret] == ">" and rendered[1][caret - 1] == ">"


def test_errors_about_lone_surrogates_can_be_printed_as_utf8():
    err = FilterSyntaxError("bad name '\ud800'", "x\ud800 = 1", 1)
    str(err).encode("utf-8")
    assert "\ufffd" in str(err)
    str(EventError("bad value '\udfff'", "line 1")).encode("utf-8")
