"""Randomized hostile input for every hook of the concepts model (docs/concepts.md, "Limits (hostile input)"): valid filters
and events with one part replaced by an extreme or ill-typed value (huge and 4,300-digit
integers, NaN, infinities, lone surrogates, wrong JSON types, deep nesting, odd units).
Each hook answers or raises a PubsiftError; whatever parses round-trips exactly through
its wire and text forms and the index agrees with ``matches``."""

from __future__ import annotations

import contextlib
import copy
import json

import pytest
from depth import deep
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pubsift.core.errors import PubsiftError
from pubsift.models.concepts import testing

_EXTREME = st.one_of(
    st.integers(min_value=-(10**400), max_value=10**400),
    st.sampled_from(
        [
            10**4400,
            1e308,
            -1e308,
            5e-324,
            float("nan"),
            float("inf"),
            True,
            None,
            "",
            "\ud800",
            "a\x00b",
            "kg ** 400",
            "degC ** 2",
            "dBm",
            "@nope",
            "0001-01-01T00:00:00+01:00",
            "%Q",
            [],
            {},
            ["<"],
            [True, 1, "x"],
            {"unit": 5},
            {"currency": 5},
            {"scale": 1},
            {"date_format": None},
            {"ref": []},
            {"value": {"Order": {"value": {"Order": {"value": 1}}}}},
        ]
    ),
    st.floats(),
    st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=12),
)
_KEYS = st.sampled_from(
    [
        "concept",
        "value",
        "context",
        "time",
        "unit",
        "currency",
        "scale",
        "date_format",
        "op",
        "attr",
        "closed",
        "where",
        "x",
    ]
)


def _mutate(data, obj):
    """Replace or add one part of a JSON-like object at a random depth."""
    node = obj
    while True:
        if isinstance(node, dict) and node:
            key = data.draw(st.sampled_from(sorted(node, key=str)) | _KEYS)
        elif isinstance(node, list) and node:
            key = data.draw(st.integers(0, len(node) - 1))
        else:
            return obj
        child = node.get(key) if isinstance(node, dict) else node[key]
        if isinstance(child, (dict, list)) and child and data.draw(st.booleans()):
            node = child
            continue
        node[key] = data.draw(_EXTREME)
        return obj


def _contract(fn, *args):
    try:
        return True, fn(*args)
    except PubsiftError as exc:
        str(exc).encode("utf-8")  # messages are printable
        return False, None


_FILTERS = [
    {
        "concept": "Order",
        "where": [
            {
                "attr": "NetWeight",
                "op": "between",
                "value": [1, 2],
                "unit": "kg",
                "closed": [True, False],
            }
        ],
    },
    {
        "concept": "StockQuote",
        "context": {"currency": "EUR", "scale": 1000, "per_concept": {"FinalPrice": {"scale": 1}}},
        "where": [
            {"attr": "FinalPrice", "op": "<", "value": 100},
            {"attr": ["DateOfIssue"], "op": "after", "value": "2017-06-01"},
            {"attr": "Symbol", "op": "in", "value": ["A", "B"]},
        ],
    },
]


