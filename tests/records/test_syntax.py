"""The text form of records filters (docs/records-syntax.md): parsing, canonical forms,
exact round-trips through ``format_filter`` and error positions.

Oracles: the constraint constructed by hand for each example; ``relations.identical`` (value
sets L_A) for the meaning of a re-parsed filter; strict kind-aware equality for exactness.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from pubsift.core.errors import FilterSyntaxError
from pubsift.models.constraints import relations
from pubsift.models.constraints.constraints import Constraint, Interval, Op
from pubsift.models.constraints.values import skey
from pubsift.models.records.events import Record
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.syntax import (
    format_filter,
    format_literal,
    parse_filter,
    parse_filters,
    parse_text,
    tokenize,
)
from pubsift.models.records.typesystem import Schema
from rstrategies import SCHEMA, constraints, filters, scalars, strict


def parse(text: str) -> RecordFilter:
    return parse_text(text, SCHEMA)


def one(text: str) -> Constraint:
    f = parse(text)
    assert len(f) == 1
    return f.constraints[0][1]


def S(*vs) -> frozenset:
    return frozenset(skey(v) for v in vs)


# --------------------------------------------------------------------------------------
# every operator, by hand

EXAMPLES = [
    ("x exists", Constraint(Op.EXISTS)),
    ("x not exists", Constraint(Op.NOT_EXISTS)),
    ("x instanceof Quote", Constraint(Op.INSTANCEOF, SCHEMA.types.typeset("Quote"))),
    (
        'x instanceof "Stock Quote v2"',
        Constraint(Op.INSTANCEOF, SCHEMA.types.typeset("Stock Quote v2")),
    ),
    ('x = "IBM"', Constraint(Op.EQ, "IBM")),
    ("x = true", Constraint(Op.EQ, True)),
    ("x = null", Constraint(Op.EQ, None)),
    ("x != 3", Constraint(Op.NE, 3)),
    ("x < 2.5", Constraint(Op.LT, 2.5)),
    ('x <= "m"', Constraint(Op.LE, "m")),
    ("x > -1e-3", Constraint(Op.GT, -0.001)),
    ("x >= 10", Constraint(Op.GE, 10)),
    ("x in [3, 5)", Constraint(Op.IN_RANGE, Interval(3, 5, True, False))),
    ("x not in (3, 5]", Constraint(Op.NOT_IN_RANGE, Interval(3, 5, False, True))),
    ('x in ["a", "c")', Constraint(Op.IN_RANGE, Interval("a", "c", True, False))),
    ('x not in ("a", inf)', Constraint(Op.NOT_IN_RANGE, Interval("a", None, False, False))),
    ("x in {1, 2}", Constraint(Op.IN_SET, S(1, 2))),
    ('x not in {"a", "b"}', Constraint(Op.NOT_IN_SET, S("a", "b"))),
    ('x prefix "In"', Constraint(Op.PREFIX, "In")),
    ('x not prefix "In"', Constraint(Op.NOT_PREFIX, "In")),
    ('x suffix ".xml"', Constraint(Op.SUFFIX, ".xml")),
    ('x not suffix ".tmp"', Constraint(Op.NOT_SUFFIX, ".tmp")),
    ('x substring "merger"', Constraint(Op.SUBSTRING, "merger")),
    ('x equals-ignore-case "EC2"', Constraint(Op.EQ_IGNORE_CASE, "EC2")),
    ('x ieq "EC2"', Constraint(Op.EQ_IGNORE_CASE, "EC2")),
    ('x postfix "z"', Constraint(Op.SUFFIX, "z")),
    ('x subset {"a", "b"}', Constraint(Op.SUBSET, S("a", "b"))),
    ('x superset {"a", 1}', Constraint(Op.SUPERSET, S("a", 1))),
    ('x contains "urgent"', Constraint(Op.CONTAINS, skey("urgent"))),
    ("x not contains false", Constraint(Op.NOT_CONTAINS, skey(False))),
    ('x disjoint {"spam", "ads"}', Constraint(Op.DISJOINT, S("spam", "ads"))),
    ('x disjunct {"spam"}', Constraint(Op.DISJOINT, S("spam"))),
    ('x overlaps {"ibm", "sap"}', Constraint(Op.OVERLAPS, S("ibm", "sap"))),
]


@pytest.mark.parametrize("text, expected", EXAMPLES, ids=[t for t, _ in EXAMPLES])
def test_every_operator_parses_to_its_constraint(text, expected):
    c = one(text)
    assert strict(c) == strict(relations.normalize(expected))
    assert relations.identical(c, expected)


def test_issue_example():
    f = parse(
        'symbol = "IBM" and price > 45.5 and exchange in {"NYSE", "NASDAQ"} and name prefix "Inter"'
    )
    assert f == RecordFilter.of(
        {
            "symbol": Constraint(Op.EQ, "IBM"),
            "price": Constraint(Op.GT, 45.5),
            "exchange": Constraint(Op.IN_SET, S("NYSE", "NASDAQ")),
            "name": Constraint(Op.PREFIX, "Inter"),
        }
    )
    e = Record.of({"symbol": "IBM", "price": 46, "exchange": "NYSE", "name": "Intershop"})
    assert f.matches(e)
    assert not f.matches(Record.of({**e.raw, "exchange": "LSE"}))


def test_empty_filter_matches_everything():
    for text in ("", "   ", "true", "TRUE", " True "):
        assert parse(text) == RecordFilter()
    assert format_filter(RecordFilter()) == "true"
    assert parse("true").matches(Record.of({"anything": 1}))


def test_keywords_are_case_insensitive_and_names_are_not():
    f = parse('X EXISTS AND y NOT IN {1, 2} aNd z Prefix "a" and w = TRUE and v = Null')
    assert f == parse('X exists and y not in {1, 2} and z prefix "a" and w = true and v = null')
    assert f.names == ("X", "v", "w", "y", "z")


def test_names_dotted_quoted_and_keyword_like():
    f = parse(
        'position.x > 1 and detail-type = "x" and "unit price" < 3 and in exists '
        'and $or exists and "a\\"b" exists and true exists'
    )
    assert set(f.names) == {"position.x", "detail-type", "unit price", "in", "$or", 'a"b', "true"}
    assert parse(format_filter(f)) == f


def test_several_clauses_on_one_attribute_are_conjoined():
    """Mühl §4.3.2: {x ≥ 3 ∧ x ≤ 5} -> {x ∈ [3, 5]};
    {x ∈ [3,7] ∧ x ∈ [5,8]} -> {x ∈ [5,7]}."""
    assert one("x >= 3 and x <= 5") == Constraint(Op.IN_RANGE, Interval(3, 5))
    assert one("x in [3, 7] and x in [5, 8]") == Constraint(Op.IN_RANGE, Interval(5, 7))
    assert one("x != 1 and x != 2") == Constraint(Op.NOT_IN_SET, S(1, 2))
    assert one("t contains 1 and t contains 2") == Constraint(Op.SUPERSET, S(1, 2))
    # integer-valued attributes (Schema.integer_attrs): x > 3 and x < 5 is x = 4
    assert one("n > 3 and n < 5") == Constraint(Op.EQ, 4)
    assert one("x > 3 and x < 5") == Constraint(Op.IN_RANGE, Interval(3, 5, False, False))


def test_canonical_forms():
    assert one("x in {3}") == Constraint(Op.EQ, 3)
    assert one("x in [3, 3]") == Constraint(Op.EQ, 3)
    assert strict(one("x = 1.0")) == strict(Constraint(Op.EQ, 1))
    assert one('x in (-inf, "m")') == Constraint(Op.LT, "m")


def test_string_interval_ends():
    assert one('x in (-inf, "m"]') == relations.normalize(
        Constraint(Op.IN_RANGE, Interval("", "m", True, True))
    )
    assert one('x in ["m", inf)') == relations.normalize(
        Constraint(Op.IN_RANGE, Interval("m", None, True, False))
    )


LITERALS = [
    '"a\\"b\\\\c"',
    '"\\u0000\\u001f\\n\\t"',
    '"\\ud83d\\ude00"',
    '"😀 ü ∑"',
    "123456789012345678901234567890",
    "-42",
    "0.1",
    "1e-07",
    "-2.5e+300",
    "true",
    "false",
    "null",
    "5e-324",
    "1.7976931348623157e+308",
]


@pytest.mark.parametrize("lit", LITERALS)
def test_literals_round_trip_exactly(lit):
    tok_or_word = parse(f"x = {lit}").constraints[0][1].operand
    assert format_literal(tok_or_word) in (lit, format_literal(tok_or_word))
    assert strict(parse(f"x = {format_literal(tok_or_word)}")) == strict(parse(f"x = {lit}"))


def test_negative_zero_and_kinds_in_text():
    assert format_filter(RecordFilter.of({"x": Constraint(Op.EQ, -0.0)})) == "x = -0.0"
    assert parse("x = -0.0") == parse("x = 0")  # the same value set; canonical form 0
    assert parse("x = true") != parse("x = 1")
    assert parse("x in {true, 1}") == RecordFilter.of({"x": Constraint(Op.IN_SET, S(True, 1))})
    assert tokenize("-0.0")[0].value == 0.0 and math.copysign(1, tokenize("-0.0")[0].value) < 0


def test_non_printable_characters_are_escaped():
    f = RecordFilter.of({"x": Constraint(Op.EQ, "a\x00\n\u2028\x7f\U0001f600b")})
    text = format_filter(f)
    assert "\n" not in text and "\x00" not in text and "\u2028" not in text
    assert "\U0001f600" in text
    assert parse(text) == f


# --------------------------------------------------------------------------------------
# round trips (hypothesis)


def _canonical(f: RecordFilter) -> RecordFilter:
    """What parsing makes of f: each constraint normalized (relations.normalize also gives
    numbers one canonical kind: integral floats become ints, -0.0 becomes 0)."""
    out = {}
    for n, c in f.constraints:
        try:
            out[n] = relations.normalize(c, integer=SCHEMA.is_integer(n))
        except relations.Unsatisfiable:
            assume(False)
    return RecordFilter.of(out)


@settings(max_examples=250, deadline=None)
@given(filters())
def test_format_then_parse_is_exact_for_canonical_filters(f):
    g = _canonical(f)
    text = format_filter(g)
    back = parse(text)
    assert strict(back) == strict(g), text
    assert format_filter(back) == text


@settings(max_examples=300, deadline=None)
@given(filters())
def test_format_then_parse_is_identical_for_any_filter(f):
    g = _canonical(f)
    back = parse(format_filter(f))
    assert strict(back) == strict(g)
    for (n, c), (m, d) in zip(f.constraints, back.constraints):
        assert n == m and relations.identical(c, d, integer=SCHEMA.is_integer(n))


@settings(max_examples=300, deadline=None)
# (no "n": the schema declares it integer-valued, so its events hold integers)
@given(
    filters(),
    st.dictionaries(
        st.sampled_from(["a", "x", "position.x"]),
        scalars | st.lists(scalars, max_size=3),
        min_size=1,
    ),
)
def test_reparsed_filter_matches_the_same_events(f, attrs):
    _canonical(f)
    e = Record.of(attrs)
    assert parse(format_filter(f)).matches(e) == f.matches(e)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), constraints()), min_size=1, max_size=4))
def test_repeated_attributes_parse_to_the_conjunction(clauses):
    """Parsing ``a <c1> and a <c2> ...`` gives one constraint whose value set is the
    intersection — or a positioned error when that is empty or not representable."""
    text = " and ".join(
        f"{n} {format_filter(RecordFilter.of({n: c})).split(' ', 1)[1]}" for n, c in clauses
    )
    probes = [c2.operand for _, c2 in clauses if c2.op in (Op.EQ, Op.NE)]
    probes += [1, 4, "a", "", True, None, (1,), ()]
    recs = [
        Record.of(
            {
                "a": list(v) if isinstance(v, tuple) else v,
                "b": list(v) if isinstance(v, tuple) else v,
            }
        )
        for v in probes
    ]
    try:
        f = parse(text)
    except FilterSyntaxError as e:
        contradiction = "no value" in e.message
        event("rejected: " + ("contradiction" if contradiction else "not representable"))
        assert e.position is not None and text[e.position :].split(" ")[0] in ("a", "b")
        if contradiction:
            assert not any(all(c.matches(r[n]) for n, c in clauses) for r in recs)
        return
    event(f"parsed into {len(f)} attribute filter(s)")
    for rec in recs:
        assert f.matches(rec) == all(c.matches(rec[n]) for n, c in clauses)


# --------------------------------------------------------------------------------------
# errors with positions

ERRORS = [
    ("symbol = IBM", 9, "bare word 'IBM'"),
    ("x", 1, "expected an operator"),
    ("x = 1 or y = 2", 6, "expected 'and'"),
    ('x = "abc', 4, "unterminated string"),
    ('x = "a\\qb"', 6, "invalid escape"),
    ('x = "\\u12"', 5, "four hex digits"),
    ('x = "a\nb"', 6, "control character U+000A"),
    ("x in {}", 5, "must not be empty"),
    ("x not in {}", 9, "must not be empty"),
    ("x = 01", 4, "malformed number"),
    ("x = 1.", 4, "malformed number"),
    ("x = .5", 4, "unexpected character '.'"),
    ("x = -", 4, "'-' must be followed"),
    ("x = 1e999", 4, "too large"),
    ("x = 3abc", 4, "malformed number"),
    ("type instanceof Bond", 16, "unknown type 'Bond'"),
    ("type instanceof 3", 16, "expected a type name"),
    ("x = 1 and x = 2", 10, "contradicts the earlier clauses on attribute 'x'"),
    ('s suffix "a" and s substring "b"', 17, "cannot be combined"),
    ("x in [5, 3]", 0, "can never hold"),
    ("x overlaps {}", 0, "can never hold"),
    ('x in [1, "a"]', 6, "string interval starts"),
    ('x in ["a", 1]', 11, "string interval ends"),
    ("x in [true, 3]", 6, "interval ends are numbers or strings"),
    ("x in [1, 2", 10, "closing the interval"),
    ("x in [1 2]", 8, "expected ','"),
    ("x in 3", 5, "expected an interval"),
    ("x in {1 2}", 8, "closing the set"),
    ("x < true", 4, "compares numbers or strings"),
    ("x >= null", 5, "compares numbers or strings"),
    ("x prefix 3", 9, "expects a string"),
    ('x not substring "a"', 6, "after 'not'"),
    ('x matches "a"', 2, "unknown operator 'matches'"),
    ("x @ 3", 2, "unexpected character '@'"),
    ("a. = 1", 1, "'.' in an attribute name"),
    ("= 3", 0, "expected an attribute name"),
    ('"" = 3', 0, "non-empty"),
    ("x = 1 and", 9, "expected an attribute name"),
    ("x = 1 and\n  y @ 2", 14, "unexpected character"),
    ("x subset 3", 9, "expected a set"),
    ("x contains {1}", 11, "expected a value"),
]


@pytest.mark.parametrize("text, pos, msg", ERRORS, ids=[t for t, _, _ in ERRORS])
def test_errors_name_the_exact_position(text, pos, msg):
    with pytest.raises(FilterSyntaxError) as info:
        parse(text)
    e = info.value
    assert msg in e.message
    assert e.position == pos, (e.position, str(e))
    assert e.text == text
    rendered = str(e)
    assert rendered.splitlines()[-1].index("^") - 2 == e.column - 1


def test_error_rendering_has_line_and_caret():
    with pytest.raises(FilterSyntaxError) as info:
        parse("x = 1 and\n  y @ 2")
    e = info.value
    assert (e.line, e.column) == (2, 5)
    assert str(e).endswith("  y @ 2\n      ^")


# --------------------------------------------------------------------------------------
# the two entry points used by RecordsModel


def test_parse_filter_dispatches_text_and_eventbridge_patterns():
    assert parse_filter('source any = "aws.ec2"') == parse_filter({"source": ["aws.ec2"]})
    assert parse_filter(' {"source": ["aws.ec2"]}') == parse_filter('source any = "aws.ec2"')
    assert parse_filters("x = 1") == [parse_filter("x = 1")]
    assert len(parse_filters({"$or": [{"a": [1]}, {"b": [2]}]})) == 2
    with pytest.raises(FilterSyntaxError, match="use parse_filters"):
        parse_filter({"$or": [{"a": [1]}, {"b": [2]}]})
    with pytest.raises(FilterSyntaxError, match="text or a JSON object"):
        parse_filters(42)  # type: ignore[arg-type]


def test_parse_filter_uses_the_schema():
    with pytest.raises(FilterSyntaxError, match="unknown type"):
        parse_filter("t instanceof Quote")
    assert parse_filter("t instanceof Quote", SCHEMA).constraints[0][1].operand.members == {
        "Quote",
        "StockQuote",
        "BondQuote",
        "ConvertibleBond",
        "Stock Quote v2",
    }


DOC = Path(__file__).resolve().parents[2] / "docs" / "records-syntax.md"


def _doc_examples() -> list[tuple[str, str]]:
    lines = DOC.read_text(encoding="utf-8").splitlines()
    return [
        (line[4:], lines[i + 1])
        for i, line in enumerate(lines)
        if line.startswith(">>> parse_filter(")
    ]


def test_the_documented_error_messages_are_the_real_ones():
    examples = _doc_examples()
    assert len(examples) >= 10
    for call, first_line in examples:
        with pytest.raises(FilterSyntaxError) as info:
            eval(call, {"parse_filter": parse_filter, "Schema": Schema})  # our own docs
        assert str(info.value).splitlines()[0] == first_line, call
