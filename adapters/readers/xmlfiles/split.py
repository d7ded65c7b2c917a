"""The in-memory split: the events of a strictly parsed feed or split document, one per
item, each the document's skeleton with that item (:class:`~.splitting.Skeleton`); for a
salvaged document, its broken items quarantined at their positions (docs/adapters.md §2)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from lxml import etree
from pubsift.adapters.readers.outcomes import Event, Quarantined, excerpt
from pubsift.adapters.readers.xmlfiles.problems import too_deep_item
from pubsift.adapters.readers.xmlfiles.salvage import XmlProblem
from pubsift.adapters.readers.xmlfiles.splitting import Selector, Skeleton
from pubsift.adapters.readers.xmlfiles.state import Reading


def split_items(
    r: Reading,
    root: etree._Element,
    sel: Selector,
    broken: dict[int, tuple[str, XmlProblem]],
    count: int | None,
    shown: dict[int, str] | None = None,
) -> Iterator[Event | Quarantined]:
    """Split events of a strictly parsed document; with ``count``, it is a broken
    document's salvaged rest (:mod:`.salvage`): ``count`` items in the original, the
    ``broken`` ones (0-based index -> reason and problem) cut out of ``root``."""
    items = sel.find(root)
    if not items and not broken:
        if r.split is not None:
            yield r.whole("xml-no-split", f"no {r.split.text} element ({sel.tag}) in the document")
        return
    deep: set[int] = set()
    if r.depth_checked():
        deep = {k for k, el in enumerate(items) if too_deep_item(el, r.limits.xml.max_depth)}
    # one look for entity references in the whole tree (there are none, as a rule)
    references = next(root.iter(etree.Entity), None) is not None
    skeleton = Skeleton(root)
    for el in items:
        skeleton.take(el)
    bad = (r.references(root) if references else None) or r.refused(root, references=False)
    if bad is not None:
        yield bad
        return
    total = len(items) if count is None else count
    good = iter(range(len(items)))
    for position in range(1, total + 1):
        if position - 1 in broken:
            reason, problem = broken[position - 1]
            yield Quarantined(
                r.name,
                position,
                reason,
                f"item not well-formed: {problem}" if reason == "xml-syntax" else f"item {problem}",
                excerpt((shown or {}).get(position - 1, "")),
                r.model.name,
            )
            continue
        k = next(good)
        if k in deep:
            yield r.too_deep(position, items[k])
        elif count is None:
            yield r.item_event(skeleton, k, items[k], references)
        else:
            out = r.item_event(skeleton, k, items[k], references)
            if out.position != position:  # the k-th good item is item ``position``
                out = moved(out, position)
            yield out


def moved(out: Event | Quarantined, position: int) -> Event | Quarantined:
    """An outcome made for another position (the k-th intact item of a salvaged document
    is item ``position`` of the original)."""
    return replace(out, position=position)
