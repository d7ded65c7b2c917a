"""One peer over one stream: a client or a neighbour broker (docs/protocol.md).

A :class:`Connection` owns the stream, reads frames with the size limit and queues frames
to send on a bounded list drained by its own writer task, so the synchronous core
broker never waits on a socket (its :class:`~pubsift.core.broker.Port` only enqueues).

Both directions are batched (DESIGN §2.6): :meth:`Connection.recv` reads the stream in chunks
of up to 64 KiB and hands out the frames of a chunk one by one without waiting on the
stream again, and what a turn of the event loop queued is written with one ``write`` (one
``sendto`` for many notifications) when the turn is done: straight to the transport when
its buffer is empty, else by the connection's writer task, which waits for it to drain.
What a turn of the event loop queued for a peer goes out together. Items of a batch
frame (``forwards`` to a neighbour, ``notifies`` to a client: docs/protocol.md §3.2, §7)
are collected by :meth:`Connection.send_item` into one frame per turn, sealed when the
writer takes the queue, when another frame is sent (which so never overtakes them), or
when the frame is full. The
peer's identity (``role``, ``id``) is set by the hello; it is the one place that
authentication, authorization and per-client limits hook into (a credential in the hello,
a permission check per message, a TLS context on the stream).

Liveness (docs/protocol.md §1.1): once the hello is done, :meth:`Connection.start_heartbeat`
pings a peer that has sent nothing for ``interval`` seconds and closes the connection
(``timeout``) when ``max_missed`` pings in a row go unanswered; :meth:`Connection.recv`
answers the peer's pings and swallows its pongs. A closing connection whose peer does not
read is aborted after :data:`CLOSE_GRACE` seconds, so a stuck peer never holds one open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from pubsift.adapters.broker.client_limits import QueueBudget
from pubsift.adapters.broker.frames import (
    HEADER,
    MAX_BATCH,
    FrameError,
    decode,
    encode,
    error,
    looks_like_tls,
)

log = logging.getLogger("pubsift.broker")


def _backlog(c: Connection) -> int:
    return c.backlog


#: bytes asked of the stream at once (the frames of one chunk are handed out in one go)
READ_CHUNK = 1 << 16
#: seconds a closing connection may take to flush its last frames before it is aborted
CLOSE_GRACE = 5.0
#: seconds a connection closed for what the peer sent keeps reading (and dropping) what the
#: peer still sends after the last frame, so that its ``error`` frame is not lost to a reset
LINGER = 1.0


class _Batch:
    """A batch frame being filled: ``head`` (the frame's JSON up to its list's ``[``)
    then the items' bytes, comma-separated, then ``]}``."""

    __slots__ = ("head", "items", "key", "limit", "size")

    def __init__(self, key: object, head: bytes, limit: int) -> None:
        self.key, self.head, self.limit = key, head, limit
        self.items: list[bytes] = []
        #: bytes of the frame so far (header and ``]}`` included)
        self.size = HEADER.size + len(head) + 2

    def frame(self) -> bytes:
        body = self.head + b",".join(self.items) + b"]}"
        return HEADER.pack(len(body)) + body


class Connection:
    """A framed stream to one peer. ``send`` never blocks: a peer that lets more than
    ``max_queue`` frames or ``max_queue_bytes`` bytes pile up (those queued and those in
    the transport's buffer) is cut off (``slow-consumer``): what was queued for it is
    dropped, the ``error`` frame is the next one it gets, and only that connection ends."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        max_frame_bytes: int,
        max_queue: int,
        dialled: bool = False,
        max_queue_bytes: int | None = None,
    ) -> None:
        self.reader, self.writer = reader, writer
        self.max_frame_bytes, self.max_queue = max_frame_bytes, max_queue
        self.max_queue_bytes = max_queue_bytes
        #: bytes of the frames on the queue
        self._queued_bytes = 0
        #: bytes queued to this and other connections together (an identity's
        #: ``max_queue_bytes``, docs/protocol.md §12); None: this connection's own limit
        self.budget: QueueBudget | None = None
        #: called when this peer is cut off as a slow consumer (the daemon counts them)
        self.on_slow: Callable[[], None] | None = None
        #: whether this side dialled the connection (for neighbour links)
        self.dialled = dialled
        #: the peer's identity, known after the hello: "client" or "broker", and its id
        self.role: str | None = None
        self.id: str | None = None
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        #: frames waiting for the writer task, and whether the close frame is among them
        self._out: list[bytes] = []
        #: the batch frame being filled (see :meth:`send_item`), counted in ``_queued_bytes``
        self._batch: _Batch | None = None
        self._eof = False
        self._wake = asyncio.Event()
        #: a flush of this turn's frames is scheduled; the writer task is draining
        self._flushing = False
        self._draining = False
        #: bytes read and not yet handed out as frames: ``_in[_pos:]``
        self._in = bytearray()
        self._pos = 0
        #: the body of the frame :meth:`recv` returned last (its bytes, untouched)
        self.body = b""
        #: what the peer's hello said it reads beyond protocol 1's first frames, and the
        #: longest frame it reads (None: it did not say)
        self.features: frozenset[str] = frozenset()
        self.peer_max_frame_bytes: int | None = None
        self._closing = False
        self._linger = False
        self.close_reason: str | None = None
        self._writer_task = asyncio.ensure_future(self._write_loop())
        #: monotonic time of the last frame received, and pings sent since
        self.last_received = time.monotonic()
        self.missed = 0
        self._heartbeat: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"<Connection {self.role or '?'} {self.id or '?'} {self.peer}>"

    @property
    def closing(self) -> bool:
        return self._closing

    def send(self, obj: dict[str, Any] | bytes) -> bool:
        """Queue ``obj`` as a frame (or an already encoded frame); False when the
        connection is closing (dropped)."""
        if self._closing:
            return False
        data = obj if isinstance(obj, bytes) else encode(obj)
        if self._batch is not None:
            self._seal()
        if not self._admit(len(data)):
            return False
        self._account(len(data))
        self._out.append(data)
        if not self._flushing:
            self._kick()
        return True

    def send_item(self, key: object, head: bytes, item: bytes) -> bool:
        """Add ``item`` to the batch frame ``head`` opens (``key`` tells batches apart,
        e.g. by model): one frame of every item sent in this turn of the event loop, up
        to :data:`MAX_BATCH` items and half the smaller of the two sides'
        ``max_frame_bytes``; a batch of another key, or a full one, is sealed first.
        False when the connection is closing, or cut off now as a slow consumer
        (dropped)."""
        if self._closing:
            return False
        batch = self._batch
        if batch is not None and (
            batch.key != key
            or batch.size + len(item) + 1 > batch.limit
            or len(batch.items) >= MAX_BATCH
        ):
            self._seal()
            batch = None
        n = len(item) + 1
        if batch is None:
            n += HEADER.size + len(head) + 2
        if not self._admit(n):
            return False
        if batch is None:
            peer = self.peer_max_frame_bytes or self.max_frame_bytes
            batch = self._batch = _Batch(key, head, min(self.max_frame_bytes, peer) // 2)
        batch.items.append(item)
        batch.size += len(item) + 1
        self._account(len(item) + 1)
        if not self._flushing:
            self._kick()
        return True

    def send_items(self, key: object, head: bytes, items: list[bytes]) -> bool:
        """:meth:`send_item` for each of ``items``, in order: in one step when they all
        fit the batch being filled (or a new one), else one by one. False when the
        connection is closing, or cut off now as a slow consumer (all dropped)."""
        if self._closing:
            return False
        n = sum(map(len, items)) + len(items)
        batch = self._batch
        if batch is None or batch.key != key:
            peer = self.peer_max_frame_bytes or self.max_frame_bytes
            limit = min(self.max_frame_bytes, peer) // 2
            whole = HEADER.size + len(head) + 2 + n
            if whole <= limit and len(items) <= MAX_BATCH:
                if batch is not None:
                    self._seal()
                if not self._admit(whole):
                    return False
                batch = self._batch = _Batch(key, head, limit)
                batch.items.extend(items)
                batch.size = whole
                self._account(whole)
                if not self._flushing:
                    self._kick()
                return True
        elif batch.size + n <= batch.limit and len(batch.items) + len(items) <= MAX_BATCH:
            if not self._admit(n):
                return False
            batch.items.extend(items)
            batch.size += n
            self._account(n)
            if not self._flushing:
                self._kick()
            return True
        return self._one_by_one(key, head, items)

    def _one_by_one(self, key: object, head: bytes, items: list[bytes]) -> bool:
        for item in items:
            if not self.send_item(key, head, item):
                return False
        return True

    def _kick(self) -> None:
        """Have what was queued written once this turn of the event loop is done."""
        self._flushing = True
        asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Write what this turn queued. Straight to the transport when its buffer is empty
        (the common case: no task to wake per connection and turn, which cost more than the
        write with many connections), else by the writer task, which waits for the
        transport to drain (so that the queue, not the transport, holds what the peer has
        not read yet, as the limits count it)."""
        self._flushing = False
        transport = self.writer.transport
        if (
            self._closing
            or self._draining
            or self._wake.is_set()
            or transport.is_closing()
            or transport.get_write_buffer_size()
        ):
            if not self._wake.is_set():
                self._wake.set()
            return
        if self._batch is not None:
            self._seal()
        if self._out:
            batch, self._out = self._out, []
            self._account(-sum(map(len, batch)))
            self.writer.write(batch[0] if len(batch) == 1 else b"".join(batch))

    def _seal(self) -> None:
        """Queue the batch being filled as a frame (its bytes were counted as it grew)."""
        batch, self._batch = self._batch, None
        if batch is not None and batch.items:
            frame = batch.frame()
            self._account(len(frame) - (batch.size - HEADER.size - len(batch.head) - 2))
            self._out.append(frame)

    def _admit(self, n: int) -> bool:
        """Whether ``n`` more bytes may be queued; if not, the peer (or, with an
        identity's budget, the connection of the identity holding the most) is cut off as
        a slow consumer."""
        if len(self._out) >= self.max_queue:
            self._slow(f"more than {self.max_queue} frames waiting to be sent", "limits.max_queue")
            return False
        budget = self.budget
        if budget is not None:
            while sum(c.backlog for c in budget.members) + n > budget.limit:
                # the identity's connections hold too much: the one with the largest
                # backlog (the one that reads least) is cut off, not whichever was sent to;
                # none that holds at most one frame's worth (what one turn queues to
                # several reading connections may pass the budget by that much)
                victim = max(budget.members, key=_backlog)
                if victim.backlog <= self.max_frame_bytes:
                    break
                victim._slow(
                    f"more than {budget.limit} bytes waiting to be sent to the identity's "
                    f"connections together, {victim.backlog} of them to this one",
                    f"{budget.name}.max_queue_bytes",
                )
                if victim is self:
                    return False
        elif self.max_queue_bytes is not None:
            waiting = self._queued_bytes + self.writer.transport.get_write_buffer_size()
            if waiting + n > self.max_queue_bytes:
                self._slow(
                    f"more than {self.max_queue_bytes} bytes waiting to be sent",
                    "limits.max_queue_bytes",
                )
                return False
        return True

    @property
    def backlog(self) -> int:
        """Bytes waiting to be sent to the peer: queued, and in the transport's buffer."""
        if self._closing:
            return 0
        return self._queued_bytes + self.writer.transport.get_write_buffer_size()

    def join(self, budget: QueueBudget | None) -> None:
        """Count this connection's queue in ``budget`` (shared with other connections)."""
        self.budget = budget
        if budget is not None:
            budget.members.add(self)

    def _account(self, n: int) -> None:
        """``n`` more (fewer, if negative) bytes on the queue."""
        self._queued_bytes += n
        if self.budget is not None:
            self.budget.used += n

    def _slow(self, why: str, key: str) -> None:
        """Cut off a peer that does not read: drop what is queued for it (the ``error``
        frame is next), one log line."""
        log.warning(
            "%s %s (%s): slow consumer: %s (%s); disconnecting it",
            self.role or "peer",
            self.id or "?",
            self.peer,
            why,
            key,
        )
        self._out.clear()
        self._batch = None
        self._account(-self._queued_bytes)
        self.close("slow-consumer", why)
        if self.on_slow is not None:
            self.on_slow()

    async def recv(self) -> dict[str, Any] | None:
        """The next frame (None at a clean end of stream); raises FrameError. With the
        heartbeat on, pings are answered and pongs swallowed here. Its body's bytes are
        :attr:`body` until the next call."""
        while True:
            obj = self._next()
            if obj is None:
                chunk = await self.reader.read(READ_CHUNK)
                if not chunk:
                    self._ended()  # raises inside a frame
                    return None
                if self._pos == len(self._in):
                    self._in[:] = chunk
                    self._pos = 0
                else:
                    if self._pos > READ_CHUNK:
                        del self._in[: self._pos]
                        self._pos = 0
                    self._in += chunk
                continue
            self.last_received = time.monotonic()
            self.missed = 0
            if self._heartbeat is None or obj["kind"] not in ("ping", "pong"):
                return obj
            if obj["kind"] == "ping":
                self.send({"kind": "pong"})

    def _next(self) -> dict[str, Any] | None:
        """The next whole frame of what was read (None: more must be read first). The
        length is checked as soon as the prefix is there, before the body comes."""
        buf, pos = self._in, self._pos
        if len(buf) - pos < HEADER.size:
            return None
        (n,) = HEADER.unpack_from(buf, pos)
        if n > self.max_frame_bytes:
            if looks_like_tls(bytes(buf[pos : pos + 2])):
                raise FrameError(
                    "bad-hello",
                    "the peer speaks TLS and this port plaintext (connect with pubsift://, "
                    "or give the broker a [tls] section)",
                )
            raise FrameError(
                "too-large", f"frame of {n} bytes exceeds the limit of {self.max_frame_bytes}"
            )
        end = pos + HEADER.size + n
        if len(buf) < end:
            return None
        body = self.body = bytes(buf[pos + HEADER.size : end])
        self._pos = end
        return decode(body, cut=True)

    def _ended(self) -> None:
        """The stream ended: cleanly between frames (None), or inside one."""
        left = len(self._in) - self._pos
        if left == 0:
            return None
        if left < HEADER.size:
            raise FrameError("truncated", "the stream ended inside a frame header")
        (n,) = HEADER.unpack_from(self._in, self._pos)
        raise FrameError(
            "truncated",
            f"the stream ended after {left - HEADER.size} of {n} body bytes",
        )

    def start_heartbeat(self, interval: float, max_missed: int) -> None:
        """Ping the peer after ``interval`` seconds of silence; close (``timeout``) after
        ``max_missed`` unanswered pings. ``interval`` 0: only answer the peer's pings."""
        if self._heartbeat is None:
            self._heartbeat = asyncio.ensure_future(self._beat(interval, max_missed))

    async def _beat(self, interval: float, max_missed: int) -> None:
        if interval <= 0:
            return
        while not self._closing:
            idle = time.monotonic() - self.last_received
            if idle < interval:  # heard from the peer lately (recv resets ``missed``)
                await asyncio.sleep(interval - idle)
                continue
            if self.missed >= max_missed:
                log.warning(
                    "%s %s (%s): nothing received for %.0fs, %d pings unanswered (closing)",
                    self.role or "peer",
                    self.id or "?",
                    self.peer,
                    idle,
                    self.missed,
                )
                self.close("timeout", f"nothing received for {idle:.0f} s")
                return
            self.missed += 1
            self.send({"kind": "ping"})
            await asyncio.sleep(interval)

    def close(self, reason: str | None = None, message: str = "", linger: bool = False) -> None:
        """Send an ``error`` frame with ``reason`` (if given) after what is queued, then
        close the stream. ``linger`` (only when nothing reads the stream any more, e.g.
        after a frame error): end the sending side, then drop what the peer still sends
        for up to :data:`LINGER` seconds before closing; closing a socket with unread
        input resets the connection, and the peer would lose the ``error`` frame (a peer
        that sent an oversize frame is usually still sending its body)."""
        if self._closing:
            return
        self._closing = True
        self._linger = linger
        self.close_reason = reason
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        self._seal()
        if reason is not None:
            frame = encode(error(reason, message))
            self._account(len(frame))
            self._out.append(frame)
        self._eof = True
        self._wake.set()
        asyncio.get_running_loop().call_later(CLOSE_GRACE, self._abort_if_stuck)

    def _abort_if_stuck(self) -> None:
        if not self._writer_task.done():
            log.info("%r: peer does not read; aborting the connection", self)
            self.abort()

    def abort(self) -> None:
        """Close the stream now, dropping what is queued (and what the OS still holds)."""
        self._closing = True
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        self._writer_task.cancel()
        self.writer.transport.abort()

    async def wait_closed(self, timeout: float = 5.0) -> None:
        """Wait until the queued frames are written and the stream is closed."""
        if not self._closing:
            self.close()
        try:
            await asyncio.wait_for(asyncio.shield(self._writer_task), timeout)
        except (TimeoutError, asyncio.CancelledError):
            self.abort()

    async def _drop_input(self) -> None:
        """End the sending side and read until the peer closes (at most LINGER s)."""
        if self.writer.can_write_eof():
            self.writer.write_eof()

        async def drop() -> None:
            while await self.reader.read(1 << 16):
                pass

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(drop(), LINGER)

    async def _write_loop(self) -> None:
        try:
            while True:
                if self._batch is not None:
                    self._seal()
                if not self._out:
                    if self._eof:
                        break
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                batch, self._out = self._out, []
                self._account(-sum(map(len, batch)))
                self.writer.write(batch[0] if len(batch) == 1 else b"".join(batch))
                # waits only while the transport holds more than its high-water mark: the
                # list, not the transport, holds what the peer has not read yet
                self._draining = True
                try:
                    await self.writer.drain()
                finally:
                    self._draining = False
            await self.writer.drain()
            if self._linger:
                await self._drop_input()
        except (ConnectionError, OSError) as exc:
            log.debug("%r: write failed: %s", self, exc)
        finally:
            self._closing = True
            self._account(-self._queued_bytes)  # what was never written counts no more
            if self.budget is not None:
                self.budget.members.discard(self)
            if self._heartbeat is not None:
                self._heartbeat.cancel()
            self.writer.close()
            with contextlib.suppress(ConnectionError, OSError, asyncio.CancelledError):
                await self.writer.wait_closed()
