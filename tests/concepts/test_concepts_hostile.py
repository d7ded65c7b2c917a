"""Hostile and extreme input for the concepts model (docs/concepts.md, "Limits (hostile input)"): every hook answers correctly
or raises a PubsiftError naming what and where — never another exception, a hang or
unbounded memory. Limits are those of :mod:`pubsift.models.concepts.limits`."""

from __future__ import annotations

import json
import tracemalloc

import pytest
from pubsift.core.errors import ConversionError, EventError, FilterSyntaxError, PubsiftError
from pubsift.models.concepts import ClientContext, Context
from pubsift.models.concepts.conversion import CACHE_SIZE, ConversionManager
from pubsift.models.concepts.filters import Clause, ConceptFilter
from pubsift.models.concepts.limits import MAX_DEPTH, MAX_TEXT_LENGTH, MAX_TOKENS
from pubsift.models.concepts.ontology import QUANTITY, Ontology, UnknownConcept
from pubsift.models.concepts.vocabulary import VocabularyAgreement
from pubsift.models.constraints import relations
from pubsift.models.constraints.constraints import Constraint, Op
from pubsift.models.constraints.limits import MAX_STRING
from pubsift.models.records.index import RecordsIndex


def _order(model, value, context=None, time=None):
    obj = {"concept": "Order", "value": value}
    if context is not None:
        obj["context"] = context
    if time is not None:
        obj["time"] = time
    return model.parse_event(obj)


# -- 1. explicit context properties override inherited ones ---------------------------------
def test_explicit_scale_one_overrides_inherited_scale(model):
    f = model.parse_filter("Order where NetWeight > 1000 kg")
    explicit = _order(
        model, {"NetWeight": {"value": 2, "context": {"unit": "kg", "scale": 1}}}, {"scale": 1000}
    )
    inherited = _order(
        model, {"NetWeight": {"value": 2, "context": {"unit": "kg"}}}, {"scale": 1000}
    )
    assert not model.matches(f, explicit)  # 2 kg
    assert model.matches(f, inherited)  # 2000 kg


def test_explicit_scale_one_overrides_inherited_scale_for_money(model):
    f = model.parse_filter("Order where FinalPrice > 1000 USD")
    e = _order(
        model,
        {"FinalPrice": {"value": 2, "context": {"scale": 1}}},
        {"currency": "USD", "scale": 1000},
        "2017-06-01",
    )
    assert not model.matches(f, e)


def test_explicit_scale_one_survives_the_event_round_trip(model):
    e = _order(
        model, {"NetWeight": {"value": 2, "context": {"unit": "kg", "scale": 1}}}, {"scale": 1000}
    )
    wire = model.dump_event(e)
    assert wire["value"]["NetWeight"]["context"]["scale"] == 1
    assert model.load_event(json.loads(json.dumps(wire))) == e


def test_explicit_null_date_format_means_iso_over_an_inherited_format(model):
    f = model.parse_filter("Order where DateOfIssue = 2017-06-01")
    iso = _order(
        model,
        {"DateOfIssue": {"value": "2017-06-01", "context": {"date_format": None}}},
        {"date_format": "%d.%m.%Y"},
    )
    assert model.matches(f, iso)
    assert model.load_event(model.dump_event(iso)) == iso
    with pytest.raises(EventError, match="DateOfIssue"):  # inherits %d.%m.%Y
        _order(model, {"DateOfIssue": {"value": "2017-06-01"}}, {"date_format": "%d.%m.%Y"})


@pytest.mark.parametrize("member, prop", [("NetWeight", "unit"), ("FinalPrice", "currency")])
def test_explicit_null_unit_or_currency_overrides_the_inherited_one(model, member, prop):
    parent = {"unit": "kg"} if prop == "unit" else {"currency": "USD"}
    with pytest.raises(EventError, match=f"needs a {prop}") as exc:
        _order(model, {member: {"value": 2, "context": {prop: None}}}, parent, "2017-06-01")
    assert exc.value.where == f"event.{member}"


def test_per_concept_scale_one_overrides_the_client_scale(model):
    thousands = ClientContext.of({"currency": "USD", "scale": 1000})
    ones = ClientContext.of(
        {"currency": "USD", "scale": 1000, "per_concept": {"FinalPrice": {"scale": 1}}}
    )
    f = model.parse_filter("Order where FinalPrice > 5", client=thousands)
    g = model.parse_filter("Order where FinalPrice > 5", client=ones)
    assert f.clauses[0].constraint == Constraint(Op.GT, 5000)
    assert g.clauses[0].constraint == Constraint(Op.GT, 5)


def test_per_concept_null_date_format_overrides_the_client_format(model):
    client = ClientContext.of(
        {"date_format": "%d.%m.%Y", "per_concept": {"DateOfIssue": {"date_format": None}}}
    )
    f = model.parse_filter('Order where DateOfIssue = "2017-06-01"', client=client)
    assert f.clauses[0].constraint == Constraint(Op.EQ, "2017-06-01")


def test_user_properties_false_and_zero_override_inherited_values():
    parent = Context(extra=(("vat", True), ("rate", 7)))
    child = parent.overlay(Context(extra=(("vat", False), ("rate", 0))))
    assert child.get("vat") is False and child.get("rate") == 0


