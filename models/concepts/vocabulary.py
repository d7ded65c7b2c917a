"""Vocabulary agreement (Cilia et al. 2004, §3.1 and §4.2).

Each client declares its vocabulary (local term -> shared concept) and its context. A
subscription written in the client's vocabulary and context is rewritten into the matching
vocabulary and matching context; the rewrite is remembered ("the vocabulary agreement module
needs to maintain the applied resolution strategies for each subscription"), so matching
objects are delivered converted back into the subscriber's context *and* vocabulary —
ready to process: a plain record of local terms and values, with no further conversion
needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pubsift.core.errors import ConversionError
from pubsift.models.concepts.context import EMPTY, ClientContext, Context
from pubsift.models.concepts.filters import ConceptFilter
from pubsift.models.concepts.ontology import Ontology, UnknownConcept
from pubsift.models.concepts.semantic_objects import SemanticObject, complex_object


@dataclass(frozen=True)
class Vocabulary:
    """A client's local terms: ``{"Kurs": "StockQuote", "close": "FinalPrice"}`` (values are
    shared terms or IRIs of the ontology)."""

    terms: Mapping[str, str] = field(default_factory=dict)

    def resolved(self, ontology: Ontology) -> dict[str, str]:
        """local term -> canonical concept; an unknown shared term is a ConversionError."""
        out = {}
        for local, shared in self.terms.items():
            if not isinstance(local, str):
                raise ConversionError(
                    f"a vocabulary's local terms are strings, not {type(local).__name__}"
                )
            try:
                out[local] = ontology.resolve(shared)
            except UnknownConcept as exc:
                raise ConversionError(f"vocabulary maps {local!r} to {shared!r}: {exc}") from None
        return out

    def local_terms(self, ontology: Ontology) -> dict[str, str]:
        """canonical concept -> the first local term declared for it."""
        out: dict[str, str] = {}
        for local, c in self.resolved(ontology).items():
            out.setdefault(c, local)
        return out


@dataclass(frozen=True)
class Rewrite:
    """A subscription as the client wrote it and as the notification service matches it,
    with what is needed to map matching objects back (the applied resolution)."""

    text: Any
    filter: ConceptFilter
    context: ClientContext
    names: Mapping[str, str]
    """canonical concept -> the client's term for it"""


@dataclass(frozen=True)
class Delivery:
    """A matching object for one subscriber: ``obj`` converted into the subscriber's context,
    ``record`` the same in the subscriber's vocabulary (``{"concept": term, "time": ...,
    "value": {term: value, ...}}``), ``unconverted`` the paths left in the publisher's
    context because no conversion was possible at the event's time."""

    obj: SemanticObject
    record: dict[str, Any]
    unconverted: tuple[tuple[str, ...], ...] = ()


class VocabularyAgreement:
    """Rewrites subscriptions of one client and converts deliveries back for it."""

    def __init__(
        self,
        model: Any,
        vocabulary: Vocabulary | Mapping[str, str] | None = None,
        context: ClientContext | Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.ontology: Ontology = model.ontology
        if vocabulary is not None and not isinstance(vocabulary, (Vocabulary, Mapping)):
            raise ConversionError(
                f"a vocabulary maps local terms to concepts (a JSON "
                f"object), not {type(vocabulary).__name__}"
            )
        self.vocabulary = (
            vocabulary if isinstance(vocabulary, Vocabulary) else Vocabulary(dict(vocabulary or {}))
        )
        self.context = ClientContext.of(context)
        self._terms = self.vocabulary.resolved(self.ontology)
        self._names = self.vocabulary.local_terms(self.ontology)
        self.rewrites: dict[ConceptFilter, Rewrite] = {}

    def subscribe(self, spec: Any) -> ConceptFilter:
        """Rewrite a subscription in the client's vocabulary and context into a filter in
        the matching vocabulary and context; remembered for delivery."""
        f = self.model.parse_filter(spec, client=self.context, terms=self._terms)
        names = dict(self._names)
        if f.concept not in names:
            names[f.concept] = self._used_term(spec, f.concept)
        self.rewrites[f] = Rewrite(spec, f, self.context, names)
        return f

    def _used_term(self, spec: Any, concept: str) -> str:
        if isinstance(spec, Mapping) and isinstance(spec.get("concept"), str):
            return spec["concept"]
        if isinstance(spec, str):
            head = spec.strip().split()[0].strip('"') if spec.strip() else ""
            try:
                if self.ontology.resolve(head) == concept:
                    return head
            except UnknownConcept:
                pass
        return self.ontology.name(concept)

    def deliver(self, f: ConceptFilter, e: SemanticObject) -> Delivery:
        """``e`` (which matched ``f``) converted into the subscriber's context and, through
        the remembered rewrite of ``f``, into the subscriber's vocabulary."""
        rw = self.rewrites.get(f)
        names = rw.names if rw is not None else self._names
        failed: list[tuple[str, ...]] = []
        obj = self._convert(e, e, (), failed)
        subscribed = f.concept if rw is not None else e.concept
        record: dict[str, Any] = {"concept": self._name(subscribed, names)}
        if subscribed != e.concept:
            record["kind_of"] = self._name(e.concept, names)
        if e.time is not None:
            record["time"] = e.time.isoformat()
        record["value"] = self._plain(obj, names)
        return Delivery(obj, record, tuple(failed))

    def _name(self, concept: str, names: Mapping[str, str]) -> str:
        return names.get(concept) or self.ontology.name(concept)

    def _convert(
        self, top: SemanticObject, o: SemanticObject, path: tuple[str, ...], failed: list
    ) -> SemanticObject:
        if o.is_complex:
            members = [self._convert(top, m, path + (m.concept,), failed) for m in o.value]
            return complex_object(o.concept, members, o.context, o.time)
        onto = self.ontology
        kind = onto.kind(o.concept)
        dst = self.context.context_for(onto, o.concept)
        if dst == EMPTY and o.context.date_format is None:
            return o
        try:
            value = self.model.manager.convert(kind, o.value, o.context, dst, top.time)
        except ConversionError:
            failed.append(path)
            return o
        return SemanticObject(o.concept, value, _after(o.context, dst), o.time)

    def _plain(self, o: SemanticObject, names: Mapping[str, str]) -> Any:
        if o.is_complex:
            return {self._name(m.concept, names): self._plain(m, names) for m in o.value}
        return o.value


def _after(src: Context, dst: Context) -> Context:
    """The context of a value converted from ``src`` into ``dst`` (properties ``dst`` leaves
    unset keep their value; the scale is ``dst``'s; dates are ISO unless ``dst`` says)."""
    return Context(
        unit=dst.unit if dst.unit is not None else src.unit,
        currency=dst.currency if dst.currency is not None else src.currency,
        scale=dst.scale,
        date_format=dst.date_format,
        extra=tuple({**dict(src.extra), **dict(dst.extra)}.items()),
    )
