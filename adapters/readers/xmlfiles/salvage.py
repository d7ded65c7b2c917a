"""Which items of a broken feed are read, and how (docs/adapters.md §2: "a broken item in a feed
loses that item only, when the rest of the feed still parses").

libxml2's recovery mode cannot be trusted with content: after the first error it drops
even the predefined entity references (``AT&amp;T`` becomes ``ATT``; found in
review). So recovery is used **only to delimit**; every event comes from a **strict**
parse:

1. The document is decoded (its byte-order mark, else the encoding libxml2 detected) and
   parsed in recovery mode (still hardened) with a line break put before every ``<``: each
   node's ``sourceline`` then names the line on which its markup starts, which gives its
   exact character offset in the original text (checked against the text: ``<name``,
   ``<!--…-->``, ``<?target``). One-line and UTF-16 feeds are delimited the same way.
2. The **region** of an item runs from its start tag to the start of the next node after
   it (its tail included, as lxml's ``remove`` takes it) or to the end of the document.
3. The document with the regions of the broken items cut out (each replaced by the end
   tags of the ancestors recovery closed inside it) is parsed **strictly**. An error of
   that parse inside an item's region marks that item broken and the cut is tried again;
   items whose region holds an error of the recovered parse are marked from the start.
   An error at the very end (a truncated document) reads the document as closed at its
   last complete markup: an item open there is broken, else the end is reported
   (:attr:`Salvaged.truncated`) and the items before it are read.
4. When the strict parse succeeds, its items must be the unbroken items of the recovered
   tree, one for one, with the same elements and attribute names: they are the events,
   exactly as a strict parse gives them (same text, same entities), with the metadata of
   the strictly parsed rest. Every broken item is quarantined at its position.

The whole document is lost (:class:`Lost`) when an error lies outside every item's region
(the root, the channel or feed metadata), when the markup cannot be located, when recovery
found markup right after a broken item before the next item (it may be that item's own
content misread, e.g. after a missing attribute quote: keeping it as metadata would change
every other event), when the strict items do not match the recovered ones, or after
:data:`MAX_ATTEMPTS` strict parses. What recovery put inside a broken item (the items after
an item whose end tag is missing, an item whose start tag sits in a CDATA section left
open) is lost with it, in its one quarantine record; the items after it keep the positions
the strict reading of the text gives them.
"""

from __future__ import annotations

import codecs
import re
from bisect import bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import cast

from lxml import etree
from pubsift.models.xml import hardened_parser, hardened_pull_parser

#: strict parses of a cut document before giving up (each marks at least one more item)
MAX_ATTEMPTS = 64
_DECLARATION = re.compile(r"<\?xml[ \t\r\n][^>]*\?>")


@dataclass(frozen=True)
class XmlProblem:
    """An error libxml2 reported: 1-based line and column (0: unknown), and its message
    (one line)."""

    line: int
    column: int
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}, column {self.column}" if self.column else f"line {self.line}"
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class Lost:
    """Why a broken document is lost whole: the ``problem``; ``outside`` when it is an
    error outside every item."""

    problem: XmlProblem
    outside: bool


@dataclass
class Salvaged:
    """A broken document's strictly parsed rest: ``root`` (the broken items cut out),
    ``count`` items in the original, ``broken`` (0-based index -> (reason, problem))."""

    root: etree._Element
    count: int
    broken: dict[int, tuple[str, XmlProblem]]
    shown: dict[int, str]  # the start of each broken item's text (an excerpt)
    #: the document ends early outside the items: where, read as closed there
    truncated: XmlProblem | None = None


