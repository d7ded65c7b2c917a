"""EventBridge patterns on array fields: a pattern tests the *leaves* of a field (the value, or
each element of an array) and matches when some leaf matches.

Sources:
* Amazon EventBridge user guide, "Arrays in Amazon EventBridge event patterns",
  https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns-arrays.html
  ("If the value in the event is an array, then the event pattern matches if the
  intersection of the event pattern array and the event array is non-empty"; its
  ``resources`` example is used verbatim below);
* Amazon EventBridge user guide, "Amazon EventBridge event patterns",
  https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html (the EC2
  state-change event, whose ``resources`` is an array);
* aws/event-ruler README, "Ruler by Example" / "JSON Array Matching" (``resources`` in the
  sample rule: "if the value in the event is also an array, the rule matches if the
  intersection between the event array and rule-array is non-empty"), and its
  correctness-cases.json (test_eventbridge.py) for anything-but and exists on arrays.
"""

from __future__ import annotations

import pytest
from pubsift.core.errors import FilterSyntaxError
from pubsift.models.constraints import relations
from pubsift.models.constraints.constraints import ABSENT, Constraint, Op
from pubsift.models.records import RecordsModel, wire
from pubsift.models.records.eventbridge import parse_pattern
from pubsift.models.records.events import Record
from pubsift.models.records.syntax import format_filter, parse_text

ARRAYS_PAGE_PATTERN = {
    "resources": [
        "arn:aws:ec2:us-east-1:123456789012:instance/i-b188560f",
        "arn:aws:ec2:us-east-1:111122223333:instance/i-b188560f",
        "arn:aws:ec2:us-east-1:444455556666:instance/i-b188560f",
    ]
}
ARRAYS_PAGE_EVENT = {
    "resources": [
        "arn:aws:autoscaling:us-east-1:123456789012:autoScalingGroup:eb56d16b-bbf0-401d-b893-"
        "d5978ed4a025:autoScalingGroupName/ASGTerminate",
        "arn:aws:ec2:us-east-1:123456789012:instance/i-b188560f",
    ]
}

EC2_EVENT = {
    "version": "0",
    "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718",
    "detail-type": "EC2 Instance State-change Notification",
    "source": "aws.ec2",
    "account": "111122223333",
    "time": "2017-12-22T18:43:48Z",
    "region": "us-west-1",
    "resources": ["arn:aws:ec2:us-west-1:123456789012:instance/i-1234567890abcdef0"],
    "detail": {"instance-id": "i-1234567890abcdef0", "state": "terminated"},
}


def matches(pattern, event) -> bool:
    r = Record.of(event)
    return any(f.matches(r) for f in parse_pattern(pattern))


def test_aws_arrays_page_example_matches_on_a_shared_element():
    """The example of "Arrays in Amazon EventBridge event patterns": the first item of the
    pattern array equals the second item of the event array."""
    assert matches(ARRAYS_PAGE_PATTERN, ARRAYS_PAGE_EVENT)
    other = {
        "resources": [
            ARRAYS_PAGE_EVENT["resources"][0],
            "arn:aws:ec2:us-east-1:999999999999:instance/i-b188560f",
        ]
    }
    assert not matches(ARRAYS_PAGE_PATTERN, other)
    assert matches(ARRAYS_PAGE_PATTERN, {"resources": ARRAYS_PAGE_PATTERN["resources"][1]})


def test_aws_ec2_state_change_event_resources_array():
    """The EC2 event of "Amazon EventBridge event patterns": the page's pattern, and patterns
    on its one-element ``resources`` array."""
    assert matches(
        {
            "source": ["aws.ec2"],
            "detail-type": ["EC2 Instance State-change Notification"],
            "detail": {"state": ["terminated"]},
        },
        EC2_EVENT,
    )
    arn = EC2_EVENT["resources"][0]
    assert matches({"resources": [arn]}, EC2_EVENT)
    assert matches({"resources": [{"prefix": "arn:aws:ec2:us-west-1:"}]}, EC2_EVENT)
    assert not matches({"resources": [{"prefix": "arn:aws:s3:"}]}, EC2_EVENT)
    assert matches({"resources": [{"wildcard": "*:instance/i-1234567890abcdef0"}]}, EC2_EVENT)


