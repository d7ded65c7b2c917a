"""The frame format (docs/protocol.md): length prefix, JSON body, hello, limits."""

from __future__ import annotations

import asyncio
import json
import struct

import pytest
from pubsift.adapters.broker.config import ConfigError
from pubsift.adapters.broker.frames import (
    PROTOCOL_VERSION,
    FrameError,
    check_hello,
    decode,
    encode,
    hello,
    parse_url,
    read_frame,
)


def _read(data: bytes, max_bytes: int = 1000) -> dict | None:
    async def go() -> dict | None:
        r = asyncio.StreamReader()
        r.feed_data(data)
        r.feed_eof()
        return await read_frame(r, max_bytes)

    return asyncio.run(go())


def test_encode_is_a_big_endian_length_and_utf8_json():
    frame = encode({"kind": "pub", "event": {"name": "Zoë"}})
    body = '{"kind":"pub","event":{"name":"Zoë"}}'.encode()
    assert frame == struct.pack(">I", len(body)) + body
    assert _read(frame) == {"kind": "pub", "event": {"name": "Zoë"}}


def test_clean_end_of_stream_between_frames_is_none():
    assert _read(b"") is None


@pytest.mark.parametrize(
    ("data", "reason", "words"),
    [
        (b"\x00\x00", "truncated", "header"),
        (struct.pack(">I", 10) + b'{"ki', "truncated", "4 of 10"),
        (struct.pack(">I", 5000), "too-large", "5000 bytes exceeds the limit of 1000"),
        (struct.pack(">I", 2) + b"\xff\xfe", "bad-frame", "not UTF-8"),
        (struct.pack(">I", 3) + b"{x}", "bad-frame", "not JSON"),
        (struct.pack(">I", 2) + b"[]", "bad-frame", "not an object"),
        (struct.pack(">I", 2) + b"{}", "bad-frame", "'kind'"),
        (struct.pack(">I", 12) + b'{"kind":NaN}', "bad-frame", "NaN"),
    ],
)
def test_bad_frames_say_what_is_wrong(data, reason, words):
    with pytest.raises(FrameError) as info:
        _read(data)
    assert info.value.reason == reason and words in str(info.value)


def test_an_oversize_frame_is_refused_from_its_prefix_alone():
    """The body is never awaited: the prefix decides (no 4 GiB allocation)."""

    async def go() -> None:
        r = asyncio.StreamReader()
        r.feed_data(struct.pack(">I", 0xFFFFFFFF))  # no body, no EOF: reading it would hang
        with pytest.raises(FrameError, match="too-large"):
            await asyncio.wait_for(read_frame(r, 1 << 20), 2)

    asyncio.run(go())


def test_hello_round_trip_and_refusals():
    h = hello("client", "c1")
    assert h == {"kind": "hello", "protocol": PROTOCOL_VERSION, "role": "client", "id": "c1"}
    assert check_hello(decode(encode(h)[4:])) == ("client", "c1")
    with pytest.raises(FrameError, match="unsupported-version"):
        check_hello({**h, "protocol": 99})
    with pytest.raises(FrameError, match=r"bad-hello.*expected broker"):
        check_hello(h, "broker")
    with pytest.raises(FrameError, match=r"bad-hello.*hello frame first"):
        check_hello({"kind": "pub"})
    with pytest.raises(FrameError, match=r"bad-hello.*id"):
        check_hello({**h, "id": ""})
    with pytest.raises(FrameError, match="cycle: no"):
        check_hello({"kind": "error", "reason": "cycle", "message": "no"})


def test_urls():
    assert parse_url("pubsift://127.0.0.1:7401") == ("127.0.0.1", 7401)
    assert parse_url("pubsift://example.org") == ("example.org", 7400)
    assert parse_url("pubsift://[::1]:9") == ("::1", 9)
    for bad in ("http://x:1", "pubsift://x:99999", "pubsift://:5"):
        with pytest.raises(ConfigError):
            parse_url(bad)


def test_frames_carry_core_wire_forms_with_hashable_publication_ids():
    """pub_id travels as a JSON list and comes back as a tuple (hashable, for the oracle)."""
    from pubsift.core import load_model
    from pubsift.core.messages import Forward, from_wire, to_wire

    m = load_model("records")
    msg = Forward("records", m.parse_event({"x": 1}), ("p1", 7))
    obj = json.loads(encode(to_wire(msg, {"records": m}))[4:])
    assert obj["pub_id"] == ["p1", 7]
    back = from_wire(obj, {"records": m})
    assert back == msg and hash(back.pub_id) == hash(("p1", 7))


def test_json_nested_too_deeply_is_a_bad_frame_not_a_crash():
    from pubsift.adapters.broker.frames import decode

    deep = b'{"kind":"pub","event":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(FrameError) as info:
        decode(deep)
    assert info.value.reason == "bad-frame" and "nested too deeply" in str(info.value)
