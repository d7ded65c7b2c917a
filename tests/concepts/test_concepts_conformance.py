"""The concepts model runs the conformance kit (DESIGN.md §2.5): filters written in random
contexts (units, currencies), events published in random contexts (units, currencies, scale
factors, date formats, times on both sides of an exchange-rate change), and events built to
match a filter (:mod:`pubsift.models.concepts.strategies`)."""
from __future__ import annotations

import pytest

from pubsift.core.conformance import HostileInputTests, ModelConformance
from pubsift.models.concepts import ConceptsModel, strategies


class ConceptsFixtures:
    @pytest.fixture
    def model(self):
        return ConceptsModel(rates=strategies.rate_table(), conversions={})

    @pytest.fixture
    def filter_strategy(self, model):
        return strategies.filters(model)

    @pytest.fixture
    def event_strategy(self, model):
        return strategies.events(model)

    @pytest.fixture
    def matching_event(self, model):
        return strategies.matching_event(model)


class TestConceptsModel(ConceptsFixtures, ModelConformance):
    #: what the hostile-input suite finds in the concepts model today (xfail, not strict:
    #: XPASS once the concepts fixes of issue 10 land; then delete the entry)
    known_failures = {
        "test_hostile_filter_texts": "issue 10 §2: huge numbers and deep nesting in the "
                                     "text form",
        "test_hostile_filter_json": "issue 10 §2/§4: wrong JSON types (a unit or currency "
                                    "that is not a string: AttributeError), deep members "
                                    "(RecursionError); a float unit factor does not "
                                    "round-trip through the text form",
        "test_hostile_events": "issue 10 §2: wrong JSON types in contexts (AttributeError, "
                               "TypeError), deep events (RecursionError)",
        "test_failed_add_changes_nothing": "issue 10 §1: a failed add leaves the concepts "
                                           "index half-updated",
    }


@pytest.mark.slow
class TestConceptsHostileThorough(ConceptsFixtures, HostileInputTests):
    """The hostile-input suite with ten times the batches."""

    known_failures = TestConceptsModel.known_failures

    @pytest.fixture
    def hostile_batches(self):
        return 20
