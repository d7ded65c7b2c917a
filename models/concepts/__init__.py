"""pubsift.models.concepts — the concept-based model (Cilia et al. 2004): semantic objects
over an ontology, contexts with units, currencies, scale factors and date formats,
conversions, vocabulary agreement, and sound covering across contexts.

Public API: the model (:class:`ConceptsModel`), its events (:class:`SemanticObject`) and
filters (:class:`ConceptFilter`, :class:`Clause`, :class:`FilterBuilder`, the text form
:func:`parse_text`), contexts and conversions, the ontology (:class:`Ontology`,
:class:`UnknownConcept`, the value kinds :data:`QUANTITY` and :data:`MONEY`), units
(:func:`canonical_unit`, :func:`dimensionality`, the UN/ECE codes :data:`UNECE`, and the
unit tables read from QUDT and OM: :func:`unece_units_from_qudt`, :func:`units_from_om`),
and the edges of Cilia et al. §4.2 (docs/concepts.md "Vocabulary agreement and the
edges"): :class:`Vocabulary`, :class:`VocabularyAgreement`, :class:`Delivery` and
:func:`delivery_record` (a delivery's JSON record). The other modules of this package are
private.
"""

from pubsift.models.concepts.context import ClientContext, Context, ContextRegistry
from pubsift.models.concepts.conversion import ConversionManager, RatePeriod, RateTable
from pubsift.models.concepts.deliveries import delivery_record
from pubsift.models.concepts.filters import Clause, ConceptFilter, FilterBuilder
from pubsift.models.concepts.model import ConceptsModel
from pubsift.models.concepts.ontology import MONEY, QUANTITY, Ontology, UnknownConcept
from pubsift.models.concepts.semantic_objects import SemanticObject, equivalent
from pubsift.models.concepts.syntax import parse_text
from pubsift.models.concepts.units import (
    UNECE,
    canonical_unit,
    dimensionality,
    unece_units_from_qudt,
    units_from_om,
)
from pubsift.models.concepts.vocabulary import Delivery, Vocabulary, VocabularyAgreement

__all__ = [
    "MONEY",
    "QUANTITY",
    "UNECE",
    "Clause",
    "ClientContext",
    "ConceptFilter",
    "ConceptsModel",
    "Context",
    "ContextRegistry",
    "ConversionManager",
    "Delivery",
    "FilterBuilder",
    "Ontology",
    "RatePeriod",
    "RateTable",
    "SemanticObject",
    "UnknownConcept",
    "Vocabulary",
    "VocabularyAgreement",
    "canonical_unit",
    "delivery_record",
    "dimensionality",
    "equivalent",
    "parse_text",
    "unece_units_from_qudt",
    "units_from_om",
]
