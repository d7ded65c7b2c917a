"""Vocabulary agreement (Cilia et al. §3.1, §4.2): subscriptions in a client's vocabulary
and context are rewritten into the matching ones, remembered, and matching objects are
delivered back in the client's context and vocabulary."""

from __future__ import annotations

from datetime import datetime

import pytest
from pubsift.core.errors import ConversionError
from pubsift.models.concepts import ConceptsModel, RatePeriod, RateTable
from pubsift.models.concepts.vocabulary import VocabularyAgreement


def _order(model, **value):
    return model.parse_event(
        {
            "concept": "Order",
            "time": "2017-06-15",
            "context": {"currency": "USD", "unit": "kg"},
            "value": value,
        }
    )


def test_rewrite_is_remembered_and_delivery_uses_local_terms(model):
    uk = VocabularyAgreement(
        model,
        {"Consignment": "Order", "Mass": "NetWeight", "Cost": "TotalAmount"},
        {"currency": "GBP", "units": {"[mass]": "lb"}},
    )
    f = uk.subscribe("Consignment where Mass > 100 and Cost < 1000")
    assert f == model.parse_filter("Order where NetWeight > 100 lb and TotalAmount < 1000 GBP")
    assert uk.rewrites[f].text == "Consignment where Mass > 100 and Cost < 1000"
    e = _order(model, NetWeight=50, TotalAmount=1200, Symbol="x")  # 110.2 lb, 936 GBP
    assert model.matches(f, e)
    d = uk.deliver(f, e)
    assert d.record["concept"] == "Consignment"
    assert d.record["value"]["Mass"] == pytest.approx(110.231131)
    assert d.record["value"]["Cost"] == pytest.approx(1200 * 0.78)
    assert d.record["value"]["Symbol"] == "x"  # no local term: the shared one
    assert d.unconverted == ()


def test_subscribing_to_a_generalization_maps_back_to_the_subscribers_term(model):
    sub = VocabularyAgreement(model, {}, {"currency": "EUR"})
    f = sub.subscribe("Kurs where Endpreis > 10")  # German labels of the ontology
    e = model.parse_event(
        {
            "concept": "StockQuote",
            "time": "2017-06-15",
            "context": {"currency": "USD"},
            "value": {"FinalPrice": 20},
        }
    )
    assert model.matches(f, e)
    d = sub.deliver(f, e)
    assert d.record["concept"] == "Kurs" and d.record["kind_of"] == "StockQuote"
    assert d.record["value"]["FinalPrice"] == pytest.approx(18.0)


def test_values_that_cannot_be_converted_are_delivered_in_their_own_context():
    m = ConceptsModel(
        rates=RateTable("USD", {"EUR": [RatePeriod(datetime(2017, 7, 1), None, 0.85)]}),
        conversions={},
    )
    sub = VocabularyAgreement(m, {}, {"currency": "EUR"})
    f = sub.subscribe('StockQuote where Symbol = "IBM"')
    e = m.parse_event(
        {
            "concept": "StockQuote",
            "time": "2017-06-15",
            "context": {"currency": "USD"},
            "value": {"Symbol": "IBM", "FinalPrice": 20},
        }
    )
    d = sub.deliver(f, e)
    price = m.ontology.resolve("FinalPrice")
    assert d.unconverted == ((price,),)
    assert d.obj.find((price,)).context.currency == "USD"


def test_bad_vocabulary_is_reported(model):
    with pytest.raises(ConversionError, match="'Gewicht' to 'Heft'"):
        VocabularyAgreement(model, {"Gewicht": "Heft"})
