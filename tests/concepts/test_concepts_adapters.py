"""The edges on real data: S&P 500 quotes (prices in USD) and UBL business documents
(amounts in GBP/USD with currencyID, quantities with unit codes), enriched with the
publisher's context, matched for subscribers in other currencies and units, and delivered
in the subscriber's context and vocabulary."""

from __future__ import annotations

import csv
import itertools
from datetime import datetime

import pytest
from pubsift.adapters import Event, Quarantined, Source, read
from pubsift.adapters.concepts import ConceptsSubscriber, Publisher
from pubsift.models.concepts.units import UREG

QUOTES = "all_stocks_1yr_2017-02-08_2018-02-07.csv"
QUOTE_VOCABULARY = {
    "close": "FinalPrice",
    "open": "OpenPrice",
    "high": "HighPrice",
    "low": "LowPrice",
    "volume": "TradedVolume",
    "Name": "Symbol",
    "date": "DateOfIssue",
}


QUOTE_PUBLISHER = {
    "concept": "StockQuote",
    "vocabulary": QUOTE_VOCABULARY,
    "context": {"currency": "USD", "units": {"[]": "count"}},
    "time_field": "date",
}


def quote_publisher(model):
    return Publisher(
        model,
        "StockQuote",
        QUOTE_VOCABULARY,
        {"currency": "USD", "units": {"[]": "count"}},
        time_field="date",
    )


def read_quotes(path, model, limit=None):
    """The quotes of a CSV file as semantic objects (a source with a publisher side)."""
    src = Source(str(path), model="concepts", publisher=QUOTE_PUBLISHER)
    return list(itertools.islice(read(src, models={"concepts": model}), limit))


def test_quotes_in_usd_matched_and_delivered_in_eur(model, rates, shared_data):
    path = shared_data("quotes") / QUOTES
    with open(path, newline="") as fh:
        rows = list(itertools.islice(csv.DictReader(fh), 600))
    outcomes = read_quotes(path, model, limit=600)
    assert [o.position for o in outcomes] == list(range(1, len(rows) + 1))
    assert all(isinstance(o, Event) for o in outcomes)
    events = [o.event for o in outcomes]
    assert events[0] == quote_publisher(model).enrich(rows[0])  # the adapter itself
    eu = ConceptsSubscriber(
        model,
        {"Kurs": "StockQuote", "Schluss": "FinalPrice", "Titel": "Symbol"},
        {"currency": "EUR", "date_format": "%d.%m.%Y"},
    )
    eu.subscribe("Kurs where Schluss < 40")
    got = 0
    for row, e in zip(rows, events):
        at = datetime.fromisoformat(row["date"])
        eur = float(row["close"]) * rates.factor("USD", "EUR", at)  # the oracle
        deliveries = eu.receive(e)
        assert bool(deliveries) == (eur < 40), row
        if deliveries:
            got += 1
            rec = deliveries[0].record
            assert rec["concept"] == "Kurs" and rec["value"]["Titel"] == row["Name"]
            assert rec["value"]["Schluss"] == pytest.approx(eur)
            d, m, y = rec["value"]["DateOfIssue"].split(".")
            assert f"{y}-{m}-{d}" == row["date"]
    assert 0 < got < len(rows)


def test_ubl_amounts_and_quantities_for_subscribers_in_other_units(model, shared_data):
    ubl = shared_data("business", "ubl")
    outcomes = [
        o
        for p in sorted(ubl.glob("*.xml"))
        for o in read(Source(str(p), model="concepts"), models={"concepts": model})
    ]
    events = [o.event for o in outcomes if isinstance(o, Event)]
    assert len(events) >= 30
    # packages and cartons are not units of measure: quarantined, not lost
    assert any(
        "'PKG' is not a unit of measure" in o.message
        for o in outcomes
        if isinstance(o, Quarantined)
    )
    us = ConceptsSubscriber(
        model,
        {"Shipment": "BusinessDocument", "Weight": "NetWeight", "Total": "TotalAmount"},
        {"currency": "USD", "units": {"[mass]": "lb", "[length]": "ft"}},
    )
    heavy = us.subscribe("Shipment where Weight > 200")
    onto = model.ontology
    nw = (onto.resolve("NetWeight"),)
    matched = 0
    for e in events:
        w = e.find(nw)
        expected = w is not None and UREG.Quantity(w.value, w.context.unit).to("lb").magnitude > 200
        assert model.matches(heavy, e) == expected
        if expected:
            matched += 1
            rec = us.receive(e)[0].record
            assert rec["concept"] == "Shipment"
            assert rec["value"]["Weight"] == pytest.approx(w.value * 2.2046226218)
            if "Total" in rec["value"]:
                obj = us.receive(e)[0].obj
                assert obj.find((onto.resolve("TotalAmount"),)).context.currency == "USD"
    assert 0 < matched < len(events)
    lengths = [e for e in events if e.find((onto.resolve("Distance"),)) is not None]
    assert lengths, "the joinery documents give lengths in feet and inches"
    long_ = us.subscribe("Shipment where Distance >= 2.5 m")
    for e in lengths:
        d = e.find((onto.resolve("Distance"),))
        assert model.matches(long_, e) == (
            UREG.Quantity(d.value, d.context.unit).to("m").magnitude >= 2.5
        )


