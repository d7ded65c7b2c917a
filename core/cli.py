"""The pubsift command line.

``pubsift models``   lists the installed filter models and what they provide;
``pubsift readers``  lists the installed file readers (entry-point group pubsift.readers);
``pubsift convert``  reads files, directories, globs and archives into events (JSON lines)
                     and a quarantine file, and prints counts per source and per reason;
``pubsift match``    matches events (JSON lines, or any file the readers know) against filters;
``pubsift ingest``, ``pubsift route``  the Spark job (:mod:`pubsift.adapters.spark.cli`);
``pubsift demo``     the quote demo: S&P 500 quotes through the records index (bundled
                     sample, or the full year with --data DIR or PUBSIFT_DATA);
``pubsift broker``, ``pubsift sub``, ``pubsift pub``  brokers on a network and their clients,
                     ``pubsift stats`` a broker's status (:mod:`pubsift.adapters.broker.cli`);
``pubsift history``  records what the brokers deliver, replays it to late subscribers
                     (:mod:`pubsift.adapters.broker.history`);
``pubsift experiment rebeca``  Mühl's routing experiments reproduced (Mühl 2002,
                     Large-Scale Content-Based Publish/Subscribe Systems, ch. 6).

Every subcommand is one entry of :data:`COMMANDS`, whose module is imported only when the
subcommand runs, and one handler ``func(args, console) -> int``. Models are reached only
through the registry (:mod:`pubsift.core.registry`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any, TextIO, cast

from pubsift.core.cli_input import InputError, one_line, read_lines, strict_json
from pubsift.core.errors import FilterSyntaxError, PluginError, PubsiftError, printable
from pubsift.core.model import FilterModel
from pubsift.core.registry import installed_models, load_model

if TYPE_CHECKING:  # adapters are imported inside the commands (core does not need them)
    from pubsift.adapters import Source
    from pubsift.adapters.limits import ReadLimits
    from rich.console import Console

_OPTIONAL_HOOKS = ("identical", "overlaps", "merge", "parse_filters", "format_filter", "new_index")


def _provided_hooks(model: FilterModel) -> list[str]:
    """The optional hooks a model overrides (the others use the sound defaults)."""
    return [h for h in _OPTIONAL_HOOKS if getattr(type(model), h) is not getattr(FilterModel, h)]


def cmd_models(args: argparse.Namespace, console: Console) -> int:
    """The installed models (loaded through the registry) with their optional hooks,
    capabilities and index; exit 1 when one is broken."""
    out = console.file
    rows = []
    status = 0
    for info in installed_models():
        try:
            model = load_model(info.name)
        except PluginError as exc:
            rows.append(
                (
                    info.name,
                    info.distribution or "?",
                    info.version or "?",
                    f"BROKEN: {exc.reason}",
                    "",
                    "",
                )
            )
            status = 1
            continue
        index = type(model.new_index()).__name__
        rows.append(
            (
                info.name,
                info.distribution or "?",
                info.version or "?",
                ", ".join(_provided_hooks(model)) or "required hooks only",
                ", ".join(sorted(model.capabilities)) or "-",
                index,
            )
        )
    if args.json:
        keys = ("name", "distribution", "version", "hooks", "capabilities", "index")
        out.write(json.dumps([dict(zip(keys, r)) for r in rows], indent=2) + "\n")
        return status
    from rich.console import Console
    from rich.table import Table

    table = Table(title="installed pubsift filter models (entry-point group pubsift.models)")
    for col in ("model", "distribution", "version", "optional hooks", "capabilities", "index"):
        table.add_column(col)
    for r in rows:
        table.add_row(*r)
    Console(file=out, width=120).print(table)  # wide enough for every column
    return status


class _BadFilters(Exception):
    """A usage error (exit 2): filters that cannot be used (the message names file and
    line), or a bad input option of ``match``/``convert``."""


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
                    raise _BadFilters(f"{line.where}: {line.problem}")
                if not line.text.lstrip().startswith("#"):
                    yield line.where, line.text.strip()
        except InputError as exc:
            raise _BadFilters(str(exc)) from None


def _show_spec(exc: FilterSyntaxError, label: str) -> str:
    """A filter error on one line: its label, what is wrong, and where (the column, with a
    short excerpt around it, or the JSON path)."""
    where = []
    if exc.path:
        where.append(f"at {exc.path}")
    if exc.text is not None and exc.position is not None:
        line_start = exc.text.rfind("\n", 0, exc.position) + 1
        excerpt = printable(exc.text[max(line_start, exc.position - 20) : exc.position + 20])
        where.append(f"at line {exc.line}, column {exc.column}, near {excerpt!r}")
    head = one_line(FilterSyntaxError(exc.message))
    return f"{label}: {head}" + (f" ({'; '.join(where)})" if where else "")


def _read_filters(
    model: FilterModel,
    specs: Sequence[str],
    files: Sequence[str],
    names: dict[int, str] | None = None,
) -> list[tuple[str, Any]]:
    """(label, filter) pairs; a line starting with ``{`` is a JSON form, parsed strictly
    (duplicate keys refused, as the models refuse them). Raises _BadFilters, also when two
    filters have one label."""
    out: list[tuple[str, Any]] = []
    seen: set[str] = set()
    for label, spec in _filter_sources(specs, files, names):
        if label in seen:
            raise _BadFilters(
                f"{label}: two filters have this label; name them with --name NAME after each -f"
            )
        seen.add(label)
        parsed: Any = spec
        if spec.startswith("{"):
            try:
                parsed = strict_json(spec)
            except ValueError as exc:
                raise _BadFilters(f"{label}: {exc}") from None
        try:
            fs = model.parse_filters(parsed)
        except FilterSyntaxError as exc:
            raise _BadFilters(_show_spec(exc, label)) from None
        except PubsiftError as exc:
            raise _BadFilters(f"{label}: {one_line(exc)}") from None
        except Exception as exc:
            raise _BadFilters(f"{label}: {_internal(model, 'parse_filters', exc)}") from None
        for j, f in enumerate(fs):
            out.append((label if len(fs) == 1 else f"{label}#{j + 1}", f))
    return out


def _with_rates(model: FilterModel, path: str, base: str) -> FilterModel:
    """``model`` converting currencies with the rates of ``path`` (``--rates``): the
    model's own ``with_rates(path, base)`` (the concepts model has it). Raises
    _BadFilters when the model converts no currencies or the table cannot be used."""
    with_rates = getattr(model, "with_rates", None)
    if with_rates is None:
        raise _BadFilters(f"--rates: model {model.name!r} converts no currencies (use -m concepts)")
    if not os.path.isfile(path):
        raise _BadFilters(f"--rates: {path}: no such file")
    try:
        rated: FilterModel = with_rates(path, base)
    except PubsiftError as exc:
        raise _BadFilters(f"--rates {path}: {one_line(exc)}") from None
    return rated


def _internal(model: FilterModel, hook: str, exc: BaseException) -> str:
    """A model hook broke the contract (raised something other than a PubsiftError)."""
    return (
        f"internal error in model {model.name!r} ({hook} raised "
        f"{type(exc).__name__}: {one_line(exc)[:300]}); this is a bug in the model"
    )


#: file names read as JSON lines of events line by line, as before the readers (ids ``file:line``)
_EVENT_LINES = (".jsonl", ".ndjson", ".json")
_INPUT_OPTIONS = (
    "format",
    "split",
    "ns",
    "columns",
    "delimiter",
    "encoding",
    "publisher",
    "exclude",
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
    if any(getattr(args, o) for o in _INPUT_OPTIONS):
        return False
    if path.lower().endswith(_EVENT_LINES):
        return True
    import glob

    from pubsift.adapters.archives import archive_kind
    from pubsift.adapters.bombguard import compression_of
    from pubsift.adapters.readers import by_extension

    if archive_kind(path) or compression_of(path) or by_extension(path) is not None:
        return False
    return not os.path.isdir(path) and not (glob.has_magic(path) and not os.path.lexists(path))


def _pairs_option(values: Sequence[str], what: str, sep: str = "=") -> dict[str, str]:
    """``a=b`` settings of an option (``--ns p=uri``, ``--columns c=int,d=str``)."""
    out: dict[str, str] = {}
    for v in values:
        key, eq, val = v.partition(sep)
        if not eq or not key.strip() or not val.strip():
            raise _BadFilters(f"{what} takes NAME{sep}VALUE, not {v!r}")
        out[key.strip()] = val.strip()
    return out


def _sources(
    paths: Sequence[str],
    args: argparse.Namespace,
    model: str | None,
    models: dict[str, FilterModel] | None = None,
) -> list[Source]:
    """The sources the command line names, checked (:func:`pubsift.adapters.reading.check`;
    raises _BadFilters or SourceError: a usage error)."""
    from pubsift.adapters import Source
    from pubsift.adapters.readers import readers
    from pubsift.adapters.reading import check

    if args.format is not None and args.format not in readers():
        raise _BadFilters(
            f"no reader for format {args.format!r} (formats: {', '.join(sorted(readers()))})"
        )
    columns = _pairs_option([c for v in args.columns or [] for c in v.split(",") if c], "--columns")
    delimiter = {"\\t": "\t", "tab": "\t"}.get(args.delimiter, args.delimiter)
    publisher = _publisher_option(args.publisher)
    sources = [
        Source(
            p,
            format=args.format,
            model=model,
            split=args.split,
            namespaces=_pairs_option(args.ns or [], "--ns"),
            columns=columns,
            delimiter=delimiter,
            publisher=publisher,
            encoding=args.encoding,
            exclude=tuple(args.exclude or ()),
        )
        for p in paths
    ]
    check(sources, models)  # SourceError: a usage error, before anything is read
    return sources


def _existing(paths: Sequence[str]) -> None:
    """_BadFilters naming every path that names nothing (``-`` is standard input): a typo
    is a usage error, not a quarantined record."""
    from pubsift.adapters.inputs import missing

    gone = [m for m in map(missing, paths) if m]
    if gone:
        raise _BadFilters("; ".join(gone))


def _limits_option(values: Sequence[str]) -> ReadLimits:
    """``--limit NAME=N`` (repeatable): the integer settings of ReadLimits."""
    from dataclasses import replace

    from pubsift.adapters.limits import DEFAULT_READ_LIMITS, ReadLimits

    names = [f for f in ReadLimits.__dataclass_fields__ if f != "xml"]
    changes: dict[str, Any] = {}  # ints, for the int fields named in ``names``
    for key, val in _pairs_option(values, "--limit").items():
        if key not in names:
            raise _BadFilters(f"--limit: no limit named {key!r} (limits: {', '.join(names)})")
        try:
            changes[key] = int(val.replace("_", ""))
        except ValueError:
            raise _BadFilters(f"--limit {key}: an integer, not {val!r}") from None
    try:
        return replace(DEFAULT_READ_LIMITS, **changes)
    except PubsiftError as exc:
        raise _BadFilters(f"--limit: {one_line(exc)}") from None


def _publisher_option(value: str | None) -> dict[str, Any] | None:
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
            raise _BadFilters(
                f"{where}: cannot read the file: {exc.strerror or one_line(exc)}"
            ) from None
        if value.lower().endswith(".toml"):
            import tomllib

            try:
                return tomllib.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise _BadFilters(f"{where}: {one_line(exc)}") from None
        text = raw.decode("utf-8", "replace")
    try:
        obj = strict_json(text)
    except ValueError as exc:
        raise _BadFilters(f"{where}: {exc}") from None
    if not isinstance(obj, dict):
        raise _BadFilters(
            f"{where}: a publisher side is a JSON object "
            "(concept, vocabulary, context, time_field, ignore)"
        )
    return obj


def _warn_broken_readers(command: str, err: TextIO) -> None:
    from pubsift.adapters.readers import broken_readers

    for name, exc in sorted(broken_readers().items()):
        err.write(
            f"pubsift {command}: warning: reader plug-in {name!r} ({exc.target}) is "
            f"broken: {exc.reason}\n"
        )


def cmd_match(args: argparse.Namespace, console: Console) -> int:
    """Exit 0; 1 when event lines were skipped or records quarantined (each reported with
    where it is); 2 when the filters or an events file cannot be used."""
    from pubsift.adapters.source import SourceError

    out, err = console.file, sys.stderr

    model = load_model(args.model)
    paths = args.events or ["-"]
    try:
        if args.rates is not None:
            model = _with_rates(model, args.rates, args.rates_base)
        filters = _read_filters(model, args.filter or [], args.filters or [], args.names)
        if not filters:
            raise _BadFilters("no filters given (use -f FILTER or --filters FILE)")
        index = model.new_index()
        for label, f in filters:
            try:
                index.add(f, label)
            except PubsiftError as exc:
                raise _BadFilters(f"{label}: {one_line(exc)}") from None
            except Exception as exc:
                raise _BadFilters(f"{label}: {_internal(model, 'index.add', exc)}") from None
        if "-" in paths and any(getattr(args, o) for o in _INPUT_OPTIONS):
            raise _BadFilters(
                "standard input (-) is read as JSON lines of events; "
                f"--{'/--'.join(_INPUT_OPTIONS)} apply to files"
            )
        _existing([p for p in paths if not _line_events(p, args)])
        models = {model.name: model}
        read_with = [
            None if _line_events(p, args) else _sources([p], args, args.model, models)[0]
            for p in paths
        ]
        limits = _limits_option(args.limit or [])
    except (_BadFilters, SourceError) as exc:
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
        _warn_broken_readers("match", err)
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
            for line in read_lines(path, "events"):
                if line.text is None:
                    skip(line.where, line.problem)
                    continue
                try:
                    raw = strict_json(line.text)
                except ValueError as exc:
                    skip(line.where, str(exc))
                    continue
                try:
                    event = model.parse_event(raw)
                except PubsiftError as exc:
                    skip(line.where, one_line(exc))
                    continue
                except Exception as exc:
                    skip(line.where, _internal(model, "parse_event", exc))
                    continue
                deliver(line.where, event)
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


class _AtomicFile:
    """A text file written under a temporary name beside it and renamed into place by
    :meth:`commit`, so that an interrupted run leaves no half file (only the old one). A
    symbolic link is written through: the temporary file is made beside the link's target
    and replaces the target, the link stays. ``-`` is standard output (written directly)."""

    def __init__(self, path: str, stdout: IO[str] | None = None) -> None:
        import tempfile

        self.tmp = ""
        if path == "-":
            assert stdout is not None
            self.path, self.fh = path, stdout
            return
        self.path = os.path.realpath(path)
        if os.path.exists(self.path) and not os.path.isfile(self.path):
            raise _BadFilters(
                f"cannot write {path}: not a regular file (a directory, a "
                "device or a FIFO); use - for standard output"
            )
        folder, name = os.path.split(self.path)
        fd, self.tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=folder)
        # backslashreplace: a lone surrogate (from bytes that were not UTF-8) is written as
        # its JSON escape, inside the JSON string it belongs to
        self.fh = os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace")

    def commit(self) -> None:
        if not self.tmp:
            self.fh.flush()
            return
        self.fh.close()
        umask = os.umask(0)  # mkstemp makes the file private; give it the usual mode
        os.umask(umask)
        os.chmod(self.tmp, 0o666 & ~umask)
        os.replace(self.tmp, self.path)

    def discard(self) -> None:
        if not self.tmp:
            return
        self.fh.close()
        if os.path.exists(self.tmp):
            os.unlink(self.tmp)


def _event_line(item: Any, models: dict[str, FilterModel]) -> str:
    """The JSON line of an event: model, source, position and the model's wire form."""
    model = models.get(item.model) or models.setdefault(item.model, load_model(item.model))
    wire = model.dump_event(item.event)
    return (
        json.dumps(
            {"model": item.model, "source": item.source, "position": item.position, "event": wire},
            ensure_ascii=False,
            allow_nan=False,
        )
        + "\n"
    )


def cmd_convert(args: argparse.Namespace, console: Console) -> int:
    """Exit 0 when every record became an event, 1 when something was quarantined, 2 on
    a usage error (bad option, unknown model or format, a setting that cannot be used),
    then with nothing written. ``--out -`` writes the events to standard output; the
    quarantine file must then be named (``--quarantine FILE``) and the counts go to
    standard error."""
    from pubsift.adapters import Quarantined, read
    from pubsift.adapters.source import SourceError
    from pubsift.adapters.summary import Summary

    out, err = console.file, sys.stderr
    if args.out == "-" and not args.quarantine:
        err.write("pubsift convert: --out - (standard output) needs --quarantine FILE\n")
        return 2
    quarantine = args.quarantine or _beside(args.out, ".quarantine.jsonl")
    report = err if args.out == "-" else out
    opened: list[_AtomicFile] = []
    try:
        if quarantine == "-" or args.summary == "-":
            raise _BadFilters(
                "--quarantine and --summary name files (standard output is for --out -)"
            )
        names = [
            os.path.realpath(p)
            for p in (args.out, quarantine, args.summary or "")
            if p and p != "-"
        ]
        if len(set(names)) != len(names):
            raise _BadFilters("--out, --quarantine and --summary name the same file")
        models: dict[str, FilterModel] = {}
        if args.model is not None:
            models[args.model] = load_model(args.model)
        _existing(args.paths)
        sources = _sources(args.paths, args, args.model, models)
        limits = _limits_option(args.limit or [])
        for path in (args.out, quarantine) + ((args.summary,) if args.summary else ()):
            # one at a time: those made before a failure are discarded below
            opened.append(_AtomicFile(path, out))  # noqa: PERF401
    except (_BadFilters, SourceError, OSError) as exc:
        for f in opened:
            f.discard()
        if isinstance(exc, OSError):
            where = os.path.dirname(os.path.realpath(exc.filename or "")) or "."
            exc = _BadFilters(f"cannot write {where}: {exc.strerror or one_line(exc)}")
        err.write(f"pubsift convert: {one_line(exc)}\n")
        return 2
    events, bad, *full = opened
    _warn_broken_readers("convert", err)
    summary = Summary()
    try:
        for item in read(*sources, limits=limits, models=models, seen=summary.saw):
            if not isinstance(item, Quarantined):
                try:
                    events.fh.write(_event_line(item, models))
                except Exception as exc:
                    item = Quarantined(
                        item.source,
                        item.position,
                        "invalid-event",
                        f"the model cannot write the event (dump_event: "
                        f"{type(exc).__name__}: {one_line(exc)[:300]})",
                        "",
                        item.model,
                    )
            if isinstance(item, Quarantined):
                bad.fh.write(json.dumps(item.to_json(), ensure_ascii=False) + "\n")
            summary.add(item)
        for f in full:
            f.fh.write(json.dumps(summary.to_json(), indent=1, ensure_ascii=False) + "\n")
            f.commit()
        events.commit()
        bad.commit()
    except BaseException:
        for f in opened:
            f.discard()
        raise
    _print_summary(summary, report, "standard output" if args.out == "-" else args.out, quarantine)
    return 1 if summary.quarantined else 0


def _beside(path: str, suffix: str) -> str:
    """``out.jsonl`` -> ``out.quarantine.jsonl`` (the suffix replaces a ``.jsonl``)."""
    stem = path[: -len(".jsonl")] if path.lower().endswith(".jsonl") else path
    return stem + suffix


#: source lines ``convert`` prints at most (``--summary FILE.json`` has them all)
SUMMARY_SOURCES = 20


def _print_summary(summary: Any, out: IO[str], events_path: str, quarantine_path: str) -> None:
    """Counts per source and per reason, one plain line each (grep-able). At most
    :data:`SUMMARY_SOURCES` sources, the ones with quarantined records first (most first),
    then those that gave no record, then the busiest; then how many more there are."""
    out.write("sources:\n")
    ranked = sorted(
        summary.sources.items(), key=lambda sc: (-sc[1].quarantined, sc[1].read != 0, -sc[1].read)
    )
    for source, c in ranked[:SUMMARY_SOURCES]:
        out.write(
            f"  {printable(source)}: {c.read} read, {c.events} events, "
            f"{c.quarantined} quarantined\n"
        )
    if len(ranked) > SUMMARY_SOURCES:
        out.write(f"  … and {len(ranked) - SUMMARY_SOURCES} more sources\n")
    if summary.reasons:
        out.write("reasons:\n")
        for reason, n in sorted(summary.reasons.items()):
            out.write(f"  {reason}: {n}\n")
    empty = sum(1 for c in summary.sources.values() if not c.read)
    out.write(
        f"total: {summary.read} read, {summary.events} events -> {events_path}, "
        f"{summary.quarantined} quarantined -> {quarantine_path}"
        + (f"; {empty} inputs gave no record" if empty else "")
        + "\n"
    )


def cmd_readers(args: argparse.Namespace, console: Console) -> int:
    """The readers by format name (installed and broken); exit 1 when one is broken."""
    from pubsift.adapters.readers import broken_readers, readers

    out = console.file
    rows = [
        {"name": name, "extensions": list(r.extensions), "model": r.default_model, "status": "ok"}
        for name, r in sorted(readers().items())
    ]
    broken = broken_readers()
    rows += [
        {"name": name, "extensions": [], "model": "", "status": f"BROKEN: {exc.reason}"}
        for name, exc in sorted(broken.items())
    ]
    if args.json:
        out.write(json.dumps(rows, indent=2) + "\n")
    else:
        for r in rows:
            out.write(
                f"{r['name']}: {' '.join(r['extensions']) or '-'} -> "
                f"{r['model'] or '-'} ({r['status']})\n"
            )
    return 1 if broken else 0


def cmd_demo(args: argparse.Namespace, console: Console) -> int:
    """The quote demo (:mod:`pubsift.experiments.demo`) on the bundled sample, or on the
    shared data folder named by ``--data DIR`` or the environment variable PUBSIFT_DATA."""
    from pubsift.experiments.demo import run_demo

    if args.data is not None:
        return run_demo(console, data_dir=args.data, origin="--data", err=sys.stderr)
    env = os.environ.get(DATA_ENV) or None
    return run_demo(console, data_dir=env, origin=DATA_ENV, err=sys.stderr)


#: the environment variable naming the shared data folder (``pubsift demo``)
DATA_ENV = "PUBSIFT_DATA"


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


def _models_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_models)


