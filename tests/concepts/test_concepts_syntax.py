"""Text and JSON forms of concept filters: grammar, normalization, errors with positions,
wire and text round trips."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from pubsift.core.errors import ConversionError, FilterSyntaxError
from pubsift.models.concepts import testing as cs
from pubsift.models.concepts.context import ClientContext
from pubsift.models.constraints.constraints import Interval, Op


def test_text_and_json_forms_agree(model):
    text = model.parse_filter(
        "StockQuote where FinalPrice between 10 EUR and 20 EUR and "
        'NetWeight in [1, 2) lb and Symbol in {"IBM", "AAPL"} and '
        "DateOfIssue before 2017-06-01"
    )
    js = model.parse_filter(
        {
            "concept": "StockQuote",
            "where": [
                {"attr": "FinalPrice", "op": "between", "value": [10, 20], "currency": "EUR"},
                {
                    "attr": "NetWeight",
                    "op": "in-range",
                    "value": [1, 2],
                    "unit": "lb",
                    "closed": [True, False],
                },
                {"attr": "Symbol", "op": "in", "value": ["IBM", "AAPL"]},
                {"attr": "DateOfIssue", "op": "before", "value": "2017-06-01"},
            ],
        }
    )
    assert text == js
    assert model.parse_filter(json.dumps({"concept": "Quote"})) == model.parse_filter("Quote")


def test_constants_are_normalized_into_the_matching_context(model):
    f = model.parse_filter("Order where NetWeight > 2000 g and NetWeight <= 3 kg")
    (c,) = f.clauses  # one clause per member and context (conjoined)
    assert c.target.unit == "kilogram"
    assert c.constraint.op is Op.IN_RANGE and c.constraint.operand == Interval(2.0, 3, False)
    thousands = ClientContext.of({"currency": "USD", "scale": 1000})
    (p,) = model.parse_filter("StockQuote where FinalPrice < 1.5", client=thousands).clauses
    assert p.constraint.operand == 1500 and p.target.currency == "USD"
    dmy = ClientContext.of({"date_format": "%d.%m.%Y"})
    (d,) = model.parse_filter('Order where DateOfIssue after "01.06.2017"', client=dmy).clauses
    assert d.constraint.operand == "2017-06-01"
    for spec in ({"units": {"[mass]": "lb"}}, {"unit": "lb"}, {"units": ["km", "lb"]}):
        (w,) = model.parse_filter(
            "Order where NetWeight > 3", client=ClientContext.of(spec)
        ).clauses
        assert w.constraint.operand == pytest.approx(1.36077711)


@pytest.mark.parametrize(
    "text, message, column",
    [
        ("", "empty filter", 1),
        ("StockQuote where", "expected a concept name", 17),
        ("StockQuote where FinalPrice", "expected an operator", 28),
        ("StockQuote where FinalPrice < ", "expected a value", 31),
        ("StockQuote where FinalPrice < 100 USD or NetWeight > 1 kg", "expected 'and'", 39),
        ("StockQuote where Prise < 100 USD", "unknown concept 'Prise'", 18),
        ("StockQuote where NetWeight > 3", "give a unit", 30),
        ("StockQuote where FinalPrice < 100", "give a currency", 31),
        ("StockQuote where NetWeight > 3 blorps", "unknown unit", 32),
        ("StockQuote where FinalPrice between 5 USD and 3 USD", "empty range", 18),
        ("StockQuote where FinalPrice > 5 USD and FinalPrice < 3 USD", "no value satisfies", None),
        ("StockQuote where DateOfIssue after 2017-13-01", "bad date", 36),
        ("StockQuote where Symbol prefix 3", "quoted string", 32),
        ("StockQuote where FinalPrice in {1 USD, 2 EUR}", "one context", 40),
        ("StockQuote & x", "unexpected character", 12),
    ],
)
def test_errors_name_the_position(model, text, message, column):
    with pytest.raises(FilterSyntaxError, match=message) as info:
        model.parse_filter(text)
    if column is not None:
        assert info.value.column == column, str(info.value)


def test_json_errors_name_the_path(model):
    for spec, path in [
        ({"concept": 3}, "$.concept"),
        ({"concept": "Quote", "where": [{"attr": "FinalPrice", "op": "~"}]}, "$.where[0].op"),
        ({"concept": "Quote", "where": [{"attr": "Nope", "op": "exists"}]}, "$.where[0].attr"),
        ({"concept": "Quote", "extra": 1}, "$"),
    ]:
        with pytest.raises(FilterSyntaxError) as info:
            model.parse_filter(spec)
        assert info.value.path == path, (spec, str(info.value))
    with pytest.raises(ConversionError, match="FinalPrice"):
        model.parse_filter(
            {
                "concept": "Quote",
                "where": [{"attr": "FinalPrice", "op": "<", "value": 3, "unit": "kg"}],
            }
        )


def test_terms_in_any_language_and_quoted_labels(model):
    a = model.parse_filter('"stock quote" where "prix final" < 100 EUR and Nettogewicht > 1 kg')
    b = model.parse_filter("StockQuote where FinalPrice < 100 EUR and NetWeight > 1 kg")
    assert a == b


@settings(max_examples=150, deadline=None)
@given(cs.filter_texts())
def test_wire_and_text_round_trips(model, text):
    f = model.parse_filter(text)
    wire = json.loads(json.dumps(model.dump_filter(f)))
    assert model.load_filter(wire) == f
    assert model.parse_filter(model.format_filter(f)) == f


def test_self_value_filters_round_trip(model):
    f = model.parse_filter("NetWeight > 1 kg and < 2000 lb")
    assert model.parse_filter(model.format_filter(f)) == f
    with pytest.raises(FilterSyntaxError, match="clauses"):
        model.load_filter({"concept": "Quote", "clauses": [1]})