def test_bad_input_is_named(model, tmp_path):
    (bad_close,) = [
        o
        for o in read_quotes(
            _csv(tmp_path, "date,close,Name\n2017-01-02,1.5,A\n2017-01-03,abc,B\n"), model
        )
        if isinstance(o, Quarantined)
    ]
    assert (bad_close.source.endswith("q.csv"), bad_close.position, bad_close.reason) == (
        True,
        2,
        "concept-enrichment",
    )
    assert "'abc' is not a number" in bad_close.message and "close" in bad_close.message
    (unknown,) = read_quotes(_csv(tmp_path, "date,bid\n2017-01-02,1\n"), model)
    assert unknown.reason == "concept-enrichment"
    assert "'bid' is not in the publisher's vocabulary" in unknown.message
    bad = tmp_path / "bad.xml"
    bad.write_text("<Order><unclosed></Order>")
    (broken,) = read(Source(str(bad), model="concepts"), models={"concepts": model})
    assert (broken.source, broken.position, broken.reason) == (str(bad), 0, "xml-syntax")
    bomb = tmp_path / "bomb.xml"
    bomb.write_text(
        '<?xml version="1.0"?><!DOCTYPE Order [<!ENTITY a "aaaaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><Order><ID>&b;</ID></Order>'
    )
    (refused,) = read(Source(str(bomb), model="concepts"), models={"concepts": model})
    assert refused.reason == "xml-entity"  # the xml model's hardened parser refuses it


UBL_NS = (
    'xmlns="urn:oasis:names:specification:ubl:schema:xsd:Order-2" '
    'xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2" '
    'xmlns:cac="urn:oasis:names:specification:ubl:schema:xsd:'
    'CommonAggregateComponents-2"'
)
UBL_LINE = (
    '<cac:OrderLine><cac:LineItem><cbc:ID>1</cbc:ID><cbc:Quantity unitCode="KGM">3'
    '</cbc:Quantity><cbc:LineExtensionAmount currencyID="GBP">10'
    "</cbc:LineExtensionAmount></cac:LineItem></cac:OrderLine>"
)


def _ubl(doctype, note="&x;"):
    return (
        f'<?xml version="1.0"?>{doctype}<Order {UBL_NS}><cbc:Note>{note}</cbc:Note>'
        f"{UBL_LINE}</Order>"
    )


@pytest.fixture
def listener():
    """A local TCP port that records whether anything connected (a DTD or entity fetch)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        s.setblocking(False)
        yield s


def _connected(listener):
    try:
        listener.accept()[0].close()
    except BlockingIOError:
        return False
    return True


@pytest.mark.parametrize("stream_above", [32 << 20, 1], ids=["whole", "streamed"])
@pytest.mark.parametrize(
    "doctype, message",
    [
        (
            '<!DOCTYPE Order [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
            '<!ENTITY x "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>',
            "entity declaration 'a' refused",
        ),
        (
            '<!DOCTYPE Order [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
            "external entity 'x' refused",
        ),
        (
            '<!DOCTYPE Order [<!ENTITY x SYSTEM "http://127.0.0.1:{port}/x">]>',
            "external entity 'x' refused",
        ),
        (
            '<!DOCTYPE Order [<!ENTITY % p SYSTEM "http://127.0.0.1:{port}/p.dtd"> %p;]>',
            "external entity 'p' refused",
        ),
        ('<!DOCTYPE Order SYSTEM "http://127.0.0.1:{port}/order.dtd">', "reference to entity &x;"),
    ],
    ids=["billion-laughs", "xxe-file", "xxe-http", "parameter-entity", "external-dtd"],
)
def test_ubl_entities_and_dtds_are_quarantined_not_parsed(
    model, tmp_path, listener, doctype, message, stream_above
):
    """A UBL document given to the concepts reader goes through the xml model's hardened
    parser (docs/xml.md, "Events and safe parsing"): entity declarations, external entities and entities of an
    external DTD are quarantined with the reason ``xml-entity``; nothing is fetched."""
    from pubsift.adapters.readers.limits import ReadLimits

    port = listener.getsockname()[1]
    doc = tmp_path / "order.xml"
    doc.write_text(_ubl(doctype.format(port=port)))
    got = list(
        read(
            Source(str(doc), model="concepts"),
            models={"concepts": model},
            limits=ReadLimits(stream_above=stream_above),
        )
    )
    assert [(type(o).__name__, o.reason) for o in got] == [("Quarantined", "xml-entity")], got
    assert message in got[0].message
    assert "root:x:0" not in got[0].message + got[0].excerpt  # no /etc/passwd
    assert not _connected(listener)


def test_ubl_with_an_external_dtd_is_read_without_loading_it(model, tmp_path, listener):
    doc = tmp_path / "order.xml"
    port = listener.getsockname()[1]
    doc.write_text(
        _ubl(f'<!DOCTYPE Order SYSTEM "http://127.0.0.1:{port}/order.dtd">', note="plain")
    )
    got = list(read(Source(str(doc), model="concepts"), models={"concepts": model}))
    assert [type(o).__name__ for o in got] == ["Event"], got
    assert not _connected(listener)


def _csv(tmp_path, text):
    p = tmp_path / "q.csv"
    p.write_text(text)
    return p
