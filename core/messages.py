"""Messages of the routing framework (Mühl 2002, "Large-Scale Content-Based Publish/Subscribe
Systems", §2.2 and §3.4, Fig. 3.6).

Clients talk to their broker with ``sub``/``unsub``/``adv``/``unadv``/``pub`` and receive
``notify``; brokers exchange ``forward(n)`` and ``admin(S, U)``. Advertisements add a second
kind of admin message (``admin_A`` next to ``admin_S``, §3.6): :class:`Admin` carries its
``level``. Every subscription, advertisement and event carries the name of its filter model,
so one broker routes several models at once.

An admin message holds *routed filters* ``(filter, tag)``: ``tag`` is ``None`` except for
simple routing, which needs every subscription to be uniquely identified (§3.5.2) and tags a
filter with the client that issued it.

:func:`to_wire` / :func:`from_wire` give the JSON-safe forms the networked runtime sends,
built on the models' own ``dump_*``/``load_*`` hooks.

A publication is parsed once, where it enters the network, for matching; from there on
the networked runtime carries its wire bytes along (``wire`` of :class:`Pub`,
:class:`Forward`, :class:`Notify`), and the broker hands them from the publication to
the forwards and notifications it makes, so that no hop dumps the event again (DESIGN §2.6).
The core never reads them.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pubsift.core.model import JSON, Event, Filter, FilterModel

Level = Literal["S", "A"]
"""``"S"``: subscriptions (table T_B^S); ``"A"``: advertisements (table T_B^A)."""

Routed = tuple[Filter, Hashable]
"""A filter as it travels in an admin message: ``(filter, tag)``."""


@dataclass(frozen=True, slots=True)
class Sub:
    """sub(X, F): client ``client`` subscribes to ``filter`` of model ``model``."""

    client: str
    model: str
    filter: Filter


@dataclass(frozen=True, slots=True)
class Unsub:
    """unsub(X, F)."""

    client: str
    model: str
    filter: Filter


@dataclass(frozen=True, slots=True)
class Adv:
    """adv(X, F): client ``client`` intends to publish notifications matching ``filter``."""

    client: str
    model: str
    filter: Filter


@dataclass(frozen=True, slots=True)
class Unadv:
    """unadv(X, F)."""

    client: str
    model: str
    filter: Filter


# The three messages of the data path (:class:`Pub`, :class:`Notify`, :class:`Forward`)
# are made once per publication and hop, so they are plain slotted dataclasses (hashable,
# compared by value) rather than frozen ones, whose ``__init__`` costs three times as much
# (DESIGN §2.6); nothing changes them once made.


@dataclass(slots=True, unsafe_hash=True)
class Pub:
    """pub(X, n). ``pub_id`` makes the notification unique (Mühl §2.2: each notification is
    published once)."""

    client: str
    model: str
    event: Event
    pub_id: Hashable
    #: the event's wire form as JSON bytes, where the runtime has them: forwarded and
    #: delivered as they are, never dumped again (see the module's docstring)
    wire: bytes | None = None


@dataclass(slots=True, unsafe_hash=True)
class Notify:
    """notify(Y, n): the broker delivers notification ``pub_id`` to its client ``client``."""

    client: str
    model: str
    event: Event
    pub_id: Hashable
    wire: bytes | None = None


@dataclass(slots=True, unsafe_hash=True)
class Forward:
    """forward(n) between neighbour brokers."""

    model: str
    event: Event
    pub_id: Hashable
    wire: bytes | None = None


@dataclass(slots=True, eq=False)
class Pubs:
    """Publications of one model from one client, routed as one message (DESIGN §2.6): the
    i-th is ``pub(X, events[i])`` with ``pub_ids[i]`` (and ``wires[i]``, its event's wire
    bytes, where the runtime has them). A broker routes it exactly as the sequence of
    those :class:`Pub` messages, and hands each destination its share in one call
    (:class:`~pubsift.core.broker.BatchPort`)."""

    client: str
    model: str
    events: list[Event]
    pub_ids: list[Hashable]
    wires: list[bytes] | None = None


@dataclass(slots=True, eq=False)
class Forwards:
    """Forwards of one model from one neighbour, routed as one message: as the sequence of
    ``forward(events[i])`` with ``pub_ids[i]`` (see :class:`Pubs`)."""

    model: str
    events: list[Event]
    pub_ids: list[Hashable]
    wires: list[bytes] | None = None


Batch = Pubs | Forwards


def forward_of(batch: Batch, i: int) -> Forward:
    """The i-th publication of a batch as a single forward."""
    wires = batch.wires
    return Forward(
        batch.model, batch.events[i], batch.pub_ids[i], wires[i] if wires is not None else None
    )


@dataclass(frozen=True, slots=True)
class Admin:
    """admin(S, U) between neighbour brokers; ``level`` says which table it updates."""

    model: str
    level: Level
    subs: tuple[Routed, ...]
    unsubs: tuple[Routed, ...]


BrokerMessage = Forward | Admin
Message = Sub | Unsub | Adv | Unadv | Pub | Notify | Forward | Admin

_KINDS: dict[str, type] = {
    c.__name__.lower(): c for c in (Sub, Unsub, Adv, Unadv, Pub, Notify, Forward, Admin)
}


def to_wire(msg: Message, models: Mapping[str, FilterModel]) -> JSON:
    """The JSON-safe form of ``msg`` (filters and events through the model's wire hooks)."""
    model = models[msg.model]
    kind = type(msg).__name__.lower()
    if isinstance(msg, (Sub, Unsub, Adv, Unadv)):
        return {
            "kind": kind,
            "client": msg.client,
            "model": msg.model,
            "filter": model.dump_filter(msg.filter),
        }
    if isinstance(msg, (Pub, Notify)):
        return {
            "kind": kind,
            "client": msg.client,
            "model": msg.model,
            "event": model.dump_event(msg.event),
            "pub_id": msg.pub_id,
        }
    if isinstance(msg, Forward):
        return {
            "kind": kind,
            "model": msg.model,
            "event": model.dump_event(msg.event),
            "pub_id": msg.pub_id,
        }
    return {
        "kind": kind,
        "model": msg.model,
        "level": msg.level,
        "subs": [[model.dump_filter(f), t] for f, t in msg.subs],
        "unsubs": [[model.dump_filter(f), t] for f, t in msg.unsubs],
    }


def from_wire(obj: Mapping[str, Any], models: Mapping[str, FilterModel]) -> Message:
    """Inverse of :func:`to_wire`. Raises ``ValueError`` naming what is wrong."""
    try:
        kind = obj["kind"]
        cls = _KINDS[kind]
        model = models[obj["model"]]
    except KeyError as exc:
        raise ValueError(f"malformed message {obj!r}: unknown or missing {exc}") from None
    if cls in (Sub, Unsub, Adv, Unadv):
        return cls(obj["client"], obj["model"], model.load_filter(obj["filter"]))
    if cls in (Pub, Notify):
        return cls(obj["client"], obj["model"], model.load_event(obj["event"]), _tag(obj["pub_id"]))
    if cls is Forward:
        return Forward(obj["model"], model.load_event(obj["event"]), _tag(obj["pub_id"]))
    if obj.get("level") not in ("S", "A"):
        raise ValueError(f"malformed admin message: level {obj.get('level')!r} is not 'S' or 'A'")
    return Admin(
        obj["model"],
        obj["level"],
        tuple((model.load_filter(f), _tag(t)) for f, t in obj["subs"]),
        tuple((model.load_filter(f), _tag(t)) for f, t in obj["unsubs"]),
    )


def _tag(t: Any) -> Hashable:
    """A tag or publication id as sent: JSON has no tuples, so a list comes back as one
    (ids such as ``[publisher, sequence]`` stay hashable)."""
    return tuple(t) if isinstance(t, list) else t
