"""A :class:`Source` says what to read and how (docs/adapters.md §1): the path (file, directory,
glob pattern or archive), and optionally the format, the model, the split element, column
types and, for the concepts model, the publisher side. The Spark job's TOML ``[[source]]``
tables map onto it one to one (:meth:`Source.from_mapping`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from pubsift.adapters.readers.lines import check_encoding
from pubsift.core.errors import PubsiftError

#: declared CSV column types
COLUMN_TYPES = ("int", "float", "bool", "str")


class SourceError(PubsiftError, ValueError):
    """A source description that cannot be used (names the setting)."""


#: the read-only empty table shared by every source without namespaces or columns
_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _frozen(m: Mapping[str, Any] | None, what: str) -> Mapping[str, Any]:
    if m is None or m is _EMPTY or (type(m) is dict and not m):
        return _EMPTY
    if not isinstance(m, Mapping):
        raise SourceError(f"{what} is a table (mapping), not {type(m).__name__}")
    return MappingProxyType(dict(m))


@dataclass(frozen=True)
class Source:
    """What to read.

    ``path``: a file, a directory (read recursively), a glob pattern, or an archive
    (``.zip``, ``.tar``, ``.tar.gz``/``.tgz``; ``.gz``/``.bz2`` files are decompressed).
    ``format``: ``csv``, ``jsonl``, ``xml`` or a plug-in reader's name; None: detected per
    file from the extension and the content. ``model``: the filter model the events are for;
    None: the reader's default (records for CSV and JSON lines, xml for XML).
    ``split``: for XML, the element each event is split on (``cac:InvoiceLine``,
    ``trade``, ``{uri}local``); feeds are split per item/entry without it.
    ``namespaces``: prefixes used by ``split`` (a prefix the document itself declares on
    its root also works). ``columns``: declared CSV column types (``int``, ``float``,
    ``bool``, ``str``); undeclared columns are typed from their literal.
    ``delimiter``: the CSV delimiter (None: sniffed). ``encoding``: the text encoding of CSV
    and JSON-lines files (``latin-1``, ``utf-16`` ...; None: UTF-8, or the encoding a
    UTF-8/UTF-16/UTF-32 byte-order mark names: :mod:`pubsift.adapters.readers.lines`).
    ``publisher``: the concepts model's publisher side: ``concept``, ``vocabulary``,
    ``context``, ``time_field``, ``ignore`` (:class:`pubsift.adapters.readers.publisher.Publisher`).
    ``exclude``: glob patterns of files not to read (``*.md``, ``PROVENANCE*``), matched
    against a file's path relative to the directory or archive given and against its name;
    an excluded file is neither read nor counted."""

    path: str
    format: str | None = None
    model: str | None = None
    split: str | None = None
    namespaces: Mapping[str, str] = field(default_factory=dict)
    columns: Mapping[str, str] = field(default_factory=dict)
    delimiter: str | None = None
    publisher: Mapping[str, Any] | None = None
    exclude: tuple[str, ...] = ()
    encoding: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.path, str) or not self.path:
            raise SourceError("a source needs a path (a non-empty string)")
        for name in ("format", "model", "split", "delimiter", "encoding"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, str) or not v):
                raise SourceError(f"source {self.path}: {name} is a non-empty string, not {v!r}")
        if self.delimiter is not None and len(self.delimiter) != 1:
            raise SourceError(
                f"source {self.path}: delimiter is one character, not {self.delimiter!r}"
            )
        if self.encoding is not None:
            try:
                check_encoding(self.encoding)
            except LookupError:
                raise SourceError(
                    f"source {self.path}: encoding {self.encoding!r} is not a "
                    "text encoding Python knows (e.g. utf-8, latin-1, cp1252, "
                    "utf-16)"
                ) from None
        object.__setattr__(self, "namespaces", _frozen(self.namespaces, "namespaces"))
        object.__setattr__(self, "columns", _frozen(self.columns, "columns"))
        for col, typ in self.columns.items():
            if typ not in COLUMN_TYPES:
                raise SourceError(
                    f"source {self.path}: column {col!r} has type {typ!r}; "
                    f"the types are {', '.join(COLUMN_TYPES)}"
                )
        for p, uri in self.namespaces.items():
            if not isinstance(p, str) or not isinstance(uri, str) or not uri:
                raise SourceError(f"source {self.path}: namespaces map prefixes to URIs")
        exclude = (self.exclude,) if isinstance(self.exclude, str) else self.exclude
        if not isinstance(exclude, (tuple, list)) or not all(
            isinstance(p, str) and p for p in exclude
        ):
            raise SourceError(
                f"source {self.path}: exclude is a list of glob patterns, not {self.exclude!r}"
            )
        object.__setattr__(self, "exclude", tuple(exclude))
        if self.publisher is not None:
            object.__setattr__(self, "publisher", _frozen(self.publisher, "publisher"))

    @classmethod
    def of(cls, spec: Source | str | Mapping[str, Any]) -> Source:
        """A Source from a Source, a path, or a mapping (a TOML ``[[source]]`` table)."""
        if isinstance(spec, Source):
            return spec
        if isinstance(spec, str):
            if cls is Source and spec:  # the settings' defaults, known valid (per path read)
                new = object.__new__(Source)
                new.__dict__.update(_DEFAULTS, path=spec)
                return new
            return cls(spec)
        if hasattr(spec, "__fspath__"):
            return cls(str(spec))
        if isinstance(spec, Mapping):
            return cls.from_mapping(spec)
        raise SourceError(f"a source is a path or a table, not {type(spec).__name__}")

    @classmethod
    def from_mapping(cls, table: Mapping[str, Any]) -> Source:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(table) - known)
        if unknown:
            raise SourceError(
                f"source {table.get('path', '?')}: unknown setting(s) "
                f"{', '.join(unknown)}; the settings are "
                f"{', '.join(sorted(known))}"
            )
        return cls(**dict(table))

    def with_path(self, path: str) -> Source:
        """The same settings for another path (a file found in a directory or archive).
        The settings were checked when this source was made and are read-only, so they
        are copied as they are (done per file read)."""
        if not isinstance(path, str) or not path:
            raise SourceError("a source needs a path (a non-empty string)")
        if path == self.path:
            return self
        new = object.__new__(Source)
        new.__dict__.update(self.__dict__)
        new.__dict__["path"] = path
        return new


#: the settings of a source that gives only its path
_DEFAULTS = {k: v for k, v in Source("-").__dict__.items() if k != "path"}
