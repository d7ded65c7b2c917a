"""Hardened parsing of XML events (no network, no external entities, no
entity bombs).

lxml parses with network access off, no DTD loading, no entity substitution and libxml2's
own size limits on; on top of that an event is refused, with an
:class:`~pubsift.core.errors.EventError` naming the cause, when it

* declares an external entity (XXE) or any internal entity (entity expansion, e.g.
  "billion laughs"), or references an entity that is not predefined;
* is larger than ``max_bytes`` or nests elements deeper than ``max_depth``
  (limits a caller can raise through :class:`ParseLimits`, ``max_depth`` up to
  :data:`MAX_DEPTH_CEILING`);
* is not well-formed (the message gives the line and column), or is a ``str`` that is not
  Unicode text (a lone surrogate).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from lxml import etree
from pubsift.core.errors import EventError, PubsiftError

#: libxml2 nests at most 256 elements, 2048 with XML_PARSE_HUGE (lxml's ``huge_tree``,
#: which is turned on above 256); no lxml option goes further
MAX_DEPTH_CEILING = 2048


class LimitsError(PubsiftError, ValueError):
    """A :class:`ParseLimits` setting that is not a positive integer or is above what
    libxml2 can honour."""


@dataclass(frozen=True)
class ParseLimits:
    """Refusal thresholds; raise them for trusted, large documents (``max_depth`` at
    most :data:`MAX_DEPTH_CEILING`)."""

    max_bytes: int = 10_000_000
    max_depth: int = 256

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_depth"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise LimitsError(f"ParseLimits.{name} must be a positive integer, not {_show(v)}")
        if self.max_depth > MAX_DEPTH_CEILING:
            raise LimitsError(
                f"ParseLimits.max_depth={_show(self.max_depth)} is above "
                f"{MAX_DEPTH_CEILING}, the deepest nesting libxml2 (lxml) "
                "parses"
            )


def _show(v: object) -> str:
    """A short rendering of a setting for a message (an int of 4,300+ digits has no str)."""
    if isinstance(v, int) and v.bit_length() > 64:
        return f"a {v.bit_length()}-bit integer"
    try:
        text = repr(v)
    except Exception:  # a hostile __repr__: name the type instead
        return type(v).__name__
    return text if len(text) <= 60 else text[:57] + "..."


DEFAULT_LIMITS = ParseLimits()


#: the deepest nesting libxml2 parses without ``huge_tree`` (lxml's XML_PARSE_HUGE)
PLAIN_DEPTH_CEILING = 256


def huge_tree(limits: ParseLimits) -> bool:
    """Whether ``limits`` need libxml2's XML_PARSE_HUGE (lxml ``huge_tree``): only when they
    allow more than libxml2's default depth (256) or size (10 MB of text in one node)."""
    return limits.max_depth > PLAIN_DEPTH_CEILING or limits.max_bytes > 10_000_000


def hardened_options(limits: ParseLimits = DEFAULT_LIMITS) -> dict:
    """The keyword arguments that make lxml parsing hardened, the one definition used by
    every parser of the project (:func:`hardened_parser`, :func:`hardened_iterparse`,
    :func:`hardened_pull_parser`; docs/xml.md "Events and safe parsing"): no network access, no DTD
    loading or validation, no entity substitution, ``huge_tree`` only as far as ``limits``
    allow. What libxml2 parses under these options is then checked by
    :func:`check_entities` and :func:`check_depth`."""
    return {
        "resolve_entities": False,
        "no_network": True,
        "load_dtd": False,
        "dtd_validation": False,
        "huge_tree": huge_tree(limits),
    }


def _options(options: Mapping[str, Any] | None) -> dict:
    """:func:`hardened_options` with only ``huge_tree`` taken from ``options`` (the
    hardened ones of some limits, possibly with ``huge_tree`` raised to delimit a
    document that is too deep): nothing a caller passes turns the hardening off."""
    hardened = hardened_options()
    if options is not None:
        hardened["huge_tree"] = bool(options.get("huge_tree", hardened["huge_tree"]))
    return hardened


def hardened_parser(
    limits: ParseLimits = DEFAULT_LIMITS, *, recover: bool = False, huge: bool | None = None
) -> etree.XMLParser:
    """A new lxml parser with :func:`hardened_options`. ``recover=True`` (libxml2's
    recovery mode, still hardened) is for readers that salvage the well-formed parts of a
    broken document; its ``error_log`` lists what was repaired. ``huge=True`` parses up to
    libxml2's ceiling whatever ``limits`` say (to delimit a document refused as too
    deep)."""
    options = hardened_options(limits)
    if huge is not None:
        options["huge_tree"] = huge
    return etree.XMLParser(recover=recover, **options)


#: bytes read from a stream per feed of :class:`HardenedIterparse`
CHUNK_BYTES = 65536


