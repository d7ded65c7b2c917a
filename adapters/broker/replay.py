"""Replay descriptions, subscription events and replayed notifications (Mühl 2002,
"Large-Scale Content-Based Publish/Subscribe Systems", §5.2.3 "Replay Mechanism").

A subscription may carry a **replay description** (the ``replay`` member of a ``sub``
frame, docs/protocol.md §14): ``{"last": N}``, ``{"since_time": T}`` (Unix seconds) or
``{"since": {publisher: seq, ...}}`` (optionally with ``since_time`` for the publishers
it does not name): the client library's resume point. The broker that receives it
processes the subscription first (its routing entry is made and forwarded) and then
publishes a **subscription event**: a records event of the model ``subscriptions``
(:class:`SubscriptionEvents`, the records model under another name, so that no ordinary
subscriber of ``records`` ever sees one). Histories subscribe to those of their model;
one whose filter overlaps the subscription answers with ``replay`` frames, which brokers
route hop by hop to the subscriber's broker alone (:func:`next_hop`, by the broker ids
each link reaches) and which that broker hands to the subscriber only.

Why the switch to live has no gap: links are FIFO, brokers process in order and the
brokers form a tree. Let J be the broker where the paths from the publisher, the
subscriber and the history meet. A publication that reached J before the subscription
did was sent on toward the history before the subscription event passed J, so the
history recorded it before it answers; one that reached J after was routed toward the
subscriber, live. The client holds the live notifications of the subscription until a
history's answer has come, then delivers the union, per publisher in sequence order,
each once (:func:`merge`).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

import orjson
from pubsift.adapters.broker.frames import HEADER
from pubsift.core.errors import PubsiftError
from pubsift.core.model import FilterModel

#: the model of subscription events
SUBSCRIPTIONS = "subscriptions"
#: the most notifications one replay may ask for (``last N``) or answer with, by default
MAX_REPLAY = 100_000
#: the most publishers a ``since`` map may name
MAX_SINCE_PUBLISHERS = 10_000
#: bytes of events per ``replay`` frame (well below any broker's max_frame_bytes)
FRAME_BYTES = 60_000


class ReplayError(PubsiftError, ValueError):
    """A replay description that is malformed or asks for more than ``max_replay``."""


def subscription_events() -> FilterModel:
    """A new instance of the model of subscription events the infrastructure publishes
    (Mühl §5.2.3), routed like any other: the records model under the name
    ``subscriptions`` (:data:`SubscriptionEvents`, made on first use: a broker or client
    importing this module loads no model)."""
    return cast(FilterModel, _subscription_events_class()())


@functools.cache
def _subscription_events_class() -> type:
    from pubsift.models.records import RecordsModel

    class SubscriptionEvents(RecordsModel):
        """The records model under the name ``subscriptions``."""

        name = SUBSCRIPTIONS

    return SubscriptionEvents


def __getattr__(name: str) -> Any:
    if name == "SubscriptionEvents":  # the class itself, made on first use
        return _subscription_events_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Replay:
    """A replay description: ``last`` N notifications, or those recorded at or after
    ``since_time`` (Unix seconds), or per publisher those with a sequence number above
    ``since[publisher]`` (and, for the other publishers, those since ``since_time`` when
    given, else all), or ``after`` ``(publisher, seq)``: what the history recorded after
    that publication (an SSE stream's ``Last-Event-ID``; a history that does not hold it
    answers as for ``since`` that publisher and sequence number)."""

    last: int | None = None
    since_time: float | None = None
    since: Mapping[str, int] | None = field(default=None)
    after: tuple[str, int] | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.last is not None:
            out["last"] = self.last
        if self.since_time is not None:
            out["since_time"] = self.since_time
        if self.since is not None:
            out["since"] = dict(self.since)
        if self.after is not None:
            out["after"] = list(self.after)
        return out

    def wants(self, publisher: str, seq: int, recorded: float) -> bool:
        """Whether a stored notification falls in a ``since`` description (``last`` is
        applied to the whole answer)."""
        if self.since is not None:
            floor = self.since.get(publisher)
            if floor is not None:
                return seq > floor
        return self.since_time is None or recorded >= self.since_time


def parse(obj: Any, max_replay: int = MAX_REPLAY) -> Replay:
    """A :class:`Replay` from its wire form; :class:`ReplayError` saying what is wrong."""
    if not isinstance(obj, Mapping):
        raise ReplayError(f"replay: expected an object, got {obj!r:.100}")
    unknown = sorted(set(obj) - {"last", "since_time", "since", "after"})
    if unknown:
        raise ReplayError(
            f"replay: unknown member {unknown[0]!r:.100} (known: last, since, since_time, after)"
        )
    if not obj:
        raise ReplayError("replay: give last, since_time, since or after")
    if "after" in obj:
        a = obj["after"]
        if (
            not isinstance(a, list)
            or len(a) != 2
            or not isinstance(a[0], str)
            or not a[0]
            or type(a[1]) is not int
            or a[1] < 0
        ):
            raise ReplayError(f"replay: after must be [publisher, sequence number], got {a!r:.100}")
        if len(obj) > 1:
            raise ReplayError("replay: after goes alone")
        return Replay(after=(a[0], a[1]))
    last = obj.get("last")
    if last is not None:
        if type(last) is not int or last < 1:
            raise ReplayError(f"replay: last must be an integer ≥ 1, got {last!r:.100}")
        if last > max_replay:
            raise ReplayError(
                f"replay: last {last} is more than max_replay = {max_replay} notifications"
            )
        if len(obj) > 1:
            raise ReplayError("replay: last goes alone (not with since or since_time)")
    t = obj.get("since_time")
    if t is not None and (type(t) not in (int, float) or not math.isfinite(t) or t < 0 or t > 1e11):
        raise ReplayError(f"replay: since_time must be Unix seconds ≥ 0, got {t!r:.100}")
    since = obj.get("since")
    if since is not None:
        if not isinstance(since, Mapping):
            raise ReplayError("replay: since must be an object {publisher: sequence number}")
        if len(since) > MAX_SINCE_PUBLISHERS:
            raise ReplayError(
                f"replay: since names {len(since)} publishers, more than {MAX_SINCE_PUBLISHERS}"
            )
        for p, s in since.items():
            if not isinstance(p, str) or not p or type(s) is not int or s < 0:
                raise ReplayError(
                    f"replay: since[{p!r:.100}] must be a sequence number ≥ 0, got {s!r:.100}"
                )
    return Replay(last, None if t is None else float(t), dict(since) if since is not None else None)


def parse_text(text: str, max_replay: int = MAX_REPLAY) -> Replay:
    """The command line's form: ``last N``, ``since TIME`` (ISO 8601, or Unix seconds)."""
    words = text.split()
    if len(words) == 2 and words[0] == "last":
        try:
            n = int(words[1])
        except ValueError:
            n = 0
        return parse({"last": n if n > 0 else words[1]}, max_replay)
    if len(words) == 2 and words[0] == "since":
        try:
            t = float(words[1])
        except ValueError:
            t = _iso_time(text, words[1])
        return parse({"since_time": t}, max_replay)
    raise ReplayError(f"replay {text!r}: expected 'last N' or 'since TIME'")


