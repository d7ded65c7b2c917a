"""Reading only what patterns use (docs/records-syntax.md §5): ``RecordsIndex.parse_wire`` gives every held
filter the answer of ``parse_event`` + ``match``, and refuses exactly the texts
``parse_event`` refuses (differentially, with hypothesis, on texts of every JSON shape,
hostile ones and mutated ones, and on event-ruler's fixtures in ../shared/data/eventruler)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pubsift.core.errors import EventError
from pubsift.models.records import RecordsModel, selection, testing
from pubsift.models.records.selection import FieldSelection

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "eventruler"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"event-ruler fixtures absent ({DATA})")
compiled = pytest.mark.skipif(
    selection._scan is None, reason="the compiled scanner is not built (the full parse answers)"
)


def _answer(index, parse, text):
    """("error",) or (match, match_pairs) of the event ``parse`` makes of ``text``."""
    try:
        e = parse(text)
    except EventError:
        return ("error",)
    return (index.match(e), sorted((repr(f), k) for f, k in index.match_pairs(e)))


def _matched(index, text):
    """("error",) or ``index.match_wire(text)`` (read and walked in one compiled call
    where it can: ``_walk.match_text``)."""
    try:
        return index.match_wire(text)
    except EventError:
        return ("error",)


def _same(index, text) -> None:
    model = index.model
    full = _answer(index, model.parse_event, text)
    assert _answer(index, index.parse_wire, text) == full, text
    assert _matched(index, text) == (full if full == ("error",) else full[0]), text
    if isinstance(text, str):
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            return
        assert _answer(index, index.parse_wire, data) == full, text
        assert _matched(index, data) == (full if full == ("error",) else full[0]), text


# -- texts ------------------------------------------------------------------------------

_KEYS = st.sampled_from(["a", "b", "c", "d", "e", "f", "z", "d.e", "", "é", "\u2028"])
_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, -1, 2, 2.0, 0.5, -0.0, 1e308, 10**20, -(10**30)]),
    st.text(alphabet='ab"\\\n\x01é😀\ud800', max_size=3),
)
_JSON = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=12,
)


def _text(obj, ensure_ascii: bool, indent) -> str | None:
    try:
        return json.dumps(obj, ensure_ascii=ensure_ascii, indent=indent)
    except (ValueError, UnicodeEncodeError):
        return None


@st.composite
def texts(draw) -> str:
    """JSON texts: records events of every shape, any JSON, and texts around them that
    are wrong in one place (a byte changed, cut, a key doubled, a number too large)."""
    kind = draw(st.sampled_from(["event", "json", "json", "mutated", "special"]))
    if kind == "event":
        obj = draw(testing.events(testing.SCHEMA)).raw
    else:
        obj = draw(st.dictionaries(_KEYS, _JSON, max_size=4) if kind != "special" else _JSON)
    text = _text(obj, draw(st.booleans()), draw(st.sampled_from([None, 1])))
    if text is None:
        text = "{}"
    if kind == "special":
        text = draw(
            st.sampled_from(
                [
                    text,
                    '{"a": 1, "a": 2}',
                    '{"d": [{"e": 1, "e": 2}]}',
                    '{"z": {"q": 1, "q": 2}}',
                    '{"a": 1e400}',
                    '{"z": [1e400]}',
                    '{"z": -1E+999}',
                    '{"z": 1e-400, "a": 1}',
                    '{"z": ' + "1" * 400 + 'e-50, "a": 1}',  # 1e349: not finite
                    '{"z": ' + "1" * 250 + 'e-50, "a": 1}',
                    '{"a": NaN}',
                    '{"z": Infinity}',
                    '{"z": ' + "9" * 4300 + ', "a": 1}',
                    '{"z": ' + "9" * 4301 + "}",
                    '{"z": "\\ud800"}',
                    '{"z": "\\udc00\\ud800"}',
                    '{"a": "\\ud83d\\ude00"}',
                    '{"d": {"e": 1}, "d.e": 2}',
                    '{"d": [{"e": 1}], "d.f": 2}',
                    '{"z.q": 1, "a": 2}',
                    '{"z": ' + "[" * 127 + "]" * 127 + ', "a": 1}',
                    '{"z": ' + "[" * 128 + "]" * 128 + "}",
                    '{"z": {"": 1}}',
                    '{"c": 1.5}',
                    '{"c": [1, 2.5]}',
                    '{"z": 1.5, "c": 2}',
                    "\ufeff{}",
                    '{"a": 1} ',
                    ' {"a": 1}x',
                    '{"a": 01}',
                    '{"a": .5}',
                    '{"a": [1,]}',
                    '{"a": tru}',
                    '{"z": "\x1f"}',
                    '{"z": "\\x"}',
                    "[]",
                    '"x"',
                    "",
                ]
            )
        )
    if kind == "mutated" and text:
        i = draw(st.integers(0, len(text) - 1))
        op = draw(st.sampled_from(["cut", "change", "insert"]))
        c = draw(st.sampled_from(list('{}[]",:.0e-\\ x\ud800')))
        text = (
            text[:i]
            if op == "cut"
            else text[:i] + c + text[i + 1 :]
            if op == "change"
            else text[:i] + c + text[i:]
        )
    return text


@compiled
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(testing.filters(testing.SCHEMA), min_size=1, max_size=5), st.lists(texts(), max_size=6)
)
def test_parse_wire_answers_as_parse_event(fs, batch):
    model = RecordsModel(testing.SCHEMA)
    index = model.new_index()
    for i, f in enumerate(fs):
        index.add(f, i)
    for text in batch:
        _same(index, text)


@compiled
@settings(max_examples=200, deadline=None)
@given(st.lists(texts(), max_size=6))
def test_parse_wire_of_an_index_reading_z_and_nothing(batch):
    """Indexes naming a free attribute, and none at all (every member skipped)."""
    model = RecordsModel(testing.SCHEMA)
    empty, z = model.new_index(), model.new_index()
    z.add(model.parse_filter("z exists"), "z")
    z.add(model.parse_filter("z.q = 1"), "zq")
    for text in batch:
        _same(empty, text)
        _same(z, text)


@needs_data
def test_event_ruler_fixtures_selective():
    model = RecordsModel()
    index = model.new_index()
    texts_ = [(DATA / f"src-test-data/arrayEvent{j}.json").read_text() for j in (1, 2, 3, 4)]
    texts_.append((DATA / "src-test-data/bigEvent.json").read_text())
    for i in (1, 2, 3, 4):
        for f in model.parse_filters((DATA / f"src-test-data/arrayRule{i}.json").read_text()):
            index.add(f, f"rule{i}")
    for f in model.parse_filters((DATA / "src-test-data/bigEventRule.json").read_text()):
        index.add(f, "big")
    cases = json.loads((DATA / "src-test-resources/correctness-cases.json").read_text())
    for c in cases:
        for f in model.parse_filters(c["rule"]):
            index.add(f, c["name"])
        texts_.append(json.dumps(c["event"]))
    hits = 0
    for text in texts_:
        _same(index, text)
        hits += len(index.match_wire(text))
        assert index.match_wire(text) == index.match(model.parse_event(text))
    assert hits > 40  # the fixtures match (event1: rule1, rule2; bigEvent: big; ...)
    big = index.parse_wire(texts_[4])
    # read only what the rules use: less than half of the 256 KB event is built
    assert len(json.dumps(big.raw)) < len(json.dumps(model.parse_event(texts_[4]).raw)) // 2


def test_fields_follow_the_held_names():
    model = RecordsModel(testing.SCHEMA)
    index = model.new_index()
    assert index.fields() == FieldSelection(["c"])  # the schema's integer attribute
    f = model.parse_filter("d.e.x = 1 and a = 2")
    index.add(f, 1)
    sel = index.fields()
    assert sel.names == {"a", "c", "d.e.x"} and sel.prefixes == {"d", "d.e"}
    index.add(model.parse_filter("a = 3"), 2)
    assert index.fields() is sel  # no new name: the same selection
    index.remove(f, 1)
    assert index.fields().names == {"a", "c"}
    assert index.parse_wire('{"a": 3, "d": {"e": {"x": 1}}}') == model.parse_event('{"a": 3}')


@compiled
def test_hostile_texts_are_event_errors_not_crashes():
    index = RecordsModel().new_index()
    index.add(RecordsModel().parse_filter("a = 1"), 1)
    for text in [
        "[" * 100_000,
        '{"z": ' + "[" * 100_000,
        '{"z": ' + "{" * 50_000,
        '{"z": "' + "\\" * 100_001,
        '{"z": ' + "1" * 100_000 + "}",
        b'{"z": "\xff"}',
        b'{"z": "\xed\xa0\x80"}',
        b'{"z": "\xc0\xaf"}',
        b'{"z": "\xf4\x90\x80\x80"}',
        b'{"a": "\xe2\x82"}',
        "{" + ", ".join(f'"k{i}": 0' for i in range(1000)) + ', "k7": 1}',
    ]:
        with pytest.raises(EventError) as info:
            index.parse_wire(text)
        assert info.value.where
        with pytest.raises(EventError):
            RecordsModel().parse_event(text)
    for other in (5, memoryview(b'{"a": 1}'), bytearray(b'{"a": 1}')):  # as parse_event
        try:
            want = ("event", RecordsModel().parse_event(other))
        except EventError as exc:
            want = ("error", exc.message)
        try:
            got = ("event", index.parse_wire(other))  # type: ignore[arg-type]
        except EventError as exc:
            got = ("error", exc.message)
        assert got == want


_SKIPPED = [
    '{"a": 1, "z": {"type": "Polygon", "coordinates": [{"x": -122.42, "y": 37.7, "z": 0}]}}',
    '{"z": [[1, 2.5, -0.25], {"q": "r\\"s\\\\t\\/u\\n", "é": "ü€😀"}, true, false, null]}',
    '{"z": {"k1": 0, "k2": 0, "k3": 0, "k4": 0, "k5": 0, "k6": 0, "k7": 0, "k8": 0,'
    ' "k9": 0, "k10": 0, "k11": 0, "k12": 0, "k13": 0, "k14": 0, "k15": 0, "k16": 0}, "a": 2}',
    '{"z": {"q": [], "r": {}, "s": [{}], "t": "\\u00e9"}, "a": 1}',
]


@compiled
@settings(max_examples=800, deadline=None)
@given(
    st.sampled_from(_SKIPPED),
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255), st.booleans()), max_size=3),
)
def test_skipped_values_are_checked_byte_for_byte(text, edits):
    """Members no filter reads are skipped by the fast skip (``_scan.pxi``) or the checked
    one: any byte changed or inserted in them is refused exactly where ``parse_event``
    refuses it, with the same answer where it is accepted."""
    model = RecordsModel(testing.SCHEMA)
    index = model.new_index()
    index.add(model.parse_filter("a = 1"), "a")
    data = bytearray(text.encode("utf-8"))
    for at, byte, insert in edits:
        at %= len(data) + 1
        if insert or at == len(data):
            data[at:at] = bytes([byte])
        else:
            data[at] = byte
    data = bytes(data)
    try:
        full: tuple = (index.match(model.parse_event(data)),)
    except EventError:
        full = ("error",)
    try:
        got: tuple = (index.match(index.parse_wire(data)),)
    except EventError:
        got = ("error",)
    assert got == full, data
    assert _matched(index, data) == (full if full == ("error",) else full[0]), data


@compiled
def test_a_deep_value_left_to_the_checked_skip_is_read_once():
    """A deep skipped value whose last member the fast skip leaves to the checked one (an
    exponent, a \\u escape, a dotted key): the answer and refusals are parse_event's."""
    model = RecordsModel(testing.SCHEMA)
    index = model.new_index()
    index.add(model.parse_filter("a = 1"), "a")
    for tail in (b"1e5", b'"\\u00e9"', b'{"x.y": 1}', b"1e400", b'"\\ud800"'):
        text = b'{"q":' + b"[" * 120 + b",".join([b"12345"] * 50) + b"," + tail
        text += b"]" * 120 + b',"a":1}'
        _same(index, text.decode())
