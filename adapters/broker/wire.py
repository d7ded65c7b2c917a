"""Messages from peers: frames of the core wire forms
(:func:`pubsift.core.messages.to_wire`) checked and turned into core messages, every problem
a :class:`~pubsift.adapters.broker.frames.FrameError` (``invalid-message``) naming the
member.

A client's identity comes from its hello, not from the frame: a ``client`` member must
match it, and a publication's ``pub_id`` is ``[client id, sequence number]`` (the
publisher's sequence, by which subscribers drop duplicates and keep order). With
identities the broker knows a client by ``identity/id`` (docs/protocol.md §13): the client
may name itself either way (``aliases``), and the publication carries the qualified id. A
``pub_id`` naming any other publisher is ``forbidden``: nobody publishes under another's
id. A filter may be given as the model's wire form or as a string in the model's text
syntax.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import orjson
from pubsift.adapters.broker.frames import (
    HEADER,
    MAX_BATCH,
    MAX_EVENT_DEPTH,
    Cut,
    FrameError,
    load_cut_event,
)
from pubsift.core.errors import PubsiftError, one_line
from pubsift.core.messages import (
    Adv,
    Forward,
    Forwards,
    Message,
    Notify,
    Pub,
    Pubs,
    Sub,
    Unadv,
    Unsub,
    from_wire,
)
from pubsift.core.model import Filter, FilterModel

CLIENT_KINDS = {"sub": Sub, "unsub": Unsub, "adv": Adv, "unadv": Unadv, "pub": Pub}
BROKER_KINDS = ("forward", "admin")


def _model(obj: Mapping[str, Any], models: Mapping[str, FilterModel]) -> FilterModel:
    name = obj.get("model")
    if not isinstance(name, str) or name not in models:
        raise FrameError(
            "invalid-message",
            f"{obj['kind']}: unknown model {name!r} (this broker routes {', '.join(sorted(models))})",
        )
    return models[name]


def load_filter(model: FilterModel, spec: Any) -> Filter:
    """A filter from its wire form, or from text in the model's syntax."""
    return model.parse_filter(spec) if isinstance(spec, str) else model.load_filter(spec)


def pub_id(value: Any, client: str, aliases: tuple[str, ...] = ()) -> tuple[str, int]:
    """The ``[publisher, sequence]`` of a publication from ``client`` (the publisher named
    as ``client`` or as one of its ``aliases``; the answer names ``client``)."""
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 2
        or not isinstance(value[0], str)
        or not isinstance(value[1], int)
        or isinstance(value[1], bool)
        or value[1] < 1
    ):
        raise FrameError(
            "invalid-message",
            f"pub: pub_id must be [{client!r}, n] with n a positive integer, got {value!r}",
        )
    if value[0] != client and value[0] not in aliases:
        raise FrameError(
            "forbidden",
            f"pub: pub_id names publisher {value[0][:200]!r}; this connection publishes as "
            f"{client!r} only",
        )
    return (client, value[1])


def from_client(
    obj: Mapping[str, Any],
    client: str,
    models: Mapping[str, FilterModel],
    aliases: tuple[str, ...] = (),
    read: Reader | None = None,
) -> Message:
    """The core message of a client's frame (sub, unsub, adv, unadv, pub); ``client`` is
    the connection's id in the network, ``aliases`` other names the client may use for
    itself (the id its hello gave, which the broker qualified). ``read``: as for
    :func:`publications`, the reader of a ``pub``'s event bytes (the full read where it
    answers None or is not given)."""
    kind = obj["kind"]
    cls = CLIENT_KINDS.get(kind)
    if cls is None:
        raise FrameError(
            "unknown-kind",
            f"kind {kind!r} (a client sends {', '.join(CLIENT_KINDS)}, pubs or stats)",
        )
    named = obj.get("client", client)
    if named != client and (not isinstance(named, str) or named not in aliases):
        raise FrameError(
            "invalid-message",
            f"{kind}: client {obj.get('client')!r} is not this connection's id {client!r}",
        )
    model = _model(obj, models)
    try:
        if cls is Pub:
            if "event" not in obj:
                raise FrameError("invalid-message", "pub: missing member 'event'")
            event = obj["event"]
            data = dumps(event)
            read_event = _event(model, read, data, event)
            pid = pub_id(obj.get("pub_id"), client, aliases)
            return Pub(client, model.name, read_event, pid, data)
        if "filter" not in obj:
            raise FrameError("invalid-message", f"{kind}: missing member 'filter'")
        return cls(client, model.name, load_filter(model, obj["filter"]))
    except FrameError:
        raise
    except PubsiftError as exc:
        raise FrameError("invalid-message", f"{kind}: {one_line(exc)}") from None
    except Exception as exc:  # a model broke its contract; the broker carries on
        raise FrameError(
            "invalid-message", f"{kind}: model {model.name!r} failed: {type(exc).__name__}: {exc}"
        ) from None