def test_unset_properties_keep_the_inherited_ones():
    parent = Context.of({"unit": "kg", "scale": 1000, "date_format": "%d.%m.%Y"})
    assert parent.overlay(Context.of({})) == parent
    assert parent.overlay(Context.of({"scale": 1})).scale == 1


# -- 2. a failed index operation changes nothing --------------------------------------------
def _state(index):
    """Everything the index holds (the counter of fresh attribute names only grows)."""
    return (
        sorted(map(repr, index)),
        len(index),
        dict(index._names),
        dict(index._uses),
        {p: dict(cs) for p, cs in index._by_path.items()},
        {c: sorted(map(repr, part)) for c, part in index._parts.items()},
    )


def test_failed_add_leaves_the_index_unchanged(model, monkeypatch):
    index = model.new_index()
    index.add(model.parse_filter("Order where NetWeight > 1 kg"), "a")
    before = _state(index)
    f = model.parse_filter('Order where FinalPrice < 3 EUR and Symbol = "X"')

    def fail(*args):
        raise FilterSyntaxError("cannot index")

    monkeypatch.setattr(RecordsIndex, "add", fail)
    with pytest.raises(FilterSyntaxError):
        index.add(f, "b")
    monkeypatch.undo()
    assert _state(index) == before
    with pytest.raises(KeyError):
        index.remove(f, "b")
    index.add(f, "b")  # and it can still be added
    e = _order(model, {"FinalPrice": 2, "Symbol": "X"}, {"currency": "EUR"}, "2017-06-01")
    assert index.match(e) == {"b"}


def test_add_of_a_hand_made_filter_with_a_huge_constant_is_refused_and_changes_nothing(
    model, ontology
):
    index = model.new_index()
    index.add(model.parse_filter("Order where NetWeight > 1 kg"), "a")
    before = _state(index)
    good = model.parse_filter("Order where NetWeight > 1 kg").clauses[0]
    huge = ConceptFilter(
        ontology.resolve("Order"),
        (Clause(good.path, Constraint(Op.GT, 10**400), good.target, good.kind),),
    )
    with pytest.raises(FilterSyntaxError, match="out of range"):
        index.add(huge, "b")
    assert _state(index) == before and len(index) == 1


def test_failed_bulk_add_leaves_the_index_unchanged(model, ontology):
    index = model.new_index()
    f = model.parse_filter("Order where NetWeight > 1 kg")
    index.add(f, "a")
    before = _state(index)
    good = f.clauses[0]
    bad = ConceptFilter(
        ontology.resolve("Order"),
        (Clause(good.path, Constraint(Op.GT, "heavy"), good.target, good.kind),),
    )
    pairs = [(f, "a"), (model.parse_filter('Order where Symbol = "X"'), "b"), (bad, "c")]
    with pytest.raises(FilterSyntaxError, match="compared with numbers"):
        index.bulk_add(pairs)
    assert _state(index) == before


# -- 3. numbers -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "literal", ["1" + "0" * 400, "1" + "0" * 5000, "1e999", "-1e400", "1" + "0" * 400 + ".5"]
)
def test_numbers_beyond_a_double_in_filter_text_are_refused(model, literal):
    text = f"Order where NetWeight > {literal} kg"
    with pytest.raises(FilterSyntaxError, match="out of range") as exc:
        model.parse_filter(text)
    assert exc.value.position == text.index(literal[0], 20)


@pytest.mark.parametrize("value", [10**400, float("nan"), float("inf")])
def test_numbers_beyond_a_double_in_filter_json_are_refused(model, value):
    with pytest.raises(FilterSyntaxError) as exc:
        model.parse_filter(
            {
                "concept": "Order",
                "where": [{"attr": "NetWeight", "op": ">", "value": value, "unit": "kg"}],
            }
        )
    assert exc.value.path == "$.where[0].value"


def test_json_text_with_nan_or_a_5000_digit_integer_is_refused(model):
    with pytest.raises(FilterSyntaxError, match="NaN"):
        model.parse_filter(
            '{"concept": "Order", "where": [{"attr": "NetWeight", "op": ">", '
            '"value": NaN, "unit": "kg"}]}'
        )
    with pytest.raises(EventError, match="bad JSON"):
        model.parse_event('{"concept": "Order", "value": {"Symbol": 1' + "0" * 5000 + "}}")


@pytest.mark.parametrize(
    "member",
    [
        {"NetWeight": {"value": 10**400, "context": {"unit": "kg"}}},
        {"Symbol": 10**400},
        {"NetWeight": {"value": float("nan"), "context": {"unit": "kg"}}},
        {"NetWeight": {"value": 2, "context": {"unit": "kg", "scale": 10**400}}},
    ],
)
def test_numbers_beyond_a_double_in_events_are_refused(model, member):
    with pytest.raises(EventError) as exc:
        _order(model, member)
    assert exc.value.where.startswith("event.")


def test_a_constant_out_of_range_after_conversion_is_refused(model):
    with pytest.raises(FilterSyntaxError, match="out of range in"):
        model.parse_filter("Order where Distance > 1e308 km")


