"""The frame format of pubsift brokers (protocol version 1; docs/protocol.md is the
reference a client in another language is written from).

A frame is a 4-byte big-endian unsigned length N followed by N bytes of UTF-8 JSON: one
object with a string member ``kind``. The payloads are the JSON wire forms of
:func:`pubsift.core.messages.to_wire` (sub, unsub, adv, unadv, pub, notify, forward, admin)
plus the session kinds of this module: ``hello`` (first frame each way), ``error`` (the
reason before a side closes or refuses one message), ``reach`` (the broker ids a neighbour
reaches, for cycle refusal), ``resync`` and ``renew`` (renew leases now, after a link came
up), ``ping`` and ``pong`` (liveness: a ping is answered with a pong). The length is checked against the limit before the body is read, so an oversize frame
costs nothing but its header.
"""

from __future__ import annotations

import asyncio
import json
import os
import struct
from typing import Any

import orjson
from pubsift.adapters.broker.address import DEFAULT_PORT, Address, ConfigError
from pubsift.core import strict_json
from pubsift.core.errors import PubsiftError
from pubsift.core.strict_json import JsonError

PROTOCOL_VERSION = 1
HEADER = struct.Struct(">I")
#: the URL scheme of a broker: ``pubsift://host:port``
SCHEME = "pubsift"
#: the URL scheme of a broker's TLS port: ``pubsifts://host:port`` (docs/protocol.md §11)
TLS_SCHEME = "pubsifts"

#: the error reasons a peer may send (docs/protocol.md lists what each means)
REASONS = {
    "bad-frame": "the frame is not UTF-8 JSON of an object with a string 'kind'",
    "too-large": "the length prefix exceeds the receiver's max_frame_bytes",
    "truncated": "the stream ended inside a frame",
    "bad-hello": "the first frame is not a valid hello",
    "unauthorized": "the client's hello has no token (or certificate), or one the broker "
    "does not know",
    "tls-required": "a plaintext connection to a broker port that speaks TLS",
    "forbidden": "the client's identity may not subscribe, advertise or publish that, or "
    "use that client or publisher id",
    "limit": "the client (or its identity) holds as many subscriptions, advertisements or "
    "connections as it may",
    "unsupported-version": "the peer speaks another protocol version",
    "unknown-kind": "a kind this receiver does not accept from this peer",
    "invalid-message": "a message whose fields, filter or event are invalid",
    "refused": "a message the broker refuses (e.g. advertisements are off)",
    "cycle": "the link would close a cycle in the broker tree",
    "duplicate-link": "the two brokers are already linked",
    "slow-consumer": "the peer did not read its frames fast enough",
    "timeout": "the peer sent nothing, not even a pong, for too long",
    "shutdown": "the broker is shutting down",
}