@dataclass(slots=True, eq=False)
class WirePubs(Pubs):
    """A ``pubs`` frame's publications for the core broker, with the bytes of each
    ``[pub_id, event]`` pair as forwards and notifications carry it (``pairs``)."""

    pairs: list[bytes] | None = None


@dataclass(slots=True, eq=False)
class WireForwards(Forwards):
    """A ``forwards`` frame's forwards for the core broker (see :class:`WirePubs`)."""

    pairs: list[bytes] | None = None


#: the refusals of a batch frame's pairs: (index, why), the others go on
Refusals = list[tuple[int, FrameError]]
#: model name -> the reader of its events' bytes (``FilterModel.wire_reader``)
Reader = Callable[[str], Callable[[bytes], Any]]


def publications(
    obj: Mapping[str, Any],
    client: str,
    models: Mapping[str, FilterModel],
    aliases: tuple[str, ...] = (),
    read: Reader | None = None,
) -> tuple[WirePubs, Refusals]:
    """The publications of a ``pubs`` frame (docs/protocol.md §3.1), each checked on its
    own: a bad one is refused (its message names ``pubs[i]``) and the others go on. A
    frame that is not a batch at all raises. A cut frame's events and pairs travel on as
    their bytes came (the pair is written anew only where the publisher is named by an
    alias); a frame read whole has its events written anew by orjson. ``read(model)``:
    the reader of the events' bytes, as they came (a cut frame) or as written anew (a
    frame read whole) (the broker's ``FilterModel.wire_reader``; default the model's
    ``load_wire`` for a cut frame, ``load_event`` for a frame read whole), the full read
    where it answers None."""
    if obj.get("client", client) != client and obj.get("client") not in aliases:
        raise FrameError(
            "invalid-message",
            f"pubs: client {obj.get('client')!r} is not this connection's id {client!r}",
        )
    model = _model(obj, models)
    items = _items("pubs", obj)
    batch = WirePubs(client, model.name, [], [], [], [])
    refused: Refusals = []
    load = model.load_event
    events, pub_ids, wires, pairs = batch.events, batch.pub_ids, batch.wires, batch.pairs
    assert wires is not None and pairs is not None
    if type(items) is Cut:
        fast = model.load_wire if read is None else read(model.name)
        read_all = _read_cut(items, client, fast)
        if read_all is not None:  # the common frame: every pair as a loop would keep it
            batch.events, batch.pub_ids, batch.wires, batch.pairs = read_all
            return batch, refused
        for i, (who, n, data, pair) in enumerate(items):
            event = fast(data)  # the model's one-pass read of the bytes, where it has one
            if event is None:
                value = load_cut_event(items, data)
            try:
                if who != client or n < 1:
                    pub = pub_id([who, n], client, aliases)
                    pair = b"[%s,%s]" % (pub_id_json(pub, _NAMES), data)
                if event is None:
                    event = load(value)
            except Exception as exc:  # each refusal is reported, the others go on
                refused.append((i, _refusal("pubs", i, model.name, exc)))
                continue
            events.append(event)
            pub_ids.append((client, n))
            wires.append(data)
            pairs.append(pair)
        return batch, refused
    whole = None if read is None else read(model.name)
    for i, item in enumerate(items):
        try:
            pub, value = _pair(item)
            data = dumps(value)  # first: it checks the event's depth (frames.decode left it)
            if (  # the common case, checked inline
                type(pub) is list
                and len(pub) == 2
                and pub[0] == client
                and type(pub[1]) is int
                and pub[1] >= 1
            ):
                pid: Hashable = (client, pub[1])
            else:
                pid = pub_id(pub, client, aliases)
            event = None if whole is None else whole(data)
            if event is None:
                event = load(value)
        except Exception as exc:
            refused.append((i, _refusal("pubs", i, model.name, exc)))
            continue
        events.append(event)
        pub_ids.append(pid)
        wires.append(data)
        pairs.append(_pair_bytes(pid, data))
    return batch, refused


