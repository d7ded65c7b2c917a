"""The durable store of a history (Mühl 2002, "Large-Scale Content-Based Publish/Subscribe
Systems", §5.3.4 "Implementing a History"): the notifications a history received, in a
SQLite database in WAL mode, one row per publication (publisher, sequence number, time
recorded, model, the event's wire bytes). A publication recorded twice (the same
``[publisher, seq]``) is kept once. Retention prunes the oldest rows beyond a maximum age,
count or size in bytes of events.

Errors (a store that is not a SQLite database or is corrupt, a full disk, a read-only
file) are :class:`HistoryError` naming the file; what was committed before stays.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from pubsift.adapters.broker.replay import MAX_REPLAY, Replay, ReplayError
from pubsift.core.errors import PubsiftError

SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    publisher TEXT NOT NULL,
    seq INTEGER NOT NULL,
    time REAL NOT NULL,
    model TEXT NOT NULL,
    event BLOB NOT NULL,
    UNIQUE (publisher, seq)
);
CREATE INDEX IF NOT EXISTS events_time ON events (time);
"""


class HistoryError(PubsiftError, OSError):
    """A history store that cannot be used (corrupt, not a database, disk full, ...)."""


@dataclass(frozen=True)
class Retention:
    """How much a history keeps: notifications younger than ``max_age`` seconds, at most
    ``max_count`` of them, at most ``max_bytes`` bytes of events (None: no such limit)."""

    max_age: float | None = None
    max_count: int | None = None
    max_bytes: int | None = None


