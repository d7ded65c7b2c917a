"""Which items of a broken feed are lost (issue 11 §2: "a broken item in a feed loses that
item only, when the rest of the feed still parses").

A document that is not well-formed is parsed again in libxml2's recovery mode (still
hardened); the recovery's error log says where each error is (line and column), and the
recovered tree says on which line each node's start tag ends (lxml ``sourceline``). An error
on line L may lie in the content of the last node starting before L, in any node starting on
L, or in the start tag of the first node after L when that tag begins on an earlier line:
these are the error's **suspects**. The narrowing uses the raw lines: when the start tag of
the first node on L surely begins after the node before L (its ``<name`` is the first thing
on a line in between, before the error's column on L, with no comment or CDATA section in
that stretch that could hide such text), the node before L is cleared; when the first node
after L starts its tag on its own line, it is cleared.

If every suspect of every error lies inside items, exactly those items are lost (each gets
the first error it is suspected of) and every other item is read from the recovered tree,
whose nodes outside the errors' reach are as a strict parse would give them. If any suspect
is outside the items (the root, the channel or feed metadata), or the document is not
line-oriented enough to tell (one line, a non ASCII-compatible encoding), the whole document
is lost. This never turns a recovered, repaired item into an event; it may lose an
intact neighbour of a broken item when both share a line.
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from lxml import etree

#: encodings whose bytes are not ASCII-compatible: raw lines cannot be searched for tags
_WIDE = ("UTF-16", "UTF-32", "UCS-2", "UCS-4", "UTF16", "UTF32")


@dataclass(frozen=True)
class XmlProblem:
    """An error libxml2 reported: 1-based line and column, and its message."""

    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}: {self.message}"


def _tag_text(node: etree._Element) -> bytes:
    """How the start of the node is spelled in the source (``<p:name``, ``<!--``,
    ``<?target``, ``&name;``)."""
    if node.tag is etree.Comment:
        return b"<!--"
    if node.tag is etree.ProcessingInstruction:
        return b"<?" + node.target.encode("utf-8")
    if node.tag is etree.Entity:
        return b"&" + node.name.encode("utf-8") + b";"
    local = node.tag.rpartition("}")[2]     # not QName: recovery keeps invalid names
    name = f"{node.prefix}:{local}" if node.prefix else local
    return b"<" + name.encode("utf-8")


def _starts_on(line: bytes, node: etree._Element) -> int:
    """0-based offset where the node's start tag begins on ``line``, or -1."""
    text = _tag_text(node)
    if isinstance(node.tag, str):
        m = re.search(re.escape(text) + rb"(?=[\s/>]|\Z)", line)
        return m.start() if m else -1
    return line.find(text)


def _tag_begins(raw: list[bytes], node: etree._Element, after: int, line: int,
                column: int) -> bool:
    """Whether the start tag of ``node`` (ending on ``line``) surely begins after line
    ``after`` and before ``column`` of ``line`` (1-based): its ``<name`` is the first thing
    on a line in between, and no comment or CDATA section starts in that stretch (it could
    hide a ``<name``)."""
    for n in range(line, after, -1):
        text = raw[n - 1]
        at = _starts_on(text, node)
        if at >= 0:
            if text[:at].strip() or n == line and column <= at + 1:
                return False
            stretch = b"\n".join(raw[after:n])
            return b"<!--" not in stretch and b"<![CDATA[" not in stretch
    return False


def broken_items(root: etree._Element, items: Sequence[etree._Element], data: bytes,
                 problems: Sequence[XmlProblem], broken_nodes: Sequence = ()
                 ) -> dict[int, XmlProblem] | None:
    """The 0-based indices of the ``items`` suspected of an error, each with the first such
    error; None when an error may lie outside every item (the whole document is lost).
    ``broken_nodes`` are nodes known to be wrong themselves (an entity reference recovery
    kept): their item is lost, or the document when they are outside the items."""
    encoding = (root.getroottree().docinfo.encoding or "UTF-8").upper()
    if encoding.startswith(_WIDE):
        return None
    nodes = [n for n in root.iter() if n.sourceline]
    lines = [n.sourceline for n in nodes]
    if any(b < a for a, b in zip(lines, lines[1:])):
        return None
    owner: dict[etree._Element, int] = {}
    for k, item in enumerate(items):
        for n in item.iter():
            owner[n] = k
    raw = data.split(b"\n")
    out: dict[int, XmlProblem] = {}
    for node in broken_nodes:
        k = owner.get(node)
        if k is None:
            return None
        out.setdefault(k, XmlProblem(node.sourceline or 0, 0,
                                     f"undeclared entity &{node.name};"))
    for problem in problems:
        L = problem.line
        if L < 1 or L > len(raw):
            return None
        lo, hi = bisect_left(lines, L), bisect_right(lines, L)
        suspects = list(nodes[lo:hi])
        if lo > 0 and not (lo < hi and _tag_begins(raw, nodes[lo], lines[lo - 1], L,
                                                   problem.column)):
            suspects.append(nodes[lo - 1])
        if hi < len(nodes) and _starts_on(raw[nodes[hi].sourceline - 1], nodes[hi]) < 0:
            suspects.append(nodes[hi])
        if not suspects:
            return None
        for n in suspects:
            k = owner.get(n)
            if k is None:
                return None
            out.setdefault(k, problem)
    return out
