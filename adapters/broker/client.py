"""The client library: REBECA's EventBroker interface (Mühl 2002, "Large-Scale
Content-Based Publish/Subscribe Systems", ch. 5: publish, subscribe, unsubscribe,
advertise, unadvertise) over a connection to one broker.

>>> from pubsift.adapters.broker.client import connect          # doctest: +SKIP
>>> c = connect("pubsift://127.0.0.1:7400")                      # doctest: +SKIP
>>> c.subscribe("records", "price > 10", print)                  # doctest: +SKIP
>>> c.publish("records", {"symbol": "IBM", "price": 12})         # doctest: +SKIP
>>> s = connect("pubsifts://broker.example.org:7400", ca="ca.pem")  # doctest: +SKIP

:class:`AsyncClient` runs in an asyncio loop; :class:`Client` wraps it for synchronous code
(a background thread runs the loop; handlers run in that thread).

Leases (Mühl §3.7.2): the client issues every active subscription and advertisement again
every ρ (the broker says ρ in its hello) and when the broker asks (``renew``, after a link
came up). If the connection is lost it reconnects with exponential backoff and issues them
again. Publications made while disconnected wait in a bounded buffer and are sent, in order,
after the subscriptions and advertisements.

Refusals: every ``sub`` and ``adv`` frame carries a ``ref`` (one per subscription or
advertisement, the same on its renewals), which the broker echoes in an ``error`` refusing
it (``forbidden``, ``limit``, ...). The client then drops it from what it renews, marks its
handles inactive with :attr:`Subscription.refused` set, and ``subscribe(...,
confirm=True)`` raises that :class:`SubscriptionRefused`.

Publication rate: a broker with ``max_publish_rate`` says so in its hello, and the client
paces its publications to it (``publish`` waits for the token), so what it sends never
waits in the network behind a throttled stream (docs/protocol.md §12).

Delivery: each publication carries ``[publisher id, sequence number]``; the client hands a
notification to its handlers only if its sequence number is above the last one delivered
from that publisher, so per publisher notifications arrive in publication order and never
twice (docs/protocol.md).

TLS (docs/protocol.md §11): a ``pubsifts://`` URL (or ``tls=True``) connects over TLS,
verifying the broker's certificate with ``ca`` (default: the system's CAs) and its host
name; ``cert``/``key`` present a client certificate, which may stand for a token (a
broker's ``[identities.NAME] cert_name``). ``tls`` may also be a ready
:class:`ssl.SSLContext`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import ssl
import threading
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pubsift.adapters.broker.backoff import Backoff
from pubsift.adapters.broker.client_limits import TokenBucket
from pubsift.adapters.broker.connection import Connection
from pubsift.adapters.broker.frames import (
    MAX_BATCH,
    Cut,
    FrameError,
    check_hello,
    encode,
    hello,
    load_cut_event,
    parse_url,
    url_uses_tls,
)
from pubsift.adapters.broker.replay import (
    Notified,
    Replay,
    ReplayError,
    merge,
)
from pubsift.adapters.broker.replay import parse as parse_replay
from pubsift.adapters.broker.replay import parse_text as parse_replay_text
from pubsift.adapters.broker.tls import client_context, describe
from pubsift.adapters.broker.wire import dumps
from pubsift.core.errors import PubsiftError
from pubsift.core.model import Event, Filter, FilterModel

log = logging.getLogger("pubsift.client")

CONNECT_TIMEOUT = 10.0


class BrokerUnavailable(PubsiftError, ConnectionError):
    """The broker at a URL could not be reached or refused the connection; ``reason`` is
    the broker's error reason when it refused (``unauthorized``, ``forbidden``, ``limit``,
    ...), else None."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason


class BrokerRefused(PubsiftError, ValueError):
    """The broker refused a request: a model it does not route, an invalid filter."""


class SubscriptionRefused(BrokerRefused):
    """The broker refused a subscription or advertisement (``kind`` ``sub`` or ``adv``):
    ``reason`` is the error reason (``forbidden``, ``limit``, ``invalid-message``,
    ``refused``), ``error`` the broker's whole ``error`` frame. The client no longer
    renews it."""

    def __init__(
        self, kind: str, model: str, filter: Filter, text: str, error: dict[str, Any]
    ) -> None:
        self.kind, self.model, self.filter, self.error = kind, model, filter, error
        self.reason = str(error.get("reason"))
        what = "subscription" if kind == "sub" else "advertisement"
        super().__init__(
            f"the broker refused the {what} {text!r} in {model}: {self.reason}: "
            f"{error.get('message')}"
        )


#: what the client reads beyond the first frames of protocol 1 (its hello says):
#: batches of notifications (docs/protocol.md §3.2)
CLIENT_FEATURES = ("notifies",)

#: error reasons that refuse one message (the connection stays): docs/protocol.md §6
REFUSALS = ("invalid-message", "refused", "unknown-kind", "bad-frame", "forbidden", "limit")


class Notification(NamedTuple):
    """An event delivered to a subscriber: ``event`` is the model's parsed event, ``wire``
    its JSON wire form; ``publisher`` and ``seq`` identify the publication; ``replayed``:
    it came from a history (docs/history.md), not live. (A named tuple: made once per
    notification, the cheapest immutable record Python has.)"""

    model: str
    event: Event
    wire: Any
    publisher: str
    seq: int
    replayed: bool = False

    def to_json(self) -> dict[str, Any]:
        out = {
            "model": self.model,
            "publisher": self.publisher,
            "seq": self.seq,
            "event": self.wire,
        }
        if self.replayed:
            out["replayed"] = True
        return out


Handler = Callable[[Notification], Any]


def _flavour(s: Subscription, n: Notification) -> Notification:
    """``n`` as subscription ``s`` takes it: a raw one the event's JSON bytes in ``wire``
    (orjson's bytes of the value, where ``n`` carries the value)."""
    if s.raw and type(n.wire) is not bytes:
        return n._replace(wire=dumps(n.wire))
    return n


