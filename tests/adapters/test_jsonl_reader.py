"""The JSON-lines reader (docs/adapters.md §2, §3, §4): JSON's own types, line-number positions,
each bad line quarantined with its reason, bounded memory, on hand-made files and the
aws/event-ruler fixtures (oracle: the json module)."""

from __future__ import annotations

import io
import json
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pubsift.adapters import Event, Input, Quarantined, ReadLimits, Source, read, read_input
from pubsift.adapters.readers.jsonlines import JSONL_READER
from pubsift.adapters.readers.limits import DEFAULT_READ_LIMITS
from pubsift.models.records import RecordsModel

from tests.adapters.test_csv_reader import mutated

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
MODEL = RecordsModel()


def read_bytes(
    data: bytes, name: str = "t.jsonl", limits: ReadLimits = DEFAULT_READ_LIMITS
) -> list[Event | Quarantined]:
    src = Source(name, format="jsonl")
    return list(read_input(Input(name, src, lambda: io.BytesIO(data)), limits, {"records": MODEL}))


def outline(out):
    return [(o.position, o.event.raw if isinstance(o, Event) else o.reason) for o in out]


def test_json_types_are_kept_and_positions_are_line_numbers():
    data = (
        b'\xef\xbb\xbf{"a": 1, "b": 1.5, "c": "x", "d": true, "e": null, "f": [1, "y"],'
        b' "g": {"h": 2}}\r\n'
        b"\n   \t\n"
        b'{"n": 12345678901234567890}\n'
        b'{"last": "no line end"}'
    )
    out = read_bytes(data)
    assert outline(out) == [
        (1, {"a": 1, "b": 1.5, "c": "x", "d": True, "e": None, "f": [1, "y"], "g": {"h": 2}}),
        (4, {"n": 12345678901234567890}),
        (5, {"last": "no line end"}),
    ]
    assert out[0].event["g.h"] == 2 and type(out[0].event["a"]) is int


@pytest.mark.parametrize(
    "line, reason, words",
    [
        (b'{"a": 1', "json-syntax", "column"),
        (b'{"a": 1, "a": 2}', "json-syntax", 'duplicate key "a"'),
        (b'{"a": NaN}', "json-syntax", "NaN is not JSON"),
        (b'{"a": Infinity}', "json-syntax", "Infinity"),
        (b'{"a": ' + b"9" * 5000 + b"}", "json-syntax", "digits"),
        (b"[" * 100_000, "json-syntax", "nested too deeply"),
        (b"{'a': 1}", "json-syntax", "column 2"),
        (b"[1, 2]", "not-an-object", "an array"),
        (b'"x"', "not-an-object", "a string"),
        (b"3", "not-an-object", "a number"),
        (b"null", "not-an-object", "null"),
        (b"true", "not-an-object", "a boolean"),
        (b'{"a": "\xff"}', "encoding", "byte 0xff at column 8"),
        (b'{"a": "\xed\xa0\x80"}', "encoding", "0xed"),  # an encoded surrogate
        (b'{"a": [{"b": 1}], "a.b": 2}', "invalid-event", "given twice"),
        (b'{"a": "\\ud800"}', "invalid-event", "surrogate"),
        (b'{"a": 1e999}', "json-syntax", "finite"),  # strict JSON: no infinity
    ],
)
def test_a_bad_line_is_quarantined_alone(line, reason, words):
    out = read_bytes(b'{"ok": 1}\n' + line + b'\n{"ok": 2}\n')
    assert [(o.position, getattr(o, "reason", "event")) for o in out] == [
        (1, "event"),
        (2, reason),
        (3, "event"),
    ]
    assert words in out[1].message, out[1].message
    assert out[1].source == "t.jsonl" and out[1].model == "records" and out[1].excerpt


def test_the_size_limit_counts_bytes_before_the_line_end():
    limits = ReadLimits(max_record_bytes=12)
    at = b'{"a": "xxx"}'  # 12 bytes
    assert len(at) == 12
    out = read_bytes(
        at + b"\r\n" + b'{"a": "xxxx"}\n' + at + b"\n" + b'{"a":"' + b"y" * 100 + b'"}\n' + at,
        limits=limits,
    )
    assert outline(out) == [
        (1, {"a": "xxx"}),
        (2, "too-large"),
        (3, {"a": "xxx"}),
        (4, "too-large"),
        (5, {"a": "xxx"}),
    ]
    assert "longer than 12 bytes" in out[1].message


def test_a_huge_line_is_skipped_without_holding_it():
    data = b'{"a": 1}\n{"b": "' + b"y" * (8 << 20) + b'"}\n{"c": 3}\n'
    tracemalloc.start()
    try:
        out = read_bytes(data, limits=ReadLimits(max_record_bytes=1000))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert outline(out) == [(1, {"a": 1}), (2, "too-large"), (3, {"c": 3})]
    assert peak < (1 << 20), f"peak {peak} bytes while skipping an 8 MiB line"