class _Text:
    """The decoded document, with line starts for offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def offset(self, line: int, column: int) -> int:
        if line < 1:
            return 0
        if line > len(self.starts):
            return len(self.text)
        start = self.starts[line - 1]
        end = self.starts[line] - 1 if line < len(self.starts) else len(self.text)
        return min(start + max(column - 1, 0), end)

    def problem(self, offset: int, message: str) -> XmlProblem:
        """The problem at ``offset`` (line and column of the original text)."""
        line = bisect_right(self.starts, offset)
        return XmlProblem(line, offset - self.starts[line - 1] + 1, message)


def decode(data: bytes, encoding: str | None) -> str | None:
    """The document's text in the encoding libxml2 detected, its XML declaration blanked
    (lxml parses text without one; offsets and lines stay), or None."""
    name = (encoding or "UTF-8").lower()
    try:
        codecs.lookup(name)
    except LookupError:
        return None
    if name.replace("-", "").replace("_", "") in ("utf8", "utf8sig"):
        name = "utf-8-sig"
    try:
        text = data.decode(name)
    except (UnicodeDecodeError, ValueError):
        return None
    if text.startswith("\ufeff"):
        text = text[1:]
    m = _DECLARATION.match(text)
    if m:
        text = re.sub(r"[^\n]", " ", m.group()) + text[m.end() :]
    return text


def _encoding(data: bytes, detected: str | None) -> str | None:
    """The encoding of ``data``: its byte-order mark, else what libxml2 detected."""
    for bom, name in (
        (b"\xef\xbb\xbf", "utf-8-sig"),
        (b"\xff\xfe", "utf-16"),
        (b"\xfe\xff", "utf-16"),
    ):
        if data.startswith(bom):
            return name
    return detected


def _spelling(node: etree._Element) -> re.Pattern | str | None:
    if node.tag is etree.Comment:
        return "<!--" + (node.text or "") + "-->"
    if node.tag is etree.ProcessingInstruction:
        return "<?" + cast(etree._ProcessingInstruction, node).target  # (its tag says so)
    if not isinstance(node.tag, str):
        return None
    local = node.tag.rpartition("}")[2]
    name = f"{node.prefix}:{local}" if node.prefix else local
    return re.compile("<" + re.escape(name) + r"(?=[\s/>])")


class _Locator:
    """Character offsets of the recovered nodes' markup in the original text."""

    def __init__(self, text: str) -> None:
        self.text = text
        copy = text[:1] + text[1:].replace("<", "\n<")
        self.copy = copy
        # text offset of each line of the copy
        self.line_at: list[int] = []
        t = 0
        for line in copy.split("\n"):
            self.line_at.append(t)
            t += len(line)
            if t < len(text) and text[t] == "\n":
                t += 1

    def start(self, node: etree._Element, floor: int) -> int:
        """Offset of the node's markup (at or after ``floor``), or -1."""
        spelled = _spelling(node)
        line = node.sourceline
        if spelled is None or not line or line > len(self.line_at):
            return -1
        for n in range(line, 0, -1):
            at = self.line_at[n - 1]
            if at < floor:
                return -1
            if self.text.startswith("<", at):
                ok = (
                    spelled.match(self.text, at)
                    if isinstance(spelled, re.Pattern)
                    else self.text.startswith(spelled, at)
                )
                if ok:
                    return at
                if isinstance(node.tag, str):
                    return -1  # an element's start tag is the last '<' before its end
        return -1


def salvage(
    data: bytes,
    find: Callable[[etree._Element], list],
    options: Mapping,
    recover: etree.XMLParser,
    classify: Callable[[etree.XMLSyntaxError], tuple[str, XmlProblem]],
) -> Salvaged | Lost:
    """The strictly parsed rest of a broken document whose items ``find`` selects, or why
    it is lost whole (see the module docstring). ``options``: the hardened parser options
    of the strict parses; ``recover``: a hardened parser in recovery mode (used only to
    delimit); ``classify``: the reason and problem of a strict parse's error."""
    delimited = _delimit(data, find, recover)  # 1.
    if isinstance(delimited, Lost):
        return delimited
    regions = _regions(delimited)  # 2.
    if isinstance(regions, Lost):
        return regions
    cutting = _Cutting(delimited, regions)  # 3.
    strict = hardened_parser(huge=bool(options.get("huge_tree")))
    for _ in range(MAX_ATTEMPTS):
        cut, where, pos = cutting.cut()
        try:
            sroot = etree.fromstring(cut, strict)
        except etree.XMLSyntaxError as exc:
            lost = cutting.refused(cut, where, pos, classify(exc), options)
            if lost is not None:
                return lost
            continue
        except ValueError as exc:
            return Lost(XmlProblem(0, 0, str(exc)), False)
        return cutting.matched(sroot, find, pos)  # 4.
    return Lost(XmlProblem(0, 0, f"more than {MAX_ATTEMPTS} broken items"), False)


@dataclass
class _Delimited:
    """Step 1: the decoded text, the tree recovery made of it with a line break before
    every ``<`` (located in the text by ``loc``), its items, and the recovered parse's
    errors (line, column, message)."""

    text: str
    loc: _Locator
    root: etree._Element
    items: list
    log: list[tuple[int, int, str]]


