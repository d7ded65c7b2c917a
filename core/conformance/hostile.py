"""The hostile-input suite (docs/conformance.md): for ANY input, every hook returns an
answer or raises a :class:`~pubsift.core.errors.PubsiftError` subclass — never another
exception, never a hang, never unbounded memory.

Inputs are the mutated and extreme forms of :mod:`pubsift.core.conformance.mutations` (and
any the model adds through the ``hostile_inputs`` fixture). A case goes to its parsing hooks
(``parse_filter`` and ``parse_filters``, ``load_filter``, ``parse_event``, ``load_event``;
the JSON text of an event case to ``load_wire`` too, which must not raise and must read
what ``load_event(json.loads(text))`` reads, or give None);
whatever parses is then put through every other hook against a few valid filters and
events of the model: ``format_filter``, ``dump_*``, ``matches``, ``covers``, ``identical``,
``overlaps``, ``merge`` (perfect and not), and the index (``add``, ``bulk_add``, queries,
``remove``; a failed operation must change nothing, see
:func:`pubsift.core.conformance.index.index_problems`). An accepted input's wire and text
forms must also read back to an equal filter (or event).

Cases run in batches in a forked child with memory and time limits
(:mod:`pubsift.core.conformance.sandbox`), so a stack overflow or a memory blow-up is
reported with its input instead of killing the test run.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from pubsift.core.conformance import mutations
from pubsift.core.conformance.index import index_problems
from pubsift.core.conformance.kit import Kit, run
from pubsift.core.conformance.mutations import Case, describe
from pubsift.core.conformance.sandbox import Limits, report, run_isolated
from pubsift.core.errors import PubsiftError
from pubsift.core.model import Event, Filter, FilterModel

#: the hooks that turn a case of each kind into filters / events
PARSED_BY = {
    "filter": ("parse_filter", "parse_filters"),
    "filter_wire": ("load_filter",),
    "event": ("parse_event",),
    "event_wire": ("load_event",),
}

#: filters of one ``parse_filters`` answer that are put through the other hooks
MAX_FILTERS = 3

_REFUSED = object()


class _Calls:
    """Calls hooks, recording every exception that is not a PubsiftError as a problem."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def __call__(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``, or :data:`_REFUSED` if it raised (a PubsiftError is a refusal)."""
        try:
            return fn(*args)
        except PubsiftError:
            return _REFUSED
        except Exception as exc:
            msg = _message(exc)
            self.problems.append(
                f"{what} raised {type(exc).__name__}: {msg} "
                "(must return an answer or raise a PubsiftError)"
            )
            return _REFUSED

    def bool(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        r = self(what, fn, *args)
        if r is not _REFUSED and not isinstance(r, bool):
            self.problems.append(f"{what} returned {describe(r, 100)}, not a bool")

    def fail(self, message: str) -> None:
        self.problems.append(message)


def _message(exc: BaseException) -> str:
    """The exception's message on one bounded line."""
    try:
        msg = " ".join(str(exc).split())
    except Exception:
        return "<unprintable>"
    return msg if len(msg) <= 300 else msg[:300] + "…"


def _through_json(obj: Any) -> Any:
    return json.loads(json.dumps(obj, allow_nan=False))


def _filter_problems(
    model: FilterModel, f: Filter, pool: list[Filter], events: list[Event], call: _Calls
) -> None:
    """Every hook on an accepted (possibly hostile) filter f."""
    if call("hash(f)", hash, f) is _REFUSED:
        return
    _wire_round_trip(call, "filter", f, model.dump_filter, model.load_filter)
    if type(model).format_filter is not FilterModel.format_filter:
        text = call("format_filter(f)", model.format_filter, f)
        if text is _REFUSED or not isinstance(text, str):
            call.fail(f"format_filter refused or did not return text for {describe(f)}")
        else:
            back = call("parse_filter(format_filter(f))", model.parse_filter, text)
            if back is _REFUSED or not call("back == f", operator.eq, back, f):
                call.fail(
                    f"an accepted filter does not round-trip through its text form: "
                    f"f = {describe(f)}, text = {describe(text)}, back = "
                    f"{'refused' if back is _REFUSED else describe(back)}"
                )
    for e in events:
        call.bool("matches(f, e)", model.matches, f, e)
    for g in pool:
        call.bool("covers(f, g)", model.covers, f, g)
        call.bool("covers(g, f)", model.covers, g, f)
        call.bool("identical(f, g)", model.identical, f, g)
        call.bool("identical(g, f)", model.identical, g, f)
        call.bool("overlaps(f, g)", model.overlaps, f, g)
        call.bool("overlaps(g, f)", model.overlaps, g, f)
        for perfect in (True, False):
            m = call(f"merge([f, g], perfect={perfect})", model.merge, [f, g], perfect)
            if m is not _REFUSED and m is not None:
                call.bool("covers(merge([f, g]), f)", model.covers, m, f)
    found = call("the index checks", index_problems, model, f, pool, events)
    if isinstance(found, list):
        call.problems.extend(found)


def _wire_round_trip(call: _Calls, kind: str, x: Any, dump: Any, load: Any) -> None:
    """An accepted filter or event (``kind``) must go through JSON and load back equal."""
    v = kind[0]
    wire = call(f"dump_{kind}({v})", dump, x)
    if wire is _REFUSED:
        call.fail(f"dump_{kind} refused an accepted {kind}")
        return
    try:
        loaded = _through_json(wire)
    except (TypeError, ValueError, RecursionError) as exc:
        call.fail(f"dump_{kind}({v}) is not JSON ({type(exc).__name__}: {exc})")
        return
    back = call(f"load_{kind}(dump_{kind}({v}))", load, loaded)
    if back is _REFUSED or not call(f"back == {v}", operator.eq, back, x):
        call.fail(
            f"an accepted {kind} does not round-trip through its wire form: "
            f"{v} = {describe(x)}, wire = {describe(wire)}, back = "
            f"{'refused' if back is _REFUSED else describe(back)}"
        )


def _event_problems(model: FilterModel, e: Event, pool: list[Filter], call: _Calls) -> None:
    """Every hook on an accepted (possibly hostile) event e."""
    _wire_round_trip(call, "event", e, model.dump_event, model.load_event)
    for f in pool:
        call.bool("matches(f, e)", model.matches, f, e)
    index = call("new_index()", model.new_index)
    if index is _REFUSED:
        return
    call("index.bulk_add(valid filters)", index.bulk_add, [(f, i) for i, f in enumerate(pool)])
    call("index.match(e)", index.match, e)
    call("index.match_pairs(e)", index.match_pairs, e)


def _load_wire_problems(model: FilterModel, case: Case, call: _Calls) -> None:
    """``load_wire`` of a case's JSON text never raises, and reads what ``load_event``
    reads from ``json.loads`` of it, or gives None."""
    value = case.value
    try:
        if case.kind == "event_wire":
            value = json.dumps(value, ensure_ascii=False)
        data = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
    except (TypeError, ValueError, RecursionError, AttributeError):
        return
    fast = call("load_wire(text)", model.load_wire, data)
    if fast is None or fast is _REFUSED:
        if fast is _REFUSED:
            call.fail("load_wire raised (it answers None for a text it does not read)")
        return
    try:
        want = model.load_event(json.loads(data))
    except (ValueError, RecursionError, PubsiftError) as exc:
        call.fail(f"load_wire read a text that load_event(json.loads(text)) refuses ({exc})")
        return
    if not call("load_wire(text) == load_event(json.loads(text))", operator.eq, fast, want):
        call.fail(f"load_wire reads {describe(data)} as {describe(fast)}, not {describe(want)}")


def case_problems(
    model: FilterModel, case: Case, pool: list[Filter], events: list[Event]
) -> list[str]:
    """The contract on one hostile case (see the module docstring); returns the problems."""
    call = _Calls()
    if case.kind.startswith("event"):
        _load_wire_problems(model, case, call)
    for hook in PARSED_BY[case.kind]:
        got = call(f"{hook}(input)", getattr(model, hook), case.value)
        if got is _REFUSED:
            continue
        if case.kind.startswith("filter"):
            if hook == "parse_filters":
                if not isinstance(got, list):
                    call.fail(f"parse_filters returned {describe(got, 100)}, not a list")
                    continue
                accepted = got[:MAX_FILTERS]
            else:
                accepted = [got]
            for f in accepted:
                _filter_problems(model, f, pool, events, call)
        else:
            _event_problems(model, got, pool, call)
    return call.problems


def hostile_batch(
    cases: Callable[[Kit], st.SearchStrategy[Case]], batch: int, limits: Limits
) -> Callable[[Kit, Any], None]:
    """A check (see :func:`pubsift.core.conformance.kit.run`): ``batch`` cases from
    ``cases(kit)`` run in one sandboxed child against a few valid filters and events."""

    def check(kit: Kit, data: Any) -> None:
        pool = kit.pool(data, "valid filters", min_size=1, max_size=3)[:4]
        events = kit.candidates(data, pool[:2], "valid events")
        drawn = data.draw(
            st.lists(cases(kit), min_size=batch, max_size=batch), label="hostile cases"
        )
        problems = run_isolated(
            drawn,
            lambda c: case_problems(kit.model, c, pool, events),
            lambda c: f"{c.kind} {c.recipe}",
            limits,
        )
        assert not problems, report(problems)

    return check


def fixed_batch(cases: list[Case], limits: Limits) -> Callable[[Kit, Any], None]:
    """A check running every case of ``cases`` once (in one sandboxed child)."""

    def check(kit: Kit, data: Any) -> None:
        pool = kit.pool(data, "valid filters", min_size=1, max_size=3)[:4]
        events = kit.candidates(data, pool[:2], "valid events")
        problems = run_isolated(
            cases,
            lambda c: case_problems(kit.model, c, pool, events),
            lambda c: f"{c.kind} {c.recipe}",
            limits,
        )
        assert not problems, report(problems)

    return check


def filter_texts(kit: Kit) -> st.SearchStrategy[Case]:
    return mutations.filter_texts(kit.model, kit.filters)


def filter_jsons(kit: Kit) -> st.SearchStrategy[Case]:
    return mutations.filter_jsons(kit.model, kit.filters)


def raw_events(kit: Kit) -> st.SearchStrategy[Case]:
    return mutations.event_inputs(kit.model, kit.events)


class HostileInputTests:
    """Every hook answers or raises a PubsiftError on hostile input, in bounded time and
    memory; what it accepts round-trips and does not corrupt an index."""

    pytestmark = pytest.mark.conformance

    def _run(
        self,
        kit: Kit,
        cases: Callable[[Kit], st.SearchStrategy[Case]],
        settings: Any,
        batch: int,
        limits: Limits,
    ) -> None:
        run(kit, hostile_batch(cases, batch, limits), settings)

    def test_hostile_filter_texts(
        self,
        conformance_kit: Kit,
        hostile_settings: Any,
        hostile_batch_size: int,
        hostile_limits: Limits,
    ) -> None:
        self._run(
            conformance_kit, filter_texts, hostile_settings, hostile_batch_size, hostile_limits
        )

    def test_hostile_filter_json(
        self,
        conformance_kit: Kit,
        hostile_settings: Any,
        hostile_batch_size: int,
        hostile_limits: Limits,
    ) -> None:
        self._run(
            conformance_kit, filter_jsons, hostile_settings, hostile_batch_size, hostile_limits
        )

    def test_hostile_events(
        self,
        conformance_kit: Kit,
        hostile_settings: Any,
        hostile_batch_size: int,
        hostile_limits: Limits,
    ) -> None:
        self._run(conformance_kit, raw_events, hostile_settings, hostile_batch_size, hostile_limits)

    def test_model_hostile_inputs(
        self,
        conformance_kit: Kit,
        hostile_inputs: Any,
        hostile_settings: Any,
        hostile_batch_size: int,
        hostile_limits: Limits,
    ) -> None:
        if hostile_inputs is None:
            pytest.skip("the model provides no hostile_inputs of its own")
        if isinstance(hostile_inputs, st.SearchStrategy):
            self._run(
                conformance_kit,
                lambda kit: hostile_inputs,
                hostile_settings,
                hostile_batch_size,
                hostile_limits,
            )
        else:  # a list of cases: each runs once, in one batch
            run(
                conformance_kit,
                fixed_batch(list(hostile_inputs), hostile_limits),
                settings(hostile_settings, max_examples=1),
            )
