"""The records model runs the conformance kit (DESIGN.md §2.5): once as installed
(``load_model("records")``, the default schema: no integer attributes, no types) and once
configured with a schema that makes ``c`` integer-valued and declares the type hierarchy
``testing.TYPES`` for ``instanceof``. Filters cover every operator
(:mod:`pubsift.models.records.testing`); soundness is checked on events built to match.
"""

from __future__ import annotations

import pytest
from depth import deep
from hypothesis import Phase, settings
from pubsift.core import load_model
from pubsift.core.conformance import ModelConformance, merging, soundness
from pubsift.core.conformance.kit import Kit, run
from pubsift.core.conformance.mutations import Case, nested_dict
from pubsift.models.constraints import relations
from pubsift.models.records import RecordsModel, testing


def _nested_or(depth: int) -> dict:
    pattern: dict = {"a": [1]}
    for _ in range(depth):
        pattern = {"$or": [pattern, {"b": [2]}]}
    return pattern


#: hostile examples for records (docs/records-syntax.md §4), run by the hostile-input suite
HOSTILE_EXAMPLES = [
    Case("filter", {"a": [{"numeric": [[">"], 1]}]}, "§2 numeric with a list operator"),
    Case("filter", {"a": [{1: "x"}]}, "§2 a non-string key in a pattern"),
    Case("filter", "a > " + "1" * 400, "§2 a 400-digit literal (then added to an index)"),
    Case("filter", "a = " + "9" * 5000, "§2 a 5000-digit literal"),
    Case("filter", _nested_or(2000), "§2 an EventBridge $or nested 2000 levels"),
    Case("event", nested_dict(500), "§2 an event nested 500 levels"),
    Case("event", '{"a": "\ud800"}', "§2 a str event with a lone surrogate"),
    Case("event", {"a": "\ud83d\ude00"}, "§4 two lone surrogates (round trip)"),
    Case("event", {"a": 10**4400}, "§2 a 4401-digit integer in an event"),
]


class RecordsFixtures:
    @pytest.fixture
    def hostile_inputs(self):
        return HOSTILE_EXAMPLES

    @pytest.fixture
    def filter_strategy(self, model):
        return testing.filters(model.schema)

    @pytest.fixture
    def event_strategy(self, model):
        return testing.events(model.schema)

    @pytest.fixture
    def matching_event(self, model):
        return lambda f: testing.matching_event(f, model.schema)


class TestInstalledRecords(RecordsFixtures, ModelConformance):
    @pytest.fixture
    def model(self):
        return load_model("records")


class TestRecordsWithSchema(RecordsFixtures, ModelConformance):
    @pytest.fixture
    def model(self):
        return RecordsModel(testing.SCHEMA)


@pytest.mark.slow
class TestRecordsThorough(TestRecordsWithSchema):
    """The same with more examples (150 × PUBSIFT_TEST_DEPTH, tests/depth.py) and hostile batches (``make test`` runs it;
    ``test-fast`` skips)."""

    @pytest.fixture
    def max_examples(self):
        return deep(150)

    @pytest.fixture
    def hostile_batches(self):
        return 20


# -- the kit is sharp on records: classic mistakes in the conjunctive rules are caught ------


class CoversIgnoringMissingAttributes(RecordsModel):
    """Cor. 4.2 misread: only f's attributes that g also constrains are compared."""

    def covers(self, f, g):
        return all(
            relations.covers(c, g.get(n), n in self.schema.integer_attrs)
            for n, c in f
            if g.get(n) is not None
        )


class OverlapsOnlyOnSameAttributes(RecordsModel):
    """Says filters on different attributes never overlap."""

    def overlaps(self, f, g):
        return set(f.names) == set(g.names) and super().overlaps(f, g)


class HullAsPerfectMerger(RecordsModel):
    """Returns the imperfect covering hull where a perfect merger is asked for."""

    def merge(self, fs, perfect=True):
        return super().merge(fs, perfect=False)


MUTANTS = [
    (CoversIgnoringMissingAttributes, soundness.covers_sound),
    (OverlapsOnlyOnSameAttributes, soundness.overlaps_sound),
    (HullAsPerfectMerger, merging.perfect_merge),
]


@pytest.mark.parametrize("mutant, check", MUTANTS, ids=[m.__name__ for m, _ in MUTANTS])
def test_kit_catches_records_mutant(mutant, check):
    model = mutant(testing.SCHEMA)
    kit = Kit(
        model,
        testing.filters(model.schema),
        testing.events(model.schema),
        lambda f: testing.matching_event(f, model.schema),
        model.capabilities,
    )
    with pytest.raises(AssertionError):
        run(
            kit,
            check,
            settings(
                max_examples=100,
                deadline=None,
                database=None,
                derandomize=True,
                phases=[Phase.explicit, Phase.generate],
            ),
        )