def _read_cut(
    items: Cut, client: str | None, read: Callable[[bytes], Any]
) -> tuple[list[Any], list[Hashable], list[bytes], list[bytes]] | None:
    """(events, pub_ids, wires, pairs) of a cut frame whose every event ``read`` reads
    and whose every pair names ``client`` (None: any publisher) with a sequence number of
    at least 1, in order: what the pair-by-pair loops keep of such a frame, made by
    calls that walk the lists in C (the loop's own work, about 0.17 µs per event on a
    500-event frame of quotes, down to 0.09; bench/brokers.py W1: broker CPU 1.6 -> 1.5
    µs per publication); None for any other frame, which the loop reads pair by pair (and
    refuses what it must)."""
    if not items:
        return None
    whos, ns, datas, pairs = zip(*items, strict=True)
    if client is not None and whos.count(client) != len(whos):
        return None
    if min(ns) < 1:
        return None
    events = list(map(read, datas))
    if _NONE in list(map(type, events)):  # by type: a records event's == is Python's
        return None
    ids: list[Hashable] = list(zip(whos if client is None else repeat(client), ns))
    return events, ids, list(datas), list(pairs)


_NONE = type(None)


def forwards(
    obj: Mapping[str, Any], models: Mapping[str, FilterModel], read: Reader | None = None
) -> tuple[WireForwards, Refusals]:
    """The forwards of a ``forwards`` frame, each checked on its own (a bad one is
    refused, naming ``forwards[i]``, and the others go on). A cut frame's events and pairs
    travel on as their bytes came; a frame read whole has its events written anew by
    orjson from what was read (the same bytes as the broker before wrote, for events it
    wrote with orjson). ``read``: as for :func:`publications`."""
    model = _model(obj, models)
    items = _items("forwards", obj)
    batch = WireForwards(model.name, [], [], [], [])
    refused: Refusals = []
    load = model.load_event
    events, pub_ids, wires, pairs = batch.events, batch.pub_ids, batch.wires, batch.pairs
    assert wires is not None and pairs is not None
    if type(items) is Cut:
        fast = model.load_wire if read is None else read(model.name)
        read_all = _read_cut(items, None, fast)
        if read_all is not None:
            batch.events, batch.pub_ids, batch.wires, batch.pairs = read_all
            return batch, refused
        for i, (who, n, data, pair) in enumerate(items):
            event = fast(data)
            if event is None:
                value = load_cut_event(items, data)
                try:
                    event = load(value)
                except Exception as exc:
                    refused.append((i, _refusal("forwards", i, model.name, exc)))
                    continue
            events.append(event)
            pub_ids.append((who, n))
            wires.append(data)
            pairs.append(pair)
        return batch, refused
    whole = None if read is None else read(model.name)
    for i, item in enumerate(items):
        try:
            pub, value = _pair(item)
            data = dumps(value)  # first: it checks the event's depth (frames.decode left it)
            pid = _hashable(pub)
            event = None if whole is None else whole(data)
            if event is None:
                event = load(value)
        except Exception as exc:
            refused.append((i, _refusal("forwards", i, model.name, exc)))
            continue
        events.append(event)
        pub_ids.append(pid)
        wires.append(data)
        pairs.append(_pair_bytes(pid, data))
    return batch, refused


def _items(kind: str, obj: Mapping[str, Any]) -> list[Any]:
    """The ``pubs`` of a batch frame: a list of 1-:data:`MAX_BATCH` pairs, else raises."""
    items = obj.get("pubs")
    if not isinstance(items, list) or not items or len(items) > MAX_BATCH:
        raise FrameError(
            "invalid-message",
            f"{kind}: 'pubs' must be a list of 1-{MAX_BATCH} [pub_id, event] pairs",
        )
    return items


