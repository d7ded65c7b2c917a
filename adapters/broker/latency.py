"""The broker's publication-to-notification latency, as a histogram of fixed buckets.

What it measures (docs/monitoring.md): at the broker, from the arrival of a frame (the
moment its bytes were read from the socket and cut out as a frame) until the
notifications it caused are handed to the subscribers' transports, i.e. written to
their sockets when the kernel takes them (a peer whose socket is full waits in the
connection's queue, and that wait is not counted). A frame that holds several
publications counts once per notification, all with the frame's time. The time a
client's frame waits for its publication rate (``limits.max_publish_rate``) is not
counted, nor the network before the broker and after it. One observation costs one
clock read and one scheduled callback per frame that notified anyone, not per
notification.
"""

from __future__ import annotations

import time
from bisect import bisect_left

#: the buckets' upper bounds in seconds (Prometheus ``le``), +Inf implied
BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
)


class LatencyHistogram:
    """Counts of observations per bucket (not cumulative; the last one is +Inf), their
    number and their sum in seconds."""

    __slots__ = ("bounds", "count", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...] = BUCKETS) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.count = 0
        self.sum = 0.0

    def observe(self, seconds: float, n: int = 1) -> None:
        """``n`` observations of ``seconds`` each."""
        self.counts[bisect_left(self.bounds, seconds)] += n
        self.count += n
        self.sum += seconds * n

    def since(self, start: float, n: int) -> None:
        """``n`` observations of the time from ``start`` (:func:`time.monotonic`) to now."""
        self.observe(time.monotonic() - start, n)

    def cumulative(self) -> list[tuple[str, int]]:
        """``(le, observations ≤ le)`` per bucket, ``+Inf`` last (Prometheus' form)."""
        out, total = [], 0
        for le, c in zip((*map(repr, self.bounds), "+Inf"), self.counts, strict=True):
            total += c
            out.append((le, total))
        return out

    def quantile(self, q: float) -> float | None:
        """The upper bound of the bucket holding quantile ``q`` (None: no observation;
        ``inf``: beyond the last bound)."""
        if not self.count:
            return None
        rank, total = q * self.count, 0
        for i, c in enumerate(self.counts):
            total += c
            if total >= rank and c:
                return self.bounds[i] if i < len(self.bounds) else float("inf")
        return float("inf")