def _iso_time(text: str, word: str) -> float:
    try:
        stamp = datetime.fromisoformat(word.replace("Z", "+00:00"))
    except ValueError:
        raise ReplayError(
            f"replay {text!r}: since takes an ISO 8601 time or Unix seconds"
        ) from None
    if stamp.tzinfo is None:
        raise ReplayError(f"replay {text!r}: give the time zone (e.g. Z or +01:00)")
    return stamp.timestamp()


def subscription_event(
    broker: str,
    client: str,
    ref: Any,
    model: str,
    filter_wire: Any,
    replay: Replay | None,
    kind: str = "subscription",
) -> dict[str, Any]:
    """The subscription (``kind``: or unsubscription) event of a subscription: a records
    event, the filter and the replay description as JSON text, so that any wire form fits
    (no ``replay`` member when it has none)."""
    from pubsift.adapters.broker.wire import dumps

    out = {
        "type": kind,
        "broker": broker,
        "client": client,
        "ref": dumps(ref).decode(),
        "model": model,
        "filter": dumps(filter_wire).decode(),
        "time": time.time(),
    }
    if replay is not None:
        out["replay"] = dumps(replay.to_wire()).decode()
    return out


def next_hop(me: str, target: str, via: Mapping[str, Iterable[str]]) -> str | None:
    """Where a ``replay`` frame for broker ``target`` goes from broker ``me``: ``me``
    (deliver it here), the neighbour whose link reaches ``target``, or None (no route)."""
    if target == me:
        return me
    return next((n for n, ids in via.items() if target in ids), None)


