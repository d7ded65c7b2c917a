"""Semantic objects from sources (docs/concepts.md, "Vocabulary agreement and the edges"): CSV and JSON-lines
records enriched by a source's publisher side, UBL documents through
``ubl_semantic_objects``; what cannot be enriched is quarantined as ``concept-enrichment``
naming the field, and a bad publisher description is a SourceError before any record."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from lxml import etree
from pubsift.adapters import Event, Input, Quarantined, Source, SourceError, read, read_input
from pubsift.adapters.concepts import Publisher, publisher_for, ubl_semantic_objects
from pubsift.adapters.readers.converting import converter
from pubsift.models.concepts import ConceptsModel
from pubsift.models.records import RecordsModel
from pubsift.models.xml.parsing import parse_document

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
MODEL = ConceptsModel()
MODELS = {"concepts": MODEL}
QUOTES = {
    "concept": "StockQuote",
    "vocabulary": {
        "close": "FinalPrice",
        "volume": "TradedVolume",
        "Name": "Symbol",
        "date": "DateOfIssue",
    },
    "context": {"currency": "USD", "units": {"[]": "count"}},
    "time_field": "date",
}
LINES = ("OrderLine", "InvoiceLine", "DespatchLine", "ReceiptLine", "LineItem")


def from_bytes(data: bytes, name: str, publisher=QUOTES, **settings):
    src = Source(name, model="concepts", publisher=publisher, **settings)
    return list(read_input(Input(name, src, lambda: io.BytesIO(data)), models=MODELS))


def test_csv_rows_become_semantic_objects_in_the_publishers_context():
    out = from_bytes(
        b"date,close,volume,Name\n2017-02-08,45.06,4330414,AAL\n2017-02-09,007,,TRUE\n", "q.csv"
    )
    assert all(isinstance(o, Event) and o.model == "concepts" for o in out)
    pub = Publisher(
        MODEL, QUOTES["concept"], QUOTES["vocabulary"], QUOTES["context"], QUOTES["time_field"]
    )
    assert out[0].event == pub.enrich(
        {"date": "2017-02-08", "close": "45.06", "volume": "4330414", "Name": "AAL"}
    )
    # cells stay strings for the publisher: "TRUE" is a symbol, "007" a price of 7,
    # an empty cell an absent member
    dumped = MODEL.dump_event(out[1].event)
    assert dumped["value"]["Symbol"]["value"] == "TRUE"
    assert dumped["value"]["FinalPrice"]["value"] == 7 and "TradedVolume" not in dumped["value"]


@pytest.mark.parametrize(
    "cell, words",
    [
        ("abc", "'abc' is not a number"),
        ("nan", "'nan' is not a number"),
        ("1_000", "'1_000' is not a number"),
        ("1e999", "beyond the range"),
    ],
)
def test_a_value_the_publisher_cannot_type_is_concept_enrichment(cell, words):
    out = from_bytes(f"date,close,Name\n2017-02-08,1,A\n2017-02-09,{cell},B\n".encode(), "q.csv")
    assert [getattr(o, "reason", "event") for o in out] == ["event", "concept-enrichment"]
    assert words in out[1].message and "close" in out[1].message and out[1].position == 2


def test_declared_column_types_still_apply_with_a_publisher():
    out = from_bytes(b"date,close,Name\n2017-02-08,x,A\n", "q.csv", columns={"close": "float"})
    assert (out[0].reason, "column 'close'" in out[0].message) == ("csv-type", True)


def test_json_lines_become_semantic_objects_and_bad_ones_are_named():
    out = from_bytes(
        b'{"date": "2017-02-08", "close": 45.06, "Name": "AAL"}\n'
        b'{"date": "2017-02-08", "close": true, "Name": "AAL"}\n'
        b'{"date": "2017-02-08", "bid": 1}\n'
        b"[1]\n",
        "q.jsonl",
    )
    assert [getattr(o, "reason", "event") for o in out] == [
        "event",
        "concept-enrichment",
        "concept-enrichment",
        "not-an-object",
    ]
    assert "True is not a number" in out[1].message and "close" in out[1].message
    assert "'bid' is not in the publisher's vocabulary" in out[2].message
    assert MODEL.dump_event(out[0].event)["value"]["FinalPrice"]["value"] == 45.06


@pytest.mark.parametrize(
    "publisher, words",
    [
        ({"vocabulary": {}}, "concept is the concept of every record"),
        ({"concept": "StockQuote", "currency": "USD"}, "unknown setting(s) currency"),
        ({"concept": "NoSuchConcept"}, "NoSuchConcept"),
        ({"concept": "StockQuote", "vocabulary": {"a": 1}}, "vocabulary maps field names"),
        ({"concept": "StockQuote", "ignore": "date"}, "ignore is a list of field names"),
        ({"concept": "StockQuote", "time_field": 3}, "time_field is a field name"),
        ({"concept": "StockQuote", "context": {"currency": 5}}, "'currency' is a string"),
        ({"concept": "StockQuote", "context": {"unit": "zorkmid"}}, "unknown unit 'zorkmid'"),
        ({"concept": "StockQuote", "context": "USD"}, "a client context is a JSON object"),
    ],
)
def test_a_bad_publisher_description_is_a_source_error_before_reading(publisher, words):
    src = Source("q.csv", model="concepts", publisher=publisher)
    opened = []

    def open_():
        opened.append(1)
        return io.BytesIO(b"close\n1\n")

    with pytest.raises(SourceError, match=r"q.csv: publisher") as exc:
        list(read_input(Input("q.csv", src, open_), models=MODELS))
    assert words in str(exc.value) and not opened


def test_a_publisher_needs_the_concepts_model():
    src = Source("q.csv", publisher={"concept": "StockQuote"})  # model: records
    with pytest.raises(SourceError, match='model = "concepts"'):
        converter(RecordsModel(), src)


def test_the_publisher_is_built_once_per_description(tmp_path):
    a = Source(str(tmp_path / "a.csv"), model="concepts", publisher=QUOTES)
    assert publisher_for(MODEL, a) is publisher_for(MODEL, a.with_path("b.csv"))
    assert publisher_for(MODEL, a) is not publisher_for(ConceptsModel(), a)
    for name in ("a.csv", "b.csv"):
        (tmp_path / name).write_text("date,close,Name\n2017-02-08,1,A\n")
    out = list(
        read(
            Source(str(tmp_path / "a.csv"), model="concepts", publisher=QUOTES),
            Source(str(tmp_path / "b.csv"), model="concepts", publisher=QUOTES),
            models=MODELS,
        )
    )
    assert [(Path(o.source).name, o.position) for o in out] == [("a.csv", 1), ("b.csv", 1)]


# -- UBL ----------------------------------------------------------------------------------------
def ubl_files() -> list[Path]:
    d = DATA / "business" / "ubl"
    if not d.exists():
        pytest.skip(f"real data not available: {d} is absent")
    return sorted(d.glob("*.xml"))


def outermost_lines(root) -> int:
    """The document lines as lxml's XPath counts them (the outermost line elements)."""
    test = " or ".join(f"local-name() = '{n}'" for n in LINES)
    return int(root.xpath(f"count(//*[{test}][not(ancestor::*[{test}])])"))


