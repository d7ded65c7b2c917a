"""Soundness of the hooks against ``matches`` (the FilterModel contract; Mühl 2002, §4.3.2).

``covers`` and ``identical`` may say False when unsure but never True wrongly; ``overlaps``
may say True when unsure but never False wrongly; ``matches`` is total. Every check draws
events from the model's ``matching_event`` builder, so a claimed relation is tested on
events that really lie in N(g), not on random events that match nothing. These checks hold
for every model whatever it claims (a weak answer is always sound), so none is skipped.
"""

from __future__ import annotations

from itertools import permutations
from typing import Any

import pytest
from pubsift.core.conformance.kit import Kit, run

COVERING_PAIR = "covers(f, g) for distinct filters"
SHARED_EVENT = "an event matching two distinct filters"


def matches_total(kit: Kit, data: Any) -> None:
    """matches(f, e) is a bool for every filter and event, and never raises."""
    f = kit.filter(data, "f")
    for e in kit.candidates(data, [kit.filter(data, "g")], "e"):
        kit.matches(f, e)


def covers_sound(kit: Kit, data: Any) -> None:
    """covers(f, g) ⇒ every event of N(g) is in N(f)."""
    pool = kit.pool(data, "filters")
    events = kit.candidates(data, pool, "e")
    for f, g in permutations(pool, 2):
        if kit.model.covers(f, g):
            if f != g:
                kit.hit(COVERING_PAIR)
            for e in events + [kit.matching(data, g, "e in N(g)")]:
                if e is not None and kit.matches(g, e):
                    assert kit.matches(f, e), (
                        f"covers(f, g) is True but {e!r} matches g and not f\n"
                        f"  f = {f!r}\n  g = {g!r}"
                    )


def identical_sound(kit: Kit, data: Any) -> None:
    """identical(f, g) ⇒ N(f) = N(g), checked in both directions."""
    pool = kit.pool(data, "filters")
    events = kit.candidates(data, pool, "e")
    for f, g in permutations(pool, 2):
        if kit.model.identical(f, g):
            for e in events + [kit.matching(data, f, "e in N(f)")]:
                if e is not None:
                    assert kit.matches(f, e) == kit.matches(g, e), (
                        f"identical(f, g) is True but {e!r} matches only one of them\n"
                        f"  f = {f!r}\n  g = {g!r}"
                    )


def overlaps_sound(kit: Kit, data: Any) -> None:
    """An event matching both f and g ⇒ overlaps(f, g)."""
    pool = kit.pool(data, "filters")
    events = kit.candidates(data, pool, "e")
    for f, g in permutations(pool, 2):
        for e in events:
            if kit.matches(f, e) and kit.matches(g, e):
                if f != g:
                    kit.hit(SHARED_EVENT)
                assert kit.model.overlaps(f, g), (
                    f"overlaps(f, g) is False but {e!r} matches both\n  f = {f!r}\n  g = {g!r}"
                )
                break


class SoundnessTests:
    """``matches`` is total; ``covers``, ``identical``, ``overlaps`` are sound."""

    pytestmark = pytest.mark.conformance

    def test_matches_total(self, conformance_kit: Kit, conformance_settings: Any) -> None:
        run(conformance_kit, matches_total, conformance_settings)

    def test_covers_sound(self, conformance_kit: Kit, conformance_settings: Any) -> None:
        run(conformance_kit, covers_sound, conformance_settings)
        conformance_kit.expect_hit(COVERING_PAIR, "covers")

    def test_identical_sound(self, conformance_kit: Kit, conformance_settings: Any) -> None:
        run(conformance_kit, identical_sound, conformance_settings)

    def test_overlaps_sound(self, conformance_kit: Kit, conformance_settings: Any) -> None:
        run(conformance_kit, overlaps_sound, conformance_settings)
        conformance_kit.expect_hit(SHARED_EVENT, "overlaps")
