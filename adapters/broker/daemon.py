"""The broker daemon: the unchanged :class:`pubsift.core.broker.Broker` behind asyncio
streams.

Transport, framing, leases in real time and reconnection live here; every routing decision
stays in core. The daemon hands each decoded message to ``Broker.receive`` (the broker is
synchronous and processes one message at a time in FIFO order, Mühl 2002, "Large-Scale
Content-Based Publish/Subscribe Systems", §3.4, Fig. 3.6) and gives the broker a
:class:`ConnectionPort` that only puts frames on per-connection queues.

Leasing (Mühl §3.7): the broker's clock is :func:`time.monotonic`; every entry is granted
for π and a periodic task drops what ran out (``Broker.expire``). Clients renew every ρ by
issuing their subscriptions and advertisements again, and the core forwards renewals to
the neighbours, so a restarted broker rebuilds its tables within ρ from its clients' and
neighbours' renewals. When a link comes up, both sides ask their whole side of the tree to
renew now (``resync`` to the other neighbours, ``renew`` to the clients), so routing state
flows over the new link at once instead of after up to ρ.

Security (docs/protocol.md §10-§11; Fiege, Zeidler & Buchmann, "Security Aspects in
Publish/Subscribe Systems", DEBS 2004, §4.1 and §4.2): clients are identified by a token or
a TLS client certificate and checked against their authorized filters (:mod:`.auth`);
with ``[tls]`` every connection, accepted or dialled, is TLS (:mod:`.tls`), and links are
authenticated by ``broker.link_token`` or by the neighbour's certificate (``tls.link_names``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import signal
import ssl
import time
from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from pubsift.adapters.broker import wire
from pubsift.adapters.broker.auth import Authorizer, Grant
from pubsift.adapters.broker.backoff import Backoff
from pubsift.adapters.broker.config import Address, BrokerConfig, ConfigError, Identity
from pubsift.adapters.broker.connection import Connection
from pubsift.adapters.broker.frames import FrameError, check_hello, encode, error, hello
from pubsift.adapters.broker.latency import LatencyHistogram
from pubsift.adapters.broker.limits import (
    ClientLimits,
    IdentityLimits,
    Limits,
    QueueBudget,
)
from pubsift.adapters.broker.links import Reach
from pubsift.adapters.broker.replay_service import ReplayService, with_subscription_model
from pubsift.adapters.broker.tls import TLSServer, describe, peer_names, show_names
from pubsift.core.broker import Broker
from pubsift.core.errors import PubsiftError, one_line
from pubsift.core.messages import (
    Adv,
    Batch,
    BrokerMessage,
    Forward,
    Notify,
    Pub,
    Sub,
    Unadv,
    Unsub,
    forward_of,
    to_wire,
)
from pubsift.core.model import FilterModel

log = logging.getLogger("pubsift.broker")

#: what this broker speaks beyond protocol 1's first frames, told in its hello (a client
#: sends ``pubs`` frames only to a broker that says so; docs/protocol.md §2)
FEATURES = ("pubs", "replay")
#: what a broker reads from a neighbour beyond protocol 1's first frames (its link hello
#: says; ``forwards``: batches of forwarded publications, docs/protocol.md §7)
LINK_FEATURES = ("forwards",)


def _frame_limit(hello: dict[str, Any]) -> int | None:
    """The longest frame a peer's hello says it reads (None: it did not say)."""
    n = hello.get("max_frame_bytes")
    return n if type(n) is int and n > 0 else None


def _features(hello: dict[str, Any]) -> frozenset[str]:
    """The features a peer's hello names (none: an older peer)."""
    got = hello.get("features")
    return frozenset(f for f in got if isinstance(f, str)) if isinstance(got, list) else frozenset()


#: the frame kinds a peer may send, as the monitor counts them (others count as "other")
KINDS = frozenset(
    (
        "pub",
        "pubs",
        "sub",
        "unsub",
        "adv",
        "unadv",
        "stats",
        "forward",
        "forwards",
        "admin",
        "reach",
        "resync",
        "replay",
        "error",
        "ping",
        "pong",
    )
)


#: seconds a dialled broker has to answer (an accepted connection has ``limits.hello_timeout``
#: for its TLS handshake and its hello)
HANDSHAKE_TIMEOUT = 10.0


