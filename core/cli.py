"""The ``pubsift`` command line.

``pubsift models``   lists the installed filter models and what they provide;
``pubsift match``    matches events (JSON lines) against filters;
``pubsift run``      the main job on the embedded default (see README);
``pubsift experiment rebeca``  Mühl's routing experiments (ch. 6) reproduced.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from pubsift.core.cli_input import InputError, one_line, read_lines, strict_json
from pubsift.core.errors import printable, FilterSyntaxError, PluginError, PubsiftError
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


class _BadFilters(Exception):
    """The filters cannot be used (a usage error, exit 2); the message names file and line."""


def _filter_sources(specs: Sequence[str], files: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(label, spec) of command-line specs and filter files (one per line; ``#`` comments)."""
    for i, s in enumerate(specs):
        yield f"arg{i + 1}", s
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
        excerpt = printable(exc.text[max(line_start, exc.position - 20):exc.position + 20])
        where.append(f"at line {exc.line}, column {exc.column}, near {excerpt!r}")
    head = one_line(FilterSyntaxError(exc.message))
    return f"{label}: {head}" + (f" ({'; '.join(where)})" if where else "")


def _read_filters(model: FilterModel, specs: Sequence[str], files: Sequence[str]
                  ) -> list[tuple[str, Any]]:
    """(label, filter) pairs; a line starting with ``{`` is a JSON form, parsed strictly
    (duplicate keys refused, as the models refuse them). Raises _BadFilters."""
    out: list[tuple[str, Any]] = []
    for label, spec in _filter_sources(specs, files):
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


def _internal(model: FilterModel, hook: str, exc: BaseException) -> str:
    """A model hook broke the contract (raised something other than a PubsiftError)."""
    return (f"internal error in model {model.name!r} ({hook} raised "
            f"{type(exc).__name__}: {one_line(exc)[:300]}); this is a bug in the model")


def cmd_match(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Exit 0; 1 when event lines were skipped (each reported with file and line); 2 when
    the filters or the events file cannot be used."""
    model = load_model(args.model)
    try:
        filters = _read_filters(model, args.filter or [], args.filters or [])
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
    except _BadFilters as exc:
        err.write(f"pubsift match: {exc}\n")
        return 2
    order = {label: i for i, (label, _) in enumerate(filters)}
    n_events = n_bad = n_deliveries = 0

    def skip(where: str, why: str) -> None:
        nonlocal n_bad
        err.write(f"{where}: {why}; skipped\n")
        n_bad += 1

    try:
        for line in read_lines(args.events, "events"):
            if line.text is None:
                skip(line.where, line.problem)
                continue
            try:
                raw = strict_json(line.text)
            except ValueError as exc:
                skip(line.where, str(exc))
                continue
            hook = "parse_event"
            try:
                event = model.parse_event(raw)
                hook = "index.match"
                hits = sorted(index.match(event), key=order.__getitem__)
            except PubsiftError as exc:
                skip(line.where, one_line(exc))
                continue
            except Exception as exc:
                skip(line.where, _internal(model, hook, exc))
                continue
            n_events += 1
            n_deliveries += len(hits)
            if hits or args.all:
                out.write(json.dumps({"event": line.where, "matches": hits}) + "\n")
    except InputError as exc:
        err.write(f"pubsift match: {exc}\n")
        return 2
    err.write(f"{n_events} events, {len(filters)} filters, {n_deliveries} matches"
              + (f", {n_bad} bad lines skipped" if n_bad else "") + "\n")
    return 1 if n_bad else 0


def cmd_run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from pubsift.models.records.demo import run_demo

    return run_demo(out, data_dir=args.data, err=err)


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
            return cmd_run(args, sys.stdout, sys.stderr)
        if args.command == "experiment":
            from pubsift.core.experiments import rebeca

            return rebeca.run(args)
    except (PubsiftError, OSError) as exc:
        if isinstance(exc, BrokenPipeError):  # the reader went away (| head): stop quietly
            sys.stdout = open(os.devnull, "w")
            return 1
        sys.stderr.write(f"pubsift {args.command}: {one_line(exc)}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write(f"pubsift {args.command}: interrupted\n")
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
