"""Splitting an XML document into one event per item (docs/adapters.md §2).

"The event of an item is the feed document with every other item/entry removed (root,
channel/feed metadata and the item's ancestors kept), so an XPath written against the feed
works unchanged on each event and gives the same answer as on the full feed restricted to
that item." A split element (UBL ``cac:InvoiceLine``, FpML ``trade``) splits any document
the same way.

The construction: every item is taken out of the document together with its tail (the
text after it, as lxml's ``remove`` does), leaving the **skeleton**; each item is then put
back alone, in its original place (after the node that preceded it once the other items
are gone). :meth:`Skeleton.text_with` serializes that and takes the item out again (the
text a model's ``parse_event`` reads); :meth:`Skeleton.tree_with` moves the item into a
copy of the skeleton instead (a tree of its own for the xml model's event, whose
serialization is the same text). Neither copies the document per item: an event costs the
skeleton plus the item. Namespaces stay as declared on the root and the ancestors (lxml
reconciles the item's namespace references with the skeleton's declarations when it is
put back; a redundant redeclaration on the item itself is dropped).

The same :class:`Skeleton` serves an in-memory tree (:meth:`Selector.find` its items,
then :meth:`Skeleton.take` each) and a document streamed twice with ``iterparse``
(:func:`stream_skeleton`, :func:`stream_items`): memory is then the skeleton plus one
item, and the events are the same.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import BinaryIO

from lxml import etree
from pubsift.adapters.readers.registry import ReadError
from pubsift.adapters.readers.source import SourceError
from pubsift.adapters.readers.xmlfiles.feeds import Kind
from pubsift.models.xml import hardened_iterparse

_NAME = r"[A-Za-z_][\w.\-]*"
_SPLIT = re.compile(rf"(?:\{{(?P<uri>[^{{}}]*)\}}|(?P<prefix>{_NAME}):)?(?P<local>{_NAME})\Z")


class UndeclaredPrefix(LookupError):
    """The prefix of a split element is declared neither by the source nor by the
    document's root."""


@dataclass(frozen=True)
class SplitName:
    """A split element as a source names it: ``prefix:local``, ``local`` or Clark
    ``{uri}local`` (``{}local``: explicitly in no namespace)."""

    text: str
    prefix: str | None
    uri: str | None
    local: str

    @classmethod
    def parse(cls, text: str) -> SplitName:
        m = _SPLIT.match(text.strip())
        if m is None:
            raise SourceError(
                f"split element {text!r} is not an element name: give "
                "'local', 'prefix:local' or '{uri}local' (one XPath step, "
                "no axes or predicates)"
            )
        return cls(text, m["prefix"], m["uri"], m["local"])

    def tag(self, namespaces: Mapping[str, str], root_nsmap: Mapping[str | None, str]) -> str:
        """The Clark tag: a prefix is resolved with the source's ``namespaces``, failing
        that with the prefixes declared on the document's root; a name without prefix is
        in the source's default namespace (key ``""``), else the root's default namespace,
        else in no namespace (so ``trade`` splits an FpML document, whose elements are all
        in the FpML namespace)."""
        uri: str | None
        if self.uri is not None:
            uri = self.uri
        elif self.prefix is not None:
            uri = namespaces.get(self.prefix) or root_nsmap.get(self.prefix)
            if uri is None:
                raise UndeclaredPrefix(
                    f"split element {self.text!r}: prefix {self.prefix!r} is declared "
                    "neither in the source's namespaces nor on the document's root"
                )
        else:
            uri = namespaces.get("") or root_nsmap.get(None) or ""
        return f"{{{uri}}}{self.local}" if uri else self.local


@dataclass(frozen=True)
class Selector:
    """Which elements are items: the outermost elements tagged ``tag`` (one nested in
    another is part of it), wherever they are under the root: a feed's items (found in
    review: an RSS ``item`` directly under ``rss`` is an item too) and a
    split element's."""

    tag: str

    @classmethod
    def of_feed(cls, kind: Kind) -> Selector:
        return cls(kind.items[-1])

    def find(self, root: etree._Element) -> list[etree._Element]:
        """The items of a whole tree, in document order."""
        return [el for el in root.iter(self.tag) if self.accepts(el)]

    def accepts(self, el: etree._Element) -> bool:
        return next(el.iterancestors(self.tag), None) is None


