"""The one entry point: :func:`read` turns sources into events and quarantine records
(docs/adapters.md). Nothing is dropped silently: every record read is either an
:class:`~pubsift.adapters.readers.outcomes.Event` or a
:class:`~pubsift.adapters.readers.outcomes.Quarantined`, and no exception escapes for bad data.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from pubsift.adapters.readers.inputs import Input, inputs
from pubsift.adapters.readers.limits import DEFAULT_READ_LIMITS, ReadLimits
from pubsift.adapters.readers.outcomes import Event, Quarantined
from pubsift.adapters.readers.registry import (
    SNIFF_BYTES,
    Reader,
    ReadError,
    by_content,
    by_extension,
    readers,
)
from pubsift.adapters.readers.source import Source, SourceError
from pubsift.core.errors import PubsiftError, one_line
from pubsift.core.model import FilterModel
from pubsift.core.registry import load_model


def read(
    *sources: Source | str | Mapping[str, Any],
    limits: ReadLimits = DEFAULT_READ_LIMITS,
    models: Mapping[str, FilterModel] | None = None,
    seen: Callable[[str], None] | None = None,
) -> Iterator[Event | Quarantined]:
    """Events and quarantine records of every source, in order: sources in the order
    given, files in sorted order within a directory, members in archive order, records in
    order of position. ``models`` provides model instances by name (default: the installed
    models); ``seen(name)`` is called as each input is opened, before its records (so that
    a file giving no record can be listed, :meth:`pubsift.adapters.summary.Summary.saw`).
    A source that cannot be used at all (an unknown setting, format or model, a split
    element that is not one, a publisher side that cannot be built) raises SourceError
    when ``read`` is called, before anything is read (:func:`check`)."""
    srcs = [Source.of(s) for s in sources]
    check(srcs, models)
    return _read(srcs, limits, models, seen)


def _read(
    srcs: list[Source],
    limits: ReadLimits,
    models: Mapping[str, FilterModel] | None,
    seen: Callable[[str], None] | None,
) -> Iterator[Event | Quarantined]:
    for src in srcs:
        for inp in inputs(src, limits):
            if isinstance(inp, Quarantined):
                yield inp
            else:
                if seen is not None:
                    seen(inp.name)
                yield from read_input(inp, limits, models)


def check(sources: Iterable[Source], models: Mapping[str, FilterModel] | None = None) -> None:
    """SourceError, naming the source and the setting, for the first source whose settings
    cannot be used: a format no reader provides, a model that is not installed, a split
    element that is not an element name, a publisher side its model cannot build."""
    from pubsift.adapters.readers.xmlfiles.splitting import SplitName

    for src in sources:
        if src.format is not None and src.format not in readers():
            raise SourceError(
                f"source {src.path}: no reader for format {src.format!r} "
                f"(readers: {', '.join(sorted(readers()))})"
            )
        if src.split is not None:
            try:
                SplitName.parse(src.split)
            except SourceError as exc:
                raise SourceError(f"source {src.path}: {exc}") from None
        name = src.model or ("concepts" if src.publisher is not None else None)
        if name is None:
            continue
        try:
            model = _model(name, models)
        except PubsiftError as exc:
            raise SourceError(
                f"source {src.path}: model {name!r} cannot be used: {one_line(exc)}"
            ) from None
        if src.publisher is not None:
            from pubsift.adapters.readers.publisher import publisher_for

            publisher_for(model, src)


def reader_for(inp: Input) -> Reader | None:
    """The reader of an input: the source's format, else the file extension, else the
    content's first bytes. SourceError for a format no reader provides."""
    fmt = inp.source.format
    if fmt is not None:
        found = readers().get(fmt)
        if found is None:
            raise SourceError(
                f"source {inp.source.path}: no reader for format {fmt!r} "
                f"(readers: {', '.join(sorted(readers()))})"
            )
        return found
    found = by_extension(inp.name)
    if found is not None:
        return found
    with inp.open() as fh:
        head = fh.read(SNIFF_BYTES)
    return by_content(head)


def _model(name: str, models: Mapping[str, FilterModel] | None) -> FilterModel:
    if models and name in models:
        return models[name]
    return load_model(name)


def read_input(
    inp: Input,
    limits: ReadLimits = DEFAULT_READ_LIMITS,
    models: Mapping[str, FilterModel] | None = None,
) -> Iterator[Event | Quarantined]:
    """Events and quarantine records of one input (a file or archive member). A problem
    that ends the input is quarantined at the position after the last record read."""
    last = 0

    def ended(reason: str, message: str) -> Quarantined:
        return Quarantined(inp.name, last + 1 if last else 0, reason, message, "", model_name)

    model_name: str | None = inp.source.model
    try:
        reader = reader_for(inp)
        if reader is None:
            yield Quarantined(
                inp.name,
                0,
                "unknown-format",
                "no reader knows this file's "
                "format (give the source a format: "
                f"{', '.join(sorted(readers()))})",
                "",
                model_name,
            )
            return
        if model_name is None:  # a publisher side makes semantic objects
            model_name = "concepts" if inp.source.publisher is not None else reader.default_model
        model = _model(model_name, models)
        for out in reader.read(inp, model, limits):
            if out.position > last:
                last = out.position
            yield out
    except ReadError as exc:
        yield ended(exc.reason, exc.message)
    except SourceError:
        raise
    except PubsiftError as exc:  # e.g. an unknown model: the whole input
        yield ended("unreadable", one_line(exc))
    except (EOFError, zlib.error) as exc:
        yield ended("compression", f"corrupt or truncated compressed data: {one_line(exc)}")
    except OSError as exc:
        msg = exc.strerror or one_line(exc)
        reason = "compression" if _is_compression(exc) else "unreadable"
        yield ended(reason, f"cannot read: {msg}")
    except Exception as exc:
        yield ended(
            "reader-error",
            f"internal error in the reader ({type(exc).__name__}: "
            f"{one_line(exc)[:300]}); this is a bug in the reader",
        )


def _is_compression(exc: OSError) -> bool:
    text = str(exc).lower()
    return "gzip" in text or "compressed" in text or "crc" in text or "invalid data stream" in text