def check_frame(obj: Mapping[str, Any]) -> str | None:
    """What is wrong with a ``replay`` frame's addressing (None: nothing)."""
    for key in ("broker", "client", "model"):
        v = obj.get(key)
        if not isinstance(v, str) or not v:
            return f"replay: {key} must be a non-empty string"
    if not isinstance(obj.get("pubs", []), list):
        return "replay: pubs must be a list of [pub_id, event]"
    return None


class Notified:
    """A notification with its publication id, as :func:`merge` orders them."""

    __slots__ = ("item", "publisher", "seq")

    def __init__(self, publisher: str, seq: int, item: Any) -> None:
        self.publisher, self.seq, self.item = publisher, seq, item


def merge(replayed: Iterable[Notified], held: Iterable[Notified]) -> list[Any]:
    """The replayed and the held (live) notifications of one subscription as delivered:
    each publication once, per publisher in sequence order, the order across publishers
    that of arrival (replayed first). Each slot a publisher holds in the arrival order is
    given that publisher's next notification in sequence order."""
    order: list[str] = []
    per: dict[str, dict[int, Any]] = {}
    for n in (*replayed, *held):
        mine = per.setdefault(n.publisher, {})
        if n.seq not in mine:
            mine[n.seq] = n.item
            order.append(n.publisher)
    queues = {p: iter([mine[s] for s in sorted(mine)]) for p, mine in per.items()}
    return [next(queues[p]) for p in order]


def replay_frames(
    head: Mapping[str, Any],
    rows: Iterable[tuple[str, int, bytes]],
    error: Mapping[str, Any] | None = None,
    frame_bytes: int = FRAME_BYTES,
    end: bool = True,
) -> list[bytes]:
    """The ``replay`` frames of one answer: ``head`` (kind, broker, client, ref, history,
    request, model) and the ``[pub_id, event]`` pairs of ``rows`` with the events' bytes
    spliced in as stored, about ``frame_bytes`` of events per frame; the last frame says
    ``"end": true`` and the ``count`` (and the ``error`` of a refused replay), unless
    ``end`` is False (the first, empty frame a history sends at once: an answer comes)."""
    start = orjson.dumps(dict(head))[:-1] + b',"pubs":['
    frames: list[bytes] = []
    items: list[bytes] = []
    size = count = 0

    def flush(last: bool) -> None:
        tail = b"]"
        if last and end:
            tail += b',"end":true,"count":%d' % count
            if error is not None:
                tail += b',"error":' + orjson.dumps(dict(error))
        body = start + b",".join(items) + tail + b"}"
        frames.append(HEADER.pack(len(body)) + body)
        items.clear()

    for p, s, e in rows:
        item = b"[[%s,%d],%s]" % (orjson.dumps(p), s, e)
        if items and size + len(item) > frame_bytes:
            flush(False)
            size = 0
        items.append(item)
        size += len(item)
        count += 1
    flush(True)
    return frames
