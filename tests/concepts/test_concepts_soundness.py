"""Covering, identity, overlap and merging of concept filters checked by brute force on
generated semantic objects published in random contexts (units, currencies, scale factors,
date formats, times on both sides of an exchange-rate change)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pubsift.models.concepts import testing as cs

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _events_for(model, data, f, g, n=8):
    """Random events plus events built to match g (so covering claims are exercised)."""
    evs = data.draw(st.lists(cs.events(model), min_size=n, max_size=n))
    build = cs.matching_event(model)(g)
    if build is not None:
        evs += data.draw(st.lists(build, min_size=n, max_size=n))
    return evs


@SETTINGS
@given(data=st.data())
def test_covers_is_sound(model, data):
    f, g = data.draw(cs.filters(model)), data.draw(cs.filters(model))
    if not model.covers(f, g):
        return
    for e in _events_for(model, data, f, g):
        if model.matches(g, e):
            assert model.matches(f, e), (
                model.format_filter(f),
                model.format_filter(g),
                model.dump_event(e),
            )


@SETTINGS
@given(data=st.data())
def test_overlaps_is_sound(model, data):
    f, g = data.draw(cs.filters(model)), data.draw(cs.filters(model))
    if model.overlaps(f, g):
        return
    for e in _events_for(model, data, f, g):
        assert not (model.matches(f, e) and model.matches(g, e)), (
            model.format_filter(f),
            model.format_filter(g),
            model.dump_event(e),
        )


@SETTINGS
@given(data=st.data())
def test_identical_and_merge_are_sound(model, data):
    f, g = data.draw(cs.filters(model)), data.draw(cs.filters(model))
    evs = _events_for(model, data, f, g) + _events_for(model, data, g, f)
    if model.identical(f, g):
        assert all(model.matches(f, e) == model.matches(g, e) for e in evs)
    for perfect in (True, False):
        m = model.merge([f, g], perfect=perfect)
        if m is None:
            continue
        for e in evs:
            if model.matches(f, e) or model.matches(g, e):
                assert model.matches(m, e)
            elif perfect:
                assert not model.matches(m, e)


def test_claims_are_not_vacuous(model):
    """The relations above are claimed often enough for the checks to mean something,
    including across currencies and units."""
    pairs = [
        ("StockQuote where FinalPrice < 100 EUR", "StockQuote where FinalPrice < 100 USD"),
        ("Quote where NetWeight > 1 kg", "StockQuote where NetWeight > 3 lb"),
        ("Quote where FinalPrice > 0 JPY", "StockQuote where FinalPrice >= 1 GBP"),
    ]
    for a, b in pairs:
        assert model.covers(model.parse_filter(a), model.parse_filter(b)), (a, b)
    disjoint = [
        ("StockQuote where FinalPrice > 100 EUR", "Quote where FinalPrice < 100 USD"),
        ("Order", "StockQuote"),
        ("Quote where NetWeight < 1 kg", "Quote where NetWeight > 3 lb"),
    ]
    for a, b in disjoint:
        assert not model.overlaps(model.parse_filter(a), model.parse_filter(b)), (a, b)


def test_exchange_rates_decide_covering_only_for_every_rate_in_force(model):
    """0.85 and 0.90 EUR per USD are in force: 95 EUR covers 105 USD at both rates
    (94.5 EUR at most) but 93 EUR does not (94.5 > 93 at the older rate), although it
    would at the newer one (89.25)."""
    p = model.parse_filter
    assert model.covers(
        p("StockQuote where FinalPrice < 95 EUR"), p("StockQuote where FinalPrice < 105 USD")
    )
    assert not model.covers(
        p("StockQuote where FinalPrice < 93 EUR"), p("StockQuote where FinalPrice < 105 USD")
    )
    # disjointness likewise: > 90 EUR meets < 105 USD at 0.90 (up to 94.5 EUR)
    assert model.overlaps(
        p("StockQuote where FinalPrice > 90 EUR"), p("StockQuote where FinalPrice < 105 USD")
    )
    assert not model.overlaps(
        p("StockQuote where FinalPrice > 95 EUR"), p("StockQuote where FinalPrice < 105 USD")
    )


def test_no_covering_across_currencies_when_a_rate_can_be_missing():
    """With a EUR rate only from 2017-07-01 on, a USD event of June matches a USD filter
    but cannot be converted for a EUR one: no covering may be claimed."""
    from datetime import datetime

    from pubsift.models.concepts import ConceptsModel, RatePeriod, RateTable

    m = ConceptsModel(
        rates=RateTable("USD", {"EUR": [RatePeriod(datetime(2017, 7, 1), None, 0.85)]}),
        conversions={},
    )
    f = m.parse_filter("StockQuote where FinalPrice < 1000 EUR")
    g = m.parse_filter("StockQuote where FinalPrice < 1 USD")
    assert not m.covers(f, g)
    e = m.parse_event(
        {
            "concept": "StockQuote",
            "time": "2017-06-01",
            "context": {"currency": "USD"},
            "value": {"FinalPrice": 0.5},
        }
    )
    assert m.matches(g, e) and not m.matches(f, e)
