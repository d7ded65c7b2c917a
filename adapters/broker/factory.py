"""Factories (Mühl 2002, "Large-Scale Content-Based Publish/Subscribe Systems", §5.2.4
"Factory Concept", §5.3.5): a producer runs only while someone listens.

The brokers publish a subscription event for every new subscription of a local client
and an unsubscription event when it is withdrawn or runs out (model ``subscriptions``,
docs/protocol.md §14). A :class:`Factory` subscribes to those of its model and keeps the
set of subscriptions that overlap what its service produces (``produces``, a filter of
that model); it starts the service when the set gets its first member and stops it when
the last one goes, as REBECA's ExampleFactory does.

A factory learns of the subscriptions made after it subscribed (a subscription made
earlier is seen when its broker restarts, or not at all): start factories before the
subscribers, or with the brokers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from pubsift.adapters.broker.client import AsyncClient, Notification
from pubsift.adapters.broker.replay import SUBSCRIPTIONS
from pubsift.core.errors import PubsiftError
from pubsift.core.model import Filter
from pubsift.core.strict_json import strict_json

log = logging.getLogger("pubsift.factory")


class Factory:
    """Runs ``start()`` when the first subscription of ``model`` overlapping ``produces``
    appears and ``stop()`` when the last one goes; ``client`` must know the model
    ``subscriptions`` (:class:`~pubsift.adapters.broker.replay.SubscriptionEvents`)."""

    def __init__(
        self,
        client: AsyncClient,
        model: str,
        produces: Filter,
        start: Callable[[], Awaitable[None] | None],
        stop: Callable[[], Awaitable[None] | None],
    ) -> None:
        self.client, self.model, self.produces = client, model, produces
        self._start, self._stop = start, stop
        #: the overlapping subscriptions, by (broker, client, filter as JSON text)
        self.served: set[tuple[str, str, str]] = set()
        self.starts = self.stops = 0

    @property
    def running(self) -> bool:
        return bool(self.served)

    async def open(self) -> None:
        """Subscribe to the subscription and unsubscription events of the model."""
        await self.client.subscribe(
            SUBSCRIPTIONS, f"model = {json.dumps(self.model)}", self._event, confirm=True
        )

    async def _event(self, n: Notification) -> None:
        se: Any = n.wire
        m = self.client.model(self.model)
        try:
            kind, key = se["type"], (se["broker"], se["client"], se["filter"])
            subscription = m.load_filter(strict_json(se["filter"]))
        except (KeyError, TypeError, ValueError, PubsiftError) as exc:
            log.warning("factory: malformed subscription event dropped: %s", exc)
            return
        if not m.overlaps(subscription, self.produces):
            return
        was = self.running
        if kind == "subscription":
            self.served.add(key)
        elif kind == "unsubscription":
            self.served.discard(key)
        if self.running and not was:
            self.starts += 1
            log.info("factory: a subscription wants it (%s/%s): starting", *key[:2])
            result = self._start()
            if result is not None:
                await result
        elif was and not self.running:
            self.stops += 1
            log.info("factory: the last subscription went (%s/%s): stopping", *key[:2])
            result = self._stop()
            if result is not None:
                await result