@pytest.mark.parametrize(
    "leaf, hit, miss",
    [
        (["admin"], ["user", "admin"], ["user", "superadmin"]),
        ([{"prefix": "ad"}], ["dev", "admin"], ["dev", "user"]),
        ([{"suffix": ".png"}], ["a.txt", "b.png"], ["a.txt"]),
        ([{"equals-ignore-case": "EC2"}], ["s3", "ec2"], ["s3"]),
        ([{"wildcard": "*min*"}], ["x", "admins"], ["x"]),
        ([{"numeric": [">", 0, "<", 10]}], [100, 5, 200], [100, 200]),
        ([{"anything-but": "banned"}], ["banned", "ok"], ["banned"]),
        ([{"anything-but": [1, 2]}], [1, 3], [1, 2, 2]),
        ([{"anything-but": {"prefix": "tmp"}}], ["tmp1", "data"], ["tmp1", "tmp2"]),
        ([{"exists": True}], ["a"], []),
        ([{"exists": False}], [], ["a"]),
        ([True, None], [False, None], [False]),
    ],
)
def test_scalar_pattern_matches_an_array_field_when_some_element_matches(leaf, hit, miss):
    """Every matcher on an array field: some element matches (anything-but: some element
    is not excluded, as event-ruler matches leaf by leaf; exists: the array has a leaf)."""
    assert matches({"f": leaf}, {"f": hit, "g": 0})
    assert not matches({"f": leaf}, {"f": miss, "g": 0})
    # a scalar is a one-element array
    for v in hit:
        assert matches({"f": leaf}, {"f": v}) == matches({"f": leaf}, {"f": [v]})


def test_exists_needs_a_leaf_empty_array_is_absent():
    """event-ruler sees no leaf in ``[]``: ``exists: true`` fails there and ``exists:
    false`` holds, as for a missing field (correctness-cases "primarray: empty prim
    array")."""
    (has,) = parse_pattern({"f": [{"exists": True}]})
    (hasnt,) = parse_pattern({"f": [{"exists": False}]})
    assert has == parse_text("f any exists") and hasnt == parse_text("f any not exists")
    for event, leaf in [
        ({"f": []}, False),
        ({"g": 1}, False),
        ({"f": [None]}, True),
        ({"f": 0}, True),
    ]:
        r = Record.of(event)
        assert has.matches(r) is leaf and hasnt.matches(r) is not leaf


def test_native_text_semantics_unchanged_scalar_clause_never_matches_a_list():
    """The text form keeps its meaning: ``tags = "admin"`` tests the value, ``tags any =
    "admin"`` its leaves."""
    r = Record.of({"tags": ["user", "admin"]})
    assert not parse_text('tags = "admin"').matches(r)
    assert parse_text('tags any = "admin"').matches(r)
    assert parse_text('tags contains "admin"').matches(r)
    assert parse_text("tags exists").matches(Record.of({"tags": []}))
    assert not parse_text("tags any exists").matches(Record.of({"tags": []}))


def test_any_text_and_wire_forms_round_trip_exactly():
    for text in [
        'tags any = "admin"',
        'n any in (0, 5] and s any not prefix "tmp"',
        "x any not exists",
        "x any exists",
        'x any equals-ignore-case "ß"',
        "x any not in {1, 2.5}",
        "any any != 0",
    ]:
        f = parse_text(text)
        assert parse_text(format_filter(f)) == f
        assert wire.load_filter(wire.dump_filter(f)) == f
    assert wire.dump_filter(parse_text('t any prefix "a"')) == {
        "t": {"op": "any", "of": {"op": "prefix", "value": "a"}}
    }


@pytest.mark.parametrize(
    "text, where",
    [
        ("x any any = 1", "not to another 'any'"),
        ("x any subset {1}", "not 'subset'"),
        ("x any contains 1", "not 'contains'"),
    ],
)
def test_any_applies_to_one_scalar_predicate(text, where):
    with pytest.raises(FilterSyntaxError, match=where) as info:
        parse_text(text)
    assert info.value.position == 6


