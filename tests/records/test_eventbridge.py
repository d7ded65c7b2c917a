"""EventBridge / aws event-ruler JSON patterns as records filters.

Oracles: hand-written constraints for every matcher; brute-force matching of the produced
disjunction against the pattern's meaning on probe events; and the real event-ruler test
fixtures in ../shared/data/eventruler (see its PROVENANCE.md): the $or rule files of
JsonRuleCompilerTest / RuleCompilerTest (which must compile / must be rejected) and the
rule/event pairs of correctness-cases.json, whose expected outcomes follow from the case
names and event-ruler's documented semantics (README "JSON Array Matching").
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path

import pytest
from pubsift.core.errors import FilterSyntaxError
from pubsift.models.constraints import relations
from pubsift.models.constraints.constraints import Constraint, Interval, Op
from pubsift.models.constraints.values import skey
from pubsift.models.records.eventbridge import MAX_FILTERS, parse_pattern
from pubsift.models.records.events import Record
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.syntax import parse_filter, parse_text
from pubsift.models.records.typesystem import Schema

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "eventruler"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"event-ruler fixtures absent ({DATA})")


def S(*vs) -> frozenset:
    return frozenset(skey(v) for v in vs)


def BUT(*cs: Constraint) -> Constraint:
    return Constraint(Op.ANYTHING_BUT, frozenset(cs))


def only(pattern) -> Constraint:
    (f,) = parse_pattern(pattern)
    ((_, c),) = f.constraints
    return c


MATCHERS = [
    (["a"], Constraint(Op.EQ, "a")),
    ([5], Constraint(Op.EQ, 5)),
    ([True], Constraint(Op.EQ, True)),
    ([None], Constraint(Op.EQ, None)),
    (["a", "b", 1], Constraint(Op.IN_SET, S("a", "b", 1))),
    ([1, 1.0], Constraint(Op.EQ, 1)),
    ([{"exactly": "a"}], Constraint(Op.EQ, "a")),
    ([{"prefix": "ab"}], Constraint(Op.PREFIX, "ab")),
    ([{"suffix": "ab"}], Constraint(Op.SUFFIX, "ab")),
    ([{"equals-ignore-case": "EC2"}], Constraint(Op.EQ_IGNORE_CASE, "EC2")),
    ([{"anything-but": "x"}], BUT(Constraint(Op.EQ, "x"))),
    ([{"anything-but": 3}], BUT(Constraint(Op.EQ, 3))),
    ([{"anything-but": ["x", "y"]}], BUT(Constraint(Op.IN_SET, S("x", "y")))),
    ([{"anything-but": [100, 200, 300]}], BUT(Constraint(Op.IN_SET, S(100, 200, 300)))),
    ([{"anything-but": {"prefix": "init"}}], BUT(Constraint(Op.PREFIX, "init"))),
    ([{"anything-but": {"suffix": ".tmp"}}], BUT(Constraint(Op.SUFFIX, ".tmp"))),
    (
        [{"anything-but": {"prefix": ["init", "error"]}}],
        BUT(Constraint(Op.PREFIX, "init"), Constraint(Op.PREFIX, "error")),
    ),
    (
        [{"anything-but": {"equals-ignore-case": "Stopped"}}],
        BUT(Constraint(Op.EQ_IGNORE_CASE, "stopped")),
    ),
    (
        [{"anything-but": {"wildcard": "*/bin/*.jar"}}],
        BUT(Constraint(Op.WILDCARD, ("", "/bin/", ".jar"))),
    ),
    ([{"prefix": {"equals-ignore-case": "EC2"}}], Constraint(Op.PREFIX_IGNORE_CASE, "ec2")),
    ([{"suffix": {"equals-ignore-case": "EC2"}}], Constraint(Op.SUFFIX_IGNORE_CASE, "ec2")),
    ([{"wildcard": "2*0*1*7"}], Constraint(Op.WILDCARD, ("2", "0", "1", "7"))),
    ([{"shellstyle": "a\\*b"}], Constraint(Op.WILDCARD, ("a\\", "b"))),
    ([{"cidr": "10.0.0.0/24"}], Constraint(Op.CIDR, ipaddress.ip_network("10.0.0.0/24"))),
    ([{"cidr": "2001:db8::/32"}], Constraint(Op.CIDR, ipaddress.ip_network("2001:db8::/32"))),
    ([{"regexp": "a[bc]+"}], Constraint(Op.REGEXP, "a[bc]+")),
    ([{"numeric": ["<", 1, ">", 0]}], Constraint(Op.IN_RANGE, Interval(0, 1, False, False))),
    ([{"numeric": [">", 0, "=", 3]}], Constraint(Op.EQ, 3)),
    ([{"numeric": [">", 0, "<=", 5]}], Constraint(Op.IN_RANGE, Interval(0, 5, False, True))),
    ([{"numeric": [">=", 0, "<", 5]}], Constraint(Op.IN_RANGE, Interval(0, 5, True, False))),
    ([{"numeric": ["<", 10]}], Constraint(Op.LT, 10)),
    ([{"numeric": ["<=", 10]}], Constraint(Op.LE, 10)),
    ([{"numeric": [">", 1.5]}], Constraint(Op.GT, 1.5)),
    ([{"numeric": [">=", -3]}], Constraint(Op.GE, -3)),
    ([{"numeric": ["=", 3.018e2]}], Constraint(Op.EQ, 301.8)),
    ([{"exists": True}], Constraint(Op.EXISTS)),
    ([{"exists": False}], Constraint(Op.NOT_EXISTS)),
    ([{"wildcard": "Simple*"}], Constraint(Op.PREFIX, "Simple")),
    ([{"wildcard": "*Service"}], Constraint(Op.SUFFIX, "Service")),
    ([{"wildcard": "*mple*"}], Constraint(Op.SUBSTRING, "mple")),
    ([{"wildcard": "a\\*b"}], Constraint(Op.EQ, "a*b")),
    ([{"wildcard": "a\\\\*"}], Constraint(Op.PREFIX, "a\\")),
    ([{"wildcard": "*"}], Constraint(Op.PREFIX, "")),
]


@pytest.mark.parametrize("leaf, expected", MATCHERS, ids=[json.dumps(m) for m, _ in MATCHERS])
def test_every_matcher_maps_onto_its_constraint(leaf, expected):
    """Every matcher tests the leaves of the field: an "any element" constraint."""
    c = only({"f": leaf})
    assert c == relations.normalize(Constraint(Op.ANY, expected))


def test_nested_objects_address_dotted_names_and_readme_example():
    """The "complex example" of event-ruler's README."""
    pattern = {
        "time": [{"prefix": "2017-10-02"}],
        "detail": {
            "state": [{"anything-but": "initializing"}],
            "c-count": [{"numeric": [">", 0, "<=", 5]}],
            "d-count": [{"numeric": ["<", 10]}],
            "x-limit": [{"anything-but": [100, 200, 300]}],
            "source-ip": [{"cidr": "10.0.0.0/8"}],
        },
    }
    (f,) = parse_pattern(pattern)
    assert f == parse_text(
        'time any prefix "2017-10-02" and detail.state any anything-but (= "initializing") '
        "and detail.c-count any in (0, 5] and detail.d-count any < 10 and "
        "detail.x-limit any anything-but (in {100, 200, 300}) and "
        'detail.source-ip any cidr "10.0.0.0/8"'
    )
    event = {
        "time": "2017-10-02T16:24:49Z",
        "detail": {
            "c-count": 5,
            "d-count": 3,
            "x-limit": 301.8,
            "state": "running",
            "source-ip": "10.0.0.33",
        },
    }
    assert f.matches(Record.of(event))
    assert not f.matches(Record.of({**event, "detail": {**event["detail"], "c-count": 0}}))


