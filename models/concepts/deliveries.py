"""The JSON record of one delivery to a subscriber (Cilia et al. 2004, §4.2: matching objects
"already converted into the subscriber's vocabulary and context"), as the edges that write
deliveries out use it (the Spark job's delivery files, docs/concepts.md "Vocabulary
agreement and the edges").

:func:`delivery_record` is :attr:`Delivery.record <pubsift.models.concepts.vocabulary.Delivery>`
made JSON-safe: a value that cannot be converted at the event's time (no rate, or a result
beyond a 64-bit float such as 1e307 USD in JPY) is left in the publisher's context and
listed under ``"unconverted"``, so that no value is silently in another currency or unit and
no delivery holds ±inf. :class:`ConceptsSubscriberView` is the model's
:meth:`~pubsift.core.model.FilterModel.subscriber_view`: a subscriber's filters rewritten
and its deliveries converted through its :class:`VocabularyAgreement`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, cast

from pubsift.core.errors import PubsiftError
from pubsift.core.model import SubscriberView
from pubsift.models.concepts.filters import ConceptFilter
from pubsift.models.concepts.semantic_objects import SemanticObject, complex_object
from pubsift.models.concepts.vocabulary import VocabularyAgreement


def delivery_record(
    agreement: VocabularyAgreement, f: ConceptFilter, event: SemanticObject
) -> dict[str, Any]:
    """What a delivery of ``event`` (which matched ``f``, a filter ``agreement`` rewrote)
    carries, JSON-safe (``json.dumps(..., allow_nan=False)`` accepts it): ``{"concept",
    "kind_of"?, "time"?, "value"}`` in the subscriber's local terms with values in its
    context, and ``"unconverted": [{"path": [local terms], "context": {...}}]`` for the
    values left in the publisher's context."""
    delivery = agreement.deliver(f, event)
    failed = list(delivery.unconverted)

    def finite(new: SemanticObject, old: SemanticObject, path: tuple[str, ...]) -> SemanticObject:
        if new.is_complex:
            olds = {m.concept: m for m in old.value} if old.is_complex else {}
            members = [finite(m, olds.get(m.concept, m), path + (m.concept,)) for m in new.value]
            return complex_object(new.concept, members, new.context, new.time)
        if isinstance(new.value, float) and not math.isfinite(new.value):
            failed.append(path)
            return old
        return new

    record = dict(delivery.record)
    obj = delivery.obj
    if any(isinstance(o.value, float) and not math.isfinite(o.value) for _, o in obj.walk()):
        obj = finite(obj, event, ())
        record["value"] = _plain(agreement, obj, _names(agreement, f))
    if failed:
        names = _names(agreement, f)
        record["unconverted"] = [
            {
                "path": [_name(agreement, c, names) for c in path],
                # each failed path names a member of the delivered object
                "context": cast(SemanticObject, obj.find(path)).context.to_json(),
            }
            for path in sorted(set(failed))
        ]
    return record


class ConceptsSubscriberView(SubscriberView[ConceptFilter, SemanticObject]):
    """A concepts subscriber's view (Cilia et al. 2004, §4.2): its filter, stated in its
    own vocabulary and context, is rewritten into the matching ones by ``agreement``, and
    each delivery is :func:`delivery_record` of the event."""

    converts = True

    def __init__(self, agreement: VocabularyAgreement) -> None:
        super().__init__(agreement.model)
        self.agreement = agreement

    def parse_filters(self, spec: str | Mapping[str, Any]) -> list[ConceptFilter]:
        return [self.agreement.subscribe(spec)]

    def delivery(self, f: ConceptFilter, e: SemanticObject) -> dict[str, Any]:
        return delivery_record(self.agreement, f, e)


def subscriber_view(
    model: Any, options: Mapping[str, Any]
) -> SubscriberView[ConceptFilter, SemanticObject]:
    """The view of a subscriber whose entry gives ``options`` (``vocabulary``: local
    term -> concept, ``context``: its context, both JSON objects): the model's default
    view when it gives neither, else a :class:`ConceptsSubscriberView`."""
    unknown = [k for k in options if k not in model.subscriber_options]
    if unknown:
        raise PubsiftError(f"the concepts model reads no {', '.join(unknown)}")
    for key in model.subscriber_options:
        value = options.get(key)
        if value is not None and not isinstance(value, Mapping):
            raise PubsiftError(f"{key} is a JSON object, not {_kind(value)}")
    if not options:
        return SubscriberView(model)
    return ConceptsSubscriberView(
        VocabularyAgreement(model, options.get("vocabulary"), options.get("context"))
    )


def _kind(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", int: "a number"}.get(
        type(value), "a number" if isinstance(value, float) else type(value).__name__
    )


def _names(agreement: VocabularyAgreement, f: ConceptFilter) -> Mapping[str, str]:
    rw = agreement.rewrites.get(f)
    return rw.names if rw is not None else agreement.vocabulary.local_terms(agreement.ontology)


def _name(agreement: VocabularyAgreement, concept: str, names: Mapping[str, str]) -> str:
    return names.get(concept) or agreement.ontology.name(concept)


def _plain(agreement: VocabularyAgreement, o: SemanticObject, names: Mapping[str, str]) -> Any:
    """A semantic object as a plain record of local terms (as the agreement's delivery)."""
    if o.is_complex:
        return {_name(agreement, m.concept, names): _plain(agreement, m, names) for m in o.value}
    return o.value