def _pair(item: Any) -> tuple[Any, Any]:
    if type(item) is not list or len(item) != 2:
        raise FrameError("invalid-message", f"expected [pub_id, event], got {item!r}"[:300])
    return item[0], item[1]


def _refusal(kind: str, i: int, model: str, exc: Exception) -> FrameError:
    """Why pair ``i`` of a batch frame is refused, naming ``kind[i]``."""
    if isinstance(exc, FrameError):
        return FrameError(exc.reason, f"{kind}[{i}]: {exc.message.removeprefix('pub: ')}")
    if isinstance(exc, PubsiftError):
        return FrameError("invalid-message", f"{kind}[{i}]: {one_line(exc)}")
    # a model broke its contract; the broker carries on
    return FrameError(
        "invalid-message", f"{kind}[{i}]: model {model!r} failed: {type(exc).__name__}: {exc}"
    )


def from_broker(
    obj: Mapping[str, Any],
    models: Mapping[str, FilterModel],
    body: bytes | None = None,
    read: Reader | None = None,
) -> Message:
    """The core message of a neighbour's frame (forward, admin); ``body``: the frame's
    bytes, whose event a forward carries on untouched where they are in the form
    :func:`forward_frame` writes. ``read``: as for :func:`from_client`."""
    kind = obj["kind"]
    if kind not in BROKER_KINDS:
        raise FrameError("unknown-kind", f"kind {kind!r} from a broker link")
    model = _model(obj, models)
    try:
        if kind == "forward":
            event = obj["event"]
            data = forwarded_event(body, obj) or dumps(event)
            read_event = _event(model, read, data, event)
            return Forward(model.name, read_event, _hashable(obj["pub_id"]), data)
        return from_wire(obj, models)
    except PubsiftError as exc:
        raise FrameError("invalid-message", f"{kind}: {one_line(exc)}") from None
    except KeyError as exc:
        raise FrameError("invalid-message", f"{kind}: missing member {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise FrameError(
            "invalid-message", f"{kind}: malformed ({type(exc).__name__}: {exc})"
        ) from None


# -- the event's bytes, untouched (DESIGN §2.6) ---------------------------------------


def _event(model: FilterModel, read: Reader | None, data: bytes, value: Any) -> Any:
    """The event of one frame's ``data`` (the bytes it travels as; ``value``: as read
    with the frame) by the broker's reader, where one is given and answers, else in
    full by ``load_event``: a frame of one event is read as the events of a batch."""
    if read is not None:
        event = read(model.name)(data)
        if event is not None:
            return event
    return model.load_event(value)


def _hashable(pub: Any) -> Hashable:
    """A publication id as read from a neighbour: ``[publisher, sequence]`` (JSON has no
    tuples: a list comes back as one), or one string or integer."""
    if type(pub) is list and all(type(x) is str or type(x) is int for x in pub):
        return tuple(pub)
    if type(pub) is str or type(pub) is int:
        return pub
    raise FrameError("invalid-message", f"pub_id must be [publisher, sequence], got {pub!r}"[:300])


def dumps(value: Any) -> bytes:
    """The JSON bytes of a value read from a frame (which had no NaN: frames are strict
    JSON). orjson writes it; the standard library writes an integer beyond 64 bits (those
    frames were read by the standard library). A value nested deeper than
    :data:`~pubsift.adapters.broker.frames.MAX_EVENT_DEPTH` (orjson will not write it) is a
    :class:`FrameError`: an event of a batch frame, whose depth the frame's reading left to
    this writing, may nest as deep as in a frame of its own and no deeper."""
    try:
        return orjson.dumps(value)
    except TypeError as exc:  # an integer beyond 64 bits, or too deep for orjson
        if "Recursion limit" in str(exc):
            raise FrameError(
                "invalid-message",
                f"the event is JSON nested too deeply (more than {MAX_EVENT_DEPTH} levels)",
            ) from None
        import json

        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _head(kind: str, model: str, pub: Hashable) -> bytes:
    return b'{"kind":"%s","model":%s,"pub_id":%s,"event":' % (
        kind.encode(),
        dumps(model),
        dumps(list(pub) if isinstance(pub, tuple) else pub),
    )


