"""Contexts, context sharing, units (one pint registry, UN/ECE codes checked against QUDT and
OM 2), scale factors, date formats, exchange-rate tables with validity periods, and
user-defined conversions registered through the entry-point group."""

from __future__ import annotations

from datetime import datetime
from importlib.metadata import EntryPoint

import pytest
import rdflib
from pubsift.core.errors import ConversionError, EventError, PluginError
from pubsift.models.concepts import ConceptsModel, Context, ContextRegistry, RatePeriod, RateTable
from pubsift.models.concepts import conversion as conv_mod
from pubsift.models.concepts.conversion import ConversionManager, NotConvertible
from pubsift.models.concepts.ontology import DATE, MONEY, QUANTITY
from pubsift.models.concepts.units import (
    UNECE,
    UREG,
    canonical_unit,
    unece_units_from_qudt,
    unit_converter,
    units_from_om,
)


def test_one_shared_pint_registry():
    from pubsift.models.concepts import context, units

    assert units.UREG is UREG
    q = UREG.Quantity(1, canonical_unit("LBR"))
    assert q.to("kg").magnitude == pytest.approx(0.45359237)
    assert canonical_unit("KGM") == canonical_unit("kg") == "kilogram"
    assert Context(unit="lb").unit == "pound"
    assert context.canonical_unit is canonical_unit
    with pytest.raises(ConversionError, match="unknown unit"):
        canonical_unit("furlongz")
    with pytest.raises(ConversionError, match="cannot convert"):
        unit_converter("kilogram", "meter")
    assert unit_converter("degree_Celsius", "kelvin")(20) == pytest.approx(293.15)


def test_every_unece_entry_is_a_pint_unit():
    for code, unit in UNECE.items():
        assert canonical_unit(code) == canonical_unit(unit), code
    assert UREG.Quantity(2, canonical_unit("DZN")).to("count").magnitude == 24


def test_context_validation_and_json():
    c = Context.of({"unit": "lb", "scale": 1000, "vat": "included"})
    assert c.to_json() == {"unit": "pound", "scale": 1000, "vat": "included"}
    assert Context.of(c.to_json()) == c and hash(Context.of(c.to_json())) == hash(c)
    for bad in (
        {"currency": "usd"},
        {"scale": 0},
        {"scale": True},
        {"date_format": "dd.mm"},
        {"unit": "blorp"},
    ):
        with pytest.raises(ConversionError):
            Context.of(bad)


def test_context_sharing_resolves_to_one_object(model):
    reg = ContextRegistry()
    us = reg.register("us-retail", {"currency": "USD", "unit": "lb"})
    assert reg.resolve("@us-retail") is us and reg.resolve({"ref": "us-retail"}) is us
    with pytest.raises(ConversionError, match="already defined"):
        reg.register("us-retail", {"currency": "EUR"})
    with pytest.raises(ConversionError, match="no shared context named 'eu'"):
        reg.resolve("@eu")
    m = ConceptsModel(rates=model.manager.rates, conversions={}, contexts=reg)
    e = m.parse_event({"concept": "NetWeight", "value": 3, "context": "@us-retail"})
    assert e.context is us
    assert m.dump_event(e) == {"concept": "NetWeight", "value": 3, "context": "@us-retail"}
    assert m.load_event(m.dump_event(e)) == e
    with pytest.raises(EventError, match="no shared context"):
        m.parse_event({"concept": "NetWeight", "value": 3, "context": "@nowhere"})


def test_scale_factor_and_date_formats(model):
    mgr = model.manager
    thousands = Context(currency="USD", scale=1000)
    assert mgr.convert(MONEY, 1.5, thousands, Context(currency="USD"), None) == 1500
    assert mgr.convert(
        QUANTITY, 2, Context(unit="t"), Context(unit="kg", scale=1000), None
    ) == pytest.approx(2)
    assert (
        mgr.convert(DATE, "30.06.2017", Context(date_format="%d.%m.%Y"), Context(), None)
        == "2017-06-30"
    )
    assert (
        mgr.convert(
            DATE, "2017-06-30T10:30:00", Context(), Context(date_format="%m/%d/%Y %H:%M"), None
        )
        == "06/30/2017 10:30"
    )
    with pytest.raises(NotConvertible):
        mgr.convert(DATE, "31.02.2017", Context(date_format="%d.%m.%Y"), Context(), None)


def test_rate_table_validity_periods(rates):
    before, after = datetime(2017, 6, 30, 23), datetime(2017, 7, 1)
    assert rates.factor("USD", "EUR", before) == 0.90
    assert rates.factor("USD", "EUR", after) == 0.85
    assert rates.factor("EUR", "GBP", before) == pytest.approx(0.78 / 0.90)
    factors, total = rates.rates_in_force("USD", "EUR")
    assert factors == {0.90, 0.85} and total
    gap = RateTable(
        "USD",
        {
            "EUR": [
                RatePeriod(datetime(2017, 1, 1), datetime(2017, 2, 1), 0.9),
                RatePeriod(datetime(2017, 3, 1), None, 0.8),
            ]
        },
    )
    assert gap.factor("USD", "EUR", datetime(2017, 2, 15)) is None
    assert gap.factor("USD", "EUR", datetime(2016, 12, 31)) is None
    assert gap.rates_in_force("USD", "EUR") == (frozenset({0.9, 0.8}), False)
    with pytest.raises(ConversionError, match="overlapping"):
        RateTable(
            "USD",
            {
                "EUR": [
                    RatePeriod(None, datetime(2017, 2, 1), 0.9),
                    RatePeriod(datetime(2017, 1, 1), None, 0.8),
                ]
            },
        )
    with pytest.raises(ConversionError, match="positive"):
        RateTable("USD", {"EUR": [RatePeriod(None, None, 0)]})