def test_ubl_documents_through_ubl_semantic_objects():
    total = quarantined = 0
    for p in ubl_files():
        root = parse_document(p.read_bytes()).root
        out = list(ubl_semantic_objects(root, MODEL, p.name))
        n = outermost_lines(root)
        assert [o.position for o in out] == list(range(1, max(n, 1) + 1)), p.name
        assert all(o.source == p.name for o in out)

        def outline(outcomes):
            return [
                (o.position, o.event if isinstance(o, Event) else (o.reason, o.message))
                for o in outcomes
            ]

        via_read = list(read(Source(str(p), model="concepts"), models=MODELS))
        assert outline(via_read) == outline(out)  # read() calls it, on the file
        assert {o.source for o in via_read} == {str(p)}
        for o in out:
            if isinstance(o, Quarantined):
                quarantined += 1
                assert o.reason == "concept-enrichment"
                assert "is not a unit of measure" in o.message or "no unit code" in o.message, (
                    o.message
                )
                assert "Quantity" in o.message and "XML line" in o.message
                assert "<" in o.excerpt
        total += len(out)
    assert total >= 60 and 0 < quarantined < total


def test_a_document_type_that_is_not_a_concept_quarantines_each_line():
    root = etree.fromstring(
        b"<Memo><Line/><InvoiceLine><Q>1</Q></InvoiceLine><InvoiceLine/></Memo>"
    )
    out = list(ubl_semantic_objects(root, MODEL, "memo.xml"))
    assert [(o.position, o.reason) for o in out] == [
        (1, "concept-enrichment"),
        (2, "concept-enrichment"),
    ]
    assert "document type Memo is not a concept" in out[0].message


def test_an_amount_without_currency_loses_its_line_only():
    root = etree.fromstring(
        b"<Order><IssueDate>2005-06-20</IssueDate>"
        b'<OrderLine><PriceAmount currencyID="GBP">2</PriceAmount></OrderLine>'
        b"<OrderLine><PriceAmount>3</PriceAmount></OrderLine>"
        b'<OrderLine><Quantity unitCode="KGM">x</Quantity></OrderLine></Order>'
    )
    out = list(ubl_semantic_objects(root, MODEL, "o.xml"))
    assert [getattr(o, "reason", "event") for o in out] == [
        "event",
        "concept-enrichment",
        "concept-enrichment",
    ]
    assert "PriceAmount: an amount without currencyID" in out[1].message
    assert "'x' is not a number" in out[2].message


def test_a_publisher_side_without_a_model_reads_semantic_objects():
    src = Source("q.csv", publisher=QUOTES)  # no model named
    out = list(
        read_input(
            Input("q.csv", src, lambda: io.BytesIO(b"date,close,Name\n2017-02-08,45.06,AAL\n")),
            models=MODELS,
        )
    )
    assert [(type(o), o.model) for o in out] == [(Event, "concepts")]
