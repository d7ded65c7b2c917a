"""What every conformance check works with: the model under test, its strategies, and the
helpers that draw filters and events inside a hypothesis ``st.data()`` test (docs/conformance.md).

Checks are plain functions ``check(kit, data)``; :func:`run` runs one under hypothesis.
The base test classes call them, and so can anyone who wants to run a single check (for
example against a deliberately broken model, to see the kit catch it).

A check passes vacuously if the relation it tests never holds on the generated filters.
Checks therefore count *hits* (``kit.hit``: a covering pair of distinct filters, a merger,
an event in two filters), shown by ``pytest --hypothesis-show-statistics``, and the base
classes fail a run of a claimed capability that had none, asking for better strategies.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import settings as Settings
from hypothesis import strategies as st
from pubsift.core.model import Event, Filter, FilterModel

MatchingEvent = Callable[[Filter], "st.SearchStrategy[Event] | None"]


@dataclass(frozen=True)
class Kit:
    """The fixtures of a model bundled for the checks."""

    model: FilterModel
    filters: st.SearchStrategy
    events: st.SearchStrategy
    matching_event: MatchingEvent
    capabilities: frozenset[str]
    hits: Counter[str] = field(default_factory=Counter, compare=False)

    def hit(self, what: str) -> None:
        """Count that the situation ``what`` a check looks for occurred."""
        self.hits[what] += 1
        event(what)

    def expect_hit(self, what: str, capability: str) -> None:
        """Fail unless ``what`` occurred at least once, when ``capability`` is claimed."""
        if capability in self.capabilities and not self.hits[what]:
            pytest.fail(
                f"vacuous check: {what} never occurred, so nothing was tested; make "
                "filter_strategy produce related filters (shared attributes, small "
                "constants) or raise max_examples",
                pytrace=False,
            )

    def require(self, *names: str) -> None:
        """Skip the calling test unless the model claims every capability in ``names``."""
        missing = [n for n in names if n not in self.capabilities]
        if missing:
            pytest.skip(
                f"{self.model!r} does not claim {', '.join(missing)} "
                f"(capabilities: {', '.join(sorted(self.capabilities)) or 'none'})"
            )

    def filter(self, data: Any, label: str) -> Filter:
        f: Filter = data.draw(self.filters, label=label)
        return f

    def pool(self, data: Any, label: str, min_size: int = 2, max_size: int = 5) -> list[Filter]:
        """A few filters; checks test every pair (triple) of a pool, which makes relations
        that random pairs rarely satisfy (covering, merging) hit far more often. If the
        model merges, the pool also holds the running mergers ``m1 = merge(f0, f1)``,
        ``m2 = merge(m1, f2)``, ...: a chain of filters that should cover each other."""
        pool: list[Filter] = data.draw(
            st.lists(self.filters, min_size=min_size, max_size=max_size), label=label
        )
        if "imperfect_merge" in self.capabilities:
            perfect = False
        elif "merge" in self.capabilities:
            perfect = True
        else:
            return pool
        chain, acc = [], pool[0]
        for f in pool[1:]:
            merged = self.model.merge([acc, f], perfect=perfect)
            if merged is None:
                break
            chain.append(merged)
            acc = merged
        return pool + chain

    def event(self, data: Any, label: str) -> Event:
        return data.draw(self.events, label=label)

    def matches(self, f: Filter, e: Event) -> bool:
        """``model.matches(f, e)``, which must return a bool and never raise."""
        try:
            r = self.model.matches(f, e)
        except Exception as exc:
            raise AssertionError(f"matches({f!r}, {e!r}) raised {exc!r}; it must be total") from exc
        assert isinstance(r, bool), f"matches({f!r}, {e!r}) returned {r!r}, not a bool"
        return r

    def matching(self, data: Any, f: Filter, label: str) -> Event | None:
        """An event of N(f) from the model's ``matching_event`` builder, verified with
        ``matches``; None when the builder cannot build one for f."""
        strategy = self.matching_event(f)
        if strategy is None:
            return None
        e = data.draw(strategy, label=label)
        assert self.matches(f, e), (
            f"matching_event({f!r}) built {e!r}, which the model says does not match it: "
            "the builder (or matches) is wrong"
        )
        return e

    def candidates(self, data: Any, fs: Sequence[Filter], label: str) -> list[Event]:
        """Events likely to discriminate among ``fs``: one built to match each filter plus
        one from the event strategy."""
        out = [
            e
            for i, f in enumerate(fs)
            if (e := self.matching(data, f, f"{label}[{i}]")) is not None
        ]
        out.append(self.event(data, f"{label}[any]"))
        return out


def run(kit: Kit, check: Callable[[Kit, Any], None], settings: Settings) -> None:
    """Run ``check(kit, data)`` under hypothesis with ``settings``; a failing example raises
    (after shrinking) the check's AssertionError or the hook's exception."""

    @settings
    @given(st.data())
    def conformance_check(data: Any) -> None:
        check(kit, data)

    conformance_check()
