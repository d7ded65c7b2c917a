"""pubsift.models.concepts — the concept-based model (Cilia et al. 2004): semantic objects
over an ontology, contexts with units, currencies, scale factors and date formats,
conversions, vocabulary agreement, and sound covering across contexts."""

from pubsift.models.concepts.context import ClientContext, Context, ContextRegistry
from pubsift.models.concepts.conversion import ConversionManager, RatePeriod, RateTable
from pubsift.models.concepts.filters import Clause, ConceptFilter
from pubsift.models.concepts.model import ConceptsModel
from pubsift.models.concepts.ontology import Ontology
from pubsift.models.concepts.semantic_objects import SemanticObject, equivalent

__all__ = [
    "Clause",
    "ClientContext",
    "ConceptFilter",
    "ConceptsModel",
    "Context",
    "ContextRegistry",
    "ConversionManager",
    "Ontology",
    "RatePeriod",
    "RateTable",
    "SemanticObject",
    "equivalent",
]
