"""What kind of XML a document is, told by its root element and namespaces
("The format is detected from the extension and, for XML, from the root element and
namespace (``rss``, ``rdf:RDF``, ``atom:feed``, ``nitf``, UBL ``Invoice``/``Order``, FpML
``dataDocument``)").

Feeds are split into one event per item or entry: the outermost item/entry elements
wherever they are in the feed (``channel/item`` as a rule; an RSS ``item`` directly under
``rss`` too). Every other kind is one document, unless the source names a split element
(:mod:`pubsift.adapters.readers.xmlfiles.splitting`). The kinds:

========  ====================================================  ===========================
kind      root                                                  items (Clark notation)
========  ====================================================  ===========================
rss       ``rss`` (RSS 0.91, 0.92, 2.0)                         ``item``
rss1      ``rdf:RDF`` declaring ``http://purl.org/rss/1.0/``    ``{…/rss/1.0/}item``
rss090    ``rdf:RDF`` declaring the RSS 0.90 namespace          ``{…/simple/0.9/}item``
atom      ``{http://www.w3.org/2005/Atom}feed``                 ``{…Atom}entry``
atom03    ``{http://purl.org/atom/ns#}feed`` (Atom 0.3)         ``{…atom/ns#}entry``
nitf      ``nitf`` (any NITF namespace or none)                 whole document
newsml    ``NewsML``, IPTC G2 ``newsMessage``/``newsItem``      whole document
ubl       any root in a UBL ``urn:oasis:…:ubl:schema:xsd:`` ns  whole document
fpml      any root in an FpML namespace (``FpML``, ``dataDocument``)  whole document
rdf       ``rdf:RDF`` of anything else                          whole document
xml       anything else                                         whole document
========  ====================================================  ===========================
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass

from lxml import etree
from pubsift.models.xml import (
    DEFAULT_LIMITS,
    ParseLimits,
    hardened_iterparse,
    hardened_options,
)

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RSS1 = "http://purl.org/rss/1.0/"
RSS090 = "http://my.netscape.com/rdf/simple/0.9/"
ATOM = "http://www.w3.org/2005/Atom"
ATOM03 = "http://purl.org/atom/ns#"
UBL_PREFIX = "urn:oasis:names:specification:ubl:schema:xsd:"
FPML_PREFIX = "http://www.fpml.org/"
IPTC_G2_PREFIX = "http://iptc.org/std/nar/"


@dataclass(frozen=True)
class Kind:
    """A kind of XML document: ``name`` (the table above) and, for a feed, ``items``: the
    Clark tags of the usual path from the root's child to an item (``("channel", "item")``
    for RSS 2.0; its last tag names the items, found anywhere in the feed), empty for a
    document read whole."""

    name: str
    items: tuple[str, ...] = ()

    @property
    def is_feed(self) -> bool:
        return bool(self.items)


RSS = Kind("rss", ("channel", "item"))
RSS_1 = Kind("rss1", (f"{{{RSS1}}}item",))
RSS_090 = Kind("rss090", (f"{{{RSS090}}}item",))
ATOM_1 = Kind("atom", (f"{{{ATOM}}}entry",))
ATOM_03 = Kind("atom03", (f"{{{ATOM03}}}entry",))
NITF = Kind("nitf")
NEWSML = Kind("newsml")
UBL = Kind("ubl")
FPML = Kind("fpml")
RDF_XML = Kind("rdf")
XML = Kind("xml")

#: every kind, by name
KINDS: dict[str, Kind] = {
    k.name: k for k in (RSS, RSS_1, RSS_090, ATOM_1, ATOM_03, NITF, NEWSML, UBL, FPML, RDF_XML, XML)
}


def split_clark(tag: str) -> tuple[str | None, str]:
    """``{uri}local`` -> (uri, local); ``local`` -> (None, local)."""
    if tag.startswith("{"):
        uri, _, local = tag[1:].partition("}")
        return uri, local
    return None, tag


def detect(root_tag: str, nsmap: Mapping[str | None, str] | None = None) -> Kind:
    """The kind of a document from its root element's tag (Clark notation, as lxml gives
    it) and the namespaces declared on the root (``element.nsmap``; needed only to tell
    RSS 1.0 and 0.90 from other RDF/XML)."""
    uri, local = split_clark(root_tag)
    if uri is None and local == "rss":
        return RSS
    if uri == RDF and local == "RDF":
        declared = set((nsmap or {}).values())
        if RSS1 in declared:
            return RSS_1
        if RSS090 in declared:
            return RSS_090
        return RDF_XML
    if local == "feed" and uri == ATOM:
        return ATOM_1
    if local == "feed" and uri == ATOM03:
        return ATOM_03
    if local == "nitf" and (uri is None or "nitf" in uri.lower()):
        return NITF
    if local == "NewsML" or (
        uri is not None and uri.startswith(IPTC_G2_PREFIX) and local in ("newsMessage", "newsItem")
    ):
        return NEWSML
    if uri is not None and uri.startswith(UBL_PREFIX):
        return UBL
    if uri is not None and uri.startswith(FPML_PREFIX):
        return FPML
    return XML


def kind_of(head: bytes, limits: ParseLimits = DEFAULT_LIMITS) -> Kind | None:
    """The kind of the document whose first bytes are ``head`` (e.g. the 4 KiB a reader
    sniffs; enough when they hold the root's start tag), read with the hardened settings;
    None when no root element starts in them."""
    try:
        for _, root in hardened_iterparse(
            io.BytesIO(head), hardened_options(limits), events=("start",)
        ):
            return detect(root.tag, root.nsmap)
    except etree.XMLSyntaxError:
        return None
    return None
