"""Admitting clients to a broker: who a client is (an identity, proved by a token or a
TLS client certificate: docs/protocol.md §10; Fiege, Zeidler & Buchmann, "Security Aspects
in Publish/Subscribe Systems", DEBS 2004, §4.1), the id it has in the network (§13), and
the limits its connection and its identity are held to (§12: subscriptions, publication
rate, connections, queued bytes). One part of
:class:`~pubsift.adapters.broker.daemon.BrokerDaemon`, which holds the state it reads."""

from __future__ import annotations

import hmac
import logging
from typing import TYPE_CHECKING, Any

from pubsift.adapters.broker.auth import Authorizer, Grant
from pubsift.adapters.broker.client_limits import (
    ClientLimits,
    IdentityLimits,
    Limits,
    QueueBudget,
)
from pubsift.adapters.broker.config import BrokerConfig, ClientIdentity
from pubsift.adapters.broker.connection import Connection
from pubsift.adapters.broker.port import ConnectionPort
from pubsift.adapters.broker.tls import peer_names

log = logging.getLogger("pubsift.broker")


class ClientAdmission:
    """The daemon's admission of clients (see the module); mixed into
    :class:`~pubsift.adapters.broker.daemon.BrokerDaemon`, whose attributes it uses."""

    if TYPE_CHECKING:  # the daemon's state this part reads and writes
        config: BrokerConfig
        auth: Authorizer
        gateway: Any
        port: ConnectionPort
        throttled: int
        _limits: dict[Connection, ClientLimits]
        _ilimits: dict[Connection, IdentityLimits]
        _identities: dict[str, IdentityLimits]
        _exempt: set[Connection]

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

    def _identity(self, grant: Grant | None) -> ClientIdentity | None:
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
