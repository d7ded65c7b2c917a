"""``pubsift convert``: files, directories, globs and archives read into events (JSON
lines: model, source, position, event) and a quarantine file, with counts per source and
per reason (docs/adapters.md).

Exit 0 when every record became an event, 1 when something was quarantined, 2 on a usage
error, then with nothing written: every output is written under a temporary name and
renamed into place at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import IO, TYPE_CHECKING, Any

from pubsift.adapters.options import (
    OptionError,
    checked_sources,
    existing,
    input_options,
    limits_option,
    warn_broken_readers,
)
from pubsift.core.errors import one_line, printable
from pubsift.core.model import FilterModel
from pubsift.core.registry import load_model

if TYPE_CHECKING:
    from rich.console import Console


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
            raise OptionError(
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
    from pubsift.adapters.readers.source import SourceError
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
            raise OptionError(
                "--quarantine and --summary name files (standard output is for --out -)"
            )
        names = [
            os.path.realpath(p)
            for p in (args.out, quarantine, args.summary or "")
            if p and p != "-"
        ]
        if len(set(names)) != len(names):
            raise OptionError("--out, --quarantine and --summary name the same file")
        models: dict[str, FilterModel] = {}
        if args.model is not None:
            models[args.model] = load_model(args.model)
        existing(args.paths)
        sources = checked_sources(args.paths, args, args.model, models)
        limits = limits_option(args.limit or [])
        for path in (args.out, quarantine) + ((args.summary,) if args.summary else ()):
            # one at a time: those made before a failure are discarded below
            opened.append(_AtomicFile(path, out))  # noqa: PERF401
    except (OptionError, SourceError, OSError) as exc:
        for f in opened:
            f.discard()
        if isinstance(exc, OSError):
            where = os.path.dirname(os.path.realpath(exc.filename or "")) or "."
            exc = OptionError(f"cannot write {where}: {exc.strerror or one_line(exc)}")
        err.write(f"pubsift convert: {one_line(exc)}\n")
        return 2
    events, bad, *full = opened
    warn_broken_readers("convert", err)
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


def add_convert_arguments(p: argparse.ArgumentParser) -> None:
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