def test_sniffing_json_lines_and_the_json_extension(tmp_path):
    assert JSONL_READER.sniff(b'\n{"a": 1}\n{"a": 2')
    assert not JSONL_READER.sniff(b'{\n  "a": 1\n}\n')  # pretty-printed: not claimed
    assert not JSONL_READER.sniff(b"[1, 2]\n")
    assert not JSONL_READER.sniff(b'{"a": 1')  # no complete line
    lines = tmp_path / "events.json"
    lines.write_text('{"a": 1}\n{"a": 2}\n')
    assert [o.event.raw for o in read(str(lines))] == [{"a": 1}, {"a": 2}]
    pretty = tmp_path / "pretty.json"
    pretty.write_text('{\n  "a": 1\n}\n')
    (unknown,) = read(str(pretty))
    assert (unknown.reason, unknown.position) == ("unknown-format", 0)


def test_ndjson_extension(tmp_path):
    p = tmp_path / "x.ndjson"
    p.write_bytes(b'{"a": 1}\n')
    assert [o.event.raw for o in read(str(p))] == [{"a": 1}]


# -- hostile bytes ------------------------------------------------------------------------
GOOD = (
    b'{"date": "2017-02-08", "open": 45.26, "volume": 4330414, "Name": "AAL"}\n'
    b'{"tags": ["a", "b"], "nested": {"x": 1, "y": [true, null]}}\n'
    b"\n"
    b'{"s": "caf\xc3\xa9 \\u00e9 \\"q\\""}\r\n'
    b'{"n": -1.5e3}\n'
)


def _nonblank_lines(data: bytes) -> int:
    """Lines with content, as counted independently: split on newlines."""
    lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return sum(1 for ln in lines if ln.strip(b" \t\r\n\x0b\x0c"))


@settings(max_examples=300, deadline=None)
@given(mutated(GOOD))
def test_mutated_json_lines_never_escape_and_counts_add_up(data):
    out = read_bytes(data)
    assert all(isinstance(o, (Event, Quarantined)) for o in out)
    assert all(
        o.reason not in ("reader-error", "unreadable") for o in out if isinstance(o, Quarantined)
    ), out
    positions = [o.position for o in out]
    assert positions == sorted(set(positions)) and all(p >= 1 for p in positions)
    assert len(out) == _nonblank_lines(data)  # read = events + quarantined
    for o in out:  # the json module agrees
        if isinstance(o, Event):
            assert isinstance(
                json.loads(data.removeprefix(b"\xef\xbb\xbf").split(b"\n")[o.position - 1]), dict
            )


@settings(max_examples=100, deadline=None)
@given(mutated(GOOD), st.integers(4, 80))
def test_mutated_json_lines_with_a_small_line_limit(data, limit):
    out = read_bytes(data, limits=ReadLimits(max_record_bytes=limit))
    assert len(out) == _nonblank_lines(data)
    assert all(o.reason != "reader-error" for o in out if isinstance(o, Quarantined))
    lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    for o in out:
        body = lines[o.position - 1].removesuffix(b"\r")
        assert (getattr(o, "reason", "") == "too-large") == (len(body) > limit)


# -- real data: aws/event-ruler fixtures as JSON lines --------------------------------------
def test_event_ruler_events_as_json_lines(tmp_path):
    """The events of event-ruler's correctness cases and its event fixtures, one per line
    with blank lines between: each is the model's own answer on the document. The records
    model takes any JSON object as an event (arrays of objects included), so every one of
    them is an event; a refusal would carry the model's message as ``invalid-event``."""
    root = DATA / "eventruler"
    if not root.exists():
        pytest.skip(f"real data not available: {root} is absent")
    cases = json.loads((root / "src-test-resources" / "correctness-cases.json").read_text())
    docs = [c["event"] for c in cases] + [
        json.loads(p.read_text()) for p in sorted((root / "src-test-data").glob("*Event*.json"))
    ]
    assert len(docs) >= 50
    p = tmp_path / "events.jsonl"
    p.write_text("".join(json.dumps(d) + "\n\n" for d in docs))
    out = list(read(str(p), models={"records": MODEL}))
    assert [o.position for o in out] == list(range(1, 2 * len(docs), 2))
    refused = 0
    for o, d in zip(out, docs):
        try:
            want = MODEL.parse_event(d)
        except Exception as exc:
            refused += 1
            assert o.reason == "invalid-event" and str(exc) in o.message
        else:
            assert o.event == want
    assert refused == 0
    # the fixtures themselves are pretty-printed JSON documents, not JSON lines
    (unknown,) = read(str(root / "src-test-data" / "bigEvent.json"))
    assert unknown.reason == "unknown-format"