def test_event_values_overflowing_in_a_conversion_match_beyond_every_constant(model):
    heavy = _order(model, {"NetWeight": {"value": 1e308, "context": {"unit": "t", "scale": 1e300}}})
    debt = _order(
        model, {"FinalPrice": {"value": -1e308, "context": {"currency": "USD"}}}, time="2017-06-30"
    )  # -1.12e310 JPY
    cases = [
        ("Order where NetWeight > 1e300 kg", heavy, True),
        ("Order where NetWeight < inf kg", heavy, True),  # any number
        ("Order where NetWeight in (1, 1e308) kg", heavy, False),
        ("Order where FinalPrice < inf JPY", debt, True),
        ("Order where FinalPrice < -1.7e308 JPY", debt, True),
    ]
    index = model.new_index()
    for i, (text, e, want) in enumerate(cases):
        f = model.parse_filter(text)
        assert model.matches(f, e) is want, text
        index.add(f, i)
    for e in (heavy, debt):
        assert index.match(e) == {
            i for i, (t, _, _) in enumerate(cases) if model.matches(model.parse_filter(t), e)
        }
    with pytest.raises(FilterSyntaxError, match="out of range"):
        model.parse_filter("Order where NetWeight > 1.7976931348623157e308 kg")


def test_covering_across_currencies_is_not_claimed_when_a_scaled_bound_overflows(model):
    f = model.parse_filter("Order where FinalPrice > 1.7e308 JPY")
    g = model.parse_filter("Order where FinalPrice < -1e308 USD")
    assert not model.covers(f, g)
    e = _order(
        model,
        {"FinalPrice": {"value": -1.5e308, "context": {"currency": "USD"}}},
        time="2017-06-30",
    )
    assert model.matches(g, e) and not model.matches(f, e)


def test_covering_across_currencies_is_sound_for_amounts_that_underflow(model):
    f = model.parse_filter("Order where FinalPrice <= 0 JPY")
    g = model.parse_filter("Order where FinalPrice = 0 EUR")
    tiny = _order(
        model, {"FinalPrice": {"value": 5e-324, "context": {"currency": "JPY"}}}, time="2017-06-30"
    )  # 0 EUR after underflow, but more than 0 JPY
    assert model.matches(g, tiny) and not model.matches(f, tiny)
    assert not model.covers(f, g)
    assert model.merge([f, g]) != f
    assert model.covers(
        model.parse_filter("Order where FinalPrice < 95 EUR"),
        model.parse_filter("Order where FinalPrice < 105 USD"),
    )


@pytest.mark.parametrize(
    "unit, message",
    [
        ("kg ** 400", "exponents up to"),
        ("kg * 10 ** 99", "exponents up to"),
        ("m ** 1e9", "small"),
        (" * ".join(["km ** 30"] * 6), "base units"),
        ("degC ** 2", "measured in"),
        ("kg" * 200, "characters"),
        ("m ** (1", "malformed unit"),
    ],
)
def test_unit_expressions_beyond_the_limits_are_refused(model, unit, message):
    with pytest.raises(PubsiftError, match=message):
        model.parse_filter(
            {
                "concept": "Order",
                "where": [{"attr": "Distance", "op": ">", "value": 1, "unit": unit}],
            }
        )
    with pytest.raises(EventError):
        _order(model, {"Distance": {"value": 1, "context": {"unit": unit}}})


# -- 4. depth and memory --------------------------------------------------------------------
def _nested(levels):
    d = {"value": 1}
    for _ in range(levels):
        d = {"value": {"Order": d}}
    return d


def test_members_nested_deeper_than_the_limit_are_refused(model):
    assert model.parse_event({"concept": "Order", **_nested(MAX_DEPTH)}) is not None
    with pytest.raises(EventError, match=f"deeper than {MAX_DEPTH} levels"):
        model.parse_event({"concept": "Order", **_nested(MAX_DEPTH + 1)})
    text = '{"concept": "Order", ' + '"value": {"Order": {' * 490 + '"value": 1' + "}}" * 490 + "}"
    with pytest.raises(EventError, match=r"deeper|too deeply"):
        model.parse_event(text)  # 10 KB nested 490 levels: refused at once


def test_a_cyclic_mapping_event_is_refused(model):
    e = {"concept": "Order", "value": {}}
    e["value"]["Order"] = e
    with pytest.raises(EventError, match="cyclic") as exc:
        model.parse_event(e)
    assert exc.value.where == "event.Order"
    v: dict = {}
    v["Order"] = {"value": v}
    with pytest.raises(EventError, match="cyclic"):
        model.parse_event({"concept": "Order", "value": v})


def test_json_text_nested_beyond_the_parser_is_refused(model):
    with pytest.raises(EventError, match="bad JSON"):
        model.parse_event("[" * 100_000 + "]" * 100_000)
    with pytest.raises(FilterSyntaxError, match="bad JSON"):
        model.parse_filter('{"concept": ' + "[" * 100_000 + "]" * 100_000 + "}")


def test_event_memory_is_linear_in_its_members(model):
    text = json.dumps({"concept": "Order", **_nested(MAX_DEPTH)})
    tracemalloc.start()
    e = model.parse_event(text)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(e.paths()) == MAX_DEPTH + 1
    assert peak < 2_000_000  # a path tuple per member per ancestor took 160 MB at 490 levels


# -- 5. wrong JSON types --------------------------------------------------------------------
_COND = {"attr": "NetWeight", "op": "between", "value": [1, 2], "unit": "kg"}


