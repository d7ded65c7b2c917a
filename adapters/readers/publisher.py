"""The publisher side of the concepts model at the edges (Cilia et al. 2004, §4.2: "At the
publisher side they are responsible for resolving vocabulary issues and for enriching
message content"; docs/concepts.md, "Vocabulary agreement and the edges").

:class:`Publisher` enriches plain records (JSON objects, CSV rows) into semantic objects
with the publisher's declared vocabulary and context. A source with a ``publisher`` table
(:func:`publisher_for`) makes the CSV reader's and the JSON-lines reader's records semantic
objects this way (:func:`pubsift.adapters.readers.converter`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pubsift.adapters.readers.cells import parse_number
from pubsift.adapters.readers.source import Source, SourceError
from pubsift.core.errors import ConversionError, EventError, PubsiftError
from pubsift.core.model import FilterModel
from pubsift.models.concepts import (
    MONEY,
    QUANTITY,
    ClientContext,
    ConceptsModel,
    SemanticObject,
    UnknownConcept,
    Vocabulary,
)


@dataclass
class Publisher:
    """A publisher's declared vocabulary and context, used to enrich its plain records.

    ``concept``: the concept of every record (a shared term or a local one);
    ``time_field``: the field holding the event's time (ISO 8601), if any;
    ``ignore``: fields deliberately left out. Any other field that is neither a local term
    nor a shared term is an error (nothing is dropped silently)."""

    model: ConceptsModel
    concept: str
    vocabulary: Mapping[str, str] = field(default_factory=dict)
    context: ClientContext | Mapping[str, Any] | None = None
    time_field: str | None = None
    ignore: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        self.context = ClientContext.of(self.context)
        if not isinstance(self.vocabulary, Mapping):
            raise ConversionError(
                f"a vocabulary maps local terms to concepts (a JSON "
                f"object), not {type(self.vocabulary).__name__}"
            )
        self._terms = Vocabulary(dict(self.vocabulary)).resolved(self.model.ontology)
        self._concept = self._resolve(self.concept, "concept")

    def _resolve(self, term: str, where: str) -> str:
        if term in self._terms:
            return self._terms[term]
        try:
            return self.model.ontology.resolve(term)
        except UnknownConcept as exc:
            raise EventError(
                f"field {term!r} is not in the publisher's vocabulary nor the ontology ({exc})",
                where,
            ) from None

    def enrich(self, record: Mapping[str, Any], where: str = "record") -> SemanticObject:
        """A plain record -> a semantic object in the publisher's context (EventError says
        which field is wrong)."""
        if not isinstance(record, Mapping):
            raise EventError(f"a record is a JSON object, not {type(record).__name__}", where)
        onto = self.model.ontology
        value: dict[str, Any] = {}
        time = None
        for name, raw in record.items():
            if name in self.ignore:
                continue
            if name == self.time_field:
                time = raw
            c = self._resolve(name, f"{where}.{name}")
            kind = onto.kind(c)
            # a ClientContext since __post_init__
            ctx = self.context.context_for(onto, c).to_json()  # type: ignore[union-attr]
            value[onto.name(c)] = {"value": _typed(raw, kind, f"{where}.{name}"), "context": ctx}
        obj = {"concept": onto.name(self._concept), "value": value}
        if time:
            obj["time"] = time
        return self.model.parse_event(obj)


def _typed(raw: Any, kind: str, where: str) -> Any:
    """Amounts and quantities are numbers: a string (a CSV cell) is read as a number
    literal (:func:`pubsift.adapters.readers.tabular.parse_number`: surrounding spaces, a sign and
    leading zeros allowed; ``nan``, ``inf``, ``1_000``, out-of-range numbers refused); an
    ``int`` stays an ``int``. Values of other concepts are kept as they are."""
    if kind not in (QUANTITY, MONEY):
        return raw
    if isinstance(raw, str):
        try:
            return parse_number(raw)
        except ValueError as exc:
            raise EventError(str(exc), where) from None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise EventError(f"{raw!r} is not a number", where)
    return raw


# -- a source's publisher side -------------------------------------------------------------
PUBLISHER_SETTINGS = ("concept", "vocabulary", "context", "time_field", "ignore")
_PUBLISHERS: dict[tuple[int, str], Publisher] = {}
_PUBLISHERS_KEPT = 64


def publisher_for(model: FilterModel, source: Source) -> Publisher:
    """The Publisher of ``source.publisher`` (a mapping: ``concept``, ``vocabulary``,
    ``context``, ``time_field``, ``ignore``) for ``model``, built once per description and
    model (the inputs of one source share it). SourceError naming the setting when the
    description cannot be used, or when ``model`` is not the concepts model."""
    spec = source.publisher
    where = f"source {source.path}: publisher"
    if spec is None:
        raise SourceError(f"{where}: the source has no publisher side")
    try:
        key: tuple[int, str] | None = (
            id(model),
            json.dumps(dict(spec), sort_keys=True, default=repr),
        )
    except (TypeError, ValueError):
        key = None
    if key is not None:
        found = _PUBLISHERS.get(key)
        if found is not None and found.model is model:
            return found
    pub = _publisher(model, spec, where)
    if key is not None:
        if len(_PUBLISHERS) >= _PUBLISHERS_KEPT:
            _PUBLISHERS.clear()
        _PUBLISHERS[key] = pub
    return pub


def _publisher(model: FilterModel, spec: Mapping[str, Any], where: str) -> Publisher:
    if not isinstance(model, ConceptsModel):
        raise SourceError(
            f"{where}: a publisher side makes semantic objects of the concepts "
            f"model, but the source's model is {model.name!r} (set model = "
            '"concepts")'
        )
    unknown = sorted(map(str, set(spec) - set(PUBLISHER_SETTINGS)))
    if unknown:
        raise SourceError(
            f"{where}: unknown setting(s) {', '.join(unknown)}; the settings "
            f"are {', '.join(PUBLISHER_SETTINGS)}"
        )
    concept = spec.get("concept")
    if not isinstance(concept, str) or not concept:
        raise SourceError(
            f"{where}: concept is the concept of every record (a non-empty string), not {concept!r}"
        )
    vocabulary = spec.get("vocabulary") or {}
    if not isinstance(vocabulary, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in vocabulary.items()
    ):
        raise SourceError(f"{where}: vocabulary maps field names to concepts (strings)")
    time_field = spec.get("time_field")
    if time_field is not None and not isinstance(time_field, str):
        raise SourceError(f"{where}: time_field is a field name, not {time_field!r}")
    ignore = spec.get("ignore") or ()
    if not isinstance(ignore, (list, tuple, set, frozenset)) or not all(
        isinstance(x, str) for x in ignore
    ):
        raise SourceError(f"{where}: ignore is a list of field names, not {ignore!r}")
    try:
        return Publisher(
            model, concept, dict(vocabulary), spec.get("context"), time_field, frozenset(ignore)
        )
    except PubsiftError as exc:
        raise SourceError(f"{where}: {exc}") from None


__all__ = ["PUBLISHER_SETTINGS", "Publisher", "publisher_for"]
