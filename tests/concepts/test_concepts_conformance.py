"""The concepts model runs the conformance kit (DESIGN.md §2.5): filters written in random
contexts (units, currencies), events published in random contexts (units, currencies, scale
factors, date formats, times on both sides of an exchange-rate change), and events built to
match a filter (:mod:`pubsift.models.concepts.strategies`)."""
from __future__ import annotations

import pytest

from pubsift.core.conformance import ModelConformance
from pubsift.models.concepts import ConceptsModel, strategies


class TestConceptsModel(ModelConformance):
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
