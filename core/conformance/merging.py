"""Merging (Mühl 2002, §4.3.7 and Table 4.8; the FilterModel contract): a merger covers every input;
a perfect merger matches exactly the union of its inputs.

Inputs are the pairs (and the whole) of a pool of generated filters, so mergeable inputs
turn up often. Both directions are tested on events: events built to match each input must
match the merger, and (perfect) events built to match the merger must match some input.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any

import pytest
from pubsift.core.conformance.kit import Kit, run

PERFECT = "a perfect merger of distinct filters"
IMPERFECT = "an imperfect merger of distinct filters"


def _inputs(kit: Kit, data: Any) -> list[list[Any]]:
    pool = kit.pool(data, "filters", min_size=2, max_size=4)
    return [list(p) for p in combinations(pool, 2)] + [pool]


def _covers_inputs(kit: Kit, data: Any, m: Any, fs: list[Any], how: str) -> None:
    for i, f in enumerate(fs):
        e = kit.matching(data, f, f"e in N(fs[{i}])")
        if e is not None:
            assert kit.matches(m, e), (
                f"{how} merger does not cover input {i}: {e!r} matches it, not the merger\n"
                f"  inputs = {fs!r}\n  merger = {m!r}"
            )


def perfect_merge(kit: Kit, data: Any) -> None:
    """merge(fs, perfect=True) = m ⇒ N(m) = ∪ N(fs)."""
    for fs in _inputs(kit, data):
        m = kit.model.merge(fs, perfect=True)
        if m is None:
            continue
        if len(set(fs)) > 1:
            kit.hit(PERFECT)
        hash(m)
        _covers_inputs(kit, data, m, fs, "perfect")
        for e in [kit.matching(data, m, "e in N(merger)"), kit.event(data, "e")]:
            if e is None:
                continue
            in_union = any(kit.matches(f, e) for f in fs)
            assert kit.matches(m, e) == in_union, (
                f"perfect merger is not the union: {e!r} matches the merger: "
                f"{kit.matches(m, e)}, some input: {in_union}\n  inputs = {fs!r}\n"
                f"  merger = {m!r}"
            )


def imperfect_merge(kit: Kit, data: Any) -> None:
    """merge(fs, perfect=False) = m ⇒ N(m) ⊇ ∪ N(fs)."""
    for fs in _inputs(kit, data):
        m = kit.model.merge(fs, perfect=False)
        if m is None:
            continue
        if len(set(fs)) > 1:
            kit.hit(IMPERFECT)
        hash(m)
        _covers_inputs(kit, data, m, fs, "imperfect")
        e = kit.event(data, "e")
        if any(kit.matches(f, e) for f in fs):
            assert kit.matches(m, e), (
                f"imperfect merger does not cover the inputs: {e!r} matches an input, not the "
                f"merger\n  inputs = {fs!r}\n  merger = {m!r}"
            )


class MergeTests:
    """Perfect mergers are exactly the union; imperfect mergers cover it."""

    pytestmark = pytest.mark.conformance

    def test_perfect_merge(self, conformance_kit: Kit, conformance_settings: Any) -> None:
        conformance_kit.require("merge")
        run(conformance_kit, perfect_merge, conformance_settings)
        conformance_kit.expect_hit(PERFECT, "merge")

    def test_imperfect_merge(self, conformance_kit: Kit, conformance_settings: Any) -> None:
        conformance_kit.require("imperfect_merge")
        run(conformance_kit, imperfect_merge, conformance_settings)
        conformance_kit.expect_hit(IMPERFECT, "imperfect_merge")
