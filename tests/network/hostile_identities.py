"""A hostile identity in a broker network with ``[identities]`` (issue 35; the fuzz test
``test_hostile_identities_cannot_touch_the_well_behaved`` in tests/network/test_fuzz.py).

docs/protocol.md §13 and DESIGN §2.6 "Ids belong to identities": every client id,
publisher id and sequence number a broker trusts is owned by the identity that
authenticated it, and nothing one identity sends can take over another's session or
suppress its publications (Fiege, Zeidler & Buchmann, "Security Aspects in
Publish/Subscribe Systems", DEBS 2004, §4: the authenticated principal is the unit of
access control, and of the budget). :class:`Mallory` is an identity with a valid token,
authorized filters and limits of its own (``max_connections``, ``max_subscriptions``,
``max_publish_rate``/``publish_burst``); one worker per broker tries, at random and
repeatedly (every family at least once per worker):

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
authorized filters, then ``max_subscriptions``). Each frame is followed by a ``stats``
probe, so the errors before the probe's answer are that frame's. Every notification a
session of mallory reads is kept (:class:`Received`) for the test's check that it is
covered by mallory's authorized filters and by a subscription of that client id.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from pubsift.adapters.broker.config import Identity
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.frames import FrameError, encode, hello, read_frame
from pubsift.core.model import Filter, FilterModel

from .fuzzing import Tally

READ_TIMEOUT = 10.0
PROBE = encode({"kind": "stats"})
#: "mallory's own token" (a default that no hostile token can be)
OWN: Any = object()


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

    def own(self) -> str:
        """One of the names this connection may publish as."""
        return self.nid if self.presented == self.nid else self.presented


def authorized(
    models: Mapping[str, FilterModel], table: Mapping[str, tuple[str, ...]]
) -> dict[str, list[Filter]]:
    return {m: [models[m].parse_filter(t) for t in texts] for m, texts in table.items()}


class Mallory:
    """The hostile identity ``identity`` against ``daemons``; see the module docstring.
    ``others``: the names of the other identities; ``victims()``: the ids in the network
    of well-behaved clients now connected, per broker; ``replays``: notify frames of
    well-behaved publications as their subscribers got them."""

    def __init__(
        self,
        rng: random.Random,
        daemons: list[BrokerDaemon],
        identity: Identity,
        others: set[str],
        models: Mapping[str, FilterModel],
        tally: Tally,
        victims: Callable[[], list[tuple[str, str]]],
        replays: list[dict[str, Any]],
        received: list[Received],
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
        self.max_connections = identity.max_connections
        self.max_subscriptions = identity.max_subscriptions
        self.rate = identity.max_publish_rate
        self.burst = identity.publish_burst
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

    def event(self, allowed: bool) -> tuple[str, Any]:
        """(model, wire event) that mallory may (or may not) publish; the allowed ones
        often match well-behaved subscriptions too (a = 3 and b nodes)."""
        rng = self.rng
        if allowed:
            model, raw = rng.choice(
                (
                    ("records", {"m": self._n, "a": 3}),
                    ("records", {"a": 3, "b": rng.choice(("a", "b")), "c": rng.randrange(3)}),
                    ("records", {"m": self._n}),
                    ("xml", f'<a y="{rng.randrange(3)}"><b x="1"/><c x="2">ab</c></a>'),
                )
            )
        else:
            model, raw = rng.choice(
                (
                    ("records", {"a": 1, "b": "a", "c": 1}),
                    ("records", {"b": "b"}),
                    ("xml", "<a><b/><c x='1'/></a>"),
                )
            )
        m = self.models[model]
        return model, m.dump_event(m.parse_event(raw))

    async def settle(self, b: str, timeout: float = 5.0) -> None:
        """Wait until the broker's standing of mallory is this side's (closes take a
        moment to reach it); a difference that stays is a problem."""
        il = self.daemons[b].identity_limits(self.name)

        def same() -> bool:
            return il.connections == len(self.conns[b]) and set(il.held.held["sub"]) == set(
                self.held[b]
            )

        end = time.monotonic() + timeout
        while not same():
            if time.monotonic() > end:
                theirs = set(il.held.held["sub"])
                self.problem(
                    f"{b}: the broker counts {il.connections} connections of {self.name} "
                    f"and holds {len(theirs)} subscriptions; this side: {len(self.conns[b])} "
                    f"connections, {len(self.held[b])} subscriptions (only at the broker: "
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
    ) -> Session | None:
        """A hello of mallory's at broker ``b``, its answer judged and tallied as
        ``kind``; the session if the broker took it. ``victim``: (broker, id) of the
        well-behaved client whose id it borrows, whose connection must stay as it was."""
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
        r, w = await asyncio.open_connection("127.0.0.1", d.address.port, limit=1 << 20)
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
        return Session(b, nid, presented, r, w)

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
        if not (
            isinstance(pid, list)
            and len(pid) == 2
            and isinstance(pid[0], str)
            and type(pid[1]) is int
            and pid[1] >= 1
        ):
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
        attacks: list[tuple[Callable[[str], Any], int]] = [
            (self.takeover, 4),
            (self.refused_hello, 3),
            (self.spoof, 4),
            (self.exhaust_connections, 1),
            (self.exhaust_subscriptions, 1),
            (self.flood, 1),
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
