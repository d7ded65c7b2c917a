"""What a run warns about that is no error: a model whose subscribers can receive nothing
because no event of that model was read (a source forgotten, a store ingested without
it), and a model whose events no subscriber asked for. Both are runs that did what they
were told and are rarely what was meant; the summary lists them first."""

from __future__ import annotations

from collections.abc import Mapping


def model_warnings(subscribers: Mapping[str, int], events: Mapping[str, int]) -> list[str]:
    """The warnings for ``subscribers`` (model -> how many) against ``events`` (model ->
    how many were read)."""
    out = []
    for model, n in sorted(subscribers.items()):
        if n and not events.get(model):
            out.append(
                f"model {model!r} has {n} subscriber(s) but no events: they receive "
                f"nothing (no source of that model was read)"
            )
    for model, n in sorted(events.items()):
        if n and not subscribers.get(model):
            out.append(
                f"model {model!r} has {n} event(s) but no subscriber: none of them is delivered"
            )
    return out
