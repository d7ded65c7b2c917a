"""The core broker's port on asyncio connections: each message the broker sends or
delivers becomes a frame, or an item of this turn's batch frame, on the queue of the
connection to its destination (docs/protocol.md §3.2, §7). Mühl 2002, "Large-Scale
Content-Based Publish/Subscribe Systems", §3.4: the broker's only way out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping

from pubsift.adapters.broker import wire
from pubsift.adapters.broker.connection import Connection
from pubsift.adapters.broker.frames import encode
from pubsift.core.messages import (
    Batch,
    BrokerMessage,
    Forward,
    Notify,
    forward_of,
    to_wire,
)
from pubsift.core.model import FilterModel


class ConnectionPort:
    """The core broker's :class:`~pubsift.core.broker.Port`: puts the wire form of each
    message on the queue of the connection to its destination. A destination that is not
    connected loses the message (counted in ``lost``); leases and renewals repair the
    routing state, and a subscriber may miss notifications meanwhile (docs/protocol.md)."""

    def __init__(self, models: Mapping[str, FilterModel]) -> None:
        self.models = models
        self.clients: dict[str, Connection] = {}
        self.neighbours: dict[str, Connection] = {}
        self.lost: Counter[str] = Counter()
        #: admin messages sent per neighbour (the monitor's messages out)
        self.admin_sent: Counter[str] = Counter()
        #: the frame of the last forward (the broker sends one forward to each neighbour)
        self._forward: Forward | None = None
        self._forward_frame = b""
        #: the batch item of the last publication forwarded or notified (one per
        #: publication, whatever the number of neighbours and subscribers it goes to)
        self._item_of: bytes | None = None
        self._item_pub: Hashable = None
        self._item = b""
        #: batch frame heads per model (forwards) and per (client, model) (notifies)
        self._forwards_heads: dict[str, bytes] = {}
        self._notifies_heads: dict[tuple[str, str], bytes] = {}
        self._notify = wire.NotifyFrames()

    def _item_for(self, msg: Forward | Notify) -> bytes:
        if msg.wire is not self._item_of or msg.pub_id != self._item_pub:
            self._item_of, self._item_pub = msg.wire, msg.pub_id
            self._item = wire.batch_item(msg)
        return self._item

    def send(self, broker: str, neighbour: str, msg: BrokerMessage) -> None:
        conn = self.neighbours.get(neighbour)
        if conn is None:
            self.lost[neighbour] += 1
            return
        if isinstance(msg, Forward) and msg.wire is not None:
            if "forwards" in conn.features:
                # what one turn forwards to a neighbour goes as one ``forwards`` frame,
                # written before any other frame to it (Connection.send_item)
                head = self._forwards_heads.get(msg.model)
                if head is None:
                    head = self._forwards_heads[msg.model] = wire.forwards_head(msg.model)
                if not conn.send_item(msg.model, head, self._item_for(msg)):
                    self.lost[neighbour] += 1
                return
            if msg is not self._forward:
                self._forward, self._forward_frame = msg, wire.forward_frame(msg)
            data = self._forward_frame
        else:
            if not isinstance(msg, Forward):
                self.admin_sent[neighbour] += 1
            data = encode(to_wire(msg, self.models))
        if not conn.send(data):
            self.lost[neighbour] += 1

    def send_many(self, broker: str, neighbour: str, batch: Batch, indices: list[int]) -> None:
        """Forward a neighbour's share of a batch: the pairs' bytes as they came, into
        this turn's ``forwards`` frame to it."""
        conn = self.neighbours.get(neighbour)
        if conn is None:
            self.lost[neighbour] += len(indices)
            return
        pairs = _pairs(batch)
        if pairs is None or "forwards" not in conn.features:
            for i in indices:
                self.send(broker, neighbour, forward_of(batch, i))
            return
        head = self._forwards_heads.get(batch.model)
        if head is None:
            head = self._forwards_heads[batch.model] = wire.forwards_head(batch.model)
        if not conn.send_items(batch.model, head, [pairs[i] for i in indices]):
            self.lost[neighbour] += len(indices)

    def deliver_many(self, broker: str, client: str, batch: Batch, indices: list[int]) -> None:
        """Notify a client of its share of a batch: the pairs' bytes as they came, into
        this turn's ``notifies`` frame to it (docs/protocol.md §3.2)."""
        conn = self.clients.get(client)
        if conn is None:
            self.lost[client] += len(indices)
            return
        pairs = _pairs(batch)
        if pairs is None or "notifies" not in conn.features:
            for i in indices:
                f = forward_of(batch, i)
                self.deliver(broker, Notify(client, f.model, f.event, f.pub_id, f.wire))
            return
        key = (client, batch.model)
        head = self._notifies_heads.get(key)
        if head is None:
            if len(self._notifies_heads) > 100_000:
                self._notifies_heads.clear()
            head = self._notifies_heads[key] = wire.notifies_head(*key)
        if not conn.send_items(batch.model, head, [pairs[i] for i in indices]):
            self.lost[client] += len(indices)

    def deliver(self, broker: str, msg: Notify) -> None:
        conn = self.clients.get(msg.client)
        if conn is None:
            self.lost[msg.client] += 1
            return
        if msg.wire is not None and "notifies" in conn.features:
            # a client that reads ``notifies`` frames gets what one turn notifies it of
            # as one frame (docs/protocol.md §3.2)
            key = (msg.client, msg.model)
            head = self._notifies_heads.get(key)
            if head is None:
                if len(self._notifies_heads) > 100_000:
                    self._notifies_heads.clear()
                head = self._notifies_heads[key] = wire.notifies_head(*key)
            if not conn.send_item(msg.model, head, self._item_for(msg)):
                self.lost[msg.client] += 1
            return
        if msg.wire is not None:
            data = self._notify.frame(msg)
        else:
            data = encode(to_wire(msg, self.models))
        if not conn.send(data):
            self.lost[msg.client] += 1


def _pairs(batch: Batch) -> list[bytes] | None:
    """The ``[pub_id, event]`` bytes of a batch's publications (None: not at hand)."""
    return getattr(batch, "pairs", None)
