"""A history: a client of the broker network that records what it receives and answers
replay requests (Mühl 2002, "Large-Scale Content-Based Publish/Subscribe Systems",
§5.2.3 "Replay Mechanism" and §5.3.4 "Implementing a History").

As REBECA's ExampleHistory, it makes two subscriptions: one with its own filter H, whose
notifications it records (:class:`~pubsift.adapters.broker.history_store.HistoryStore`,
duplicates by ``[publisher, seq]`` dropped), and one to the subscription events of its
model (:mod:`.replay`). For a subscription event whose subscription S overlaps H, it
answers with the stored notifications that match S and fall in the replay description,
oldest first, in ``replay`` frames addressed to the subscriber's broker and client; the
answer ends with ``"end": true`` and its count, or the reason it was refused (more than
``max_replay``). It answers each subscription event in the order it received it among
the notifications it records, which is what makes the switch to live gapless (see
:mod:`.replay`).

Run one with ``pubsift history --config history.toml URL`` or as a ``[[history]]`` table
of ``broker.toml`` (the broker hosts it, connected over loopback).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

import orjson
from pubsift.adapters.broker.client import AsyncClient, Notification
from pubsift.adapters.broker.history_config import HistoryConfig
from pubsift.adapters.broker.history_store import HistoryError, HistoryStore
from pubsift.adapters.broker.replay import (
    FRAME_BYTES,
    SUBSCRIPTIONS,
    Replay,
    ReplayError,
    parse,
    replay_frames,
    subscription_events,
)
from pubsift.adapters.broker.wire import dumps
from pubsift.core.errors import PubsiftError
from pubsift.core.model import FilterModel
from pubsift.core.strict_json import strict_json

log = logging.getLogger("pubsift.history")

#: seconds between two prunings by the retention
PRUNE_INTERVAL = 1.0


class History:
    """The history of ``config`` at the broker ``url``; ``client_options`` go to its
    :class:`~pubsift.adapters.broker.client.AsyncClient` (token, TLS, ...)."""

    def __init__(
        self,
        config: HistoryConfig,
        url: str,
        models: Mapping[str, FilterModel] | None = None,
        **client_options: Any,
    ) -> None:
        self.config = config
        if models is not None and config.model in models:
            model = models[config.model]
        else:
            from pubsift.core.registry import load_model

            model = load_model(config.model)
        self.model = model
        self.client = AsyncClient(
            url,
            id=config.id or f"history-{config.model}-{uuid.uuid4().hex[:8]}",
            models={config.model: model, SUBSCRIPTIONS: subscription_events()},
            **client_options,
        )
        self.filter = self.client.parse_filter(config.model, config.filter)
        self.store = HistoryStore(config.store, config.retention)
        #: counters: notifications recorded, duplicates dropped, replays answered and
        #: refused, store errors
        self.recorded = self.duplicates = self.answered = self.refused = self.errors = 0
        #: when the store last failed to record (the history's clock): the past it holds
        #: has a hole there, so it refuses replays that reach back to it (None: never)
        self.missed_at: float | None = None
        self._dirty = False
        self._busy = False
        self._pruner: asyncio.Task[None] | None = None

    @property
    def id(self) -> str:
        return self.client.id

    async def start(self) -> None:
        """Connect and subscribe (raises BrokerUnavailable if the broker is not there)."""
        await self.client.connect()
        await self.client.subscribe(self.config.model, self.filter, self._record)
        await self.client.subscribe(
            SUBSCRIPTIONS,
            f'type = "subscription" and model = {json.dumps(self.config.model)} and replay exists',
            self._answer,
        )
        self._pruner = asyncio.ensure_future(self._prune_loop())
        log.info(
            "history %s recording %s %s into %s",
            self.id,
            self.config.model,
            self.model.format_filter(self.filter),
            self.config.store,
        )

    async def stop(self) -> None:
        if self._pruner is not None:
            self._pruner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pruner
        await self.client.close()
        self._busy = False
        self._commit()
        self.store.close()

    def _failed(self, exc: HistoryError, lost: bool = False) -> None:
        """A store error (``lost``: notifications were not recorded)."""
        if lost:
            self.missed_at = time.time()
        self.errors += 1
        log.log(
            logging.ERROR if self.errors == 1 else logging.DEBUG, "history %s: %s", self.id, exc
        )

    # -- recording ------------------------------------------------------------------------
    def _record(self, n: Notification) -> None:
        try:
            fresh = self.store.record(n.publisher, n.seq, n.model, dumps(n.wire), time.time())
        except HistoryError as exc:
            self._failed(exc, lost=True)
            return
        if fresh:
            self.recorded += 1
        else:
            self.duplicates += 1
        if not self._dirty:
            self._dirty = True
            asyncio.get_running_loop().call_soon(self._commit)

    def _commit(self) -> None:
        if self._busy:  # a replay reads the store in a thread
            asyncio.get_running_loop().call_later(0.01, self._commit)
            return
        self._dirty = False
        try:
            self.store.commit()
        except HistoryError as exc:
            self._failed(exc, lost=True)  # the turn's transaction is rolled back

    async def _prune_loop(self) -> None:
        r = self.config.retention
        if r.max_age is None and r.max_count is None and r.max_bytes is None:
            return
        while True:
            await asyncio.sleep(PRUNE_INTERVAL)
            if self._busy:
                continue
            try:
                self.store.prune()
            except HistoryError as exc:
                self._failed(exc)

    # -- answering ------------------------------------------------------------------------
    def _complete(self, replay: Replay) -> None:
        """Raise :class:`HistoryError` when the answer to ``replay`` could have a hole:
        the store failed to record since the time it reaches back to (only a bare
        ``since_time`` after the failure says when it starts; any other description
        may reach back before it)."""
        if self.missed_at is None:
            return
        t = replay.since_time
        if t is not None and replay.since is None and t > self.missed_at:
            return
        raise HistoryError(
            f"history {self.id}: its store failed to record notifications at "
            f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(self.missed_at))}: its past "
            "is incomplete (a replay from after then is answered)"
        )

    async def _answer(self, n: Notification) -> None:
        """Answer one subscription event (those that do not overlap: nothing). The
        client awaits it before it hands on the next notification, so what was received
        before the subscription event is recorded, what comes after waits."""
        se = n.wire
        m = self.model
        try:
            broker, client = se["broker"], se["client"]
            ref = strict_json(se["ref"])
            subscription = m.load_filter(strict_json(se["filter"]))
        except (KeyError, TypeError, ValueError, PubsiftError) as exc:
            log.warning("history %s: malformed subscription event dropped: %s", self.id, exc)
            return
        if not isinstance(broker, str) or not isinstance(client, str):
            return
        if not m.overlaps(subscription, self.filter):
            return
        head = {
            "kind": "replay",
            "broker": broker,
            "client": client,
            "ref": ref,
            "history": self.id,
            "request": f"{n.publisher}:{n.seq}",
            "model": self.config.model,
        }
        # at once, an empty frame: the subscriber waits for this answer, asks no more
        self.client.send_frame(replay_frames(head, (), end=False)[0])
        await asyncio.sleep(0)  # written before the select holds the loop
        try:
            replay = parse(strict_json(se["replay"]), self.config.max_replay)
            self._complete(replay)

            def wanted(event: bytes) -> bool:
                return m.matches(subscription, m.load_event(orjson.loads(event)))

            # in a thread: a hosted history shares the broker's loop, which routes on
            # meanwhile (this client hands on nothing before the answer, so only the
            # commit and the pruning could touch the store: they wait, _busy)
            self._busy = True
            try:
                rows = await asyncio.to_thread(
                    self.store.select, self.config.model, replay, wanted, self.config.max_replay
                )
            finally:
                self._busy = False
        except (ReplayError, ValueError) as exc:
            self.refused += 1
            log.info("history %s: replay for %s/%s refused: %s", self.id, broker, client, exc)
            frames = replay_frames(head, (), {"reason": "limit", "message": str(exc)})
        except HistoryError as exc:
            self._failed(exc)
            self.refused += 1
            frames = replay_frames(head, (), {"reason": "refused", "message": str(exc)})
        else:
            self.answered += 1
            frames = replay_frames(
                head, rows, frame_bytes=min(FRAME_BYTES, self.client.broker_max_frame_bytes // 2)
            )
        for f in frames:
            if not self.client.send_frame(f):
                return
