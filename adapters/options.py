"""The command line's source and limit options (``pubsift match``, ``convert``, ``ingest``
and ``route``; docs/adapters.md): the arguments (:func:`input_options`) and what they
become, checked before anything is read: :class:`~pubsift.adapters.Source` settings
(:func:`checked_sources`) and :class:`~pubsift.adapters.readers.limits.ReadLimits` (:func:`limits_option`).
A setting that cannot be used is an :class:`OptionError` (a usage error: exit 2).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from pubsift.core.errors import PubsiftError, one_line
from pubsift.core.strict_json import strict_json

if TYPE_CHECKING:
    from pubsift.adapters import Source
    from pubsift.adapters.readers.limits import ReadLimits
    from pubsift.core.model import FilterModel


class OptionError(Exception):
    """A usage error (exit 2): an option that cannot be used, or filters that cannot be
    used (the message names file and line)."""


#: the destinations of the source options :func:`input_options` adds
INPUT_OPTIONS = (
    "format",
    "split",
    "ns",
    "columns",
    "delimiter",
    "encoding",
    "publisher",
    "exclude",
)


def input_options(p: argparse.ArgumentParser, format_option: str = "--format") -> None:
    """The source settings of ``match``, ``convert``, ``ingest`` and ``route``; the files'
    format is ``format_option`` (``route --input-format``: its ``--format`` is the
    output's)."""
    p.add_argument(
        format_option, dest="format", help="the files' format (default: from name and content)"
    )
    p.add_argument("--split", metavar="ELEMENT", help="XML element each event is split on")
    p.add_argument(
        "--ns",
        action="append",
        metavar="PREFIX=URI",
        help="a namespace prefix used by --split (repeatable)",
    )
    p.add_argument(
        "--columns",
        action="append",
        metavar="COL=TYPE,...",
        help="declared CSV column types: int, float, bool, str",
    )
    p.add_argument("--delimiter", help="the CSV delimiter (default: sniffed; tab: \\t)")
    p.add_argument(
        "--encoding",
        help="text encoding of CSV and JSON-lines files (default: "
        "UTF-8, or what a byte-order mark says)",
    )
    p.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help="files not to read nor count, matched against the path inside the "
        "directory or archive and the file name (repeatable): '*.md'",
    )
    p.add_argument(
        "--limit",
        action="append",
        metavar="NAME=N",
        help="a read limit (repeatable): max_members, max_total_bytes, "
        "max_ratio, ratio_floor, max_nesting, max_record_bytes, "
        "stream_above",
    )
    p.add_argument(
        "--publisher",
        metavar="JSON|@FILE",
        help="the concepts publisher side (concept, vocabulary, context, "
        "time_field, ignore) as a JSON object, or @FILE of JSON or TOML; "
        "makes the records semantic objects",
    )


def pairs_option(values: Sequence[str], what: str, sep: str = "=") -> dict[str, str]:
    """``a=b`` settings of an option (``--ns p=uri``, ``--columns c=int,d=str``)."""
    out: dict[str, str] = {}
    for v in values:
        key, eq, val = v.partition(sep)
        if not eq or not key.strip() or not val.strip():
            raise OptionError(f"{what} takes NAME{sep}VALUE, not {v!r}")
        out[key.strip()] = val.strip()
    return out


def checked_sources(
    paths: Sequence[str],
    args: argparse.Namespace,
    model: str | None,
    models: dict[str, FilterModel] | None = None,
) -> list[Source]:
    """The sources the command line names, checked (:func:`pubsift.adapters.readers.dispatch.check`;
    raises OptionError or SourceError: a usage error)."""
    from pubsift.adapters import Source
    from pubsift.adapters.readers.dispatch import check
    from pubsift.adapters.readers.registry import readers

    if args.format is not None and args.format not in readers():
        raise OptionError(
            f"no reader for format {args.format!r} (formats: {', '.join(sorted(readers()))})"
        )
    columns = pairs_option([c for v in args.columns or [] for c in v.split(",") if c], "--columns")
    delimiter = {"\\t": "\t", "tab": "\t"}.get(args.delimiter, args.delimiter)
    publisher = publisher_option(args.publisher)
    out = [
        Source(
            p,
            format=args.format,
            model=model,
            split=args.split,
            namespaces=pairs_option(args.ns or [], "--ns"),
            columns=columns,
            delimiter=delimiter,
            publisher=publisher,
            encoding=args.encoding,
            exclude=tuple(args.exclude or ()),
        )
        for p in paths
    ]
    check(out, models)  # SourceError: a usage error, before anything is read
    return out


def existing(paths: Sequence[str]) -> None:
    """OptionError naming every path that names nothing (``-`` is standard input): a typo
    is a usage error, not a quarantined record."""
    from pubsift.adapters.readers.inputs import missing

    gone = [m for m in map(missing, paths) if m]
    if gone:
        raise OptionError("; ".join(gone))


def limits_option(values: Sequence[str]) -> ReadLimits:
    """``--limit NAME=N`` (repeatable): the integer settings of ReadLimits."""
    from dataclasses import replace

    from pubsift.adapters.readers.limits import DEFAULT_READ_LIMITS, ReadLimits

    names = [f for f in ReadLimits.__dataclass_fields__ if f != "xml"]
    changes: dict[str, Any] = {}  # ints, for the int fields named in ``names``
    for key, val in pairs_option(values, "--limit").items():
        if key not in names:
            raise OptionError(f"--limit: no limit named {key!r} (limits: {', '.join(names)})")
        try:
            changes[key] = int(val.replace("_", ""))
        except ValueError:
            raise OptionError(f"--limit {key}: an integer, not {val!r}") from None
    try:
        return replace(DEFAULT_READ_LIMITS, **changes)
    except PubsiftError as exc:
        raise OptionError(f"--limit: {one_line(exc)}") from None


def publisher_option(value: str | None) -> dict[str, Any] | None:
    """``--publisher``: a JSON object, or ``@FILE`` holding one (``.toml``: a TOML table)."""
    if value is None:
        return None
    where = "--publisher"  # the prefix of every message
    text = value
    if value.startswith("@"):
        where = f"--publisher {value[1:]}"
        try:
            with open(value[1:], "rb") as fh:
                raw = fh.read()
        except OSError as exc:
            raise OptionError(
                f"{where}: cannot read the file: {exc.strerror or one_line(exc)}"
            ) from None
        if value.lower().endswith(".toml"):
            import tomllib

            try:
                return tomllib.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise OptionError(f"{where}: {one_line(exc)}") from None
        text = raw.decode("utf-8", "replace")
    try:
        obj = strict_json(text)
    except ValueError as exc:
        raise OptionError(f"{where}: {exc}") from None
    if not isinstance(obj, dict):
        raise OptionError(
            f"{where}: a publisher side is a JSON object "
            "(concept, vocabulary, context, time_field, ignore)"
        )
    return obj


def warn_broken_readers(command: str, err: TextIO) -> None:
    """One warning line on ``err`` per reader plug-in that cannot be loaded."""
    from pubsift.adapters.readers.registry import broken_readers

    for name, exc in sorted(broken_readers().items()):
        err.write(
            f"pubsift {command}: warning: reader plug-in {name!r} ({exc.target}) is "
            f"broken: {exc.reason}\n"
        )


__all__ = [
    "INPUT_OPTIONS",
    "OptionError",
    "checked_sources",
    "existing",
    "input_options",
    "limits_option",
    "pairs_option",
    "publisher_option",
    "warn_broken_readers",
]
