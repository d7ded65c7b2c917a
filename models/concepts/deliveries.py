"""The JSON record of one delivery to a subscriber (Cilia et al. 2004, §4.2: matching objects
"already converted into the subscriber's vocabulary and context"), as the edges that write
deliveries out use it (the Spark job's delivery files, docs/concepts.md "Vocabulary
agreement and the edges").

:func:`delivery_record` is :attr:`Delivery.record <pubsift.models.concepts.vocabulary.Delivery>`
made JSON-safe: a value that cannot be converted at the event's time (no rate, or a result
beyond a 64-bit float such as 1e307 USD in JPY) is left in the publisher's context and
listed under ``"unconverted"``, so that no value is silently in another currency or unit and
no delivery holds ±inf.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, cast

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
