"""pubsift.adapters — the edges: files, archives and feeds in (:func:`read`), Spark batch and
the networked runtime (docs/adapters.md).

>>> from pubsift.adapters import read
>>> for item in read("quotes.csv.gz"):          # doctest: +SKIP
...     print(item.id, item)

The names below are imported on first use (module ``__getattr__``), so that importing a
submodule — ``pubsift.adapters.broker.client``, say — loads none of the readers and no
model.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pubsift.adapters.readers.dispatch import read, read_input
    from pubsift.adapters.readers.inputs import Input
    from pubsift.adapters.readers.limits import ReadLimits
    from pubsift.adapters.readers.outcomes import REASONS, Event, Quarantined
    from pubsift.adapters.readers.registry import Reader, ReadError, register_reader
    from pubsift.adapters.readers.source import Source, SourceError

#: where each public name lives
_HOMES = {
    "Input": "readers.inputs",
    "ReadLimits": "readers.limits",
    "REASONS": "readers.outcomes",
    "Event": "readers.outcomes",
    "Quarantined": "readers.outcomes",
    "Reader": "readers.registry",
    "ReadError": "readers.registry",
    "register_reader": "readers.registry",
    "read": "readers.dispatch",
    "read_input": "readers.dispatch",
    "Source": "readers.source",
    "SourceError": "readers.source",
}

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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
