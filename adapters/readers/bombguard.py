"""The bomb guard: every decompressed stream is read through a :class:`GuardedStream` that
counts the bytes coming out and refuses an archive or compressed file beyond the limits
(docs/adapters.md §5: "zip bombs are refused like entity bombs"; never unbounded
memory). Sizes an archive declares (zip's ``file_size``/``compress_size``) can lie, so the
limits are enforced on the bytes actually produced, while streaming.

A :class:`Budget` belongs to one top-level archive or compressed file and counts the
uncompressed bytes of every guarded stream under it (a stream opened twice counts once:
each stream charges only what goes past its own high-water mark). Seeking a compressed
stream is decompressing: a forward seek reads its way forward through the guard (so a
member skipped in a ``.tar.gz`` is checked every 64 KiB, not after it was all
decompressed), a backward seek starts again from the beginning, and the bytes decompressed
again below the stream's high-water mark are charged to the budget too, so that no input
can cost more decompression work than ``max_total_bytes`` (e.g. a zip inside a zip whose
members are read out of order). A stream's ratio is its uncompressed bytes over the
compressed bytes it consumed so far, checked once more than ``ratio_floor`` bytes came
out.

The guard also turns the errors of corrupt archives and compressed streams into
:class:`~pubsift.adapters.readers.registry.ReadError` with the quarantine reason: ``compression``
(truncated or corrupt gzip/bzip2/deflate data) or ``archive-member`` (a corrupt zip or tar
member, e.g. a bad CRC), so that a reader never sees a library-specific exception.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from typing import Any, BinaryIO

from pubsift.adapters.readers.limits import ReadLimits
from pubsift.adapters.readers.registry import ReadError
from pubsift.core.errors import one_line

#: buffer of the guarded streams handed to readers
BUFFER = 1 << 16


class Budget:
    """Uncompressed bytes of one top-level archive or compressed file (``label``)."""

    def __init__(self, label: str, limits: ReadLimits) -> None:
        self.label = label
        self.limits = limits
        self.total = 0
        self.exceeded = ""  # the message, once the limit was passed
        self._seen: dict[str, int] = {}

    def charge(self, key: str, high_water: int, again: int = 0) -> None:
        """Stream ``key`` produced ``high_water`` bytes so far (across re-opens), and
        ``again`` more bytes decompressed a second time (after a backward seek)."""
        before = self._seen.get(key, 0)
        if high_water > before:
            self._seen[key] = high_water
            self.total += high_water - before
        self.total += again
        if self.total > self.limits.max_total_bytes and not self.exceeded:
            self.exceeded = (
                f"{self.label}: more than {self.limits.max_total_bytes} bytes "
                "uncompressed, counting what seeking decompressed again "
                "(limit max_total_bytes)"
            )
        if self.exceeded:
            raise ReadError("archive-bomb", self.exceeded)


class CountingFile:
    """A file object that counts the bytes read from it (the compressed side of a ratio).
    ``count`` grows with every read, re-reads after a backward seek included."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read(n)
        self.count += len(data)
        return data

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._raw.seek(offset, whence)

    def tell(self) -> int:
        return self._raw.tell()

    def seekable(self) -> bool:
        return self._raw.seekable()

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._raw.close()

    @property
    def closed(self) -> bool:
        return self._raw.closed


def translated(exc: BaseException) -> ReadError | None:
    """The quarantine reason of a decompression or archive error (None: not one)."""
    if isinstance(exc, (zipfile.BadZipFile, tarfile.TarError, NotImplementedError)):
        return ReadError("archive-member", f"corrupt archive member: {one_line(exc)}")
    if isinstance(exc, (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile)):
        return ReadError("compression", f"corrupt or truncated compressed data: {one_line(exc)}")
    if isinstance(exc, OSError) and "invalid data stream" in str(exc).lower():  # bz2
        return ReadError("compression", f"corrupt compressed data: {one_line(exc)}")
    return None


