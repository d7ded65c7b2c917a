"""The records model's hypothesis strategies (:mod:`pubsift.models.records.testing`), which
the conformance kit runs on: they reach every operator, produce canonical filters and events
the model accepts, and ``matching_event`` really matches."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pubsift.models.constraints.relations import normalize
from pubsift.models.records import Op, RecordsModel, Schema, testing

SETTINGS = settings(
    max_examples=300,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
QUICK = settings(SETTINGS, max_examples=120)
MODEL = RecordsModel(testing.SCHEMA)


def _ops_seen(strategy) -> set[Op]:
    seen: set[Op] = set()

    @settings(SETTINGS, max_examples=1000)  # every operator, and "any" over each of them
    @given(strategy)
    def collect(c):
        seen.add(c.op)

    collect()
    return seen


def test_raw_constraints_reach_every_operator():
    assert _ops_seen(testing.raw_constraints(testing.SCHEMA)) == set(Op)


def test_canonical_constraints_reach_every_operator():
    assert _ops_seen(testing.constraints(testing.SCHEMA)) == set(Op)


def test_no_instanceof_without_declared_types():
    assert Op.INSTANCEOF not in _ops_seen(testing.raw_constraints(Schema()))


@QUICK
@given(testing.filters(testing.SCHEMA))
def test_filters_are_canonical(f):
    for name, c in f:
        assert normalize(c, integer=testing.SCHEMA.is_integer(name)) == c
    assert set(f.names) <= set(testing.NAMES)


@QUICK
@given(st.data())
def test_matching_event_matches_and_model_accepts_it(data):
    f = data.draw(testing.filters(testing.SCHEMA), label="f")
    e = data.draw(testing.matching_event(f, testing.SCHEMA), label="e")
    assert MODEL.matches(f, e)
    assert MODEL.parse_event(e.raw) == e  # e.g. integer attributes hold integers


@QUICK
@given(testing.events(testing.SCHEMA))
def test_events_mix_kinds_and_model_accepts_them(e):
    assert MODEL.parse_event(e.raw) == e
    # attributes, arrays of objects (groups), or the empty event {} (docs/records-syntax.md §5)
    assert len(e) >= 1 or e.groups or e.raw == {}
