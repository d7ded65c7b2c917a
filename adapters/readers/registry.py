"""Readers: one per file format, found by name (docs/adapters.md §7: third-party models).

A reader turns one :class:`~pubsift.adapters.readers.inputs.Input` (a file, or a member of an
archive, already decompressed) into events of a model and quarantine records. The built-in
readers (``csv``, ``jsonl``, ``xml``) register under the entry-point group
``pubsift.readers`` exactly as a plug-in's reader does::

    [project.entry-points."pubsift.readers"]
    toyfmt = "toy_package.reading:TOY_READER"

so that a new model's files are read without touching ``adapters/``. The entry point names
a :class:`Reader` instance (or a class instantiated without arguments).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from functools import cache, lru_cache
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from pubsift.core.errors import PluginError, PubsiftError

if TYPE_CHECKING:
    from pubsift.adapters.readers.inputs import Input
    from pubsift.adapters.readers.limits import ReadLimits
    from pubsift.adapters.readers.outcomes import Event, Quarantined
    from pubsift.core.model import FilterModel

GROUP = "pubsift.readers"

#: bytes of a file's beginning given to :meth:`Reader.sniff` (and sniffed by the readers)
SNIFF_BYTES = 4096

#: suffixes of compressed single files, removed before the format is read from the name
COMPRESSION_SUFFIXES = (".gz", ".bz2")


class ReadError(PubsiftError):
    """A problem met while reading that ends the current file or member: ``reason`` is the
    quarantine reason code. :func:`pubsift.adapters.read` quarantines it at the next
    position, keeping every record read before it."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message
        super().__init__(message)


class Reader(ABC):
    """A file format: ``name`` (what ``Source.format`` says), the file ``extensions`` it
    claims (lower case, with the dot), the model its events are for when the source names
    none, and :meth:`sniff` for files whose name says nothing."""

    name: str = ""
    extensions: tuple[str, ...] = ()
    default_model: str = ""

    def sniff(self, head: bytes) -> bool:
        """Whether the first bytes (up to 4 KiB, decompressed) look like this format."""
        return False

    @abstractmethod
    def read(
        self, inp: Input, model: FilterModel, limits: ReadLimits
    ) -> Iterator[Event | Quarantined]:
        """Events and quarantine records of ``inp``, in order of position. A problem that
        ends the file is raised as :class:`ReadError` (or OSError/EOFError from the
        stream); anything else a record does wrong is a yielded Quarantined."""


_extra: dict[str, Reader] = {}


def register_reader(reader: Reader) -> None:
    """Register a reader in this process (tests; programs that build readers at run
    time). Entry points are the way for installed packages."""
    if not isinstance(reader, Reader) or not reader.name:
        raise PluginError(
            getattr(reader, "name", "?") or "?",
            repr(reader),
            "is not a pubsift.adapters.Reader with a name",
        )
    _extra[reader.name] = reader
    _suffixes.cache_clear()


def unregister_reader(name: str) -> None:
    """Undo :func:`register_reader` (an installed reader of that name shows again)."""
    _extra.pop(name, None)
    _suffixes.cache_clear()


@cache
def _installed() -> tuple[dict[str, Reader], dict[str, PluginError]]:
    found: dict[str, Reader] = {}
    broken: dict[str, PluginError] = {}
    for ep in entry_points(group=GROUP):
        if ep.name in found or ep.name in broken:
            continue
        try:
            obj = ep.load()
            reader = obj() if isinstance(obj, type) else obj
        except Exception as exc:
            broken[ep.name] = PluginError(
                ep.name, ep.value, f"cannot be loaded: {type(exc).__name__}: {exc}"
            )
            continue
        if not isinstance(reader, Reader):
            broken[ep.name] = PluginError(
                ep.name, ep.value, f"is a {type(reader).__name__}, not a pubsift.adapters.Reader"
            )
        elif reader.name != ep.name:
            broken[ep.name] = PluginError(
                ep.name, ep.value, f"calls itself {reader.name!r}, registered as {ep.name!r}"
            )
        else:
            found[ep.name] = reader
    return found, broken


def readers() -> dict[str, Reader]:
    """Every reader by format name: installed (entry points) and registered in-process."""
    found, _ = _installed()
    return {**found, **_extra}


def broken_readers() -> dict[str, PluginError]:
    """Reader entry points that cannot be used, by name: reported (``pubsift readers``,
    a warning of ``pubsift convert``), never raised."""
    return dict(_installed()[1])


def strip_compression(name: str) -> str:
    low = name.lower()
    for suf in COMPRESSION_SUFFIXES:
        if low.endswith(suf):
            return name[: -len(suf)]
    return name


@lru_cache(maxsize=1)
def _suffixes() -> tuple[tuple[int, ...], dict[str, Reader]]:
    """The lengths of the claimed extensions, longest first, and the reader of each
    extension: the first in :func:`readers`' order claiming it (what a scan of every
    reader would find). Rebuilt after :func:`register_reader` and
    :func:`unregister_reader` (looked up per file read)."""
    owner: dict[str, Reader] = {}
    for r in readers().values():
        for ext in r.extensions:
            owner.setdefault(ext, r)
    return tuple(sorted({len(ext) for ext in owner}, reverse=True)), owner


def by_extension(name: str) -> Reader | None:
    """The reader claiming the file name's extension (after .gz/.bz2), longest first."""
    low = name.lower()
    if low.endswith(COMPRESSION_SUFFIXES):
        low = strip_compression(low)
    lengths, owner = _suffixes()
    for n in lengths:
        found = owner.get(low[-n:] if n else "")
        if found is not None and n <= len(low):
            return found
    return None


def by_content(head: bytes) -> Reader | None:
    """The first reader (by name) whose :meth:`Reader.sniff` accepts the first bytes."""
    for _, r in sorted(readers().items()):
        try:
            if r.sniff(head):
                return r
        except Exception:
            continue
    return None
