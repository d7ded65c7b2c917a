"""The ``xml`` reader (docs/adapters.md §2): feeds into one event per item or entry, other XML
into one event per document or per split element, all parsed only with the xml model's
hardened settings (:func:`pubsift.models.xml.hardened_options`).

What it gives, per file:

* **Feeds** (RSS 2.0, RSS 1.0 and 0.90, Atom 1.0 and 0.3; :mod:`.feeds`): one event per
  item, position = its 1-based index in document order; the items are the outermost
  item/entry elements wherever they are in the feed (an RSS ``item`` directly under ``rss``
  too); the event is the feed with every other item removed (:mod:`.splitting`). A feed
  without items gives no event (like a CSV file with only its header: nothing to route,
  nothing lost).
* **Other XML**: one event, position 1, unless the source names a split element; then one
  event per outermost split element, split like a feed. A document without that element is
  quarantined at position 0 with reason ``xml-no-split`` (the source expected it: a wrong
  prefix or name is not silently read as nothing). A root that is itself the split element
  is one event.
* **Entity references**: a reference to an entity an external DTD would declare (RSS
  0.91's ``&eacute;`` under the Netscape DOCTYPE) is refused, never resolved: the item
  holding it is quarantined (``xml-entity`` at its position), or the whole document when it
  is outside the items.
* **The concepts model**: the parsed document goes to
  :func:`pubsift.adapters.readers.xmlfiles.ubl.ubl_semantic_objects` (one semantic object per UBL
  line).

**Positions of whole-document problems** (docs/adapters.md §3): a document read
whole (not a feed, no split element named) is quarantined at position 1 for every problem,
the id its event would have had; a feed or split document none of whose items could be
delimited is quarantined at position 0. A document that does not parse counts as a feed
when its first bytes (read strictly, else in recovery mode) show a feed root.

Refusals: an entity declaration or refused reference (``xml-entity``), nesting beyond
``ReadLimits.xml.max_depth`` (``xml-too-deep``: the item, or the whole document when the
metadata is too deep), bytes that are not text in the declared encoding (``encoding``;
also NUL bytes without a byte-order mark: UTF-16/32 without a BOM), a document libxml2
cannot hold (``too-large``), an event larger than ``ReadLimits.xml.max_bytes``
(``too-large`` at the event's position), and XML that is not well-formed (``xml-syntax``,
with line and column). Messages are one line, in our words where libxml2's name its own
options (the depth limit says how to raise ``ParseLimits.max_depth``). A feed or split
document that is not well-formed keeps its intact items, each exactly as a strict parse
gives it: the broken ones are quarantined at their positions (:mod:`.salvage` says exactly
how, for any line layout and encoding). A stream's own error (the archive reader's bomb
guard raises ReadError) passes through lxml unchanged.

Events are the model's: ``model.parse_event`` of the event's text (an EventError is
quarantined as ``invalid-event``). For the xml model with the reader's own parse limits
(``model.limits == ReadLimits.xml``, the default) the reader has already parsed and checked
the document exactly as ``parse_event`` would, so the event is built from that tree (one
copy of the skeleton per item) instead of serializing and parsing it again: the same
``XmlEvent``, tested equal on every real feed, in half the time or less. The event
serializes its tree on first use (matching needs only the tree); the reader serializes an
item's tree itself only when it could exceed ``xml.max_bytes`` (:data:`.state.SERIALIZED_PER_BYTE`
times the document's bytes; always for a document with an internal DTD subset).

Files up to ``ReadLimits.stream_above`` bytes are parsed in memory; larger ones are
streamed twice with ``iterparse`` (skeleton, then items), memory bounded by the skeleton
and one item, and give the same events. Their skeleton is bounded too: more than twice
``xml.max_bytes`` outside the split elements (metadata no event could hold, or split
elements that are rare or absent) ends the document with ``too-large``. A streamed feed or
split document is read up to its first error: when that error is inside an item, the items
before it are events (their metadata is the metadata before that item: what follows is not
read), the broken item is quarantined at its position, and the rest of the document in one
more record at the next position (none when the document ends in that item); an error
outside the items quarantines the document whole. Items too deep for a lower
``max_depth`` are quarantined one by one. A streamed document read whole (not split) is
read in memory when within ``xml.max_bytes``, else ``too-large``.
"""

from __future__ import annotations

from collections.abc import Iterator

from pubsift.adapters.readers.inputs import Input
from pubsift.adapters.readers.limits import ReadLimits
from pubsift.adapters.readers.outcomes import Event, Quarantined
from pubsift.adapters.readers.registry import Reader
from pubsift.adapters.readers.xmlfiles.chunks import read_at_most, read_file
from pubsift.adapters.readers.xmlfiles.documents import from_bytes
from pubsift.adapters.readers.xmlfiles.problems import BOMS
from pubsift.adapters.readers.xmlfiles.state import Reading
from pubsift.adapters.readers.xmlfiles.streamed import from_stream
from pubsift.core.model import FilterModel


class XmlReader(Reader):
    """XML files: feeds per item, other documents whole or per split element."""

    name = "xml"
    extensions = (".xml", ".rss", ".atom", ".rdf", ".nitf", ".newsml")
    default_model = "xml"

    def sniff(self, head: bytes) -> bool:
        """An optional byte-order mark and blanks, then ``<``."""
        for bom in BOMS:
            if head.startswith(bom):
                head = head[len(bom) :]
                if bom != BOMS[0]:
                    enc = "utf-16-le" if bom == b"\xff\xfe" else "utf-16-be"
                    head = head[: len(head) // 2 * 2].decode(enc, "ignore").encode()
                break
        return head.lstrip()[:1] == b"<"

    def read(
        self, inp: Input, model: FilterModel, limits: ReadLimits
    ) -> Iterator[Event | Quarantined]:
        reading = Reading(inp, model, limits)
        if inp.size is None or inp.size <= limits.stream_above:
            if inp.file is None:
                with inp.open() as fh:
                    data = read_at_most(fh.read, limits.stream_above + 1, inp.size)
            else:
                data = read_file(inp.file, limits.stream_above + 1, inp.size)
            if len(data) <= limits.stream_above:
                yield from from_bytes(reading, data)
                return
        yield from from_stream(reading)


XML_READER = XmlReader()
