"""A hostile identity in a broker network with ``[identities]`` (docs/protocol.md §13; the fuzz test
``test_hostile_identities_cannot_touch_the_well_behaved`` in tests/network/test_fuzz.py).

docs/protocol.md §13 and DESIGN §2.6 "Ids belong to identities": every client id,
publisher id and sequence number a broker trusts is owned by the identity that
authenticated it, and nothing one identity sends can take over another's session or
suppress its publications (Fiege, Zeidler & Buchmann, "Security Aspects in
Publish/Subscribe Systems", DEBS 2004, §4: the authenticated principal is the unit of
access control, and of the budget). :class:`Mallory` is an identity with a valid token,
authorized filters and limits of its own (``max_connections``, ``max_subscriptions``,
``max_publish_rate``/``publish_burst``, ``max_queue_bytes``); one worker per broker tries,
at random and repeatedly (every family at least once per worker):

* **id takeovers** — a hello with a well-behaved client's raw id (its own session
  ``mallory/<id>``; the victim keeps its connection), with ``mallory/<id>``, with a
  prefix that names no identity (qualified as ``mallory/<prefix>/<id>``), with the
  qualified id ``alice/<id>`` (``forbidden``, closed: a WARNING names both identities),
  with ``on_behalf`` (``forbidden``, closed) and with a wrong token (``unauthorized``);
* **publisher ids and sequence numbers** — ``pub_id`` naming a well-behaved publisher
  (qualified or raw), a sibling connection of mallory, or replayed from a captured
  well-behaved notification (``forbidden``, connection kept); a ``client`` member naming
  someone else (``invalid-message``); its own id (raw or qualified) with huge and
  then lower sequence numbers (accepted: only mallory's own stream is affected);
  unauthorized publications and subscriptions (``forbidden``);
* **limits** — connections beyond ``max_connections`` (``limit``, closed),
  subscriptions over several connections beyond ``max_subscriptions`` (``limit``; a
  renewal and an ``unsub`` free no or one slot), publication floods over several
  connections (throttled: read no faster than the identity's rate, nothing lost, each
  publisher in order);
* **batches** (``pubs`` frames, docs/protocol.md §3.1) mixing items mallory may publish,
  events its filters do not authorize (``forbidden``), a victim's ``pub_id``, raw or
  qualified (``forbidden``), and malformed items (``invalid-message``): one error per
  refused item with the frame's ``ref`` and ``"index": i``, exactly the accepted items
  delivered (a watcher of mallory's), n tokens of the bucket per frame of n items (one of
  3 x burst items is held back); frames refused as a whole (one error, no index);
* **queued bytes** — connections that subscribe and read nothing next to connections
  that read, while a well-behaved publisher publishes padded events: once the backlogs of
  all mallory's connections together pass ``max_queue_bytes`` (before any stalled one
  alone got that much), the stalled ones are cut off as ``slow-consumer``, one by one,
  never a reader (the largest backlog goes; the log line names
  ``identities.mallory.max_queue_bytes``); the readers get everything, in order, and the
  budget is back to 0;
* **the HTTP gateway** — SSE streams beyond ``max_connections`` or
  ``max_subscriptions`` (429 ``limit``), unauthorized filters and events (403),
  no or a wrong token (401), POST floods (202 while the identity's bucket has tokens,
  then 429 ``rate-limited`` with ``Retry-After``).

Each worker is mallory's only one at its broker, so what the limits leave is known on
this side: the connections open and the subscriptions held (keyed like the broker's,
``(client id, model, filter)``) are kept here and compared with the daemon's counters
before every attack (which checks that the broker counts all of an identity's
connections together, and gives back what a closed connection held); the expected answer
of every frame follows from the frame and that standing alone, in the order the broker
checks (docs/protocol.md §6, §10, §12, §13: the hello's credential, ``on_behalf``, the
id's owner, then ``max_connections``; a frame's ``client`` and ``pub_id``, then the
authorized filters, then ``max_subscriptions``; an item of a batch as a ``pub`` of its
own), and what the identity's token bucket and queue budget hold is read from the daemon
in process. Each frame is followed by a ``stats`` probe, so the errors before the probe's answer are that frame's. Every notification a
session of mallory reads is kept (:class:`Received`) for the test's check that it is
covered by mallory's authorized filters and by a subscription of that client id.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import socket
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from pubsift.adapters.broker.client_limits import TokenBucket
from pubsift.adapters.broker.config import ClientIdentity
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.frames import FrameError, encode, hello, read_frame
from pubsift.core.model import Filter, FilterModel

from .fuzzing import Tally

READ_TIMEOUT = 10.0
PROBE = encode({"kind": "stats"})
#: "mallory's own token" (a default that no hostile token can be)
OWN: Any = object()
#: "no such member" (a ``ref`` may be any JSON value, null included)
ABSENT: Any = object()
#: the padding of the well-behaved publications that stalled connections let pile up
PAD = 8000
#: socket buffers of a stalled connection (the client's receive, the broker's send buffer),
#: so that the kernel does not absorb what the broker queues
STALL_BUFFER = 4096
#: publishes padded events at a broker as a well-behaved identity (recorded for the
#: oracle) and returns once that broker has processed them: (publisher id, their seqs)
Padded = Callable[[str, list[dict[str, Any]]], Awaitable[tuple[str, list[int]]]]


@dataclass
class Received:
    """One notification a client of ``identity`` received: the test checks it against
    the identity's authorized filters and the receiver's own subscriptions ``subs``
    (shared with whoever keeps them, so later subscriptions count too)."""

    identity: str
    receiver: str  # the client's id in the network
    broker: str
    model: str
    event: Any  # the wire form
    pub_id: tuple[Any, ...]
    named: Any  # the notify frame's ``client`` member (None: an SSE event)
    subs: list[tuple[str, Filter]] = field(repr=False)


@dataclass(eq=False)
class Session:
    """One raw connection of mallory's: its id in the network (``nid``) and the id its
    hello presented (the broker takes it for the client too)."""

    broker: str
    nid: str
    presented: str
    r: asyncio.StreamReader
    w: asyncio.StreamWriter
    seq: int = 0
    dead: bool = False
    #: what the broker's hello named in ``features`` (``pubs``: it reads batches)
    features: tuple[str, ...] = ()

    def own(self) -> str:
        """One of the names this connection may publish as."""
        return self.nid if self.presented == self.nid else self.presented


def authorized(
    models: Mapping[str, FilterModel], table: Mapping[str, tuple[str, ...]]
) -> dict[str, list[Filter]]:
    return {m: [models[m].parse_filter(t) for t in texts] for m, texts in table.items()}


def well_formed(pid: Any) -> bool:
    """A ``pub_id``'s form (docs/protocol.md §3): ``[publisher, n]``, n a positive integer."""
    return (
        isinstance(pid, list)
        and len(pid) == 2
        and isinstance(pid[0], str)
        and type(pid[1]) is int
        and pid[1] >= 1
    )


def tokens(bucket: TokenBucket) -> float:
    """The tokens in ``bucket`` now (refilled to this moment)."""
    _ = bucket.full  # (refills)
    return bucket.tokens


