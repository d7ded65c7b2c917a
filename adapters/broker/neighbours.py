"""A broker's links to its neighbours (docs/protocol.md §5-§7): dialling the configured
neighbours with backoff, accepting and checking a neighbour's hello (no cycle, no second
link between the same brokers, the link token or certificate of §11), the reach each side
announces (the brokers behind a link, which keeps the tree acyclic), heartbeats and leases
told in the hello, and what a neighbour sends (admin messages, forwards one by one or in
``forwards`` batches). Mühl 2002, "Large-Scale Content-Based Publish/Subscribe Systems",
§3.4 (an acyclic broker network) and §3.7 (leases renewed over a link that comes up). One
part of :class:`~pubsift.adapters.broker.daemon.BrokerDaemon`, which holds the state."""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pubsift.adapters.broker import wire
from pubsift.adapters.broker.auth import Authorizer
from pubsift.adapters.broker.backoff import Backoff
from pubsift.adapters.broker.config import Address, BrokerConfig
from pubsift.adapters.broker.connection import Connection
from pubsift.adapters.broker.frames import (
    FrameError,
    check_hello,
    hello,
    hello_features,
    hello_frame_limit,
)
from pubsift.adapters.broker.links import Reach
from pubsift.adapters.broker.port import ConnectionPort
from pubsift.adapters.broker.replay_service import ReplayService
from pubsift.adapters.broker.tls import peer_names, reason_of, show_names
from pubsift.core.broker import Broker
from pubsift.core.errors import PubsiftError, one_line
from pubsift.core.model import FilterModel

log = logging.getLogger("pubsift.broker")

#: what a broker reads from a neighbour beyond protocol 1's first frames (its link hello
#: says; ``forwards``: batches of forwarded publications, docs/protocol.md §7)
LINK_FEATURES = ("forwards",)
#: seconds a dialled broker has to answer (an accepted connection has ``limits.hello_timeout``
#: for its TLS handshake and its hello)
HANDSHAKE_TIMEOUT = 10.0


class NeighbourLinks:
    """The daemon's links to neighbours (see the module); mixed into
    :class:`~pubsift.adapters.broker.daemon.BrokerDaemon`, whose attributes it uses."""

    if TYPE_CHECKING:  # the daemon's state and the steps of its sessions this part uses
        config: BrokerConfig
        models: dict[str, FilterModel]
        replays: ReplayService
        auth: Authorizer
        port: ConnectionPort
        id: str
        broker: Broker | None
        reach: Reach
        _absent: dict[str, float]
        _stopping: bool
        _conns: set[Connection]

        def _refuse(
            self,
            conn: Connection,
            obj: dict[str, Any],
            reason: str,
            message: str,
            level: int | None = None,
            index: int | None = None,
        ) -> None: ...

        async def _receive(
            self,
            conn: Connection,
            who: str,
            handle: Callable[[Connection, str, dict[str, Any]], None],
            pace: Callable[[Connection, str, dict[str, Any]], float] | None = None,
        ) -> None: ...

        def _reader(self, name: str) -> Callable[[bytes], Any]: ...

        def _connection(
            self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, dialled: bool
        ) -> Connection: ...

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
                    reason_of(exc) if isinstance(exc, OSError) else "timeout",
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
        conn.features = hello_features(obj)
        conn.peer_max_frame_bytes = hello_frame_limit(obj)
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
            msg = wire.from_broker(obj, self.models, conn.body, self._reader)
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
