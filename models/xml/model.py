"""The XML filter model: XML documents as events, XPath tree patterns as
filters (Chand & Felber 2004; Mühl 2002, §4.4).

Filters are written as XPath (the subset of :mod:`.xpath`), as text (optionally preceded by
``xmlns:prefix="uri"`` declarations) or as
``{"xpath": "...", "namespaces": {"prefix": "uri"}}``; events are XML documents (bytes, str,
``{"xml": "..."}`` or an lxml element), parsed by the hardened parser of :mod:`.parsing`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lxml import etree
from pubsift.core.errors import EventError, FilterSyntaxError
from pubsift.core.model import FilterModel
from pubsift.models.xml import covering, merging
from pubsift.models.xml.index import XmlIndex
from pubsift.models.xml.matching import matches
from pubsift.models.xml.overlap import overlaps
from pubsift.models.xml.parsing import (
    DEFAULT_LIMITS,
    LimitsError,
    ParseLimits,
    XmlEvent,
    parse_document,
)
from pubsift.models.xml.patterns import XPathFilter
from pubsift.models.xml.xpath import format_text, parse_text, parse_xpath


class XmlModel(FilterModel[XPathFilter, XmlEvent]):
    name = "xml"
    capabilities = frozenset(
        {"covers", "identical", "overlaps", "merge", "imperfect_merge", "index"}
    )

    def __init__(self, limits: ParseLimits = DEFAULT_LIMITS) -> None:
        if not isinstance(limits, ParseLimits):
            raise LimitsError(f"XmlModel takes ParseLimits, not {type(limits).__name__}")
        self.limits = limits

    # -- parsing -------------------------------------------------------------------------
    def parse_filter(self, spec: str | Mapping[str, Any] | XPathFilter) -> XPathFilter:
        if isinstance(spec, XPathFilter):
            return spec
        if isinstance(spec, Mapping):
            unknown = sorted(repr(k) for k in set(spec) - {"xpath", "namespaces"})
            if unknown or "xpath" not in spec:
                raise FilterSyntaxError(
                    'an XML filter object is {"xpath": ..., "namespaces": {...}}'
                    + (f"; unknown members {', '.join(unknown)}" if unknown else ""),
                    path="xpath" if "xpath" not in spec else unknown[0],
                )
            ns = spec.get("namespaces")
            if ns is None:
                ns = {}
            if not isinstance(ns, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in ns.items()
            ):
                raise FilterSyntaxError("namespaces must map prefixes to URIs", path="namespaces")
            return parse_xpath(spec["xpath"], ns)
        if isinstance(spec, str):
            return parse_text(spec)
        raise FilterSyntaxError(
            f"an XML filter is XPath text or an object, not {type(spec).__name__}"
        )

    def parse_event(
        self,
        raw: bytes | str | Mapping[str, Any] | XmlEvent | etree._Element | etree._ElementTree,
    ) -> XmlEvent:
        if isinstance(raw, XmlEvent):
            return raw
        if isinstance(raw, etree._ElementTree):
            raw = raw.getroot()
            if raw is None:
                raise EventError("an empty ElementTree is not an XML event")
        if isinstance(raw, etree._Element):
            return XmlEvent.of_element(raw, self.limits)
        if isinstance(raw, Mapping):
            if set(raw) != {"xml"} or not isinstance(raw["xml"], str):
                raise EventError('an XML event object is {"xml": "<document/>"}')
            raw = raw["xml"]
        return parse_document(raw, self.limits)

    def format_filter(self, f: XPathFilter) -> str:
        """The XPath, preceded by ``xmlns:p="uri"`` declarations when it uses prefixes."""
        return format_text(self.parse_filter(f))

    # -- semantics -----------------------------------------------------------------------
    # filters and events given in another form (text, JSON, bytes) are parsed first
    def matches(self, f: XPathFilter, e: XmlEvent) -> bool:
        return matches(self.parse_filter(f), self.parse_event(e).document)

    def covers(self, f: XPathFilter, g: XPathFilter) -> bool:
        return covering.covers(self.parse_filter(f), self.parse_filter(g))

    def identical(self, f: XPathFilter, g: XPathFilter) -> bool:
        return covering.identical(self.parse_filter(f), self.parse_filter(g))

    def overlaps(self, f: XPathFilter, g: XPathFilter) -> bool:
        return overlaps(self.parse_filter(f), self.parse_filter(g))

    def merge(self, fs: Sequence[XPathFilter], perfect: bool = True) -> XPathFilter | None:
        if isinstance(fs, (str, bytes, Mapping)) or not isinstance(fs, Iterable):
            raise FilterSyntaxError(f"merge takes a sequence of filters, not {type(fs).__name__}")
        fs = [self.parse_filter(f) for f in fs]
        if not fs:
            return None
        return merging.merge_perfect(fs) if perfect else merging.merge_imperfect(fs)

    # -- wire forms ----------------------------------------------------------------------
    def dump_filter(self, f: XPathFilter) -> dict[str, Any]:
        f = self.parse_filter(f)
        out: dict[str, Any] = {"xpath": f.xpath()}
        ns = f.namespaces()
        if ns:
            out["namespaces"] = ns
        return out

    def load_filter(self, obj: Any) -> XPathFilter:
        return self.parse_filter(obj)

    def dump_event(self, e: XmlEvent) -> dict[str, str]:
        return {"xml": self.parse_event(e).xml}

    def load_event(self, obj: Any) -> XmlEvent:
        return self.parse_event(obj)

    def new_index(self) -> XmlIndex:
        return XmlIndex(self)
