"""Wire forms (the FilterModel contract): ``dump_filter``/``dump_event`` give JSON-safe values that
survive ``json.dumps``/``json.loads`` and load back to an equal (and equally hashed) object;
an event that comes back matches the same filters, and ``load_wire`` of its JSON text
is None or that same event; ``wire_reader(indexes)`` reads texts those indexes match as
they match the full event, as filters come and go. If the model has its own
``format_filter``, ``parse_filter`` reads its output back to the same filter. A filter that
comes back is also ``identical`` to the original when the model claims ``identical``.
A subscriber's view without options (``subscriber_view({})``) delivers JSON-safe records,
the event's wire form when it does not convert, and parses a filter's text form as the
model does; an option the model does not read is refused with a ``PubsiftError``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pubsift.core.conformance.kit import Kit, run
from pubsift.core.errors import PubsiftError
from pubsift.core.model import FilterModel


def _through_json(obj: Any, what: str) -> Any:
    try:
        text = json.dumps(obj, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"{what} is not JSON-serializable ({exc}): {obj!r}") from exc
    return json.loads(text)


def _identical(kit: Kit, f: Any, back: Any, how: str) -> None:
    if "identical" in kit.capabilities:
        assert kit.model.identical(f, back) and kit.model.identical(back, f), (
            f"{how} gives an equal filter that the model does not call identical:\n"
            f"  f    = {f!r}\n  back = {back!r}"
        )


def filter_roundtrip(kit: Kit, data: Any) -> None:
    """load_filter(json(dump_filter(f))) == f, with equal hashes, and identical."""
    f = kit.filter(data, "f")
    wire = kit.model.dump_filter(f)
    loaded = _through_json(wire, f"dump_filter({f!r})")
    for back in (kit.model.load_filter(wire), kit.model.load_filter(loaded)):
        assert back == f, (
            f"filter does not round-trip:\n  f    = {f!r}\n  wire = {wire!r}\n  back = {back!r}"
        )
        assert hash(back) == hash(f), f"round-tripped filter hashes differently: {f!r}"
        _identical(kit, f, back, "load_filter(dump_filter(f))")


def event_roundtrip(kit: Kit, data: Any) -> None:
    """load_event(json(dump_event(e))) == e, and it matches the same filters."""
    f = kit.filter(data, "f")
    for e in kit.candidates(data, [f], "e"):
        wire = kit.model.dump_event(e)
        back = kit.model.load_event(_through_json(wire, f"dump_event({e!r})"))
        assert back == e, (
            f"event does not round-trip:\n  e    = {e!r}\n  wire = {wire!r}\n  back = {back!r}"
        )
        assert kit.matches(f, back) == kit.matches(f, e), (
            f"round-tripped event {back!r} matches {f!r} differently from {e!r}"
        )
        data = json.dumps(wire, allow_nan=False, ensure_ascii=False).encode("utf-8", "replace")
        fast = kit.model.load_wire(data)
        assert fast is None or fast == kit.model.load_event(json.loads(data)), (
            f"load_wire reads the text of an event's wire form differently from "
            f"load_event(json.loads(text)):\n  text = {data!r}\n  load_wire: {fast!r}"
        )


def wire_reader(kit: Kit, data: Any) -> None:
    """``wire_reader(indexes)`` reads texts on which the indexes answer ``match`` as on
    ``load_event(json.loads(text))``, and keeps doing so as filters are added and removed."""
    model = kit.model
    pool = kit.pool(data, "filters", min_size=2, max_size=6)
    more = kit.filter(data, "added later")
    a, b = model.new_index(), model.new_index()
    for i, f in enumerate(pool):
        (a if i % 2 else b).add(f, i)
    read = model.wire_reader([a, b])
    events = kit.candidates(data, [*pool, more], "events")

    def check(step: str) -> None:
        for e in events:
            text = json.dumps(model.dump_event(e), allow_nan=False, ensure_ascii=False)
            raw = text.encode("utf-8", "replace")
            got = read(raw)
            if got is None:
                continue
            want = model.load_event(json.loads(raw))
            for name, index in (("first", a), ("second", b)):
                assert set(index.match(got)) == set(index.match(want)), (
                    f"{step}: the {name} index matches the event wire_reader reads from "
                    f"{raw!r} differently from load_event(json.loads(text))"
                )

    check("as made")
    a.add(more, "more")
    check("after a filter was added")
    b.remove(pool[0], 0)
    check("after a filter was removed")


def format_roundtrip(kit: Kit, data: Any) -> None:
    """parse_filter(format_filter(f)) == f, with equal hashes, and identical."""
    f = kit.filter(data, "f")
    text = kit.model.format_filter(f)
    assert isinstance(text, str), f"format_filter({f!r}) returned {text!r}, not a str"
    back = kit.model.parse_filter(text)
    assert back == f, (
        f"text form does not round-trip:\n  f    = {f!r}\n  text = {text}\n  back = {back!r}"
    )
    assert hash(back) == hash(f), f"filter read back from its text hashes differently: {f!r}"
    _identical(kit, f, back, "parse_filter(format_filter(f))")


def subscriber_view(kit: Kit, data: Any) -> None:
    """The view of a subscriber without options: deliveries and filters as the model's."""
    model = kit.model
    view = model.subscriber_view({})
    f = kit.filter(data, "f")
    if type(model).format_filter is not FilterModel.format_filter:
        text = model.format_filter(f)
        assert view.parse_filters(text) == model.parse_filters(text), (
            f"subscriber_view({{}}).parse_filters({text!r}) differs from parse_filters"
        )
    for e in kit.candidates(data, [f], "e"):
        if not kit.matches(f, e):
            continue
        got = view.delivery(f, e)
        _through_json(got, f"subscriber_view({{}}).delivery({f!r}, {e!r})")
        if not view.converts:
            assert got == model.dump_event(e), (
                f"a view that does not convert delivers {got!r}, not dump_event: "
                f"{model.dump_event(e)!r}"
            )
    unread = "conformance-kit-no-such-option"
    assert unread not in model.subscriber_options
    with pytest.raises(PubsiftError):
        model.subscriber_view({unread: 1})


class WireTests:
    """Wire forms round-trip exactly through JSON; the text form reads back."""

    pytestmark = pytest.mark.conformance

    def test_filter_roundtrip(self, conformance_kit: Kit, conformance_settings: Any) -> None:
        run(conformance_kit, filter_roundtrip, conformance_settings)

    def test_event_roundtrip(self, conformance_kit: Kit, conformance_settings: Any) -> None:
        run(conformance_kit, event_roundtrip, conformance_settings)

    def test_wire_reader(self, conformance_kit: Kit, conformance_settings: Any) -> None:
        run(conformance_kit, wire_reader, conformance_settings)

    def test_format_roundtrip(self, conformance_kit: Kit, conformance_settings: Any) -> None:
        if type(conformance_kit.model).format_filter is FilterModel.format_filter:
            pytest.skip(f"{conformance_kit.model!r} keeps the default format_filter (repr)")
        run(conformance_kit, format_roundtrip, conformance_settings)

    def test_subscriber_view(self, conformance_kit: Kit, conformance_settings: Any) -> None:
        run(conformance_kit, subscriber_view, conformance_settings)