def _matches_any(fs: list[RecordFilter], event: dict) -> bool:
    r = Record.of(event)
    return any(f.matches(r) for f in fs)


PROBES = [{"a": v, "b": w} for v in ("a", "bx", "c", 1, 7, True) for w in (1, 2, "z")] + [
    {"b": 1},
    {"a": "a"},
]


def test_mixed_matchers_in_one_array_are_a_disjunction():
    fs = parse_pattern({"a": ["a", {"prefix": "b"}, {"numeric": [">", 5]}], "b": [1, 2]})
    assert len(fs) == 3
    for e in PROBES:
        a, b = e.get("a"), e.get("b")
        meaning = (
            b in (1, 2)
            and not isinstance(b, bool)
            and (
                a == "a" or (isinstance(a, str) and a.startswith("b")) or (type(a) is int and a > 5)
            )
        )
        assert _matches_any(fs, e) == meaning, e


def test_or_distributes_over_the_enclosing_conjunction():
    fs = parse_pattern({"b": [1], "$or": [{"a": ["a"]}, {"a": [{"prefix": "b"}], "b": [1, 2]}]})
    assert fs == [
        parse_text('a any = "a" and b any = 1'),
        parse_text('a any prefix "b" and b any = 1'),
    ]
    for e in PROBES:
        meaning = e.get("b") == 1 and (
            e.get("a") == "a" or (str(e.get("a")).startswith("b") and isinstance(e.get("a"), str))
        )
        assert _matches_any(fs, e) == meaning, e


