"""The XML reader (``xml``: documents, feeds, split documents, UBL; docs/adapters.md §2),
in its phases: :mod:`~pubsift.adapters.readers.xmlfiles.reader` (the reader and the
choice of a phase per file), whole documents, the in-memory and the streamed split
(:mod:`~pubsift.adapters.readers.xmlfiles.splitting`), the salvage of broken feeds
(:mod:`~pubsift.adapters.readers.xmlfiles.salvage`), feed kinds
(:mod:`~pubsift.adapters.readers.xmlfiles.feeds`)."""

from __future__ import annotations

from pubsift.adapters.readers.xmlfiles.reader import XML_READER, XmlReader

__all__ = ["XML_READER", "XmlReader"]
