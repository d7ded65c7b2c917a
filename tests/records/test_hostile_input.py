"""Hostile and extreme input (docs/records-syntax.md §4): every hook of the records model answers or raises a
``PubsiftError`` naming what and where — repeated attributes, huge numbers, deep nesting,
wrong JSON types, lone surrogates — and a failing index ``add`` changes nothing."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pubsift.core import strict_json
from pubsift.core.errors import EventError, FilterSyntaxError
from pubsift.models.constraints import limits
from pubsift.models.constraints.constraints import Constraint, Op
from pubsift.models.records import limits as record_limits
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.model import RecordsModel
from pubsift.models.records.typesystem import Schema

M = RecordsModel()
BIG = int("9" * 400)  # beyond every float
HUGE = "9" * (limits.MAX_INT_DIGITS + 1)  # beyond the digit limit

# Hang ceilings: the '< N' checks on process_time below are not performance claims (those
# live in bench/); each guards against a blow-up the limits removed (seconds to minutes of
# CPU before) with a ceiling far above today's CPU time, so a loaded machine never trips it.


def nested(depth: int, leaf: object) -> dict:
    d = leaf
    for _ in range(depth):
        d = {"a": d}
    return d


# -- 1. repeated attribute: a dotted name and a nested object -----------------------------


@pytest.mark.parametrize(
    "event",
    [
        {"a": {"b": 2}, "a.b": [1]},
        {"a.b": [1], "a": {"b": 2}},
        {"a": {"b": 2}, "a.b": 1},
        {"a.b": 1, "a": {"b": [2]}},
        {"a": {"b.c": 1}, "a.b": {"c": 2}},
    ],
)
def test_repeated_attribute_in_an_event_is_refused_in_either_order(event):
    with pytest.raises(EventError) as exc:
        M.parse_event(event)
    assert "is given twice" in str(exc.value) and (
        "'a.b'" in str(exc.value) or "'a.b.c'" in str(exc.value)
    )
    with pytest.raises(EventError, match="is given twice"):
        M.parse_event(json.dumps(event))
    with pytest.raises(EventError, match="is given twice"):
        M.load_event(event)


def test_repeated_attribute_in_a_pattern_gives_the_same_error_in_either_order():
    one = {"a": {"b": [2]}, "a.b": [1]}
    other = {"a.b": [1], "a": {"b": [2]}}
    errors = []
    for p in (one, other, json.dumps(one), json.dumps(other)):
        with pytest.raises(FilterSyntaxError) as exc:
            M.parse_filters(p)
        errors.append((exc.value.message, exc.value.path))
    assert len(set(errors)) == 1
    message, path = errors[0]
    assert 'field "a.b" is given twice' in message and '$["a.b"]' in message
    assert path == "$.a.b"


def test_repeated_attribute_through_or_is_still_a_conjunction():
    # $or branches and the enclosing object may constrain one field (documented): both
    # patterns must hold, as one attribute filter when one expresses them
    fs = M.parse_filters(
        {"a": [{"numeric": [">", 1]}], "$or": [{"a": [{"numeric": [">", 3]}]}, {"b": ["x"]}]}
    )
    assert [M.format_filter(f) for f in fs] == ["a any > 3", 'a any > 1 and b any = "x"']
    fs = M.parse_filters(
        {"a": [{"prefix": "ab"}], "$or": [{"a": [{"prefix": "abc"}]}, {"b": [{"exists": False}]}]}
    )
    assert [M.format_filter(f) for f in fs] == [
        'a any prefix "abc"',
        'a any prefix "ab" and b any not exists',
    ]
    assert M.format_filter(M.parse_filter("a any > 1 and a < 5")) == "a in (1, 5)"


def test_repeated_attribute_through_or_holds_two_element_tests_together():
    # "some element > 1 and some element < 5" (EventBridge array semantics) is not one
    # element test: both are held by "all", never silently narrowed; the text form
    # refuses the conjunction and says it with "all"
    pattern = {"a": [{"numeric": [">", 1]}], "$or": [{"a": [{"numeric": ["<", 5]}]}, {"b": ["x"]}]}
    for p in (pattern, json.dumps(pattern)):
        first, _ = M.parse_filters(p)
        assert first == M.parse_filter("a all (any > 1, any < 5)")
        assert first.matches(M.parse_event({"a": [9, 0]}))
        assert not first.matches(M.parse_event({"a": [9, 7]}))
    with pytest.raises(FilterSyntaxError, match="cannot be combined") as exc:
        M.parse_filter("a any > 1 and a any < 5")
    assert exc.value.position == 14


def test_event_json_text_with_a_duplicate_key_is_refused():
    with pytest.raises(EventError, match="duplicate key 'a'"):
        M.parse_event('{"a": 1, "a": 2}')


# -- 2. numbers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        f"x > {BIG}",
        f"x = {BIG}",
        f"x in [1, {BIG}]",
        f"x in [-{BIG}, 0.5)",
        f"x != {BIG}",
        f"x < -{BIG}",
        f"x in {{1, {BIG}}}",
    ],
)
def test_a_400_digit_literal_is_indexed_and_matched_exactly(text):
    f = M.parse_filter(text)
    idx = M.new_index()
    idx.add(f, "k")
    for v in (0, 0.5, 1, BIG, BIG - 1, -BIG, 1e308, -1e308):
        e = M.parse_event({"x": v})
        assert (idx.match(e) == {"k"}) == M.matches(f, e) == f.matches(e), (text, v)
    for q in ("covering", "covered_by", "identical", "overlapping", "merge_candidates"):
        assert getattr(idx, q)(f) == {"k"}, q
    assert M.parse_filter(M.format_filter(f)) == f
    assert M.load_filter(json.loads(json.dumps(M.dump_filter(f)))) == f


def test_large_integers_compare_exactly_with_floats():
    f = M.parse_filter(f"x > {2**53}")
    assert not M.matches(f, M.parse_event({"x": float(2**53)}))
    assert M.matches(f, M.parse_event({"x": 2**53 + 1}))
    g = M.parse_filter(f"x < {BIG}")
    assert M.matches(g, M.parse_event({"x": 1.7e308}))
    assert M.covers(M.parse_filter("x < inf"), g) and not M.covers(g, M.parse_filter("x > 0"))


@pytest.mark.parametrize(
    "spec",
    [
        f"x > {HUGE}",
        f"x in {{{HUGE}}}",
        f'{{"x": [{HUGE}]}}',
        f'{{"x": [{{"numeric": [">", -{HUGE}]}}]}}',
    ],
)
def test_integers_over_the_digit_limit_in_filters_are_refused(spec):
    with pytest.raises(FilterSyntaxError, match=f"at most {limits.MAX_INT_DIGITS} digits"):
        M.parse_filter(spec)


def test_integers_over_the_digit_limit_in_python_patterns_and_wire_forms_are_refused():
    n = 10**limits.MAX_INT_DIGITS
    with pytest.raises(FilterSyntaxError, match="digits") as exc:
        M.parse_filter({"x": [n]})
    assert exc.value.path == "$.x[0]"
    with pytest.raises(FilterSyntaxError, match="digits") as exc:
        M.load_filter({"x": {"op": "=", "value": -n}})
    assert exc.value.path == "$.x.value"
    assert M.load_filter({"x": {"op": "=", "value": n - 1}}) == M.parse_filter(f"x = {n - 1}")


def test_integers_over_the_digit_limit_in_events_are_refused():
    with pytest.raises(EventError, match="digits"):
        M.parse_event(f'{{"x": {HUGE}}}')
    with pytest.raises(EventError, match=r"attribute 'x'.*digits"):
        M.parse_event({"x": [1, -(10**limits.MAX_INT_DIGITS)]})
    with pytest.raises(EventError, match="digits"):
        M.load_event({"x": 10**limits.MAX_INT_DIGITS})


@pytest.mark.parametrize(
    "spec",
    [
        "x > 1e309",
        "x in [1, -1e400)",
        '{"x": [1e309]}',
        '{"x": [{"numeric": ["<", -1e999]}]}',
        '{"x": [NaN]}',
        '{"x": [Infinity]}',
    ],
)
def test_non_finite_numbers_in_filters_are_refused(spec):
    with pytest.raises(FilterSyntaxError, match=r"too large for a 64-bit float|not JSON"):
        M.parse_filter(spec)


@pytest.mark.parametrize(
    "raw",
    [
        '{"x": 1e309}',
        '{"x": -Infinity}',
        '{"x": [NaN]}',
        {"x": float("nan")},
        {"x": [float("inf")]},
    ],
)
def test_non_finite_numbers_in_events_are_refused(raw):
    with pytest.raises(EventError, match=r"finite|too large"):
        M.parse_event(raw)


# -- 3. depth -----------------------------------------------------------------------------


def test_an_event_nested_500_levels_is_refused_at_parse_time():
    for raw in (nested(500, 1), '{"a": ' * 500 + "1" + "}" * 500, "[" * 5000 + "]" * 5000):
        with pytest.raises(EventError, match=f"deeper than {record_limits.MAX_DEPTH} levels"):
            M.parse_event(raw)
    with pytest.raises(EventError, match="deeper than"):
        M.load_event(nested(500, 1))


def test_events_nested_up_to_the_limit_are_accepted():
    e = M.parse_event(json.dumps(nested(record_limits.MAX_DEPTH - 1, [1])))
    name = ".".join(["a"] * (record_limits.MAX_DEPTH - 1))
    assert e[name] == (1,)
    assert M.load_event(M.dump_event(e)) == e


def _answer(read, arg) -> str:
    try:
        read(arg)
    except EventError:
        return "refused"
    return "ok"


@pytest.mark.parametrize("leaf", [[1], [], {"z": 1}, [[1]], [{"z": 1}], 1])
@pytest.mark.parametrize("objects", range(record_limits.MAX_DEPTH - 3, record_limits.MAX_DEPTH + 2))
def test_every_reading_counts_nesting_by_one_rule(objects, leaf):
    """``parse_event`` of the text, ``parse_event``/``load_event`` of the object and the
    selective scan agree at the limit, by strict_json's rule (every object and array a
    level, empty or not); 128 objects and an array were accepted from the object."""
    obj = nested(objects, leaf)
    text = json.dumps(obj)
    rule = "refused" if strict_json.too_deep(obj, record_limits.MAX_DEPTH) else "ok"
    index = M.new_index()
    index.add(M.parse_filter({"a": [{"exists": True}]}), "k")
    answers = {
        "parse_event(text)": _answer(M.parse_event, text),
        "parse_event(obj)": _answer(M.parse_event, obj),
        "load_event(obj)": _answer(M.load_event, obj),
        "parse_wire(text)": _answer(index.parse_wire, text.encode()),
    }
    assert answers == dict.fromkeys(answers, rule)


def test_an_event_that_contains_itself_is_refused():
    d: dict = {"x": 1}
    d["self"] = d
    with pytest.raises(EventError, match="deeper than"):
        M.parse_event(d)


def deep_or(n: int) -> dict:
    d: dict = {"x": [1]}
    for _ in range(n):
        d = {"$or": [d, {"y": [2]}]}
    return d


def test_an_eventbridge_or_nested_2000_levels_is_refused_at_parse_time():
    with pytest.raises(FilterSyntaxError, match="deeper than") as exc:
        M.parse_filters(deep_or(2000))
    assert exc.value.path.startswith("$.$or[0].$or[0]")
    with pytest.raises(FilterSyntaxError, match="deeper than") as exc:
        M.parse_filters('{"$or": [' * 2000 + '{"x": [1]}' + ', {"y": [2]}]}' * 2000)
    assert exc.value.position is not None


def test_deep_json_in_patterns_and_wire_forms_is_refused():
    with pytest.raises(FilterSyntaxError, match="deeper than"):
        M.parse_filter('{"a":' * 3000 + "[1]" + "}" * 3000)
    with pytest.raises(FilterSyntaxError, match="deeper than"):
        M.load_filter({"x": {"op": "=", "value": nested(3000, 1)}})
    cyclic: dict = {"op": "exists"}
    cyclic["op2"] = cyclic
    with pytest.raises(FilterSyntaxError, match="deeper than"):
        M.load_filter({"x": cyclic})


def test_brackets_inside_strings_do_not_count_as_nesting():
    text = json.dumps({"x": ["[" * 1000 + "{" * 1000]})
    assert M.parse_filter(text) == M.parse_filter({"x": ["[" * 1000 + "{" * 1000]})
    assert M.parse_event(text)["x"] == ("[" * 1000 + "{" * 1000,)


# -- 4. wrong JSON types ------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern, path",
    [
        ({"a": [{"numeric": [[">"], 1]}]}, "$.a[0].numeric[0]"),
        ({"a": [{"numeric": [">", 1, {"<": 1}, 2]}]}, "$.a[0].numeric[2]"),
        ({"a": [{1: "x"}]}, "$.a[0]"),
        ({"a": [{"anything-but": {1: "x"}}]}, "$.a[0].anything-but"),
        ({"a": [{"anything-but": [[1]]}]}, "$.a[0].anything-but[0]"),
        ({"a": [{"prefix": ["x"]}]}, "$.a[0].prefix"),
        ({"a": [{"exists": "true"}]}, "$.a[0].exists"),
        ({"a": [{"numeric": {">": 1}}]}, "$.a[0].numeric"),
        ({"a": [[1]]}, "$.a[0]"),
        ({"a": "x"}, "$.a"),
        ({"$or": {"a": [1]}}, "$.$or"),
        ({"$or": [[1], {"a": [1]}]}, "$.$or[0]"),
        ({(1, 2): [1]}, "$"),
        ({"a": [{"wildcard": None}]}, "$.a[0].wildcard"),
        ({"a": [object()]}, "$.a[0]"),
    ],
)
def test_wrong_json_types_in_patterns_name_the_path(pattern, path):
    with pytest.raises(FilterSyntaxError) as exc:
        M.parse_filters(pattern)
    assert exc.value.path == path, exc.value


@pytest.mark.parametrize(
    "obj, path",
    [
        ({"x": {"op": [">"]}}, "$.x.op"),
        ({"x": {"op": {"=": 1}}}, "$.x.op"),
        ({"x": {"op": "=", "value": [1]}}, "$.x.value"),
        ({"x": {"op": "in", "values": [[1]]}}, "$.x.values[0]"),
        ({"x": {"op": "in", "values": {"a": 1}}}, "$.x.values"),
        ({"x": {"op": "instanceof", "type": "T", "members": [["T"]]}}, "$.x.members[0]"),
        (
            {"x": {"op": "in-range", "lo": [1], "hi": 2, "lo_closed": True, "hi_closed": True}},
            "$.x.lo",
        ),
        ({"x": {"op": "prefix", "value": 1}}, "$.x.value"),
        ({"x": [1]}, "$.x"),
        ({1: {"op": "exists"}}, "$"),
    ],
)
def test_wrong_json_types_in_wire_filters_name_the_path(obj, path):
    with pytest.raises(FilterSyntaxError) as exc:
        M.load_filter(obj)
    assert exc.value.path == path, exc.value


@pytest.mark.parametrize(
    "raw",
    [
        [1],
        "[1]",
        5,
        "5",
        None,
        {1: 2},
        {"a": {2: 3}},
        {"a": [{"b": 1}], "a.b": 2},  # one attribute in two places (arrays of objects are events)
        {"a": [[{"": 1}]]},
        {"a": object()},
        {"a": {1, 2}},
        b"\xff",
        "{",
        {"": 1},
    ],
)
def test_wrong_json_types_in_events_are_event_errors(raw):
    with pytest.raises(EventError):
        M.parse_event(raw)


# -- 6. lone surrogates and round trips ---------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    [
        'x = "\\ud800"',
        'x = "\\udc00\\ud800"',
        'x = "\ud800"',
        '"\ud800" exists',
        'x prefix "a\\udfff"',
        '{"x": ["\\ud800"]}',
        {"x": ["\ud800"]},
        {"x": [{"prefix": "\udc00"}]},
        {"\ud800": [1]},
        {"a": {"b\ud800": [1]}},
    ],
)
def test_lone_surrogates_in_filters_are_refused(spec):
    with pytest.raises(FilterSyntaxError, match="surrogate") as exc:
        M.parse_filter(spec)
    str(exc.value).encode("utf-8")  # the message itself is printable


def test_two_lone_surrogates_do_not_become_one_character():
    # they used to be accepted and to come back from the text form as U+10000
    with pytest.raises(FilterSyntaxError, match="surrogate"):
        M.parse_filter({"x": ["\ud800\udc00"]})
    f = M.parse_filter('x = "\\ud800\\udc00"')  # an escaped pair is one character
    assert f.get("x").operand == "\U00010000"
    assert M.parse_filter(M.format_filter(f)) == f


@pytest.mark.parametrize(
    "obj",
    [
        {"x": {"op": "=", "value": "\ud800"}},
        {"\udc00": {"op": "exists"}},
        {"x": {"op": "in", "values": ["a", "\ud800"]}},
    ],
)
def test_lone_surrogates_in_wire_filters_are_refused(obj):
    with pytest.raises(FilterSyntaxError, match="surrogate"):
        M.load_filter(obj)


@pytest.mark.parametrize(
    "raw",
    ['{"x": "\\ud800"}', {"x": "\ud800"}, {"x": ["a", "\udc00"]}, {"\ud800": 1}, '{"\\udc00": 1}'],
)
def test_lone_surrogates_in_events_are_refused(raw):
    with pytest.raises(EventError, match="surrogate"):
        M.parse_event(raw)
    if not isinstance(raw, str):
        with pytest.raises(EventError, match="surrogate"):
            M.load_event(raw)


@pytest.mark.parametrize(
    "text",
    [
        'x = "\\u0000"',
        '"\\u0000" = 1',
        "x = -0.0",
        "x in {-0.0, 1}",
        '"a..b" = 1',
        '".a" = "b."',
        'x = "\\ud83d\\ude00"',
        'x prefix "\U0010ffff"',
        'x in ["\U0010ffff", inf)',
        'x not prefix "\U0010ffff"',
        f"x = {-BIG}",
        "x > 1.7976931348623157e+308",
    ],
)
def test_odd_values_round_trip_through_text_and_wire(text):
    f = M.parse_filter(text)
    assert M.parse_filter(M.format_filter(f)) == f
    assert M.load_filter(json.loads(json.dumps(M.dump_filter(f)))) == f


# -- index: a failing add changes nothing ------------------------------------------------


def _state(idx) -> tuple:
    probes = [M.parse_event(e) for e in ({"x": 1}, {"x": 5, "y": "a"}, {"y": "b"}, {"z": 0})]
    return (
        len(idx),
        sorted(map(repr, idx)),
        [sorted(idx.match(e)) for e in probes],
        sorted(idx.keys()),
    )


def test_a_failing_index_add_leaves_the_index_exactly_as_it_was(monkeypatch):
    from pubsift.models.records import index as index_module

    idx = M.new_index()
    for i, text in enumerate(["x = 1", 'x > 3 and y = "a"', 'y prefix "b"']):
        idx.add(M.parse_filter(text), i)
    before = _state(idx)
    bad = M.parse_filter("x in [2, 9] and z exists")

    def boom(*args, **kwargs):
        raise RuntimeError("injected failure")

    # every step that can fail runs before the first change
    for name in ("witness", "span_key", "compile_test"):
        with monkeypatch.context() as mp:
            mp.setattr(index_module, name, boom)
            with pytest.raises(RuntimeError):
                idx.add(bad, "bad")
        assert _state(idx) == before, name
    with pytest.raises(FilterSyntaxError, match="not a records filter: str"):
        idx.add("x = 1", "bad")
    assert _state(idx) == before
    idx.add(bad, "bad")  # and the index still works
    assert idx.match(M.parse_event({"x": 5, "z": 1})) == {"bad"}
    idx.remove(bad, "bad")
    assert _state(idx) == before


def test_remove_of_an_absent_pair_is_a_key_error_and_changes_nothing():
    idx = M.new_index()
    idx.add(M.parse_filter("x = 1"), 1)
    before = _state(idx)
    with pytest.raises(KeyError):
        idx.remove(M.parse_filter("x = 1"), 2)
    with pytest.raises(KeyError):
        idx.remove(RecordFilter.of({"x": Constraint(Op.EQ, 2)}), 1)
    assert _state(idx) == before


# -- string automata: bounded work, sound answers ----------------------------------------


def test_long_affix_constraints_relate_in_bounded_time_with_sound_answers():
    s = "ab" * 1000  # a product of these automata has ~4 million states
    suffix = M.parse_filter(f'x suffix "{s}"')
    caseless = M.parse_filter(f'x equals-ignore-case "{s}"')
    substring = M.parse_filter(f'x substring "{s}"')
    t = time.process_time()
    for f, g in ((suffix, caseless), (caseless, suffix), (substring, caseless)):
        assert M.covers(f, g) in (False, True)
        assert M.overlaps(f, g) is True  # they do overlap (s itself)
        assert not M.identical(f, g)
        m = M.merge([f, g])
        assert m is None or (M.covers(m, f) and M.covers(m, g))
        h = M.merge([f, g], perfect=False)
        assert h is not None and M.matches(h, M.parse_event({"x": s}))
    assert time.process_time() - t < 60  # was minutes per pair
    idx = M.new_index()
    for i, f in enumerate((suffix, caseless, substring)):
        idx.add(f, i)
    assert idx.match(M.parse_event({"x": "Ab" + s})) == {0, 2}
    assert idx.covering(suffix) >= {0} and idx.overlapping(caseless) >= {1}


def test_long_any_suffix_is_indexed_and_related_in_bounded_time():
    # the witness of "any suffix" came from the automaton's samples, which built
    # cubically many characters (index add: 90 s for 3,000 characters)
    s = "x" * 3000
    f, g = M.parse_filter(f'a any suffix "{s}"'), M.parse_filter('a any = "y"')
    t = time.process_time()
    idx = M.new_index()
    idx.add(f, 1)
    idx.add(g, 2)
    assert idx.covering(f) == {1} and idx.identical(f) == {1}
    assert idx.merge_candidates(f) >= {1}
    assert idx.match(M.parse_event({"a": ["y", "q" + s]})) == {1, 2}
    assert not M.covers(f, g) and not M.identical(f, g) and M.overlaps(f, g)
    assert M.merge([f, g]) is None
    assert time.process_time() - t < 10


def test_dfa_samples_of_a_long_suffix_take_linear_time():
    from pubsift.models.constraints.automata import dfa_kmp

    t = time.process_time()
    samples = list(dfa_kmp("ab" * 10000, absorbing=False).samples())
    assert samples[0] == "ab" * 10000 and all(w.endswith("ab" * 10000) for w in samples)
    assert len(set(samples)) == len(samples)
    assert time.process_time() - t < 10


def test_any_constraints_past_the_automaton_bound_get_the_sound_answers(monkeypatch):
    from pubsift.models.constraints import automata
    from pubsift.models.constraints.limits import TooComplex
    from pubsift.models.constraints.valuesets import value_set

    s = "ba" * 200  # each automaton fits a bound of 3,000 transitions, their product not
    suffix = M.parse_filter(f'x any suffix "{s}"')
    caseless = M.parse_filter(f'x any equals-ignore-case "{s}"')
    monkeypatch.setattr(automata, "MAX_CELLS", 3000)
    (_, a), (_, b) = suffix.constraints[0], caseless.constraints[0]
    with pytest.raises(TooComplex):
        value_set(a).issubset(value_set(b))
    for f, g in ((suffix, caseless), (caseless, suffix)):
        assert M.covers(f, g) is False and M.identical(f, g) is False
        assert M.overlaps(f, g) is True
        assert M.merge([f, g]) is None
        assert M.format_filter(M.merge([f, g], perfect=False)) == "x exists"
    idx = M.new_index()
    idx.add(suffix, 0)
    idx.add(caseless, 1)
    assert idx.covering(suffix) == {0} and idx.identical(caseless) == {1}
    assert idx.overlapping(suffix) == {0, 1} and idx.merge_candidates(suffix) == {0}
    assert idx.match(M.parse_event({"x": ["q", s]})) == {0, 1}


def test_an_any_clause_whose_automaton_is_too_large_is_refused_at_parse_time():
    from pubsift.models.constraints import automata

    s = "".join(chr(0x4E00 + i) for i in range(400))  # 401 states x 801 classes
    for spec in (f'x any suffix "{s}"', {"x": [{"suffix": s}]}, f'x any equals-ignore-case "{s}"'):
        with pytest.raises(FilterSyntaxError, match="too complex") as exc:
            M.parse_filter(spec)
        assert str(automata.MAX_CELLS) in str(exc.value) and "x any " in str(exc.value)
    with pytest.raises(FilterSyntaxError, match="too complex") as exc:
        M.load_filter({"x": {"op": "any", "of": {"op": "substring", "value": s}}})
    assert exc.value.path == "$.x"


def test_a_string_constraint_whose_automaton_is_too_large_is_refused():
    import pubsift.models.constraints.automata as automata

    s = "".join(chr(0x4E00 + i) for i in range(400))  # 401 states x 801 classes
    for spec in (
        f'x suffix "{s}"',
        {"x": [{"suffix": s}]},
    ):
        with pytest.raises(FilterSyntaxError, match="too complex") as exc:
            M.parse_filter(spec)
        assert str(automata.MAX_CELLS) in str(exc.value)
    with pytest.raises(FilterSyntaxError, match="too complex") as exc:
        M.load_filter({"x": {"op": "substring", "value": s}})
    assert exc.value.path == "$.x"
    assert M.parse_filter(f'x prefix "{s}"')  # lexical: no automaton


def test_hull_of_long_common_substrings_is_found_quickly():
    from pubsift.models.constraints import relations as rel

    a, b = "x" * 3000 + "core" + "y" * 3000, "z" * 3000 + "core" + "w" * 3000
    t = time.process_time()
    assert rel._longest_common_substrings([a, b]) == ["core"]
    assert time.process_time() - t < 10


def test_loaded_wire_filters_are_canonical_and_round_trip_through_text():
    f = M.load_filter(
        {"x": {"op": "equals-ignore-case", "value": "\\"}, "y": {"op": "in", "values": [1]}}
    )
    assert f == M.parse_filter('x = "\\\\" and y = 1')
    assert M.parse_filter(M.format_filter(f)) == f
    with pytest.raises(FilterSyntaxError, match="can never hold") as exc:
        M.load_filter({"x": {"op": "not-prefix", "value": ""}})
    assert exc.value.path == "$.x"
    ints = RecordsModel(Schema.of(integer_attrs=["n"]))
    with pytest.raises(FilterSyntaxError, match="can never hold"):
        ints.load_filter(
            {"n": {"op": "in-range", "lo": 1, "hi": 2, "lo_closed": False, "hi_closed": False}}
        )


def test_a_failing_bulk_add_leaves_the_index_exactly_as_it_was():
    idx = M.new_index()
    held = M.parse_filter("x = 1")
    idx.add(held, 0)
    before = _state(idx)
    pairs = [
        (M.parse_filter("x > 3"), 1),
        (held, 0),
        (M.parse_filter("y exists"), 2),
        ("not a filter", 3),
        (M.parse_filter("z = 1"), 4),
    ]
    with pytest.raises(FilterSyntaxError, match="not a records filter: str"):
        idx.bulk_add(pairs)
    assert _state(idx) == before and (held, 0) in idx
    idx.bulk_add(pairs[:3])
    assert len(idx) == 3


def test_a_large_string_exclusion_relates_to_an_automaton_in_linear_time():
    # the lexical spans of 5,000 excluded strings became an automaton one span at a time
    many = M.parse_filter(" and ".join(f'x != "s{i}"' for i in range(5000)))
    suffix = M.parse_filter('x suffix "a"')
    t = time.process_time()
    assert M.covers(many, suffix) and not M.covers(suffix, many)
    assert M.overlaps(many, suffix)
    assert time.process_time() - t < 30  # quadratic: about a minute


def test_a_periodic_suffix_builds_its_automaton_in_linear_time():
    # following KMP failure links per transition was quadratic on "abab…" (20,000
    # characters: 4 s to accept, 40,000: 21 s to refuse)
    t = time.process_time()
    assert M.parse_filter(f'x suffix "{"ab" * 10000}"')
    with pytest.raises(FilterSyntaxError, match="too complex"):
        M.parse_filter(f'x any substring "{"ab" * 20000}"')
    assert time.process_time() - t < 3


# -- review of the merged work: merging huge numbers, large sets and many filters -----------

_NUMS = [
    0,
    1,
    -1,
    1.5,
    -1.5,
    2.5,
    1e308,
    -1e308,
    2**1024,
    -(2**1024),
    BIG,
    -BIG,
    BIG - 1,
    2**53,
    float(2**53),
]
_NUM_CLAUSES = ["=", "!=", "<", "<=", ">", ">="]


def _num_clause(op: str, v: object, any_: bool) -> RecordFilter:
    return M.parse_filter(f"x {'any ' if any_ else ''}{op} {v!r}")


@pytest.mark.parametrize(
    "a, b",
    [
        (f"x > {BIG}", "x = 1.5"),
        (f"x < -{BIG}", "x = 1.5"),
        (f"x any > {BIG}", "x any = 1.5"),
        (f"x = {2**1024}", "x in [-1e308, 1e308]"),
        (f"x != {BIG}", "x = -1e308"),
        (f"x in {{1.5, {BIG}}}", f"x = -{BIG}"),
    ],
)
def test_imperfect_merge_of_huge_integers_and_floats_is_a_sound_merger(a, b):
    f, g = M.parse_filter(a), M.parse_filter(b)
    m = M.merge([f, g], perfect=False)
    assert m is not None and M.covers(m, f) and M.covers(m, g)
    for v in _NUMS:
        for e in (M.parse_event({"x": v}), M.parse_event({"x": [v, "s"]})):
            if M.matches(f, e) or M.matches(g, e):
                assert M.matches(m, e), (a, b, v)


@given(
    st.lists(
        st.tuples(st.sampled_from(_NUM_CLAUSES), st.sampled_from(_NUMS)), min_size=2, max_size=4
    ),
    st.booleans(),
)
@settings(max_examples=60, deadline=None)
def test_merges_of_huge_integers_and_floats_cover_every_value_matched(clauses, any_):
    fs = [_num_clause(op, v, any_) for op, v in clauses]
    probes = _NUMS + [v + d for v in _NUMS for d in (-1, 1)]
    for perfect in (True, False):
        m = M.merge(fs, perfect=perfect)
        if m is None:
            assert perfect
            continue
        for v in probes:
            e = M.parse_event({"x": [v] if any_ else v})
            some = any(M.matches(f, e) for f in fs)
            assert not some or M.matches(m, e), (clauses, perfect, v)
            assert not perfect or M.matches(m, e) == some, (clauses, v)


@pytest.mark.parametrize("quote", [str, lambda i: f'"{i}"'])
def test_imperfect_merge_of_large_exclusion_sets_takes_linear_time(quote):
    n = 8000  # 4 s (quadratic in the gaps) before
    f = M.parse_filter("x not in {" + ", ".join(quote(i) for i in range(n)) + "}")
    g = M.parse_filter("x not in {" + ", ".join(quote(i) for i in range(n // 2, n + n // 2)) + "}")
    t = time.process_time()
    m = M.merge([f, g], perfect=False)
    assert time.process_time() - t < 5
    assert M.covers(m, f) and M.covers(m, g)
    # x ∉ S ∪ x ∉ T is x ∉ S ∩ T (4,000 values: within representation.LIMIT)
    both = M.parse_filter("x not in {" + ", ".join(quote(i) for i in range(n // 2, n)) + "}")
    assert M.merge([f, g]) == both


def test_merging_thousands_of_filters_takes_linear_time_and_stays_sound():
    fs = [M.parse_filter(f"x = {i} and y > {i}") for i in range(2000)]  # 25 s before
    t = time.process_time()
    assert M.merge(fs) is None
    m = M.merge(fs, perfect=False)
    assert time.process_time() - t < 8
    for i in (0, 777, 1999):
        assert M.matches(m, M.parse_event({"x": i, "y": i + 0.5}))


def test_thousands_of_filters_differing_in_one_attribute_merge_perfectly_and_quickly():
    fs = [M.parse_filter(f'x in [{i}, {i + 1}] and y = "a"') for i in range(5000)]
    t = time.process_time()
    m = M.merge(list(reversed(fs)))
    assert time.process_time() - t < 8
    assert m == M.parse_filter('x in [0, 5000] and y = "a"')
    eq = [M.parse_filter(f'x = "{i}"') for i in range(3000)]
    assert M.merge(eq) == M.parse_filter("x in {" + ", ".join(f'"{i}"' for i in range(3000)) + "}")


# -- objects that are not records filters or events ------------------------------------------

_F = M.parse_filter("x = 1")
_E = M.parse_event({"x": 1})
_NOT_FILTERS = [None, 5, "x = 1", {"x": [1]}, [], object(), b"x", _E]
_NOT_EVENTS = [None, 5, '{"x": 1}', [], object(), b"{}", _F]


@pytest.mark.parametrize("junk", _NOT_FILTERS, ids=lambda j: type(j).__name__)
def test_hooks_given_a_non_filter_raise_filter_syntax_error_naming_its_type(junk):
    calls = [
        lambda: M.matches(junk, _E),
        lambda: M.covers(_F, junk),
        lambda: M.covers(junk, _F),
        lambda: M.identical(junk, _F),
        lambda: M.overlaps(_F, junk),
        lambda: M.merge([_F, junk]),
        lambda: M.merge([junk, _F], perfect=False),
        lambda: M.format_filter(junk),
        lambda: M.dump_filter(junk),
    ]
    idx = M.new_index()
    idx.add(_F, "k")
    calls += [lambda: idx.add(junk, "j"), lambda: idx.bulk_add([(_F, "b"), (junk, "j")])]
    calls += [
        lambda q=q: getattr(idx, q)(junk)
        for q in ("covering", "covered_by", "identical", "overlapping", "merge_candidates")
    ]
    for call in calls:
        with pytest.raises(FilterSyntaxError, match=f"not a records filter: {type(junk).__name__}"):
            call()
    assert list(idx) == [(_F, "k")]
    with pytest.raises(KeyError):
        idx.remove(junk, "k")


@pytest.mark.parametrize("junk", [None, 5, "abc", {"x": 1}, _F], ids=lambda j: type(j).__name__)
def test_merge_of_a_non_sequence_raises_filter_syntax_error(junk):
    with pytest.raises(FilterSyntaxError, match="sequence of records filters"):
        M.merge(junk)


@pytest.mark.parametrize("junk", _NOT_EVENTS, ids=lambda j: type(j).__name__)
def test_hooks_given_a_non_event_raise_event_error_naming_its_type(junk):
    idx = M.new_index()
    idx.add(_F, "k")
    for call in (
        lambda: M.matches(_F, junk),
        lambda: idx.match(junk),
        lambda: idx.match_pairs(junk),
        lambda: M.dump_event(junk),
    ):
        with pytest.raises(EventError, match=f"not a records event: {type(junk).__name__}"):
            call()


def test_mappings_stay_accepted_as_events_by_matches_and_the_index():
    idx = M.new_index()
    idx.add(_F, "k")
    assert M.matches(_F, {"x": 1}) and idx.match({"x": 1}) == {"k"}
    with pytest.raises(EventError, match="not a records event: dict"):
        M.dump_event({"x": 1})


# -- string length: literals and names in filters at most limits.MAX_STRING characters ------

_LONG = "x" * (limits.MAX_STRING + 1)


@pytest.mark.parametrize(
    "spec",
    [
        f'x = "{_LONG}"',
        f'x prefix "{_LONG}"',
        f"{_LONG} = 1",
        f'"{_LONG}" exists',
        {"a": [_LONG]},
        {"a": [{"prefix": _LONG}]},
        {"a": [{"anything-but": [_LONG]}]},
        {"a": [{"wildcard": _LONG + "*"}]},
        {_LONG: [1]},
    ],
)
def test_a_string_longer_than_the_limit_in_a_filter_is_refused(spec):
    with pytest.raises(FilterSyntaxError, match=f"at most {limits.MAX_STRING} characters"):
        M.parse_filter(spec)


@pytest.mark.parametrize("obj", [{"x": {"op": "=", "value": _LONG}}, {_LONG: {"op": "exists"}}])
def test_a_string_longer_than_the_limit_in_a_wire_filter_is_refused(obj):
    with pytest.raises(FilterSyntaxError, match=f"at most {limits.MAX_STRING} characters"):
        M.load_filter(obj)


def test_literals_at_the_string_limit_relate_in_bounded_time():
    f = M.parse_filter({"a": ["x" * limits.MAX_STRING]})  # 1 MB: 8-12 s before
    g = M.parse_filter({"a": [{"equals-ignore-case": "ǅ" * 2000}]})
    h = M.parse_filter('a suffix "' + "ab" * 1000 + '"')
    t = time.process_time()
    assert M.overlaps(f, g) and not M.covers(g, f) and M.overlaps(f, h)
    m = M.merge([f, h], perfect=False)
    assert M.covers(m, f) and M.covers(m, h)
    assert time.process_time() - t < 20
    assert M.parse_filter(M.format_filter(f)) == f


def test_long_strings_in_events_are_accepted_and_matched_in_linear_time():
    big = "ab" * 2_000_000
    e = M.parse_event(json.dumps({"a": big, "b": [big, "c"]}))
    fs = [
        M.parse_filter(s)
        for s in (
            'a suffix "ab"',
            'a prefix "abab"',
            'b any = "c"',
            'a substring "ba"',
            'a equals-ignore-case "AB"',
        )
    ]
    idx = M.new_index()
    t = time.process_time()
    for i, f in enumerate(fs):
        idx.add(f, i)
    assert [M.matches(f, e) for f in fs] == [True, True, True, True, False]
    assert idx.match(e) == {0, 1, 2, 3}
    assert time.process_time() - t < 8


def test_a_perfect_merger_of_more_filters_than_one_group_is_found_group_by_group():
    from pubsift.models.records.merging import MERGE_GROUP

    fs = [
        M.parse_filter(f"x in [{i}, {i + 1}] and y in [{j}, {j + 1}]")
        for i in range(8)
        for j in range(8)
    ]
    assert len(fs) > MERGE_GROUP
    assert M.merge(fs) == M.parse_filter("x in [0, 8] and y in [0, 8]")
    assert M.merge(fs + [M.parse_filter("x = 20 and y = 20")]) is None
    m = M.merge(fs + [M.parse_filter("x = 20 and y = 20")], perfect=False)
    assert m == M.parse_filter("x in [0, 20] and y in [0, 20]")