@pytest.mark.parametrize(
    "change, path",
    [
        ({"op": ["<"]}, "$.where[0].op"),
        ({"op": 5}, "$.where[0].op"),
        ({"attr": 5}, "$.where[0].attr"),
        ({"attr": [5]}, "$.where[0].attr"),
        ({"closed": [True, True, True]}, "$.where[0].closed"),
        ({"closed": "ab"}, "$.where[0].closed"),
        ({"closed": [1, 0]}, "$.where[0].closed"),
        ({"closed": [True, "x"]}, "$.where[0].closed"),
        ({"unit": 5}, "$.where[0].unit"),
        ({"unit": ""}, "$.where[0].unit"),
        ({"currency": "USD"}, "$.where[0]"),
        ({"value": [1, {"a": 1}]}, "$.where[0].value[1]"),
        ({"value": {"lo": 1}}, "$.where[0].value"),
        ({"op": "exists"}, "$.where[0]"),
        ({"op": "<", "value": 1, "closed": [True, False]}, "$.where[0].closed"),
        ({"attr": "Symbol", "op": "=", "value": "x"}, "$.where[0].value"),
    ],
)
def test_wrong_json_types_in_a_filter_are_syntax_errors(model, change, path):
    with pytest.raises(FilterSyntaxError) as exc:
        model.parse_filter({"concept": "Order", "where": [{**_COND, **change}]})
    assert exc.value.path == path


@pytest.mark.parametrize(
    "context, message",
    [
        ([1], "JSON object"),
        ({"unit": 5}, "unit"),
        ({"currency": 5}, "currency"),
        ({"per_concept": {"Nope": {}}}, "Nope"),
        ({"per_concept": [1]}, "per_concept"),
        ({"units": 5}, "units"),
        ({"scale": "1000"}, "scale"),
        ({"vat": float("nan")}, "vat"),
        ({"per_concept": {"NetWeight": {"unit": 5}}}, "NetWeight"),
    ],
)
def test_wrong_json_types_in_a_filter_context_are_syntax_errors(model, context, message):
    with pytest.raises(FilterSyntaxError, match=message) as exc:
        model.parse_filter(
            {
                "concept": "Order",
                "context": context,
                "where": [{"attr": "NetWeight", "op": ">", "value": 1}],
            }
        )
    assert exc.value.path == "$.context"


@pytest.mark.parametrize(
    "context",
    [
        [1],
        {"unit": 5},
        {"currency": 5},
        {"scale": None},
        {"date_format": 5},
        {"date_format": "%Y" * 100},
        {5: 1},
        {"x": [1]},
        {"scale": True},
        {"unit": ""},
    ],
)
def test_wrong_json_types_in_an_event_context_are_event_errors(model, context):
    with pytest.raises(EventError) as exc:
        _order(model, {"Symbol": {"value": "A", "context": context}})
    assert exc.value.where == "event.Symbol.context"


def test_unknown_concept_is_a_pubsift_error(model):
    assert issubclass(UnknownConcept, PubsiftError) and issubclass(UnknownConcept, LookupError)
    with pytest.raises(UnknownConcept):
        model.ontology.resolve("Nope")


def test_wrong_types_given_to_the_vocabulary_agreement_are_conversion_errors(model):
    for vocabulary in ([1], {5: "StockQuote"}, {"Kurs": 5}):
        with pytest.raises(ConversionError, match="vocabulary"):
            VocabularyAgreement(model, vocabulary, {})


# -- 6. text --------------------------------------------------------------------------------
def test_a_bad_escape_in_a_string_literal_is_a_syntax_error(model):
    text = 'Order where Symbol = "a\\qb"'
    with pytest.raises(FilterSyntaxError, match="bad string") as exc:
        model.parse_filter(text)
    assert exc.value.position == text.index("\\q")
    with pytest.raises(FilterSyntaxError, match="bad string"):
        model.parse_filter('"Sto\\ck" where Symbol = "A"')