class GuardedStream(io.RawIOBase):
    """``inner`` read under the limits: ``key`` names the stream in ``budget`` (None: not
    counted); ``compressed()`` gives the compressed bytes consumed so far (None: no ratio,
    the stream is not a decompression)."""

    def __init__(
        self,
        inner: Any,
        key: str,
        limits: ReadLimits,
        budget: Budget | None,
        compressed: Callable[[], int] | None,
        also_close: Any = None,
    ) -> None:
        super().__init__()
        self._inner = inner
        self._read1 = getattr(inner, "read1", inner.read)
        self._also_close = also_close
        self._key = key
        self._limits = limits
        self._budget = budget
        self._compressed = compressed
        self._pos = 0
        self._high = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return bool(self._inner.seekable())

    def tell(self) -> int:
        return self._pos

    def readinto(self, b: Any) -> int:
        data = self._call(self._read1, len(b))
        # read1: one underlying read at most, so the bytes before a corrupt or truncated
        # part reach the reader before the error does
        n = len(data)
        b[:n] = data
        self._advance(self._pos + n)
        return n

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except ReadError:
            raise
        except Exception as exc:
            err = translated(exc)
            if err is None:
                raise
            raise err from None

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if self._compressed is None or whence == io.SEEK_END:
            pos = self._call(self._inner.seek, offset, whence)
            self._advance(self._inner.tell() if pos is None else pos)
            return self._pos
        # a compressed stream: decompress through the guard, checked as reading is
        target = offset if whence == io.SEEK_SET else self._pos + offset
        if target < 0:
            raise ValueError(f"negative seek position {target}")
        if target < self._pos:
            self._call(self._inner.seek, 0)  # decompressing starts again from the start
            self._pos = 0
        while self._pos < target:
            data = self._call(self._read1, min(BUFFER, target - self._pos))
            if not data:
                break  # past the end: stays at the end, as the inner stream does
            self._advance(self._pos + len(data))
        return self._pos

    def _advance(self, pos: int) -> None:
        again = max(0, min(pos, self._high) - self._pos)
        self._pos = pos
        if pos > self._high or (again and self._compressed is not None):
            self._high = max(self._high, pos)
            if self._budget is not None:
                self._budget.charge(
                    self._key, self._high, again if self._compressed is not None else 0
                )
        lim = self._limits
        if self._compressed is not None and pos > lim.ratio_floor:
            packed = max(self._compressed(), 1)
            if pos > lim.max_ratio * packed:
                raise ReadError(
                    "archive-bomb",
                    f"compression ratio above {lim.max_ratio} "
                    f"({pos} bytes out of {packed} compressed; limit max_ratio)",
                )

    def close(self) -> None:
        if not self.closed:
            try:
                self._inner.close()
                if self._also_close is not None:
                    self._also_close.close()
            finally:
                super().close()


def guarded(
    inner: Any,
    key: str,
    limits: ReadLimits,
    budget: Budget | None,
    compressed: Callable[[], int] | None,
    also_close: Any = None,
) -> BinaryIO:
    """A buffered binary stream of ``inner`` under the limits (see :class:`GuardedStream`);
    closing it closes ``inner`` and ``also_close``."""
    raw = GuardedStream(inner, key, limits, budget, compressed, also_close)
    return io.BufferedReader(raw, BUFFER)


#: single-file compressions by suffix
DECOMPRESSORS: dict[str, Callable[[Any], Any]] = {
    ".gz": lambda f: gzip.GzipFile(fileobj=f, mode="rb"),
    ".bz2": lambda f: bz2.BZ2File(f, mode="rb"),
}


def compression_of(name: str) -> str | None:
    """``.gz`` or ``.bz2`` when the name says the file is compressed."""
    low = name.lower()
    for suffix in DECOMPRESSORS:
        if low.endswith(suffix):
            return suffix
    return None


def decompressed(raw: Any, suffix: str, key: str, limits: ReadLimits, budget: Budget) -> BinaryIO:
    """The guarded decompressed stream of ``raw`` (a binary file object) for a
    ``.gz``/``.bz2`` suffix."""
    counting = CountingFile(raw)
    try:
        inner = DECOMPRESSORS[suffix](counting)
    except Exception:
        counting.close()
        raise
    return guarded(inner, key, limits, budget, lambda: counting.count, counting)