def test_branches_that_match_nothing_are_dropped_and_duplicates_merged():
    fs = parse_pattern({"a": [1], "$or": [{"a": [{"exists": False}]}, {"a": [1, 3]}, {"b": [1]}]})
    assert fs == [parse_text("a any = 1"), parse_text("a any = 1 and b any = 1")]
    assert parse_pattern({"$or": [{"a": [1]}, {"a": [1]}]}) == [parse_text("a any = 1")]
    with pytest.raises(FilterSyntaxError, match="no value satisfies both") as info:
        parse_pattern(
            {
                "a": [1],
                "$or": [
                    {"a": [{"exists": False}]},
                    {"b": [{"exists": False}], "a": [{"exists": False}]},
                ],
            }
        )
    assert info.value.path == "$.$or[0].a[0]"


def test_two_patterns_on_one_field_both_hold_on_some_leaf():
    """``any = 1`` and ``any = 2`` (an $or branch and the enclosing object on one field):
    no scalar holds both, an array holding 1 and 2 does."""
    f, g = parse_pattern({"a": [1], "$or": [{"a": [2]}, {"b": [1]}]})
    assert f == parse_text("a superset {1, 2}")
    assert g == parse_text("a any = 1 and b any = 1")
    assert f.matches(Record.of({"a": [2, 1]})) and not f.matches(Record.of({"a": 1}))


def test_schema_integer_attributes_are_used():
    fs = parse_pattern(
        {"n": [{"numeric": [">", 3, "<", 5]}, {"anything-but": 2}]}, Schema.of(integer_attrs=["n"])
    )
    assert fs[1] == RecordFilter.of({"n": Constraint(Op.ANY, BUT(Constraint(Op.EQ, 2)))})
    # inside "any" the range also tests array elements, which are taken as reals
    assert fs[0] == parse_text("n any in (3, 5)")


def test_text_and_mapping_forms_agree():
    p = {"source": ["aws.ec2"], "detail": {"state": ["running", "stopped"]}}
    assert parse_pattern(json.dumps(p)) == parse_pattern(p)
    assert parse_filter(json.dumps(p)) == parse_filter(p)


def test_expansion_limit():
    ok = {f"f{i}": ["a", {"prefix": "b"}] for i in range(8)}  # 2**8 = 256
    assert len(parse_pattern(ok)) == MAX_FILTERS
    too_many = {f"f{i}": ["a", {"prefix": "b"}] for i in range(9)}
    with pytest.raises(FilterSyntaxError, match="more than 256") as info:
        parse_pattern(too_many)
    assert info.value.path == "$.f8"


