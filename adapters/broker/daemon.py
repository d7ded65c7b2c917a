"""The broker daemon: the unchanged :class:`pubsift.core.broker.Broker` behind asyncio
streams.

Transport, framing, leases in real time and reconnection live here; every routing decision
stays in core. The daemon hands each decoded message to ``Broker.receive`` (the broker is
synchronous and processes one message at a time in FIFO order, Mühl 2002, "Large-Scale
Content-Based Publish/Subscribe Systems", §3.4, Fig. 3.6) and gives the broker a
:class:`~pubsift.adapters.broker.port.ConnectionPort` that only puts frames on
per-connection queues.

The daemon is three parts: this module (life cycle, the lease clock, client sessions and
what clients send), :mod:`.admission` (who a client is and the limits it is held to) and
:mod:`.neighbours` (links to neighbour brokers: dialling, hellos, reach, forwards).

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
import logging
import signal
import time
from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from pubsift.adapters.broker import wire
from pubsift.adapters.broker.admission import ClientAdmission
from pubsift.adapters.broker.auth import Authorizer, Grant
from pubsift.adapters.broker.client_limits import (
    ClientLimits,
    IdentityLimits,
)
from pubsift.adapters.broker.config import Address, BrokerConfig, ConfigError
from pubsift.adapters.broker.connection import Connection
from pubsift.adapters.broker.frames import (
    FrameError,
    check_hello,
    error,
    hello,
    hello_features,
    hello_frame_limit,
)
from pubsift.adapters.broker.latency import LatencyHistogram
from pubsift.adapters.broker.links import Reach
from pubsift.adapters.broker.neighbours import NeighbourLinks
from pubsift.adapters.broker.port import ConnectionPort
from pubsift.adapters.broker.replay_service import ReplayService, with_subscription_model
from pubsift.adapters.broker.tls import TLSServer, reason_of
from pubsift.core.broker import Broker
from pubsift.core.errors import PubsiftError, one_line
from pubsift.core.messages import (
    Adv,
    Pub,
    Sub,
    Unadv,
    Unsub,
)
from pubsift.core.model import FilterModel

log = logging.getLogger("pubsift.broker")

#: what this broker speaks beyond protocol 1's first frames, told in its hello (a client
#: sends ``pubs`` frames only to a broker that says so; docs/protocol.md §2)
FEATURES = ("pubs", "replay")


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


class BrokerDaemon(ClientAdmission, NeighbourLinks):
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
        #: accepted connections closed since the start (a serving process collects its
        #: garbage after closes: ``pubsift.adapters.broker.cli.collector_clock``)
        self.closed_connections = 0
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
                f"{reason_of(exc)}"
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
                    f"{reason_of(exc)}"
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
                    f"{reason_of(exc)}"
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
                conn.features = hello_features(first)
                conn.peer_max_frame_bytes = hello_frame_limit(first)
                await self._serve_client(conn, nid, pid)
            else:
                conn.features = hello_features(first)
                conn.peer_max_frame_bytes = hello_frame_limit(first)
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
            self.closed_connections += 1
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
            msg = wire.from_client(obj, pid, self.models, self._aliases.get(conn, ()), self._reader)
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