def forward_frame(msg: Forward) -> bytes:
    """The frame of a forward whose event's bytes are at hand (``msg.wire``), spliced in
    as they are, the event last: ``{"kind":"forward","model":M,"pub_id":P,"event":E}``."""
    assert msg.wire is not None
    body = _head("forward", msg.model, msg.pub_id) + msg.wire + b"}"
    return HEADER.pack(len(body)) + body


def forwarded_event(body: bytes | None, obj: Mapping[str, Any]) -> bytes | None:
    """The event's bytes of a forward frame written by :func:`forward_frame` (checked
    by writing its head again: the event is the last of exactly four members), or None
    for a frame in another form (its event is then written anew)."""
    if body is None or len(obj) != 4 or body[-1:] != b"}":
        return None
    try:
        head = _head("forward", obj["model"], obj["pub_id"])
    except (TypeError, KeyError):
        return None
    return body[len(head) : -1] if body.startswith(head) else None


def pub_id_json(pub: Hashable, names: dict[str, bytes]) -> bytes:
    """The JSON of a publication id; ``names``: the JSON of publisher names met before
    (most ids are ``(publisher, n)``: one dictionary look-up, no encoder)."""
    if type(pub) is tuple and len(pub) == 2 and type(pub[1]) is int and type(pub[0]) is str:
        name = names.get(pub[0])
        if name is None:
            if len(names) > 100_000:
                names.clear()
            name = names[pub[0]] = dumps(pub[0])
        return b"[%s,%d]" % (name, pub[1])
    return dumps(list(pub) if isinstance(pub, tuple) else pub)


_NAMES: dict[str, bytes] = {}


def batch_item(msg: Forward | Notify) -> bytes:
    """One publication of a ``forwards`` or ``notifies`` frame: ``[pub_id, event]``, the
    event's bytes as they are (one formatting for the common ``(publisher, n)``)."""
    assert msg.wire is not None
    return _pair_bytes(msg.pub_id, msg.wire)


def _pair_bytes(pub: Hashable, wire: bytes) -> bytes:
    if type(pub) is tuple and len(pub) == 2 and type(pub[1]) is int and type(pub[0]) is str:
        name = _NAMES.get(pub[0])
        if name is not None:
            return b"[[%s,%d],%s]" % (name, pub[1], wire)
    return b"[%s,%s]" % (pub_id_json(pub, _NAMES), wire)


def forwards_head(model: str) -> bytes:
    """The head of a ``forwards`` frame (docs/protocol.md §7), up to its list of items."""
    return b'{"kind":"forwards","model":%s,"pubs":[' % dumps(model)


def notifies_head(client: str, model: str) -> bytes:
    """The head of a ``notifies`` frame (docs/protocol.md §3.2), up to its list of items."""
    return b'{"kind":"notifies","client":%s,"model":%s,"pubs":[' % (dumps(client), dumps(model))


class NotifyFrames:
    """The notify frames of one publication for each of its subscribers: what follows
    the ``client`` member is written once per publication, the event's bytes spliced in
    as they are; the head, per client, is kept for the next publication."""

    def __init__(self) -> None:
        self._wire: bytes | None = None
        self._pub: Hashable = None
        self._tail = b""
        self._heads: dict[str, bytes] = {}

    def frame(self, msg: Notify) -> bytes:
        if msg.wire is not self._wire or msg.pub_id != self._pub:
            # (the same bytes object may be two publications' events: CPython shares the
            # one-byte bytes objects, so the publication is told by its id too)
            self._wire, self._pub = msg.wire, msg.pub_id
            assert msg.wire is not None
            pub = msg.pub_id
            self._tail = b',"model":%s,"pub_id":%s,"event":%s}' % (
                dumps(msg.model),
                pub_id_json(pub, _NAMES),
                msg.wire,
            )
        head = self._heads.get(msg.client)
        if head is None:
            if len(self._heads) > 100_000:
                self._heads.clear()
            head = self._heads[msg.client] = b'{"kind":"notify","client":' + dumps(msg.client)
        body = head + self._tail
        return HEADER.pack(len(body)) + body