class HistoryStore:
    """The notifications of one history in the SQLite database at ``path``."""

    def __init__(self, path: str, retention: Retention = Retention()) -> None:
        self.path = path
        self.retention = retention
        try:
            self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
            self.db.execute("BEGIN")
        except sqlite3.Error as exc:
            raise self._error("cannot open", exc) from None
        self._open = True

    def _error(self, what: str, exc: sqlite3.Error) -> HistoryError:
        return HistoryError(f"history store {self.path}: {what}: {exc}")

    def record(self, publisher: str, seq: int, model: str, event: bytes, when: float) -> bool:
        """Add one notification (False: its ``[publisher, seq]`` was recorded already).
        Written with the next :meth:`commit`."""
        try:
            cur = self.db.execute(
                "INSERT OR IGNORE INTO events (publisher, seq, time, model, event) "
                "VALUES (?, ?, ?, ?, ?)",
                (publisher, seq, when, model, event),
            )
        except sqlite3.Error as exc:
            raise self._error("cannot record", exc) from None
        return cur.rowcount == 1

    def commit(self) -> None:
        """Make what was recorded durable (one transaction)."""
        try:
            self.db.execute("COMMIT")
            self.db.execute("BEGIN")
        except sqlite3.Error as exc:
            self._restart()
            raise self._error("cannot commit", exc) from None

    def _restart(self) -> None:
        try:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            self.db.execute("BEGIN")
        except sqlite3.Error:
            pass

    def prune(self, now: float | None = None) -> int:
        """Delete what the retention no longer keeps (oldest first); how many rows."""
        r, gone = self.retention, 0
        try:
            if r.max_age is not None:
                now = time.time() if now is None else now
                gone += self.db.execute(
                    "DELETE FROM events WHERE time < ?", (now - r.max_age,)
                ).rowcount
            if r.max_count is not None:
                gone += self.db.execute(
                    "DELETE FROM events WHERE id <= (SELECT id FROM events ORDER BY id DESC "
                    "LIMIT 1 OFFSET ?)",
                    (r.max_count,),
                ).rowcount
            if r.max_bytes is not None:
                row = self.db.execute(
                    "SELECT id FROM (SELECT id, SUM(length(event)) OVER (ORDER BY id DESC) "
                    "AS total FROM events) WHERE total > ? ORDER BY id DESC LIMIT 1",
                    (r.max_bytes,),
                ).fetchone()
                if row is not None:
                    gone += self.db.execute("DELETE FROM events WHERE id <= ?", row).rowcount
            self.commit()
        except sqlite3.Error as exc:
            self._restart()
            raise self._error("cannot prune", exc) from None
        return gone

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM events").fetchone()[0])

    def size(self) -> int:
        """Bytes of events stored."""
        return int(
            self.db.execute("SELECT COALESCE(SUM(length(event)), 0) FROM events").fetchone()[0]
        )

    def rows(self) -> Iterator[tuple[str, int, float, str, bytes]]:
        """Every stored notification, oldest first: (publisher, seq, time, model, event)."""
        yield from self.db.execute(
            "SELECT publisher, seq, time, model, event FROM events ORDER BY id"
        )

    def select(
        self,
        model: str,
        replay: Replay,
        wanted: Callable[[bytes], bool],
        max_replay: int = MAX_REPLAY,
    ) -> list[tuple[str, int, bytes]]:
        """The stored notifications of ``model`` that ``replay`` asks for and ``wanted``
        accepts (the subscription's filter), oldest first: (publisher, seq, event).
        More than ``max_replay`` of them is a :class:`ReplayError` (nothing is answered:
        a replay is whole or refused)."""
        try:
            if replay.last is not None:
                if replay.last > max_replay:
                    raise ReplayError(
                        f"replay: last {replay.last} is more than this history's "
                        f"max_replay = {max_replay}"
                    )
                out: list[tuple[str, int, bytes]] = []
                for p, s, e in self.db.execute(
                    "SELECT publisher, seq, event FROM events WHERE model = ? ORDER BY id DESC",
                    (model,),
                ):
                    if wanted(e):
                        out.append((p, s, e))
                        if len(out) == replay.last:
                            break
                out.reverse()
                return out
            if replay.after is not None:
                found = self._after(model, replay.after, wanted)
            else:
                floor = replay.since_time if replay.since is None else None
                found = self._scan(model, floor, replay, wanted)
            out = []
            for row in found:
                out.append(row)
                if len(out) > max_replay:
                    raise ReplayError(
                        f"replay: more than max_replay = {max_replay} stored notifications "
                        "match; ask for less (a later since_time, or last N)"
                    )
            return out
        except sqlite3.Error as exc:
            raise self._error("cannot read", exc) from None

    def _scan(
        self, model: str, floor: float | None, replay: Replay, wanted: Callable[[bytes], bool]
    ) -> Iterable[tuple[str, int, bytes]]:
        query = "SELECT publisher, seq, time, event FROM events WHERE model = ?"
        args: tuple[object, ...] = (model,)
        if floor is not None:
            query += " AND time >= ?"
            args += (floor,)
        for p, s, t, e in self.db.execute(query + " ORDER BY id", args):
            if replay.wants(p, s, t) and wanted(e):
                yield p, s, e

    def _after(
        self, model: str, after: tuple[str, int], wanted: Callable[[bytes], bool]
    ) -> Iterable[tuple[str, int, bytes]]:
        """What was recorded after the publication ``after`` (``publisher``'s own up to
        its ``seq`` excepted); without it, ``since`` that publisher and seq."""
        publisher, seq = after
        row = self.db.execute(
            "SELECT id FROM events WHERE publisher = ? AND seq = ?", (publisher, seq)
        ).fetchone()
        if row is None:
            yield from self._scan(model, None, Replay(since={publisher: seq}), wanted)
            return
        for p, s, e in self.db.execute(
            "SELECT publisher, seq, event FROM events WHERE model = ? AND id > ? ORDER BY id",
            (model, row[0]),
        ):
            if (p != publisher or s > seq) and wanted(e):
                yield p, s, e

    def close(self) -> None:
        if self._open:
            self._open = False
            try:
                if self.db.in_transaction:
                    self.db.execute("COMMIT")
            except sqlite3.Error:
                pass
            self.db.close()
