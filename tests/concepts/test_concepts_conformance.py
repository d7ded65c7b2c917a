"""The concepts model runs the conformance kit (DESIGN.md §2.5): filters written in random
contexts (units, currencies), events published in random contexts (units, currencies, scale
factors, date formats, times on both sides of an exchange-rate change), and events built to
match a filter (:mod:`pubsift.models.concepts.testing`)."""

from __future__ import annotations

import pytest
from pubsift.core.conformance import HostileInputTests, ModelConformance
from pubsift.core.conformance.mutations import Case, nested_dict
from pubsift.models.concepts import ConceptsModel, testing


def _order(weight: dict) -> dict:
    return {"concept": "Order", "time": "2017-07-01", "value": {"NetWeight": weight}}


#: hostile examples for concepts (docs/concepts.md, "Limits (hostile input)"), run by the hostile-input suite
HOSTILE_EXAMPLES = [
    Case("filter", "Order where NetWeight > " + "9" * 400 + " kg", "§2 a 400-digit amount"),
    Case("filter", "Order where NetWeight > 1 kg ** 400", "§2 kg ** 400"),
    Case("filter", 'Quote where Symbol = "\\q"', "§2 a bad escape in a string literal"),
    Case("filter", "Order where NetWeight > 3 dBm", "§4 a logarithmic unit (round trip)"),
    Case(
        "filter",
        {
            "concept": "Order",
            "where": [{"attr": "NetWeight", "op": ["<"], "value": 1, "unit": "kg"}],
        },
        "§2 op as a list",
    ),
    Case(
        "filter",
        {"concept": "Order", "where": [{"attr": 5, "op": "<", "value": 1, "unit": "kg"}]},
        "§2 attr as a number",
    ),
    Case(
        "filter",
        {
            "concept": "Order",
            "where": [
                {
                    "attr": "NetWeight",
                    "op": "between",
                    "value": [1, 2],
                    "unit": "kg",
                    "closed": [True, False, True],
                }
            ],
        },
        "§2 closed with three items",
    ),
    Case("filter", {"concept": "Order", "context": [], "where": []}, "§2 a context list"),
    Case(
        "event",
        _order({"value": 10**400, "context": {"unit": "kg"}}),
        "§2 a 400-digit amount in an event",
    ),
    Case(
        "event",
        _order({"value": 2, "context": {"unit": "kg", "scale": 10**400}}),
        "§2 a 400-digit scale",
    ),
    Case("event", _order({"value": 2, "context": {"unit": 5}}), '§2 {"unit": 5}'),
    Case(
        "event",
        {
            "concept": "Order",
            "time": "2017-07-01",
            "value": {"FinalPrice": {"value": 2, "context": {"currency": 5}}},
        },
        '§2 {"currency": 5}',
    ),
    Case("event", _order({"value": 2, "context": ["kg"]}), "§2 a context that is a list"),
    Case(
        "event",
        {
            "concept": "Order",
            "time": "0001-01-01T00:00:00+01:00",
            "value": {"Symbol": {"value": "IBM"}},
        },
        "§2 a time before year 1 in UTC",
    ),
    Case(
        "event",
        {
            "concept": "Order",
            "time": "2017-07-01",
            "value": nested_dict(500, "NetWeight", {"value": 1}),
        },
        "§2/§3 members nested 500 levels",
    ),
]


class ConceptsFixtures:
    @pytest.fixture
    def hostile_inputs(self):
        return HOSTILE_EXAMPLES

    @pytest.fixture
    def model(self):
        return ConceptsModel(rates=testing.rate_table(), conversions={})

    @pytest.fixture
    def filter_strategy(self, model):
        return testing.filters(model)

    @pytest.fixture
    def event_strategy(self, model):
        return testing.events(model)

    @pytest.fixture
    def matching_event(self, model):
        return testing.matching_event(model)


class TestConceptsModel(ConceptsFixtures, ModelConformance):
    """The whole conformance kit, hostile-input suite included."""


@pytest.mark.slow
class TestConceptsHostileThorough(ConceptsFixtures, HostileInputTests):
    """The hostile-input suite with ten times the batches."""

    @pytest.fixture
    def hostile_batches(self):
        return 20