#: seconds a subscription with a replay description holds its live notifications for a
#: history's answer before it gives up (delivering them without the past), and between
#: two subscription events asking again (docs/protocol.md §14)
REPLAY_TIMEOUT = 5.0
REPLAY_RETRY = 1.0


@dataclass(eq=False)
class _Waiting:
    """A subscription waiting for a history's answer: its live notifications held, the
    answers of each (history, request) as they come."""

    replay: Replay
    deadline: float
    held: list[Notified] = field(default_factory=list)
    streams: dict[tuple[Any, Any], list[Notified]] = field(default_factory=dict)
    done: bool = False


@dataclass(eq=False)
class Subscription:
    """A handle returned by ``subscribe``; pass it to ``unsubscribe``."""

    model: str
    filter: Filter
    handler: Handler
    active: bool = field(default=True)
    #: why the broker refused it (then ``active`` is False and it is not renewed)
    refused: SubscriptionRefused | None = None
    #: its notifications carry the event's JSON bytes in ``wire`` (``subscribe(raw=True)``)
    raw: bool = False


@dataclass(eq=False)
class Advertisement:
    """A handle returned by ``advertise``; pass it to ``unadvertise``."""

    model: str
    filter: Filter
    active: bool = field(default=True)
    #: why the broker refused it (then ``active`` is False and it is not renewed)
    refused: SubscriptionRefused | None = None