class HardenedIterparse:
    """``etree.iterparse(source, **kwargs)`` (``events``, ``tag``) under
    :func:`hardened_options`, driven here over a hardened pull parser fed
    :data:`CHUNK_BYTES` at a time: the events parsed before a syntax error are given
    before the error is raised, whichever lxml parses it (lxml 6.2.0's own
    ``iterparse`` drops the events of the chunk that holds the error, 6.1 gives them);
    the streaming readers rely on it to keep the items before a broken one.
    :attr:`root` is the root element once the whole document parsed, None before."""

    __slots__ = ("_parser", "_source", "root")

    def __init__(self, source: Any, options: Mapping[str, Any] | None = None, **kwargs: Any):
        self._source = source
        self._parser = etree.XMLPullParser(**kwargs, **_options(options))
        self.root: etree._Element | None = None

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        parser, read = self._parser, self._source.read
        while data := read(CHUNK_BYTES):
            try:
                parser.feed(data)
            except etree.XMLSyntaxError:
                yield from parser.read_events()  # what parsed before the error
                raise
            yield from parser.read_events()
        # the events close() adds when it raises are libxml2 ending the unfinished
        # elements of a truncated document: not given (as etree.iterparse)
        root = parser.close()
        yield from parser.read_events()
        self.root = root


def hardened_iterparse(
    source: Any, options: Mapping[str, Any] | None = None, **kwargs: Any
) -> HardenedIterparse:
    """A :class:`HardenedIterparse` of ``source`` (a binary stream): ``events`` and
    ``tag`` as ``etree.iterparse`` takes them; ``options``: the hardened options of the
    caller's limits (only their ``huge_tree`` is used). The streaming readers parse with
    it."""
    return HardenedIterparse(source, options, **kwargs)


def hardened_pull_parser(
    options: Mapping[str, Any] | None = None, **kwargs: Any
) -> etree.XMLPullParser:
    """``etree.XMLPullParser(**kwargs)`` (``events``) under :func:`hardened_options`, as
    :func:`hardened_iterparse`."""
    return etree.XMLPullParser(**kwargs, **_options(options))


class XmlEvent:
    """A parsed XML document (or one element of a larger document, see :meth:`of_element`).

    ``root`` is the lxml root element; ``xml`` the canonical serialization (equality, hash
    and wire form use it). The serialization and its digest are made on first use
    (matching reads only :attr:`document`), so the tree must not change once
    the event is made: what builds an event hands its tree over (``xml``, when the caller
    already has the serialization, is taken as it is)."""

    __slots__ = ("_digest", "_doc", "_xml", "root")

    def __init__(self, root: etree._Element, xml: str | None = None) -> None:
        self.root = root
        self._xml = xml
        self._doc = None
        self._digest: bytes | None = None

    @property
    def xml(self) -> str:
        """The serialization of :attr:`root` (without its tail), made once."""
        if self._xml is None:
            self._xml = etree.tostring(self.root, encoding="unicode", with_tail=False)
        return self._xml

    def _key(self) -> bytes:
        if self._digest is None:
            self._digest = hashlib.blake2b(self.xml.encode(), digest_size=16).digest()
        return self._digest

    @classmethod
    def of_element(cls, element: etree._Element, limits: ParseLimits | None = None) -> XmlEvent:
        """An event from an element already parsed elsewhere (e.g. a feed item), checked
        like a document (:func:`parse_document`). A comment, processing instruction or
        entity reference is not an element: EventError."""
        if not isinstance(element.tag, str):
            # a comment's, PI's or entity's tag is its factory (untyped in types-lxml)
            kind = {
                etree.Comment: "comment",
                etree.ProcessingInstruction: "processing instruction",
                etree.Entity: "entity reference",
            }.get(element.tag, "node")  # type: ignore[call-overload]
            raise EventError(f"an lxml {kind} is not an XML event (pass an element)")
        xml = etree.tostring(element, encoding="unicode", with_tail=False)
        return parse_document(xml, limits or DEFAULT_LIMITS)

    @property
    def document(self):
        """The navigation index used by matching (:class:`.document.Document`), built once."""
        if self._doc is None:
            from pubsift.models.xml.document import Document

            self._doc = Document(self.root)
        return self._doc

    def tree(self) -> etree._ElementTree:
        return self.root.getroottree()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, XmlEvent) and self._key() == other._key() and self.xml == other.xml

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        xml = self.xml
        text = xml if len(xml) < 60 else xml[:57] + "..."
        return f"XmlEvent({text!r})"


def event_of_tree(root: etree._Element, xml: str | None = None) -> XmlEvent:
    """The event of a tree that lxml built under :func:`hardened_options` and that passed
    :func:`check_entities` and :func:`check_depth` for the model's limits (a reader that
    parsed a document, or cut an item out of one, itself; docs/xml.md "Events and safe
    parsing"): the :class:`XmlEvent` :func:`parse_document` would return for its
    serialization, without parsing that again. The tree is handed over (it must not change
    afterwards); ``xml``, when the caller already has the serialization, is taken as it
    is."""
    return XmlEvent(root, xml)


