"""Counts of a read (docs/adapters.md: "counts always add up: read = events + quarantined, per
source"; §3: ``pubsift convert`` prints counts per source and per reason).

A :class:`Summary` is fed every :class:`~pubsift.adapters.readers.outcomes.Event` and
:class:`~pubsift.adapters.readers.outcomes.Quarantined` a read gives (:meth:`Summary.add`), and
counts per source (read, events, quarantined) and per quarantine reason. Summaries of parts
of a read (a Spark partition, one file) combine with :meth:`Summary.merge`; the JSON form
(:meth:`Summary.to_json`) is what ``summary.json`` holds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from pubsift.adapters.readers.outcomes import Event, Quarantined


@dataclass
class SourceCounts:
    """What one source (a file, an archive member) gave."""

    events: int = 0
    quarantined: int = 0

    @property
    def read(self) -> int:
        """Records read: each became an event or a quarantine record."""
        return self.events + self.quarantined


class Summary:
    """Counts per source and per reason; sources in the order they were first seen."""

    def __init__(self) -> None:
        self.sources: dict[str, SourceCounts] = {}
        self.reasons: Counter[str] = Counter()

    def saw(self, source: str) -> None:
        """An input was opened: listed even when it gives no record (a feed with no item,
        a CSV file with only a header)."""
        self.sources.setdefault(source, SourceCounts())

    def add(self, item: Event | Quarantined) -> Event | Quarantined:
        """Count ``item``; returns it, so a read can be counted as it streams."""
        counts = self.sources.get(item.source)
        if counts is None:
            counts = self.sources[item.source] = SourceCounts()
        if isinstance(item, Quarantined):
            counts.quarantined += 1
            self.reasons[item.reason] += 1
        else:
            counts.events += 1
        return item

    def merge(self, other: Summary) -> Summary:
        """This summary plus ``other`` (e.g. the summaries of two partitions)."""
        for source, c in other.sources.items():
            mine = self.sources.setdefault(source, SourceCounts())
            mine.events += c.events
            mine.quarantined += c.quarantined
        self.reasons.update(other.reasons)
        return self

    @property
    def events(self) -> int:
        return sum(c.events for c in self.sources.values())

    @property
    def quarantined(self) -> int:
        return sum(c.quarantined for c in self.sources.values())

    @property
    def read(self) -> int:
        return self.events + self.quarantined

    def to_json(self) -> dict[str, Any]:
        """The JSON form (``summary.json``; ``pubsift convert --summary``)."""
        return {
            "read": self.read,
            "events": self.events,
            "quarantined": self.quarantined,
            "sources": {
                s: {"read": c.read, "events": c.events, "quarantined": c.quarantined}
                for s, c in self.sources.items()
            },
            "reasons": dict(sorted(self.reasons.items())),
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Summary:
        """The summary :meth:`to_json` wrote (e.g. one per Spark partition, to merge)."""
        s = cls()
        for source, c in obj.get("sources", {}).items():
            s.sources[source] = SourceCounts(int(c["events"]), int(c["quarantined"]))
        s.reasons.update({k: int(v) for k, v in obj.get("reasons", {}).items()})
        return s
