"""What a broker daemon does for replay (Mühl 2002, "Large-Scale Content-Based
Publish/Subscribe Systems", §5.2.3; docs/protocol.md §14): it checks the replay
description of a ``sub``, publishes the subscription event once the subscription is
processed, refuses publications of subscription events by clients (only the
infrastructure publishes them), routes ``replay`` frames to the subscriber's broker and
hands them to that subscriber alone, and hosts the ``[[history]]`` histories of its
configuration.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from typing import TYPE_CHECKING, Any

from pubsift.adapters.broker.frames import FrameError, encode
from pubsift.adapters.broker.replay import (
    MAX_REPLAY,
    SUBSCRIPTIONS,
    Replay,
    ReplayError,
    check_frame,
    next_hop,
    parse,
    subscription_event,
    subscription_events,
)
from pubsift.adapters.broker.wire import dumps
from pubsift.core.errors import PubsiftError, one_line
from pubsift.core.messages import Adv, Pub, Sub, Unsub

if TYPE_CHECKING:
    from pubsift.adapters.broker.connection import Connection
    from pubsift.adapters.broker.daemon import BrokerDaemon
    from pubsift.adapters.broker.history import History
    from pubsift.core.model import FilterModel

log = logging.getLogger("pubsift.broker")


def with_subscription_model(models: dict[str, FilterModel]) -> dict[str, FilterModel]:
    """``models`` and the model of subscription events (when the broker routes records)."""
    if "records" in models and SUBSCRIPTIONS not in models:
        models[SUBSCRIPTIONS] = subscription_events()
    return models


class ReplayService:
    """The replay duties of ``daemon``."""

    def __init__(self, daemon: BrokerDaemon, max_replay: int = MAX_REPLAY) -> None:
        self.daemon = daemon
        self.max_replay = max_replay
        #: the publisher of this broker's subscription events (new per start, so that a
        #: restarted broker's sequence numbers are never taken for duplicates)
        self.publisher = ""
        self._seq = 0
        #: counters: subscription events published, replay frames routed and lost
        self.published = self.routed = self.lost = 0
        self.histories: list[History] = []
        self._renewer: asyncio.Task[None] | None = None
        self._expirer: asyncio.Task[None] | None = None
        #: the local clients' subscriptions and when each runs out (for the subscription
        #: and unsubscription events: a renewal is no new subscription)
        self.live: dict[tuple[str, str, Any], float] = {}

    @property
    def enabled(self) -> bool:
        return SUBSCRIPTIONS in self.daemon.models

    def start(self) -> None:
        b = self.daemon.broker
        assert b is not None
        if not self.enabled:
            return
        self.publisher = f"subscriptions-{self.daemon.id}-{uuid.uuid4().hex[:8]}"
        b.attach(self.publisher)
        self._expirer = asyncio.ensure_future(self._expire())
        if self.daemon.config.advertisements:  # subscription events go where histories are
            self._renewer = asyncio.ensure_future(self._advertise())

    async def _advertise(self) -> None:
        b, m = self.daemon.broker, self.daemon.models[SUBSCRIPTIONS]
        assert b is not None
        while True:
            b.receive(Adv(self.publisher, SUBSCRIPTIONS, m.parse_filter("true")), self.publisher)
            await asyncio.sleep(self.daemon.config.lease_refresh)

    # -- subscriptions with a replay description ------------------------------------------
    def description(self, obj: dict[str, Any]) -> Replay:
        """The replay description of a ``sub`` frame (``invalid-message`` when malformed
        or beyond ``max_replay``; nothing is subscribed then)."""
        if not self.enabled:
            raise FrameError("refused", "sub: this broker does not replay (it routes no records)")
        try:
            return parse(obj["replay"], self.max_replay)
        except ReplayError as exc:
            raise FrameError("invalid-message", f"sub: {exc}") from None

    def processed(
        self, client: str, obj: dict[str, Any], msg: Sub | Unsub, replay: Replay | None
    ) -> None:
        """After the broker processed ``msg`` of a local client: the subscription event
        of a new subscription, or of one with a replay description (a renewal otherwise
        publishes nothing), the unsubscription event of an ``unsub`` (Mühl §5.2.4: what
        factories watch). A subscription not renewed for π goes as if unsubscribed
        (:meth:`_expire`)."""
        if not self.enabled or msg.model == SUBSCRIPTIONS:
            return
        key = (client, msg.model, msg.filter)
        if isinstance(msg, Unsub):
            if self.live.pop(key, None) is not None:
                self._publish(key, obj.get("ref"), None, "unsubscription")
            return
        now = time.monotonic()
        new = self.live.get(key, 0.0) < now
        self.live[key] = now + self.daemon.config.lease_period
        if new or replay is not None:
            self._publish(key, obj.get("ref"), replay, "subscription")

    async def _expire(self) -> None:
        period = min(self.daemon.config.lease_refresh, 1.0)
        while True:
            await asyncio.sleep(period)
            now = time.monotonic()
            for key in [k for k, until in self.live.items() if until < now]:
                del self.live[key]
                self._publish(key, None, None, "unsubscription")

    def _publish(
        self, key: tuple[str, str, Any], ref: Any, replay: Replay | None, kind: str
    ) -> None:
        client, model, f = key
        b = self.daemon.broker
        assert b is not None
        m = self.daemon.models[model]
        event = subscription_event(
            self.daemon.id, client, ref, model, m.dump_filter(f), replay, kind
        )
        se = self.daemon.models[SUBSCRIPTIONS]
        self._seq += 1
        b.receive(
            Pub(
                self.publisher,
                SUBSCRIPTIONS,
                se.load_event(event),
                (self.publisher, self._seq),
                dumps(event),
            ),
            self.publisher,
        )
        self.published += 1

    @staticmethod
    def refuses(model: Any) -> str | None:
        """Why a client may not publish in ``model`` (None: it may)."""
        if model == SUBSCRIPTIONS:
            return "only the brokers publish subscription events (model 'subscriptions')"
        return None

    # -- replay frames ----------------------------------------------------------------------
    def route(self, conn: Connection, obj: dict[str, Any], from_client: bool) -> None:
        """Send a ``replay`` frame on toward its subscriber's broker, or hand it to the
        subscriber when this is that broker."""
        d = self.daemon
        why = check_frame(obj)
        if why is not None:
            d._refuse(conn, obj, "invalid-message", why)
            return
        if from_client and d.auth.enabled:
            grant = d._grants.get(conn)
            if grant is None or not grant.unrestricted:
                d._refuse(
                    conn,
                    obj,
                    "forbidden",
                    "replay: only the histories a broker hosts answer replays on a broker "
                    "with identities",
                )
                return
        hop = next_hop(d.id, obj["broker"], d.reach.via)
        target = (
            d.port.clients.get(obj["client"])
            if hop == d.id
            else d.port.neighbours.get(hop)
            if hop is not None
            else None
        )
        data = encode(obj)
        limit = (target.peer_max_frame_bytes if target is not None else None) or (
            d.config.max_frame_bytes
        )
        if target is None or len(data) - 4 > limit or not target.send(data):
            self.lost += 1
            log.debug("replay for %s/%s lost: no route", obj["broker"], obj["client"])
            return
        self.routed += 1

    # -- hosted histories -------------------------------------------------------------------
    async def start_histories(self) -> None:
        from pubsift.adapters.broker.config import ConfigError
        from pubsift.adapters.broker.gateway import loopback
        from pubsift.adapters.broker.history import History
        from pubsift.adapters.broker.history_store import HistoryError

        d = self.daemon
        cfg = d.config
        tls = cfg.tls
        for i, h in enumerate(cfg.histories):
            token = d.auth.internal(f"<history {i} of {d.id}>") if d.auth.enabled else None
            try:
                hist = History(
                    h,
                    loopback(cfg.listen, d.address.port, tls is not None),
                    models=d.models,
                    token=token,
                    tls=tls.loopback_context if tls is not None else None,
                    max_frame_bytes=cfg.max_frame_bytes,
                )
            except (HistoryError, PubsiftError) as exc:
                raise ConfigError(f"{cfg.source}: history[{i}]: {one_line(exc)}") from None
            await hist.start()
            self.histories.append(hist)

    async def stop(self) -> None:
        for t in (self._renewer, self._expirer):
            if t is not None:
                t.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await t
        for h in self.histories:
            with contextlib.suppress(Exception):
                await h.stop()