@pytest.mark.parametrize("time", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:00:00-01:00"])
def test_a_time_out_of_range_in_utc_is_refused(model, time):
    with pytest.raises(EventError, match="out of range") as exc:
        _order(model, {"Symbol": "A"}, time=time)
    assert exc.value.where == "event"
    with pytest.raises(FilterSyntaxError, match="out of range"):
        model.parse_filter(f"Order where DateOfIssue after {time}")


@pytest.mark.parametrize(
    "spec",
    [
        'Order where Symbol = "\ud800"',
        'Order where Symbol = "\\udc00"',
        {"concept": "Order", "where": [{"attr": "Symbol", "op": "=", "value": "\ud800"}]},
    ],
)
def test_lone_surrogates_in_filters_are_refused_with_a_printable_message(model, spec):
    with pytest.raises(FilterSyntaxError, match="surrogate") as exc:
        model.parse_filter(spec)
    str(exc.value).encode("utf-8")


@pytest.mark.parametrize(
    "event",
    [
        {"concept": "Order", "value": {"Symbol": "\ud800"}},
        '{"concept": "Order", "value": {"Symbol": "\\ud800\\ud800"}}',
        {"concept": "Order", "value": {"\ud800": 1}},
        {"concept": "Order", "value": {"Symbol": {"value": "A", "context": {"x": "\udfff"}}}},
    ],
)
def test_lone_surrogates_in_events_are_refused_with_a_printable_message(model, event):
    with pytest.raises(EventError) as exc:
        model.parse_event(event)
    str(exc.value).encode("utf-8")


# -- 7. many != conditions ------------------------------------------------------------------
def test_many_not_equal_conditions_are_conjoined_at_once(model, monkeypatch):
    calls = []
    conjoin = relations.conjoin
    monkeypatch.setattr(relations, "conjoin", lambda a, b, *r: calls.append(1) or conjoin(a, b, *r))
    text = "Order where " + " and ".join(f'Symbol != "s{i}"' for i in range(2000))
    f = model.parse_filter(text + ' and Symbol exists and Symbol != "t"')
    assert len(calls) <= 1  # pairwise conjunction took 2,000 growing steps (quadratic)
    c = f.clauses[0].constraint
    assert not c.matches("s7") and c.matches("s2000") and not c.matches("t")


# -- 8. round trips -------------------------------------------------------------------------
def test_format_filter_writes_plain_literals_that_parse_back(model):
    f = model.parse_filter("Quantity > 3 dBm")
    text = model.format_filter(f)
    assert "np." not in text and "float64" not in text
    assert model.parse_filter(text) == f


@pytest.mark.parametrize(
    "text",
    [
        "Quantity > 3 dBm",
        "Order where Distance > 1e300 mm",
        "Order where NetWeight > 5e-324 t",
        "Order where NetWeight in [1, inf) kg",
        'Order where Symbol = "a\\u0000b\\u2028"',
        "Order where FinalPrice != -0.0 USD",
        "Quantity > 3 degC",
        "Quantity > 3 Hz",
        "Quantity in [1, 2) m ** -1",
        "Quantity > 3 gauss",
        "Order where " + " and ".join(f"NetWeight != {i} lb" for i in range(50)),
        'Order where Symbol not in {"A", "\\"", "\\\\"}',
    ],
)
def test_text_and_wire_forms_of_extreme_filters_load_back_identically(model, text):
    f = model.parse_filter(text)
    assert model.parse_filter(model.format_filter(f)) == f
    assert model.load_filter(json.loads(json.dumps(model.dump_filter(f)))) == f


def _wire(kind="quantity", context=None, constraint=None, path=("NetWeight",)):
    return {
        "concept": "Order",
        "clauses": [
            {
                "path": list(path),
                "constraint": constraint or {"op": ">", "value": 1},
                "context": {"unit": "kilogram"} if context is None else context,
                "kind": kind,
            }
        ],
    }


@pytest.mark.parametrize(
    "wire, path, message",
    [
        (_wire(kind="plain"), "$.clauses[0].kind", "contradicts NetWeight"),
        (_wire(kind="money", context={"currency": "USD"}), "$.clauses[0].kind", "contradicts"),
        (_wire(context={"unit": "pound"}), "$.clauses[0].context", "kilogram, not pound"),
        (_wire(context={"unit": "kilogram", "scale": 1}), "$.clauses[0].context", "matching"),
        (_wire(context={"currency": "USD"}), "$.clauses[0].context", "matching"),
        (_wire(context={"unit": None}), "$.clauses[0].context", "matching"),
        (_wire(constraint={"op": ">", "value": "a"}), "$.clauses[0].constraint", "numbers"),
        (
            _wire(
                kind="date", context={}, path=("DateOfIssue",), constraint={"op": ">", "value": 5}
            ),
            "$.clauses[0].constraint",
            "ISO 8601",
        ),
        (_wire(context=[1]), "$.clauses[0].context", "JSON object"),
        (_wire(kind=[1]), "$.clauses[0].kind", "unknown kind"),
        (
            {
                "concept": "Order",
                "clauses": [
                    {"path": "NetWeight", "constraint": {}, "context": {}, "kind": "plain"}
                ],
            },
            "$.clauses[0].path",
            "list",
        ),
        ({"concept": 5, "clauses": []}, "$.concept", "string"),
    ],
)
def test_wire_forms_no_filter_dumps_are_refused(model, wire, path, message):
    with pytest.raises(FilterSyntaxError, match=message) as exc:
        model.load_filter(wire)
    assert exc.value.path == path


# -- 9. conversions, adapters and ontologies ------------------------------------------------
def test_converter_cache_is_bounded():
    mgr = ConversionManager(conversions={})
    dst = Context(unit="kg")
    for i in range(CACHE_SIZE + 10):
        mgr.converter(QUANTITY, Context(unit="lb", scale=1 + i), dst)
    assert len(mgr._cache) == CACHE_SIZE


def test_an_unreadable_ontology_is_a_pubsift_error(tmp_path):
    bad = tmp_path / "bad.ttl"
    bad.write_text("@prefix : <x> . :a :b", encoding="utf-8")
    with pytest.raises(PubsiftError, match=r"bad.ttl"):
        Ontology.load(bad)


def test_publisher_sources_quarantine_bad_rows_with_the_file(model, tmp_path):
    from pubsift.adapters import Source, read

    src = {
        "model": "concepts",
        "publisher": {"concept": "StockQuote", "context": {"currency": "USD"}},
    }
    bad = tmp_path / "quotes.csv"
    bad.write_bytes(b"Symbol\nA\n\xff\xfe\n")
    out = list(read(Source(str(bad), **src), models={"concepts": model}))
    assert [(o.position, getattr(o, "reason", "event")) for o in out] == [
        (1, "event"),
        (2, "encoding"),
    ]
    assert out[1].source == str(bad) and "0xff" in out[1].message
    (absent,) = read(Source(str(tmp_path / "absent.csv"), **src), models={"concepts": model})
    assert (absent.reason, absent.position) == ("unreadable", 0)
    (absent,) = read(
        Source(str(tmp_path / "absent.xml"), model="concepts"), models={"concepts": model}
    )
    assert (absent.reason, absent.position) == ("unreadable", 0)


@pytest.mark.parametrize(
    "text, message",
    [
        ("currency,rate\nEUR\n", "line 2"),
        ("currency,rate\nEUR,nan\n", "finite"),
        ("currency,rate\nEUR,1e999\n", "finite"),
        ("currency,rate,valid_from\nEUR,1,0001-01-01T00:00+01:00\n", "out of range"),
    ],
)
def test_malformed_rate_tables_are_conversion_errors(text, message):
    from pubsift.models.concepts import RateTable

    with pytest.raises(ConversionError, match=message):
        RateTable.from_csv(text, base="USD")
    with pytest.raises(ConversionError, match="ISO 4217"):
        RateTable("usd", {})


def test_an_empty_unit_is_refused(model):
    with pytest.raises(EventError, match="non-empty"):
        _order(model, {"NetWeight": {"value": 1, "context": {"unit": " "}}})
    with pytest.raises(FilterSyntaxError, match="non-empty"):
        model.parse_filter(
            {
                "concept": "Order",
                "context": {"unit": ""},
                "where": [{"attr": "NetWeight", "op": ">", "value": 1}],
            }
        )


def test_index_answers_equal_matches_whether_the_event_or_the_index_has_fewer_paths(model):
    index = model.new_index()
    filters = [
        model.parse_filter("Order where " + ".".join(["Order"] * i) + "."[:i] + 'Symbol = "A"')
        for i in range(12)
    ]
    for i, f in enumerate(filters):
        index.add(f, i)
    small = _order(model, {"Symbol": "A"})
    value: dict = {"Symbol": "A"}
    for _ in range(11):
        value = {"Order": {"value": value}, "Symbol": "A"}
    big = _order(model, value)
    assert small.size < len(index._by_path) < big.size
    for e in (small, big):
        assert index.match(e) == {i for i, f in enumerate(filters) if model.matches(f, e)}
    assert index.match(small) == {0} and index.match(big) == set(range(12))


def test_decimal_values_are_refused_clearly(model):
    from decimal import Decimal

    with pytest.raises(EventError, match="Decimal"):
        _order(model, {"NetWeight": {"value": Decimal("1e999999"), "context": {"unit": "kg"}}})
    with pytest.raises(EventError, match="scale factor"):
        _order(model, {"NetWeight": {"value": 1, "context": {"unit": "kg", "scale": Decimal(2)}}})
    with pytest.raises(FilterSyntaxError) as exc:
        model.parse_filter(
            {
                "concept": "Order",
                "where": [{"attr": "NetWeight", "op": ">", "value": Decimal(1), "unit": "kg"}],
            }
        )
    assert exc.value.path == "$.where[0].value"


def test_a_conversion_giving_nan_makes_the_clause_false(recwarn):
    import rdflib
    from pubsift.models.concepts import ConceptsModel

    g = rdflib.Graph()
    g.parse(
        data="@prefix ps: <https://pubsift.org/ontology#> . "
        "@prefix owl: <http://www.w3.org/2002/07/owl#> . "
        'ps:Power a owl:Class ; ps:contextProperty ps:unit ; ps:matchingUnit "dBm" .',
        format="turtle",
    )
    model = ConceptsModel(ontology=Ontology(g), conversions={})
    negative = model.parse_event({"concept": "Power", "value": -5, "context": {"unit": "W"}})
    for text in ("Power > -1000 dBm", "Power not in {1, 2} dBm", "Power < 1000 dBm"):
        f = model.parse_filter(text)  # a logarithm of -5 W is NaN: no dBm value
        assert not model.matches(f, negative)
        index = model.new_index()
        index.add(f, 1)
        assert index.match(negative) == set()


def test_a_rate_table_source_that_is_neither_a_file_nor_csv_is_refused():
    from pubsift.models.concepts import RateTable

    for source in ("/nonexistent/rates.csv", "x\0y", "currency;rate\nEUR;1\n"):
        with pytest.raises(ConversionError, match="neither a readable file nor CSV"):
            RateTable.from_csv(source, base="USD")
    assert RateTable.from_csv("currency,rate\n", base="USD").currencies == {"USD"}


def test_wire_constraints_are_loaded_in_canonical_form_so_the_text_form_parses_back():
    # found by the conformance kit's hostile suite: a one-value 'not-in' set on the wire was
    # kept as is, while its text form 'Symbol not in {0}' parses to 'Symbol != 0'
    from pubsift.core.registry import load_model

    m = load_model("concepts")
    f = m.load_filter(
        {
            "concept": "BondQuote",
            "clauses": [
                {
                    "path": ["Symbol"],
                    "constraint": {"op": "not-in", "values": [0, 0, 0]},
                    "context": {},
                    "kind": "plain",
                }
            ],
        }
    )
    assert m.parse_filter(m.format_filter(f)) == f
    assert m.load_filter(m.dump_filter(f)) == f


# -- 6. review findings: memory of literals, foreign objects, unit messages, contexts --------
def _peak(fn):
    """``fn()``'s result (or the PubsiftError it raised) and its peak of traced memory."""
    tracemalloc.start()
    try:
        out = fn()
    except PubsiftError as exc:
        out = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return out, peak


def test_megabyte_string_literal_parses_in_memory_linear_in_its_length(model):
    # tokenized whole, then refused by the filter-string limit (records' MAX_STRING)
    text = 'Order where Symbol = "' + "a" * 1_000_000 + '"'
    f, peak = _peak(lambda: model.parse_filter(text))
    assert isinstance(f, FilterSyntaxError) and f"at most {MAX_STRING}" in str(f)
    assert peak < 16_000_000  # the backtracking pattern took 223 MB
    escaped = 'Order where Symbol = "' + "\\n" * 500_000 + '"'
    f, peak = _peak(lambda: model.parse_filter(escaped))
    assert isinstance(f, FilterSyntaxError) and f"at most {MAX_STRING}" in str(f)
    assert peak < 16_000_000  # one backtracking state per escape: 61 MB with no possessive
    ok = 'Order where Symbol = "' + "\\n" * (MAX_STRING // 2) + "a" * (MAX_STRING // 2) + '"'
    f, peak = _peak(lambda: model.parse_filter(ok))
    assert isinstance(f, ConceptFilter)


def test_unterminated_megabyte_string_literal_is_refused_cheaply(model):
    text = 'Order where Symbol = "' + "a" * 1_000_000
    exc, peak = _peak(lambda: model.parse_filter(text))
    assert isinstance(exc, FilterSyntaxError)
    assert "unterminated string" in str(exc) and exc.position == 21
    assert peak < 1_000_000  # 222 MB before the error


def test_filter_text_beyond_max_text_length_is_refused_before_tokenizing(model):
    text = 'Order where Symbol = "' + "a" * MAX_TEXT_LENGTH + '"'
    exc, peak = _peak(lambda: model.parse_filter(text))
    assert isinstance(exc, FilterSyntaxError)
    assert f"at most {MAX_TEXT_LENGTH:,}" in str(exc)
    assert len(str(exc)) < 500 and peak < 100_000


def test_filter_text_beyond_max_tokens_is_refused(model):
    text = "Order where NetWeight in {" + ",".join(["1"] * MAX_TOKENS) + "} kg"
    with pytest.raises(FilterSyntaxError, match=f"more than {MAX_TOKENS:,} tokens"):
        model.parse_filter(text)


def test_filter_beyond_the_text_form_limits_is_formatted_as_its_wire_form(model):
    f = model.parse_filter(
        {
            "concept": "Order",
            "where": [
                {"attr": "Symbol", "op": "in", "value": [str(i) for i in range(MAX_TOKENS // 2)]}
            ],
        }
    )
    text = model.format_filter(f)
    assert text.startswith("{") and model.parse_filter(text) == f
    n = MAX_TEXT_LENGTH // (6 * MAX_STRING) + 1  # \u0000 escapes: beyond it as text
    long = model.parse_filter(
        {
            "concept": "Order",
            "where": [
                {
                    "attr": "Symbol",
                    "op": "in",
                    "value": ["\x00" * (MAX_STRING - 1) + chr(65 + i) for i in range(n)],
                }
            ],
        }
    )
    text = model.format_filter(long)
    assert text.startswith("{") and model.parse_filter(text) == long


def test_filter_strings_longer_than_the_records_limit_are_refused_in_text_and_json(model):
    # the constraint algebra (and its wire form, which concepts' wire form reuses) refuses
    # longer strings, so the concepts forms refuse them too: every form loads back
    s = "a" * (MAX_STRING + 1)
    with pytest.raises(FilterSyntaxError, match=f"at most {MAX_STRING} characters"):
        model.parse_filter(
            {"concept": "Order", "where": [{"attr": "Symbol", "op": "=", "value": s}]}
        )
    with pytest.raises(FilterSyntaxError, match=f"at most {MAX_STRING} characters"):
        model.parse_filter(f'Order where Symbol = "{s}"')
    f = model.parse_filter(f'Order where Symbol = "{s[1:]}"')
    assert model.load_filter(model.dump_filter(f)) == f
    assert model.parse_filter(model.format_filter(f)) == f


_FOREIGN = [None, 5, 1.5, "Order", b"x", {}, [], {"concept": "Order"}, object()]


@pytest.mark.parametrize("junk", _FOREIGN, ids=lambda j: type(j).__name__)
def test_hooks_refuse_objects_that_are_not_filters_or_events_by_type(model, junk):
    f = model.parse_filter('Order where Symbol = "A"')
    e = _order(model, {"Symbol": "A"})
    name = type(junk).__name__
    filter_hooks = [
        lambda: model.matches(junk, e),
        lambda: model.covers(f, junk),
        lambda: model.covers(junk, f),
        lambda: model.identical(f, junk),
        lambda: model.overlaps(junk, f),
        lambda: model.merge([f, junk]),
        lambda: model.merge([junk, f], perfect=False),
        lambda: model.format_filter(junk),
        lambda: model.dump_filter(junk),
    ]
    for hook in filter_hooks:
        with pytest.raises(FilterSyntaxError, match=f"not a concept filter: {name}"):
            hook()
    for hook in (lambda: model.matches(f, junk), lambda: model.dump_event(junk)):
        with pytest.raises(EventError, match=f"not a concepts event: {name}"):
            hook()
    if not isinstance(junk, (list, dict)):
        with pytest.raises(FilterSyntaxError, match=f"list of concept filters, not {name}"):
            model.merge(junk)


@pytest.mark.parametrize("junk", _FOREIGN, ids=lambda j: type(j).__name__)
def test_index_refuses_objects_that_are_not_filters_or_events_by_type(model, junk):
    f = model.parse_filter('Order where Symbol = "A"')
    index = model.new_index()
    index.add(f, 0)
    name = type(junk).__name__
    for hook in (
        lambda: index.add(junk, 1),
        lambda: index.bulk_add([(f, 5), (junk, 6)]),
        lambda: index.covering(junk),
        lambda: index.covered_by(junk),
        lambda: index.identical(junk),
        lambda: index.overlapping(junk),
        lambda: index.merge_candidates(junk),
        lambda: index.remove(junk, 0),
    ):
        with pytest.raises(FilterSyntaxError, match=f"not a concept filter: {name}"):
            hook()
    with pytest.raises(EventError, match=f"not a concepts event: {name}"):
        index.match(junk)
    assert list(index) == [(f, 0)]


def test_index_refuses_unhashable_keys_and_pairs_that_are_not_pairs(model):
    f = model.parse_filter('Order where Symbol = "A"')
    index = model.new_index()
    with pytest.raises(FilterSyntaxError, match="hashable, not list"):
        index.add(f, [1])
    with pytest.raises(FilterSyntaxError, match="hashable, not dict"):
        index.bulk_add([(f, 1), (f, {})])
    with pytest.raises(FilterSyntaxError, match="pairs, not int"):
        index.bulk_add(5)
    with pytest.raises(FilterSyntaxError, match="pairs, not list"):
        index.bulk_add([[f, 1]])
    assert len(index) == 0
    with pytest.raises(KeyError):  # an absent pair: the documented index contract
        index.remove(f, 1)


@pytest.mark.parametrize(
    "unit, message",
    [
        ("kg ** -0", "an exponent of 0 leaves no unit"),
        ("kg ** 0.0", "an exponent of 0"),
        ("kg /", "ends with an operator"),
        ("/ kg", "starts with the operator '/'"),
        ("kg ** ** 2", "write unit names joined by"),
        ("kg * 1.5", "no numeric factor"),
        ("blorp", "'blorp' is not a unit of the registry"),
    ],
)
def test_unit_expression_errors_are_in_the_users_terms(model, unit, message):
    with pytest.raises(FilterSyntaxError, match=message) as in_filter:
        model.parse_filter(
            {
                "concept": "Order",
                "where": [{"attr": "NetWeight", "op": ">", "value": 3, "unit": unit}],
            }
        )
    with pytest.raises(EventError, match=message) as in_event:
        _order(model, {"NetWeight": {"value": 1, "context": {"unit": unit}}})
    for exc in (in_filter.value, in_event.value):  # pint's internals never show
        assert "Error" not in str(exc) and "KeyError" not in str(exc)


def test_fractional_unit_exponent_in_the_text_form_is_read_whole(model):
    with pytest.raises(ConversionError, match=r"measured in \[mass\]; kilogram \*\* 0.5"):
        model.parse_filter("Order where NetWeight > 3 kg ** 0.5")  # was "unknown unit 'kg ** 0'"
    with pytest.raises(FilterSyntaxError, match="an exponent of 0"):
        model.parse_filter("Order where NetWeight > 3 kg ** -0")
    f = model.parse_filter("Quantity > 3 kg ** 0.5")
    assert model.parse_filter(model.format_filter(f)) == f


@pytest.mark.parametrize(
    "context, message",
    [
        ({"per_concept": {"Nope": {"scale": 1}}}, "unknown concept 'Nope'"),
        ([1], "JSON object, not list"),
        ({"unit": 5}, "a unit is a string"),
        ({"currency": 5}, "currency"),
    ],
)
def test_invalid_filter_context_is_refused_even_without_conditions(model, context, message):
    for where in ([], [{"attr": "Symbol", "op": "=", "value": "A"}]):
        with pytest.raises(FilterSyntaxError, match=message) as exc:
            model.parse_filter({"concept": "Order", "context": context, "where": where})
        assert exc.value.path == "$.context"
    with pytest.raises(FilterSyntaxError, match="bad context") as exc:
        model.parse_filter("Order", client=5)
    assert exc.value.path == "client"


@pytest.mark.parametrize(
    "terms, message",
    [
        (5, "terms map a client's words to concepts, not int"),
        ({"Order": "Nope"}, "unknown concept 'Nope'"),
        ({"Order": 5}, "a concept is named by a string, not int"),
    ],
)
def test_client_terms_that_are_not_a_vocabulary_of_concepts_are_refused(model, terms, message):
    with pytest.raises(FilterSyntaxError, match=message):
        model.parse_filter('Order where Symbol = "A"', terms=terms)


@pytest.mark.parametrize(
    "fmt, message",
    [("%Y%Y%Y", "a directive is repeated"), ("%Q", "bad directive"), ("%", "stray %")],
)
def test_date_format_strptime_cannot_read_is_refused_with_the_context(model, fmt, message):
    with pytest.raises(EventError, match=message) as exc:  # %Y%Y%Y raised re.error
        _order(model, {"DateOfIssue": {"value": "2017-06-01", "context": {"date_format": fmt}}})
    assert exc.value.where == "event.DateOfIssue.context"
    with pytest.raises(FilterSyntaxError, match=message):
        model.parse_filter({"concept": "Order", "context": {"date_format": fmt}, "where": []})
