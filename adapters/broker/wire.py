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

from collections.abc import Mapping
from typing import Any

from pubsift.adapters.broker.frames import FrameError
from pubsift.core.cli_input import one_line
from pubsift.core.errors import PubsiftError
from pubsift.core.messages import Adv, Message, Pub, Sub, Unadv, Unsub, from_wire
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
) -> Message:
    """The core message of a client's frame (sub, unsub, adv, unadv, pub); ``client`` is
    the connection's id in the network, ``aliases`` other names the client may use for
    itself (the id its hello gave, which the broker qualified)."""
    kind = obj["kind"]
    cls = CLIENT_KINDS.get(kind)
    if cls is None:
        raise FrameError(
            "unknown-kind",
            f"kind {kind!r} (a client sends {', '.join(CLIENT_KINDS)} or stats)",
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
            return Pub(
                client,
                model.name,
                model.load_event(obj["event"]),
                pub_id(obj.get("pub_id"), client, aliases),
            )
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


def from_broker(obj: Mapping[str, Any], models: Mapping[str, FilterModel]) -> Message:
    """The core message of a neighbour's frame (forward, admin)."""
    kind = obj["kind"]
    if kind not in BROKER_KINDS:
        raise FrameError("unknown-kind", f"kind {kind!r} from a broker link")
    _model(obj, models)
    try:
        return from_wire(obj, models)
    except PubsiftError as exc:
        raise FrameError("invalid-message", f"{kind}: {one_line(exc)}") from None
    except KeyError as exc:
        raise FrameError("invalid-message", f"{kind}: missing member {exc.args[0]!r}") from None
    except (TypeError, ValueError) as exc:
        raise FrameError(
            "invalid-message", f"{kind}: malformed ({type(exc).__name__}: {exc})"
        ) from None
