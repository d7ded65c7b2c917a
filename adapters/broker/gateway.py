"""The HTTP gateway of a broker: clients in any language
publish with ``POST /publish/{model}`` and subscribe with ``GET /subscribe/{model}?filter=``,
which streams the matching events as Server-Sent Events (so ``curl -N`` is a client).

It runs in the broker daemon's event loop (aiohttp) and is a **local client of the
daemon**: every HTTP subscriber is one :class:`~pubsift.adapters.broker.client.AsyncClient`
over loopback, and the gateway publishes through one more. So an HTTP client gets exactly
the routing semantics of a socket client, from the same code: leases renewed every ρ and
on ``renew``, per-publisher order and no duplicates (the client's sequence check), the
subscription withdrawn when the HTTP client goes away. Publications of the gateway are
one publisher (``http-<broker id>-<random>``, a new one per start, so a restarted
gateway's sequence numbers are never taken for duplicates): they reach each subscriber in
the order the gateway accepted them.

Security (docs/protocol.md §9-§11): with ``[identities]`` every request must
authenticate, with ``Authorization: Bearer <token>`` or a verified TLS client certificate
(a token takes precedence), exactly as a socket client's hello; without, ``401``. A
subscription must be covered, and a publication matched, by the identity's authorized
filters (:meth:`~pubsift.adapters.broker.auth.Authorizer.check`, the same check as for
socket clients; Fiege, Zeidler & Buchmann, "Security Aspects in Publish/Subscribe
Systems", DEBS 2004, §4.1), else ``403``. The gateway's own clients of the daemon use an
unrestricted identity with a random token that exists only in the broker process. With
``[tls]`` the gateway serves HTTPS with the broker's certificate, and reaches the daemon's
TLS port with that certificate as its only trust anchor.

Answers (JSON ``{"error": reason, "message": ...}`` for every refusal):

=====================================  ====================================================
``POST /publish/{model}``              202 ``{"id": "publisher:seq", ...}``; 400 invalid
                                       event; 404 unknown model; 413 above the frame limit
``GET /subscribe/{model}?filter=F``    200 ``text/event-stream``: one event per match,
                                       ``id:`` its publication id, ``data:`` the JSON
                                       object ``pubsift sub`` prints, the event's bytes
                                       spliced in as they came; 400 missing or invalid
                                       filter; 404 unknown model; 413 filter above
                                       the frame limit; 503 broker stopping
(with identities)                      401 no or unknown credential; 403 not authorized
=====================================  ====================================================

An SSE stream is written from the event's wire bytes (docs/protocol.md §9): its client of
the daemon subscribes ``raw``, so the bytes of a cut ``notifies`` frame go into the
``data:`` line without the event being written anew, and what came in one turn of the
loop goes out in one write.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import secrets
import uuid
from typing import TYPE_CHECKING, Any

from aiohttp import web
from pubsift.adapters.broker.auth import Grant
from pubsift.adapters.broker.client import (
    AsyncClient,
    BrokerRefused,
    BrokerUnavailable,
    Notification,
)
from pubsift.adapters.broker.config import Address
from pubsift.adapters.broker.frames import encode
from pubsift.adapters.broker.replay import Replay, ReplayError, parse_text
from pubsift.adapters.broker.tls import peer_names
from pubsift.adapters.broker.wire import dumps
from pubsift.core.errors import PubsiftError, one_line
from pubsift.core.messages import Pub, Sub
from pubsift.core.model import FilterModel
from pubsift.core.strict_json import strict_json

if TYPE_CHECKING:
    from pubsift.adapters.broker.daemon import BrokerDaemon

log = logging.getLogger("pubsift.gateway")

#: seconds between SSE comments on an idle stream (keeps proxies open, finds gone clients)
HEARTBEAT = 15.0
#: notifications waiting for one slow HTTP subscriber before its stream is ended (the
#: default of ``[gateway] max_pending``)
MAX_PENDING = 10_000
#: seconds one SSE write may wait for a client that does not read before it is cut off
WRITE_TIMEOUT = 30.0


def error_response(status: int, reason: str, message: str) -> web.Response:
    """A JSON refusal ``{"error": reason, "message": message}``."""
    return web.json_response({"error": reason, "message": message}, status=status)


async def serve(runner: web.AppRunner, listen: Address, tls: Any = None) -> Address:
    """Start ``runner`` (set up) on ``listen`` (HTTPS with the ``[tls]`` section ``tls``),
    and return the address it is bound to (port 0: the one the OS chose)."""
    site = web.TCPSite(
        runner,
        listen.host,
        listen.port,
        ssl_context=tls.server_context if tls is not None else None,
    )
    await site.start()
    bound = runner.addresses
    return Address(listen.host, bound[0][1] if bound else listen.port)


def publication_id(publisher: str, seq: int) -> str:
    """``publisher:seq``, the SSE ``id:`` and the answer to a POST (without line breaks,
    which an SSE field cannot hold)."""
    return f"{publisher}:{seq}".translate({10: "\\n", 13: "\\r", 0: "\\0"})


def loopback(listen: Address, port: int, tls: bool = False) -> str:
    """The URL by which the gateway reaches its own daemon (a wildcard address is
    reached on the loopback address of its family)."""
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(listen.host, listen.host)
    return f"pubsift{'s' if tls else ''}://{Address(host, port)}"


def replay_of(text: str | None, last_event_id: str | None) -> Replay | None:
    """The replay an SSE request asks for: after its ``Last-Event-ID`` (a browser
    reconnecting: ``publisher:seq``, the ``id:`` of the last event it got), else its
    ``replay`` query parameter (``last 10``, ``since 2026-12-02T10:00:00Z``), else none
    (docs/history.md). Malformed: :class:`ReplayError`."""
    if last_event_id is not None and last_event_id.strip():
        publisher, sep, seq = last_event_id.strip().rpartition(":")
        if not sep or not publisher or not seq.isdigit():
            raise ReplayError(
                f"Last-Event-ID {last_event_id[:100]!r} is not an id this gateway wrote "
                "(publisher:seq)"
            )
        return Replay(after=(publisher, int(seq)))
    if text is not None:
        return parse_text(text)
    return None


_LINE_BREAKS = bytes.maketrans(b"\r\n", b"  ")


class _Stream:
    """The notifications of one SSE stream not yet written: the handler of its client's
    raw subscription adds them, its writer takes all there are at each turn and writes
    their events in one write. More than ``max_pending`` waiting: :attr:`overflow`, and the
    stream ends."""

    __slots__ = ("heads", "max_pending", "model", "overflow", "pending", "stopped", "wake")

    def __init__(self, model: str, max_pending: int) -> None:
        self.model = dumps(model)
        self.max_pending = max_pending
        self.pending: list[Notification] = []
        self.wake = asyncio.Event()
        self.stopped = False
        self.overflow = False
        #: per publisher, the bytes before the sequence number in ``id:`` and ``data:``
        self.heads: dict[str, tuple[bytes, bytes]] = {}

    def add(self, n: Notification) -> None:
        """The subscription's handler (``n.wire``: the event's JSON bytes)."""
        pending = self.pending
        if len(pending) >= self.max_pending:
            self.overflow = True  # a slow consumer: its stream ends
            self.stop()
            return
        pending.append(n)
        if len(pending) == 1:
            self.wake.set()

    def stop(self) -> None:
        self.stopped = True
        self.wake.set()

    def take(self) -> bytes:
        """The Server-Sent Events of what is waiting (then nothing is): per notification
        ``id:`` its publication id and one ``data:`` line, the JSON object ``pubsift sub``
        prints (``model``, ``publisher``, ``seq``, ``event``, ``replayed``) with the
        event's bytes spliced in as they came. Line breaks between an event's tokens
        (where JSON may have them) are written as spaces: an SSE field is one line."""
        batch, self.pending = self.pending, []
        data = self._events(batch, False)
        # each event has three line breaks of its own (the ids and the JSON of the
        # publisher and model have none): more, or a CR, come from an event's bytes
        if data.count(b"\n") != 3 * len(batch) or b"\r" in data:
            data = self._events(batch, True)
        return data

    def _events(self, batch: list[Notification], breaks: bool) -> bytes:
        heads, model = self.heads, self.model
        out: list[bytes] = []
        if len(heads) > 10_000:  # publishers heard from: kept for the ones still heard
            heads.clear()
        get, append = heads.get, out.append
        for _, _, event, publisher, seq, replayed in batch:
            head = get(publisher)
            if head is None:
                head = heads[publisher] = (
                    b"id: " + publication_id(publisher, 0)[:-1].encode(),
                    b'data: {"model":%s,"publisher":%s,"seq":' % (model, dumps(publisher)),
                )
            if breaks:
                event = event.translate(_LINE_BREAKS)
            append(
                b'%s%d\n%s%d,"event":%s%s\n\n'
                % (head[0], seq, head[1], seq, event, b',"replayed":true}' if replayed else b"}")
            )
        return b"".join(out)


class _Stuck(Exception):
    """An SSE client that stopped reading (a write waited longer than the write timeout)."""


class Gateway:
    """The HTTP gateway of ``daemon`` on ``listen`` (port 0: the OS chooses;
    :attr:`address` says which once started)."""

    def __init__(
        self,
        daemon: BrokerDaemon,
        listen: Address,
        heartbeat: float = HEARTBEAT,
        write_timeout: float = WRITE_TIMEOUT,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self.daemon = daemon
        self.listen = listen
        self.address = listen
        self.heartbeat = heartbeat
        self.write_timeout = write_timeout
        #: notifications waiting for one stream before it is ended (``slow-consumer``)
        self.max_pending = max_pending
        self._runner: web.AppRunner | None = None
        #: the publisher of an open broker (None: the broker has identities)
        self._publisher: AsyncClient | None = None
        #: with identities, one publisher per identity, made on its first POST
        self._publishers: dict[str, AsyncClient] = {}
        self._making: dict[str, asyncio.Lock] = {}
        #: the client ids (as the hellos say) of the publishers
        self.publisher_ids: set[str] = set()
        self._url = ""
        #: the token of the gateway's own clients, with identities (None: an open broker)
        self._token: str | None = None
        self._streams: set[_Stream] = set()
        #: identities whose POSTs were rate-limited (logged once, then at debug level)
        self._throttled: set[str] = set()
        #: currently open SSE streams (for stats and tests)
        self.subscribers = 0

    @property
    def url(self) -> str:
        scheme = "https" if self.daemon.config.tls is not None else "http"
        return f"{scheme}://{self.address}"

    @property
    def token(self) -> str | None:
        """The credential of the gateway's own clients of the daemon (random, per start)."""
        return self._token

    @property
    def publisher_id(self) -> str | None:
        """The client id of an open broker's gateway publisher (it publishes for every
        HTTP client, so the daemon does not hold it to one client's publication rate)."""
        return self._publisher.id if self._publisher is not None else None

    async def start(self) -> None:
        assert self.daemon.broker is not None, "start the daemon first"
        tls = self.daemon.config.tls
        self._url = loopback(self.daemon.config.listen, self.daemon.address.port, tls is not None)
        if self._token is None:  # the gateway's own credential (an open broker: no grant)
            self._token = (
                self.daemon.auth.internal(f"<gateway of {self.daemon.id}>")
                if self.daemon.auth.enabled
                else secrets.token_urlsafe(32)
            )
        app = web.Application(client_max_size=self.daemon.config.max_frame_bytes)
        app.router.add_post("/publish/{model}", self.publish)
        app.router.add_get("/subscribe/{model}", self.subscribe)
        self._runner = web.AppRunner(
            app,
            handler_cancellation=True,  # a client gone mid-stream cancels its handler
            access_log=logging.getLogger("pubsift.gateway.access"),
            access_log_format='%a "%r" %s %b %Tfs',
            shutdown_timeout=2.0,  # SIGTERM: do not wait a minute for stuck HTTP clients
        )
        await self._runner.setup()
        self.address = await serve(self._runner, self.listen, tls)
        if not self.daemon.auth.enabled:
            self._publisher = self._client("pub")
            self.publisher_ids.add(self._publisher.id)
            await self._publisher.connect()
        log.info("gateway of broker %s listening on %s", self.daemon.id, self.url)

    async def stop(self) -> None:
        """End every SSE stream, close the publisher, stop serving."""
        for st in list(self._streams):
            st.stop()
        for p in [self._publisher, *self._publishers.values()]:
            if p is not None:
                await p.close()
        if self._runner is not None:
            await self._runner.cleanup()
        log.debug("gateway of broker %s stopped", self.daemon.id)

    def _client(self, role: str, grant: Grant | None = None) -> AsyncClient:
        """A client of the daemon for ``grant``'s HTTP requests (None: an open broker):
        it connects with the gateway's own token, on behalf of that identity, so the
        daemon checks, qualifies and counts it as one of the identity's connections
        (docs/protocol.md §13)."""
        tls = self.daemon.config.tls
        return AsyncClient(
            self._url,
            id=f"http-{self.daemon.id}-{role}-{uuid.uuid4().hex[:8]}",
            models=self.daemon.models,
            max_frame_bytes=self.daemon.config.max_frame_bytes,
            token=self._token,
            tls=tls.loopback_context if tls is not None else None,
            on_behalf=grant.name if grant is not None else None,
        )

    async def _publisher_of(self, grant: Grant | None) -> AsyncClient:
        """The publisher of ``grant``'s HTTP publications (an open broker: the one)."""
        if grant is None:
            assert self._publisher is not None
            return self._publisher
        p = self._publishers.get(grant.name)
        if p is not None:
            return p
        lock = self._making.setdefault(grant.name, asyncio.Lock())
        async with lock:
            p = self._publishers.get(grant.name)
            if p is None:
                p = self._client("pub", grant)
                self.publisher_ids.add(p.id)
                await p.connect()
                self._publishers[grant.name] = p
        return p

    def _identify(self, request: web.Request) -> Grant | web.Response | None:
        """The identity of an HTTP request (None: an open broker), or its 401: the
        ``Authorization: Bearer`` token if there is one, else a verified client
        certificate (as a socket client's hello, docs/protocol.md §10)."""
        auth = self.daemon.auth
        if not auth.enabled:
            return None
        header = request.headers.get("Authorization")
        hello: dict[str, Any] = {}
        if header is not None:
            scheme, _, token = header.strip().partition(" ")
            hello["token"] = token.strip() if scheme.lower() == "bearer" else None
        transport = request.transport
        names = peer_names(transport.get_extra_info) if transport is not None else None
        grant = auth.identify(hello, names)
        if isinstance(grant, Grant) and not grant.unrestricted:
            return grant
        why = grant if isinstance(grant, str) else "unknown token"
        if "token" in hello and hello["token"] is None:
            why = "the Authorization header is not 'Bearer <token>'"
        elif not hello and names is None:
            why = "no Authorization: Bearer token (and no client certificate)"
        log.warning("HTTP %s: unauthorized: %s", request.remote, why)
        resp = error_response(401, "unauthorized", why)
        resp.headers["WWW-Authenticate"] = 'Bearer realm="pubsift"' + (
            ', error="invalid_token"' if "token" in hello else ""
        )
        return resp

    def _forbidden(self, request: web.Request, grant: Grant, msg: Pub | Sub) -> web.Response | None:
        """403 if ``grant`` may not publish or subscribe ``msg`` (:meth:`Authorizer.check`)."""
        why = self.daemon.auth.check(grant, msg, self.daemon.models)
        if why is None:
            return None
        log.warning("HTTP %s: forbidden: %s", request.remote, why)
        return error_response(403, "forbidden", why)

    def _model(self, request: web.Request) -> FilterModel | web.Response:
        name = request.match_info["model"]
        model = self.daemon.models.get(name)
        if model is None:
            return error_response(
                404,
                "unknown-model",
                f"model {name!r} is not routed by broker {self.daemon.id} "
                f"(it routes {', '.join(sorted(self.daemon.models))})",
            )
        return model

    # -- POST /publish/{model} ------------------------------------------------------------
    async def publish(self, request: web.Request) -> web.Response:
        grant = self._identify(request)
        if isinstance(grant, web.Response):
            return grant
        model = self._model(request)
        if isinstance(model, web.Response):
            return model
        limit = self.daemon.config.max_frame_bytes
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return error_response(413, "too-large", f"the event is above the {limit}-byte limit")
        if not body.strip():
            return error_response(400, "invalid-event", f"POST an event of model {model.name}")
        try:
            event = model.parse_event(body)
            wire = model.dump_event(event)
        except PubsiftError as exc:
            return error_response(400, "invalid-event", one_line(exc))
        if grant is not None:
            refusal = self._forbidden(request, grant, Pub(grant.name, model.name, event, None))
            if refusal is not None:
                return refusal
        try:
            publisher = await self._publisher_of(grant)
        except BrokerUnavailable as exc:  # the broker is shutting down
            return error_response(503, "unavailable", one_line(exc))
        frame = {
            "kind": "pub",
            "client": publisher.network_id,
            "model": model.name,
            "event": wire,
            "pub_id": [publisher.network_id, 1 << 62],
        }
        if len(encode(frame)) - 4 > limit:
            return error_response(
                413, "too-large", f"the event's frame is above the {limit}-byte limit"
            )
        if grant is not None and (wait := self.daemon.charge_publication(grant.name)) > 0:
            return self._rate_limited(request, grant, wait)
        seq = await publisher.publish(model.name, event)
        pid = publication_id(publisher.network_id, seq)
        return web.json_response(
            {"id": pid, "publisher": publisher.network_id, "seq": seq}, status=202
        )

    def _rate_limited(self, request: web.Request, grant: Grant, wait: float) -> web.Response:
        """429 for a POST over its identity's publication rate (docs/protocol.md §12),
        with ``Retry-After``; logged once per episode."""
        held = self.daemon.identity_limits(grant.name).held
        bucket = held.bucket
        assert bucket is not None
        where = held.limits.rate_source or held.limits.source
        why = (
            f"identity {grant.name!r} publishes faster than {where}.max_publish_rate = "
            f"{bucket.rate:g}/s (burst {bucket.burst:g}); retry in {wait:.2f} s"
        )
        log.log(
            logging.DEBUG if grant.name in self._throttled else logging.INFO,
            "HTTP %s: rate-limited: %s",
            request.remote,
            why,
        )
        self._throttled.add(grant.name)
        resp = error_response(429, "rate-limited", why)
        resp.headers["Retry-After"] = str(max(1, math.ceil(wait)))
        return resp

    async def _refused(self, client: AsyncClient) -> web.Response | None:
        """429 if the daemon refused the stream's subscription for a limit (the identity's
        ``max_subscriptions``, docs/protocol.md §12): the ``stats`` reply comes after the
        error about the ``sub``, so one round trip tells. Only asked where a limit is set."""
        cfg = self.daemon.config
        if cfg.max_subscriptions is None and not any(
            i.max_subscriptions is not None for i in cfg.identities
        ):
            return None
        with contextlib.suppress(BrokerUnavailable, TimeoutError):
            await client.stats()
        for r in client.refusals:
            return error_response(429 if r.reason == "limit" else 403, r.reason, one_line(r))
        return None

    # -- GET /subscribe/{model}?filter=... ------------------------------------------------
    async def subscribe(self, request: web.Request) -> web.StreamResponse:
        """``GET /subscribe/{model}?filter=...`` (docs/protocol.md §9): the request checked
        (:meth:`_subscription`), a client of the broker subscribed for it, then its
        notifications written as Server-Sent Events until the HTTP client goes away
        (:meth:`_stream`)."""
        asked = self._subscription(request)
        if isinstance(asked, web.Response):
            return asked
        grant, model, flt, text, replay = asked
        st = _Stream(model.name, self.max_pending)
        client = self._client("sub", grant)
        try:
            await client.connect()
        except BrokerUnavailable as exc:
            if exc.reason == "limit":  # the identity's max_connections
                return error_response(429, "limit", one_line(exc))
            return error_response(503, "unavailable", one_line(exc))  # shutting down
        self._streams.add(st)
        self.subscribers += 1
        log.info("%s subscribed as %s to %s %s", request.remote, client.id, model.name, text)
        try:
            try:
                if replay is not None and replay.after is not None:
                    client.restore({replay.after[0]: replay.after[1]})
                await client.subscribe(
                    model.name, flt, st.add, replay=replay, resume=replay is not None, raw=True
                )
            except BrokerRefused as exc:  # the filter's frame is above the broker's limit
                return error_response(413, "too-large", one_line(exc))
            refused = await self._refused(client)
            if refused is not None:
                return refused
            return await self._stream(request, st, client)
        finally:
            self._streams.discard(st)
            self.subscribers -= 1
            await asyncio.shield(client.close())
            if not self.daemon.stopping:
                log.info("subscriber %s gone", client.id)

    def _subscription(
        self, request: web.Request
    ) -> web.Response | tuple[Grant | None, FilterModel, Any, str, Replay | None]:
        """What a ``GET /subscribe`` asks for: (identity, model, filter, the filter's text,
        the replay asked for), or the error response (401/403 identity, 404 model, 400
        filter or replay)."""
        grant = self._identify(request)
        if isinstance(grant, web.Response):
            return grant
        model = self._model(request)
        if isinstance(model, web.Response):
            return model
        text = request.query.get("filter")
        if text is None or not text.strip():
            return error_response(
                400, "missing-filter", f"give the filter: /subscribe/{model.name}?filter=..."
            )
        try:
            spec: Any = strict_json(text) if text.lstrip().startswith("{") else text
            flt = model.parse_filter(spec)
        except PubsiftError as exc:
            return error_response(400, "invalid-filter", one_line(exc))
        if grant is not None:
            refusal = self._forbidden(request, grant, Sub(grant.name, model.name, flt))
            if refusal is not None:
                return refusal
        try:
            replay = replay_of(request.query.get("replay"), request.headers.get("Last-Event-ID"))
        except ReplayError as exc:
            return error_response(400, "invalid-replay", one_line(exc))
        return grant, model, flt, text, replay

    async def _stream(
        self, request: web.Request, st: _Stream, client: AsyncClient
    ) -> web.StreamResponse:
        """The event stream of a subscribed client: what came meanwhile in one write each
        time, a keepalive comment after ``heartbeat`` seconds of nothing, and a last
        ``error`` event when the stream overflowed or the broker shuts down; a client
        that reads nothing for ``write_timeout`` seconds is cut off."""
        resp = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            }
        )
        try:
            await resp.prepare(request)

            async def write(data: bytes) -> None:
                try:
                    await asyncio.wait_for(resp.write(data), self.write_timeout)
                except TimeoutError:
                    raise _Stuck from None

            await write(f": subscribed as {client.network_id} at {self.daemon.id}\n\n".encode())
            wake, heartbeat = st.wake, self.heartbeat
            while not st.stopped:
                if not st.pending:
                    wake.clear()
                    try:
                        await asyncio.wait_for(wake.wait(), heartbeat)
                    except TimeoutError:
                        await write(b": keepalive\n\n")
                    continue
                await write(st.take())  # what came meanwhile goes out in one write
            if st.overflow:
                await write(
                    b'event: error\ndata: {"error": "slow-consumer", "message": '
                    b'"more than %d events waiting to be sent"}\n\n' % st.max_pending
                )
            elif self.daemon.stopping:
                end = {
                    "error": "shutdown",
                    "message": f"broker {self.daemon.id} is shutting down",
                }
                with contextlib.suppress(ConnectionError):
                    await write(f"event: error\ndata: {json.dumps(end)}\n\n".encode())
        except ConnectionError:  # the HTTP client went away in the middle of a write
            log.info("HTTP subscriber %s (%s) went away", client.id, request.remote)
            return resp
        except _Stuck:
            log.warning(
                "HTTP subscriber %s (%s) read nothing for %gs; closing its stream",
                client.id,
                request.remote,
                self.write_timeout,
            )
            if request.transport is not None:
                request.transport.abort()
            return resp
        with contextlib.suppress(ConnectionError, TimeoutError):
            await asyncio.wait_for(resp.write_eof(), self.write_timeout)
        return resp
