"""The XML filter model: XML documents, XPath tree-pattern filters, the factorization tree
with XSEARCH (Chand & Felber, DEBS 2004; Mühl §4.4)."""

from pubsift.models.xml.model import XmlModel
from pubsift.models.xml.parsing import LimitsError, ParseLimits, XmlEvent, parse_document
from pubsift.models.xml.patterns import XPathFilter
from pubsift.models.xml.xpath import parse_xpath

__all__ = [
    "LimitsError",
    "ParseLimits",
    "XPathFilter",
    "XmlEvent",
    "XmlModel",
    "parse_document",
    "parse_xpath",
]
