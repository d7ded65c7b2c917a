"""``pubsift models`` and ``pubsift readers``: the installed filter models (through the
registry, :mod:`pubsift.core.registry`) and file readers (entry-point group
pubsift.readers), each with what it provides; exit 1 when one is broken."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from pubsift.core.errors import PluginError
from pubsift.core.model import FilterModel
from pubsift.core.registry import installed_models, load_model

if TYPE_CHECKING:
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


def cmd_readers(args: argparse.Namespace, console: Console) -> int:
    """The readers by format name (installed and broken); exit 1 when one is broken."""
    from pubsift.adapters.readers.registry import broken_readers, readers

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


def add_models_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_models)


def add_readers_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_readers)
