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