class ConnectionPort:
    """The core broker's :class:`~pubsift.core.broker.Port`: puts the wire form of each
    message on the queue of the connection to its destination. A destination that is not
    connected loses the message (counted in ``lost``); leases and renewals repair the
    routing state, and a subscriber may miss notifications meanwhile (docs/protocol.md)."""

    def __init__(self, models: Mapping[str, FilterModel]) -> None:
        self.models = models
        self.clients: dict[str, Connection] = {}
        self.neighbours: dict[str, Connection] = {}
        self.lost: Counter[str] = Counter()
        #: admin messages sent per neighbour (the monitor's messages out)
        self.admin_sent: Counter[str] = Counter()
        #: the frame of the last forward (the broker sends one forward to each neighbour)
        self._forward: Forward | None = None
        self._forward_frame = b""
        #: the batch item of the last publication forwarded or notified (one per
        #: publication, whatever the number of neighbours and subscribers it goes to)
        self._item_of: bytes | None = None
        self._item_pub: Hashable = None
        self._item = b""
        #: batch frame heads per model (forwards) and per (client, model) (notifies)
        self._forwards_heads: dict[str, bytes] = {}
        self._notifies_heads: dict[tuple[str, str], bytes] = {}
        self._notify = wire.NotifyFrames()

    def _item_for(self, msg: Forward | Notify) -> bytes:
        if msg.wire is not self._item_of or msg.pub_id != self._item_pub:
            self._item_of, self._item_pub = msg.wire, msg.pub_id
            self._item = wire.batch_item(msg)
        return self._item

    def send(self, broker: str, neighbour: str, msg: BrokerMessage) -> None:
        conn = self.neighbours.get(neighbour)
        if conn is None:
            self.lost[neighbour] += 1
            return
        if isinstance(msg, Forward) and msg.wire is not None:
            if "forwards" in conn.features:
                # what one turn forwards to a neighbour goes as one ``forwards`` frame,
                # written before any other frame to it (Connection.send_item)
                head = self._forwards_heads.get(msg.model)
                if head is None:
                    head = self._forwards_heads[msg.model] = wire.forwards_head(msg.model)
                if not conn.send_item(msg.model, head, self._item_for(msg)):
                    self.lost[neighbour] += 1
                return
            if msg is not self._forward:
                self._forward, self._forward_frame = msg, wire.forward_frame(msg)
            data = self._forward_frame
        else:
            if not isinstance(msg, Forward):
                self.admin_sent[neighbour] += 1
            data = encode(to_wire(msg, self.models))
        if not conn.send(data):
            self.lost[neighbour] += 1

    def send_many(self, broker: str, neighbour: str, batch: Batch, indices: list[int]) -> None:
        """Forward a neighbour's share of a batch: the pairs' bytes as they came, into
        this turn's ``forwards`` frame to it."""
        conn = self.neighbours.get(neighbour)
        if conn is None:
            self.lost[neighbour] += len(indices)
            return
        pairs = _pairs(batch)
        if pairs is None or "forwards" not in conn.features:
            for i in indices:
                self.send(broker, neighbour, forward_of(batch, i))
            return
        head = self._forwards_heads.get(batch.model)
        if head is None:
            head = self._forwards_heads[batch.model] = wire.forwards_head(batch.model)
        if not conn.send_items(batch.model, head, [pairs[i] for i in indices]):
            self.lost[neighbour] += len(indices)

    def deliver_many(self, broker: str, client: str, batch: Batch, indices: list[int]) -> None:
        """Notify a client of its share of a batch: the pairs' bytes as they came, into
        this turn's ``notifies`` frame to it (docs/protocol.md §3.2)."""
        conn = self.clients.get(client)
        if conn is None:
            self.lost[client] += len(indices)
            return
        pairs = _pairs(batch)
        if pairs is None or "notifies" not in conn.features:
            for i in indices:
                f = forward_of(batch, i)
                self.deliver(broker, Notify(client, f.model, f.event, f.pub_id, f.wire))
            return
        key = (client, batch.model)
        head = self._notifies_heads.get(key)
        if head is None:
            if len(self._notifies_heads) > 100_000:
                self._notifies_heads.clear()
            head = self._notifies_heads[key] = wire.notifies_head(*key)
        if not conn.send_items(batch.model, head, [pairs[i] for i in indices]):
            self.lost[client] += len(indices)

    def deliver(self, broker: str, msg: Notify) -> None:
        conn = self.clients.get(msg.client)
        if conn is None:
            self.lost[msg.client] += 1
            return
        if msg.wire is not None and "notifies" in conn.features:
            # a client that reads ``notifies`` frames gets what one turn notifies it of
            # as one frame (docs/protocol.md §3.2)
            key = (msg.client, msg.model)
            head = self._notifies_heads.get(key)
            if head is None:
                if len(self._notifies_heads) > 100_000:
                    self._notifies_heads.clear()
                head = self._notifies_heads[key] = wire.notifies_head(*key)
            if not conn.send_item(msg.model, head, self._item_for(msg)):
                self.lost[msg.client] += 1
            return
        if msg.wire is not None:
            data = self._notify.frame(msg)
        else:
            data = encode(to_wire(msg, self.models))
        if not conn.send(data):
            self.lost[msg.client] += 1


def _pairs(batch: Batch) -> list[bytes] | None:
    """The ``[pub_id, event]`` bytes of a batch's publications (None: not at hand)."""
    return getattr(batch, "pairs", None)


def load_models(names: tuple[str, ...] | None, source: str) -> dict[str, FilterModel]:
    """The models a broker routes (``None``: every installed model)."""
    from pubsift.core.registry import installed_models, load_model

    wanted = names if names is not None else tuple(i.name for i in installed_models())
    out = {}
    for name in wanted:
        try:
            out[name] = load_model(name)
        except PubsiftError as exc:
            raise ConfigError(f"{source}: broker.models: {one_line(exc)}") from None
    return out


def _why(exc: OSError) -> str:
    """The OS's words for ``exc`` (asyncio's bind errors repeat the address); what went
    wrong for a TLS error."""
    if isinstance(exc, ssl.SSLError):
        return describe(exc)
    return os.strerror(exc.errno).lower() if exc.errno else str(exc)


