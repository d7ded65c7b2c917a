"""The algebra of the relations (Mühl 2002, §4.3.2 and Cor. 4.1-4.3; docs/conformance.md):
covering is reflexive and transitive, identity is mutual covering, overlap is symmetric,
and a filter covering a non-empty filter overlaps it.

These are checked with the model's own answers, on pools of generated filters (every pair
and triple), and only for what the model claims: a model that does not claim ``covers`` may
answer False everywhere, which is sound but not reflexive.
"""

from __future__ import annotations

from itertools import permutations, product
from typing import Any

import pytest
from pubsift.core.conformance.kit import Kit, run

CHAIN = "covers(f, g) and covers(g, h) for distinct f, g, h"


def covers_reflexive(kit: Kit, data: Any) -> None:
    """covers(f, f) for every f."""
    f = kit.filter(data, "f")
    assert kit.model.covers(f, f), f"covers(f, f) is False for f = {f!r}"


def identical_reflexive(kit: Kit, data: Any) -> None:
    """identical(f, f) for every f."""
    f = kit.filter(data, "f")
    assert kit.model.identical(f, f), f"identical(f, f) is False for f = {f!r}"


def covers_transitive(kit: Kit, data: Any) -> None:
    """covers(f, g) and covers(g, h) ⇒ covers(f, h), on every triple of a pool."""
    pool = kit.pool(data, "filters", min_size=3, max_size=5)
    cov = {
        (a, b): kit.model.covers(pool[a], pool[b]) for a, b in product(range(len(pool)), repeat=2)
    }
    for a, b, c in product(range(len(pool)), repeat=3):
        if cov[a, b] and cov[b, c]:
            if len({pool[a], pool[b], pool[c]}) == 3:
                kit.hit(CHAIN)
            assert cov[a, c], (
                f"covers(f, g) and covers(g, h) but not covers(f, h)\n  f = {pool[a]!r}\n"
                f"  g = {pool[b]!r}\n  h = {pool[c]!r}"
            )


def identical_is_mutual_covering(kit: Kit, data: Any) -> None:
    """identical(f, g) ⇔ covers(f, g) and covers(g, f); identical is symmetric."""
    pool = kit.pool(data, "filters")
    for f, g in permutations(pool + [pool[0]], 2):
        same = kit.model.identical(f, g)
        mutual = kit.model.covers(f, g) and kit.model.covers(g, f)
        assert same == mutual, (
            f"identical(f, g) is {same} but mutual covering is {mutual}\n  f = {f!r}\n  g = {g!r}"
        )
        assert same == kit.model.identical(g, f), (
            f"identical is not symmetric\n  f = {f!r}\n  g = {g!r}"
        )


def overlaps_symmetric(kit: Kit, data: Any) -> None:
    """overlaps(f, g) = overlaps(g, f)."""
    pool = kit.pool(data, "filters")
    for f, g in permutations(pool, 2):
        assert kit.model.overlaps(f, g) == kit.model.overlaps(g, f), (
            f"overlaps is not symmetric\n  f = {f!r}\n  g = {g!r}"
        )


def covering_implies_overlap(kit: Kit, data: Any) -> None:
    """covers(f, g) with N(g) non-empty (the builder finds an event of g) ⇒ overlaps(f, g)."""
    pool = kit.pool(data, "filters")
    for f, g in permutations(pool, 2):
        if kit.model.covers(f, g) and kit.matching(data, g, "e in N(g)") is not None:
            assert kit.model.overlaps(f, g), (
                f"covers(f, g) but not overlaps(f, g) although N(g) is not empty\n"
                f"  f = {f!r}\n  g = {g!r}"
            )


class AlgebraTests:
    """Reflexivity, transitivity, identity = mutual covering, symmetric overlap."""

    pytestmark = pytest.mark.conformance

    def test_covers_reflexive(self, conformance_kit: Kit, conformance_settings: Any) -> None:
        conformance_kit.require("covers")
        run(conformance_kit, covers_reflexive, conformance_settings)

    def test_identical_reflexive(self, conformance_kit: Kit, conformance_settings: Any) -> None:
        conformance_kit.require("identical")
        run(conformance_kit, identical_reflexive, conformance_settings)

    def test_covers_transitive(self, conformance_kit: Kit, conformance_settings: Any) -> None:
        conformance_kit.require("covers")
        run(conformance_kit, covers_transitive, conformance_settings)
        conformance_kit.expect_hit(CHAIN, "covers")

    def test_identical_is_mutual_covering(
        self, conformance_kit: Kit, conformance_settings: Any
    ) -> None:
        conformance_kit.require("covers", "identical")
        run(conformance_kit, identical_is_mutual_covering, conformance_settings)

    def test_overlaps_symmetric(self, conformance_kit: Kit, conformance_settings: Any) -> None:
        conformance_kit.require("overlaps")
        run(conformance_kit, overlaps_symmetric, conformance_settings)

    def test_covering_implies_overlap(
        self, conformance_kit: Kit, conformance_settings: Any
    ) -> None:
        run(conformance_kit, covering_implies_overlap, conformance_settings)
