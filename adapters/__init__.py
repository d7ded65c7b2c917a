"""pubsift.adapters — the edges: files, archives and feeds in (:func:`read`), Spark batch and
the networked runtime (docs/adapters.md).

>>> from pubsift.adapters import read
>>> for item in read("quotes.csv.gz"):          # doctest: +SKIP
...     print(item.id, item)
"""

from pubsift.adapters.inputs import Input
from pubsift.adapters.limits import ReadLimits
from pubsift.adapters.outcomes import REASONS, Event, Quarantined
from pubsift.adapters.readers import Reader, ReadError, register_reader
from pubsift.adapters.reading import read, read_input
from pubsift.adapters.source import Source, SourceError

__all__ = [
    "REASONS",
    "Event",
    "Input",
    "Quarantined",
    "ReadError",
    "ReadLimits",
    "Reader",
    "Source",
    "SourceError",
    "read",
    "read_input",
    "register_reader",
]