def test_rate_table_from_csv(tmp_path):
    p = tmp_path / "rates.csv"
    p.write_text("currency,rate,valid_from,valid_to\nEUR,0.9,,2017-07-01\nEUR,0.85,2017-07-01,\n")
    t = RateTable.from_csv(p, base="USD")
    assert t.factor("EUR", "USD", datetime(2017, 8, 1)) == pytest.approx(1 / 0.85)
    p.write_text("currency,rate,valid_from,valid_to\nEUR,abc,,\n")
    with pytest.raises(ConversionError, match="line 2"):
        RateTable.from_csv(p, base="USD")


def test_no_rate_in_force_makes_the_clause_false_not_an_error():
    m = ConceptsModel(
        rates=RateTable("USD", {"EUR": [RatePeriod(datetime(2017, 7, 1), None, 0.85)]}),
        conversions={},
    )
    f = m.parse_filter("StockQuote where FinalPrice < 100 EUR")
    ev = {"concept": "StockQuote", "context": {"currency": "USD"}, "value": {"FinalPrice": 1}}
    assert not m.matches(f, m.parse_event({**ev, "time": "2017-06-01"}))
    assert m.matches(f, m.parse_event({**ev, "time": "2017-07-02"}))
    with pytest.raises(EventError, match="needs a time"):
        m.parse_event(ev)


class Vat:
    """A user-defined context property: prices with or without 20 % VAT (fixed in time)."""

    property = "vat"
    time_varying = False
    matching_value = "excluded"

    def check(self, src, dst):
        if {src, dst} - {"included", "excluded"}:
            raise ConversionError(f"vat is 'included' or 'excluded', not {src!r}/{dst!r}")

    def convert(self, value, src, dst, at):
        return value / 1.2 if src == "included" else value * 1.2


def test_user_conversion_through_entry_points(monkeypatch, tmp_path):
    ep = EntryPoint("vat", f"{__name__}:Vat", conv_mod.GROUP)
    monkeypatch.setattr(
        conv_mod, "entry_points", lambda group: [ep] if group == conv_mod.GROUP else []
    )
    mgr = ConversionManager()
    assert isinstance(mgr.conversions["vat"], Vat)
    assert (
        mgr.convert(
            MONEY,
            120,
            Context(currency="EUR", extra=(("vat", "included"),)),
            Context(currency="EUR", extra=(("vat", "excluded"),)),
            None,
        )
        == 100
    )
    broken = EntryPoint("bad", "no.such.module:Thing", conv_mod.GROUP)
    monkeypatch.setattr(conv_mod, "entry_points", lambda group: [broken])
    with pytest.raises(PluginError, match="bad"):
        ConversionManager()


def test_user_conversion_takes_part_in_matching_and_covering(tmp_path):
    from pathlib import Path

    ttl = Path(__file__).resolve().parents[2] / "models" / "concepts" / "ontologies" / "pubsift.ttl"
    g = rdflib.Graph().parse(ttl)
    ps = rdflib.Namespace("https://pubsift.org/ontology#")
    g.add((ps.Price, ps.contextProperty, ps.vat))
    from pubsift.models.concepts import Ontology
    from pubsift.models.concepts.context import ClientContext

    m = ConceptsModel(Ontology(g, str(ps)), conversions={"vat": Vat()})
    gross = ClientContext.of({"vat": "included", "currency": "EUR"})
    f = m.parse_filter("StockQuote where FinalPrice < 120", client=gross)  # 100 net
    net = m.parse_filter("StockQuote where FinalPrice < 90 EUR")  # no vat stated
    assert f.clauses[0].target.get("vat") == "excluded"
    ev = {
        "concept": "StockQuote",
        "time": "2017-01-01",
        "context": {"currency": "EUR", "vat": "included"},
        "value": {"FinalPrice": 110},
    }
    assert m.matches(f, m.parse_event(ev))  # 91.67 net < 100
    ev["value"]["FinalPrice"] = 121
    assert not m.matches(f, m.parse_event(ev))  # 100.83 net
    assert not m.covers(f, net) and not m.covers(net, f)  # different contexts: no claim
    with pytest.raises(ConversionError, match="vat"):
        m.parse_filter(
            "StockQuote where FinalPrice < 1",
            client=ClientContext.of({"vat": "sometimes", "currency": "EUR"}),
        )


def test_unece_table_agrees_with_qudt_and_om(shared_data):
    """Our UN/ECE -> pint table, OM 2's unit definitions and pint agree."""
    g = rdflib.Graph().parse(shared_data("ontologies", "om2") / "om-2.0.rdf")
    om = units_from_om(g)
    base = "http://www.ontology-of-units-of-measure.org/resource/om-2/"
    assert om[base + "poundAvoirdupois"] == "pound"
    assert om[base + "foot-International"] == "foot"
    assert len(om) >= 50


@pytest.mark.slow
def test_unece_codes_from_qudt(shared_data):
    g = rdflib.Graph().parse(shared_data("ontologies", "qudt") / "VOCAB_QUDT-UNITS-ALL.ttl")
    derived = unece_units_from_qudt(g)
    assert len(derived) > 1000
    ours = {k: canonical_unit(v) for k, v in UNECE.items() if len(k) == 3 and k.isupper()}
    agree = {k for k in ours if derived.get(k) == ours[k]}
    assert not {k for k in ours if k in derived and derived[k] != ours[k]}
    assert {"KGM", "LBR", "MTR", "FOT", "INH", "TNE", "GRM", "KMT", "SMI", "LTR"} <= agree
