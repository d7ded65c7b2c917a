"""Records into events: :func:`converter` gives the function a reader calls on each raw
record (a mapping from CSV or JSON, XML bytes), the model's ``parse_event`` or a publisher
side's enrichment (docs/adapters.md §7: "third-party readers" use it as the built-in ones
do)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pubsift.adapters.readers.outcomes import Event, Quarantined, excerpt
from pubsift.adapters.readers.source import Source
from pubsift.core.errors import PubsiftError, one_line
from pubsift.core.model import FilterModel


def converter(model: FilterModel, source: Source) -> Callable[[Any, str, int], Event | Quarantined]:
    """``convert(raw, name, position)``: a raw record (a mapping from CSV or JSON, XML
    bytes) -> an Event of ``model``, or a Quarantined with reason ``invalid-event`` (what
    ``model.parse_event`` refuses).

    With a publisher side (``source.publisher``; docs/concepts.md, "Vocabulary agreement
    and the edges") the mapping is enriched into a semantic object by
    :meth:`pubsift.adapters.readers.publisher.Publisher.enrich` instead (the model must be the
    concepts model); what the publisher cannot enrich is quarantined with reason
    ``concept-enrichment`` and a message naming the field. The Publisher is built once per
    publisher description and model (:func:`pubsift.adapters.readers.publisher.publisher_for`); a
    description that cannot be used raises SourceError here, before any record is read."""
    name = model.name
    if source.publisher is not None:
        from pubsift.adapters.readers.publisher import publisher_for

        enrich = publisher_for(model, source).enrich

        def enriched(raw: Any, where: str, position: int) -> Event | Quarantined:
            try:
                return Event(name, where, position, enrich(raw))
            except PubsiftError as exc:
                return Quarantined(
                    where, position, "concept-enrichment", one_line(exc), excerpt(raw), name
                )

        return enriched

    parse = model.parse_event

    def convert(raw: Any, where: str, position: int) -> Event | Quarantined:
        try:
            return Event(name, where, position, parse(raw))
        except PubsiftError as exc:  # EventError, and any other refusal of the model
            return Quarantined(where, position, "invalid-event", one_line(exc), excerpt(raw), name)

    return convert
