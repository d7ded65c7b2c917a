"""The XML filter model: XML documents, XPath tree-pattern filters, the factorization tree
with XSEARCH (Chand & Felber, DEBS 2004; Mühl §4.4).

Public API: :class:`XmlModel`, :class:`XPathFilter` and :func:`parse_xpath` (filters),
:class:`XmlEvent` and :func:`parse_document` (events), and the edge readers need to parse
documents themselves under the model's hardening (docs/xml.md "Events and safe parsing"):
:class:`ParseLimits` and :data:`DEFAULT_LIMITS`, :func:`hardened_options`,
:func:`hardened_parser`, :func:`hardened_iterparse`, :func:`hardened_pull_parser`, the checks
:func:`check_entities`, :func:`check_entity_declarations`, :func:`check_depth` with
:func:`parser_depth_ceiling` and :data:`MAX_DEPTH_CEILING`, and :func:`event_of_tree` (the
event of a tree parsed and checked so). The other modules of this package are private.
"""

from pubsift.models.xml.model import XmlModel
from pubsift.models.xml.parsing import (
    DEFAULT_LIMITS,
    MAX_DEPTH_CEILING,
    LimitsError,
    ParseLimits,
    XmlEvent,
    check_depth,
    check_entities,
    check_entity_declarations,
    event_of_tree,
    hardened_iterparse,
    hardened_options,
    hardened_parser,
    hardened_pull_parser,
    parse_document,
    parser_depth_ceiling,
)
from pubsift.models.xml.patterns import XPathFilter
from pubsift.models.xml.xpath import parse_xpath

__all__ = [
    "DEFAULT_LIMITS",
    "MAX_DEPTH_CEILING",
    "LimitsError",
    "ParseLimits",
    "XPathFilter",
    "XmlEvent",
    "XmlModel",
    "check_depth",
    "check_entities",
    "check_entity_declarations",
    "event_of_tree",
    "hardened_iterparse",
    "hardened_options",
    "hardened_parser",
    "hardened_pull_parser",
    "parse_document",
    "parse_xpath",
    "parser_depth_ceiling",
]
