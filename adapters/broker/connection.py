"""One peer over one stream: a client or a neighbour broker (docs/protocol.md).

A :class:`Connection` owns the stream, reads frames with the size limit and queues frames
to send on a bounded asyncio queue drained by its own writer task, so the synchronous core
broker never waits on a socket (its :class:`~pubsift.core.broker.Port` only enqueues). The
peer's identity (``role``, ``id``) is set by the hello; it is the one place that
authentication, authorization and per-client limits hook into (a credential in the hello,
a permission check per message, a TLS context on the stream).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from pubsift.adapters.broker.frames import encode, error, read_frame

log = logging.getLogger("pubsift.broker")


class Connection:
    """A framed stream to one peer. ``send`` never blocks: a peer that lets more than
    ``max_queue`` frames pile up is cut off (``slow-consumer``)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        max_frame_bytes: int,
        max_queue: int,
        dialled: bool = False,
    ) -> None:
        self.reader, self.writer = reader, writer
        self.max_frame_bytes, self.max_queue = max_frame_bytes, max_queue
        #: whether this side dialled the connection (for neighbour links)
        self.dialled = dialled
        #: the peer's identity, known after the hello: "client" or "broker", and its id
        self.role: str | None = None
        self.id: str | None = None
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._closing = False
        self.close_reason: str | None = None
        self._writer_task = asyncio.ensure_future(self._write_loop())

    def __repr__(self) -> str:
        return f"<Connection {self.role or '?'} {self.id or '?'} {self.peer}>"

    @property
    def closing(self) -> bool:
        return self._closing

    def send(self, obj: dict[str, Any]) -> bool:
        """Queue ``obj`` as a frame; False when the connection is closing (dropped)."""
        if self._closing:
            return False
        if self._queue.qsize() >= self.max_queue:
            self.close("slow-consumer", f"more than {self.max_queue} frames waiting to be sent")
            return False
        self._queue.put_nowait(encode(obj))
        return True

    async def recv(self) -> dict[str, Any] | None:
        """The next frame (None at a clean end of stream); raises FrameError."""
        return await read_frame(self.reader, self.max_frame_bytes)

    def close(self, reason: str | None = None, message: str = "") -> None:
        """Send an ``error`` frame with ``reason`` (if given) after what is queued, then
        close the stream."""
        if self._closing:
            return
        self._closing = True
        self.close_reason = reason
        if reason is not None:
            self._queue.put_nowait(encode(error(reason, message)))
        self._queue.put_nowait(None)

    def abort(self) -> None:
        """Close the stream now, dropping what is queued."""
        self._closing = True
        self._writer_task.cancel()
        self.writer.close()

    async def wait_closed(self, timeout: float = 5.0) -> None:
        """Wait until the queued frames are written and the stream is closed."""
        if not self._closing:
            self.close()
        try:
            await asyncio.wait_for(asyncio.shield(self._writer_task), timeout)
        except (TimeoutError, asyncio.CancelledError):
            self.abort()

    async def _write_loop(self) -> None:
        try:
            while True:
                data = await self._queue.get()
                if data is None:
                    break
                self.writer.write(data)
                if self._queue.empty():
                    await self.writer.drain()
            await self.writer.drain()
        except (ConnectionError, OSError) as exc:
            log.debug("%r: write failed: %s", self, exc)
        finally:
            self._closing = True
            self.writer.close()
            with contextlib.suppress(ConnectionError, OSError, asyncio.CancelledError):
                await self.writer.wait_closed()
