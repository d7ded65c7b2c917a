"""A ``.gz`` file read by Spark across the cores: its decompressed bytes kept once.

gzip does not split: Spark's text source gives a ``.gz`` to one task, and the job's other
cores wait while it decompresses, types and writes the whole file. The driver's probe
(:func:`.native.probe`, :func:`.native_jsonl.probe`) decompresses every ``.gz`` it takes
once anyway, through the bomb guard, to count its lines; a :class:`Spill` keeps those
bytes in a plain file of the job's scratch directory, which Spark then reads in blocks
of one partition each, numbered from the probe's counts like any plain file.

Only files of more than :data:`.native_jsonl.MIN_BLOCK` decompressed bytes are kept (a
smaller one is one block anyway), and no more than :data:`SPILL_BYTES` in all for one
listing (:class:`Budget`): beyond that, the files are read as they are, one task each
(many ``.gz`` files already keep the cores busy). The copies are removed with the scratch
directory when the convert stage ends (:func:`pubsift.adapters.spark.job._ingest`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from types import TracebackType
from typing import BinaryIO

#: the decompressed bytes one listing's copies may take in all
SPILL_BYTES = 4 << 30


class Budget:
    """What the copies of one listing may still take: ``directory`` (created when the
    first is written) and the bytes left."""

    def __init__(self, directory: str, limit: int = SPILL_BYTES) -> None:
        self.directory = directory
        self.left = limit


class Spill:
    """The decompressed bytes of one file, written as the probe reads them: held in memory
    up to ``threshold`` bytes, then in a file of the budget's directory. :meth:`keep` gives
    that file's path (None for a file of ``threshold`` bytes or fewer, or one the budget
    could not hold: no copy); a copy not kept is removed when the ``with`` block ends."""

    def __init__(self, budget: Budget | None, threshold: int) -> None:
        self._budget = budget
        self._threshold = threshold
        self._held: list[bytes] = []
        self._size = 0
        self._fh: BinaryIO | None = None
        self.path: str | None = None
        self._kept = False

    def write(self, chunk: bytes) -> None:
        budget = self._budget
        if budget is None:
            return
        self._size += len(chunk)
        if self._size > budget.left:  # beyond the listing's budget: no copy of this file
            self._drop()
            self._budget = None
            return
        if self._fh is None:
            self._held.append(chunk)
            if self._size <= self._threshold:
                return
            os.makedirs(budget.directory, exist_ok=True)
            fd, self.path = tempfile.mkstemp(prefix="gz-", suffix=".txt", dir=budget.directory)
            self._fh = os.fdopen(fd, "wb")
            chunks, self._held = self._held, []
        else:
            chunks = [chunk]
        for c in chunks:
            self._fh.write(c)

    def keep(self) -> str | None:
        """The copy's path (closed, counted against the budget), None when there is none."""
        if self._fh is None or self._budget is None:
            self._drop()
            return None
        self._fh.close()
        self._fh = None
        self._budget.left -= self._size
        self._kept = True
        return self.path

    def _drop(self) -> None:
        self._held = []
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.path)
            self.path = None

    def __enter__(self) -> Spill:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._kept:
            self._drop()


__all__ = ["SPILL_BYTES", "Budget", "Spill"]
