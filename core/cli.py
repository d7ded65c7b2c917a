"""The ``pubsift`` command line.

``pubsift models``   lists the installed filter models and what they provide;
``pubsift match``    matches events (JSON lines) against filters;
``pubsift run``      the main job on the embedded default (see README);
``pubsift experiment rebeca``  Mühl's routing experiments (ch. 6) reproduced.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from pubsift.core.errors import EventError, FilterSyntaxError, PluginError, PubsiftError
from pubsift.core.model import FilterModel
from pubsift.core.registry import installed_models, load_model

_OPTIONAL_HOOKS = ("identical", "overlaps", "merge", "parse_filters", "format_filter", "new_index")


def _provided_hooks(model: FilterModel) -> list[str]:
    """The optional hooks a model overrides (the others use the sound defaults)."""
    return [h for h in _OPTIONAL_HOOKS
            if getattr(type(model), h) is not getattr(FilterModel, h)]


def cmd_models(args: argparse.Namespace, out: TextIO) -> int:
    rows = []
    status = 0
    for info in installed_models():
        try:
            model = load_model(info.name)
        except PluginError as exc:
            rows.append((info.name, info.distribution or "?", info.version or "?",
                         f"BROKEN: {exc.reason}", "", ""))
            status = 1
            continue
        index = type(model.new_index()).__name__
        rows.append((info.name, info.distribution or "?", info.version or "?",
                     ", ".join(_provided_hooks(model)) or "required hooks only",
                     ", ".join(sorted(model.capabilities)) or "-", index))
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
    Console(file=out, width=max(120, 0)).print(table)
    return status


def _read_filters(model: FilterModel, specs: Sequence[str], files: Sequence[str],
                  err: TextIO) -> list[tuple[str, Any]]:
    """(label, filter) pairs from command-line specs and filter files (one per line;
    ``#`` comments; a line starting with ``{`` is a JSON form)."""
    out: list[tuple[str, Any]] = []
    sources: list[tuple[str, str]] = [(f"arg{i + 1}", s) for i, s in enumerate(specs)]
    for path in files:
        text = Path(path).read_text(encoding="utf-8")
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip() and not line.lstrip().startswith("#"):
                sources.append((f"{path}:{n}", line.strip()))
    for label, spec in sources:
        parsed: Any = spec
        if spec.startswith("{"):
            try:
                parsed = json.loads(spec)
            except json.JSONDecodeError as exc:
                raise FilterSyntaxError(f"{label}: invalid JSON filter: {exc.msg}", spec,
                                        exc.pos) from None
        try:
            fs = model.parse_filters(parsed)
        except FilterSyntaxError as exc:
            raise FilterSyntaxError(f"{label}: {exc.message}", exc.text, exc.position,
                                    exc.path) from None
        for j, f in enumerate(fs):
            out.append((label if len(fs) == 1 else f"{label}#{j + 1}", f))
    return out


def _event_lines(path: str | None) -> Iterator[tuple[str, str]]:
    stream = sys.stdin if path in (None, "-") else open(path, encoding="utf-8")
    name = "stdin" if path in (None, "-") else path
    try:
        for n, line in enumerate(stream, 1):
            if line.strip():
                yield f"{name}:{n}", line
    finally:
        if stream is not sys.stdin:
            stream.close()


def cmd_match(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    model = load_model(args.model)
    try:
        filters = _read_filters(model, args.filter or [], args.filters or [], err)
    except (FilterSyntaxError, OSError) as exc:
        err.write(f"pubsift match: {exc}\n")
        return 2
    if not filters:
        err.write("pubsift match: no filters given (use -f FILTER or --filters FILE)\n")
        return 2
    index = model.new_index()
    for label, f in filters:
        index.add(f, label)
    order = {label: i for i, (label, _) in enumerate(filters)}
    n_events = n_bad = n_deliveries = 0
    for where, line in _event_lines(args.events):
        try:
            raw = json.loads(line)
            event = model.parse_event(raw)
        except json.JSONDecodeError as exc:
            err.write(f"{where}: invalid JSON: {exc.msg} at column {exc.colno}; skipped\n")
            n_bad += 1
            continue
        except EventError as exc:
            err.write(f"{where}: {exc}; skipped\n")
            n_bad += 1
            continue
        n_events += 1
        hits = sorted(index.match(event), key=order.__getitem__)
        n_deliveries += len(hits)
        if hits or args.all:
            out.write(json.dumps({"event": where, "matches": hits}) + "\n")
    err.write(f"{n_events} events, {len(filters)} filters, {n_deliveries} matches"
              + (f", {n_bad} bad lines skipped" if n_bad else "") + "\n")
    return 1 if n_bad else 0


def cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    from pubsift.models.records.demo import run_demo

    return run_demo(out, data_dir=args.data)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pubsift", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("models", help="list installed filter models")
    m.add_argument("--json", action="store_true", help="machine-readable output")
    mt = sub.add_parser("match", help="match JSON-lines events against filters")
    mt.add_argument("events", nargs="?", default="-", help="JSON-lines file (default: stdin)")
    mt.add_argument("-m", "--model", default="records", help="filter model (default: records)")
    mt.add_argument("-f", "--filter", action="append", help="a filter (text or JSON form)")
    mt.add_argument("--filters", action="append", help="a file of filters, one per line")
    mt.add_argument("--all", action="store_true", help="also print events with no match")
    ex = sub.add_parser("experiment", help="reproduce the seeds' experiments")
    ex_sub = ex.add_subparsers(dest="experiment", required=True)
    from pubsift.core.experiments import rebeca

    rebeca.add_parser(ex_sub)
    r = sub.add_parser("run", help="the main job on the embedded default")
    r.add_argument("--data", default=None, help="the shared data folder (default: ../shared/data)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "models":
            return cmd_models(args, sys.stdout)
        if args.command == "match":
            return cmd_match(args, sys.stdout, sys.stderr)
        if args.command == "run":
            return cmd_run(args, sys.stdout)
        if args.command == "experiment":
            from pubsift.core.experiments import rebeca

            return rebeca.run(args)
    except PubsiftError as exc:
        sys.stderr.write(f"pubsift {args.command}: {exc}\n")
        return 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