class Skeleton:
    """A document with its items taken out: ``root`` and, per item in document order, its
    slot (the parent, and the node that precedes it once every item is out, or None when it
    becomes the parent's first child)."""

    __slots__ = ("_addresses", "_slots", "root")

    def __init__(self, root: etree._Element | None = None) -> None:
        # the splitter sets the root once it has it, before any other method is called
        self.root: etree._Element = root  # type: ignore[assignment]
        self._slots: list[tuple[etree._Element, etree._Element | None]] = []
        self._addresses: dict[tuple, tuple[tuple[int, ...], int]] = {}

    def __len__(self) -> int:
        return len(self._slots)

    def take(self, el: etree._Element) -> None:
        """Take the next item (in document order) out, with its tail."""
        parent = el.getparent()
        assert parent is not None  # an item is never the root
        self._slots.append((parent, el.getprevious()))
        parent.remove(el)

    def text_with(self, index: int, el: etree._Element) -> str:
        """The serialization of the skeleton with item ``index`` (0-based) ``el`` in its
        place; ``el`` is taken out again (out of any document)."""
        parent, prev = self._slots[index]
        if prev is None:
            parent.insert(0, el)
        else:
            prev.addnext(el)
        try:
            return etree.tostring(self.root, encoding="unicode")
        finally:
            parent.remove(el)

    def tree_with(self, index: int, el: etree._Element, last: bool = False) -> etree._Element:
        """A new tree: a copy of the skeleton with item ``index`` ``el`` *moved* into its
        place (``el`` leaves its document). Serialized, it is :meth:`text_with`'s text;
        the cost is a copy of the skeleton, not of the item. ``last``: the skeleton is not
        needed any more and becomes that tree itself when it is the root alone (no copy)."""
        if last and self._bare():
            parent, before = self._slots[index]
            if before is None:
                parent.insert(0, el)
            else:
                before.addnext(el)
            return self.root
        path, prev = self._address(index)
        # lxml's copy of an element is deep (the copy module's deepcopy calls it)
        root = copy.copy(self.root)
        parent = root
        for i in path:
            parent = parent[i]
        if prev < 0:
            parent.insert(0, el)
        else:
            parent[prev].addnext(el)
        return root

    def _bare(self) -> bool:
        """Whether the skeleton's document is its root alone (no DOCTYPE, comment or
        processing instruction beside it), as a copy of the root is."""
        root = self.root
        return (
            root.getprevious() is None
            and root.getnext() is None
            and not root.getroottree().docinfo.doctype
        )

    def _address(self, index: int) -> tuple[tuple[int, ...], int]:
        """The slot as child indices from the root to the parent, and the index of the
        preceding node among the parent's children (-1: none); the skeleton is final once
        events are made, so the address holds for every copy."""
        parent, prev = slot = self._slots[index]
        found = self._addresses.get(slot)
        if found is None:
            path: list[int] = []
            node = parent
            up = node.getparent()
            while up is not None:
                path.append(up.index(node))
                node = up
                up = node.getparent()
            found = (tuple(reversed(path)), -1 if prev is None else parent.index(prev))
            self._addresses[slot] = found
        return found


class _Budget:
    """A binary stream that ends with ReadError ``too-large`` once lxml parsed more than
    ``limit`` bytes beyond those of the items already taken out (``taken``): the skeleton
    of a streamed document (and the item being parsed) stays bounded even when split
    elements are rare or absent."""

    def __init__(self, fh: BinaryIO, limit: int) -> None:
        self.fh = fh
        self.limit = limit
        self.consumed = 0
        self.taken = 0

    def read(self, n: int = -1) -> bytes:
        # lxml has parsed all it read before asking again: count only those bytes
        if self.consumed - self.taken > self.limit:
            raise ReadError(
                "too-large",
                f"more than {self.limit} bytes outside the split "
                "elements taken so far: the document's metadata (or one split "
                "element) is too large for any event",
            )
        data = self.fh.read(n)
        self.consumed += len(data)
        return data


