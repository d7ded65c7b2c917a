"""The model's index against the linear scan (the FilterModel contract): after any script of adds and
removes, every query of ``model.new_index()`` answers what
:class:`~pubsift.core.index.LinearIndex` over the same hooks answers. And an index operation
that raises changes nothing: after an ``add`` or ``bulk_add`` that fails on a
hostile filter, the index answers every query exactly as before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import strategies as st
from pubsift.core.conformance import mutations
from pubsift.core.conformance.kit import Kit, run
from pubsift.core.conformance.sandbox import Limits, report, run_isolated
from pubsift.core.errors import PubsiftError
from pubsift.core.index import LinearIndex
from pubsift.core.model import Event, Filter, FilterIndex, FilterModel

KEYS = range(4)


def _compare(
    kit: Kit, data: Any, index: FilterIndex[Any], ref: LinearIndex[Any], pool: list[Any], step: int
) -> None:
    def same(what: str, got: Any, want: Any) -> None:
        assert got == want, (
            f"after step {step}, index.{what} = {got!r} but the linear scan "
            f"gives {want!r}\n  index holds {sorted(map(repr, ref))}"
        )

    same("__len__()", len(index), len(ref))
    same("__iter__()", Counter(index), Counter(ref))
    same("keys()", index.keys(), ref.keys())
    for k in KEYS:
        same(f"filters({k!r})", Counter(index.filters(k)), Counter(ref.filters(k)))
    probes = pool + [kit.filter(data, f"probe filter {step}")]
    for f in probes:
        for k in KEYS:
            same(f"__contains__(({f!r}, {k!r}))", (f, k) in index, (f, k) in ref)
        for query in ("covering", "covered_by", "identical", "overlapping", "merge_candidates"):
            same(f"{query}({f!r})", getattr(index, query)(f), getattr(ref, query)(f))
    for e in kit.candidates(data, probes, f"probe event {step}"):
        same(f"match({e!r})", index.match(e), ref.match(e))
        same(f"match_pairs({e!r})", Counter(index.match_pairs(e)), Counter(ref.match_pairs(e)))


def index_equals_linear_scan(kit: Kit, data: Any) -> None:
    """A random script of add / remove / bulk_add, compared with LinearIndex at checkpoints
    and at the end; removing an absent pair raises KeyError in both."""
    pool = kit.pool(data, "filters", min_size=1, max_size=6)
    n = len(pool)
    op = st.tuples(
        st.sampled_from(["add", "add", "remove", "bulk_add", "check"]),
        st.integers(0, n - 1),
        st.sampled_from(KEYS),
    )
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


def snapshot(index: FilterIndex[Any], events: list[Event], probes: list[Filter]) -> dict[str, Any]:
    """Everything the index answers about ``events`` and ``probes``: its state as seen from
    outside."""
    state: dict[str, Any] = {
        "__len__()": len(index),
        "__iter__()": Counter(index),
        "keys()": index.keys(),
    }
    for i, e in enumerate(events):
        state[f"match(event {i})"] = index.match(e)
        state[f"match_pairs(event {i})"] = Counter(index.match_pairs(e))
    for j, f in enumerate(probes):
        for query in ("covering", "covered_by", "identical", "overlapping", "merge_candidates"):
            state[f"{query}(probe {j})"] = getattr(index, query)(f)
    return state


def _changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return [
        f"{what}: {mutations.describe(before[what], 150)} before, "
        f"{mutations.describe(after.get(what), 150)} after"
        for what in before
        if after.get(what) != before[what]
    ]


HOSTILE_KEY = "hostile"


def index_problems(
    model: FilterModel, f: Filter, pool: list[Filter], events: list[Event]
) -> list[str]:
    """Add the (possibly hostile) filter ``f`` to an index holding ``pool``, alone and in a
    ``bulk_add`` between valid pairs. Each operation must succeed or raise a PubsiftError;
    one that raises must leave every answer as it was, and a successful add followed by its
    remove must too. Returns the problems found."""
    problems: list[str] = []
    index = model.new_index()
    index.bulk_add([(g, i) for i, g in enumerate(pool)])
    probes = pool[:3]
    attempts: list[tuple[str, Callable[[], None]]] = [
        ("add(f)", lambda: index.add(f, HOSTILE_KEY)),
        (
            "bulk_add([valid, f, valid])",
            lambda: index.bulk_add([(pool[0], "new"), (f, HOSTILE_KEY), (pool[-1], "new 2")]),
        ),
    ]
    for what, attempt in attempts:
        try:
            before = snapshot(index, events, probes)
        except Exception as exc:
            return [f"a query of the index of valid filters raised {type(exc).__name__}"]
        try:
            attempt()
        except PubsiftError:
            try:
                changed = _changes(before, snapshot(index, events, probes))
            except Exception as exc:
                return [
                    f"after index.{what} raised a PubsiftError, a query of the index "
                    f"raised {type(exc).__name__}: {str(exc)[:200]}"
                ]
            if changed:
                problems.append(
                    f"index.{what} raised a PubsiftError but changed the index: "
                    + "; ".join(changed[:4])
                )
                return problems
            continue
        except Exception as exc:
            problems.append(
                f"index.{what} raised {type(exc).__name__}: "
                f"{str(exc)[:200]} (must succeed or raise a PubsiftError)"
            )
            return problems
        try:
            for e in events:
                index.match(e)
            for query in ("covering", "covered_by", "identical", "overlapping", "merge_candidates"):
                getattr(index, query)(f)
            if what == "add(f)":
                index.remove(f, HOSTILE_KEY)
            else:
                for pair in ((pool[0], "new"), (f, HOSTILE_KEY), (pool[-1], "new 2")):
                    index.remove(*pair)
        except PubsiftError:
            continue  # a query may refuse; the hostile suite checks the types
        except Exception as exc:
            problems.append(
                f"after index.{what} succeeded, a query or remove raised "
                f"{type(exc).__name__}: {str(exc)[:200]}"
            )
            return problems
        try:
            changed = _changes(before, snapshot(index, events, probes))
        except Exception as exc:
            return problems + [
                f"after index.{what} and remove, a query of the index raised "
                f"{type(exc).__name__}: {str(exc)[:200]}"
            ]
        if changed:
            problems.append(
                f"index.{what} then remove does not restore the index: " + "; ".join(changed[:4])
            )
    return problems


_LIMITS = Limits()


def failed_add_changes_nothing(
    kit: Kit, data: Any, batch: int = 12, limits: Limits = _LIMITS
) -> None:
    """Hostile filters that parse are added to an index of valid ones (in a forked child,
    see :mod:`~pubsift.core.conformance.sandbox`); see :func:`index_problems`."""
    pool = kit.pool(data, "valid filters", min_size=1, max_size=3)[:4]
    events = kit.candidates(data, pool[:2], "valid events")
    cases = data.draw(
        st.lists(
            st.one_of(
                mutations.filter_texts(kit.model, kit.filters),
                mutations.filter_jsons(kit.model, kit.filters),
            ),
            min_size=batch,
            max_size=batch,
        ),
        label="hostile filters",
    )

    def work(case: mutations.Case) -> list[str]:
        parse = kit.model.load_filter if case.kind == "filter_wire" else kit.model.parse_filter
        try:
            f = parse(case.value)
            hash(f)
        except Exception:  # refusals, and crashes the hostile-input suite reports
            return []
        return index_problems(kit.model, f, pool, events)

    problems = run_isolated(cases, work, lambda c: f"{c.kind} {c.recipe}", limits)
    assert not problems, report(problems)


class IndexTests:
    """The model's FilterIndex answers every query as the linear scan does."""

    pytestmark = pytest.mark.conformance

    def test_index_equals_linear_scan(
        self, conformance_kit: Kit, conformance_settings: Any
    ) -> None:
        if isinstance(conformance_kit.model.new_index(), LinearIndex):
            pytest.skip(
                f"{conformance_kit.model!r} uses the default LinearIndex; nothing to compare"
            )
        run(conformance_kit, index_equals_linear_scan, conformance_settings)

    def test_failed_add_changes_nothing(
        self,
        conformance_kit: Kit,
        hostile_settings: Any,
        hostile_batch_size: int,
        hostile_limits: Any,
    ) -> None:
        run(
            conformance_kit,
            lambda kit, data: failed_add_changes_nothing(
                kit, data, hostile_batch_size, hostile_limits
            ),
            hostile_settings,
        )