class FrameError(PubsiftError, ValueError):
    """A frame that cannot be read; ``reason`` is one of :data:`REASONS`."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message
        super().__init__(f"{reason}: {message}")


def encode(obj: dict[str, Any]) -> bytes:
    """The frame carrying ``obj`` (compact JSON, non-ASCII kept as UTF-8), encoded by
    orjson; the standard library's encoder where orjson cannot (integers beyond 64 bits).
    (The models refuse NaN and infinities in events, and frames read are strict JSON, so
    no frame holds one; orjson would write null.)"""
    try:
        body = orjson.dumps(obj)
    except TypeError:
        body = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    return HEADER.pack(len(body)) + body


#: the deepest nesting of arrays and objects a frame may have (what orjson writes)
MAX_DEPTH = 255
#: the most publications one batch frame (``pubs``, ``forwards``, ``notifies``) may carry
#: (docs/protocol.md §3.1)
MAX_BATCH = 10_000
#: the batch frames, whose events are checked for depth each on its own (docs/protocol.md §1)
BATCH_KINDS = frozenset(("pubs", "forwards", "notifies"))
#: the deepest an event of a batch may nest: as deep as in a ``pub`` frame of its own
#: (the frame's object around it is one more level), which is what orjson writes
MAX_EVENT_DEPTH = MAX_DEPTH - 1


class Cut(list[tuple[str, int, bytes, bytes]]):
    """The ``pubs`` of a batch frame as the compiled cutter found them (docs/protocol.md §3.1): one
    ``(publisher, n, event bytes, pair bytes)`` per ``[["publisher", n], event]`` pair,
    the bytes as they came; ``body`` is the frame's body. The events are not read yet:
    :func:`load_cut_event` reads each, and a frame one of whose events is not JSON is a
    ``bad-frame`` as a whole, as when the body is read at once."""

    __slots__ = ("body",)

    def __init__(self, items: list[tuple[str, int, bytes, bytes]], body: bytes) -> None:
        super().__init__(items)
        self.body = body


_split: Any
try:  # optional, as the records model's compiled walk: without it frames are read whole
    from pubsift.adapters.broker._split import (  # type: ignore[import-not-found,no-redef]
        split as _split,
    )
except ImportError:  # pragma: no cover - not built
    _split = None
if os.environ.get("PUBSIFT_PURE_PYTHON"):
    _split = None


def _cut(body: bytes) -> dict[str, Any] | None:
    """The object of a batch frame's body with its ``pubs`` as a :class:`Cut`, or None
    when the cutter does not take the body (not a batch frame in the common form: the
    caller reads it whole). The members other than ``pubs`` are read here, strictly (a
    member given twice, or one that is not strict JSON: the caller reads the body whole,
    which says what is wrong)."""
    got = _split(body, MAX_EVENT_DEPTH, MAX_BATCH)
    if got is None:
        return None
    members, items = got
    view = memoryview(body)
    obj: dict[str, Any] = {}
    try:
        for key, start, end in members:
            if key in obj:
                return None
            obj[key] = strict_json.loads(bytes(view[start:end]), max_depth=None)
    except JsonError:
        return None
    kind = obj.get("kind")
    if type(kind) is not str or kind not in BATCH_KINDS:
        return None
    obj["pubs"] = Cut(items, body)
    return obj


def load_cut_event(items: Cut, event: bytes) -> Any:
    """The JSON value of one event of a :class:`Cut`, strict (:mod:`pubsift.core.strict_json`;
    its depth was checked by the cutter). An event that is not strict JSON makes the whole
    frame a ``bad-frame``, with the message reading the whole body gives."""
    try:
        return strict_json.loads(event, max_depth=None)
    except JsonError:
        decode(items.body)  # raises the frame's error
        raise FrameError("bad-frame", "an event of the batch is not JSON") from None


def decode(body: bytes, cut: bool = False) -> dict[str, Any]:
    """The object of a frame body; :class:`FrameError` ``bad-frame`` names what is wrong.

    Strict JSON (:mod:`pubsift.core.strict_json`: UTF-8, no duplicate keys, no NaN or
    infinities nor numbers that overflow to them, integers exact), at most
    :data:`MAX_DEPTH` levels deep (the events of a batch frame each as deep as in a frame
    of its own).

    With ``cut`` (what a :class:`~pubsift.adapters.broker.connection.Connection` reads)
    a batch frame in the common form is cut instead, where the compiled cutter is built:
    its ``pubs`` is a :class:`Cut`, whose events are read one by one where they are used
    and travel on as the bytes that came."""
    if cut and _split is not None and b'"pubs"' in body:
        obj = _cut(body)
        if obj is not None:
            return obj
    try:
        obj = strict_json.loads(body, max_depth=None)  # the depth: below, per frame kind
    except JsonError as exc:
        raise FrameError("bad-frame", _refusal(exc)) from None
    if type(obj) is not dict:
        raise FrameError("bad-frame", f"body is a JSON {type(obj).__name__}, not an object")
    kind = obj.get("kind")
    if type(kind) is str and kind in BATCH_KINDS and type(obj.get("pubs")) is list:
        # a batch's events are checked one by one where they are written out again
        # (:func:`pubsift.adapters.broker.wire.dumps`), each as deep as in a frame of its
        # own; walking every event here cost more than reading the batch
        if _too_deep({k: v for k, v in obj.items() if k != "pubs"}):
            raise FrameError(
                "bad-frame", f"body is JSON nested too deeply (more than {MAX_DEPTH} levels)"
            )
    elif (
        len(body) > MAX_DEPTH and body.count(b"[") + body.count(b"{") > MAX_DEPTH and _too_deep(obj)
    ):
        raise FrameError(
            "bad-frame", f"body is JSON nested too deeply (more than {MAX_DEPTH} levels)"
        )
    if type(kind) is not str:
        raise FrameError("bad-frame", "the object has no string member 'kind'")
    return obj


def _too_deep(obj: Any) -> bool:
    """Whether ``obj`` nests arrays and objects more than :data:`MAX_DEPTH` deep."""
    level: list[Any] = [obj]
    for _ in range(MAX_DEPTH):
        level = [
            v
            for x in level
            for v in (x.values() if isinstance(x, dict) else x)
            if isinstance(v, (dict, list))
        ]
        if not level:
            return False
    return True


def _refusal(exc: JsonError) -> str:
    """What is wrong with a body that is not strict JSON."""
    if exc.kind == "encoding":
        return f"body is not UTF-8 (byte {exc.pos})"
    if exc.kind == "depth":
        return "body is JSON nested too deeply"
    if exc.kind == "syntax":
        return (
            f"body is not JSON: {exc.reason}: line {exc.lineno} column {exc.colno} (char {exc.pos})"
        )
    if exc.kind == "number":
        return f"body is not JSON: {exc.reason} (number is infinity as a double)"
    return f"body is not JSON: {exc.reason}"


async def read_frame(reader: asyncio.StreamReader, max_bytes: int) -> dict[str, Any] | None:
    """The next frame's object, or None when the stream ends cleanly between frames.
    Raises :class:`FrameError`: ``too-large`` (from the prefix alone), ``truncated``,
    ``bad-frame``."""
    try:
        head = await reader.readexactly(HEADER.size)
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise FrameError("truncated", "the stream ended inside a frame header") from None
    (n,) = HEADER.unpack(head)
    if n > max_bytes:
        if looks_like_tls(head):
            raise FrameError(
                "bad-hello",
                "the peer speaks TLS and this port plaintext (connect with pubsift://, "
                "or give the broker a [tls] section)",
            )
        raise FrameError("too-large", f"frame of {n} bytes exceeds the limit of {max_bytes}")
    try:
        body = await reader.readexactly(n)
    except asyncio.IncompleteReadError as exc:
        raise FrameError(
            "truncated", f"the stream ended after {len(exc.partial)} of {n} body bytes"
        ) from None
    return decode(body)


def looks_like_tls(head: bytes) -> bool:
    """Whether the first bytes of a stream are a TLS handshake record (content type 0x16,
    version 3.x) rather than a frame's length: read as a length, that is above 369 MB."""
    return len(head) >= 2 and head[0] == 0x16 and head[1] == 0x03