@pytest.mark.parametrize(
    "obj, path",
    [
        ({"t": {"op": "any", "of": {"op": "any", "of": {"op": "exists"}}}}, "$.t.of.op"),
        ({"t": {"op": "any", "of": {"op": "superset", "values": []}}}, "$.t.of.op"),
        ({"t": {"op": "any", "of": [1]}}, "$.t.of"),
        ({"t": {"op": "any"}}, "$.t"),
    ],
)
def test_malformed_any_wire_forms_name_the_path(obj, path):
    with pytest.raises(FilterSyntaxError) as info:
        wire.load_filter(obj)
    assert info.value.path == path


def A(c: Constraint) -> Constraint:
    return Constraint(Op.ANY, c)


def test_any_relations_named_cases():
    """Covering, overlap and merging of any-element constraints (exact; brute-forced in
    test_relations_bruteforce.py)."""
    eq, pre = A(Constraint(Op.EQ, "admin")), A(Constraint(Op.PREFIX, "ad"))
    assert relations.covers(pre, eq) and not relations.covers(eq, pre)
    # lists containing "admin" are a part of "some element is admin"
    assert relations.covers(eq, Constraint(Op.CONTAINS, ("str", "admin")))
    assert not relations.covers(Constraint(Op.CONTAINS, ("str", "admin")), eq)  # "admin"
    # exists does not cover "no leaf" (which admits the absent attribute)
    assert not relations.covers(Constraint(Op.EXISTS), A(Constraint(Op.NOT_EXISTS)))
    assert relations.covers(Constraint(Op.EXISTS), A(Constraint(Op.EXISTS)))
    assert not relations.covers(A(Constraint(Op.EXISTS)), Constraint(Op.EXISTS))  # []
    assert relations.merge([A(Constraint(Op.EQ, 1)), A(Constraint(Op.EQ, 2))]) == A(
        Constraint(Op.IN_SET, frozenset({("num", 1), ("num", 2)}))
    )
    # both on one attribute: a list holding both elements
    assert relations.conjoin(A(Constraint(Op.EQ, 1)), A(Constraint(Op.EQ, 2))) == Constraint(
        Op.SUPERSET, frozenset({("num", 1), ("num", 2)})
    )
    assert relations.witness(A(Constraint(Op.NOT_EXISTS))) is ABSENT


def test_index_answers_array_patterns_as_the_linear_scan():
    """The counting index (with "any" constraints in attribute indexes of their own)
    answers as the linear scan on array events."""
    model = RecordsModel()
    patterns = [
        ARRAYS_PAGE_PATTERN,
        {"tags": [{"prefix": "ad"}]},
        {"tags": ["admin"]},
        {"tags": [{"anything-but": "banned"}]},
        {"tags": [{"exists": False}]},
        {"tags": [{"exists": True}], "n": [{"numeric": [">", 3]}]},
        {"n": [{"numeric": ["<", 0]}, 7]},
        {"tags": [{"equals-ignore-case": "X"}]},
    ]
    idx = model.new_index()
    held = []
    for i, p in enumerate(patterns):
        for j, f in enumerate(model.parse_filters(p)):
            idx.add(f, (i, j))
            held.append((f, (i, j)))
    events = [
        ARRAYS_PAGE_EVENT,
        {"tags": ["user", "admin"], "n": [1, 5]},
        {"tags": ["banned"], "n": 7},
        {"tags": [], "n": [-1]},
        {"n": []},
        {"tags": "x", "n": 4.5},
        {"tags": ["banned", "ok", "admin"]},
    ]
    for e in events:
        r = Record.of(e)
        assert idx.match(r) == {k for f, k in held if f.matches(r)}, e


def test_covered_by_finds_held_filters_without_the_attribute_any_not_exists_admits():
    """``a any not exists`` admits the absent attribute, so a held filter's witness may
    lack ``a`` and still lie in it: the index must not search the witnesses by ``a``."""
    model = RecordsModel()
    idx = model.new_index()
    g = parse_text("a not exists and b = 1")
    idx.add(g, "g")
    idx.add(parse_text("a = 1 and b = 1"), "other")
    f = parse_text("a any not exists and b = 1")
    assert model.covers(f, g)
    assert idx.covered_by(f) == {"g"}