class AsyncClient:
    """One client connection to the broker at ``url`` (``pubsift://host:port``, or
    ``pubsifts://host:port`` for TLS). ``id`` identifies the client (default: a fresh
    random one); it is also the publisher id. ``token`` is the credential of the client's
    identity; ``tls`` (True, or an :class:`ssl.SSLContext`), ``ca``, ``cert`` and ``key``
    set up TLS (module docstring). Bad TLS options raise
    :class:`~pubsift.adapters.broker.config.ConfigError` here."""

    def __init__(
        self,
        url: str,
        id: str | None = None,
        models: Mapping[str, FilterModel] | None = None,
        backoff: tuple[float, float] = (0.1, 5.0),
        max_frame_bytes: int = 1 << 20,
        max_buffer: int = 10_000,
        on_error: Callable[[dict[str, Any]], Any] | None = None,
        token: str | None = None,
        tls: bool | ssl.SSLContext | None = None,
        ca: str | None = None,
        cert: str | None = None,
        key: str | None = None,
        on_behalf: str | None = None,
    ) -> None:
        self.url = url
        #: the credential sent in the hello (docs/protocol.md §10); None: none sent
        self.token = token
        #: the identity the broker's own HTTP gateway connects for (docs/protocol.md §13);
        #: a broker refuses it from anyone else
        self.on_behalf = on_behalf
        self.host, self.port = parse_url(url)
        #: the TLS context of the connection (docs/protocol.md §11); None: plaintext
        self.tls = client_context(tls or url_uses_tls(url), ca, cert, key)
        self.id = id or f"client-{uuid.uuid4().hex[:12]}"
        #: this client's id in the network, as the broker's hello says: with identities,
        #: ``identity/id`` (docs/protocol.md §13); its publications carry it
        self.network_id = self.id
        self._models: dict[str, FilterModel] = dict(models or {})
        self._backoff = Backoff(*backoff)
        self.max_frame_bytes = max_frame_bytes
        self.on_error = on_error
        #: active subscriptions by (model, filter), in order of subscription
        self._subs: dict[tuple[str, Filter], list[Subscription]] = {}
        #: per model, its filters and their handles as delivery reads them (rebuilt from
        #: ``_subs`` after every change: None)
        self._targets: dict[str, tuple[tuple[Filter, tuple[Subscription, ...]], ...]] | None = None
        self._advs: dict[tuple[str, Filter], list[Advertisement]] = {}
        #: the ``ref`` of each subscription and advertisement, and back
        self._ref_of: dict[tuple[str, str, Filter], int] = {}
        self._by_ref: dict[int, tuple[str, str, Filter]] = {}
        self._last_ref = 0
        #: the subscriptions and advertisements the broker refused, in order
        self.refusals: list[SubscriptionRefused] = []
        #: paces publications to the broker's max_publish_rate (its hello says)
        self._bucket: TokenBucket | None = None
        self._seq = 0
        self._last_seq: dict[str, int] = {}
        self._pending: deque[dict[str, Any] | bytes] = deque(maxlen=max_buffer)
        self._conn: Connection | None = None
        self._runner: asyncio.Task[None] | None = None
        self._renewer: asyncio.Task[None] | None = None
        self._closing = False
        self._ready = asyncio.Event()
        self._stats: deque[asyncio.Future[dict[str, Any]]] = deque()
        self._tasks_of_waits: set[asyncio.Task[None]] = set()
        #: set by the broker's hello
        self.broker_id: str | None = None
        #: the models the broker routes (its hello says; None: it did not say)
        self.broker_models: tuple[str, ...] | None = None
        #: what the broker speaks beyond the first frames of protocol 1 (its hello says)
        self.broker_features: tuple[str, ...] = ()
        self.refresh: float = 10.0
        #: the longest frame the broker accepts (its hello says; a longer one closes the link)
        self.broker_max_frame_bytes: int = max_frame_bytes
        #: counters: notifications dropped as duplicates or out of order, errors received
        self.duplicates = 0
        self.errors: list[dict[str, Any]] = []
        self.connections = 0
        #: subscriptions waiting for a replay, by (model, filter); per subscription, the
        #: publishers whose replayed notifications went beyond what was delivered live
        #: (a live one at or below is a duplicate for it); those that resume (since SEQ)
        #: on reconnection and on ``renew``, and when each was made (Unix seconds)
        self._waits: dict[tuple[str, Filter], _Waiting] = {}
        self._ahead: dict[tuple[str, Filter], dict[str, int]] = {}
        self._resume: dict[tuple[str, Filter], float] = {}
        self.replay_timeout = REPLAY_TIMEOUT
        self.replay_retry = REPLAY_RETRY
        #: counters: replays answered, given up (no answer in time), refused by a
        #: history (their ``error``s kept), replayed notifications delivered
        self.replays = 0
        self.replay_timeouts = 0
        self.replay_errors: list[dict[str, Any]] = []
        self.replayed = 0

    # -- models ---------------------------------------------------------------------------
    def model(self, name: str) -> FilterModel:
        m = self._models.get(name)
        if m is None:
            from pubsift.core.registry import load_model

            m = self._models[name] = load_model(name)
        return m

    def parse_filter(self, model: str, spec: str | Mapping[str, Any] | Filter) -> Filter:
        """A filter from text, a JSON form (mapping) or an already parsed filter."""
        m = self.model(model)
        return m.parse_filter(spec) if isinstance(spec, (str, Mapping)) else spec

    # -- life cycle -----------------------------------------------------------------------
    async def connect(self, timeout: float = CONNECT_TIMEOUT) -> None:
        """Connect (raises :class:`BrokerUnavailable` if the first attempt fails), then
        stay connected in the background, reconnecting with backoff."""
        conn = await self._open(timeout)
        self._runner = asyncio.ensure_future(self._run(conn))
        self._renewer = asyncio.ensure_future(self._renew_loop())

    async def close(self, unsubscribe: bool = True) -> None:
        """Withdraw the subscriptions and advertisements (unless ``unsubscribe`` is False:
        then they expire after the lease period) and close the connection."""
        if self._closing:
            return
        conn = self._conn
        if unsubscribe and conn is not None:
            for model, f in self._subs:
                conn.send(self._frame("unsub", model, f))
            for model, f in self._advs:
                conn.send(self._frame("unadv", model, f))
        self._closing = True
        for t in (self._renewer, self._runner, *self._tasks_of_waits):
            if t is not None:
                t.cancel()
        if conn is not None:
            await conn.wait_closed()
        for t in (self._renewer, self._runner):
            if t is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t

    async def __aenter__(self) -> AsyncClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.closing

    async def wait_connected(self, timeout: float) -> None:
        await asyncio.wait_for(self._ready.wait(), timeout)

    async def _open(self, timeout: float) -> Connection:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(
                    self.host,
                    self.port,
                    limit=1 << 16,
                    ssl=self.tls,
                    ssl_handshake_timeout=timeout if self.tls is not None else None,
                ),
                timeout,
            )
        except ssl.SSLError as exc:
            raise BrokerUnavailable(f"cannot connect to {self.url}: {describe(exc)}") from None
        except (ConnectionResetError, asyncio.IncompleteReadError) as exc:
            why = describe(exc) if self.tls is not None else str(exc)
            raise BrokerUnavailable(f"cannot connect to {self.url}: {why}") from None
        except (OSError, TimeoutError) as exc:
            raise BrokerUnavailable(f"cannot connect to {self.url}: {exc or 'timeout'}") from None
        conn = Connection(reader, writer, self.max_frame_bytes, 1 << 30, dialled=True)
        # the client reads ``notifies`` batches (docs/protocol.md §3.2) of frames up to
        # its own max_frame_bytes
        extra: dict[str, Any] = {
            "features": list(CLIENT_FEATURES),
            "max_frame_bytes": self.max_frame_bytes,
        }
        if self.token:
            extra["token"] = self.token
        if self.on_behalf is not None:
            extra["on_behalf"] = self.on_behalf
        conn.send(hello("client", self.id, **extra))
        try:
            obj = await asyncio.wait_for(conn.recv(), timeout)
            if obj is None:
                hint = (
                    " before its hello (over TLS 1.3 this is how a broker refuses a client "
                    "certificate: it may want one signed by its CA, cert / --cert)"
                    if self.tls is not None
                    else ""
                )
                raise FrameError("truncated", "the broker closed the connection" + hint)
            _, self.broker_id = check_hello(obj, "broker")
        except (FrameError, TimeoutError, OSError) as exc:
            conn.abort()
            why = describe(exc) if isinstance(exc, ssl.SSLError) else str(exc) or "timeout"
            raise BrokerUnavailable(
                f"{self.url} refused the connection: {why}",
                exc.reason if isinstance(exc, FrameError) else None,
            ) from None
        named = obj.get("client")
        self.network_id = named if isinstance(named, str) and named else self.id
        lease = obj.get("lease") or {}
        if isinstance(lease.get("refresh"), (int, float)) and lease["refresh"] > 0:
            self.refresh = float(lease["refresh"])
        if isinstance(obj.get("max_frame_bytes"), int) and obj["max_frame_bytes"] > 0:
            self.broker_max_frame_bytes = obj["max_frame_bytes"]
        models = obj.get("models")
        if isinstance(models, list) and all(isinstance(m, str) for m in models):
            self.broker_models = tuple(models)
        features = obj.get("features")
        self.broker_features = (
            tuple(f for f in features if isinstance(f, str)) if isinstance(features, list) else ()
        )
        self._pace(obj.get("limits"))
        beat = obj.get("heartbeat")
        if not isinstance(beat, dict):
            beat = {}
        interval, missed = beat.get("interval"), beat.get("max_missed")
        conn.start_heartbeat(
            float(interval) if isinstance(interval, (int, float)) and interval >= 0 else 15.0,
            missed if isinstance(missed, int) and missed > 0 else 2,
        )
        conn.role, conn.id = "broker", self.broker_id
        self._conn = conn
        self.connections += 1
        self._reissue(conn, resume=self.connections > 1)
        while self._pending:
            conn.send(self._pending.popleft())
        self._ready.set()
        log.log(
            logging.WARNING if self.connections > 1 else logging.INFO,
            "client %s %s to %s (%s)",
            self.id,
            "reconnected" if self.connections > 1 else "connected",
            self.broker_id,
            self.url,
        )
        return conn

    def _pace(self, limits: Any) -> None:
        """Pace publications to the ``max_publish_rate`` of the broker's hello."""
        limits = limits if isinstance(limits, dict) else {}
        rate, burst = limits.get("max_publish_rate"), limits.get("publish_burst")
        if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not rate > 0:
            self._bucket = None
            return
        if not isinstance(burst, (int, float)) or isinstance(burst, bool) or not burst >= 1:
            burst = max(1.0, rate)
        if self._bucket is None or (self._bucket.rate, self._bucket.burst) != (rate, burst):
            self._bucket = TokenBucket(float(rate), float(burst))

    async def _run(self, conn: Connection) -> None:
        while not self._closing:
            up = asyncio.get_running_loop().time()
            try:
                await self._read(conn)
                why = conn.close_reason or "closed by the broker"
            except (FrameError, ConnectionError, OSError) as exc:
                why = str(exc)
            if not self._closing:
                log.warning(
                    "client %s: connection to %s lost (%s); reconnecting", self.id, self.url, why
                )
            self._ready.clear()
            self._conn = None
            await conn.wait_closed()
            # a connection the broker drops at once (it refuses something we send on every
            # connect) does not reset the backoff: no reconnection storm
            if asyncio.get_running_loop().time() - up >= self._backoff.maximum:
                self._backoff.reset()
            while not self._closing:
                await asyncio.sleep(self._backoff.next())
                try:
                    conn = await self._open(CONNECT_TIMEOUT)
                    break
                except BrokerUnavailable as exc:
                    log.info("client %s: %s", self.id, exc)

    async def _read(self, conn: Connection) -> None:
        while True:
            obj = await conn.recv()
            if obj is None:
                return
            kind = obj["kind"]
            if kind == "notifies":
                await self._notifies(obj)
            elif kind == "notify":
                await self._notify(obj)
            elif kind == "stats":
                if self._stats:
                    self._stats.popleft().set_result(obj)
            elif kind == "renew":
                self._reissue(conn, resume=True)
            elif kind == "replay":
                await self._replay_frame(obj)
            elif kind == "error":
                self.errors.append(obj)
                log.warning(
                    "client %s: broker says %s: %s", self.id, obj.get("reason"), obj.get("message")
                )
                self._refused(obj)
                if self.on_error is not None:
                    self.on_error(obj)

    def _refused(self, obj: dict[str, Any]) -> None:
        """An ``error`` echoing the ``ref`` of a subscription or advertisement refuses
        it: stop renewing it, mark its handles, keep the reason."""
        ref = obj.get("ref")
        if not isinstance(ref, int) or isinstance(ref, bool) or ref not in self._by_ref:
            return
        kind, model, f = self._by_ref.pop(ref)
        del self._ref_of[(kind, model, f)]
        handles: list[Subscription] | list[Advertisement] = (
            self._subs.pop((model, f), []) if kind == "sub" else self._advs.pop((model, f), [])
        )
        self._targets = None
        exc = SubscriptionRefused(kind, model, f, self.model(model).format_filter(f), obj)
        self.refusals.append(exc)
        for h in handles:
            h.active, h.refused = False, exc

    async def _renew_loop(self) -> None:
        """Issue every subscription and advertisement again every ρ (Mühl §3.7.2)."""
        while True:
            await asyncio.sleep(self.refresh)
            if self._conn is not None:
                self._reissue(self._conn)

    def _reissue(self, conn: Connection, resume: bool = False) -> None:
        """Send every advertisement and subscription again; with ``resume`` (after a
        reconnection or a ``renew``), those made with ``resume`` ask for what they missed
        (``since`` the last sequence number delivered per publisher)."""
        for model, f in self._advs:
            conn.send(self._frame("adv", model, f))
        for model, f in self._subs:
            key = (model, f)
            if key in self._waits:  # asked before this connection: ask again
                self._ask(key, self._waits[key].replay)
            elif resume and key in self._resume and "replay" in self.broker_features:
                self._ask(key, self._resume_point(key))
            else:
                conn.send(self._frame("sub", model, f))

    def _frame(self, kind: str, model: str, f: Filter) -> dict[str, Any]:
        obj = {
            "kind": kind,
            "client": self.id,
            "model": model,
            "filter": self.model(model).dump_filter(f),
        }
        ref = self._ref_of.get((kind, model, f))
        if ref is not None:  # sub and adv: the broker echoes it if it refuses them
            obj["ref"] = ref
        return obj

    def _new_ref(self, kind: str, model: str, f: Filter) -> None:
        self._last_ref += 1
        self._ref_of[(kind, model, f)] = self._last_ref
        self._by_ref[self._last_ref] = (kind, model, f)

    def _drop_ref(self, kind: str, model: str, f: Filter) -> None:
        ref = self._ref_of.pop((kind, model, f), None)
        if ref is not None:
            del self._by_ref[ref]

    def delivered(self) -> dict[str, int]:
        """Per publisher, the last sequence number delivered, replayed ones included:
        the resume point (``pubsift sub --state`` saves it). A replay may go beyond the
        live stream (its live copies still on their way): the highest counts."""
        out = dict(self._last_seq)
        for ahead in self._ahead.values():
            for p, seq in ahead.items():
                out[p] = max(out.get(p, 0), seq)
        return out

    def restore(self, last_seq: Mapping[str, int]) -> None:
        """Continue from a resume point :meth:`delivered` gave: notifications at or
        below it are duplicates."""
        for p, seq in last_seq.items():
            if isinstance(p, str) and type(seq) is int:
                self._last_seq[p] = max(seq, self._last_seq.get(p, 0))

    def send_frame(self, data: bytes) -> bool:
        """Send an encoded frame as it is (a history's ``replay`` frames); False when
        not connected (dropped)."""
        return self._conn is not None and self._conn.send(data)

    # -- replay (docs/protocol.md §14) ------------------------------------------------------
    def _resume_point(self, key: tuple[str, Filter]) -> Replay:
        """``since`` the last sequence number delivered per publisher (to this
        subscription), and for the other publishers since it was made."""
        since = dict(self._last_seq)
        for p, s in self._ahead.get(key, {}).items():
            since[p] = max(since.get(p, 0), s)
        if len(since) > 10_000:  # the publishers heard from last
            since = dict(list(since.items())[-10_000:])
        return Replay(since=since, since_time=self._resume[key])

    def _ask(self, key: tuple[str, Filter], replay: Replay) -> None:
        """Subscribe ``key`` with ``replay`` (the broker then publishes a subscription
        event), holding its live notifications until a history answers."""
        w = self._waits.get(key)
        loop = asyncio.get_running_loop()
        if w is None:
            w = self._waits[key] = _Waiting(replay, loop.time() + self.replay_timeout)
            self._tasks_of_waits.add(asyncio.ensure_future(self._retry_replay(key, w)))
        else:  # asked again (another renew): from the same point, what is held kept
            replay, w.deadline = w.replay, loop.time() + self.replay_timeout
        frame = self._frame("sub", *key)
        frame["replay"] = replay.to_wire()
        self._send(frame)

    async def _retry_replay(self, key: tuple[str, Filter], w: _Waiting) -> None:
        """Ask again every ``replay_retry`` seconds (a subscription event may meet a
        broker whose routing state is still being rebuilt); give up at the deadline."""
        loop = asyncio.get_running_loop()
        try:
            while not w.done:
                await asyncio.sleep(min(self.replay_retry, max(0.0, w.deadline - loop.time())))
                if w.done or self._waits.get(key) is not w:
                    return
                if loop.time() >= w.deadline:
                    self.replay_timeouts += 1
                    log.warning(
                        "client %s: no history answered the replay of %s %s within %g s; "
                        "delivering live notifications only",
                        self.id,
                        key[0],
                        self.model(key[0]).format_filter(key[1]),
                        self.replay_timeout,
                    )
                    await self._finish(key, w, [])
                    return
                if self._conn is not None and not w.streams:  # not while an answer comes
                    frame = self._frame("sub", *key)
                    frame["replay"] = w.replay.to_wire()
                    self._send(frame)
        finally:
            self._tasks_of_waits.discard(asyncio.current_task())

    async def _replay_frame(self, obj: dict[str, Any]) -> None:
        """A ``replay`` frame of a history's answer: kept with its stream until the
        stream's end, which completes the replay (the first complete answer wins)."""
        ref = obj.get("ref")
        found = self._by_ref.get(ref) if type(ref) is int else None
        key = (found[1], found[2]) if found is not None and found[0] == "sub" else None
        w = self._waits.get(key) if key is not None else None
        pubs = obj.get("pubs")
        if key is None or w is None or not isinstance(pubs, list):
            return  # an answer too late (another came first), or for nothing asked
        m = self.model(key[0])
        f = key[1]
        stream = w.streams.setdefault((obj.get("history"), obj.get("request")), [])
        w.deadline = asyncio.get_running_loop().time() + self.replay_timeout  # it comes
        for item in pubs:
            if type(item) is not list or len(item) != 2:
                continue
            pub, wire = item
            if (
                type(pub) is not list
                or len(pub) != 2
                or type(pub[0]) is not str
                or type(pub[1]) is not int
            ):
                continue
            try:
                event = m.load_event(wire)
            except (KeyError, TypeError, ValueError, PubsiftError):
                continue
            if m.matches(f, event):  # a history answers with what matches; checked again
                stream.append(
                    Notified(
                        pub[0], pub[1], Notification(m.name, event, wire, pub[0], pub[1], True)
                    )
                )
        if obj.get("end") is not True:
            return
        err = obj.get("error")
        if isinstance(err, dict):
            self.replay_errors.append(err)
            log.warning(
                "client %s: history %s refused the replay: %s: %s",
                self.id,
                obj.get("history"),
                err.get("reason"),
                err.get("message"),
            )
            await self._finish(key, w, [])
            return
        self.replays += 1
        await self._finish(key, w, stream)

    async def _finish(self, key: tuple[str, Filter], w: _Waiting, replayed: list[Notified]) -> None:
        """Deliver the replayed and the held notifications of ``key`` (:func:`merge`),
        then let its live notifications through."""
        w.done = True
        if self._waits.get(key) is w:
            del self._waits[key]
        ahead = self._ahead.setdefault(key, {})
        replayed_ids = {(n.publisher, n.seq) for n in replayed}
        for n in merge(replayed, w.held):
            if (n.publisher, n.seq) in replayed_ids:
                self.replayed += 1
                if n.seq > max(self._last_seq.get(n.publisher, 0), ahead.get(n.publisher, 0)):
                    ahead[n.publisher] = n.seq
            for s in tuple(self._subs.get(key, ())):
                result = s.handler(_flavour(s, n))
                if result is not None and inspect.isawaitable(result):
                    await result
        if not ahead:
            del self._ahead[key]

    def _sorted(
        self,
        m: FilterModel,
        n: Notification,
        every: tuple[tuple[Filter, tuple[Subscription, ...]], ...],
    ) -> list[Subscription]:
        """The handles a live notification goes to while some subscription waits for a
        replay or was replayed beyond the live stream: a waiting one holds it, one
        replayed beyond it drops it as a duplicate."""
        out: list[Subscription] = []
        for f, subs in every:
            if not m.matches(f, n.event):
                continue
            key = (m.name, f)
            w = self._waits.get(key)
            if w is not None:
                w.held.append(Notified(n.publisher, n.seq, n))
                continue
            ahead = self._ahead.get(key)
            if ahead is not None and (floor := ahead.get(n.publisher)) is not None:
                if n.seq <= floor:
                    continue
                del ahead[n.publisher]
                if not ahead:
                    del self._ahead[key]
            out.extend(subs)
        return out

    async def flush(self, timeout: float = 10.0) -> None:
        """Wait until the broker has processed everything this client sent so far: a
        ``stats`` round trip (a connection is answered in order, so any ``error`` about
        what was sent before has arrived when the reply does)."""
        try:
            await self.wait_connected(timeout)
            await self.stats(timeout)
        except TimeoutError:
            raise BrokerUnavailable(
                f"no answer from the broker at {self.url} within {timeout:g} s"
            ) from None

    async def _confirm(self, handle: Subscription | Advertisement, timeout: float) -> None:
        await self.flush(timeout)
        if handle.refused is not None:
            raise handle.refused

    def _fits(self, obj: dict[str, Any]) -> bytes:
        """The frame of ``obj``, if within the broker's limit; the broker would close the
        connection on a longer one (and again on every reconnection), so refuse it here."""
        data = encode(obj)
        n = len(data) - 4
        if n > self.broker_max_frame_bytes:
            raise BrokerRefused(
                f"{obj['kind']}: a frame of {n} bytes is above the broker's limit of "
                f"{self.broker_max_frame_bytes} bytes"
            )
        return data

    def _send(self, obj: dict[str, Any] | bytes, kind: str | None = None) -> None:
        if self._conn is not None and self._conn.send(obj):
            return
        if (kind or (obj["kind"] if isinstance(obj, dict) else None)) == "pub":
            self._pending.append(obj)  # sent in order after reconnecting

    # -- delivery -------------------------------------------------------------------------
    async def _notify(self, obj: dict[str, Any]) -> None:
        """Hand a notification to the handlers of the subscriptions it matches, in order,
        awaiting what each returns before the next is called."""
        try:
            pub, model, event = obj["pub_id"], obj["model"], obj["event"]
        except KeyError as exc:
            log.warning("client %s: malformed notification dropped: %s", self.id, exc)
            return
        if (pending := self._deliver(model, pub, event)) is not None:
            await pending

    async def _notifies(self, obj: dict[str, Any]) -> None:
        """A ``notifies`` frame (docs/protocol.md §3.2): each of its notifications as if
        it had come in a ``notify`` frame of its own, in order."""
        model, items = obj.get("model"), obj.get("pubs")
        if not isinstance(model, str) or not isinstance(items, list):
            log.warning("client %s: malformed notifies frame dropped", self.id)
            return
        try:
            m = self.model(model)
        except PubsiftError as exc:
            log.warning("client %s: notifications dropped: %s", self.id, exc)
            return
        if type(items) is Cut:  # the frame as the cutter found it (frames.decode)
            fast = m.load_wire
            events = [fast(item[2]) for item in items]  # the model's one-pass read
            try:  # where it has none: each event read, before any is delivered
                values = [
                    load_cut_event(items, item[2]) if e is None else None
                    for item, e in zip(items, events, strict=True)
                ]
            except FrameError as exc:
                log.warning("client %s: malformed notifies frame dropped: %s", self.id, exc)
                return
            one = self._deliver_one
            for (publisher, seq, raw, _), value, e in zip(items, values, events, strict=True):
                pending = (
                    one(m, publisher, seq, value, None, raw)
                    if e is None
                    else one(m, publisher, seq, None, e, raw)
                )
                if pending is not None:
                    await pending
            return
        deliver = self._deliver
        for item in items:
            if type(item) is not list or len(item) != 2:
                log.warning("client %s: malformed notification dropped: %r", self.id, item)
                continue
            if (pending := deliver(m, item[0], item[1])) is not None:
                await pending

    def _deliver(self, model: str | FilterModel, pub: Any, wire: Any) -> Awaitable[None] | None:
        """Hand a notification to the handlers of the subscriptions it matches, in order;
        from the first handler that returns an awaitable on, a coroutine that awaits each
        in turn before calling the next (None when every handler was synchronous)."""
        if (
            type(pub) is not list
            or len(pub) != 2
            or type(pub[0]) is not str
            or type(pub[1]) is not int
        ):
            log.warning(
                "client %s: notification dropped: pub_id must be [publisher, sequence], got %.200r",
                self.id,
                pub,
            )
            return None
        try:
            m = self.model(model) if isinstance(model, str) else model
        except PubsiftError as exc:
            log.warning("client %s: malformed notification dropped: %s", self.id, exc)
            return None
        return self._deliver_one(m, pub[0], pub[1], wire)

    def _deliver_one(
        self,
        m: FilterModel,
        publisher: str,
        seq: int,
        wire: Any,
        event: Any = None,
        raw: bytes | None = None,
    ) -> Awaitable[None] | None:
        """:meth:`_deliver` of a notification whose id is known to be well formed
        (``event``: ``wire`` loaded already, where it is; ``raw``: the event's bytes as
        the frame carried them, where they are known, and then ``wire`` may be None if
        ``event`` is given: its JSON value is made only for a subscription that is not
        raw)."""
        if event is None:
            try:
                event = m.load_event(wire)
            except (KeyError, TypeError, ValueError, PubsiftError) as exc:
                log.warning("client %s: malformed notification dropped: %s", self.id, exc)
                return None
        if seq <= self._last_seq.get(publisher, 0):
            self.duplicates += 1
            return None
        self._last_seq[publisher] = seq
        every = self._targets
        if every is None:
            every = self._targets = self._by_model()
        n = rn = None
        if self._waits or self._ahead:
            if wire is None:
                wire = m.dump_event(event)
            n = Notification(m.name, event, wire, publisher, seq)
            targets = self._sorted(m, n, every.get(m.name, ()))
        else:
            matches = m.matches
            targets = [s for f, subs in every.get(m.name, ()) if matches(f, event) for s in subs]
        for i, s in enumerate(targets):
            if s.raw:  # the event's bytes, as they came where they are known
                if rn is None:
                    if raw is None:
                        raw = dumps(wire if wire is not None else m.dump_event(event))
                    rn = Notification(m.name, event, raw, publisher, seq)
                result = s.handler(rn)
            else:
                if n is None:
                    if wire is None:
                        wire = m.dump_event(event)
                    n = Notification(m.name, event, wire, publisher, seq)
                result = s.handler(n)
            if result is not None and inspect.isawaitable(result):  # the others after it
                if wire is None:
                    wire = m.dump_event(event)
                if n is None:
                    n = Notification(m.name, event, wire, publisher, seq)
                if rn is None:
                    rn = Notification(
                        m.name, event, dumps(wire) if raw is None else raw, publisher, seq
                    )
                return self._handle_rest(
                    result, [(t, rn if t.raw else n) for t in targets[i + 1 :]]
                )
        return None

    def _by_model(self) -> dict[str, tuple[tuple[Filter, tuple[Subscription, ...]], ...]]:
        """The subscriptions per model, in order, as :meth:`_deliver` reads them."""
        out: dict[str, list[tuple[Filter, tuple[Subscription, ...]]]] = {}
        for (model, f), subs in self._subs.items():
            if subs:
                out.setdefault(model, []).append((f, tuple(subs)))
        return {model: tuple(pairs) for model, pairs in out.items()}

    @staticmethod
    async def _handle_rest(
        first: Awaitable[Any], rest: list[tuple[Subscription, Notification]]
    ) -> None:
        await first
        for s, n in rest:
            result = s.handler(n)
            if inspect.isawaitable(result):
                await result

    def check_routed(self, model: str) -> None:
        """Raise :class:`BrokerRefused` if the broker's hello says it does not route
        ``model`` (its subscriptions and publications would each be refused)."""
        if self.broker_models is not None and model not in self.broker_models:
            raise BrokerRefused(
                f"broker {self.broker_id} at {self.url} does not route model {model!r} "
                f"(it routes {', '.join(self.broker_models) or 'none'})"
            )

    async def stats(self, timeout: float = 5.0) -> dict[str, Any]:
        """The broker's ``stats`` (routing-table sizes, links, counters; docs/protocol.md)."""
        if self._conn is None or not self._conn.send({"kind": "stats"}):
            raise BrokerUnavailable(f"not connected to {self.url}")
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._stats.append(fut)
        return await asyncio.wait_for(fut, timeout)

    # -- the EventBroker interface ------------------------------------------------------
    async def subscribe(
        self,
        model: str,
        filter: str | Mapping[str, Any] | Filter,
        handler: Handler,
        confirm: bool = False,
        timeout: float = 10.0,
        replay: Replay | Mapping[str, Any] | str | None = None,
        resume: bool = False,
        raw: bool = False,
    ) -> Subscription:
        """Subscribe ``handler`` to the events of ``model`` matching ``filter`` (text, JSON
        form or parsed filter; a bad one raises FilterSyntaxError here). The broker does
        not acknowledge a subscription; with ``confirm``, wait (up to ``timeout``) until
        it has processed it and raise :class:`SubscriptionRefused` if it refused it
        (without: a refusal later sets the handle's ``refused``).

        ``replay`` (``"last 10"``, ``"since 2026-12-02T10:00:00Z"``, a
        :class:`~pubsift.adapters.broker.replay.Replay` or its wire form) asks the
        histories for the past first: live notifications are held until a history
        answers (or :attr:`replay_timeout`), then both are delivered, each once, per
        publisher in order. ``resume``: after a reconnection or a ``renew`` (a link came
        up), ask for what was missed since the last sequence number delivered per
        publisher (docs/protocol.md §14). A malformed description raises
        :class:`~pubsift.adapters.broker.replay.ReplayError`.

        ``raw``: the handler's notifications carry in ``wire`` the event's JSON as bytes
        instead of its value, the bytes the broker's frame carried as they came
        (docs/protocol.md §3.1: a cut ``notifies`` frame), the event not written anew;
        where the frame was read whole, and for replayed notifications and those held
        while a history answers, orjson's bytes of its value."""
        f = self.parse_filter(model, filter)
        sub = Subscription(model, f, handler, raw=raw)
        key = (model, f)
        wanted: Replay | None = None
        if replay is not None:
            wanted = (
                replay
                if isinstance(replay, Replay)
                else parse_replay_text(replay)
                if isinstance(replay, str)
                else parse_replay(replay)
            )
            if key in self._subs:
                raise ReplayError(
                    f"replay: {model} {self.model(model).format_filter(f)} is subscribed "
                    "already; a replay goes with a new subscription"
                )
            if self._conn is not None and "replay" not in self.broker_features:
                raise BrokerRefused(
                    f"broker {self.broker_id} at {self.url} does not replay (its hello "
                    "names no 'replay' feature)"
                )
        if key not in self._subs:
            self._new_ref("sub", model, f)
            try:
                frame = self._fits(self._frame("sub", model, f))
            except BrokerRefused:
                self._drop_ref("sub", model, f)
                raise
            self._subs[key] = []
            if resume:  # publishers not heard from: since the subscription began
                since_time = wanted.since_time if wanted is not None else None
                self._resume[key] = time.time() if since_time is None else since_time
            if wanted is not None:
                self._subs[key].append(sub)
                self._targets = None
                self._ask(key, wanted)
            else:
                self._send(frame)
        if sub not in self._subs[key]:
            self._subs[key].append(sub)
        self._targets = None
        if confirm:
            await self._confirm(sub, timeout)
        return sub

    async def unsubscribe(self, sub: Subscription) -> None:
        key = (sub.model, sub.filter)
        subs = self._subs.get(key, [])
        if sub in subs:
            subs.remove(sub)
            sub.active = False
            self._targets = None
        if not subs and key in self._subs:
            del self._subs[key]
            self._waits.pop(key, None)
            self._ahead.pop(key, None)
            self._resume.pop(key, None)
            self._drop_ref("sub", sub.model, sub.filter)
            self._send(self._frame("unsub", sub.model, sub.filter))

    async def advertise(
        self,
        model: str,
        filter: str | Mapping[str, Any] | Filter,
        confirm: bool = False,
        timeout: float = 10.0,
    ) -> Advertisement:
        """Advertise ``filter`` (``confirm``: as for :meth:`subscribe`)."""
        f = self.parse_filter(model, filter)
        adv = Advertisement(model, f)
        key = (model, f)
        if key not in self._advs:
            self._new_ref("adv", model, f)
            try:
                frame = self._fits(self._frame("adv", model, f))
            except BrokerRefused:
                self._drop_ref("adv", model, f)
                raise
            self._advs[key] = []
            self._send(frame)
        self._advs[key].append(adv)
        if confirm:
            await self._confirm(adv, timeout)
        return adv

    async def unadvertise(self, adv: Advertisement) -> None:
        key = (adv.model, adv.filter)
        advs = self._advs.get(key, [])
        if adv in advs:
            advs.remove(adv)
            adv.active = False
        if not advs and key in self._advs:
            del self._advs[key]
            self._drop_ref("adv", adv.model, adv.filter)
            self._send(self._frame("unadv", adv.model, adv.filter))

    async def publish_many(self, model: str, events: Iterable[Any]) -> list[int]:
        """Publish ``events`` in order (each raw, as :meth:`publish` takes it, or parsed);
        returns their sequence numbers. They go in as few ``pubs`` frames as fit the
        broker's ``max_frame_bytes`` (docs/protocol.md §3.1) where the broker's hello says
        it reads them, else one ``pub`` frame each (written together). A bad event raises
        EventError, and one whose frame alone is above the broker's limit BrokerRefused,
        before any of them is sent. Paced like :meth:`publish`, all of them together."""
        m = self.model(model)
        wires = [
            m.dump_event(m.parse_event(e) if isinstance(e, (str, bytes, Mapping)) else e)
            for e in events
        ]
        if not wires:
            return []
        if self._bucket is not None and (wait := self._bucket.take(len(wires))) > 0:
            await asyncio.sleep(wait)
        # no await from here on: sequence numbers are sent in order
        first = self._seq + 1
        if self._conn is not None and "pubs" in self.broker_features:
            frames = self._batches(model, wires, first)
        else:
            frames = [
                self._fits(
                    {"kind": "pub", "model": model, "pub_id": [self.id, first + i], "event": w}
                )
                for i, w in enumerate(wires)
            ]
        self._seq += len(wires)
        for f in frames:
            self._send(f, "pub")
        return list(range(first, first + len(wires)))

    def _batches(self, model: str, wires: list[Any], first: int) -> list[bytes]:
        """``pubs`` frames for ``wires`` (sequence numbers from ``first``), each within
        the broker's frame limit (a batch too long is halved)."""
        out: list[bytes] = []
        i, n = 0, min(len(wires), MAX_BATCH)
        while i < len(wires):
            n = min(n, len(wires) - i)
            data = encode(
                {
                    "kind": "pubs",
                    "model": model,
                    "pubs": [[[self.id, first + j], wires[j]] for j in range(i, i + n)],
                }
            )
            if len(data) - 4 > self.broker_max_frame_bytes:
                if n == 1:
                    self._fits({"kind": "pub", "model": model, "event": wires[i]})
                    raise AssertionError("unreachable: the frame of one event was too long")
                n //= 2
                continue
            out.append(data)
            i += n
        return out

    async def publish(self, model: str, event: Any) -> int:
        """Publish ``event`` (raw: a mapping, str or bytes the model parses; or a parsed
        event); returns its sequence number. A bad event raises EventError here, one whose
        frame is above the broker's ``max_frame_bytes`` :class:`BrokerRefused`. With a
        broker that limits the publication rate, waits for its turn (docs/protocol.md §12)."""
        m = self.model(model)
        parsed = m.parse_event(event) if isinstance(event, (str, bytes, Mapping)) else event
        if self._bucket is not None and (wait := self._bucket.take()) > 0:
            await asyncio.sleep(wait)
        # no await from here on: sequence numbers are sent in order
        frame = self._fits(
            {
                "kind": "pub",
                "client": self.id,
                "model": model,
                "event": m.dump_event(parsed),
                "pub_id": [self.id, self._seq + 1],
            }
        )
        self._seq += 1
        self._send(frame, "pub")
        return self._seq


