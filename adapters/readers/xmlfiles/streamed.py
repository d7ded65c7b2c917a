"""A streamed XML document (a file above ``ReadLimits.stream_above``): its root read first,
then read whole in memory when within ``xml.max_bytes``, or split in two passes of
``iterparse`` (the skeleton, then the items: memory bounded by the skeleton and one item),
up to its first error (docs/adapters.md §2; :mod:`.reader`'s docstring)."""

from __future__ import annotations

from collections.abc import Iterator

from lxml import etree
from pubsift.adapters.readers.outcomes import Event, Quarantined, excerpt
from pubsift.adapters.readers.registry import ReadError
from pubsift.adapters.readers.xmlfiles.chunks import read_at_most
from pubsift.adapters.readers.xmlfiles.documents import from_bytes
from pubsift.adapters.readers.xmlfiles.feeds import detect
from pubsift.adapters.readers.xmlfiles.problems import (
    first_error,
    stream_line,
    syntax_problem,
    too_deep_item,
)
from pubsift.adapters.readers.xmlfiles.splitting import (
    BrokenStream,
    Selector,
    stream_items,
    stream_skeleton,
)
from pubsift.adapters.readers.xmlfiles.state import Reading
from pubsift.models.xml import hardened_iterparse, hardened_options


def from_stream(r: Reading) -> Iterator[Event | Quarantined]:
    """The outcomes of a document too large to hold in memory, from its root element:
    read whole (:func:`whole_streamed`) or split in two passes (:func:`split_streamed`)."""
    options = hardened_options(r.limits.xml)
    try:
        with r.inp.open() as fh:
            root = next((el for _, el in hardened_iterparse(fh, options, events=("start",))), None)
            if root is None:
                yield r.whole("xml-syntax", "empty XML document")
                return
            tag, nsmap = root.tag, dict(root.nsmap)
            r.splits = r.split is not None or detect(tag, nsmap).is_feed
            # the first chunk's items may be in the tree: their references are theirs
            bad = r.refused(root, references=False, depth=False)
    except etree.XMLSyntaxError as exc:
        with r.inp.open() as fh:
            head = read_at_most(fh.read, 65536)
        r.learn(head)
        yield stream_problem(r, exc)
        return
    if bad is not None:
        yield bad
        return
    sel = None if r.model.name == "concepts" else r.selector(tag, nsmap)
    if isinstance(sel, Quarantined):
        yield sel
    elif sel is None or tag == sel.tag:
        r.splits = False
        yield from whole_streamed(r)
    else:
        r.splits = True
        yield from split_streamed(r, sel, options)


def stream_problem(r: Reading, exc: etree.XMLSyntaxError) -> Quarantined:
    """The whole document quarantined for the first error of its stream, with the bytes
    around it."""
    if not exc.lineno:
        # iterparse reports an error in its first chunk, before any event, as lxml's
        # "no element found": libxml2's own error is in the first bytes
        with r.inp.open() as fh:
            exc = first_error(read_at_most(fh.read, 65536), r.limits.xml) or exc
    reason, problem = syntax_problem(exc, r.limits.xml)
    try:
        with r.inp.open() as fh:
            shown = stream_line(fh, problem.line, problem.column)
    except (OSError, ReadError):
        shown = b""
    where = "outside the items" if r.splits else "(a streamed document)"
    return r.whole(
        reason,
        (f"not well-formed {where}: {problem}") if reason == "xml-syntax" else str(problem),
        shown,
    )


def whole_streamed(r: Reading) -> Iterator[Event | Quarantined]:
    """A streamed document that is one event: read in memory when within
    ``xml.max_bytes``, else ``too-large``."""
    max_bytes = r.limits.xml.max_bytes
    with r.inp.open() as fh:
        data = read_at_most(fh.read, max_bytes + 1)
    if len(data) > max_bytes:
        yield Quarantined(
            r.name,
            1,
            "too-large",
            f"document of more than {max_bytes} bytes (ReadLimits.xml.max_bytes) is one event",
            excerpt(data),
            r.model.name,
        )
        return
    yield from from_bytes(r, data)


def split_streamed(r: Reading, sel: Selector, options: dict) -> Iterator[Event | Quarantined]:
    """A streamed feed or split document: its skeleton in one pass (bounded by twice
    ``xml.max_bytes``), its items in a second, up to the first error."""
    deep: set[int] = set()
    seen = [0]
    check = None
    if r.depth_checked():

        def check(el: etree._Element) -> None:
            if too_deep_item(el, r.limits.xml.max_depth):
                deep.add(seen[0])
            seen[0] += 1

    broken: BrokenStream | None = None
    try:
        with r.inp.open() as fh:
            # the skeleton is in every event: beyond max_bytes, no event can be made
            skeleton = stream_skeleton(fh, sel, options, check, budget=2 * r.limits.xml.max_bytes)
    except etree.XMLSyntaxError as exc:
        yield stream_problem(r, exc)
        return
    except BrokenStream as exc:
        if not exc.in_item or syntax_problem(exc.error)[0] not in (
            "xml-syntax",
            "xml-too-deep",
        ):
            yield stream_problem(r, exc.error)
            return
        broken, skeleton = exc, exc.skeleton
    bad = r.refused(skeleton.root)
    if bad is not None:
        yield bad
        return
    if not len(skeleton) and broken is None:
        if r.split is not None:
            yield r.whole("xml-no-split", f"no {r.split.text} element ({sel.tag}) in the document")
        return
    done = 0
    try:
        with r.inp.open() as fh:
            for k, el in stream_items(fh, sel, options, skeleton):
                done = k + 1
                yield (r.too_deep(k + 1, el) if k in deep else r.item_event(skeleton, k, el))
    except etree.XMLSyntaxError as exc:
        if broken is None or done != len(skeleton):
            raise ReadError(
                "unreadable",
                f"the document changed while it was read: {syntax_problem(exc)[1]}",
            ) from None
    if broken is not None:
        yield from stream_rest(r, broken, len(skeleton))


def stream_rest(r: Reading, broken: BrokenStream, done: int) -> Iterator[Quarantined]:
    """After the items read before a streamed document's first error (inside an item):
    that item, then the rest of the document, which is not read."""
    reason, problem = syntax_problem(broken.error, r.limits.xml)
    with r.inp.open() as fh:
        shown = stream_line(fh, problem.line, problem.column)
    yield Quarantined(
        r.name,
        done + 1,
        reason,
        (f"item not well-formed: {problem}" if reason == "xml-syntax" else f"item {problem}"),
        excerpt(shown),
        r.model.name,
    )
    if broken.error.msg and broken.error.msg.startswith("Premature end of data"):
        return  # the document ends in that item: no rest
    yield Quarantined(
        r.name,
        done + 2,
        reason,
        (
            f"the rest of the document after line {problem.line} is not read: a streamed "
            "document is read up to its first error (the items after it, if any, are "
            "this record; read the file with ReadLimits.stream_above above its size to "
            "salvage them)"
        ),
        "",
        r.model.name,
    )
