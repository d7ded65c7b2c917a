"""pubsift.adapters.readers — files, archives and feeds into events and quarantine records
(docs/adapters.md). One way through, each layer importing only those before it:

1. what every layer uses, importing nothing of the package:
   :mod:`~pubsift.adapters.readers.limits` (``ReadLimits``),
   :mod:`~pubsift.adapters.readers.outcomes` (``Event``, ``Quarantined``),
   :mod:`~pubsift.adapters.readers.registry` (``Reader``, ``ReadError``, the readers found
   by entry point), text decoding (:mod:`~pubsift.adapters.readers.lines`,
   :mod:`~pubsift.adapters.readers.textlines`) and cell literals
   (:mod:`~pubsift.adapters.readers.cells`);
2. sources and opening them: :mod:`~pubsift.adapters.readers.source` (``Source``),
   :mod:`~pubsift.adapters.readers.bombguard` (decompression within budgets),
   :mod:`~pubsift.adapters.readers.archives`, :mod:`~pubsift.adapters.readers.inputs` (the
   files and members of a source);
3. records into events: :mod:`~pubsift.adapters.readers.publisher` (a publisher side's
   enrichment into semantic objects), :mod:`~pubsift.adapters.readers.converting` (a
   model's ``parse_event``, or that enrichment);
4. one module per format: :mod:`~pubsift.adapters.readers.tabular` (``csv``),
   :mod:`~pubsift.adapters.readers.jsonlines` (``jsonl``),
   :mod:`~pubsift.adapters.readers.xmlfiles` (``xml``, a package of its phases);
5. :mod:`~pubsift.adapters.readers.dispatch`: :func:`read` finds each input's reader.

>>> from pubsift.adapters.readers import read
>>> for item in read("quotes.csv.gz"):          # doctest: +SKIP
...     print(item.id, item)

The formats are plug-ins (entry-point group ``pubsift.readers``, :class:`Reader`), the
built-in ones included, so the dispatch imports no format's reader (only the syntax of an
XML split element, :class:`~pubsift.adapters.readers.xmlfiles.splitting.SplitName`, to
check the sources before reading). Nothing here imports
the Spark job, the broker or the command line. The names below are imported on first use
(module ``__getattr__``), so that importing one module loads only what it imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pubsift.adapters.readers.converting import converter
    from pubsift.adapters.readers.dispatch import check, read, read_input
    from pubsift.adapters.readers.inputs import Input
    from pubsift.adapters.readers.limits import DEFAULT_READ_LIMITS, ReadLimits
    from pubsift.adapters.readers.outcomes import REASONS, Event, Quarantined
    from pubsift.adapters.readers.registry import (
        SNIFF_BYTES,
        Reader,
        ReadError,
        broken_readers,
        readers,
        register_reader,
        unregister_reader,
    )
    from pubsift.adapters.readers.source import Source, SourceError

#: where each public name lives
_HOMES = {
    "converter": "converting",
    "check": "dispatch",
    "read": "dispatch",
    "read_input": "dispatch",
    "Input": "inputs",
    "DEFAULT_READ_LIMITS": "limits",
    "ReadLimits": "limits",
    "REASONS": "outcomes",
    "Event": "outcomes",
    "Quarantined": "outcomes",
    "SNIFF_BYTES": "registry",
    "Reader": "registry",
    "ReadError": "registry",
    "broken_readers": "registry",
    "readers": "registry",
    "register_reader": "registry",
    "unregister_reader": "registry",
    "Source": "source",
    "SourceError": "source",
}

__all__ = [
    "DEFAULT_READ_LIMITS",
    "REASONS",
    "SNIFF_BYTES",
    "Event",
    "Input",
    "Quarantined",
    "ReadError",
    "ReadLimits",
    "Reader",
    "Source",
    "SourceError",
    "broken_readers",
    "check",
    "converter",
    "read",
    "read_input",
    "readers",
    "register_reader",
    "unregister_reader",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