def _readers_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_readers)


def _match_arguments(p: argparse.ArgumentParser) -> None:
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


def _convert_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="files, directories, glob patterns, archives"
    )
    p.add_argument(
        "-m",
        "--model",
        default=None,
        help="filter model of the events (default: each reader's own)",
    )
    p.add_argument(
        "--out",
        required=True,
        metavar="FILE.jsonl",
        help="events, one JSON line each: model, source, position, event "
        "(- : standard output, then --quarantine is needed)",
    )
    p.add_argument(
        "--quarantine",
        metavar="FILE",
        help="quarantine records (default: FILE.quarantine.jsonl beside --out)",
    )
    p.add_argument(
        "--summary",
        metavar="FILE.json",
        help="the full counts per source and reason as JSON (the printed "
        f"summary lists at most {SUMMARY_SOURCES} sources)",
    )
    input_options(p)
    p.set_defaults(func=cmd_convert)


def _demo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data",
        default=None,
        metavar="DIR",
        help=f"the shared data folder: read the full year of quotes from "
        f"DIR/quotes (default: ${DATA_ENV} if set, else the bundled sample, "
        f"examples/sample/quotes)",
    )
    p.set_defaults(func=cmd_demo)
    # typeshed types add_subparsers() as a plain _SubParsersAction whatever ``action`` is
    sub = cast(
        _LazySubcommands,
        p.add_subparsers(dest="demo", action=_LazySubcommands, metavar="{network}"),
    )
    for name, (text, target) in DEMOS.items():
        sub.add_lazy(name, text, target)