class Client:
    """The synchronous client: an :class:`AsyncClient` in a loop on a background thread.
    Handlers run in that thread."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="pubsift-client", daemon=True
        )
        self._thread.start()
        self._async: AsyncClient = self._call(self._make(url, kwargs))

    async def _make(self, url: str, kwargs: dict[str, Any]) -> AsyncClient:
        return AsyncClient(url, **kwargs)

    def _call(self, coro: Awaitable[Any], timeout: float | None = 30.0) -> Any:
        fut: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)  # type: ignore[arg-type]
        return fut.result(timeout)

    @property
    def id(self) -> str:
        return self._async.id

    @property
    def aio(self) -> AsyncClient:
        """The asynchronous client underneath (its counters, its loop's view)."""
        return self._async

    def connect(self, timeout: float = CONNECT_TIMEOUT) -> Client:
        self._call(self._async.connect(timeout), timeout + 5)
        return self

    def subscribe(
        self,
        model: str,
        filter: str | Mapping[str, Any] | Filter,
        handler: Handler,
        confirm: bool = False,
    ) -> Subscription:
        return self._call(self._async.subscribe(model, filter, handler, confirm))

    def unsubscribe(self, sub: Subscription) -> None:
        self._call(self._async.unsubscribe(sub))

    def advertise(
        self, model: str, filter: str | Mapping[str, Any] | Filter, confirm: bool = False
    ) -> Advertisement:
        return self._call(self._async.advertise(model, filter, confirm))

    def unadvertise(self, adv: Advertisement) -> None:
        self._call(self._async.unadvertise(adv))

    def publish(self, model: str, event: Any) -> int:
        # no timeout: a broker's max_publish_rate may make it wait for its turn
        return self._call(self._async.publish(model, event), None)

    def publish_many(self, model: str, events: Iterable[Any]) -> list[int]:
        """:meth:`AsyncClient.publish_many`: the events in as few frames as fit."""
        return self._call(self._async.publish_many(model, list(events)), None)

    def stats(self, timeout: float = 5.0) -> dict[str, Any]:
        return self._call(self._async.stats(timeout), timeout + 5)

    def close(self, unsubscribe: bool = True) -> None:
        if not self._loop.is_closed():
            with contextlib.suppress(Exception):
                self._call(self._async.close(unsubscribe), 10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            self._loop.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(url: str, **kwargs: Any) -> Client:
    """A connected synchronous :class:`Client` (see :class:`AsyncClient` for options)."""
    c = Client(url, **kwargs)
    try:
        return c.connect()
    except BaseException:
        c.close()
        raise
