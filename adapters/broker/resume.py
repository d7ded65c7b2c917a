"""The resume point of a subscriber, in a file (``pubsift sub --state FILE``): per
publisher the last sequence number delivered, and since when the subscriber listens.
On a restart the subscriber subscribes ``since`` that point, so that a history in reach
fills the gap (docs/history.md). Written atomically (a temporary file renamed over it)
once per turn of the event loop in which something was delivered, after it was printed.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from pubsift.adapters.broker.config import ConfigError
from pubsift.adapters.broker.replay import Replay


class ResumeState:
    """The resume point kept in ``path`` (absent: a first start)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.last_seq: dict[str, int] = {}
        self.since_time = time.time()
        self.found = False
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--state {path}: cannot read the resume point: {exc}") from None
        last, since = (
            (data.get("last_seq"), data.get("since_time"))
            if isinstance(data, dict)
            else (None, None)
        )
        if (
            not isinstance(last, dict)
            or not all(isinstance(p, str) and type(s) is int and s >= 0 for p, s in last.items())
            or not isinstance(since, (int, float))
            or isinstance(since, bool)
        ):
            raise ConfigError(
                f"--state {path}: not a resume point (expected last_seq and since_time)"
            )
        self.last_seq, self.since_time, self.found = dict(last), float(since), True

    def replay(self) -> Replay | None:
        """What a restarted subscriber asks for (None: nothing saved yet)."""
        return Replay(since=self.last_seq, since_time=self.since_time) if self.found else None

    def save(self, last_seq: dict[str, int]) -> None:
        """Write the point (:class:`ConfigError` when the file cannot be written)."""
        self.last_seq = last_seq
        data: dict[str, Any] = {"last_seq": last_seq, "since_time": self.since_time}
        tmp = f"{self.path}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(data, fh)
            os.replace(tmp, self.path)
        except OSError as exc:
            raise ConfigError(
                f"--state {self.path}: cannot write the resume point: {exc}"
            ) from None