class BrokerDaemon:
    """One broker process: a server for clients and neighbours, dialers for the configured
    neighbours, and the lease clock. ``await start()`` binds (port 0: the OS chooses;
    :attr:`address` says which), ``await stop()`` shuts down cleanly."""

    def __init__(
        self, config: BrokerConfig, models: Mapping[str, FilterModel] | None = None
    ) -> None:
        self.config = config
        self.models = with_subscription_model(
            dict(models) if models is not None else load_models(config.models, config.source)
        )
        #: subscription events, replay frames, hosted histories (docs/protocol.md §14)
        self.replays = ReplayService(self)
        #: the client identities (docs/protocol.md §10); disabled: an open broker
        self.auth = Authorizer(config.identities, self.models, config.source)
        #: per model, the reader of the events' bytes for this broker's matching, and the
        #: number of identities it was made for (:meth:`_reader`)
        self._readers: dict[str, tuple[int, Callable[[bytes], Any]]] = {}
        #: the identity of each authenticated client connection
        self._grants: dict[Connection, Grant] = {}
        #: the refusals of renewable messages already logged, per connection
        self._forbidden: dict[Connection, set[str | None]] = {}
        #: each client connection's standing against its limits (docs/protocol.md §12),
        #: and its identity's, which all the identity's connections share
        self._limits: dict[Connection, ClientLimits] = {}
        self._ilimits: dict[Connection, IdentityLimits] = {}
        self._identities: dict[str, IdentityLimits] = {}
        #: the gateway's publishers of identities: it charges their rate itself
        self._exempt: set[Connection] = set()
        #: what each client's hello said its id was, where the broker qualified it
        self._aliases: dict[Connection, tuple[str, ...]] = {}
        #: publications held back by a client's rate limit; peers cut off as slow consumers
        self.throttled = 0
        self.slow_consumers = 0
        #: for the monitor (:mod:`.monitor`): messages received per link (("broker",
        #: its id), or ("client", "") for all clients) and kind, a batch frame counting
        #: its publications; errors answered or closed on, by reason; the latency
        #: (:mod:`.latency`); when the broker started (time.time())
        self.received: dict[tuple[str, str], Counter[str]] = {}
        self.frame_errors: Counter[str] = Counter()
        self.latency = LatencyHistogram()
        self.started = time.time()
        #: the monitor (docs/monitoring.md), when the configuration asks for one
        self.monitor: Any = None
        self.port = ConnectionPort(self.models)
        self.address: Address = config.listen
        self.id: str = config.id or ""
        self.broker: Broker | None = None
        self.reach = Reach(self.id)
        self._server: asyncio.Server | TLSServer | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._absent: dict[str, float] = {}
        self._stopped = asyncio.Event()
        self._stopping = False
        self._conns: set[Connection] = set()
        self._stop_task: asyncio.Future[None] | None = None
        #: the HTTP gateway (docs/protocol.md §9), when the configuration asks for one
        self.gateway: Any = None

    # -- life cycle -----------------------------------------------------------------------
    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` has begun."""
        return self._stopping

    async def start(self) -> None:
        cfg = self.config
        try:
            if cfg.tls is not None:
                self._server = TLSServer(self._accept, cfg.tls.server_context, cfg.hello_timeout)
                await self._server.start(cfg.listen)
            else:
                self._server = await asyncio.start_server(
                    self._accept, cfg.listen.host, cfg.listen.port, limit=1 << 16
                )
        except OSError as exc:
            raise ConfigError(
                f"{cfg.source}: broker.listen (--listen): cannot listen on {cfg.listen}: "
                f"{_why(exc)}"
            ) from None
        bound = self._server.sockets[0].getsockname()
        self.address = Address(cfg.listen.host, bound[1])
        self.id = cfg.id or str(self.address)
        self.reach = Reach(self.id)
        self.broker = Broker(
            self.id,
            self.models,
            cfg.strategy,
            self.port,
            cfg.advertisements,
            lease=cfg.lease_period,
            clock=time.monotonic,
        )
        self._tasks.append(asyncio.ensure_future(self._lease_clock()))
        for a in cfg.neighbours:
            self._tasks.append(asyncio.ensure_future(self._dial_forever(a)))
        log.info(
            "broker %s listening on %s%s (strategy %s%s, models %s, lease π=%gs ρ=%gs)",
            self.id,
            self.address,
            " (TLS)" if cfg.tls is not None else "",
            cfg.strategy,
            " with advertisements" if cfg.advertisements else "",
            ",".join(sorted(self.models)),
            cfg.lease_period,
            cfg.lease_refresh,
        )
        if cfg.gateway is not None:
            from pubsift.adapters.broker.gateway import Gateway

            self.gateway = Gateway(self, cfg.gateway, max_pending=cfg.gateway_max_pending)
            try:
                await self.gateway.start()
            except OSError as exc:
                await self.stop()
                raise ConfigError(
                    f"{cfg.source}: gateway.listen (--gateway): cannot listen on {cfg.gateway}: "
                    f"{_why(exc)}"
                ) from None
        self.replays.start()
        try:
            await self.replays.start_histories()
        except BaseException:
            await self.stop()
            raise
        if cfg.monitor is not None:
            from pubsift.adapters.broker.monitor import Monitor

            self.monitor = Monitor(self, cfg.monitor)
            try:
                await self.monitor.start()
            except OSError as exc:
                await self.stop()
                raise ConfigError(
                    f"{cfg.source}: monitor.listen (--monitor): cannot listen on {cfg.monitor}: "
                    f"{_why(exc)}"
                ) from None

    async def stop(self, why: str = "") -> None:
        """Stop accepting, tell every peer ``shutdown``, close everything. Logs one line
        when it starts and one when it is done (not one per connection)."""
        if self._stopping:
            return
        self._stopping = True
        streams = self.gateway.subscribers if self.gateway is not None else 0
        gateway_own = f"http-{self.id}-"  # the gateway's clients of the daemon (Gateway._client)
        log.info(
            "broker %s shutting down%s: closing %d client(s), %d link(s)%s",
            self.id,
            f" ({why})" if why else "",
            sum(not c.startswith(gateway_own) for c in self.port.clients)
            if self.gateway is not None
            else len(self.port.clients),
            len(self.port.neighbours),
            f", {streams} HTTP stream(s)" if self.gateway is not None else "",
        )
        if self.monitor is not None:
            await self.monitor.stop()
        if self.gateway is not None:
            await self.gateway.stop()
        await self.replays.stop()
        if self._server is not None:
            self._server.close()
        for t in self._tasks:
            t.cancel()
        for conn in list(self._conns):
            conn.close("shutdown", f"broker {self.id} is shutting down")
        await asyncio.gather(*(c.wait_closed(2.0) for c in list(self._conns)))
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
        self._stopped.set()
        log.info("broker %s stopped", self.id)

    async def run(self, install_signals: bool = True) -> None:
        """Start, serve until SIGTERM/SIGINT (or :meth:`stop`), shut down cleanly."""
        await self.start()
        if install_signals:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self._on_signal, sig)
        await self._stopped.wait()

    def _on_signal(self, sig: signal.Signals) -> None:
        self._stop_task = asyncio.ensure_future(self.stop(sig.name))

    # -- leases ---------------------------------------------------------------------------
    async def _lease_clock(self) -> None:
        """Drop expired entries (Mühl §3.7.3) every min(ρ/2, 1 s), and forget peers gone
        for longer than π (their entries have expired by then)."""
        period = min(self.config.lease_refresh / 2, 1.0)
        # The entry of a local client (or of a neighbour whose link is down) is withdrawn
        # like an unsubscription (Broker.expire) when its lease has less than (π − ρ)/2 left,
        # halfway between a live client's renewal (at most ρ after the last one, so at least
        # π − ρ left) and the end of the lease: the withdrawal reaches the copies further on
        # while they still stand (they were renewed by the same forwarded renewals) even
        # when this clock ticks late, instead of racing their own expiry.
        early = (self.config.lease_period - self.config.lease_refresh) / 2
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            assert self.broker is not None
            self.broker.expire(now, early, gone=self._absent.keys())
            for pid, since in list(self._absent.items()):
                if now - since > self.config.lease_period:
                    del self._absent[pid]
                    self.broker.clients.discard(pid)
                    self.broker.neighbours.discard(pid)

    # -- accepting ------------------------------------------------------------------------
    def _connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, dialled: bool
    ) -> Connection:
        cfg = self.config
        conn = Connection(
            reader, writer, cfg.max_frame_bytes, cfg.max_queue, dialled, cfg.max_queue_bytes
        )
        conn.on_slow = self._count_slow
        self._conns.add(conn)
        return conn

    def _count_slow(self) -> None:
        self.slow_consumers += 1

    def _client_limits(self, grant: Grant | None, exempt: bool) -> Limits:
        """The per-connection limits of a client. On an open broker, ``[limits]``'s; with
        identities none: each identity's count all its connections together
        (:meth:`identity_limits`). The gateway's publisher is ``exempt`` from the rate:
        it publishes for every HTTP client (an open broker), or the gateway charges
        every POST to its identity itself."""
        cfg = self.config
        if grant is not None:
            return Limits(None, None, None, "limits")
        if exempt:
            return Limits(cfg.max_subscriptions, None, None, "limits")
        return Limits(cfg.max_subscriptions, cfg.max_publish_rate, cfg.publish_burst, "limits")

    def _identity(self, grant: Grant | None) -> Identity | None:
        if grant is None:
            return None
        return next((i for i in self.config.identities if i.name == grant.name), None)

    def identity_limits(self, name: str) -> IdentityLimits:
        """What all connections of identity ``name`` hold together against its limits
        (docs/protocol.md §12): ``[identities.NAME]``'s where it sets them, else
        ``[limits]``'s (``max_subscriptions``, ``max_publish_rate``, ``publish_burst``,
        ``max_connections``; ``max_queue_bytes`` only where the identity sets it, else
        ``[limits]``'s per connection); made on first use."""
        ilim = self._identities.get(name)
        if ilim is None:
            cfg = self.config
            ident = next((i for i in cfg.identities if i.name == name), None)
            own = f"identities.{name}"

            def pick(key: str) -> tuple[Any, str]:
                mine = getattr(ident, key) if ident is not None else None
                return (mine, own) if mine is not None else (getattr(cfg, key), "limits")

            subs, subs_from = pick("max_subscriptions")
            conns, _ = pick("max_connections")
            if ident is not None and (
                ident.max_publish_rate is not None or ident.publish_burst is not None
            ):
                rate = ident.max_publish_rate or cfg.max_publish_rate
                burst, rate_from = ident.publish_burst, own
            else:
                rate, burst, rate_from = cfg.max_publish_rate, cfg.publish_burst, "limits"
            queue = ident.max_queue_bytes if ident is not None else None
            ilim = self._identities[name] = IdentityLimits(
                ClientLimits(Limits(subs, rate, burst, subs_from, rate_from), cfg.lease_period),
                conns,
                QueueBudget(queue, own) if queue is not None else None,
            )
        return ilim

    def charge_publication(self, name: str) -> float:
        """Take the token of one HTTP publication of identity ``name`` (the gateway's
        ``POST /publish``): 0.0 if it may go now, else the seconds until a token is there
        (none is taken; the gateway answers 429)."""
        bucket = self.identity_limits(name).held.bucket
        if bucket is None:
            return 0.0
        wait = bucket.try_take()
        if wait > 0:
            self.throttled += 1
        return wait

    def _open_clients(self) -> int:
        """Client connections of an open broker, the gateway's publisher aside."""
        return len(self.port.clients) - sum(c in self._exempt for c in self.port.clients.values())

    def _hello_limits(self, conn: Connection) -> dict[str, float]:
        """The limits the broker's hello tells a client: its connection's, and its
        identity's where the identity sets them (those are for all its connections)."""
        out = self._limits[conn].limits.hello()
        ilim = self._ilimits.get(conn)
        if ilim is not None:
            out.update(ilim.held.limits.hello())
            if ilim.max_connections is not None:
                out["max_connections"] = ilim.max_connections
        return out

    def _admit_client(
        self, conn: Connection, first: dict[str, Any], presented: str
    ) -> tuple[str, Grant | None, bool] | None:
        """Authenticate a client (docs/protocol.md §10) and give it its id in the network
        (§13): ``(id, identity, exempt)``, or None when it was refused (the connection is
        closing, one WARNING line logged). ``exempt``: the gateway's publisher of an
        identity (``on_behalf``), which the gateway charges itself."""
        if not self.auth.enabled:
            # the open broker's gateway publisher proves itself by the gateway's own
            # random token (which exists only in this process), not by its id
            token, gateway = first.get("token"), self.gateway
            exempt = bool(
                gateway is not None
                and isinstance(token, str)
                and isinstance(gateway.token, str)
                and hmac.compare_digest(token.encode(), gateway.token.encode())
                and presented == gateway.publisher_id
            )
            return presented, None, exempt
        grant = self.auth.identify(first, peer_names(conn.writer.get_extra_info))
        if isinstance(grant, str):
            log.warning("client %s (%s): unauthorized: %s", presented, conn.peer, grant)
            conn.close("unauthorized", grant)
            return None
        exempt = False
        if "on_behalf" in first:  # the broker's own gateway, for an HTTP client's identity
            behalf = first["on_behalf"]
            target = self.auth.named(behalf) if isinstance(behalf, str) else None
            if not grant.unrestricted or target is None:
                why = (
                    "only the broker's own HTTP gateway may act on behalf of an identity"
                    if not grant.unrestricted
                    else f"on_behalf: no identity {behalf!r}"
                )
                log.warning(
                    "client %s (%s) of identity %r: forbidden: %s",
                    presented,
                    conn.peer,
                    grant.name,
                    why,
                )
                conn.close("forbidden", why)
                return None
            grant = target
            exempt = self.gateway is not None and presented in self.gateway.publisher_ids
        nid, owner = self.auth.network_id(grant, presented)
        if owner is not None:
            why = f"client id {presented!r} belongs to identity {owner!r}"
            log.warning(
                "client %s (%s): forbidden: its id belongs to identity %r, and the "
                "connection authenticated as identity %r",
                presented,
                conn.peer,
                owner,
                grant.name,
            )
            conn.close("forbidden", f"{why}, not to {grant.name!r}")
            return None
        return nid, grant, exempt

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = self._connection(reader, writer, dialled=False)
        ilim: IdentityLimits | None = None
        try:
            if self._stopping:
                conn.close("shutdown", f"broker {self.id} is shutting down")
                return
            first = await asyncio.wait_for(conn.recv(), self.config.hello_timeout)
            if first is None:
                return
            role, pid = check_hello(first)
            conn.role, conn.id = role, pid
            if role == "client":
                admitted = self._admit_client(conn, first, pid)
                if admitted is None:
                    return
                nid, grant, exempt = admitted
                conn.id = nid
                if grant is not None:
                    self._grants[conn] = grant
                    counted = self.identity_limits(grant.name)
                    if not exempt:
                        why = counted.connect(replacing=nid in self.port.clients)
                        if why is not None:
                            log.warning("client %s (%s): limit: %s", nid, conn.peer, why)
                            conn.close("limit", why)
                            return
                        ilim = counted
                    self._ilimits[conn] = counted
                    conn.join(counted.budget)
                elif (
                    (limit := self.config.max_connections) is not None
                    and not exempt
                    and nid not in self.port.clients
                    and self._open_clients() >= limit
                ):
                    why = (
                        f"{limit} client connections open already, the limit "
                        f"(limits.max_connections = {limit}); try again later"
                    )
                    log.warning("client %s (%s): limit: %s", nid, conn.peer, why)
                    conn.close("limit", why)
                    return
                self._limits[conn] = ClientLimits(
                    self._client_limits(grant, exempt), self.config.lease_period
                )
                if exempt:
                    self._exempt.add(conn)
                conn.features = _features(first)
                conn.peer_max_frame_bytes = _frame_limit(first)
                await self._serve_client(conn, nid, pid)
            else:
                conn.features = _features(first)
                conn.peer_max_frame_bytes = _frame_limit(first)
                await self._accept_broker(conn, pid, first.get("token"))
        except FrameError as exc:
            self.frame_errors[exc.reason] += 1
            log.warning("connection %s: %s (closing)", conn.peer, exc)
            conn.close(exc.reason, exc.message, linger=True)
        except TimeoutError:
            self.frame_errors["bad-hello"] += 1
            why = f"no hello within {self.config.hello_timeout:g} s"
            if conn.role == "broker":
                why = f"no reach within {self.config.hello_timeout:g} s after the hello"
            log.warning("connection %s: %s (closing)", conn.peer, why)
            conn.close("bad-hello", why, linger=True)
        except (ConnectionError, OSError) as exc:
            log.info("connection %s lost: %s", conn.peer, exc)
        finally:
            await conn.wait_closed()
            self._conns.discard(conn)
            self._grants.pop(conn, None)
            self._forbidden.pop(conn, None)
            self._limits.pop(conn, None)
            self._ilimits.pop(conn, None)
            self._exempt.discard(conn)
            self._aliases.pop(conn, None)
            if ilim is not None:
                ilim.disconnect()

    # -- clients --------------------------------------------------------------------------
    async def _serve_client(self, conn: Connection, pid: str, presented: str) -> None:
        """Serve client ``pid`` (its id in the network; ``presented``: what its hello
        said, which its frames may use for it too)."""
        assert self.broker is not None
        self._aliases[conn] = (presented,) if presented != pid else ()
        old = self.port.clients.get(pid)
        if old is not None:
            log.info("client %s reconnected from %s; closing its old connection", pid, conn.peer)
            old.close("duplicate-link", "the same client id connected again")
        if pid in self.port.neighbours:
            raise FrameError("bad-hello", f"id {pid!r} is a neighbour broker's id")
        self.port.clients[pid] = conn
        self._absent.pop(pid, None)
        self.broker.attach(pid)
        conn.send(
            hello(
                "broker",
                self.id,
                lease={"period": self.config.lease_period, "refresh": self.config.lease_refresh},
                models=sorted(self.models),
                advertisements=self.config.advertisements,
                max_frame_bytes=self.config.max_frame_bytes,
                client=pid,
                features=list(FEATURES),
                **self._heartbeat_info(),
                **({"limits": lim} if (lim := self._hello_limits(conn)) else {}),
            )
        )
        self._start_heartbeat(conn)
        log.info("client %s connected from %s", pid, conn.peer)
        try:
            await self._receive(conn, f"client {pid}", self._from_client, self._pace)
        finally:
            if self.port.clients.get(pid) is conn:
                del self.port.clients[pid]
                self._absent[pid] = time.monotonic()
                log.log(
                    logging.DEBUG if self._stopping else logging.INFO, "client %s disconnected", pid
                )

    async def _receive(
        self,
        conn: Connection,
        who: str,
        handle: Callable[[Connection, str, dict[str, Any]], None],
        pace: Callable[[Connection, str, dict[str, Any]], float] | None = None,
    ) -> None:
        """Hand each frame from ``conn`` to ``handle(conn, id, frame)`` until the peer
        closes; a frame that is not a well-formed object gets an ``error`` frame and the
        connection stays open (other frame errors end it). ``pace`` says how long a frame
        waits before it is handled, reading nothing more from ``conn`` meanwhile (a client
        over its publication rate)."""
        assert conn.id is not None and self.broker is not None
        broker = self.broker
        link = ("broker", conn.id) if conn.role == "broker" else ("client", "")
        counts = self.received.setdefault(link, Counter())
        # the latency of a frame that notified anyone is taken once this turn's writes
        # are done (the connections' flushes were scheduled before: FIFO; .latency)
        call_soon, since = asyncio.get_running_loop().call_soon, self.latency.since
        while True:
            try:
                obj = await conn.recv()
            except FrameError as exc:
                if exc.reason != "bad-frame":
                    raise
                self.frame_errors[exc.reason] += 1
                log.warning("%s: %s", who, exc)
                conn.send(error(exc.reason, exc.message))
                continue
            if obj is None:
                return
            arrived = conn.last_received
            kind = obj["kind"]
            if kind == "pubs" or kind == "forwards":
                items = obj.get("pubs")
                counts[kind] += len(items) if isinstance(items, list) else 1
            else:
                counts[kind if kind in KINDS else "other"] += 1
            if pace is not None and (hold := pace(conn, conn.id, obj)) > 0:
                await self._hold(conn, hold)
                arrived = time.monotonic()  # the wait for the rate is not the broker's
            notified = broker.notified
            handle(conn, conn.id, obj)
            if broker.notified != notified:
                call_soon(since, arrived, broker.notified - notified)

    @staticmethod
    async def _hold(conn: Connection, seconds: float) -> None:
        """Read nothing from ``conn`` for ``seconds`` (TCP's flow control then slows its
        sender down). The silence is ours, not the peer's: the heartbeat does not count it."""
        until = time.monotonic() + seconds
        conn.last_received = max(conn.last_received, until)
        while not conn.closing and (left := until - time.monotonic()) > 0:
            await asyncio.sleep(min(left, 0.5))

    def stats(self, identity: str | None = None) -> dict[str, Any]:
        """What the broker holds and has done: routing-table sizes per model ([local,
        remote] entries, Mühl's |L| and |R|), its links and clients, notifications
        forwarded per neighbour and delivered, admin messages, messages lost to peers that
        were not connected."""
        b = self.broker
        assert b is not None
        return {
            "kind": "stats",
            "broker": self.id,
            "entries": {m: list(r.subs.sizes()) for m, r in sorted(b.routing.items())},
            "neighbours": sorted(self.port.neighbours),
            # an identity sees its own clients only (docs/protocol.md §13)
            "clients": sorted(
                c for c in self.port.clients if identity is None or c.startswith(identity + "/")
            ),
            "forwarded": dict(sorted(b.forwarded.items())),
            "notified": b.notified,
            "admin_sent": b.admin_sent,
            "admin_processed": b.admin_processed,
            "lost": sum(self.port.lost.values()),
            "throttled": self.throttled,
            "slow_consumers": self.slow_consumers,
        }

    def _pace(self, conn: Connection, pid: str, obj: dict[str, Any]) -> float:
        """How long a client frame waits before it is processed: a ``pub`` when the
        client's bucket, or its identity's, is empty (docs/protocol.md §12; every ``pub``
        frame counts, refused or not)."""
        kind = obj["kind"]
        if (kind != "pub" and kind != "pubs") or conn in self._exempt:
            return 0.0
        items = obj.get("pubs") if kind == "pubs" else None
        n = len(items) if isinstance(items, list) and items else 1
        hold = 0.0
        ilim = self._ilimits.get(conn)
        for lim in (self._limits.get(conn), ilim.held if ilim is not None else None):
            if lim is None:
                continue
            wait, begins = lim.publish(n)
            hold = max(hold, wait)
            if begins:
                log.info(
                    "client %s: publishing faster than %s.max_publish_rate = %g/s (burst %g)%s: "
                    "reading from it only as fast as that (throttled)",
                    pid,
                    lim.limits.rate_source or lim.limits.source,
                    lim.limits.max_publish_rate,
                    lim.limits.burst,
                    " for all the identity's connections"
                    if lim is not self._limits.get(conn)
                    else "",
                )
        if hold > 0:
            self.throttled += 1
        return hold

    def _from_client(self, conn: Connection, pid: str, obj: dict[str, Any]) -> None:
        assert self.broker is not None
        kind = obj["kind"]
        if kind == "pubs":
            self._publications(conn, pid, obj)
            return
        if kind == "stats":
            grant = self._grants.get(conn)
            conn.send(self.stats(grant.name if grant is not None else None))
            return
        if kind == "replay":
            self.replays.route(conn, obj, from_client=True)
            return
        try:
            replay = self.replays.description(obj) if "replay" in obj and kind == "sub" else None
            msg = wire.from_client(obj, pid, self.models, self._aliases.get(conn, ()))
        except FrameError as exc:
            self._refuse(conn, obj, exc.reason, exc.message)
            return
        if isinstance(msg, Pub) and (why := self.replays.refuses(msg.model)) is not None:
            self._refuse(conn, obj, "forbidden", f"pub: {why}")
            return
        grant = self._grants.get(conn)
        if grant is not None:
            why = self.auth.check(grant, msg, self.models)
            if why is not None:
                # a client renews a refused sub/adv every ρ: log it once per connection
                seen = self._forbidden.setdefault(conn, set())
                logged = why if obj["kind"] in ("sub", "adv") else None
                again = logged in seen
                if logged is not None and len(seen) < 1000:
                    seen.add(logged)
                self._refuse(conn, obj, "forbidden", why, logging.DEBUG if again else None)
                return
        lim = self._limits.get(conn)
        ilim = self._ilimits.get(conn)
        kind = "sub" if isinstance(msg, (Sub, Unsub)) else "adv"
        standings: list[tuple[ClientLimits, Hashable]] = []
        if isinstance(msg, (Sub, Adv, Unsub, Unadv)):
            entry = (msg.model, msg.filter)
            if lim is not None:
                standings.append((lim, entry))
            if ilim is not None:  # the identity's count: per client id, model and filter
                standings.append((ilim.held, (pid, *entry)))
            if isinstance(msg, (Sub, Adv)):
                for standing, key in standings:
                    refusal = standing.admit(kind, key)
                    if refusal is not None:
                        again = kind in standing.logged
                        standing.logged.add(kind)
                        # logged once per connection: a client renews what was refused every ρ
                        self._refuse(
                            conn,
                            obj,
                            "limit",
                            f"{kind}: {refusal}",
                            logging.DEBUG if again else None,
                        )
                        return
            else:
                for standing, key in standings:
                    standing.release(kind, key)
        try:
            self.broker.receive(msg, pid)
        except PubsiftError as exc:
            self._refuse(conn, obj, "refused", one_line(exc))
            return
        if isinstance(msg, (Sub, Adv)):
            for standing, key in standings:
                standing.hold(kind, key)
        if isinstance(msg, (Sub, Unsub)):
            self.replays.processed(pid, obj, msg, replay)

    def _reader(self, name: str) -> Callable[[bytes], Any]:
        """The reader of model ``name``'s event bytes for what this broker matches them
        with (``FilterModel.wire_reader``, DESIGN §2.6: only the fields some filter
        names, where the model can): its routing tables and every identity's authorized
        publishing filters. The events serve those matches only: frames carry their
        bytes on."""
        grants = self.auth.grants
        made = self._readers.get(name)
        if made is not None and made[0] == len(grants):
            return made[1]
        assert self.broker is not None
        routing = self.broker.routing[name]
        indexes = [t.index for t in (routing.subs, routing.advs) if t is not None]
        indexes += [g.publish[name] for g in grants if name in g.publish]
        read = self.models[name].wire_reader(indexes)
        self._readers[name] = (len(grants), read)
        return read

    def _publications(self, conn: Connection, pid: str, obj: dict[str, Any]) -> None:
        """A ``pubs`` frame (docs/protocol.md §3.1): routed as the publications of as many
        ``pub`` frames, in order, in one batch (:class:`~pubsift.core.messages.Pubs`); a
        refused one gets an ``error`` with the frame's ``ref`` and its ``index``, and the
        others go on."""
        assert self.broker is not None
        if (refusal := self.replays.refuses(obj.get("model"))) is not None:
            self._refuse(conn, obj, "forbidden", f"pubs: {refusal}")
            return
        try:
            batch, refused = wire.publications(
                obj, pid, self.models, self._aliases.get(conn, ()), self._reader
            )
        except FrameError as exc:
            self._refuse(conn, obj, exc.reason, exc.message)
            return
        grant = self._grants.get(conn)
        if grant is not None and not grant.unrestricted and batch.events:
            batch, forbidden = self._authorized(grant, batch, refused)
            refused = sorted(refused + forbidden, key=lambda r: r[0])
        for i, why in refused:
            self._refuse(conn, obj, why.reason, why.message, index=i)
        if not batch.events:
            return
        try:
            self.broker.receive(batch, pid)
        except PubsiftError as exc:
            self._refuse(conn, obj, "refused", f"pubs: {one_line(exc)}")

    def _authorized(
        self, grant: Grant, batch: wire.WirePubs, refused: wire.Refusals
    ) -> tuple[wire.WirePubs, wire.Refusals]:
        """The publications of ``batch`` that ``grant`` allows, and the refusal of each
        other one, by its index in the frame (``refused``: the frame's pairs refused
        already, which the batch does not hold)."""
        kept = wire.WirePubs(batch.client, batch.model, [], [], [], [])
        forbidden: wire.Refusals = []
        assert batch.wires is not None and batch.pairs is not None
        assert kept.wires is not None and kept.pairs is not None
        gone = {i for i, _ in refused}
        positions = [i for i in range(len(batch.events) + len(gone)) if i not in gone]
        for j, event in enumerate(batch.events):
            pub = Pub(batch.client, batch.model, event, batch.pub_ids[j])
            why = self.auth.check(grant, pub, self.models)
            if why is not None:
                i = positions[j]
                forbidden.append((i, FrameError("forbidden", f"pubs[{i}]: {why}")))
                continue
            kept.events.append(event)
            kept.pub_ids.append(batch.pub_ids[j])
            kept.wires.append(batch.wires[j])
            kept.pairs.append(batch.pairs[j])
        return kept, forbidden

    def _refuse(
        self,
        conn: Connection,
        obj: dict[str, Any],
        reason: str,
        message: str,
        level: int | None = None,
        index: int | None = None,
    ) -> None:
        """Answer one bad message with an ``error`` frame (echoing its ``ref``; ``index``:
        which publication of a ``pubs`` frame), keep the connection."""
        self.frame_errors[reason] += 1
        log.log(level or logging.WARNING, "%s %s: %s: %s", conn.role, conn.id, reason, message)
        err = error(reason, message)
        if "ref" in obj:
            err["ref"] = obj["ref"]
        if index is not None:
            err["index"] = index
        conn.send(err)

    # -- neighbour links ------------------------------------------------------------------
    def _duplicate(self, pid: str, conn: Connection) -> bool:
        """Whether a live link to ``pid`` is kept instead of ``conn`` (two brokers that
        dial each other keep the connection dialled by the smaller id); a link it
        replaces is closed."""
        old = self.port.neighbours.get(pid)
        if old is None or old is conn:
            return False
        dialler_old = self.id if old.dialled else pid
        dialler_new = self.id if conn.dialled else pid
        if dialler_old != dialler_new and dialler_old < dialler_new:
            return True
        log.info("link to %s replaced by a new connection from %s", pid, conn.peer)
        old.close("duplicate-link", "replaced by a newer link between the same brokers")
        self._link_down(pid, old)
        return False

    def _check_neighbour(self, conn: Connection, pid: str) -> None:
        if pid == self.id:
            raise FrameError("cycle", f"a broker cannot link to itself (id {pid!r})")
        if pid in self.port.clients:
            raise FrameError("bad-hello", f"id {pid!r} is a connected client's id")
        if self._duplicate(pid, conn):
            raise FrameError("duplicate-link", f"brokers {self.id} and {pid} are already linked")

    def _check_reach(self, pid: str, theirs: Any) -> frozenset[str]:
        if not isinstance(theirs, list) or not all(isinstance(x, str) for x in theirs):
            raise FrameError("bad-hello", f"reach must be a list of broker ids, got {theirs!r}")
        common = self.reach.conflict(pid, theirs)
        if common:
            raise FrameError(
                "cycle",
                f"link {self.id} - {pid} would close a cycle: both already reach "
                f"{', '.join(sorted(common))}",
            )
        return frozenset(theirs)

    def _check_link_token(self, conn: Connection, pid: str, token: Any) -> None:
        """A broker link must present ``broker.link_token`` or a certificate named in
        ``tls.link_names`` when either is set; with identities but neither, links are not
        accepted at all (else any client could connect as a broker and get past the
        authorization checks)."""
        expected = self.config.link_token
        tls = self.config.tls
        by_cert = tls is not None and bool(tls.link_names)
        if by_cert:
            assert tls is not None
            names = peer_names(conn.writer.get_extra_info)
            if tls.link_allowed(names):
                log.info("link from broker %s: certificate %s accepted", pid, show_names(names))
                return
        if expected is None and not by_cert and not self.auth.enabled:
            return
        if expected is None and not by_cert:
            why = (
                "this broker has [identities] and neither broker.link_token nor "
                "tls.link_names: it accepts no links"
            )
        elif expected is None:
            why = (
                f"its certificate ({show_names(peer_names(conn.writer.get_extra_info))}) "
                "is not one of tls.link_names"
            )
        elif not isinstance(token, str) or not hmac.compare_digest(
            expected.encode("utf-8"), token.encode("utf-8")
        ):
            why = "no token in the hello" if token is None else "wrong link token"
        else:
            return
        raise FrameError("unauthorized", f"link from broker {pid!r}: {why}")

    async def _accept_broker(self, conn: Connection, pid: str, token: Any = None) -> None:
        """The acceptor's side: hello (with our reach) -> their reach -> our reach = up."""
        self._check_link_token(conn, pid, token)
        self._check_neighbour(conn, pid)
        conn.send(
            hello("broker", self.id, reach=sorted(self.reach.without(pid)), **self._lease_info())
        )
        obj = await asyncio.wait_for(conn.recv(), self.config.hello_timeout)
        if obj is None:
            return
        if obj.get("kind") == "error":
            log.warning(
                "link from %s refused by it: %s: %s", pid, obj.get("reason"), obj.get("message")
            )
            return
        if obj.get("kind") != "reach":
            raise FrameError("bad-hello", f"expected reach after hello, got {obj['kind']!r}")
        try:
            theirs = self._check_reach(pid, obj.get("brokers"))
            self._check_neighbour(conn, pid)
        except FrameError as exc:
            log.warning("refused link from %s (%s): %s", pid, conn.peer, exc.message)
            raise
        await self._serve_neighbour(conn, pid, theirs)

    async def _dial_forever(self, address: Address) -> None:
        backoff = Backoff(self.config.backoff_initial, self.config.backoff_max)
        failing = False  # the first failure of a series is a warning, the others debug
        while not self._stopping:
            tls = self.config.tls
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(
                        address.host,
                        address.port,
                        limit=1 << 16,
                        ssl=tls.link_context if tls is not None else None,
                    ),
                    HANDSHAKE_TIMEOUT,
                )
            except (OSError, TimeoutError) as exc:
                delay = backoff.next()
                log.log(
                    logging.DEBUG if failing else logging.WARNING,
                    "cannot reach neighbour %s (%s); retrying every %gs at most",
                    address,
                    _why(exc) if isinstance(exc, OSError) else "timeout",
                    self.config.backoff_max,
                )
                failing = True
                await asyncio.sleep(delay)
                continue
            failing = False
            conn = self._connection(reader, writer, dialled=True)
            duplicate = False
            try:
                up = await self._dial(conn, address)
                if up is not None:
                    backoff.reset()
                    await self._serve_neighbour(conn, *up)
            except FrameError as exc:
                duplicate = exc.reason == "duplicate-link"
                if duplicate:  # both sides dial: the other side's connection is kept
                    log.info(
                        "link to %s: %s; dialling it again when that link goes down",
                        address,
                        exc.message,
                    )
                else:
                    log.warning("link to %s: %s", address, exc)
                    conn.close(exc.reason, exc.message)
            except TimeoutError:
                log.warning("link to %s: no answer within %gs", address, HANDSHAKE_TIMEOUT)
            except (ConnectionError, OSError) as exc:
                log.info("link to %s lost: %s", address, exc)
            finally:
                await conn.wait_closed()
                self._conns.discard(conn)
            if duplicate:
                linked = set(self.port.neighbours)
                while not self._stopping and linked and linked <= set(self.port.neighbours):
                    await asyncio.sleep(0.5)
                backoff.reset()
            if not self._stopping:
                delay = backoff.next()
                log.info("re-dialling %s in %.2fs", address, delay)
                await asyncio.sleep(delay)

    async def _dial(self, conn: Connection, address: Address) -> tuple[str, frozenset[str]] | None:
        """The dialler's side: hello -> their hello (with reach) -> our reach -> their
        reach = up. Returns (id, their reach) or None when the peer went away."""
        token = {"token": self.config.link_token} if self.config.link_token else {}
        conn.send(hello("broker", self.id, **token, **self._lease_info()))
        obj = await asyncio.wait_for(conn.recv(), HANDSHAKE_TIMEOUT)
        if obj is None:
            return None
        _, pid = check_hello(obj, "broker")
        conn.features = _features(obj)
        conn.peer_max_frame_bytes = _frame_limit(obj)
        conn.role, conn.id = "broker", pid
        tls = self.config.tls
        if tls is not None and tls.link_names:  # links authenticated by certificate, both ways
            names = peer_names(conn.writer.get_extra_info)
            if not tls.link_allowed(names):
                raise FrameError(
                    "unauthorized",
                    f"neighbour {pid}'s certificate ({show_names(names)}) is not one of "
                    "tls.link_names",
                )
        self._check_neighbour(conn, pid)
        try:
            reserved = self._check_reach(pid, obj.get("reach"))
        except FrameError as exc:
            log.warning("not linking to %s (%s): %s", pid, address, exc.message)
            raise
        # Reserve what the link will reach, so that a handshake running meanwhile on
        # another link of this broker sees it (the acceptor checks and commits in one step).
        self.reach.update(pid, reserved)
        try:
            conn.send({"kind": "reach", "brokers": sorted(self.reach.without(pid))})
            obj = await asyncio.wait_for(conn.recv(), HANDSHAKE_TIMEOUT)
            if obj is None:
                raise ConnectionResetError(f"{pid} closed the connection during the handshake")
            if obj.get("kind") == "error":
                raise FrameError(str(obj.get("reason")), f"refused by {pid}: {obj.get('message')}")
            if obj.get("kind") != "reach":
                raise FrameError("bad-hello", f"expected reach from {pid}, got {obj['kind']!r}")
            theirs = self._check_reach(pid, obj.get("brokers"))
            self._check_neighbour(conn, pid)
        except BaseException:
            if pid not in self.port.neighbours:
                self.reach.drop(pid)
            raise
        return pid, theirs

    def _lease_info(self) -> dict[str, Any]:
        return {
            "features": list(LINK_FEATURES),
            "max_frame_bytes": self.config.max_frame_bytes,
            "lease": {"period": self.config.lease_period, "refresh": self.config.lease_refresh},
            **self._heartbeat_info(),
        }

    def _heartbeat_info(self) -> dict[str, Any]:
        cfg = self.config
        return {
            "heartbeat": {
                "interval": cfg.heartbeat_interval,
                "max_missed": cfg.heartbeat_max_missed,
            }
        }

    def _start_heartbeat(self, conn: Connection) -> None:
        conn.start_heartbeat(self.config.heartbeat_interval, self.config.heartbeat_max_missed)

    async def _serve_neighbour(self, conn: Connection, pid: str, theirs: frozenset[str]) -> None:
        assert self.broker is not None
        if not conn.dialled:  # the acceptor confirms: the link is up on both sides
            conn.send({"kind": "reach", "brokers": sorted(self.reach.without(pid))})
        self.port.neighbours[pid] = conn
        self._absent.pop(pid, None)
        self.broker.connect(pid)
        self.reach.update(pid, theirs)
        if not conn.dialled:  # it was just told; a dialler's reach may be older than now
            self.reach.changed_views([pid])
        self._start_heartbeat(conn)
        log.info(
            "link %s - %s up (%s %s)", self.id, pid, "to" if conn.dialled else "from", conn.peer
        )
        self._announce_reach()
        self._resync(exclude=pid)
        try:
            await self._receive(conn, f"broker {pid}", self._from_broker)
        finally:
            self._link_down(pid, conn)

    def _link_down(self, pid: str, conn: Connection) -> None:
        if self.port.neighbours.get(pid) is not conn:
            return
        del self.port.neighbours[pid]
        self.reach.drop(pid)
        self._absent[pid] = time.monotonic()
        log.log(
            logging.DEBUG if self._stopping else logging.INFO,
            "link %s - %s down%s",
            self.id,
            pid,
            f" ({conn.close_reason})" if conn.close_reason else "",
        )
        self._announce_reach()

    def _announce_reach(self) -> None:
        for n, view in self.reach.changed_views(list(self.port.neighbours)).items():
            self.port.neighbours[n].send({"kind": "reach", "brokers": sorted(view)})

    def _resync(self, exclude: str | None) -> None:
        """Ask this side of the tree (away from ``exclude``) to renew its leases now."""
        for n, c in self.port.neighbours.items():
            if n != exclude:
                c.send({"kind": "resync"})
        for c in self.port.clients.values():
            c.send({"kind": "renew"})

    def _from_broker(self, conn: Connection, pid: str, obj: dict[str, Any]) -> None:
        assert self.broker is not None
        kind = obj["kind"]
        if kind == "reach":
            try:
                theirs = self._check_reach(pid, obj.get("brokers"))
            except FrameError as exc:
                log.warning("link %s - %s dropped: %s", self.id, pid, exc.message)
                conn.close(exc.reason, exc.message)
                return
            self.reach.update(pid, theirs)
            self._announce_reach()
            return
        if kind == "resync":
            self._resync(exclude=pid)
            return
        if kind == "error":
            log.warning("broker %s reports: %s: %s", pid, obj.get("reason"), obj.get("message"))
            return
        if kind == "forwards":
            self._forwards(conn, pid, obj)
            return
        if kind == "replay":
            self.replays.route(conn, obj, from_client=False)
            return
        try:
            msg = wire.from_broker(obj, self.models, conn.body)
        except FrameError as exc:
            self._refuse(conn, obj, exc.reason, exc.message)
            return
        try:
            self.broker.receive(msg, pid)
        except PubsiftError as exc:
            self._refuse(conn, obj, "refused", one_line(exc))

    def _forwards(self, conn: Connection, pid: str, obj: dict[str, Any]) -> None:
        """A ``forwards`` frame: each forward as if it came in a frame of its own. When
        the routing table holds no entry for any destination but the sender, nothing of
        it can go anywhere: its events are not parsed at all (counted as useless
        forwards), as a broker needs to parse only what its own routing table reads."""
        assert self.broker is not None
        items_ = obj.get("pubs")
        model = obj.get("model")
        if (
            isinstance(items_, list)
            and isinstance(model, str)
            and model in self.models
            and not self.broker.routes_beyond(model, pid)
        ):
            self.broker.useless_forwards += len(items_)
            return
        try:
            batch, refused = wire.forwards(obj, self.models, self._reader)
        except FrameError as exc:
            self._refuse(conn, obj, exc.reason, exc.message)
            return
        for i, why in refused:
            self._refuse(conn, obj, why.reason, why.message, index=i)
        if not batch.events:
            return
        try:
            self.broker.receive(batch, pid)
        except PubsiftError as exc:
            self._refuse(conn, obj, "refused", f"forwards: {one_line(exc)}")
