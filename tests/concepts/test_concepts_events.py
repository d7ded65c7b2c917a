"""Semantic objects: JSON form, context inheritance, validation with clear errors, and the
model as installed through the entry point."""

from __future__ import annotations

import json

import pytest
from pubsift.core import load_model
from pubsift.core.errors import EventError
from pubsift.models.concepts import ConceptsModel


def test_installed_through_the_entry_point():
    m = load_model("concepts")
    assert isinstance(m, ConceptsModel) and m.name == "concepts"
    f = m.parse_filter("Order where NetWeight > 1 kg")
    e = m.parse_event(
        b'{"concept": "Bestellung", "value": {"NetWeight": '
        b'{"value": 3, "context": {"unit": "lb"}}}}'
    )
    assert m.matches(f, e)


def test_context_inheritance_and_round_trip(model):
    raw = {
        "concept": "Order",
        "time": "2017-06-01T10:00:00+02:00",
        "context": {"currency": "GBP", "unit": "lb", "scale": 1000},
        "value": {
            "TotalAmount": 1.5,
            "NetWeight": {"value": 2, "context": {"scale": 1}},
            "Symbol": "X",
            "DateOfIssue": {"value": "01/06/2017", "context": {"date_format": "%d/%m/%Y"}},
        },
    }
    e = model.parse_event(raw)
    onto = model.ontology
    amount = e.find((onto.resolve("TotalAmount"),))
    assert amount.context.currency == "GBP" and amount.context.scale == 1000
    assert amount.context.unit is None  # a unit does not reach money
    assert e.find((onto.resolve("NetWeight"),)).context.unit == "pound"
    assert e.find((onto.resolve("Symbol"),)).context.currency is None
    assert e.time.isoformat() == "2017-06-01T08:00:00"  # UTC
    again = model.load_event(json.loads(json.dumps(model.dump_event(e))))
    assert again == e and hash(again) == hash(e)
    f = model.parse_filter("Order where TotalAmount > 1000 GBP and DateOfIssue on 2017-06-01")
    assert model.matches(f, e)  # 1.5 thousand GBP


@pytest.mark.parametrize(
    "raw, message",
    [
        ("{not json", "bad JSON"),
        ([1, 2], "is a JSON object"),
        ({"concept": "Stonk", "value": 1}, "unknown concept 'Stonk'"),
        ({"concept": "NetWeight", "value": "heavy", "context": {"unit": "kg"}}, "finite number"),
        ({"concept": "NetWeight", "value": 3}, "needs a unit"),
        ({"concept": "NetWeight", "value": 3, "context": {"unit": "m"}}, r"\[mass\]"),
        (
            {"concept": "NetWeight", "value": 3, "context": {"currency": "USD", "unit": "kg"}},
            "does not fit",
        ),
        ({"concept": "FinalPrice", "time": "2017-01-01", "value": 3}, "needs a currency"),
        ({"concept": "FinalPrice", "value": 3, "context": {"currency": "USD"}}, "needs a time"),
        ({"concept": "Order", "value": {"DateOfIssue": "31/02/2017"}}, "not a date"),
        ({"concept": "Order", "value": {"Symbol": [1]}}, "plain values"),
        ({"concept": "Order", "value": {"Stonk": 1}}, r"at event\.Stonk"),
        ({"concept": "Order", "time": "yesterday", "value": {}}, "bad time"),
        ({"concept": "Order", "value": {}, "extra": 1}, "unknown member"),
        ({"concept": "NetWeight", "value": {"Symbol": "A"}}, "not a complex object"),
    ],
)
def test_bad_events_are_reported(model, raw, message):
    with pytest.raises(EventError, match=message):
        model.parse_event(raw)


def test_conversion_is_lazy_and_done_once_per_context(model):
    """Only the values a filter constrains are converted, each once per event and target
    context, however many filters ask (Cilia et al. §4.3)."""
    m = ConceptsModel(rates=model.manager.rates, conversions={})
    e = m.parse_event(
        {
            "concept": "StockQuote",
            "time": "2017-06-01",
            "context": {"currency": "USD", "unit": "lb"},
            "value": {
                "FinalPrice": 10,
                "OpenPrice": 9,
                "HighPrice": 11,
                "LowPrice": 8,
                "NetWeight": 3,
                "Symbol": "A",
            },
        }
    )
    filters = [m.parse_filter(f"StockQuote where FinalPrice < {i} EUR") for i in range(50)]
    filters += [m.parse_filter(f"StockQuote where FinalPrice < {i} USD") for i in range(50)]
    for f in filters:
        m.matches(f, e)
    assert m.matcher.conversions == 2  # FinalPrice into EUR and into USD
    index = m.new_index()
    for i, f in enumerate(filters):
        index.add(f, i)
    e2 = m.parse_event(m.dump_event(e))
    assert index.match(e2) == {i for i, f in enumerate(filters) if m.matches(f, e2)}
    assert m.matcher.conversions == 4


def test_index_after_removals_keeps_contexts_apart(model):
    """Regression: a virtual attribute freed by a removal must not be reused while another
    one of the same name is held (found by the conformance kit's index scripts)."""
    idx = model.new_index()
    p = model.parse_filter
    a, b, c = (
        p("Quote where FinalPrice < 1 USD"),
        p("Quote where FinalPrice < 0.9 EUR"),
        p("Quote where FinalPrice < 1 GBP"),
    )
    idx.add(a, 0)
    idx.add(b, 1)
    idx.remove(a, 0)
    idx.add(c, 2)
    e = model.parse_event(
        {
            "concept": "StockQuote",
            "time": "2017-06-01",
            "context": {"currency": "EUR"},
            "value": {"FinalPrice": 0.95},
        }
    )
    # 0.95 EUR is not < 0.9 EUR, and is 0.82 GBP < 1 GBP
    assert idx.match(e) == {k for f, k in idx if model.matches(f, e)} == {2}
