"""``pubsift match``: events (JSON lines, or any file the readers know) against filters
given on the command line or in filter files; one JSON line per event that matched
(README, "Command line").

Exit 0; 1 when event lines were skipped or records quarantined (each reported with where
it is); 2 when the filters or an events file cannot be used.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pubsift.adapters.options import (
    INPUT_OPTIONS,
    OptionError,
    checked_sources,
    existing,
    input_options,
    limits_option,
    warn_broken_readers,
)
from pubsift.adapters.readers.textlines import InputError, read_lines
from pubsift.core.errors import (
    FilterSyntaxError,
    PubsiftError,
    filter_problem,
    one_line,
    printable,
)
from pubsift.core.model import FilterModel
from pubsift.core.registry import load_model
from pubsift.core.strict_json import strict_json

if TYPE_CHECKING:
    from rich.console import Console

#: file names read as JSON lines of events line by line, as before the readers (ids ``file:line``)
_EVENT_LINES = (".jsonl", ".ndjson", ".json")


def _filter_sources(
    specs: Sequence[str], files: Sequence[str], names: dict[int, str] | None = None
) -> Iterator[tuple[str, str]]:
    """(label, spec) of command-line specs and filter files (one per line; ``#`` comments).
    A command-line filter is labelled by its text, or by its ``--name``; a line of a file
    by ``FILE:LINE``."""
    for i, s in enumerate(specs):
        yield (names or {}).get(i, s), s
    for path in files:
        try:
            for line in read_lines(path, "filters"):
                if line.text is None:
                    raise OptionError(f"{line.where}: {line.problem}")
                if not line.text.lstrip().startswith("#"):
                    yield line.where, line.text.strip()
        except InputError as exc:
            raise OptionError(str(exc)) from None


def read_filters(
    model: FilterModel,
    specs: Sequence[str],
    files: Sequence[str],
    names: dict[int, str] | None = None,
) -> list[tuple[str, Any]]:
    """(label, filter) pairs; a line starting with ``{`` is a JSON form, parsed strictly
    (duplicate keys refused, as the models refuse them). Raises OptionError, also when two
    filters have one label."""
    out: list[tuple[str, Any]] = []
    seen: set[str] = set()
    for label, spec in _filter_sources(specs, files, names):
        if label in seen:
            raise OptionError(
                f"{label}: two filters have this label; name them with --name NAME after each -f"
            )
        seen.add(label)
        parsed: Any = spec
        if spec.startswith("{"):
            try:
                parsed = strict_json(spec)
            except ValueError as exc:
                raise OptionError(f"{label}: {exc}") from None
        try:
            fs = model.parse_filters(parsed)
        except FilterSyntaxError as exc:
            raise OptionError(filter_problem(exc, label)) from None
        except PubsiftError as exc:
            raise OptionError(f"{label}: {one_line(exc)}") from None
        except Exception as exc:
            raise OptionError(f"{label}: {_internal(model, 'parse_filters', exc)}") from None
        for j, f in enumerate(fs):
            out.append((label if len(fs) == 1 else f"{label}#{j + 1}", f))
    return out


def _with_rates(model: FilterModel, path: str, base: str) -> FilterModel:
    """``model`` converting currencies with the rates of ``path`` (``--rates``): the
    model's own ``with_rates(path, base)`` (the concepts model has it). Raises
    OptionError when the model converts no currencies or the table cannot be used."""
    with_rates = getattr(model, "with_rates", None)
    if with_rates is None:
        raise OptionError(f"--rates: model {model.name!r} converts no currencies (use -m concepts)")
    if not os.path.isfile(path):
        raise OptionError(f"--rates: {path}: no such file")
    try:
        rated: FilterModel = with_rates(path, base)
    except PubsiftError as exc:
        raise OptionError(f"--rates {path}: {one_line(exc)}") from None
    return rated


def _internal(model: FilterModel, hook: str, exc: BaseException) -> str:
    """A model hook broke the contract (raised something other than a PubsiftError)."""
    return (
        f"internal error in model {model.name!r} ({hook} raised "
        f"{type(exc).__name__}: {one_line(exc)[:300]}); this is a bug in the model"
    )


def _line_events(path: str, args: argparse.Namespace) -> bool:
    """Whether ``match`` reads ``path`` line by line as JSON events, as it did before the
    readers existed: stdin, ``*.jsonl``/``*.ndjson``/``*.json``, and any other plain file no
    reader claims by its name (or a missing one: a usage error, as before). Directories,
    glob patterns, archives, compressed files and files of a reader's format (``.csv``,
    ``.rss``, ...) go through the readers; so does everything when an input option
    (``--format``, ``--split``, ...) is given."""
    if path == "-":
        return True
    if any(getattr(args, o) for o in INPUT_OPTIONS):
        return False
    if path.lower().endswith(_EVENT_LINES):
        return True
    import glob

    from pubsift.adapters.readers.archives import archive_kind
    from pubsift.adapters.readers.bombguard import compression_of
    from pubsift.adapters.readers.registry import by_extension

    if archive_kind(path) or compression_of(path) or by_extension(path) is not None:
        return False
    return not os.path.isdir(path) and not (glob.has_magic(path) and not os.path.lexists(path))


def cmd_match(args: argparse.Namespace, console: Console) -> int:
    """Exit 0; 1 when event lines were skipped or records quarantined (each reported with
    where it is); 2 when the filters or an events file cannot be used."""
    from pubsift.adapters.readers.jsonlines import json_values
    from pubsift.adapters.readers.source import SourceError

    out, err = console.file, sys.stderr

    model = load_model(args.model)
    paths = args.events or ["-"]
    try:
        if args.rates is not None:
            model = _with_rates(model, args.rates, args.rates_base)
        filters = read_filters(model, args.filter or [], args.filters or [], args.names)
        if not filters:
            raise OptionError("no filters given (use -f FILTER or --filters FILE)")
        index = model.new_index()
        for label, f in filters:
            try:
                index.add(f, label)
            except PubsiftError as exc:
                raise OptionError(f"{label}: {one_line(exc)}") from None
            except Exception as exc:
                raise OptionError(f"{label}: {_internal(model, 'index.add', exc)}") from None
        if "-" in paths and any(getattr(args, o) for o in INPUT_OPTIONS):
            raise OptionError(
                "standard input (-) is read as JSON lines of events; "
                f"--{'/--'.join(INPUT_OPTIONS)} apply to files"
            )
        existing([p for p in paths if not _line_events(p, args)])
        models = {model.name: model}
        read_with = [
            None if _line_events(p, args) else checked_sources([p], args, args.model, models)[0]
            for p in paths
        ]
        limits = limits_option(args.limit or [])
    except (OptionError, SourceError) as exc:
        err.write(f"pubsift match: {one_line(exc)}\n")
        return 2
    order = {label: i for i, (label, _) in enumerate(filters)}
    n_events = n_bad = n_quarantined = n_deliveries = 0

    def skip(where: str, why: str) -> None:
        nonlocal n_bad
        err.write(f"{where}: {why}; skipped\n")
        n_bad += 1

    def deliver(where: str, event: Any) -> None:
        nonlocal n_events, n_deliveries
        try:
            hits = sorted(index.match(event), key=order.__getitem__)
        except PubsiftError as exc:
            skip(where, one_line(exc))
            return
        except Exception as exc:
            skip(where, _internal(model, "index.match", exc))
            return
        n_events += 1
        n_deliveries += len(hits)
        if hits or args.all:
            out.write(json.dumps({"event": where, "matches": hits}) + "\n")

    if any(s is not None for s in read_with):
        warn_broken_readers("match", err)
    for path, source in zip(paths, read_with):
        if source is not None:
            from pubsift.adapters import Quarantined, read

            for item in read(source, limits=limits, models=models):
                if isinstance(item, Quarantined):
                    err.write(
                        f"{printable(item.id)}: {item.reason}: "
                        f"{printable(item.message)}; quarantined\n"
                    )
                    n_quarantined += 1
                else:
                    deliver(item.id, item.event)
            continue
        try:
            for where, raw, problem in json_values(path, limits.max_record_bytes):
                if problem:
                    skip(where, problem)
                    continue
                try:
                    event = model.parse_event(raw)
                except PubsiftError as exc:
                    skip(where, one_line(exc))
                    continue
                except Exception as exc:
                    skip(where, _internal(model, "parse_event", exc))
                    continue
                deliver(where, event)
        except InputError as exc:
            err.write(f"pubsift match: {exc}\n")
            return 2
    err.write(
        f"{_n(n_events, 'event')}, {_n(len(filters), 'filter')}, "
        f"{_n(n_deliveries, 'match', 'matches')}"
        + (f", {_n(n_bad, 'bad line')} skipped" if n_bad else "")
        + (f", {n_quarantined} quarantined" if n_quarantined else "")
        + "\n"
    )
    return 1 if n_bad or n_quarantined else 0


def _n(count: int, word: str, plural: str = "") -> str:
    """``1 filter``, ``2 filters``."""
    return f"{count} {word if count == 1 else plural or word + 's'}"


class _FilterName(argparse.Action):
    """``--name NAME``: the label of the ``-f FILTER`` given just before it."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        specs = namespace.filter or []
        names = dict(getattr(namespace, self.dest) or {})
        if not specs or len(specs) - 1 in names:
            parser.error("--name NAME labels the -f FILTER given just before it")
        names[len(specs) - 1] = values
        setattr(namespace, self.dest, names)


def add_match_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "events",
        nargs="*",
        help="JSON-lines files of events (ids file:line), "
        "or files, directories, globs and archives the readers know (ids "
        "source#position); default: JSON lines on stdin",
    )
    p.add_argument("-m", "--model", default="records", help="filter model (default: records)")
    p.add_argument(
        "-f",
        "--filter",
        action="append",
        help="a filter (text or JSON form), labelled by its text in the output",
    )
    p.add_argument(
        "--name",
        action=_FilterName,
        dest="names",
        default=None,
        help="the label of the -f FILTER just before it (default: its text)",
    )
    p.add_argument(
        "--filters", action="append", help="a file of filters, one per line (labelled FILE:LINE)"
    )
    p.add_argument("--all", action="store_true", help="also print events with no match")
    p.add_argument(
        "--rates",
        metavar="FILE.csv",
        help="dated exchange rates for the concepts model: CSV rows "
        "currency,rate,valid_from,valid_to (rate units of the currency per "
        "one --rates-base; ISO dates, empty = unbounded)",
    )
    p.add_argument(
        "--rates-base",
        default="USD",
        metavar="CUR",
        help="the currency the --rates are quoted against (default USD)",
    )
    input_options(p)
    p.set_defaults(func=cmd_match)
