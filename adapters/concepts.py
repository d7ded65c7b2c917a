"""Adapters of the concepts model at the edges (Cilia et al. 2004, §4.2: "At the publisher
side they are responsible for resolving vocabulary issues and for enriching message content.
At the subscriber side they are in charge of transforming/converting message content
according to the subscriber preferences"; docs/concepts.md, "Vocabulary agreement and the
edges").

* The publisher side is the readers': :class:`~pubsift.adapters.readers.publisher.Publisher`
  enriches plain records (JSON objects, CSV rows) into semantic objects with the
  publisher's declared vocabulary and context (a source's ``publisher`` table,
  :func:`~pubsift.adapters.readers.publisher.publisher_for`), and
  :func:`~pubsift.adapters.readers.xmlfiles.ubl.ubl_semantic_objects` maps a parsed UBL 1.0
  business document, one semantic object per line (what
  ``read(Source(path, model="concepts"))`` gives for a UBL file). Both are named here too.
* :class:`ConceptsSubscriber` is the subscriber side: subscriptions in the subscriber's
  vocabulary and context, deliveries converted back
  (:class:`pubsift.models.concepts.VocabularyAgreement`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pubsift.adapters.readers.publisher import PUBLISHER_SETTINGS, Publisher, publisher_for
from pubsift.adapters.readers.xmlfiles.ubl import ubl_semantic_objects
from pubsift.models.concepts import (
    ClientContext,
    ConceptFilter,
    ConceptsModel,
    Delivery,
    SemanticObject,
    VocabularyAgreement,
)


class ConceptsSubscriber:
    """A subscriber's edge: subscriptions in its vocabulary and context; matching objects
    delivered converted back (ready to process)."""

    def __init__(
        self,
        model: ConceptsModel,
        vocabulary: Mapping[str, str] | None = None,
        context: ClientContext | Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.agreement = VocabularyAgreement(model, vocabulary, context)
        self.filters: list[ConceptFilter] = []

    def subscribe(self, spec: Any) -> ConceptFilter:
        f = self.agreement.subscribe(spec)
        self.filters.append(f)
        return f

    def receive(self, e: SemanticObject) -> list[Delivery]:
        """The deliveries of ``e`` for each subscription it matches (once per filter)."""
        return [
            self.agreement.deliver(f, e)
            for f in dict.fromkeys(self.filters)
            if self.model.matches(f, e)
        ]


__all__ = [
    "PUBLISHER_SETTINGS",
    "ConceptsSubscriber",
    "Publisher",
    "publisher_for",
    "ubl_semantic_objects",
]
