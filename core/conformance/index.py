"""The model's index against the linear scan (DESIGN.md §2.1): after any script of adds and
removes, every query of ``model.new_index()`` answers what
:class:`~pubsift.core.index.LinearIndex` over the same hooks answers.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import strategies as st

from pubsift.core.conformance.kit import Kit, run
from pubsift.core.index import LinearIndex
from pubsift.core.model import FilterIndex

KEYS = range(4)


def _compare(kit: Kit, data: Any, index: FilterIndex, ref: LinearIndex, pool: list[Any],
             step: int) -> None:
    def same(what: str, got: Any, want: Any) -> None:
        assert got == want, (f"after step {step}, index.{what} = {got!r} but the linear scan "
                             f"gives {want!r}\n  index holds {sorted(map(repr, ref))}")

    same("__len__()", len(index), len(ref))
    same("__iter__()", Counter(index), Counter(ref))
    same("keys()", index.keys(), ref.keys())
    for k in KEYS:
        same(f"filters({k!r})", Counter(index.filters(k)), Counter(ref.filters(k)))
    probes = pool + [kit.filter(data, f"probe filter {step}")]
    for f in probes:
        for k in KEYS:
            same(f"__contains__(({f!r}, {k!r}))", (f, k) in index, (f, k) in ref)
        for query in ("covering", "covered_by", "identical", "overlapping",
                      "merge_candidates"):
            same(f"{query}({f!r})", getattr(index, query)(f), getattr(ref, query)(f))
    for e in kit.candidates(data, probes, f"probe event {step}"):
        same(f"match({e!r})", index.match(e), ref.match(e))
        same(f"match_pairs({e!r})", Counter(index.match_pairs(e)), Counter(ref.match_pairs(e)))


def index_equals_linear_scan(kit: Kit, data: Any) -> None:
    """A random script of add / remove / bulk_add, compared with LinearIndex at checkpoints
    and at the end; removing an absent pair raises KeyError in both."""
    pool = kit.pool(data, "filters", min_size=1, max_size=6)
    n = len(pool)
    op = st.tuples(st.sampled_from(["add", "add", "remove", "bulk_add", "check"]),
                   st.integers(0, n - 1), st.sampled_from(KEYS))
    script = data.draw(st.lists(op, max_size=24), label="script")
    index, ref = kit.model.new_index(), LinearIndex(kit.model)
    for step, (what, i, k) in enumerate(script):
        pair = (pool[i], k)
        if what == "add":
            index.add(*pair)
            ref.add(*pair)
        elif what == "bulk_add":
            pairs = [(pool[j], k) for j in range(i, n)]
            index.bulk_add(pairs)
            ref.bulk_add(pairs)
        elif what == "remove":
            if pair in ref:
                index.remove(*pair)
                ref.remove(*pair)
            else:
                with pytest.raises(KeyError):
                    index.remove(*pair)
        else:
            _compare(kit, data, index, ref, pool, step)
    _compare(kit, data, index, ref, pool, len(script))


class IndexTests:
    """The model's FilterIndex answers every query as the linear scan does."""

    pytestmark = pytest.mark.conformance

    def test_index_equals_linear_scan(self, conformance_kit: Kit,
                                      conformance_settings: Any) -> None:
        if isinstance(conformance_kit.model.new_index(), LinearIndex):
            pytest.skip(f"{conformance_kit.model!r} uses the default LinearIndex; "
                        "nothing to compare")
        run(conformance_kit, index_equals_linear_scan, conformance_settings)