REJECTED = [
    ({"ip": [{"cidr": "10.0.0.0/33"}]}, "$.ip[0].cidr", "cidr takes"),
    ({"a": [{"wildcard": "a**"}]}, "$.a[0].wildcard", "consecutive"),
    ({"a": [{"wildcard": "a\\b"}]}, "$.a[0].wildcard", "backslash"),
    ({"a": [{"prefix": {"exactly": "x"}}]}, "$.a[0].prefix", "equals-ignore-case"),
    ({"a": [{"anything-but": {"exists": True}}]}, "$.a[0].anything-but", "unsupported"),
    ({"a": [{"anything-but": {"wildcard": "x**"}}]}, "$.a[0].anything-but.wildcard", "consecutive"),
    ({"a": [{"anything-but": {"prefix": ""}}]}, "$.a[0].anything-but.prefix", "not be empty"),
    ({"a": [{"anything-but": ["x", 1]}]}, "$.a[0].anything-but", "not mixed"),
    ({"a": [{"anything-but": [True]}]}, "$.a[0].anything-but[0]", "strings or numbers"),
    ({"a": [{"anything-but": []}]}, "$.a[0].anything-but", "at least one"),
    ({"a": [{"numeric": [">", "0"]}]}, "$.a[0].numeric[1]", "expected a number"),
    ({"a": [{"numeric": ["~", 0]}]}, "$.a[0].numeric[0]", "unknown numeric operator"),
    ({"a": [{"numeric": [">", 5, "<", 1]}]}, "$.a[0].numeric[2]", "exclude each other"),
    ({"a": [{"numeric": [">", 0, "<"]}]}, "$.a[0].numeric", "numeric takes"),
    ({"a": [{"exists": "yes"}]}, "$.a[0].exists", "true or false"),
    ({"a": [{"prefix": 1}]}, "$.a[0].prefix", "takes a string"),
    ({"a": [{"regex": "x"}]}, "$.a[0].regex", "unknown matcher"),
    ({"a": [{"prefix": "x", "suffix": "y"}]}, "$.a[0]", "exactly one key"),
    ({"a": []}, "$.a", "empty arrays"),
    ({"a": {}}, "$.a", "empty objects"),
    ({}, "$", "empty objects"),
    ({"a": "x"}, "$.a", "must be an object or an array"),
    ({"a": [[1]]}, "$.a[0]", "nested arrays"),
    ({"a": [float("inf")]}, "$.a[0]", "finite"),
    ({"detail-type": {"x y": [{"cidr": "::1/129"}]}}, '$.detail-type["x y"][0].cidr', "cidr"),
    ({"$or": [{"a": [1]}]}, "$.$or", "at least two"),
    ({"$or": {"a": [1], "b": [2]}}, "$.$or", "plain field name"),
    ({"$or": [{"a": [1]}, [{"b": [2]}]]}, "$.$or[1]", "only JSON objects"),
    ({"$or": [{"numeric": [1]}, {"b": [2]}]}, "$.$or[0].numeric", "is a matcher"),
    (
        {
            "a": [1],
            "b": [{"prefix": "x"}],
            "c": [{"suffix": "x"}],
            "$or": [{"c": [{"substring": "x"}]}, {"d": [1]}],
        },
        "$.$or[0].c[0].substring",
        "unknown matcher",
    ),
    ({"a": [{"regexp": "a(b"}]}, "$.a[0].regexp", "unclosed"),
    ([1, 2], "$", "is a JSON object"),
]


@pytest.mark.parametrize("pattern, path, msg", REJECTED, ids=[str(i) for i in range(len(REJECTED))])
def test_unrepresentable_or_malformed_patterns_name_the_json_path(pattern, path, msg):
    with pytest.raises(FilterSyntaxError) as info:
        parse_pattern(pattern)
    assert info.value.path == path, str(info.value)
    assert msg in info.value.message
    assert path in str(info.value)


@pytest.mark.parametrize(
    "text, msg, pos",
    [
        ('{"a": [1,]}', "malformed JSON", 9),
        ('{"a": [1], "a": [2]}', "duplicate key 'a'", None),
        ('{"a": [NaN]}', "NaN is not JSON", None),
        ('{"a": [Infinity]}', "Infinity is not JSON", None),
    ],
)
def test_json_text_errors(text, msg, pos):
    with pytest.raises(FilterSyntaxError, match=msg) as info:
        parse_pattern(text)
    assert info.value.position == pos


# --------------------------------------------------------------------------------------
# real event-ruler fixtures


def _load(name: str):
    return json.loads((DATA / name).read_text())


@needs_data
def test_or_relationship_rules_compile_into_their_branches():
    """src/test/data/orRelationshipRules.json (JsonRuleCompilerTest): every rule compiles;
    the branch counts follow the README's reading of $or (parallel $or multiplies)."""
    rules = _load("src-test-data/orRelationshipRules.json")
    fss = [parse_pattern(r) for r in rules]
    assert [len(fs) for fs in fss] == [2, 4, 3, 4, 2]
    assert fss[2] == [
        parse_text(
            'source any = "aws.cloudwatch" and metricName any in {"CPUUtilization", "ReadLatency"}'
        ),
        parse_text(
            'source any = "aws.cloudwatch" and metricType any = "MetricType" and '
            'namespace any in {"AWS/EC2", "AWS/ES"}'
        ),
        parse_text('source any = "aws.cloudwatch" and scope any = "Service"'),
    ]
    assert (
        parse_text(
            'metricId any = 1234 and metricType any = "MetricType" and namespace '
            'any in {"AWS/EC2", "AWS/ES"} and source any = "aws.cloudwatch"'
        )
        in fss[3]
    )


@needs_data
def test_wrong_or_relationship_rules_are_rejected():
    """src/test/data/wrongOrRelationshipRules.json: event-ruler's test asserts that every
    rule throws; so do we, naming the member."""
    paths = []
    for r in _load("src-test-data/wrongOrRelationshipRules.json"):
        with pytest.raises(FilterSyntaxError) as info:
            parse_pattern(r)
        paths.append(info.value.path)
    assert paths == ["$.$or", "$.detail.$or[2]"]


