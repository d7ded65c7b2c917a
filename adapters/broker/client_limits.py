"""Per-client limits of a broker exposed to untrusted clients (docs/protocol.md §12): how
many subscriptions and advertisements one client connection may hold, and how fast it may
publish. (Frame size and the send queue of a slow consumer are the connection's own:
:mod:`.connection`.)

* :class:`TokenBucket` — the publication rate: ``rate`` tokens per second, at most
  ``burst`` saved up. A publication takes one token; one that comes when none is left
  waits, unprocessed, until its token is there, and the broker reads nothing more from
  that connection meanwhile, so TCP's flow control slows the publisher down and nothing
  is lost or refused (the broker and its other clients carry on).
* :class:`ClientLimits` — what one client connection holds against its limits: the
  subscriptions and advertisements it has (a renewal of one of them is not counted
  twice, ``unsub``/``unadv`` frees its slot, one not renewed for a lease period has
  expired in the routing table too and frees its slot), its bucket, and the episodes
  of throttling it caused (logged once each).
* :class:`IdentityLimits` — the same for all the connections of one identity together
  (``[identities.NAME]`` limits; Fiege, Zeidler & Buchmann, "Security Aspects in
  Publish/Subscribe Systems", DEBS 2004, §4: the authenticated principal is the unit of
  access control, so it is the unit of the budget too): its subscriptions are counted
  per (client id, model, filter), so a client that reconnects under its id renews what
  it held instead of counting it twice, and what a vanished client held counts until
  its lease runs out, as its routing entries stand until then; one token bucket; its
  connections; and a :class:`QueueBudget` of bytes queued to all of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any


class TokenBucket:
    """``rate`` tokens per second, at most ``burst`` held; starts full.
    :meth:`take` takes one token and returns how long the caller must wait for it
    (0.0 when one was there); the debt is kept, so a caller who waits that long
    before the next :meth:`take` is held to ``rate`` on average."""

    def __init__(
        self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not rate > 0 or not burst >= 1:
            raise ValueError(f"a token bucket needs rate > 0 and burst >= 1, got {rate}, {burst}")
        self.rate, self.burst, self.clock = rate, burst, clock
        self.tokens = float(burst)
        self._at = clock()

    def _refill(self) -> None:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self._at) * self.rate)
        self._at = now

    def take(self, n: int = 1) -> float:
        """Take ``n`` tokens; seconds to wait until they are there (0.0: at once)."""
        self._refill()
        self.tokens -= n
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate

    def try_take(self) -> float:
        """Take one token if one is there (0.0); else take none and say how many seconds
        until one is (a caller that refuses rather than waits: the HTTP gateway)."""
        self._refill()
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.rate

    @property
    def full(self) -> bool:
        self._refill()
        return self.tokens >= self.burst


@dataclass(frozen=True)
class Limits:
    """The limits of one client connection; None: unlimited. ``source`` names where
    the values come from in refusals (``limits`` or ``identities.NAME``)."""

    max_subscriptions: int | None = None
    max_publish_rate: float | None = None
    publish_burst: float | None = None
    source: str = "limits"
    #: where the rate comes from, when not from ``source``
    rate_source: str | None = None

    @property
    def burst(self) -> float:
        """The bucket's size: ``publish_burst``, by default one second's publications."""
        if self.publish_burst is not None:
            return self.publish_burst
        return max(1.0, self.max_publish_rate or 1.0)

    def hello(self) -> dict[str, float]:
        """What the broker's hello tells the client (it may pace itself)."""
        out: dict[str, float] = {}
        if self.max_subscriptions is not None:
            out["max_subscriptions"] = self.max_subscriptions
        if self.max_publish_rate is not None:
            out["max_publish_rate"] = self.max_publish_rate
            out["publish_burst"] = self.burst
        return out


