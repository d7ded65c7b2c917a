"""Subscribers of the Spark job from JSON lines and TOML tables (docs/spark.md,
"Subscriptions and job files"): every bad entry reported at once with its line, filters as each model
parses them, concepts deliveries converted into the subscriber's vocabulary and context.
No Spark is started here."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree
from pubsift.adapters.spark.subscriptions import (
    MAX_LINE_BYTES,
    JobError,
    JobSubscriber,
    by_model,
    id_problem,
    load_subscriptions,
    subscribers_from_tables,
)
from pubsift.core.errors import PubsiftError
from pubsift.core.model import FilterModel
from pubsift.core.registry import load_model
from pubsift.models.concepts import ConceptsModel
from pubsift.models.concepts.testing import rate_table
from pubsift.models.concepts.units import UREG

RECORDS = load_model("records")
XML = load_model("xml")


@pytest.fixture(scope="module")
def concepts() -> ConceptsModel:
    return ConceptsModel(rates=rate_table(), conversions={})


def write(tmp_path, *lines, name="subs.jsonl"):
    p = tmp_path / name
    p.write_bytes(
        b"".join(
            (
                ln
                if isinstance(ln, bytes)
                else (ln if isinstance(ln, str) else json.dumps(ln)).encode()
            )
            + b"\n"
            for ln in lines
        )
    )
    return str(p)


def problems_of(path, models=None):
    with pytest.raises(JobError) as info:
        load_subscriptions(path, models)
    assert str(info.value) == "\n".join(info.value.problems)
    return info.value.problems


# -- good files -----------------------------------------------------------------------------
def test_records_text_and_eventbridge_or(tmp_path):
    either = [{"symbol": ["IBM"]}, {"price": [{"numeric": [">", 100]}]}]
    path = write(
        tmp_path,
        "# quotes",
        "",
        {"id": "alice", "model": "records", "filter": 'symbol = "IBM" and price > 45'},
        {"id": "bob", "model": "records", "filter": {"$or": either}},
    )
    alice, bob = load_subscriptions(path)
    assert (alice.id, alice.model, alice.where) == ("alice", "records", f"{path}:3")
    assert alice.filters == (RECORDS.parse_filter('symbol = "IBM" and price > 45'),)
    assert alice.spec["filter"] == 'symbol = "IBM" and price > 45' and alice.view is None
    assert len(bob.filters) == 2
    branches = [RECORDS.parse_filter(b) for b in either]  # each branch on its own
    for symbol in ("IBM", "SAP"):
        for price in (40, 50, 150):
            e = RECORDS.parse_event({"symbol": symbol, "price": price})
            assert (
                any(RECORDS.matches(f, e) for f in bob.filters)
                == any(RECORDS.matches(g, e) for g in branches)
                == (symbol == "IBM" or price > 100)
            )
            assert RECORDS.matches(alice.filters[0], e) == (symbol == "IBM" and price > 45)
            assert alice.delivered(RECORDS, alice.filters[0], e) == RECORDS.dump_event(e)


def test_a_json_form_written_as_text_is_parsed_strictly(tmp_path):
    path = write(
        tmp_path,
        {"id": "a", "model": "records", "filter": '{"symbol": ["IBM"]}'},
        {"id": "b", "model": "records", "filter": '{"symbol": ["IBM"], "symbol": [1]}'},
    )
    assert problems_of(path) == [
        f'{path}:2: filter: invalid JSON: duplicate key "symbol" in a JSON object'
    ]


def test_xml_xpath_filters_match_as_lxml_evaluates_them(tmp_path):
    xpaths = ["/rss/channel/item[title]", "//item[category = 'sport']", "/rss//link"]
    path = write(
        tmp_path, *[{"id": f"x{i}", "model": "xml", "filter": x} for i, x in enumerate(xpaths)]
    )
    subs = load_subscriptions(path)
    docs = [
        b"<rss><channel><item><title>t</title><category>sport</category></item></channel></rss>",
        b"<rss><channel><item><link>l</link></item></channel></rss>",
        b"<rss><channel><title>c</title></channel></rss>",
    ]
    for doc in docs:
        e = XML.parse_event(doc)
        for s, x in zip(subs, xpaths):
            assert XML.matches(s.filters[0], e) == bool(etree.fromstring(doc).xpath(x))
            assert s.delivered(XML, s.filters[0], e) == XML.dump_event(e)


def _order(model, **value):
    return model.parse_event(
        {
            "concept": "Order",
            "time": "2017-06-15",
            "context": {"currency": "USD", "unit": "kg"},
            "value": value,
        }
    )


def test_concepts_subscribers_in_eur_and_gbp_get_converted_deliveries(tmp_path, concepts):
    path = write(
        tmp_path,
        {
            "id": "eu",
            "model": "concepts",
            "filter": "Bestellung where Betrag < 1000",
            "vocabulary": {"Bestellung": "Order", "Betrag": "TotalAmount", "Gewicht": "NetWeight"},
            "context": {"currency": "EUR", "units": {"[mass]": "g"}},
        },
        {
            "id": "uk",
            "model": "concepts",
            "filter": {"concept": "Order", "where": [{"attr": "Cost", "op": "<", "value": 1000}]},
            "vocabulary": {"Cost": "TotalAmount"},
            "context": {"currency": "GBP", "units": {"[mass]": "lb"}},
        },
    )
    eu, uk = load_subscriptions(path, {"concepts": concepts})
    at = datetime(2017, 6, 15)
    rates = rate_table()
    for amount in (900, 1150, 1250, 1400):
        e = _order(concepts, TotalAmount=amount, NetWeight=2.5)
        eur, gbp = amount * rates.factor("USD", "EUR", at), amount * rates.factor("USD", "GBP", at)
        for sub, local, expected in ((eu, "Betrag", eur), (uk, "Cost", gbp)):
            (f,) = sub.filters
            assert concepts.matches(f, e) == (expected < 1000)
            if not concepts.matches(f, e):
                continue
            got = sub.delivered(concepts, f, e)
            json.dumps(got, allow_nan=False)
            assert got["value"][local] == pytest.approx(expected)
            assert "unconverted" not in got
        if amount * rates.factor("USD", "EUR", at) < 1000:
            got = eu.delivered(concepts, eu.filters[0], e)
            assert got["concept"] == "Bestellung"
            assert got["value"]["Gewicht"] == pytest.approx(
                UREG.Quantity(2.5, "kg").to("g").magnitude
            )


def test_a_conversion_beyond_a_float_is_delivered_unconverted_never_inf(tmp_path, concepts):
    path = write(
        tmp_path,
        {
            "id": "jp",
            "model": "concepts",
            "filter": "Order where Cost > 1",
            "vocabulary": {"Cost": "TotalAmount"},
            "context": {"currency": "JPY", "units": {"[mass]": "mg"}},
        },
    )
    (jp,) = load_subscriptions(path, {"concepts": concepts})
    e = _order(concepts, TotalAmount=1e307, NetWeight=3.0)
    got = jp.delivered(concepts, jp.filters[0], e)
    json.dumps(got, allow_nan=False)
    assert got["value"]["Cost"] == 1e307  # the publisher's amount ...
    assert got["unconverted"] == [{"path": ["Cost"], "context": {"currency": "USD"}}]
    assert got["value"]["NetWeight"] == pytest.approx(3e6)  # ... the rest converted


def test_a_value_without_a_rate_is_listed_unconverted(tmp_path):
    from pubsift.models.concepts import RatePeriod, RateTable

    m = ConceptsModel(
        rates=RateTable("USD", {"EUR": [RatePeriod(datetime(2017, 7, 1), None, 0.85)]}),
        conversions={},
    )
    path = write(
        tmp_path,
        {
            "id": "eu",
            "model": "concepts",
            "filter": 'Order where Symbol = "x"',
            "context": {"currency": "EUR"},
        },
    )
    (eu,) = load_subscriptions(path, {"concepts": m})
    got = eu.delivered(m, eu.filters[0], _order(m, TotalAmount=5, Symbol="x"))
    assert got["value"]["TotalAmount"] == 5
    assert got["unconverted"] == [{"path": ["TotalAmount"], "context": {"currency": "USD"}}]


def test_toml_tables_and_by_model(concepts):
    tables = [
        {"id": "a", "model": "records", "filter": "x > 1"},
        {"id": "b", "model": "xml", "filter": "//a"},
        {"id": "c", "model": "records", "filter": {"x": [1]}},
    ]
    subs = subscribers_from_tables(tables, "job.toml")
    assert [s.where for s in subs] == [
        'job.toml: [[subscriber]] 1 (id "a")',
        'job.toml: [[subscriber]] 2 (id "b")',
        'job.toml: [[subscriber]] 3 (id "c")',
    ]
    assert {k: [s.id for s in v] for k, v in by_model(subs).items()} == {
        "records": ["a", "c"],
        "xml": ["b"],
    }


def test_subscribers_travel_in_a_closure_as_spark_pickles_it(tmp_path, concepts):
    cloudpickle = pytest.importorskip("pyspark.cloudpickle")  # Spark's (and Connect's)
    path = write(
        tmp_path,
        {"id": "a", "model": "records", "filter": "x > 1"},
        {
            "id": "eu",
            "model": "concepts",
            "filter": "Order where TotalAmount < 5",
            "context": {"currency": "EUR"},
        },
    )
    records, eu = load_subscriptions(path, {"concepts": concepts})
    e = _order(concepts, TotalAmount=2)
    before = eu.delivered(concepts, eu.filters[0], e)  # the model has cached conversions
    assert before["value"]["TotalAmount"] == pytest.approx(2 * 0.9)
    for s in (records, eu):
        back = cloudpickle.loads(cloudpickle.dumps(s))
        assert back == s and back.filters == s.filters
    back = cloudpickle.loads(cloudpickle.dumps(eu))
    assert back.delivered(back.view.model, back.filters[0], e) == before


# -- problems -------------------------------------------------------------------------------
def test_every_problem_is_reported_at_once_in_file_order(tmp_path):
    path = write(
        tmp_path,
        {"id": "alice", "model": "records", "filter": 'symbol = "IBM"'},  # 1 good
        {"id": "alice", "model": "records", "filter": "price > 1"},  # 2 duplicate
        {"id": "c", "model": "recs", "filter": "x"},  # 3
        {"id": "d", "model": "records", "filter": "symbol = = 3"},  # 4
        {"id": "e", "model": "xml", "filter": "/rss/channel/item[title"},  # 5
        {"id": "f", "model": "concepts", "filter": "Nonsense where x < 40"},  # 6
        {"id": "g", "model": "concepts", "filter": "StockQuote where FinalPrice < 40 kg"},
        {"id": "h", "model": "records", "filter": "a = 1", "extra": 1},  # 8
        [1, 2],  # 9
        '{"id": "x", "id": "y"}',  # 10
        {"id": "z", "model": "xml", "filter": "//item", "context": {}},  # 11
        {"model": "records", "filter": "a = 1"},  # 12
        {"id": 7, "model": "records", "filter": "a = 1"},  # 13
        {"id": "", "model": "records", "filter": "a = 1"},  # 14
        {"id": "k", "model": "records"},  # 15
        {"id": "l", "model": "records", "filter": 3},  # 16
        "{not json",  # 17
        '{"id": "n", "model": "records", "filter": "a = 1", "x": NaN}',  # 18
        {
            "id": "o",
            "model": "concepts",
            "filter": "Order where TotalAmount > 1",
            "vocabulary": {"Heft": "Nonsense"},
        },  # 19
        {
            "id": "p",
            "model": "concepts",
            "filter": "Order where TotalAmount > 1",
            "context": "EUR",
        },  # 20
    )
    got = problems_of(path)
    where = [p.split(": ", 1)[0] for p in got]
    assert where == [
        f"{path}:{n}" for n in (2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
    ]
    text = "\n".join(got)
    assert f'{path}:2: duplicate id "alice" (first at {path}:1)' in got
    assert 'unknown model "recs" (installed: concepts, records, xml)' in got[1]
    assert "at line 1, column 10, near 'symbol = = 3'" in got[2]  # the position
    assert "XPath syntax error" in got[3] and "column 19" in got[3]
    assert "unknown concept 'Nonsense'" in got[4] and "column 1" in got[4]
    assert "money value; it has no unit" in got[5]  # impossible conversion
    assert 'unknown key(s) "extra"; the keys are id, model, filter, vocabulary, context' in got[6]
    assert "not an array" in got[7]
    assert 'duplicate key "id"' in got[8]
    assert "context belongs to concepts subscribers, not to model 'xml'" in got[9]
    assert got[10].endswith("the subscriber has no id")
    assert got[11].endswith("id is a string, not a number")
    assert got[12].endswith("an id is not empty")
    assert got[13].endswith("the subscriber has no filter")
    assert "filter is the model's text form" in got[14]
    assert "invalid JSON" in got[15] and "column 2" in got[15]
    assert "NaN is not JSON" in got[16]
    assert "'Heft' to 'Nonsense'" in got[17]
    assert "context is a JSON object, not a string" in got[18]
    assert text.count("\n") == len(got) - 1


def test_a_duplicate_of_a_bad_entry_still_names_both_lines(tmp_path):
    path = write(
        tmp_path,
        {"id": "a", "model": "records", "filter": "x = = 1"},
        {"id": "a", "model": "records", "filter": "x = 1"},
    )
    got = problems_of(path)
    assert got[1] == f'{path}:2: duplicate id "a" (first at {path}:1)'


@pytest.mark.parametrize(
    "sid, problem",
    [
        ("a/b", "'/'"),
        ("a\\b", "'\\\\'"),
        (".", "cannot name"),
        ("..", "cannot name"),
        ("__HIVE_DEFAULT_PARTITION__", "cannot name"),
        (" a", "white space"),
        ("a\tb", "U+0009"),
        ("a\u200bb", "U+200B"),
        ("a\u2028b", "U+2028"),
        ("\ud800", "U+D800"),
        ("x" * 201, "at most 200"),
        ("=" * 90, "bytes once Spark escapes it"),
        ("é" * 130, "bytes once Spark escapes it"),
    ],
)
def test_ids_that_cannot_name_a_partition_directory(sid, problem):
    assert problem in id_problem(sid)


@pytest.mark.parametrize(
    "sid", ["alice", "a b", "x=y", "p%q", "c:d", "007", "a@b.c", "üé", "=" * 81, "x" * 200, "[x]"]
)
def test_ids_spark_escapes_are_allowed(sid):
    assert id_problem(sid) == ""


def test_unreadable_lines_are_problems_and_the_rest_is_still_checked(tmp_path):
    good = json.dumps({"id": "a", "model": "records", "filter": "x = 1"}).encode()
    bad_filter = json.dumps({"id": "b", "model": "records", "filter": "x = = 1"}).encode()
    path = write(
        tmp_path,
        b"\xff\xfe garbage",
        b"a\x00b",
        b"[" * 200_000 + b"]" * 200_000,
        b"x" * (MAX_LINE_BYTES + 10),
        good,
        bad_filter,
    )
    got = problems_of(path)
    assert [p.split(": ", 1)[0] for p in got] == [f"{path}:{n}" for n in (1, 2, 3, 4, 6)]
    assert "not UTF-8 text (invalid byte 0xff at column 1)" in got[0]
    assert "a NUL byte at column 2" in got[1]
    assert "nested too deeply" in got[2]
    assert f"a line longer than {MAX_LINE_BYTES:,} bytes" in got[3]
    assert all(len(p) <= 600 for p in got)


def test_an_empty_or_missing_file_is_a_problem(tmp_path):
    empty = write(tmp_path, "# nothing", "   ")
    assert problems_of(empty) == [f"{empty}: no subscriber (the file holds no JSON line)"]
    missing = str(tmp_path / "nope.jsonl")
    assert problems_of(missing) == [
        f"{missing}: cannot read the subscriptions file: No such file or directory"
    ]
    with pytest.raises(JobError, match="no subscriber"):
        subscribers_from_tables([], "job.toml")


def test_a_model_hook_that_breaks_the_contract_is_reported_not_raised(tmp_path):
    class Broken(FilterModel):
        name = "broken"

        def parse_filter(self, spec):
            raise KeyError("oops")

        parse_event = matches = covers = dump_filter = load_filter = dump_event = load_event = (
            lambda *a: None
        )

    path = write(tmp_path, {"id": "a", "model": "broken", "filter": "x"})
    (got,) = problems_of(path, {"broken": Broken()})
    assert got.startswith(f"{path}:1: filter: internal error in model 'broken'")
    assert "KeyError" in got and "bug in the model" in got


def test_many_problems_are_counted_beyond_the_kept_ones(tmp_path):
    path = write(tmp_path, *(["[]"] * 1500))
    with pytest.raises(JobError) as info:
        load_subscriptions(path)
    assert len(info.value.problems) == 1000 and info.value.more == 500
    assert str(info.value).endswith("... and 500 more problem(s)")


def test_job_error_is_a_pubsift_error():
    assert issubclass(JobError, PubsiftError) and issubclass(JobError, ValueError)
    assert JobSubscriber.__dataclass_params__.frozen


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=200),
            st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                lambda c: (
                    st.lists(c, max_size=3)
                    | st.dictionaries(
                        st.sampled_from(["id", "model", "filter", "context", "vocabulary", "z"]),
                        c,
                        max_size=5,
                    )
                ),
                max_leaves=12,
            ).map(lambda v: json.dumps(v).encode()),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_garbage_lines_give_subscribers_or_a_job_error_nothing_else(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("g") / "subs.jsonl"
    path.write_bytes(b"\n".join(ln.replace(b"\n", b" ").replace(b"\r", b" ") for ln in lines))
    try:
        subs = load_subscriptions(str(path))
    except JobError as exc:
        assert exc.problems and all(p.startswith(str(path)) for p in exc.problems)
    else:
        assert subs and all(isinstance(s, JobSubscriber) for s in subs)