def _delimit(
    data: bytes, find: Callable[[etree._Element], list], recover: etree.XMLParser
) -> _Delimited | Lost:
    """Step 1: decode the document and recover its tree, to delimit its items."""
    try:
        probe = etree.fromstring(data, recover)
    except etree.XMLSyntaxError:
        probe = None
    if probe is None:
        return Lost(XmlProblem(0, 0, "no element could be recovered"), False)
    log = [(e.line, e.column, e.message) for e in recover.error_log.filter_from_errors()]
    text = decode(data, _encoding(data, probe.getroottree().docinfo.encoding))
    if text is None:
        return Lost(XmlProblem(0, 0, "the text cannot be decoded to delimit its items"), False)
    loc = _Locator(text)
    try:
        root = etree.fromstring(loc.copy, recover)
    except (etree.XMLSyntaxError, ValueError):
        root = None
    if root is None:
        return Lost(XmlProblem(0, 0, "no element could be recovered"), False)
    items = find(root)
    if not items:
        return Lost(XmlProblem(0, 0, "no item could be delimited"), False)
    return _Delimited(text, loc, root, items, log)


class _Regions:
    """Step 2: the region of each item in the text, (begin, end, the end tags of the
    ancestors recovery closed inside it), in document order."""

    def __init__(self, regions: list[tuple[int, int, str]], text: str) -> None:
        self.regions = regions
        self.begins = [b for b, _, _ in regions]
        self.size = len(text)

    def owner(self, offset: int) -> int | None:
        """The index of the item whose region holds ``offset``, if one does."""
        i = bisect_right(self.begins, offset) - 1
        if i < 0:
            return None
        _b, e, _ = self.regions[i]
        return i if offset < e or offset == e == self.size else None


def _regions(d: _Delimited) -> _Regions | Lost:
    """Step 2: each item's region, from its start tag to the start of the next node after
    it (its tail included) or to the end of the document."""
    nodes = [n for n in d.root.iter() if n.tag is not etree.Entity]
    nodes += [n for n in d.root.itersiblings() if n.tag is not etree.Entity]
    index = {n: i for i, n in enumerate(nodes)}
    floor = 0
    regions: list[tuple[int, int, str]] = []
    for item in d.items:
        begin = d.loc.start(item, floor)
        if begin < 0:
            return Lost(
                XmlProblem(
                    item.sourceline or 0, 0, "an item's start tag cannot be located in the text"
                ),
                False,
            )
        last = [n for n in item.iter() if n.tag is not etree.Entity][-1]
        k = index[last] + 1
        end, closing = len(d.text), list(item.iterancestors())
        if k < len(nodes):
            nxt = nodes[k]
            end = d.loc.start(nxt, begin + 1)
            if end < 0:
                return Lost(
                    XmlProblem(
                        nxt.sourceline or 0,
                        0,
                        "the markup after an item cannot be located in the text",
                    ),
                    False,
                )
            keep = set(nxt.iterancestors())
            closing = [a for a in closing if a not in keep]
        tags = "".join(f"</{_qname(a)}>" for a in closing)
        regions.append((begin, end, tags))
        floor = begin + 1
    return _Regions(regions, d.text)


