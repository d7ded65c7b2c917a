"""The named test vectors of the concepts model (docs/concepts.md) and of Cilia et al. (003 §4.1)."""

from __future__ import annotations

import pytest
from pubsift.core.errors import ConversionError
from pubsift.models.concepts import ConceptsModel, Context, SemanticObject, equivalent
from pubsift.models.concepts.vocabulary import VocabularyAgreement

TOLERANCE = 1e-5
"""Relative tolerance of "identical in meaning" (2720.50 lb is 1234.0016 kg)."""


def test_netweight_1234_kg_is_2720_50_lb(model: ConceptsModel):
    """Cilia et al. §4.1: ⟨NetWeight, 1234, {⟨Unit, kilogram⟩}⟩ and ⟨NetWeight, 2720.50,
    {⟨Unit, pound⟩}⟩ are semantically equivalent."""
    nw = model.ontology.resolve("NetWeight")
    kg = SemanticObject(nw, 1234, Context(unit="kg"))
    lb = SemanticObject(nw, 2720.50, Context(unit="lb"))
    assert equivalent(kg, lb, model.ontology, model.manager, rel_tol=TOLERANCE)
    assert equivalent(lb, kg, model.ontology, model.manager, rel_tol=TOLERANCE)
    # the tolerance is what decides: 2721 lb is 0.018 % off, 2720.50 lb 0.0001 %
    assert not equivalent(
        kg,
        SemanticObject(nw, 2721, Context(unit="lb")),
        model.ontology,
        model.manager,
        rel_tol=TOLERANCE,
    )
    # another concept is another meaning, whatever the number
    gw = model.ontology.resolve("GrossWeight")
    assert not equivalent(
        kg, SemanticObject(gw, 1234, Context(unit="kg")), model.ontology, model.manager
    )


def test_netweight_over_1_kg_covers_over_3_lb(model: ConceptsModel):
    f = model.parse_filter("NetWeight > 1 kg")
    g = model.parse_filter("NetWeight > 3 lb")
    assert model.covers(f, g)
    assert not model.covers(g, f)
    assert model.overlaps(f, g)
    # the oracle: events in several units near the boundaries
    for unit, values in {
        "kg": [0.9, 1.0, 1.2, 1.3607771, 1.4, 5],
        "lb": [2, 2.2, 2.5, 3, 3.01],
        "g": [999, 1000, 1001, 1360, 1361],
        "oz": [40, 48, 49],
    }.items():
        for v in values:
            e = model.parse_event({"concept": "NetWeight", "value": v, "context": {"unit": unit}})
            if model.matches(g, e):
                assert model.matches(f, e), (unit, v)
    e = model.parse_event({"concept": "NetWeight", "value": 3, "context": {"unit": "lb"}})
    assert not model.matches(g, e) and model.matches(f, e)


def test_eur_subscription_matches_usd_quote_and_is_delivered_in_eur(model: ConceptsModel):
    """Before 2017-07-01 one USD buys 0.90 EUR, after it 0.85 EUR."""
    sub = VocabularyAgreement(
        model,
        {"Kurs": "StockQuote", "Schluss": "FinalPrice", "Titel": "Symbol"},
        {"currency": "EUR", "date_format": "%d.%m.%Y"},
    )
    f = sub.subscribe("Kurs where Schluss < 100")  # 100 EUR, from the context
    assert f.clauses[0].target.currency == "EUR"

    def quote(day: str, usd: float):
        return model.parse_event(
            {
                "concept": "StockQuote",
                "time": day,
                "context": {"currency": "USD"},
                "value": {"Symbol": "AAPL", "FinalPrice": usd, "DateOfIssue": day},
            }
        )

    early, late = quote("2017-06-30", 110.0), quote("2017-07-03", 110.0)
    assert model.matches(f, early)  # 110 USD = 99.00 EUR < 100 EUR
    assert not model.matches(f, quote("2017-06-30", 112.0))  # 100.80 EUR
    assert model.matches(f, late)  # 93.50 EUR
    assert not model.matches(f, quote("2017-07-03", 118.0))  # 100.30 EUR
    d = sub.deliver(f, early)
    assert d.record["concept"] == "Kurs" and d.record["value"]["Titel"] == "AAPL"
    assert d.record["value"]["Schluss"] == pytest.approx(99.0)
    price = d.obj.find((model.ontology.resolve("FinalPrice"),))
    assert price.context.currency == "EUR" and price.value == pytest.approx(99.0)
    # the date is delivered in the subscriber's date format
    assert d.record["value"]["DateOfIssue"] == "30.06.2017"
    assert sub.deliver(f, late).record["value"]["Schluss"] == pytest.approx(93.5)


def test_impossible_conversion_fails_at_subscription_time(model: ConceptsModel):
    with pytest.raises(ConversionError, match="NetWeight"):
        model.parse_filter("NetWeight > 3 USD")  # kg -> USD
    with pytest.raises(ConversionError, match="FinalPrice"):
        model.parse_filter("StockQuote where FinalPrice < 100 kg")
    with pytest.raises(ConversionError, match=r"\[mass\]"):
        model.parse_filter("Order where NetWeight < 3 km")
    with pytest.raises(ConversionError, match="no exchange rates for CHF"):
        model.parse_filter("StockQuote where FinalPrice < 100 CHF")
    # without exchange rates an amount matches in its own currency only
    plain = ConceptsModel(conversions={})
    f = plain.parse_filter("StockQuote where FinalPrice < 1 EUR")
    ev = {"concept": "StockQuote", "time": "2017-06-01", "value": {"FinalPrice": 0.5}}
    assert plain.matches(f, plain.parse_event({**ev, "context": {"currency": "EUR"}}))
    assert not plain.matches(f, plain.parse_event({**ev, "context": {"currency": "USD"}}))


def test_issue_example_filter(model: ConceptsModel):
    f = model.parse_filter(
        "StockQuote where FinalPrice < 100 USD and NetWeight >= 2 kg "
        "and DateOfIssue after 2017-06-01"
    )
    good = {
        "concept": "StockQuote",
        "time": "2017-06-05",
        "context": {"currency": "USD", "unit": "lb"},
        "value": {"FinalPrice": 99.5, "NetWeight": 4.5, "DateOfIssue": "2017-06-05"},
    }
    assert model.matches(f, model.parse_event(good))
    for member, bad in [("FinalPrice", 100), ("NetWeight", 4.4), ("DateOfIssue", "2017-06-01")]:
        ev = {**good, "value": {**good["value"], member: bad}}
        assert not model.matches(f, model.parse_event(ev)), member
    # a specialization of the filter's concept matches; a generalization does not
    assert model.matches(model.parse_filter("Quote"), model.parse_event(good))
    assert not model.matches(
        model.parse_filter("StockQuote"), model.parse_event({**good, "concept": "Quote"})
    )
    assert model.parse_filter(model.format_filter(f)) == f