def _experiment_arguments(p: argparse.ArgumentParser) -> None:
    sub = _lazy_subparsers(p, "experiment")
    for name, (text, target) in EXPERIMENTS.items():
        sub.add_lazy(name, text, target)


#: The subcommands: name -> (one-line help, ``module:function`` adding its arguments and
#: its handler ``func(args, console) -> int``). A subcommand's module is imported only
#: when that subcommand runs (or shows its help): ``pubsift --help`` imports none of them.
COMMANDS: dict[str, tuple[str, str]] = {
    "models": ("list installed filter models", f"{__name__}:_models_arguments"),
    "readers": ("list installed file readers", f"{__name__}:_readers_arguments"),
    "match": ("match events against filters", f"{__name__}:_match_arguments"),
    "convert": (
        "read files into events (JSON lines) and a quarantine file",
        f"{__name__}:_convert_arguments",
    ),
    "ingest": (
        "convert files and archives into an event store (Spark)",
        "pubsift.adapters.spark.cli:add_ingest_arguments",
    ),
    "route": (
        "route files or an event store to subscribers (Spark)",
        "pubsift.adapters.spark.cli:add_route_arguments",
    ),
    "experiment": (
        "reproduce published experiments (Mühl 2002, ch. 6)",
        f"{__name__}:_experiment_arguments",
    ),
    "demo": (
        "the quote demo (S&P 500 quotes through the records index); demo network: brokers",
        f"{__name__}:_demo_arguments",
    ),
    "broker": (
        "run a broker daemon (clients and neighbour brokers over TCP)",
        "pubsift.adapters.broker.cli:add_broker_arguments",
    ),
    "sub": (
        "subscribe at a broker and print matching events as JSON lines",
        "pubsift.adapters.broker.cli:add_sub_arguments",
    ),
    "pub": (
        "publish JSON lines or files to a broker",
        "pubsift.adapters.broker.cli:add_pub_arguments",
    ),
    "publish-feed": (
        "poll RSS/RDF/Atom feeds and publish each new item once to a broker",
        "pubsift.adapters.broker.cli:add_publish_feed_arguments",
    ),
    "history": (
        "record what a broker network delivers and replay it to late subscribers",
        "pubsift.adapters.broker.history_cli:add_history_arguments",
    ),
    "stats": (
        "show a broker's status (table sizes, links, rates) in the terminal; --watch",
        "pubsift.adapters.broker.cli:add_stats_arguments",
    ),
}
#: ``pubsift demo NAME`` (``pubsift demo`` alone: the quote demo), the same way.
DEMOS: dict[str, tuple[str, str]] = {
    "network": (
        "broker processes on 127.0.0.1, feed/records/concepts publishers, subscribers",
        "pubsift.experiments.network_demo:add_arguments",
    ),
}
#: ``pubsift experiment NAME``, the same way.
EXPERIMENTS: dict[str, tuple[str, str]] = {
    "rebeca": (
        "reproduce Mühl's routing experiments (routing-table sizes, filter-forwarding "
        "overhead, locality)",
        "pubsift.experiments.rebeca_cli:add_arguments",
    ),
}