class Mallory:
    """The hostile identity ``identity`` against ``daemons``; see the module docstring.
    ``others``: the names of the other identities; ``victims()``: the ids in the network
    of well-behaved clients now connected, per broker; ``replays``: notify frames of
    well-behaved publications as their subscribers got them."""

    def __init__(
        self,
        rng: random.Random,
        daemons: list[BrokerDaemon],
        identity: ClientIdentity,
        others: set[str],
        models: Mapping[str, FilterModel],
        tally: Tally,
        victims: Callable[[], list[tuple[str, str]]],
        replays: list[dict[str, Any]],
        received: list[Received],
        padded: Padded | None = None,
    ) -> None:
        assert identity.token and identity.max_connections and identity.max_subscriptions
        assert identity.max_publish_rate and identity.publish_burst
        self.rng = rng
        self.daemons = {d.id: d for d in daemons}
        self.name = identity.name
        self.token = identity.token
        self.others = others
        self.models = models
        self.tally = tally
        self.victims = victims
        self.replays = replays
        self.received = received
        self.padded = padded
        self.max_connections = identity.max_connections
        self.max_subscriptions = identity.max_subscriptions
        self.rate = identity.max_publish_rate
        self.burst = identity.publish_burst
        self.max_queue_bytes = identity.max_queue_bytes
        self.may_subscribe = authorized(models, identity.subscribe)
        self.may_publish = authorized(models, identity.publish)
        #: per broker: the ids of mallory's connections open there, the subscriptions
        #: it holds there ((client id, model, filter), as the broker counts them)
        self.conns: dict[str, set[str]] = {b: set() for b in self.daemons}
        self.held: dict[str, set[tuple[str, str, Filter]]] = {b: set() for b in self.daemons}
        #: every subscription accepted per (broker, client id): what it may be notified of
        self.history: dict[tuple[str, str], list[tuple[str, Filter]]] = defaultdict(list)
        #: hellos naming another identity's id: each must log one WARNING naming both
        self.foreign_ids: Counter[str] = Counter()
        self.floods: list[str] = []  # one line per flood, for the summary
        self.held_back: list[str] = []  # one line per held-back pubs frame, for the summary
        self.stalls: list[str] = []  # one line per stall attack, for the summary
        #: the ids of mallory's connections the brokers cut off as slow consumers
        self.cuts: list[str] = []
        self.took: list[tuple[float, str]] = []  # seconds per attack
        self._n = 0
        self._decks: dict[str, list[str]] = {}
        self._http: aiohttp.ClientSession | None = None

    # -- helpers ------------------------------------------------------------------------
    def fresh(self, prefix: str = "m") -> str:
        self._n += 1
        return f"{prefix}-{self._n}"

    def draw(self, name: str, items: tuple[str, ...]) -> str:
        """The next of ``items`` from a shuffled deck per ``name`` (refilled when empty):
        random, and every one comes within ``len(items)`` draws."""
        deck = self._decks.setdefault(name, [])
        if not deck:
            deck.extend(items)
            self.rng.shuffle(deck)
        return deck.pop()

    def problem(self, what: str) -> None:
        self.tally.problems.append(what[:600])

    def covered(self, model: str, f: Filter) -> bool:
        m = self.models[model]
        return any(m.covers(a, f) for a in self.may_subscribe.get(model, ()))

    def allowed(self, model: str, wire_event: Any) -> bool:
        m = self.models[model]
        e = m.load_event(wire_event)
        return any(m.matches(a, e) for a in self.may_publish.get(model, ()))

    def event(self, allowed: bool, model: str | None = None) -> tuple[str, Any]:
        """(model, wire event) that mallory may (or may not) publish (of ``model``, if
        given); the allowed ones often match well-behaved subscriptions too (a = 3 and b
        nodes)."""
        rng = self.rng
        if allowed:
            choices: tuple[tuple[str, Any], ...] = (
                ("records", {"m": self._n, "a": 3}),
                ("records", {"a": 3, "b": rng.choice(("a", "b")), "c": rng.randrange(3)}),
                ("records", {"m": self._n}),
                ("xml", f'<a y="{rng.randrange(3)}"><b x="1"/><c x="2">ab</c></a>'),
            )
        else:
            choices = (
                ("records", {"a": 1, "b": "a", "c": 1}),
                ("records", {"b": "b"}),
                ("xml", "<a><b/><c x='1'/></a>"),
                ("xml", '<a><c x="1">ab</c></a>'),
            )
        model, raw = rng.choice([c for c in choices if model in (None, c[0])])
        m = self.models[model]
        return model, m.dump_event(m.parse_event(raw))

    async def settle(self, b: str, timeout: float = 5.0) -> None:
        """Wait until the broker's standing of mallory is this side's (closes take a
        moment to reach it); a difference that stays is a problem. With no connection of
        mallory's open, nothing is queued for it either (``max_queue_bytes``: the budget
        got back what each closed connection had queued)."""
        il = self.daemons[b].identity_limits(self.name)

        def same() -> bool:
            return (
                il.connections == len(self.conns[b])
                and set(il.held.held["sub"]) == set(self.held[b])
                and (il.budget is None or il.connections > 0 or il.budget.used == 0)
            )

        end = time.monotonic() + timeout
        while not same():
            if time.monotonic() > end:
                theirs = set(il.held.held["sub"])
                queued = il.budget.used if il.budget is not None else 0
                self.problem(
                    f"{b}: the broker counts {il.connections} connections of {self.name} "
                    f"and holds {len(theirs)} subscriptions ({queued} bytes queued); this "
                    f"side: {len(self.conns[b])} connections, {len(self.held[b])} "
                    f"subscriptions (only at the broker: "
                    f"{sorted(map(str, theirs - self.held[b]))[:3]}; only here: "
                    f"{sorted(map(str, self.held[b] - theirs))[:3]})"
                )
                self.held[b] = theirs
                return
            await asyncio.sleep(0.01)

    # -- sessions -----------------------------------------------------------------------
    def expect_hello(self, b: str, presented: str, token: Any, extra: dict) -> tuple[str, str]:
        """(expected outcome, id in the network) of a hello (docs/protocol.md §10, §13)."""
        if token != self.token:
            return "closed:unauthorized", ""
        if "on_behalf" in extra:
            return "closed:forbidden", ""
        head, sep, _ = presented.partition("/")
        if sep and head == self.name:
            nid = presented
        elif sep and head in self.others:
            return "closed:forbidden", ""
        else:
            nid = f"{self.name}/{presented}"
        if len(self.conns[b]) >= self.max_connections:
            return "closed:limit", nid
        return "session", nid

    async def open(
        self,
        b: str,
        kind: str,
        presented: str | None = None,
        token: Any = OWN,
        extra: dict | None = None,
        victim: tuple[str, str] | None = None,
        rcvbuf: int | None = None,
    ) -> Session | None:
        """A hello of mallory's at broker ``b``, its answer judged and tallied as
        ``kind``; the session if the broker took it. ``victim``: (broker, id) of the
        well-behaved client whose id it borrows, whose connection must stay as it was.
        ``rcvbuf``: the socket's receive buffer (set before it connects)."""
        d = self.daemons[b]
        presented = presented or self.fresh()
        token = self.token if token is OWN else token
        extra = extra or {}
        expected, nid = self.expect_hello(b, presented, token, extra)
        if expected == "session" and nid in self.conns[b]:
            return None  # (it would replace mallory's own session: not this test's matter)
        if expected == "closed:forbidden" and "on_behalf" not in extra:
            self.foreign_ids[presented.partition("/")[0]] += 1
        before = None
        if victim is not None:
            before = self.daemons[victim[0]].port.clients.get(victim[1])
        self.tally.sessions[kind] += 1
        if rcvbuf is None:
            r, w = await asyncio.open_connection("127.0.0.1", d.address.port, limit=1 << 20)
        else:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", d.address.port))
            r, w = await asyncio.open_connection(sock=sock, limit=1 << 20)
        creds = {} if token is None else {"token": token}
        w.write(encode(hello("client", presented, **creds, **extra)))
        try:
            first = await asyncio.wait_for(read_frame(r, 1 << 24), READ_TIMEOUT)
        except (ConnectionError, FrameError, TimeoutError) as exc:
            first = {"kind": "reset", "reason": type(exc).__name__}
        outcome = "closed"
        if first is not None and first.get("kind") == "hello":
            outcome = "session"
            if first.get("client") != nid:
                self.problem(f"{kind}: hello {presented!r} answered as {first.get('client')!r}")
            if (first.get("limits") or {}).get("max_connections") != self.max_connections:
                self.problem(f"{kind}: the hello's limits do not say max_connections: {first}")
        elif first is not None:
            outcome = f"closed:{first.get('reason')}"
            if first.get("kind") == "error" and not first.get("message"):
                self.problem(f"{kind}: an error without a message: {first}")
        self.tally.add(kind, outcome, expected, f"{b}: hello {presented!r} {extra}")
        if victim is not None:
            now = self.daemons[victim[0]].port.clients.get(victim[1])
            if now is not before or (now is not None and now.closing):
                self.problem(f"{kind}: {victim[1]}'s connection at {victim[0]} was touched")
        if outcome != "session":  # the broker closes the connection after its error
            try:
                while await asyncio.wait_for(read_frame(r, 1 << 24), READ_TIMEOUT) is not None:
                    self.problem(f"{kind}: a frame after the refusal of {presented!r}")
            except TimeoutError:
                self.problem(f"{kind}: the refused hello {presented!r}: the connection stays open")
            except (ConnectionError, FrameError):
                pass
            w.close()
            return None
        if expected != "session":  # (a problem already): let it go
            w.close()
            return None
        self.conns[b].add(nid)
        features = first.get("features") if first is not None else None
        named = tuple(features) if isinstance(features, list) else ()
        return Session(b, nid, presented, r, w, features=named)

    async def close(self, s: Session, unsubscribe: bool = True) -> None:
        """Close ``s``: unsubscribe first (``unsubscribe``), or vanish with what it holds
        (those keep counting at the broker until their leases run out)."""
        if unsubscribe and not s.dead:
            for key in sorted((k for k in self.held[s.broker] if k[0] == s.nid), key=str):
                await self.unsub(s, key[1], key[2])
        s.w.close()
        self.conns[s.broker].discard(s.nid)

    def vanish(self, b: str) -> bool:
        """Whether a session at ``b`` may go away without unsubscribing (rarely, and only
        while what mallory holds there leaves room for the other attacks)."""
        return self.rng.random() < 0.25 and len(self.held[b]) <= self.max_subscriptions // 2

    def _note(self, s: Session, obj: dict[str, Any]) -> None:
        pid = obj.get("pub_id")
        self.received.append(
            Received(
                self.name,
                s.nid,
                s.broker,
                str(obj.get("model")),
                obj.get("event"),
                tuple(pid) if isinstance(pid, list) else (pid,),
                obj.get("client"),
                self.history[(s.broker, s.nid)],
            )
        )

    async def _next(self, s: Session) -> dict[str, Any] | None:
        """The next frame other than a notification (kept) or a ping (answered)."""
        while True:
            obj = await asyncio.wait_for(read_frame(s.r, 1 << 24), READ_TIMEOUT)
            if obj is None:
                return None
            kind = obj.get("kind")
            if kind == "notify":
                self._note(s, obj)
            elif kind == "ping":
                s.w.write(encode({"kind": "pong"}))
            else:
                return obj

    async def ask(
        self, s: Session, kind: str, obj: dict[str, Any], expected: str, says: str = ""
    ) -> str:
        """Send ``obj`` and a probe; tally what came back before the probe's answer."""
        if s.dead:
            return "dead"
        s.w.write(encode(obj) + PROBE)
        errors: list[tuple[str, str]] = []
        while True:
            try:
                got = await self._next(s)
            except (ConnectionError, FrameError, TimeoutError) as exc:
                outcome = f"reset:{type(exc).__name__}"
                break
            if got is None:
                outcome = "closed" + (f":{errors[-1][0]}" if errors else "")
                break
            if got.get("kind") == "stats":
                outcome = "error:" + "+".join(r for r, _ in errors) if errors else "accepted"
                break
            if got.get("kind") == "error":
                errors.append((str(got.get("reason")), str(got.get("message", ""))))
            else:
                self.problem(f"{kind}: an unexpected {got.get('kind')} frame: {got}")
        if outcome.startswith(("closed", "reset")):
            s.dead = True
            self.conns[s.broker].discard(s.nid)
        self.tally.add(kind, outcome, expected, f"{s.broker} {s.nid}: {json.dumps(obj)[:300]}")
        if says and errors and not any(says in m for _, m in errors):
            self.problem(f"{kind}: the refusal does not mention {says!r}: {errors}")
        return outcome

    def expect_pub(self, s: Session, obj: dict[str, Any]) -> str:
        """docs/protocol.md §13, §10: the ``client`` member and the ``pub_id`` name this
        connection (its qualified or its presented id), then the authorized filters."""
        if obj.get("client", s.nid) not in (s.nid, s.presented):
            return "error:invalid-message"
        pid = obj["pub_id"]
        if not well_formed(pid):
            return "error:invalid-message"
        if pid[0] not in (s.nid, s.presented):
            return "error:forbidden"
        return "accepted" if self.allowed(obj["model"], obj["event"]) else "error:forbidden"

    async def pub(
        self,
        s: Session,
        kind: str,
        pub_id: Any,
        allowed: bool = True,
        says: str = "",
        **extra: Any,
    ) -> str:
        model, ev = self.event(allowed)
        obj = {"kind": "pub", "model": model, "event": ev, "pub_id": pub_id, **extra}
        return await self.ask(s, kind, obj, self.expect_pub(s, obj), says)

    async def sub(self, s: Session, kind: str, model: str, spec: str) -> str:
        f = self.models[model].parse_filter(spec)
        key = (s.nid, model, f)
        held = self.held[s.broker]
        if not self.covered(model, f):
            expected = "error:forbidden"
        elif key in held or len(held) < self.max_subscriptions:
            expected = "accepted"
        else:
            expected = "error:limit"
        got = await self.ask(s, kind, {"kind": "sub", "model": model, "filter": spec}, expected)
        if got == "accepted":
            held.add(key)
            self.history[(s.broker, s.nid)].append((model, f))
        return got

    async def unsub(self, s: Session, model: str, f: Filter) -> str:
        spec = self.models[model].dump_filter(f)
        got = await self.ask(
            s, "unsub", {"kind": "unsub", "model": model, "filter": spec}, "accepted"
        )
        if got == "accepted":
            self.held[s.broker].discard((s.nid, model, f))
        return got

    def authorized_filter(self) -> tuple[str, str]:
        return self.rng.choice(
            (
                ("records", "a > 1"),
                ("records", "a > 2"),
                ("records", 'a > 1 and b = "a"'),
                ("records", f"m = {self._n}"),
                ("records", "m exists"),
                ("xml", "//c"),
                ("xml", "//c[@x]"),
                ("xml", "/a/c"),
            )
        )

    def forbidden_filter(self) -> tuple[str, str]:
        return self.rng.choice(
            (
                ("records", "a > 0"),
                ("records", "c exists"),
                ("records", 'b prefix "a"'),
                ("records", "true"),
                ("records", "a > 0.5"),
                ("records", 'b = "a"'),
                ("xml", "//b"),
                ("xml", "//*"),
                ("xml", "/a"),
            )
        )

    # -- the attacks ----------------------------------------------------------------------
    def victim(self) -> tuple[str, str]:
        return self.rng.choice(self.victims())

    async def takeover(self, b: str) -> None:
        """A hello with a well-behaved client's id, raw or under a prefix that is not
        another identity's: mallory's own session, the victim untouched; then it
        publishes under that id's names (its own: accepted; the victim's: forbidden)."""
        rng = self.rng
        vb, vnid = self.victim()
        _, _, raw = vnid.partition("/")
        variant = self.draw("takeover", ("raw-id", "raw-id", "own-qualified", "unknown-prefix"))
        presented = {
            "raw-id": raw,
            "own-qualified": f"{self.name}/{raw}",
            "unknown-prefix": rng.choice(
                ("eve", "Alice", "alice ", "<gateway of b0>", "", "mallory2", "http-b0")
            )
            + f"/{raw}",
        }[variant]
        s = await self.open(b, f"takeover-{variant}", presented, victim=(vb, vnid))
        if s is None:
            return
        if rng.random() < 0.6:
            await self.sub(s, "sub-authorized", *self.authorized_filter())
        huge = rng.choice((10**9, 2**53 + 1, 2**62))
        names = {s.presented: "pub-as-presented-id", s.nid: "pub-as-own-qualified-id"}
        names.setdefault(raw, "pub-as-victims-raw-id")  # (when it is not the presented one)
        names[vnid] = "pub-as-victims-id"
        for name in rng.sample(sorted(names), len(names)):  # its names and the victim's
            kind = names[name]
            await self.pub(s, kind, [name, huge], says="pub_id" if "victims" in kind else "")
        await self.close(s, unsubscribe=not self.vanish(b))

    async def refused_hello(self, b: str) -> None:
        """Hellos the broker refuses: another identity's qualified id, ``on_behalf``, a
        wrong token; the victim's connection stays."""
        rng = self.rng
        vb, vnid = self.victim()
        owner, _, raw = vnid.partition("/")
        variant = self.draw("refused", ("qualified-id", "qualified-id", "on-behalf", "bad-token"))
        if variant == "qualified-id":
            presented = rng.choice((vnid, f"{rng.choice(sorted(self.others))}/{self.fresh()}"))
            await self.open(b, "takeover-qualified-id", presented, victim=(vb, vnid))
        elif variant == "on-behalf":
            behalf = rng.choice((owner, self.name, "nobody", "", None, 1, [owner]))
            await self.open(
                b,
                "hello-on-behalf",
                rng.choice((raw, self.fresh())),
                extra={"on_behalf": behalf},
                victim=(vb, vnid),
            )
        else:
            token = rng.choice((None, "", self.token + " ", self.token.upper(), self.token[:-1]))
            await self.open(b, "hello-bad-token", raw, token=token, victim=(vb, vnid))

    async def spoof(self, b: str) -> None:
        """Publisher ids and sequence numbers that are not this connection's, frames
        naming another client, replays, and what mallory's filters do not allow."""
        rng = self.rng
        s = await self.open(b, "session")
        if s is None:
            return
        sib = await self.open(b, "session")  # a sibling: mallory's, but another connection
        sibling = sib.nid if sib is not None else f"{self.name}/m-0"
        publishers = [
            v for _, v in self.victims() if v.partition("/")[2].startswith("p-") or "-pub-" in v
        ] or ["alice/p-b0"]
        for _ in range(rng.randrange(4, 10)):
            what = self.draw(
                "spoof",
                (
                    "pub-spoof-qualified",
                    "pub-spoof-raw",
                    "pub-spoof-sibling",
                    "pub-replay",
                    "pub-own-huge-seq",
                    "pub-own-lower-seq",
                    "pub-bad-seq",
                    "client-member-spoof",
                    "pub-unauthorized",
                    "sub-unauthorized",
                    "sub-authorized",
                ),
            )
            victim = rng.choice(publishers)
            if what == "pub-spoof-qualified":
                await self.pub(s, what, [victim, 10**9], says="pub_id")
            elif what == "pub-spoof-raw":
                await self.pub(s, what, [victim.partition("/")[2], 10**9], says="pub_id")
            elif what == "pub-spoof-sibling":
                await self.pub(s, what, [sibling, rng.randrange(1, 10**6)], says="pub_id")
            elif what == "pub-replay" and self.replays:
                frame = dict(rng.choice(self.replays))
                frame["kind"] = "pub"
                frame.pop("client", None)
                await self.ask(s, what, frame, self.expect_pub(s, frame), "pub_id")
            elif what == "pub-own-huge-seq":
                s.seq = max(s.seq, 10**9) + rng.randrange(1, 1000)
                await self.pub(s, what, [rng.choice((s.nid, s.own())), s.seq])
            elif what == "pub-own-lower-seq":
                await self.pub(s, what, [s.own(), rng.randrange(1, 5)])
            elif what == "pub-bad-seq":
                await self.pub(s, what, [s.own(), rng.choice((0, -1, "1", True, 1.5, None))])
            elif what == "client-member-spoof":
                s.seq += 1
                await self.pub(s, what, [s.own(), s.seq], client=rng.choice((victim, "x")))
            elif what == "pub-unauthorized":
                s.seq += 1
                await self.pub(s, what, [s.own(), s.seq], allowed=False)
            elif what == "sub-unauthorized":
                await self.sub(s, what, *self.forbidden_filter())
            elif what == "sub-authorized":
                await self.sub(s, what, *self.authorized_filter())
        await self.close(s, unsubscribe=not self.vanish(b))
        if sib is not None:
            await self.close(sib)

    async def exhaust_connections(self, b: str) -> None:
        """Connections up to ``max_connections`` and beyond (``limit``, closed); at the
        limit, another identity's id is still refused as ``forbidden`` (checked first)."""
        opened = []
        extra = self.rng.randrange(1, 3)
        for _ in range(self.max_connections - len(self.conns[b]) + extra):
            s = await self.open(b, "connection-exhaustion")
            if s is not None:
                opened.append(s)
        vb, vnid = self.victim()
        await self.open(b, "takeover-qualified-id", vnid, victim=(vb, vnid))
        for s in opened:
            await self.close(s)

    async def exhaust_subscriptions(self, b: str) -> None:
        """Subscriptions over several connections up to ``max_subscriptions`` and beyond
        (``limit``); a renewal at the limit takes no new slot, the same filter from
        another connection does, an ``unsub`` frees one."""
        rng = self.rng
        sessions = []
        for _ in range(min(3, self.max_connections - len(self.conns[b]))):
            s = await self.open(b, "session")
            if s is not None:
                sessions.append(s)
        if not sessions:
            return
        mine: list[tuple[Session, str]] = []
        for _ in range(self.max_subscriptions - len(self.held[b]) + rng.randrange(1, 3)):
            s = rng.choice(sessions)
            spec = f"m = {self.fresh('f').split('-')[1]}"
            if await self.sub(s, "sub-exhaustion", "records", spec) == "accepted":
                mine.append((s, spec))
        if mine:
            s, spec = rng.choice(mine)
            await self.sub(s, "sub-renewal", "records", spec)
            others = [x for x in sessions if x is not s]
            if others:
                await self.sub(rng.choice(others), "sub-same-filter-other-id", "records", spec)
            s, spec = mine.pop(rng.randrange(len(mine)))
            await self.unsub(s, "records", self.models["records"].parse_filter(spec))
            await self.sub(s, "sub-after-unsub", "records", f"m = {self.fresh('f')[2:]}")
        for s in sessions:
            await self.close(s, unsubscribe=not self.vanish(b))

    async def flood(self, b: str) -> None:
        """Publications as fast as the sockets take them over several connections: the
        broker reads them no faster than the identity's rate (throttled, not refused),
        and a watcher of mallory's gets each one, once, each publisher in order."""
        rng = self.rng
        room = self.max_connections - len(self.conns[b])
        if room < 2:
            return
        watcher = await self.open(b, "session")
        if watcher is None:
            return
        fid = self.fresh("flood")
        tag = int(fid.split("-")[1])
        watching = await self.sub(watcher, "sub-flood-watcher", "records", f"m = {tag}")
        pubs = [s for _ in range(min(3, room - 1)) if (s := await self.open(b, "session"))]
        per = rng.randrange(8, 16)
        total = per * len(pubs)
        m = self.models["records"]
        throttled = self.daemons[b].throttled
        t0 = time.monotonic()

        async def publish(s: Session) -> list[str]:
            data = b"".join(
                encode(
                    {
                        "kind": "pub",
                        "model": "records",
                        "event": m.dump_event(m.parse_event({"m": tag, "i": i})),
                        "pub_id": [s.own(), i],
                    }
                )
                for i in range(1, per + 1)
            )
            s.w.write(data + PROBE)
            errors = []
            while (got := await self._next(s)) is not None and got.get("kind") != "stats":
                errors.append(str(got.get("reason")))
            return errors

        results = await asyncio.gather(*(publish(s) for s in pubs), return_exceptions=True)
        took = time.monotonic() - t0
        for s, res in zip(pubs, results):
            outcome = repr(res) if isinstance(res, BaseException) else "+".join(res) or "accepted"
            for _ in range(per):
                self.tally.add("pub-flood", outcome, "accepted", f"{b} {s.nid}")
        least = (total - self.burst) / self.rate  # the bucket holds `burst` tokens at most
        if took < least - 0.05:
            self.problem(f"{b}: a flood of {total} took {took:.2f} s, less than {least:.2f} s")
        if total > self.burst and self.daemons[b].throttled == throttled:
            self.problem(f"{b}: a flood of {total} publications was not throttled")
        if watching == "accepted":
            # every notification of the flood was queued to the watcher (at the same
            # broker) before the publishers' probes were answered: the watcher's probe
            # is answered after them
            start = len(self.received)
            watcher.w.write(PROBE)
            with contextlib.suppress(ConnectionError, FrameError, TimeoutError):
                while (obj := await self._next(watcher)) is not None:
                    if obj.get("kind") == "stats":
                        break
            want = {s.nid: list(range(1, per + 1)) for s in pubs}
            got: dict[str, list[int]] = {s.nid: [] for s in pubs}
            for r in self.received[start:]:
                if r.receiver == watcher.nid and r.pub_id[0] in got:
                    got[r.pub_id[0]].append(int(r.pub_id[1]))
            outcome = "delivered-in-order" if got == want else "lost-or-reordered"
            self.tally.add("flood-watched", outcome, "delivered-in-order", f"{b}: {got}")
        self.floods.append(
            f"{b}: {total} over {len(pubs)} connections in {took:.2f} s "
            f"(rate {self.rate:g}/s, burst {self.burst}: at least {max(0.0, least):.2f} s)"
        )
        for s in (watcher, *pubs):
            await self.close(s)

    # -- batches of publications (docs/protocol.md §3.1) ----------------------------------
    def tagged(self, model: str, tag: int, i: int) -> Any:
        """A wire event of ``model`` that mallory may publish and that only the watcher of
        the batch attack ``tag`` subscribes to (``batch``: nobody else publishes that)."""
        if model == "records":
            raw: Any = {"m": tag, "batch": 1, "i": i, **({"a": 3} if i % 2 else {})}
        else:
            raw = f'<a y="{i}"><c x="{tag}"><batch/></c></a>'
        m = self.models[model]
        return m.dump_event(m.parse_event(raw))

    def expect_item(self, s: Session, model: str, item: Any) -> str:
        """The answer to one item of a ``pubs`` frame: as for a ``pub`` frame of its own
        (docs/protocol.md §3.1, §3, §13): a ``[pub_id, event]`` pair, a valid event, the
        ``pub_id``'s form, whose ``pub_id`` it is, then mallory's authorized filters."""
        if type(item) is not list or len(item) != 2:
            return "error:invalid-message"
        pid, ev = item
        m = self.models[model]
        try:
            e = m.load_event(ev)
        except Exception:  # (the broker refuses what a model cannot load, whatever it raises)
            return "error:invalid-message"
        if not well_formed(pid):
            return "error:invalid-message"
        if pid[0] not in (s.nid, s.presented):
            return "error:forbidden"
        ok = any(m.matches(a, e) for a in self.may_publish.get(model, ()))
        return "accepted" if ok else "error:forbidden"

    def item(self, s: Session, model: str, what: str, tag: int, victims: list[str]) -> Any:
        """One ``[pub_id, event]`` of a batch: ``own`` (mallory's id, raw or qualified, an
        event it may publish), ``unauthorized`` (its id, an event it may not), ``victims-id``
        (a well-behaved client's id, raw or qualified) or ``malformed``. The events of all
        but the unauthorized ones match the attack's watcher: only the own ones may come."""
        rng = self.rng
        if what == "own":
            s.seq += 1
            return [[rng.choice((s.nid, s.presented)), s.seq], self.tagged(model, tag, s.seq)]
        if what == "unauthorized":
            s.seq += 1
            return [[s.own(), s.seq], self.event(False, model)[1]]
        ev = self.tagged(model, tag, rng.randrange(100))
        if what == "victims-id":
            v = rng.choice(victims)
            return [[rng.choice((v, v.partition("/")[2])), rng.choice((1, 10**9))], ev]
        own = s.own()
        bad = rng.choice(("x", 42, None, {}) if model == "records" else ("<a", 5, {"xml": 5}, ""))
        return rng.choice(
            (
                "x",
                7,
                None,
                {"pub_id": [own, 1], "event": ev},
                [],
                [[own, 1]],
                [[own, 1], ev, 1],
                [[own, 0], ev],
                [[own, -1], ev],
                [[own, "3"], ev],
                [[own, True], ev],
                [[own, 1.5], ev],
                [[own], ev],
                [own, ev],
                [[7, 1], ev],
                [None, ev],
                [[own, 1], bad],
            )
        )

    async def exchange(self, s: Session, obj: dict[str, Any]) -> list[dict[str, Any]] | None:
        """Send ``obj`` and a probe: the frames that came before the probe's answer (None:
        the connection went)."""
        s.w.write(encode(obj) + PROBE)
        frames: list[dict[str, Any]] = []
        while True:
            try:
                got = await self._next(s)
            except (ConnectionError, FrameError, TimeoutError):
                got = None
            if got is None:
                s.dead = True
                self.conns[s.broker].discard(s.nid)
                return None
            if got.get("kind") == "stats":
                return frames
            frames.append(got)

    async def batches(self, b: str) -> None:
        """``pubs`` frames (docs/protocol.md §3.1) mixing items mallory may publish,
        events its filters do not authorize, victims' ``pub_id``\\ s and malformed items:
        each item is answered on its own (an ``error`` per refused one, with the frame's
        ``ref`` and ``"index": i``, its message starting ``pubs[i]:``), the accepted ones
        are published (a watcher of mallory's at the broker gets exactly those, in order)
        and a frame of n items takes n tokens of the identity's bucket (one of 3 x burst
        is held back until its tokens are there). Now and then a frame refused as a whole
        (a ``client`` naming someone else, no list of items, an unknown model): one error,
        no index, nothing of it published."""
        rng = self.rng
        if self.max_connections - len(self.conns[b]) < 2:
            return
        watcher = await self.open(b, "session")
        if watcher is None:
            return
        s = await self.open(b, "session")
        if s is None:
            await self.close(watcher)
            return
        if "pubs" not in s.features:
            self.problem(f"{b}: the broker's hello does not say 'pubs' in its features")
        tag = int(self.fresh("pubs").split("-")[1])
        watching = True
        for model, spec in (
            ("records", f"m = {tag} and batch exists"),
            ("xml", f'//c[@x="{tag}"]/batch'),
        ):
            got = await self.sub(watcher, "sub-pubs-watcher", model, spec)
            watching = watching and got == "accepted"
        victims = [v for _, v in self.victims()] or ["alice/p-b0"]
        d = self.daemons[b]
        bucket = d.identity_limits(self.name).held.bucket
        assert bucket is not None
        want: list[tuple[str, int]] = []  # the pub_ids the watcher must get, in order
        # (a frame's tokens are mallory's time: one or two frames; the deck makes sure
        # that the first attack of each worker leaves no kind out)
        for _ in range(rng.randrange(1, 3)):
            if s.dead:
                break
            size = self.draw("pubs-size", ("small", "big", "refused"))
            ref = rng.choice((self._n, f"r-{self._n}", [self._n, "x"], {"r": self._n}, None))
            if size == "refused":
                await self.refused_batch(s, tag, ref, victims)
                continue
            model = rng.choice(("records", "records", "xml"))
            n = 3 * self.burst if size == "big" else rng.randrange(4, 7)
            whats = ["own", "unauthorized", "victims-id", "malformed"]
            whats += rng.choices(whats, (6 if size == "big" else 2, 1, 1, 1), k=n - len(whats))
            rng.shuffle(whats)
            items = [self.item(s, model, what, tag, victims) for what in whats]
            expected = [self.expect_item(s, model, x) for x in items]
            frame: dict[str, Any] = {"kind": "pubs", "model": model, "pubs": items, "ref": ref}
            if rng.random() < 0.3:
                frame["client"] = rng.choice((s.nid, s.presented))
            throttled = d.throttled
            t0, before = time.monotonic(), tokens(bucket)
            answers = await self.exchange(s, frame)
            after = tokens(bucket)
            took = time.monotonic() - t0  # (read after the bucket: it refilled no longer)
            what = f"{b} {s.nid} pubs of {n} ({model}, ref {ref!r})"
            if answers is None:
                for kind in whats:
                    self.tally.add(f"pubs-{kind}", "closed", "open", what)
                break
            by_index: dict[int, dict[str, Any]] = {}
            for err in answers:
                i = err.get("index")
                if err.get("kind") != "error" or type(i) is not int or not 0 <= i < n:
                    self.problem(f"{what}: an answer that names no item: {err}")
                    continue
                if i in by_index:
                    self.problem(f"{what}: a second answer about pubs[{i}]: {err}")
                by_index[i] = err
                if err.get("ref", ABSENT) != ref:
                    self.problem(f"{what}: an error without the frame's ref: {err}")
                if not str(err.get("message", "")).startswith(f"pubs[{i}]:"):
                    self.problem(f"{what}: the message does not start with pubs[{i}]: {err}")
            if list(by_index) != sorted(by_index):
                self.problem(f"{what}: the items were not answered in order: {list(by_index)}")
            for i, (kind, item, exp) in enumerate(zip(whats, items, expected, strict=True)):
                err = by_index.get(i)
                outcome = "accepted" if err is None else f"error:{err.get('reason')}"
                self.tally.add(f"pubs-{kind}", outcome, exp, f"{what}: [{i}] {json.dumps(item)}")
                if exp == "accepted":
                    want.append((s.nid, item[0][1]))
                if kind == "victims-id" and err is not None and "pub_id" not in err["message"]:
                    self.problem(f"{what}: the refusal does not mention pub_id: {err}")
            # the bucket held `before` tokens and got `rate` per second since: had the
            # frame taken fewer than n, more would be left (and it waited for the missing)
            taken = before + self.rate * took - after
            least = (n - before) / self.rate
            ok = taken >= n - 0.05 and took >= least - 0.02
            self.tally.add(
                "pubs-tokens",
                "n-tokens" if ok else "fewer",
                "n-tokens",
                f"{what}: {taken:.2f} tokens taken, {took:.3f} s (at least {least:.3f} s)",
            )
            if n > self.burst:
                held = d.throttled > throttled and took >= least - 0.02
                self.tally.add("pubs-held", "held" if held else "not-held", "held", what)
                self.held_back.append(f"{b}: {n} items held {took:.2f} s (at least {least:.2f} s)")
        if watching and not watcher.dead:
            # everything published was queued to the watcher before the probes of `s`
            # were answered: the watcher's probe is answered after it
            start = len(self.received)
            await self.exchange(watcher, {"kind": "stats"})
            got_ids = [
                (str(r.pub_id[0]), int(r.pub_id[1]))
                for r in self.received[start:]
                if r.receiver == watcher.nid
            ]
            outcome = "delivered-exactly" if got_ids == want else "lost-or-extra"
            lost = [x for x in want if x not in got_ids]
            extra = [x for x in got_ids if x not in want]
            self.tally.add(
                "pubs-watched",
                outcome,
                "delivered-exactly",
                f"{b}: of {len(want)}, lost {lost}, not published {extra}"
                + ("" if lost or extra else f" (out of order: {got_ids})"),
            )
        for x in (s, watcher):
            await self.close(x)

    async def refused_batch(self, s: Session, tag: int, ref: Any, victims: list[str]) -> None:
        """A ``pubs`` frame refused as a whole (its items are mallory's own): ``client``
        naming someone else (docs/protocol.md §3), no list of 1-10,000 items (§3.1), an
        unknown model: one ``invalid-message`` with the frame's ``ref`` and no index."""
        rng = self.rng
        variant = self.draw("pubs-refused", ("client", "client", "no-list", "empty", "model"))
        s.seq += 1
        item = [[s.own(), s.seq], self.tagged("records", tag, s.seq)]
        frame: dict[str, Any] = {"kind": "pubs", "model": "records", "pubs": [item], "ref": ref}
        if variant == "client":
            frame["client"] = rng.choice((rng.choice(victims), "x", f"{self.name}/m-0"))
        elif variant == "no-list":
            frame["pubs"] = rng.choice(({"0": item}, "x", None, 5, item[0][1]))
        elif variant == "empty":
            frame["pubs"] = []
        else:
            frame["model"] = rng.choice(("concepts", "nope", None, 1))
        answers = await self.exchange(s, frame)
        what = f"{s.broker} {s.nid}: {json.dumps(frame)[:200]}"
        if answers is None:
            self.tally.add("pubs-refused", "closed", "error:invalid-message", what)
            return
        reasons = "+".join(str(a.get("reason")) for a in answers)
        self.tally.add(
            "pubs-refused",
            f"error:{reasons}" if answers else "accepted",
            "error:invalid-message",
            what,
        )
        for a in answers:
            if a.get("ref", ABSENT) != ref or "index" in a:
                self.problem(f"pubs-refused: the error of the frame: {a} ({what})")

    # -- queued bytes (docs/protocol.md §12) ------------------------------------------------
    async def reclaim(self, b: str, need: int) -> None:
        """Room for ``need`` new subscriptions at ``b``: what a session that went away
        without unsubscribing held counts until its lease runs out; a new connection
        under its id takes the session over (§13) and unsubscribes."""
        while len(self.held[b]) + need > self.max_subscriptions:
            gone = sorted({k[0] for k in self.held[b] if k[0] not in self.conns[b]})
            if not gone or len(self.conns[b]) >= self.max_connections:
                return
            s = await self.open(b, "session-reclaim", gone[0])
            if s is None:
                return
            await self.close(s)

    async def drain(self, s: Session) -> list[dict[str, Any]]:
        """Read what a connection that was cut off still gets, to its end (notifications
        kept; its pings, sent while it read nothing, unanswered)."""
        s.w.transport.resume_reading()  # type: ignore[attr-defined]
        frames: list[dict[str, Any]] = []
        with contextlib.suppress(ConnectionError, FrameError, TimeoutError):
            while (
                obj := await asyncio.wait_for(read_frame(s.r, 1 << 24), READ_TIMEOUT)
            ) is not None:
                if obj.get("kind") == "notify":
                    self._note(s, obj)
                frames.append(obj)
        s.dead = True
        self.conns[s.broker].discard(s.nid)
        s.w.close()
        return frames

    async def read_on(self, s: Session) -> list[dict[str, Any]]:
        """Keep reading ``s`` (notifications kept, pings answered) until the answer of a
        probe, or its end: the other frames."""
        frames: list[dict[str, Any]] = []
        obj: dict[str, Any] | None = None
        try:
            while (obj := await self._next(s)) is not None and obj.get("kind") != "stats":
                frames.append(obj)
        except (ConnectionError, FrameError, TimeoutError) as exc:
            frames.append({"kind": f"reset:{type(exc).__name__}"})
            obj = None
        if obj is None:
            frames.append({"kind": "closed"})
            s.dead = True
            self.conns[s.broker].discard(s.nid)
        return frames

    async def stall(self, b: str) -> None:
        """Connections of mallory's that subscribe to padded publications and then read
        nothing (small socket buffers at both ends, so that the broker queues what they
        do not read), next to connections of its that subscribe to the same and read,
        while a well-behaved publisher publishes padded events at this broker. The
        identity's ``max_queue_bytes`` counts what waits for all its connections together
        (docs/protocol.md §12): once that passes the limit — before any stalled connection
        alone got as much — a stalled one is cut off as ``slow-consumer`` (the log line
        naming ``identities.NAME.max_queue_bytes``), never a reader (the broker cuts the
        largest backlog); each stalled one in its turn. The readers get every publication,
        in order; what a stalled one got is a prefix, then the reason; the budget is back
        to 0 once the stalled ones are gone."""
        if self.padded is None or self.max_queue_bytes is None:
            return
        rng = self.rng
        d = self.daemons[b]
        room = self.max_connections - len(self.conns[b])
        if room < 3:
            return
        n_stalled = min(int(self.draw("stalled", ("2", "3"))), room - 1)
        n_readers = rng.randint(1, min(2, room - n_stalled))
        await self.reclaim(b, n_stalled + n_readers)
        if len(self.held[b]) + n_stalled + n_readers > self.max_subscriptions:
            return
        limit = self.max_queue_bytes
        budget = d.identity_limits(self.name).budget
        assert budget is not None and budget.limit == limit, budget
        tag = int(self.fresh("stall").split("-")[1])
        # this attack's padded publications only (the other brokers' stall attacks publish
        # theirs meanwhile, and their notifications would count in this budget too)
        spec = f"pad exists and q = {tag}"
        roles = ["stalled"] * n_stalled + ["reader"] * n_readers
        rng.shuffle(roles)  # (the broker delivers to its clients in some order)
        stalled: list[tuple[Session, Any]] = []
        readers: list[tuple[Session, Any, asyncio.Task[list[dict[str, Any]]]]] = []
        for role in roles:
            s = await self.open(b, "session", rcvbuf=STALL_BUFFER if role == "stalled" else None)
            if s is None:
                continue
            if await self.sub(s, f"sub-{role}", "records", spec) != "accepted":
                await self.close(s)
                continue
            conn = d.port.clients[s.nid]
            if role == "stalled":
                s.w.transport.pause_reading()  # type: ignore[attr-defined]
                sock = conn.writer.transport.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, STALL_BUFFER)
                stalled.append((s, conn))
            else:
                readers.append((s, conn, asyncio.ensure_future(self.read_on(s))))
        lines: list[str] = []
        nids = {s.nid for s, _ in stalled} | {s.nid for s, _, _ in readers}

        class Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                text = record.getMessage()
                if "slow consumer" in text and text.split(" ")[1] in nids:
                    lines.append(text)

        handler = Keep(logging.INFO)
        logger = logging.getLogger("pubsift")
        logger.addHandler(handler)
        drains: dict[str, asyncio.Task[list[dict[str, Any]]]] = {}
        try:
            publisher, seqs = "", []
            sent = 0  # bytes of the notifications queued to each stalled connection so far
            first: tuple[int, int] | None = None  # (sent, in the chunk) at the first cut
            peak = 0
            flagged: set[str] = set()
            i = 0
            while stalled and len(drains) < len(stalled) and sent < 3 * limit:
                events = [
                    {"pad": "x" * PAD, "q": tag, "i": i + k, "b": "ab", "c": 1} for k in range(2)
                ]
                i += len(events)
                publisher, got = await self.padded(b, events)
                seqs += got
                chunk = sum(
                    len(
                        encode(
                            {
                                "kind": "notify",
                                "client": stalled[0][0].nid,
                                "model": "records",
                                "event": ev,
                                "pub_id": [publisher, seq],
                            }
                        )
                    )
                    + 32
                    for ev, seq in zip(events, got, strict=True)
                )
                sent += chunk
                peak = max(peak, budget.used)
                for s, conn in stalled:
                    if s.nid not in drains and conn.closing:
                        if first is None:
                            first = (sent, chunk)
                        drains[s.nid] = asyncio.ensure_future(self.drain(s))
                for s, conn, _ in readers:
                    if conn.closing and s.nid not in flagged:
                        flagged.add(s.nid)
                        self.problem(f"{b}: the reader {s.nid} was cut off, not a stalled one")
            # the first cut: the stalled ones' backlogs together (and the readers', a chunk
            # at most each, and a chunk in the transport of the one sent to) passed the
            # limit, while none had been sent as much as the limit alone
            if first is not None:
                at, chunk = first
                together = n_stalled * at + (n_readers + 1) * chunk >= limit and at < limit
                self.tally.add(
                    "queue-first-cut",
                    "together" if together else "alone",
                    "together",
                    f"{b}: the first cut after {at} bytes to each of {n_stalled} stalled "
                    f"connections (limit {limit})",
                )
            for s, _ in stalled:
                task = drains.get(s.nid)
                if task is None:
                    self.tally.add("queue-stalled", "not-cut", "closed:slow-consumer", b)
                    s.w.close()
                    s.dead = True
                    self.conns[b].discard(s.nid)
                    continue
                frames = await task
                last = frames[-1] if frames else {}
                outcome = f"closed:{last.get('reason')}" if last.get("kind") == "error" else "?"
                self.tally.add("queue-stalled", outcome, "closed:slow-consumer", f"{b}: {last}")
                got_seqs = [
                    f["pub_id"][1]
                    for f in frames
                    if f.get("kind") == "notify" and f.get("pub_id", [""])[0] == publisher
                ]
                if got_seqs != seqs[: len(got_seqs)]:
                    self.problem(f"{b}: {s.nid} got {got_seqs} of {seqs} before the cut")
                if {f.get("kind") for f in frames[:-1]} - {"notify", "ping"}:
                    self.problem(f"{b}: {s.nid} got {[f.get('kind') for f in frames]}")
                mine = [x for x in lines if x.split(" ")[1] == s.nid]
                key = f"(identities.{self.name}.max_queue_bytes)"
                if len(mine) != 1 or key not in mine[0]:
                    self.problem(f"{b}: the slow-consumer lines of {s.nid}: {mine}")
                self.cuts.append(s.nid)
            for s, _, _ in readers:
                if any(x.split(" ")[1] == s.nid for x in lines):
                    self.problem(f"{b}: a slow-consumer line names the reader {s.nid}: {lines}")
            # the stalled ones are gone (and counted as gone): nothing of theirs is queued
            await self.settle(b)
            end = time.monotonic() + 5
            while budget.used and time.monotonic() < end:
                await asyncio.sleep(0.01)
            outcome = "released" if budget.used == 0 else f"held:{budget.used}"
            self.tally.add("queue-budget", outcome, "released", f"{b}: {n_readers} readers open")
            for s, conn, task in readers:
                if not s.dead:
                    s.w.write(PROBE)
                frames = await task
                got_seqs = [
                    r.pub_id[1]
                    for r in self.received
                    if r.receiver == s.nid and r.pub_id[0] == publisher
                ]
                ok = got_seqs == seqs and not frames and not conn.closing
                self.tally.add(
                    "queue-reader",
                    "delivered-all" if ok else "lost",
                    "delivered-all",
                    f"{b}: {s.nid} got {len(got_seqs)} of {len(seqs)}; {frames[:3]}",
                )
            self.stalls.append(
                f"{b}: {n_stalled} stalled + {n_readers} reading, limit {limit >> 10} KiB: "
                f"the first cut after {(first or (0, 0))[0] >> 10} KiB to each, all after "
                f"{sent >> 10} KiB ({len(seqs)} publications); the budget's peak "
                f"{peak >> 10} KiB"
            )
        finally:
            logger.removeHandler(handler)
            for t in drains.values():
                if not t.done():
                    t.cancel()
        for s, _, _ in readers:
            await self.close(s)
        # what the stalled ones held counts until its lease runs out: a new connection
        # under each id unsubscribes
        for s, _ in stalled:
            again = await self.open(b, "session-reclaim", s.nid)
            if again is not None:
                await self.close(again)

    # -- the HTTP gateway -----------------------------------------------------------------
    def _auth(self, token: Any = OWN) -> dict[str, str]:
        token = self.token if token is OWN else token
        return {} if token is None else {"Authorization": f"Bearer {token}"}

    async def _stream(
        self, b: str, model: str, spec: str, token: Any = OWN
    ) -> tuple[str, aiohttp.ClientResponse, str]:
        """Open an SSE stream: (outcome, response, id in the network if 200)."""
        http = self._http
        assert http is not None
        base = self.daemons[b].gateway.url  # type: ignore[union-attr]
        resp = await asyncio.wait_for(
            http.get(
                f"{base}/subscribe/{model}", params={"filter": spec}, headers=self._auth(token)
            ),
            READ_TIMEOUT,
        )
        if resp.status != 200:
            try:
                body = await asyncio.wait_for(resp.json(), READ_TIMEOUT)
            except (aiohttp.ContentTypeError, json.JSONDecodeError):
                body = {}
            resp.close()
            return f"http:{resp.status}:{body.get('error')}", resp, ""
        line = (await asyncio.wait_for(resp.content.readline(), READ_TIMEOUT)).decode()
        nid = line.removeprefix(": subscribed as ").split(" at ")[0]
        if not nid.startswith(f"{self.name}/http-{b}-sub-"):
            self.problem(f"sse: the stream's first line is {line!r}")
        return "http:200", resp, nid

    async def _read_stream(self, b: str, nid: str, resp: aiohttp.ClientResponse) -> None:
        """Keep what an SSE stream of mallory's brings (until it is closed)."""
        ev: dict[str, str] = {}
        with contextlib.suppress(aiohttp.ClientError, asyncio.CancelledError, ConnectionError):
            while line := await resp.content.readline():
                text = line.decode().rstrip("\n")
                if text == "":
                    if "data" in ev:
                        data = json.loads(ev["data"])
                        self.received.append(
                            Received(
                                self.name,
                                nid,
                                b,
                                data["model"],
                                data["event"],
                                (data["publisher"], data["seq"]),
                                None,
                                self.history[(b, nid)],
                            )
                        )
                    ev = {}
                elif not text.startswith(":"):
                    k, _, v = text.partition(":")
                    ev[k] = v.removeprefix(" ")

    async def gateway_streams(self, b: str) -> None:
        """SSE streams, each one of mallory's connections with one subscription, until
        the gateway answers 429 ``limit`` (max_connections or max_subscriptions)."""
        rng = self.rng
        open_: list[tuple[str, aiohttp.ClientResponse, asyncio.Task, tuple]] = []
        for _ in range(self.max_connections - len(self.conns[b]) + rng.randrange(1, 3)):
            model, spec = self.authorized_filter()
            f = self.models[model].parse_filter(spec)
            conns, held = len(self.conns[b]), len(self.held[b])
            full = conns >= self.max_connections or held >= self.max_subscriptions
            expected = "http:429:limit" if full else "http:200"
            self.tally.sessions["sse"] += 1
            outcome, resp, nid = await self._stream(b, model, spec)
            self.tally.add("sse-stream", outcome, expected, f"{b}: {conns} open, {held} held")
            if outcome == "http:200":
                self.conns[b].add(nid)
                key = (nid, model, f)
                self.held[b].add(key)
                self.history[(b, nid)].append((model, f))
                task = asyncio.ensure_future(self._read_stream(b, nid, resp))
                open_.append((nid, resp, task, key))
            elif full:  # the refused stream's connection is let go: wait for the broker
                await self.settle(b)
        await asyncio.sleep(0.2)  # a few notifications
        for nid, resp, task, key in open_:
            resp.close()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            self.conns[b].discard(nid)
            self.held[b].discard(key)  # the gateway's client unsubscribes when it goes

    async def gateway_refusals(self, b: str) -> None:
        """Streams and POSTs the gateway refuses: 403 for filters and events that
        mallory's authorized filters do not allow, 401 without a valid token."""
        http = self._http
        assert http is not None
        base = self.daemons[b].gateway.url  # type: ignore[union-attr]
        rng = self.rng
        variants = ("sse-forbidden", "sse-bad-token", "post-forbidden", "post-bad-token")
        for variant in rng.sample(variants, len(variants)):
            bad = "bad-token" in variant
            token = rng.choice((None, "", "nope", self.token[:-1])) if bad else OWN
            expected = "http:401:unauthorized" if "bad-token" in variant else "http:403:forbidden"
            if variant.startswith("sse"):
                model, spec = self.authorized_filter() if bad else self.forbidden_filter()
                outcome, resp, _ = await self._stream(b, model, spec, token)
                if outcome == "http:200":  # (a problem already): nothing of it stays
                    resp.close()
            else:
                model, ev = self.event(allowed=bad)
                data = ev["xml"] if model == "xml" and isinstance(ev, dict) else ev
                body = data if isinstance(data, str) else json.dumps(data)
                async with http.post(
                    f"{base}/publish/{model}", data=body.encode(), headers=self._auth(token)
                ) as resp:
                    answer = await resp.json()
                outcome = f"http:{resp.status}:{answer.get('error')}"
            self.tally.add(variant, outcome, expected, f"{b}: {variant}")
        await self.settle(b)

    async def gateway_posts(self, b: str) -> None:
        """Waves of concurrent POSTs: 202 while mallory's bucket has tokens (the same
        bucket as its socket publications at this broker), then 429 ``rate-limited``
        with Retry-After (waves until one comes: a loaded machine answers slowly, and the
        bucket refills meanwhile); each 202 names mallory's gateway publisher, and no
        more are taken than the bucket can hold and refill."""
        http = self._http
        assert http is not None
        base = self.daemons[b].gateway.url  # type: ignore[union-attr]
        tag = self._n

        async def post(i: int) -> tuple[int, dict[str, Any], str | None]:
            body = json.dumps({"m": tag, "i": i, **({"a": 3} if i % 3 == 0 else {})})
            async with http.post(
                f"{base}/publish/records", data=body.encode(), headers=self._auth()
            ) as resp:
                return resp.status, await resp.json(), resp.headers.get("Retry-After")

        answers: list[tuple[int, dict[str, Any], str | None]] = []
        t0 = time.monotonic()
        for _ in range(5):
            wave = self.burst + self.rng.randrange(10, 20)
            answers += await asyncio.gather(*(post(len(answers) + i) for i in range(wave)))
            if any(status == 429 for status, _, _ in answers):
                break
        took = time.monotonic() - t0
        ok = 0
        for status, answer, retry in answers:
            outcome = f"http:{status}" + (f":{answer.get('error')}" if status != 202 else "")
            self.tally.add("post-flood", outcome)
            if status == 202:
                ok += 1
                if not str(answer.get("publisher")).startswith(f"{self.name}/http-{b}-pub-"):
                    self.problem(f"post: answered as publisher {answer.get('publisher')!r}")
            elif status == 429 and answer.get("error") == "rate-limited":
                if retry is None or int(retry) < 1:
                    self.problem(f"post: a 429 without Retry-After: {answer}")
            else:
                self.problem(f"post-flood: {status} {answer}")
        most = self.burst + self.rate * took + 1
        if ok > most:
            n = len(answers)
            self.problem(f"post: {ok} of {n} POSTs in {took:.2f} s accepted (at most {most:.1f})")

    # -- the workers ----------------------------------------------------------------------
    async def worker(self, b: str, rounds: int) -> None:
        """``rounds`` attacks at broker ``b`` (each family first once, in random order)."""
        attacks: list[tuple[Callable[[str], Any], float]] = [
            (self.takeover, 4),
            (self.refused_hello, 3),
            (self.spoof, 4),
            (self.exhaust_connections, 1),
            (self.exhaust_subscriptions, 1),
            (self.flood, 1),
            (self.batches, 0.5),
            (self.stall, 0),  # (once: what it checks does not change from run to run)
        ]
        if self.daemons[b].gateway is not None:
            attacks += [
                (self.gateway_streams, 1),
                (self.gateway_posts, 1),
                (self.gateway_refusals, 1),
            ]
        order = [a for a, _ in attacks]
        self.rng.shuffle(order)
        while len(order) < rounds:
            order += self.rng.choices([a for a, _ in attacks], [w for _, w in attacks])
        for attack in order:
            await self.settle(b)
            t0 = time.monotonic()
            await attack(b)
            self.took.append((time.monotonic() - t0, f"{attack.__name__}@{b}"))
        await self.settle(b)

    async def run(self, rounds: int) -> None:
        async with aiohttp.ClientSession() as http:
            self._http = http
            try:
                async with asyncio.TaskGroup() as tg:
                    for b in self.daemons:
                        tg.create_task(self.worker(b, rounds))
            finally:
                self._http = None
