"""The job's summary on the console: the warnings first, then tables per source, model,
reason, subscriber, and the wall time per stage.

Each table lists the problems first (sources with quarantined records, the most first, then
sources that gave no record; subscribers that received nothing), then the largest; what
is left out is only ever the smaller rest, counted in one line (summary.json and
report.html hold every row). On a terminal the tables fit its width; written to a file or a
pipe, a table is as wide as its rows (no line wraps inside a cell, so each row stays one
line for grep).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

#: rows of each kind (problems, largest) in a table at most
SHOWN = 20


def show(summary: Mapping[str, Any], console: Console) -> None:
    """Print ``summary`` (the job's summary.json) on ``console``."""
    console.print()
    for w in summary.get("warnings", []):
        console.print(f"[yellow]warning:[/] {w}", soft_wrap=not console.is_terminal)
    if "sources" in summary:
        _sources(summary, console)
    for key, title in (("models", "events per model"), ("reasons", "quarantined per reason")):
        if summary.get(key):
            t = Table(title=title)
            t.add_column(key[:-1])
            t.add_column("count", justify="right")
            for k, v in sorted(summary[key].items(), key=lambda kv: -kv[1]):
                t.add_row(k, str(v))
            _print(console, t)
    if "subscribers" in summary:
        _subscribers(summary, console)
    secs = summary.get("seconds", {})
    if secs:
        console.print(
            "wall time: " + ", ".join(f"{k} {v:.1f} s" for k, v in secs.items()),
            soft_wrap=not console.is_terminal,
        )
    if "report" in summary:
        console.print(f"report: {summary['report']}", soft_wrap=not console.is_terminal)


def ranked_sources(
    sources: Mapping[str, Mapping[str, int]], shown: int = SHOWN
) -> tuple[list[str], list[str]]:
    """(shown, left out): the sources with problems (the most quarantined first, then those
    that gave no record), at most ``shown``, then the ``shown`` largest of the others."""
    problems = sorted(
        (s for s, c in sources.items() if c["quarantined"] or not c["read"]),
        key=lambda s: (-sources[s]["quarantined"], sources[s]["read"] != 0, s),
    )
    clean = sorted(
        (s for s, c in sources.items() if c["quarantined"] == 0 and c["read"]),
        key=lambda s: (-sources[s]["read"], s),
    )
    chosen = problems[:shown] + clean[:shown]
    picked = set(chosen)
    return chosen, [s for s in problems + clean if s not in picked]


def _sources(summary: Mapping[str, Any], console: Console) -> None:
    sources = summary["sources"]
    t = Table(
        title=f"read: {summary.get('read', 0)} records, "
        f"{summary.get('events', 0)} events, "
        f"{summary.get('quarantined', 0)} quarantined"
        + (f" (store {summary['store']})" if "store" in summary else "")
    )
    t.add_column("source", overflow="fold")
    for col in ("read", "events", "quarantined"):
        t.add_column(col, justify="right")
    shown, rest = ranked_sources(sources)
    for src in shown:
        c = sources[src]
        t.add_row(src, str(c["read"]), str(c["events"]), str(c["quarantined"]))
    if rest:
        left = [sources[s] for s in rest]
        t.add_row(
            f"… {len(rest)} smaller sources (summary.json)",
            str(sum(c["read"] for c in left)),
            str(sum(c["events"] for c in left)),
            str(sum(c["quarantined"] for c in left)),
        )
    _print(console, t)


def _subscribers(summary: Mapping[str, Any], console: Console) -> None:
    subs: Mapping[str, int] = summary["subscribers"]
    t = Table(title=f"deliveries: {summary['deliveries']}")
    t.add_column("subscriber", overflow="fold")
    t.add_column("deliveries", justify="right")
    nothing = sorted(s for s, n in subs.items() if n == 0)
    largest = sorted((s for s, n in subs.items() if n), key=lambda s: (-subs[s], s))
    for sid in nothing[:SHOWN] + largest[:SHOWN]:
        t.add_row(sid, str(subs[sid]))
    rest: Sequence[str] = nothing[SHOWN:] + largest[SHOWN:]
    if rest:
        counts = [subs[s] for s in rest]
        t.add_row(
            f"… {len(rest)} more, {min(counts)} to {max(counts)} each (summary.json)",
            str(sum(counts)),
        )
    _print(console, t)


def _print(console: Console, table: Table) -> None:
    """A table at the terminal's width, or (a file, a pipe) as wide as its widest row."""
    if console.is_terminal:
        console.print(table)
        return
    width = console.measure(table, options=console.options.update_width(100_000)).maximum
    kept = console.width
    console.width = max(width, kept)
    try:
        console.print(table, crop=False)
    finally:
        console.width = kept