# -- encodings (review finding 13) -----------------------------------------------------------
OBJECTS = [{"name": "José", "city": "Zürich"}, {"name": "Łukasz", "n": 2}]
LINES_TEXT = "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in OBJECTS)


def read_encoded(data: bytes, **settings_) -> list[Event | Quarantined]:
    src = Source("t.jsonl", format="jsonl", **settings_)
    return list(
        read_input(
            Input("t.jsonl", src, lambda: io.BytesIO(data)), ReadLimits(), {"records": MODEL}
        )
    )


@pytest.mark.parametrize("codec", ["utf-8-sig", "utf-16", "utf-32"])
def test_a_byte_order_mark_selects_the_encoding(codec):
    out = read_encoded(LINES_TEXT.encode(codec))
    assert outline(out) == [(1, OBJECTS[0]), (2, OBJECTS[1])]


@pytest.mark.parametrize("codec", ["latin-1", "utf-16-le", "utf-16-be", "cp1252"])
def test_the_encoding_setting_reads_other_encodings(codec):
    objects = [{"name": "José", "city": "Zürich"}, {"n": 2}]
    text = "".join(json.dumps(o, ensure_ascii=False) + "\r\n" for o in objects)
    out = read_encoded(text.encode(codec), encoding=codec)
    assert outline(out) == [(1, objects[0]), (2, objects[1])]


def test_utf16_without_a_bom_or_setting_is_encoding_suggesting_the_setting():
    out = read_encoded(LINES_TEXT.encode("utf-16-le"))
    assert out and {o.reason for o in out} == {"encoding"}
    assert all("NUL byte" in o.message and "encoding" in o.message.split("?")[1] for o in out)


def test_bad_bytes_in_the_declared_encoding_and_oversized_lines_lose_their_line_only():
    text = '{"a": 1}\n{"b": 2}\n'.encode("utf-16-le")
    data = (
        text
        + b"\x00\xd8"
        + '\n{"c": 3}\n'.encode("utf-16-le")
        + ('{"d": "' + "x" * 50 + '"}\n{"e": 5}\n').encode("utf-16-le")
    )
    src = Source("t.jsonl", format="jsonl", encoding="utf-16-le")
    out = list(
        read_input(
            Input("t.jsonl", src, lambda: io.BytesIO(data)),
            ReadLimits(max_record_bytes=40),
            {"records": MODEL},
        )
    )
    assert outline(out) == [
        (1, {"a": 1}),
        (2, {"b": 2}),
        (3, "encoding"),
        (4, {"c": 3}),
        (5, "too-large"),
        (6, {"e": 5}),
    ]
    assert out[2].message == "not utf-16-le: byte 0x00 at character 1"


def test_a_nul_byte_is_binary_data():
    out = read_encoded(b'{"a": "x\x00"}\n{"a": 1}\n')
    assert outline(out) == [(1, "encoding"), (2, {"a": 1})]
    assert out[0].message == "binary data: a NUL byte at character 9"


def test_a_huge_integer_gets_our_message_not_pythons_advice():
    """Review finding 14: Python's own text advises sys.set_int_max_str_digits()."""
    bad, ok = read_bytes(b'{"a": ' + b"9" * 5000 + b'}\n{"a": 1}\n')
    assert bad.reason == "json-syntax" and ok.event.raw == {"a": 1}
    assert bad.message == "invalid JSON: an integer of more than 4,300 digits"


def test_a_bom_in_a_file_and_a_compressed_file(tmp_path):
    import gzip

    data = LINES_TEXT.encode("utf-32")
    (tmp_path / "plain.jsonl").write_bytes(data)
    (tmp_path / "packed.jsonl.gz").write_bytes(gzip.compress(data))
    (tmp_path / "utf8.jsonl").write_bytes(LINES_TEXT.encode("utf-8-sig"))
    for name in ("plain.jsonl", "packed.jsonl.gz", "utf8.jsonl"):
        assert outline(read(str(tmp_path / name))) == [(1, OBJECTS[0]), (2, OBJECTS[1])]


class _Dribble(io.RawIOBase):
    """A stream without peek returning one byte per read (as a raw stream may)."""

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self._data = data

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if not self._data:
            return 0
        buffer[0] = self._data[0]
        self._data = self._data[1:]
        return 1


@pytest.mark.parametrize("codec", ["utf-8-sig", "utf-32", "utf-8"])
def test_the_bom_is_found_on_a_stream_giving_one_byte_at_a_time(codec):
    data = LINES_TEXT.encode(codec)
    src = Source("t.jsonl", format="jsonl")
    out = list(
        read_input(Input("t.jsonl", src, lambda: _Dribble(data)), ReadLimits(), {"records": MODEL})
    )
    assert outline(out) == [(1, OBJECTS[0]), (2, OBJECTS[1])]