if TYPE_CHECKING:
    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]
else:  # not subscriptable at run time
    _SubParsers = argparse._SubParsersAction


class _LazySubcommands(_SubParsers):
    """Subcommands whose arguments are added when one of them is chosen: the parser of
    each is made up front with its name and help only, and its ``module:function`` is
    imported and called just before the chosen one parses the rest of the line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: dict[str, str] = {}

    def add_lazy(self, name: str, text: str, target: str) -> argparse.ArgumentParser:
        self._pending[name] = target
        return self.add_parser(name, help=text, description=text)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        target = self._pending.pop(values[0], None)
        if target is not None:
            import importlib

            module, _, function = target.partition(":")
            getattr(importlib.import_module(module), function)(self.choices[values[0]])
        super().__call__(parser, namespace, values, option_string)


def _lazy_subparsers(p: argparse.ArgumentParser, dest: str) -> _LazySubcommands:
    # typeshed types add_subparsers() as a plain _SubParsersAction whatever ``action`` is
    return cast(
        _LazySubcommands, p.add_subparsers(dest=dest, required=True, action=_LazySubcommands)
    )


def build_parser() -> argparse.ArgumentParser:
    from pubsift import __version__

    p = argparse.ArgumentParser(prog="pubsift", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"pubsift {__version__}")
    sub = _lazy_subparsers(p, "command")
    for name, (text, target) in COMMANDS.items():
        sub.add_lazy(name, text, target)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run its handler, ``args.func(args, console)``: results
    on ``console`` (rich, standard output), problems and progress on standard error."""
    from rich.console import Console

    args = build_parser().parse_args(argv)
    try:
        status: int = args.func(args, Console())
        return status
    except (PubsiftError, OSError) as exc:
        if isinstance(exc, BrokenPipeError):  # the reader went away (| head): stop quietly
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115  stdout until exit
            return 1
        sys.stderr.write(f"pubsift {args.command}: {one_line(exc)}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write(f"pubsift {args.command}: interrupted\n")
        return 130


if __name__ == "__main__":
    sys.exit(main())