class _Cutting:
    """Step 3: the document with the broken items' regions cut out, parsed strictly until
    it parses; an error inside an item's region marks that item broken. Starts with the
    items whose region holds an error of the recovered parse (one at the very end, a
    truncated document, is left to the strict parse)."""

    def __init__(self, d: _Delimited, regions: _Regions) -> None:
        self.d = d
        self.regions = regions
        self.lines = _Text(d.text)
        self.broken: dict[int, tuple[str, XmlProblem]] = {}
        for line, column, message in d.log:
            at = self.lines.offset(line, column) if line > 0 else -1
            i = regions.owner(at) if 0 <= at < len(d.text.rstrip()) else None
            if i is not None and i not in self.broken:
                self.broken[i] = ("xml-syntax", self.lines.problem(at, _one_line(message)))
        # a document that ends early outside the items: read as closed at trunc_at
        self.trunc_at, self.trunc_tags = len(d.text), ""
        self.truncated: XmlProblem | None = None

    def cut(self) -> tuple[str, list[tuple[int, int]], int]:
        """The cut text, its (cut, original) offsets at each cut's two sides, and the
        original offset after the last cut region."""
        text = self.d.text
        pieces, where, pos, size = [], [], 0, 0
        for i, (b, e, tags) in enumerate(self.regions.regions):
            if i in self.broken:
                pieces += [text[pos:b], tags]
                size += b - pos
                where.append((size, b))
                size += len(tags)
                where.append((size, e))
                pos = e
        if pos < self.trunc_at:
            pieces += [text[pos : self.trunc_at], self.trunc_tags]
        else:
            pieces.append(text[pos:])
        return "".join(pieces), where, pos

    def refused(
        self,
        cut: str,
        where: list[tuple[int, int]],
        pos: int,
        found: tuple[str, XmlProblem],
        options: Mapping,
    ) -> Lost | None:
        """What the strict parse's error in ``cut`` means: one more broken item (None:
        try again), a truncated end read as closed, or the whole document lost."""
        text = self.d.text
        reason, problem = found
        at = _to_original(_Text(cut).offset(problem.line, problem.column), where)
        located = self.lines.problem(at, problem.message)
        if at >= len(text.rstrip()) and self.trunc_at == len(text) and pos < len(text):
            # the document ends early: read it as closed at its last complete markup
            p = cut.rfind(">") + 1
            stack = _open_elements(cut[:p], options)
            if stack is None:
                return Lost(located, False)
            tag = self.d.items[0].tag
            if any(el.tag == tag for el in stack):
                last = max(0, bisect_right(self.regions.begins, _to_original(p, where)) - 1)
                self.broken.setdefault(last, (reason, located))
            else:
                self.trunc_at = _to_original(p, where)
                self.truncated = located
                self.trunc_tags = "".join(f"</{_qname(el)}>" for el in reversed(stack))
            return None
        owner = self.regions.owner(at)
        if owner is None or owner in self.broken:
            return Lost(located, True)
        self.broken[owner] = (reason, located)
        return None

    def matched(
        self, sroot: etree._Element, find: Callable[[etree._Element], list], pos: int
    ) -> Salvaged | Lost:
        """Step 4: the strictly parsed rest, when its items are the unbroken items of the
        recovered tree, one for one (same elements and attribute names), and no markup
        follows a broken item that may be its own content."""
        items, broken = self.d.items, self.broken
        debris = _debris(items, broken)
        if debris is not None:
            return Lost(debris, False)
        good = find(sroot)
        kept = [it for i, it in enumerate(items) if i not in broken]
        if len(good) != len(kept) or any(_shape(a) != _shape(b) for a, b in zip(good, kept)):
            return Lost(
                XmlProblem(0, 0, "the items read strictly are not those recovery found"), False
            )
        text, regions = self.d.text, self.regions.regions
        shown = {i: text[regions[i][0] : min(regions[i][1], regions[i][0] + 200)] for i in broken}
        truncated = self.truncated if pos < self.trunc_at else None
        return Salvaged(sroot, len(items), broken, shown, truncated)


def _debris(items: list, broken: dict) -> XmlProblem | None:
    """A problem when recovery found markup right after a broken item, before the next
    item or the end of its parent: it may be the broken item's own content misread (a
    start tag whose attribute quote is missing swallows the next item's start), and
    keeping it as metadata would change every other event; else None."""
    others = set(items)
    for i in broken:
        for sib in items[i].itersiblings():
            if sib in others:
                break
            if sib.tag is not etree.Entity:
                return XmlProblem(
                    sib.sourceline or 0,
                    0,
                    f"markup after broken item {i + 1} cannot be told from that item's own content",
                )
    return None


def _open_elements(text: str, options: Mapping) -> list | None:
    """The elements still open at the end of ``text`` (outermost first), read strictly
    with the hardened ``options``; None when the text has an error before its end."""
    pull = hardened_pull_parser(options, events=("start", "end"))
    stack: list = []
    try:
        pull.feed(text)
        for event, el in pull.read_events():
            if event == "start":
                stack.append(el)
            else:
                stack.pop()
    except etree.XMLSyntaxError:
        return None
    return stack


def _to_original(offset: int, where: list[tuple[int, int]]) -> int:
    """An offset in the cut text -> the original text (``where``: (cut, original) pairs
    at each cut's two sides)."""
    best = (0, 0)
    for c, o in where:
        if c <= offset:
            best = (c, o)
    return best[1] + offset - best[0]


def _qname(el: etree._Element) -> str:
    tag: str = el.tag  # type: ignore[assignment]  # a parsed element's tag is text
    local = tag.rpartition("}")[2]
    return f"{el.prefix}:{local}" if el.prefix else local


def _shape(el: etree._Element) -> list:
    return [(e.tag, sorted(e.attrib.keys())) for e in el.iter() if isinstance(e.tag, str)]


def _one_line(message: str) -> str:
    return " ".join(message.split())
