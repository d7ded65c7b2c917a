"""Inputs: the files a :class:`~pubsift.adapters.source.Source` names, each with a name and
a way to open it as a decompressed binary stream.

SKELETON (issue 11): only plain files are expanded here so far; directories, globs,
.gz/.bz2, zip and tar members with their limits come next.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from pubsift.adapters.limits import ReadLimits
from pubsift.adapters.outcomes import Quarantined
from pubsift.adapters.source import Source


@dataclass(frozen=True)
class Input:
    """One file to read. ``name``: its source label (the path as given, joined with the
    relative path inside a directory, ``a.zip!member`` inside an archive); ``source``: the
    settings, with ``path`` = ``name``; ``open()``: a fresh binary stream of the
    decompressed bytes (may be called more than once, e.g. to stream an XML file twice);
    ``size``: the decompressed size when known."""

    name: str
    source: Source
    open: Callable[[], BinaryIO]
    size: int | None = None


def inputs(source: Source, limits: ReadLimits) -> Iterator[Input | Quarantined]:
    """The inputs of ``source``; a problem with the source itself is a Quarantined."""
    path = source.path
    yield Input(path, source, lambda: open(path, "rb"))
