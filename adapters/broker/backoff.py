"""Exponential backoff with jitter, for re-dialling a neighbour or a broker."""

from __future__ import annotations

import random


class Backoff:
    """Delays ``initial``, 2·initial, 4·initial, ... capped at ``maximum``, each scaled by a
    random factor in [0.5, 1] so that peers that lost a link together do not re-dial in
    lockstep. :meth:`reset` after a success."""

    def __init__(self, initial: float, maximum: float, rng: random.Random | None = None) -> None:
        self.initial, self.maximum = initial, maximum
        self._next = initial
        self._rng = rng or random.Random()

    def next(self) -> float:
        """The delay to wait now; the following one doubles (up to the maximum)."""
        delay = self._next * self._rng.uniform(0.5, 1.0)
        self._next = min(self._next * 2, self.maximum)
        return delay

    def reset(self) -> None:
        self._next = self.initial
