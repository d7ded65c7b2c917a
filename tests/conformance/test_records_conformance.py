"""The records model runs the conformance kit (DESIGN.md §2.5): once as installed
(``load_model("records")``, the default schema: no integer attributes, no types) and once
configured with a schema that makes ``c`` integer-valued and declares the type hierarchy
``strategies.TYPES`` for ``instanceof``. Filters cover every operator
(:mod:`pubsift.models.records.strategies`); soundness is checked on events built to match.
"""
from __future__ import annotations

import pytest

from pubsift.core import load_model
from pubsift.core.conformance import ModelConformance
from pubsift.models.records import RecordsModel, strategies


class RecordsFixtures:
    @pytest.fixture
    def filter_strategy(self, model):
        return strategies.filters(model.schema)

    @pytest.fixture
    def event_strategy(self, model):
        return strategies.events(model.schema)

    @pytest.fixture
    def matching_event(self, model):
        return lambda f: strategies.matching_event(f, model.schema)


class TestInstalledRecords(RecordsFixtures, ModelConformance):
    @pytest.fixture
    def model(self):
        return load_model("records")


class TestRecordsWithSchema(RecordsFixtures, ModelConformance):
    @pytest.fixture
    def model(self):
        return RecordsModel(strategies.SCHEMA)


@pytest.mark.slow
class TestRecordsThorough(TestRecordsWithSchema):
    """The same with ten times the examples (``make test`` runs it; ``test-fast`` skips)."""

    @pytest.fixture
    def max_examples(self):
        return 400