@needs_data
def test_legacy_or_as_field_name_is_rejected_clearly():
    """src/test/data/normalRulesWithOrWording.json: event-ruler's legacy RuleCompiler reads
    "$or" as a plain field name; we do not support that reading and say so."""
    msgs = []
    for r in _load("src-test-data/normalRulesWithOrWording.json"):
        with pytest.raises(FilterSyntaxError) as info:
            parse_pattern(r)
        msgs.append(info.value.message)
    assert len(msgs) == 4
    assert "plain field name" in msgs[1] and "is a matcher" in msgs[2]


@needs_data
def test_array_rules_and_big_event_rule_compile():
    """GenericMachineTest's arrayRule1-4 and BigEventTest's bigEventRule compile (their events
    hold arrays of objects: tests/records/test_event_arrays.py matches them)."""
    for i in range(1, 5):
        assert len(parse_pattern((DATA / f"src-test-data/arrayRule{i}.json").read_text())) == 1
    fs = parse_pattern((DATA / "src-test-data/bigEventRule.json").read_text())
    assert len(fs) == 3  # action: prefix CREATE | DELETE | UPSERT
    assert {
        f.get("detail.requestParameters.changeBatch.changes.action").operand.operand for f in fs
    } == {"CREATE", "DELETE", "UPSERT"}


# Expected outcomes of correctness-cases.json, from the case names and event-ruler's
# semantics (a scalar pattern matches an array field if it matches any element).
EXPECTED = {
    "flat: 2-field exists, both present": True,
    "flat: 2-field exists, one missing": False,
    "flat: exact match": True,
    "flat: exact mismatch": False,
    "flat: prefix": True,
    "flat: numeric range": True,
    "flat: anything-but": True,
    "primarray: exists": True,
    "primarray: exact match": True,
    "primarray: no match": False,
    "primarray: large + scalar, exists": True,
    "primarray: large + scalar, prefix": True,
    "primarray: large + scalar, no match": False,
    "primarray: nested under object": True,
    "primarray: two prim arrays + scalar": True,
    "primarray: exact match among many": True,
    "primarray: numeric in array": True,
    "primarray: anything-but in array": True,
    "primarray: single value array": True,
    "deep prim: nested 3 levels": True,
    "empty array": False,
    "primarray: empty prim array": False,
}


def _arrays(v) -> str:
    """'' (no arrays), 'scalars' (only arrays of scalars) or 'objects'."""
    if isinstance(v, dict):
        kinds = {_arrays(x) for x in v.values()}
    elif isinstance(v, list):
        return "objects" if any(isinstance(x, (dict, list)) for x in v) else "scalars"
    else:
        return ""
    return "objects" if "objects" in kinds else "scalars" if "scalars" in kinds else ""


@needs_data
def test_correctness_cases_agree_with_event_ruler_on_records_events():
    """Every rule of correctness-cases.json is accepted, and on every records event (no
    arrays, or arrays of scalars) our outcome is event-ruler's: a pattern matches an array
    field when some element matches (``primarray: exact match``, ``numeric in array``,
    ``anything-but in array``: ["banned", "ok"] has the element "ok"), ``exists`` needs a
    leaf (``primarray: empty prim array``: [] has none). Events with arrays of objects
    (or empty): tests/records/test_event_arrays.py."""
    cases = _load("src-test-resources/correctness-cases.json")
    tally = {
        "accepted": 0,
        "flat agree": 0,
        "flat differ": 0,
        "scalar arrays agree": 0,
        "scalar arrays differ": 0,
        "arrays of objects or empty": 0,
    }
    for case in cases:
        fs = parse_pattern(case["rule"])
        tally["accepted"] += 1
        kind = _arrays(case["event"])
        if kind == "objects" or not case["event"]:
            tally["arrays of objects or empty"] += 1
            continue
        agree = _matches_any(fs, case["event"]) == EXPECTED[case["name"]]
        prefix = "flat" if kind == "" else "scalar arrays"
        tally[f"{prefix} {'agree' if agree else 'differ'}"] += 1
    assert len(cases) == 51
    assert tally == {
        "accepted": 51,
        "flat agree": 7,
        "flat differ": 0,
        "scalar arrays agree": 15,
        "scalar arrays differ": 0,
        "arrays of objects or empty": 29,
    }, tally
