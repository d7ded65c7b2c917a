"""Up to n bytes of a stream or a file, in few reads and no copy: how the XML reader takes a
document into memory (files up to ``ReadLimits.stream_above``) and the first bytes of a
streamed one."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

#: the first read of a stream of unknown size, doubled per read up to :data:`_MAX_CHUNK`
_CHUNK = 64 << 10
_MAX_CHUNK = 4 << 20


def read_file(path: str, n: int, size: int | None) -> bytes:
    """Up to ``n`` bytes of a file on disk (:attr:`Input.file`), read unbuffered: no
    buffer, no copy."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0) | os.O_CLOEXEC)
    try:
        return read_at_most(functools.partial(os.read, fd), n, size)
    finally:
        os.close(fd)


def read_at_most(read: Callable[[int], bytes], n: int, size: int | None = None) -> bytes:
    """Up to ``n`` bytes from ``read`` (a stream's, which may return fewer per call before
    its end). ``size``:
    the stream's expected size, a hint (a file may change while it is read) that sizes the
    first read; a read of ``n`` bytes costs an allocation of ``n`` bytes however few the
    stream holds, more than parsing a small feed."""
    parts: list[bytes] = []
    chunk = _CHUNK if size is None else size + 1
    while n > 0:
        data = read(min(n, chunk))
        if not data:
            break
        parts.append(bytes(data))
        n -= len(data)
        chunk = min(max(chunk, _CHUNK) * 2, _MAX_CHUNK)
    return b"".join(parts)