def error(reason: str, message: str) -> dict[str, Any]:
    """An ``error`` frame's object."""
    return {"kind": "error", "reason": reason, "message": message}


def hello(role: str, id: str, **extra: Any) -> dict[str, Any]:
    """A ``hello`` frame's object: protocol version, role (client or broker) and id."""
    return {"kind": "hello", "protocol": PROTOCOL_VERSION, "role": role, "id": id, **extra}


def check_hello(obj: dict[str, Any], expect_role: str | None = None) -> tuple[str, str]:
    """(role, id) of a peer's hello; :class:`FrameError` (bad-hello, unsupported-version,
    or the peer's own ``error``) otherwise."""
    if obj.get("kind") == "error":
        raise FrameError(
            str(obj.get("reason", "refused")), str(obj.get("message", "refused by the peer"))
        )
    if obj.get("kind") != "hello":
        raise FrameError("bad-hello", f"expected a hello frame first, got kind {obj['kind']!r}")
    version = obj.get("protocol")
    if version != PROTOCOL_VERSION:
        raise FrameError(
            "unsupported-version",
            f"peer speaks protocol {version!r}, this side speaks {PROTOCOL_VERSION}",
        )
    role, pid = obj.get("role"), obj.get("id")
    if role not in ("client", "broker") or (expect_role and role != expect_role):
        want = expect_role or "'client' or 'broker'"
        raise FrameError("bad-hello", f"hello role {role!r}: expected {want}")
    if not isinstance(pid, str) or not pid or len(pid) > 200:
        raise FrameError("bad-hello", f"hello id {pid!r}: expected a string of 1-200 characters")
    if not pid.isprintable():  # no line breaks or control characters: ids go into log lines
        raise FrameError("bad-hello", f"hello id {pid!r}: control characters are not allowed")
    return role, pid


def parse_url(url: str) -> tuple[str, int]:
    """(host, port) of ``pubsift://host:port`` or ``pubsifts://host:port`` (TLS; the
    port defaults to 7400 for both)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in (SCHEME, TLS_SCHEME):
        raise ConfigError(
            f"broker URL {url!r}: expected {SCHEME}://host:port (or {TLS_SCHEME}:// for TLS)"
        )
    rest = rest.rstrip("/")
    if rest and ":" not in rest.rsplit("]", 1)[-1]:
        rest = f"{rest}:{DEFAULT_PORT}"
    a = Address.parse(rest, f"broker URL {url!r}")
    return a.host, a.port


def url_uses_tls(url: str) -> bool:
    """Whether ``url`` names a broker's TLS port (``pubsifts://``)."""
    return url.startswith(TLS_SCHEME + "://")


def hello_frame_limit(hello: dict[str, Any]) -> int | None:
    """The longest frame a peer's hello says it reads (None: it did not say)."""
    n = hello.get("max_frame_bytes")
    return n if type(n) is int and n > 0 else None


def hello_features(hello: dict[str, Any]) -> frozenset[str]:
    """The features a peer's hello names (none: an older peer)."""
    got = hello.get("features")
    return frozenset(f for f in got if isinstance(f, str)) if isinstance(got, list) else frozenset()