@dataclass
class ClientLimits:
    """One client connection's standing against its :class:`Limits`."""

    limits: Limits
    #: seconds an entry lives without renewal (the lease period π)
    lease: float
    clock: Callable[[], float] = time.monotonic
    #: the (model, filter) of each subscription ("sub") and advertisement ("adv") held,
    #: with the time of its last (re)issue
    held: dict[str, dict[Hashable, float]] = field(default_factory=lambda: {"sub": {}, "adv": {}})
    #: whether a refusal for the limit was logged already (once per connection)
    logged: set[str] = field(default_factory=set)
    bucket: TokenBucket | None = None
    #: publications that waited for their token, and the current episode's start (None:
    #: not throttled now)
    throttled: int = 0
    episode: float | None = None

    def __post_init__(self) -> None:
        rate = self.limits.max_publish_rate
        if rate is not None and self.bucket is None:
            self.bucket = TokenBucket(rate, self.limits.burst, self.clock)

    def admit(self, kind: str, key: Hashable) -> str | None:
        """None if a ``sub``/``adv`` of ``key`` may be added (or is a renewal of one
        held); otherwise why not. Call :meth:`hold` once the broker accepted it."""
        limit = self.limits.max_subscriptions
        held = self.held[kind]
        if limit is None or key in held or len(held) < limit:
            return None
        now = self.clock()
        for k, t in list(held.items()):  # leases not renewed for π have run out
            if now - t > self.lease:
                del held[k]
        if len(held) < limit:
            return None
        what = "subscriptions" if kind == "sub" else "advertisements"
        return (
            f"{len(held)} {what} held already, the limit "
            f"({self.limits.source}.max_subscriptions = {limit}); withdraw one first"
        )

    def hold(self, kind: str, key: Hashable) -> None:
        if self.limits.max_subscriptions is not None:
            self.held[kind][key] = self.clock()

    def release(self, kind: str, key: Hashable) -> None:
        self.held[kind].pop(key, None)

    def publish(self, n: int = 1) -> tuple[float, bool]:
        """Take the tokens of ``n`` publications (a ``pubs`` frame carries several): how
        long they wait for them (0.0: not at all),
        reading nothing more from the client meanwhile, and whether that begins an
        episode of throttling (one log line each). An episode ends when the bucket has
        refilled (the client published slowly again)."""
        if self.bucket is None:
            return 0.0, False
        if self.bucket.full:
            self.episode = None
        wait = self.bucket.take(n)
        if wait <= 0:
            return 0.0, False
        self.throttled += 1
        begins = self.episode is None
        if begins:
            self.episode = self.clock()
        return wait, begins


@dataclass(eq=False)
class QueueBudget:
    """Bytes queued to several connections together (an identity's
    ``max_queue_bytes``): each connection adds what it queues and takes away what it
    writes or drops; ``members`` are the connections (when the budget is exceeded, the one
    with the largest backlog is cut off). ``name`` says where the limit comes from in the
    slow-consumer line."""

    limit: int
    name: str
    used: int = 0
    members: set[Any] = field(default_factory=set)


@dataclass
class IdentityLimits:
    """What all connections of one identity hold together against the limits that
    ``[identities.NAME]`` sets (docs/protocol.md §12). ``held`` counts subscriptions
    and advertisements keyed by ``(client id, model, filter)`` and holds the identity's
    token bucket; ``max_connections`` counts connections at once."""

    held: ClientLimits
    max_connections: int | None = None
    budget: QueueBudget | None = None
    connections: int = 0

    def connect(self, replacing: bool = False) -> str | None:
        """Count a new connection; None if it may stay, else why not (not counted).
        ``replacing``: it takes over the session of a live connection of the identity
        (a reconnect), which is about to close: not refused for the limit."""
        limit = self.max_connections
        if limit is not None and self.connections >= limit and not replacing:
            return (
                f"{self.connections} connections open already, the limit "
                f"({self.held.limits.source}.max_connections = {limit}); close one first"
            )
        self.connections += 1
        return None

    def disconnect(self) -> None:
        self.connections -= 1
