"""A feed or split document the strict parser refused, read in memory: quarantined whole, or
its intact items strictly parsed and its broken ones quarantined at their positions, when
only items are broken (:func:`~.salvage.salvage` delimits them; docs/adapters.md §4)."""

from __future__ import annotations

from collections.abc import Iterator

from lxml import etree
from pubsift.adapters.readers.outcomes import Event, Quarantined, excerpt
from pubsift.adapters.readers.xmlfiles.problems import line_of, not_text, syntax_problem
from pubsift.adapters.readers.xmlfiles.salvage import Lost, XmlProblem, salvage
from pubsift.adapters.readers.xmlfiles.split import split_items
from pubsift.adapters.readers.xmlfiles.splitting import Selector
from pubsift.adapters.readers.xmlfiles.state import Reading
from pubsift.models.xml import hardened_options, hardened_parser


def salvaged(r: Reading, data: bytes, exc: etree.XMLSyntaxError) -> Iterator[Event | Quarantined]:
    """A document the strict parser refused: whole-document quarantine, or its intact
    items, strictly parsed, when only items are broken (:mod:`.salvage`)."""
    reason, problem = syntax_problem(exc, r.limits.xml)
    if reason == "xml-syntax" and (why := not_text(data)):
        reason, problem = "encoding", XmlProblem(problem.line, problem.column, why)
    r.learn(data[:65536])
    raw = line_of(data, problem.line, problem.column)
    whole = r.whole(
        reason, f"not well-formed: {problem}" if reason == "xml-syntax" else str(problem), raw
    )
    if reason not in ("xml-syntax", "xml-too-deep") or r.model.name == "concepts" or not r.splits:
        yield whole
        return
    # recovery only delimits the items; an item beyond libxml2's plain depth (256)
    # ends its parse, so that one delimits with huge_tree (2048 levels), still
    # hardened otherwise; the events come from strict parses with the real limits
    recover = hardened_parser(
        r.limits.xml, recover=True, huge=True if reason == "xml-too-deep" else None
    )
    # which elements are items is told by the recovered root (a named split: its tag)
    sels: list[Selector | None] = []

    def find(root: etree._Element) -> list:
        if not sels:
            sel = r.selector(root.tag, root.nsmap)  # type: ignore[arg-type]  # (text)
            sels.append(sel if isinstance(sel, Selector) and root.tag != sel.tag else None)
        return [] if sels[0] is None else sels[0].find(root)

    found = salvage(
        data,
        find,
        hardened_options(r.limits.xml),
        recover,
        lambda e: syntax_problem(e, r.limits.xml),
    )
    if isinstance(found, Lost):
        lost = found.problem
        if found.outside:
            yield r.whole(
                reason,
                (
                    "not well-formed outside the items: "
                    if reason == "xml-syntax"
                    else "outside the items: "
                )
                + str(lost),
                line_of(data, lost.line, lost.column),
            )
        else:
            yield r.whole(
                reason, f"{whole.message} (its items cannot be read apart: {lost.message})", raw
            )
        return
    bad = r.refused(found.root, references=False, depth=False)
    if bad is not None:
        yield bad
        return
    assert sels[0] is not None  # items were found with it
    yield from split_items(r, found.root, sels[0], found.broken, found.count, found.shown)
    if found.truncated is not None:
        yield Quarantined(
            r.name,
            found.count + 1,
            "xml-syntax",
            (
                f"the document ends early ({found.truncated}): its items up to there are "
                "read as if it were closed there, anything after is missing"
            ),
            excerpt(data[-200:]),
            r.model.name,
        )