def check_entity_declarations(root: etree._Element) -> None:
    """EventError when the document of ``root`` declares an entity: an external one
    (XXE) or any internal one (entity expansion, e.g. "billion laughs")."""
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is None:
        return
    for ent in dtd.iterentities():
        if ent.system_url or (ent.orig is None and ent.content is None):
            raise EventError(
                f"external entity {ent.name!r} refused (XXE: an external "
                f"entity would read {ent.system_url!r})",
                "DOCTYPE",
            )
        raise EventError(
            f"entity declaration {ent.name!r} refused (entity expansion, "
            "e.g. 'billion laughs', is not allowed)",
            "DOCTYPE",
        )


def check_entities(root: etree._Element) -> None:
    """:func:`check_entity_declarations`, and EventError when the tree keeps a reference
    to an entity (lxml leaves refused references as Entity nodes)."""
    check_entity_declarations(root)
    for el in root.iter(etree.Entity):
        raise EventError(
            f"reference to undeclared or refused entity &{el.name};",  # type: ignore[attr-defined]  # an _Entity
            f"line {el.sourceline}",
        )


def _too_deep(limit: int) -> str:
    if limit >= MAX_DEPTH_CEILING:
        return (
            f"document nested too deeply: more than {limit} levels, libxml2's ceiling "
            "(no setting accepts it)"
        )
    return (
        f"document nested too deeply: more than {limit} levels (raise "
        f"ParseLimits.max_depth, at most {MAX_DEPTH_CEILING}, libxml2's ceiling, to "
        "accept it)"
    )


@lru_cache(maxsize=16)
def _first_too_deep(limit: int) -> etree.XPath:
    # the first element at depth limit + 1 (the root is at depth 1), found by libxml2
    return etree.XPath("(" + "/*" * (limit + 1) + ")[1]")


def parser_depth_ceiling(limits: ParseLimits) -> int:
    """The deepest nesting libxml2 itself parses under :func:`hardened_options`."""
    return MAX_DEPTH_CEILING if huge_tree(limits) else PLAIN_DEPTH_CEILING


def check_depth(root: etree._Element, limits: ParseLimits = DEFAULT_LIMITS) -> None:
    """EventError when the tree of ``root`` nests elements deeper than
    ``limits.max_depth`` (found by libxml2's XPath, not a Python walk)."""
    found = _first_too_deep(limits.max_depth)(root.getroottree())
    if found:
        raise EventError(_too_deep(limits.max_depth), f"line {found[0].sourceline}")


def parse_document(raw: bytes | str, limits: ParseLimits = DEFAULT_LIMITS) -> XmlEvent:
    """Parse ``raw`` safely into an :class:`XmlEvent`; EventError names any refusal."""
    if isinstance(raw, str):
        if _DECLARATION.match(raw):
            # an encoding declaration would contradict the UTF-8 we hand to lxml
            raw = _strip_declaration(raw)
        try:
            data = raw.encode("utf-8")
        except UnicodeEncodeError as e:
            raise EventError(
                f"not Unicode text: lone surrogate U+{ord(raw[e.start]):04X}",
                f"character {e.start}",
            ) from None
    elif isinstance(raw, (bytes, bytearray, memoryview)):
        data = bytes(raw)
    else:
        raise EventError(f"an XML event is bytes or str, not {type(raw).__name__}")
    if len(data) > limits.max_bytes:
        raise EventError(
            f"document too large: {len(data)} bytes > {limits.max_bytes} "
            "(raise ParseLimits.max_bytes to accept it)"
        )
    try:
        root = etree.fromstring(data, hardened_parser(limits))
    except etree.LxmlError as e:
        if not isinstance(e, etree.XMLSyntaxError):
            raise EventError(f"XML not accepted by lxml: {e}") from None
        line, col = e.position if e.position else (e.lineno, 0)
        msg = e.msg or str(e)
        if "Excessive depth" in msg:
            raise EventError(_too_deep(limits.max_depth), f"line {line}, column {col}") from None
        if "Detected an entity reference loop" in msg or "amplification" in msg:
            raise EventError(
                f"entity expansion refused: {msg}", f"line {line}, column {col}"
            ) from None
        raise EventError(f"malformed XML: {msg}", f"line {line}, column {col}") from None
    if root is None:
        raise EventError("empty XML document")
    check_entities(root)
    if limits.max_depth < parser_depth_ceiling(limits):
        # deeper trees than the parser's ceiling were refused above ("Excessive depth")
        check_depth(root, limits)
    return XmlEvent(root)


_DECLARATION = re.compile(r"\s*<\?xml[ \t\r\n]")


def _strip_declaration(text: str) -> str:
    s = text.lstrip()
    end = s.find("?>")
    return s[end + 2 :] if end >= 0 else s
