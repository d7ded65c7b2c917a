"""The XML reader (``xml``: documents, feeds, split documents, UBL; docs/adapters.md §2),
in its phases, each module importing only those before it:

* :mod:`~pubsift.adapters.readers.xmlfiles.feeds` (feed kinds),
  :mod:`~pubsift.adapters.readers.xmlfiles.splitting` (skeletons and items, in memory and
  streamed), :mod:`~pubsift.adapters.readers.xmlfiles.salvage` (delimiting a broken
  feed's items), :mod:`~pubsift.adapters.readers.xmlfiles.problems` (errors located, in
  our words), :mod:`~pubsift.adapters.readers.xmlfiles.chunks` (bytes in);
* :mod:`~pubsift.adapters.readers.xmlfiles.state`: one input being read and how its
  outcomes are made;
* the phases: :mod:`~pubsift.adapters.readers.xmlfiles.split` (the in-memory split),
  :mod:`~pubsift.adapters.readers.xmlfiles.salvaging` (a broken document's intact items),
  :mod:`~pubsift.adapters.readers.xmlfiles.ubl` (UBL lines for the concepts model),
  :mod:`~pubsift.adapters.readers.xmlfiles.documents` (whole documents in memory),
  :mod:`~pubsift.adapters.readers.xmlfiles.streamed` (the streamed read and split);
* :mod:`~pubsift.adapters.readers.xmlfiles.reader`: the reader, choosing memory or stream
  by size (its docstring states what the reader gives).
"""

from __future__ import annotations

from pubsift.adapters.readers.xmlfiles.reader import XML_READER, XmlReader

__all__ = ["XML_READER", "XmlReader"]
