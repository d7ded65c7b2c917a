"""Hostile peers for the fuzz test of the broker network (tests/network/test_fuzz.py).

Fiege, Zeidler & Buchmann, "Security Aspects in Publish/Subscribe Systems" (DEBS 2004), §2.2
"Trust" and §2.3 "Current Deficiencies": the infrastructure must stay trustworthy with
outsiders around, and outsiders may send anything. The :class:`Hostile`
driver throws frames at running :class:`~pubsift.adapters.broker.daemon.BrokerDaemon`\\ s
and checks every answer it can read against what the protocol says (docs/protocol.md §1, §6):

* **mutations of captured valid frames** (the frames the well-behaved clients send, and the
  ``forward``/``admin``/``notify`` frames the brokers exchanged): bit flips, byte edits,
  field deletions, swaps and type changes, kind changes, splices of other frames;
* **generated hostile frames**: unknown kinds, invalid filters and events, XML bombs
  (billion laughs, quadratic blow-up), external entities (``file:///etc/passwd``), DOCTYPE
  tricks, deeply nested XML, JSON and XPath, huge numbers, NaN and Infinity, a second hello;
* **broken framing**: random bytes, truncated frames, wrong and oversize length prefixes,
  disconnects in the middle of a frame;
* **broken sessions**: frames before the hello, mutated hellos, impostor brokers with
  garbage reach sets, a slow reader, half-open connections (silent, or stalled in the
  middle of a frame before or after the hello).

The expected answer of each frame is computed on this side from the frame alone (the same
checks a client in another language would read in docs/protocol.md: :func:`frames.decode`,
:func:`wire.from_client`, :func:`wire.from_broker`); each frame is followed by a ``stats``
probe (a ``zz-probe`` of an unknown kind on a broker link) so that the errors between two
probe answers belong to that frame. Every answer that differs is a *problem*; so is a
broker frame carrying ``/etc/passwd`` or an expanded entity. :class:`Tally` counts frames
thrown per kind and what came back (``error:<reason>``, ``closed:<reason>``, ``accepted``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import random
import socket
import struct
import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pubsift.adapters.broker import wire
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.frames import FrameError, check_hello, decode, encode, read_frame
from pubsift.core.model import FilterModel

HEADER = struct.Struct(">I")
#: what no broker frame may ever contain (the first line of /etc/passwd, an expanded bomb)
LEAKS = (b"root:x:0:0", b"root:*:0:0", b"lollollollol")
READ_TIMEOUT = 10.0


def frame(body: bytes) -> bytes:
    return HEADER.pack(len(body)) + body


@dataclass
class Tally:
    """Frames thrown per kind, what came back per kind, and every unexpected answer."""

    thrown: Counter[str] = field(default_factory=Counter)
    outcomes: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    problems: list[str] = field(default_factory=list)
    sessions: Counter[str] = field(default_factory=Counter)

    def add(self, kind: str, outcome: str, expected: str | None = None, what: str = "") -> None:
        self.thrown[kind] += 1
        self.outcomes[kind][outcome] += 1
        if expected is not None and outcome != expected:
            self.problems.append(f"{kind}: expected {expected}, got {outcome}: {what[:300]}")

    def summary(self, seed: int) -> str:
        lines = [
            f"fuzz (seed {seed}): {sum(self.thrown.values())} hostile frames in "
            f"{sum(self.sessions.values())} connections "
            f"({', '.join(f'{k} {n}' for k, n in sorted(self.sessions.items()))})"
        ]
        width = max((len(k) for k in self.thrown), default=10)
        for kind, n in sorted(self.thrown.items(), key=lambda kv: (-kv[1], kv[0])):
            what = ", ".join(f"{o} {c}" for o, c in self.outcomes[kind].most_common())
            lines.append(f"  {kind:<{width}} {n:>6}  {what}")
        by_outcome: Counter[str] = Counter()
        for c in self.outcomes.values():
            by_outcome.update(c)
        lines.append("  all: " + ", ".join(f"{o} {c}" for o, c in by_outcome.most_common()))
        lines.append(f"  unexpected answers: {len(self.problems)}")
        return "\n".join(lines)


# -- generated hostile payloads -------------------------------------------------------------

BILLION_LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'
        for i in range(1, 10)
    )
    + "]><lolz>&lol9;</lolz>"
)
QUADRATIC = '<!DOCTYPE a [<!ENTITY x "' + "x" * 5000 + '">]><a>' + "&x;" * 2000 + "</a>"
XXE = [
    '<!DOCTYPE a [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><a>&xxe;</a>',
    '<?xml version="1.0"?><!DOCTYPE a SYSTEM "file:///etc/passwd"><a/>',
    '<!DOCTYPE a [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]><a/>',
    '<!DOCTYPE a [<!ENTITY % p SYSTEM "http://127.0.0.1:9/evil.dtd"> %p;]><a>&e;</a>',
    '<a xmlns:xi="http://www.w3.org/2001/XInclude">'
    '<xi:include href="file:///etc/passwd" parse="text"/></a>',
    '<!DOCTYPE a PUBLIC "-//X//Y" "http://127.0.0.1:9/x.dtd"><a/>',
]
DOCTYPE_TRICKS = [
    "<!DOCTYPE a><a/>",
    "<!DOCTYPE a [<!ELEMENT a ANY>]><a/>",
    '<!DOCTYPE a [<!ATTLIST a x CDATA "1">]><a/>',
    '<!DOCTYPE a [<!ENTITY e "<b>1</b>">]><a>&e;</a>',
    "<a>&undefined;</a>",
    "<a>&#0;</a>",
    "<a>&#xD800;</a>",
    '<?xml version="1.0" encoding="UTF-7"?><a/>',
    '<?xml version="1.1"?><a/>',
    "<?xml-stylesheet href='file:///etc/passwd'?><a/>",
    "<a><![CDATA[<!DOCTYPE a [<!ENTITY x SYSTEM 'file:///etc/passwd'>]>]]></a>",
    "<!DOCTYPE a [<!ENTITY a '&b;'><!ENTITY b '&a;'>]><a>&a;</a>",
    "<a/><b/>",
    "",
    "\ufeff<a/>",
]


def deep_xml(rng: random.Random) -> str:
    n = rng.choice((300, 3000, 20000))
    return "<a>" * n + "</a>" * n


def deep_json(rng: random.Random, n: int) -> str:
    opener, closer = rng.choice((("[", "]"), ('{"a":', "}")))
    return opener * n + "1" + closer * n


def deep_xpath(rng: random.Random) -> str:
    n = rng.choice((100, 1000, 5000))
    return rng.choice(
        (
            "//a" + "[b" * n + "]" * n,
            "//a[" + "(" * n + "1" + ")" * n + "]",
            "/a" * n,
            "//a[" + " and ".join(["@x"] * n) + "]",
            "//a[not(" * n + "@x" + ")]" * n,
        )
    )


HOSTILE_XPATHS = [
    "document('file:///etc/passwd')",
    "//a[unparsed-text('/etc/passwd')]",
    "//a[doc('file:///etc/passwd')]",
    "//a[system-property('xsl:vendor')]",
    "//*[name()=string(document('/etc/passwd'))]",
    "//a[",
    "//",
    "",
    "a | b",
    "//a[@x = 1e400]",
    "//a[. = 'x' or count(//*) > 1]",
    "/descendant-or-self::node()/following::*",
    "//a[@x = '" + "x" * 3000 + "']",
    "//a[matches(., '(a+)+$')]",
]
HOSTILE_RECORD_FILTERS = [
    "price >",
    'symbol = "IBM" or price > 1',
    "a in [3, 1]",
    "a > 1 and a < 0",
    "a = 1e400",
    "a = 1e-400",
    "a = -0.0",
    "a in {" + ", ".join(str(i) for i in range(3000)) + "}",
    'a prefix "' + "x" * 5000 + '"',
    "a.b.c.d." * 200 + "e exists",
    "a instanceof nosuchtype",
    '{"a": [{"numeric": [">", 1e400]}]}',
    '{"a": [{"prefix": {"$or": []}}]}',
    '{"$or": [' + ",".join(['{"a": [1]}'] * 500) + "]}",
    '{"a": ' + '{"a": ' * 500 + "[1]" + "}" * 500 + "}",
    'a = "\\ud800"',
    "\x00",
    "a " * 3000 + "exists",
]
NUMBERS_TEXT = [
    b"1e400",
    b"-1e400",
    b"1e-400",
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"9" * 4000,
    b"9" * 5000,
    b"-0",
    b"0.1e99999999999",
    b"123456789012345678901234567890",
    b"1E+308",
    b"4.9e-324",
]


def _junk(rng: random.Random) -> Any:
    """A JSON value of a random type (for type changes)."""
    return rng.choice(
        [
            None,
            True,
            False,
            0,
            -1,
            2**63,
            2**64 + 1,
            10**300,
            -(10**300),
            1.5,
            -0.0,
            1e308,
            5e-324,
            "",
            "x" * rng.choice((1, 100, 5000)),
            "\u0000",
            "\ud7ff\ue000\U0010ffff",
            [],
            [1, "a", None],
            {},
            {"xml": "<a/>"},
            {"op": ">", "value": 1},
            ["h", 1],
            [["a"]] * 3,
            {"kind": "sub"},
        ]
    )


# -- mutations -------------------------------------------------------------------------------


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (tuple of keys/indexes) to a node below ``obj``."""
    out: list[tuple] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append(prefix + (k,))
            out.extend(_paths(v, prefix + (k,)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.append(prefix + (i,))
            out.extend(_paths(v, prefix + (i,)))
    return out


def _get(obj: Any, path: tuple) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def _set(obj: Any, path: tuple, value: Any) -> None:
    _get(obj, path[:-1])[path[-1]] = value


def mutate(
    rng: random.Random, obj: dict[str, Any], corpus: list[dict[str, Any]]
) -> tuple[str, bytes]:
    """One mutation of ``obj`` (a valid frame's object): (mutation kind, frame body)."""
    kind = rng.choice(
        (
            "bit-flip",
            "byte-edit",
            "field-delete",
            "field-swap",
            "type-change",
            "type-change",
            "kind-change",
            "splice",
        )
    )
    if kind in ("bit-flip", "byte-edit"):
        body = bytearray(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode())
        for _ in range(rng.choice((1, 1, 2, 3, 8))):
            i = rng.randrange(len(body))
            if kind == "bit-flip":
                body[i] ^= 1 << rng.randrange(8)
            else:
                op = rng.randrange(3)
                if op == 0:
                    del body[i]
                elif op == 1:
                    body.insert(i, rng.choice(b'{}[]",:\\0123456789-.eE \x00\xff"'))
                else:
                    body[i] = rng.randrange(256)
        return kind, bytes(body)
    obj = copy.deepcopy(obj)
    paths = _paths(obj)
    if kind == "field-delete" and paths:
        p = rng.choice(paths)
        parent = _get(obj, p[:-1])
        del parent[p[-1]]
    elif kind == "field-swap" and len(paths) >= 2:
        a, b = rng.sample(paths, 2)
        if a[: len(b)] != b and b[: len(a)] != a:  # neither inside the other
            va, vb = _get(obj, a), _get(obj, b)
            _set(obj, a, vb)
            _set(obj, b, va)
    elif kind == "type-change" and paths:
        _set(obj, rng.choice(paths), _junk(rng))
    elif kind == "kind-change":
        obj["kind"] = rng.choice(
            (
                "sub",
                "unsub",
                "adv",
                "unadv",
                "pub",
                "notify",
                "forward",
                "admin",
                "hello",
                "reach",
                "resync",
                "renew",
                "error",
                "stats",
                "ping",
                "pong",
                "SUB",
                "",
                "sub\u0000",
                "x" * 300,
            )
        )
    elif kind == "splice" and paths:
        other = rng.choice(corpus)
        donor = _paths(other)
        if donor:
            _set(obj, rng.choice(paths), copy.deepcopy(_get(other, rng.choice(donor))))
    return kind, json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


# -- the hostile driver ----------------------------------------------------------------------


@dataclass
class Target:
    """A broker under attack, with what a hostile client must not collide with."""

    daemon: BrokerDaemon
    link_token: bool = False  # links need a token: impostors are refused (unauthorized)


class Hostile:
    """Throws hostile frames at brokers; see the module docstring."""

    def __init__(
        self,
        rng: random.Random,
        targets: list[Target],
        models: Mapping[str, FilterModel],
        corpus: list[dict[str, Any]],
        broker_corpus: list[dict[str, Any]],
        tally: Tally,
        reserved: set[str],
    ) -> None:
        self.rng = rng
        self.targets = targets
        self.models = models
        self.corpus = corpus  # client frames (sub, unsub, pub, ...) of well-behaved clients
        self.broker_corpus = broker_corpus  # forward / admin / notify frames seen on links
        self.tally = tally
        self.reserved = reserved  # ids hostile peers must not take (well-behaved clients)
        self._n = 0
        self.max_frame = targets[0].daemon.config.max_frame_bytes
        self.leaks: list[str] = []

    def fresh_id(self, prefix: str = "h") -> str:
        self._n += 1
        return f"{prefix}-{self._n}"

    def target(self) -> Target:
        return self.rng.choice(self.targets)

    async def _open(self, t: Target) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", t.daemon.address.port, limit=1 << 20)

    async def _read(self, r: asyncio.StreamReader, timeout: float = READ_TIMEOUT) -> dict | None:
        """The next frame from a broker (None: closed); checked for leaks."""
        obj = await asyncio.wait_for(read_frame(r, 1 << 24), timeout)
        if obj is not None:
            text = json.dumps(obj).encode()
            for leak in LEAKS:
                if leak in text:
                    self.leaks.append(f"{leak!r} in a broker frame: {text[:200]!r}")
        return obj

    async def _drain_close(self, r: asyncio.StreamReader) -> list[dict]:
        """Every frame until the broker closes (a reset ends it too)."""
        out = []
        with contextlib.suppress(ConnectionError, FrameError):
            while (obj := await self._read(r)) is not None:
                out.append(obj)
        return out

    # -- expectations (docs/protocol.md §1, §3, §6) ------------------------------------------
    def expect_client(self, body: bytes, cid: str) -> str:
        """The answer to ``body`` from a client after the hellos."""
        if len(body) > self.max_frame:
            return "closed:too-large"
        try:
            obj = decode(body)
        except FrameError:
            return "error:bad-frame"
        kind = obj["kind"]
        if kind in ("stats", "ping"):
            return f"reply:{'stats' if kind == 'stats' else 'pong'}"
        if kind == "pong":
            return "accepted"
        try:
            wire.from_client(obj, cid, self.models)
        except FrameError as exc:
            return f"error:{exc.reason}"
        if kind in ("adv", "unadv"):  # the fuzzed brokers run without advertisements
            return "error:refused"
        return "accepted"

    def expect_broker(self, body: bytes) -> str | None:
        """The answer to ``body`` on an impostor's link; None: a valid frame that would be
        routed as if a trusted broker sent it (not thrown: brokers are trusted, §4.2)."""
        if len(body) > self.max_frame:
            return "closed:too-large"
        try:
            obj = decode(body)
        except FrameError:
            return "error:bad-frame"
        kind = obj["kind"]
        if kind in ("reach", "resync", "error", "ping", "pong"):
            return None  # link-state frames: thrown by the impostor session on purpose
        try:
            wire.from_broker(obj, self.models)
        except FrameError as exc:
            return f"error:{exc.reason}"
        return None if kind == "forward" else "accepted"

    # -- hostile client frames ---------------------------------------------------------------
    def client_frame(self, cid: str, seq: list[int]) -> tuple[str, bytes]:
        """A hostile frame for a connected client ``cid``: (kind, body)."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.55:  # mutations of captured valid frames: the most valuable kind
            obj = copy.deepcopy(rng.choice(self.corpus))
            if "client" in obj and rng.random() < 0.8:
                obj["client"] = cid
            if "pub_id" in obj and rng.random() < 0.8:
                seq[0] += 1
                obj["pub_id"] = [cid, seq[0]]
            return mutate(rng, obj, self.corpus + self.broker_corpus)
        model = rng.choice(("records", "xml"))
        gen = rng.choice(
            (
                "unknown-kind",
                "invalid-filter",
                "invalid-event",
                "xml-bomb",
                "xml-external-entity",
                "xml-doctype",
                "xml-deep",
                "json-deep",
                "xpath-deep",
                "huge-number",
                "second-hello",
                "broker-frame",
                "oversize-frame",
            )
        )
        seq[0] += 1
        pid = [cid, seq[0]]
        if gen == "unknown-kind":
            return gen, json.dumps(
                {
                    "kind": rng.choice(("teleport", "SUB", "sub ", "Pub", "\u202esub", "hello2")),
                    "ref": 1,
                }
            ).encode()
        if gen == "invalid-filter":
            if model == "xml":
                spec: Any = rng.choice(HOSTILE_XPATHS)
                if rng.random() < 0.3:
                    spec = {"xpath": spec, "namespaces": rng.choice(({"a": 1}, [], {"": ""}, None))}
            else:
                spec = rng.choice(HOSTILE_RECORD_FILTERS + [_junk(rng)])
            return gen, json.dumps(
                {"kind": rng.choice(("sub", "unsub", "adv")), "model": model, "filter": spec}
            ).encode()
        if gen == "invalid-event":
            ev = rng.choice(
                (
                    _junk(rng),
                    {"xml": _junk(rng)},
                    "<a><b></a>",
                    "not xml",
                    {"a": {"b": {"c": [1, {"d": []}]}}},
                    {"": 1, "a.b": 2, "a": {"b": 3}},
                    {"a": [[[[[]]]]]},
                )
            )
            return gen, json.dumps(
                {"kind": "pub", "model": model, "event": ev, "pub_id": pid}
            ).encode()
        if gen in ("xml-bomb", "xml-external-entity", "xml-doctype", "xml-deep"):
            xml = {
                "xml-bomb": lambda: rng.choice((BILLION_LAUGHS, QUADRATIC)),
                "xml-external-entity": lambda: rng.choice(XXE),
                "xml-doctype": lambda: rng.choice(DOCTYPE_TRICKS),
                "xml-deep": lambda: deep_xml(rng),
            }[gen]()
            ev = {"xml": xml} if rng.random() < 0.5 else xml
            return gen, json.dumps(
                {"kind": "pub", "model": "xml", "event": ev, "pub_id": pid}
            ).encode()
        if gen == "json-deep":
            n = rng.choice((50, 500, 990, 5000, 20000))
            where = rng.choice(("event", "filter", "ref", "pub_id"))
            base = {"kind": "pub" if where != "filter" else "sub", "model": model, "pub_id": pid}
            text = json.dumps(base)[:-1] + f', "{where}": ' + deep_json(rng, n) + "}"
            return gen, text.encode()
        if gen == "xpath-deep":
            return gen, json.dumps(
                {"kind": "sub", "model": "xml", "filter": deep_xpath(rng)}
            ).encode()
        if gen == "huge-number":
            num = rng.choice(NUMBERS_TEXT)
            where = rng.choice(
                (
                    b'{"kind":"pub","model":"records","event":{"price":%s},"pub_id":%s}',
                    b'{"kind":"pub","model":"records","event":{"a":1},"pub_id":["%s",%s]}',
                    b'{"kind":"sub","model":"records","filter":{"a":{"op":">","value":%s}}%s}',
                    b'{"kind":"stats","ref":%s%s}',
                )
            )
            if where.count(b"%s") == 2 and b'["%s"' in where:
                body = where % (cid.encode(), num)
            elif b"pub_id" in where:
                body = where % (num, json.dumps(pid).encode())
            else:
                body = where % (num, b"")
            return gen, body
        if gen == "second-hello":
            return gen, json.dumps(
                {
                    "kind": "hello",
                    "protocol": 1,
                    "role": rng.choice(("client", "broker")),
                    "id": cid,
                }
            ).encode()
        if gen == "broker-frame":  # a client sending what only brokers send
            obj = copy.deepcopy(rng.choice(self.broker_corpus or self.corpus))
            return gen, json.dumps(obj).encode()
        # oversize-frame: a body just above the limit, properly framed
        pad = "x" * (self.max_frame + rng.randrange(1, 100))
        return gen, json.dumps({"kind": "pub", "model": "records", "event": {"a": pad}}).encode()

    async def client_session(self, n: int, batch: int = 16) -> None:
        """A hostile client: hello, then ``n`` hostile frames, each followed by a stats
        probe; the answers between two probe answers are that frame's."""
        t = self.target()
        cid = self.fresh_id()
        self.tally.sessions["client"] += 1
        r, w = await self._open(t)
        seq = [0]
        try:
            w.write(encode({"kind": "hello", "protocol": 1, "role": "client", "id": cid}))
            first = await self._read(r)
            assert first is not None and first["kind"] == "hello", first
            probe = encode({"kind": "stats"})
            left = n
            while left > 0:
                slots = [self.client_frame(cid, seq) for _ in range(min(batch, left))]
                left -= len(slots)
                expected = [self.expect_client(body, cid) for _, body in slots]
                for i, (kind, body) in enumerate(slots):  # not left to the model's word
                    if kind == "xml-bomb" or (kind == "xml-external-entity" and b"ENTITY" in body):
                        expected[i] = "error:invalid-message"
                for (_, body), e in zip(slots, expected):
                    w.write(frame(body))
                    if e.startswith("closed:"):
                        break
                    w.write(probe)
                with contextlib.suppress(ConnectionError):  # closed: _judge says why
                    await w.drain()
                closed = await self._judge(r, w, slots, expected, cid)
                if closed:
                    w.close()
                    self.tally.sessions["client"] += 1
                    cid = self.fresh_id()
                    r, w = await self._open(t)
                    w.write(encode({"kind": "hello", "protocol": 1, "role": "client", "id": cid}))
                    first = await self._read(r)
                    assert first is not None and first["kind"] == "hello", first
        finally:
            w.close()

    async def _judge(
        self,
        r: asyncio.StreamReader,
        w: asyncio.StreamWriter,
        slots: list[tuple[str, bytes]],
        expected: list[str],
        cid: str,
    ) -> bool:
        """Read the answers of one batch and tally them; True if the broker closed."""
        for (kind, body), e in zip(slots, expected):
            errors: list[str] = []
            replies = 0
            want_replies = 2 if e == "reply:stats" else 1
            got_pong = False
            while replies < want_replies:
                try:
                    obj = await self._read(r)
                except ConnectionError as exc:
                    self.tally.add(kind, "reset", e, f"{cid}: {exc!r} {body[:100]!r}")
                    return True
                if obj is None:
                    outcome = f"closed:{errors[-1]}" if errors else "closed"
                    self.tally.add(kind, outcome, e, f"{cid}: {body!r}")
                    return True
                k = obj["kind"]
                if k == "stats":
                    replies += 1
                elif k == "error":
                    errors.append(obj.get("reason", "?"))
                    if not obj.get("message"):
                        self.tally.problems.append(f"{kind}: error without a message: {obj}")
                elif k == "pong":
                    got_pong = True
                elif k == "ping":  # hostile, not dead: it answers the heartbeat (§1.1)
                    w.write(encode({"kind": "pong"}))
            if e == "reply:pong" and got_pong:
                outcome = "reply:pong"
            elif e == "reply:stats" and not errors:
                outcome = "reply:stats"
            elif errors:
                outcome = "error:" + "+".join(errors)
            else:
                outcome = "accepted"
            self.tally.add(kind, outcome, e, f"{cid}: {body!r}")
        return False

    # -- broken framing ----------------------------------------------------------------------
    def raw_bytes(self, cid: str) -> tuple[str, bytes, bool]:
        """(kind, bytes, abort) of broken framing after the hello; ``abort``: reset the
        connection after sending instead of ending it cleanly."""
        rng = self.rng
        obj = copy.deepcopy(rng.choice(self.corpus))
        if "client" in obj:
            obj["client"] = cid
        body = json.dumps(obj).encode()
        kind = rng.choice(
            (
                "random-bytes",
                "truncated-frame",
                "wrong-length",
                "oversize-length",
                "mid-frame-disconnect",
            )
        )
        if kind == "random-bytes":
            return kind, rng.randbytes(rng.choice((1, 3, 4, 9, 64, 300))), False
        if kind == "truncated-frame":
            data = frame(body)
            return kind, data[: rng.randrange(1, len(data))], False
        if kind == "wrong-length":
            n = max(0, len(body) + rng.choice((-len(body), -5, -1, 1, 7, 1000)))
            return kind, HEADER.pack(n) + body, False
        if kind == "oversize-length":
            n = rng.choice((self.max_frame + 1, 2**31, 2**32 - 1))
            return kind, HEADER.pack(n) + body[: rng.randrange(len(body))], False
        data = frame(body)
        return kind, data[: rng.randrange(1, len(data))], True

    def expect_raw(self, data: bytes, cid: str | None) -> list[str]:
        """The error reasons a broker sends for ``data`` followed by the end of the stream
        (after the hellos if ``cid``, else as the first bytes of a connection)."""

        async def go() -> list[str]:
            r = asyncio.StreamReader()
            r.feed_data(data)
            r.feed_eof()
            out: list[str] = []
            first = cid is None
            while True:
                try:
                    obj = await read_frame(r, self.max_frame)
                except FrameError as exc:
                    out.append(exc.reason)
                    if first or exc.reason != "bad-frame":
                        return out
                    continue
                if obj is None:
                    return out
                if first:
                    try:
                        check_hello(obj)
                    except FrameError as exc:
                        out.append(exc.reason)
                        return out
                    return out + ["?hello"]  # a valid hello by chance: not judged
                body = json.dumps(obj).encode()
                e = self.expect_client(body, cid or "")
                if e.startswith(("error:", "closed:")):
                    out.append(e.split(":", 1)[1])

        return _run_sync(go())

    async def raw_session(self) -> None:
        t = self.target()
        cid = self.fresh_id()
        self.tally.sessions["framing"] += 1
        before_hello = self.rng.random() < 0.3
        kind, data, abort = self.raw_bytes(cid)
        if before_hello:
            kind = "before-hello-" + kind
        r, w = await self._open(t)
        try:
            if not before_hello:
                w.write(encode({"kind": "hello", "protocol": 1, "role": "client", "id": cid}))
                first = await self._read(r)
                assert first is not None and first["kind"] == "hello", first
            w.write(data)
            await w.drain()
            if abort:
                w.transport.abort()
                self.tally.add(kind, "gone")
                return
            expected = self.expect_raw(data, None if before_hello else cid)
            if w.can_write_eof():
                w.write_eof()
            replies = await self._drain_close(r)
            reasons = [o.get("reason", "?") for o in replies if o["kind"] == "error"]
            outcome = "closed:" + "+".join(reasons) if reasons else "closed"
            if "?hello" in expected:  # random bytes that make a valid hello: no verdict
                self.tally.add(kind, outcome)
            else:
                want = "closed:" + "+".join(expected) if expected else "closed"
                self.tally.add(kind, outcome, want, repr(data[:200]))
        finally:
            w.close()

    # -- hellos ------------------------------------------------------------------------------
    async def hello_session(self) -> None:
        """A first frame that is a mutated hello, or another frame before any hello."""
        rng = self.rng
        t = self.target()
        hid = self.fresh_id()
        self.tally.sessions["hello"] += 1
        h = {"kind": "hello", "protocol": 1, "role": "client", "id": hid}
        if rng.random() < 0.3:
            kind = "frame-before-hello"
            obj = copy.deepcopy(rng.choice(self.corpus))
            body = json.dumps(obj).encode()
        else:
            kind = "hello-mutation"
            _, body = mutate(
                rng, h, [h, {"kind": "hello", "protocol": 2, "role": "broker", "id": "b0"}]
            )
            if rng.random() < 0.2:  # an id of another kind of peer
                body = json.dumps(
                    {**h, "id": rng.choice([x.daemon.id for x in self.targets])}
                ).encode()
        try:
            obj = decode(body)
            role, pid = check_hello(obj)
            if pid in self.reserved or pid.startswith("b"):
                # never take a well-behaved client's id (that replaces it, §2) or a broker's
                body = json.dumps({**h, "role": role}).encode()
                role, pid = "client" if role == "client" else "broker", hid
        except FrameError as exc:
            role, pid = None, exc.reason
        r, w = await self._open(t)
        try:
            w.write(frame(body))
            await w.drain()
            if role is None:
                replies = await self._drain_close(r)
                reasons = [o.get("reason") for o in replies if o["kind"] == "error"]
                outcome = "closed:" + "+".join(map(str, reasons)) if reasons else "closed"
                self.tally.add(kind, outcome, f"closed:{pid}", repr(body))
                return
            if role == "broker":
                self.tally.add(kind, "broker-hello")
                await self._impostor(r, w, t, pid, kind)
                return
            first = await self._read(r)
            outcome = f"reply:{first['kind']}" if first else "closed"
            if first and first["kind"] == "error":
                outcome = f"closed:{first.get('reason')}"
            self.tally.add(kind, outcome)
        finally:
            w.close()

    # -- impostor brokers --------------------------------------------------------------------
    async def impostor_session(self) -> None:
        t = self.target()
        pid = self.fresh_id("hb")
        self.tally.sessions["impostor"] += 1
        r, w = await self._open(t)
        try:
            w.write(encode({"kind": "hello", "protocol": 1, "role": "broker", "id": pid}))
            await w.drain()
            await self._impostor(r, w, t, pid, "impostor-hello")
        finally:
            w.close()

    async def _impostor(
        self, r: asyncio.StreamReader, w: asyncio.StreamWriter, t: Target, pid: str, kind: str
    ) -> None:
        rng = self.rng
        first = await self._read(r)
        if t.link_token:
            outcome = (
                f"closed:{first.get('reason')}" if first and first["kind"] == "error" else "linked"
            )
            self.tally.add(kind + "-without-token", outcome, "closed:unauthorized")
            return
        if first is None or first["kind"] != "hello":
            self.tally.add(kind, f"closed:{first.get('reason') if first else ''}")
            return
        reach = set(first.get("reach", []))
        real = [x.daemon.id for x in self.targets]
        garbage = rng.choice(
            (
                "not-a-list",
                "non-strings",
                "cycle",
                "self",
                "many",
                "valid",
                "valid",
                "error-frame",
                "other-kind",
            )
        )
        brokers: Any
        if garbage == "not-a-list":
            brokers = rng.choice(("b0", 1, None, {"b0": 1}, True))
            want = "closed:bad-hello"
        elif garbage == "non-strings":
            brokers = [pid, rng.choice((1, None, ["x"], {"a": 1}, 1.5))]
            want = "closed:bad-hello"
        elif garbage == "cycle":
            brokers = [pid, rng.choice(sorted(reach) or real)]
            want = "closed:cycle"
        elif garbage == "self":
            brokers = [t.daemon.id]
            want = "closed:cycle"
        elif garbage == "many":
            brokers = [f"{pid}-{i}" for i in range(rng.choice((10, 2000)))]
            want = "linked"
        elif garbage == "valid":
            brokers = [pid]
            want = "linked"
        elif garbage == "error-frame":  # the impostor refuses the link itself
            w.write(encode({"kind": "error", "reason": "cycle", "message": "no"}))
            await w.drain()
            replies = await self._drain_close(r)
            what = "+".join(f"{o['kind']}:{o.get('reason')}" for o in replies)
            self.tally.add(f"reach-{garbage}", f"closed:{what}" if replies else "closed", "closed")
            return
        else:
            w.write(encode({"kind": rng.choice(("sub", "forward", "hello")), "model": "records"}))
            await w.drain()
            replies = await self._drain_close(r)
            reasons = [o.get("reason") for o in replies if o["kind"] == "error"]
            self.tally.add(
                f"reach-{garbage}", "closed:" + "+".join(map(str, reasons)), "closed:bad-hello"
            )
            return
        w.write(encode({"kind": "reach", "brokers": brokers}))
        await w.drain()
        obj = await self._read(r)
        if obj is None or obj["kind"] == "error":
            outcome = f"closed:{obj.get('reason')}" if obj else "closed"
            self.tally.add(f"reach-{garbage}", outcome, want, repr(brokers)[:200])
            await self._drain_close(r)
            return
        self.tally.add(f"reach-{garbage}", "linked", want, repr(brokers)[:200])
        await self._linked_impostor(r, w)

    async def _linked_impostor(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        """Garbage on an established link: mutated broker frames (valid forwards are not
        thrown: a linked broker is trusted to route), each followed by a probe of an unknown
        kind, then a garbage ``reach`` that drops the link."""
        rng = self.rng
        probe = encode({"kind": "zz-probe"})
        sent: list[tuple[str, bytes, str]] = []
        for _ in range(rng.randrange(3, 12)):
            obj = copy.deepcopy(rng.choice(self.broker_corpus or self.corpus))
            kind, body = mutate(rng, obj, self.broker_corpus + self.corpus)
            e = self.expect_broker(body)
            if e is None or e.startswith("closed:"):
                continue
            sent.append(("link-" + kind, body, e))
            w.write(frame(body) + probe)
        await w.drain()
        for kind, body, e in sent:
            errors: list[str] = []
            while True:
                obj = await self._read(r)
                if obj is None:
                    self.tally.add(kind, "closed", e, repr(body))
                    return
                if obj["kind"] == "error":
                    if obj.get("message", "").startswith("kind 'zz-probe'"):
                        break
                    errors.append(obj.get("reason", "?"))
            self.tally.add(
                kind, "error:" + "+".join(errors) if errors else "accepted", e, repr(body)
            )
        w.write(
            encode(
                {"kind": "reach", "brokers": rng.choice(([1], "x", [self.targets[0].daemon.id]))}
            )
        )
        await w.drain()
        replies = await self._drain_close(r)
        reasons = [o.get("reason") for o in replies if o["kind"] == "error"]
        self.tally.add("link-garbage-reach", "closed:" + "+".join(map(str, reasons)))

    # -- slow readers and half-open connections ---------------------------------------------
    async def slow_reader(self, flood: int = 200_000) -> None:
        """A client with a tiny receive buffer that subscribes to everything and asks for
        stats without reading the answers: cut off with ``slow-consumer``."""
        t = self.target()
        cid = self.fresh_id("slow")
        self.tally.sessions["slow-reader"] += 1
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", t.daemon.address.port))
        r, w = await asyncio.open_connection(sock=sock, limit=1 << 20)
        try:
            w.write(encode({"kind": "hello", "protocol": 1, "role": "client", "id": cid}))
            w.write(encode({"kind": "sub", "model": "records", "filter": "true"}))
            w.write(encode({"kind": "sub", "model": "xml", "filter": "//*"}))
            probe = encode({"kind": "stats"}) * 200
            sent = 0
            end = time.monotonic() + 20
            while sent < flood and time.monotonic() < end:
                conn = t.daemon.port.clients.get(cid)
                if conn is not None and conn.closing:
                    break
                w.write(probe)
                sent += 200
                await asyncio.wait_for(w.drain(), 10)
                await asyncio.sleep(0)
            self.tally.thrown["slow-reader-stats"] += sent
            data = bytearray()  # read fast (the broker aborts a peer that does not read)
            with contextlib.suppress(ConnectionError):
                while chunk := await asyncio.wait_for(r.read(1 << 20), READ_TIMEOUT):
                    data += chunk
            last, at = None, 0  # only the last frame is decoded (thousands of stats)
            while at + 4 <= len(data):
                (n,) = HEADER.unpack(data[at : at + 4])
                if at + 4 + n > len(data):
                    break
                last, at = (at + 4, at + 4 + n), at + 4 + n
            replies = [json.loads(data[last[0] : last[1]])] if last else []
            reasons = [o.get("reason") for o in replies if o["kind"] == "error"]
            outcome = "closed:" + "+".join(map(str, reasons)) if reasons else "closed"
            self.tally.add("slow-reader", outcome, "closed:slow-consumer", f"after {sent} stats")
        finally:
            w.close()

    async def half_open(self, mode: str) -> float:
        """A connection that goes silent: ``silent`` (never a byte), ``stall-before-hello``
        (half a hello), ``stall-mid-frame`` (hello, then half a frame). Returns how long
        the broker took to close it."""
        t = self.target()
        self.tally.sessions["half-open"] += 1
        cid = self.fresh_id()
        r, w = await self._open(t)
        t0 = time.monotonic()
        try:
            h = encode({"kind": "hello", "protocol": 1, "role": "client", "id": cid})
            if mode == "stall-before-hello":
                w.write(h[: len(h) // 2])
            elif mode == "stall-mid-frame":
                w.write(h)
                body = frame(json.dumps(self.rng.choice(self.corpus)).encode())
                w.write(body[: len(body) // 2])
            await w.drain()
            replies = await self._drain_close(r)
            took = time.monotonic() - t0
            reasons = [o.get("reason") for o in replies if o["kind"] == "error"]
            outcome = "closed:" + "+".join(map(str, reasons)) if reasons else "closed"
            want = "closed:timeout" if mode == "stall-mid-frame" else "closed:bad-hello"
            self.tally.add(f"half-open-{mode}", outcome, want, f"after {took:.2f} s")
            return took
        finally:
            w.close()


def _run_sync(coro: Any) -> Any:
    """Run a coroutine that never waits (a StreamReader fed in advance) to completion."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("the simulated read waited")