def _check(model, data):
    if data.draw(st.booleans()):
        spec = _mutate(data, copy.deepcopy(data.draw(st.sampled_from(_FILTERS))))
        if data.draw(st.booleans()):
            spec = data.draw(testing.filter_texts()) + data.draw(
                st.sampled_from(
                    [
                        " and NetWeight > 1e999 kg",
                        ' and Symbol = "\\q"',
                        " and Distance > 1 m ** 99",
                        " and NetWeight > " + "9" * 500 + " kg",
                        ' and Symbol != "\ud800"',
                        "",
                    ]
                )
            )
        ok, f = _contract(model.parse_filter, spec)
        if ok:
            wire = json.loads(json.dumps(model.dump_filter(f), allow_nan=False))
            assert model.load_filter(wire) == f
            assert model.parse_filter(model.format_filter(f)) == f
            index = model.new_index()
            index.add(f, 1)
            e = data.draw(testing.events(model))
            assert index.match(e) == ({1} if model.matches(f, e) else set())
        return
    obj = _mutate(data, data.draw(testing.event_json()))
    raw = obj
    if data.draw(st.booleans()):
        with contextlib.suppress(ValueError, TypeError, RecursionError):
            raw = json.dumps(obj)
    ok, e = _contract(model.parse_event, raw)
    if ok:
        wire = json.loads(json.dumps(model.dump_event(e), allow_nan=False))
        assert model.load_event(wire) == e
        f = data.draw(testing.filters(model))
        assert model.matches(f, e) in (True, False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_hostile_filters_and_events_keep_the_contract(model, data):
    _check(model, data)


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_hostile_filters_and_events_keep_the_contract_deeply(model, data):
    _check(model, data)


_NUMS = ("0", "-0.0", "1", "3", "2.5", "1e308", "-1e308", "5e-324", "1e-300", "1.7e308", "inf")
_VALUES = (0, -0.0, 1, 3, 2.5, 1e308, -1e308, 5e-324, 1e-300, 0.45359237, 1000, 1e-6, 112.0)


def _extreme_filters(model, rnd, n):
    out = []
    while len(out) < n:
        conds = []
        for _ in range(rnd.randint(1, 2)):
            member = rnd.choice(["NetWeight", "FinalPrice"])
            u = rnd.choice(testing.UNITS if member == "NetWeight" else testing.CURRENCIES)
            a, b = rnd.choice(_NUMS), rnd.choice(_NUMS)
            conds.append(
                rnd.choice(
                    [f"{member} {op} {a} {u}" for op in ("<", "<=", ">", ">=", "=", "!=")]
                    + [
                        f"{member} between {a} {u} and {b} {u}",
                        f"{member} not in {{{a}, {b}}} {u}",
                        f"{member} in [{a}, {b}) {u}",
                    ]
                )
            )
        with contextlib.suppress(PubsiftError):
            out.append(model.parse_filter("Order where " + " and ".join(conds)))
    return out


def _extreme_events(model, rnd, n):
    return [
        model.parse_event(
            {
                "concept": "Order",
                "time": rnd.choice(testing.TIMES),
                "value": {
                    "NetWeight": {
                        "value": rnd.choice(_VALUES),
                        "context": {
                            "unit": rnd.choice(testing.UNITS),
                            "scale": rnd.choice([1, 1000, 1e-300, 1e300]),
                        },
                    },
                    "FinalPrice": {
                        "value": rnd.choice(_VALUES),
                        "context": {
                            "currency": rnd.choice(testing.CURRENCIES),
                            "scale": rnd.choice([1, 1e300, 1e-300]),
                        },
                    },
                },
            }
        )
        for _ in range(n)
    ]


def _check_relations_at_the_ends_of_the_double_range(model, seed, nf, ne):
    import itertools
    import random

    rnd = random.Random(seed)
    fs, es = _extreme_filters(model, rnd, nf), _extreme_events(model, rnd, ne)
    hits = {f: frozenset(i for i, e in enumerate(es) if model.matches(f, e)) for f in fs}
    for f, g in itertools.product(fs, fs):
        if model.covers(f, g):
            assert hits[g] <= hits[f], (model.format_filter(f), model.format_filter(g))
        if not model.overlaps(f, g):
            assert not hits[f] & hits[g], (model.format_filter(f), model.format_filter(g))
        merged = model.merge([f, g])
        if merged is not None:
            assert (
                frozenset(i for i, e in enumerate(es) if model.matches(merged, e))
                == hits[f] | hits[g]
            )
    index = model.new_index()
    for i, f in enumerate(fs):
        index.add(f, i)
    for j, e in enumerate(es):
        assert index.match(e) == {i for i, f in enumerate(fs) if j in hits[f]}


def test_relations_and_index_are_sound_at_the_ends_of_the_double_range(model):
    _check_relations_at_the_ends_of_the_double_range(model, 1, 30, 250)


@pytest.mark.slow
def test_relations_and_index_are_sound_at_the_ends_of_the_double_range_deeply(model):
    for seed in range(2, 2 + deep(2)):
        _check_relations_at_the_ends_of_the_double_range(model, seed, 120, 1500)