class BrokenStream(Exception):
    """Pass 1 met an XML error (``error``): ``skeleton`` holds the items completed before
    it, taken out, and the document parsed before it; ``in_item`` says whether the error
    is inside an item (an item started and not ended), which is then cut out of the
    skeleton with everything after it."""

    def __init__(
        self, error: etree.XMLSyntaxError, skeleton: Skeleton, in_item: bool, shown: bytes = b""
    ) -> None:
        super().__init__(str(error))
        self.error = error
        self.skeleton = skeleton
        self.in_item = in_item
        self.shown = shown  # the start of the broken item, as parsed


def _broken(exc: etree.XMLSyntaxError, skeleton: Skeleton, pending, root, started) -> BrokenStream:
    if pending is not None:
        skeleton.take(pending)
    skeleton.root = root
    shown = b""
    if started is not None:
        shown = etree.tostring(started, with_tail=False)[:200]
        started.getparent().remove(started)
    return BrokenStream(exc, skeleton, started is not None, shown)


def stream_skeleton(
    fh: BinaryIO,
    selector: Selector,
    options: Mapping,
    check: Callable[[etree._Element], None] | None = None,
    budget: int | None = None,
) -> Skeleton:
    """Pass 1 over a document too large to hold: its skeleton, the items dropped as soon
    as their tail is read (the next item's end, or the end of the document).
    ``check(item)`` runs on each item while it is still in its document; ``budget``
    bounds the bytes read beyond the items (ReadError ``too-large``), measuring each item
    by its serialization. lxml's XMLSyntaxError after the root started is raised as
    :class:`BrokenStream`; whatever ``fh.read`` raises propagates."""
    skeleton = Skeleton()
    pending = None
    guard = None if budget is None else _Budget(fh, budget)
    stream = fh if guard is None else guard
    parse = hardened_iterparse(stream, options, events=("start", "end"), tag=selector.tag)
    started = None  # the outermost item started and not ended
    try:
        for event, el in parse:
            if event == "start":
                if started is None:
                    started = el
                continue
            if el is started:
                started = None
            if pending is not None:
                skeleton.take(pending)
                pending = None
            if selector.accepts(el):
                if check is not None:
                    check(el)
                if guard is not None:
                    guard.taken += len(etree.tostring(el))
                pending = el
    except etree.XMLSyntaxError as exc:
        known = started if started is not None else pending
        root = (
            parse.root
            if parse.root is not None
            else (None if known is None else known.getroottree().getroot())
        )
        if root is None or root is started:
            raise
        raise _broken(exc, skeleton, pending, root, started) from None
    if pending is not None:
        skeleton.take(pending)
    assert parse.root is not None  # a parse that ended without an error has a root
    skeleton.root = parse.root
    return skeleton


def stream_items(
    fh: BinaryIO, selector: Selector, options: Mapping, skeleton: Skeleton
) -> Iterator[tuple[int, etree._Element]]:
    """Pass 2: (0-based index, element) of each item, once its tail is read; the caller
    puts it into the skeleton of pass 1 (:meth:`Skeleton.text_with` or
    :meth:`Skeleton.tree_with`, which take it out of the streamed document) before asking
    for the next. A document that changed between the passes ends with ReadError; lxml's
    XMLSyntaxError propagates once the items completed before it are given."""
    pending = None
    k = 0
    try:
        for _, el in hardened_iterparse(fh, options, events=("end",), tag=selector.tag):
            if pending is not None:
                yield k - 1, pending
                pending = None
            if selector.accepts(el):
                k += 1
                if k > len(skeleton):
                    raise ReadError(
                        "unreadable",
                        "the document changed while it was read: more items than in the first pass",
                    )
                pending = el
    except etree.XMLSyntaxError:
        if pending is not None:
            yield k - 1, pending
        raise
    if pending is not None:
        yield k - 1, pending
    if k != len(skeleton):
        raise ReadError(
            "unreadable",
            f"the document changed while it was read: {k} items, {len(skeleton)} in the first pass",
        )
