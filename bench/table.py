"""One table from the JSON figures of the benchmarks (what ``make bench`` writes).

    python bench/table.py bench/results/*.json --out bench/results.md [--readme README.md]
                          [--before earlier/*.json --before-note "..."]

Each JSON file is one script's ``--json`` output (``bench/harness.py``). The table lists,
per headline figure, the command that produced it, what it compares and the figure; the
machine (CPU count, Python) and date come from the files. With ``--readme``, the table
between the ``<!-- bench:begin -->`` and ``<!-- bench:end -->`` lines of that file is
replaced by this one (nothing else in the file changes).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def before_after(docs: list[dict], before: list[dict]) -> str:
    """Each headline next to the same headline of an earlier run (say, of the main branch
    with the same scripts in the same session)."""
    old = {(d["bench"], h["what"]): h["figure"] for d in before for h in d.get("headlines", ())}
    lines = ["| what | before | after |", "|---|---|---|"]
    lines += [
        f"| {h['what']} | {old.get((d['bench'], h['what']), '-')} | {h['figure']} |"
        for d in docs
        for h in d.get("headlines", ())
    ]
    return "\n".join(lines) + "\n"


def render(docs: list[dict]) -> str:
    machines: dict[tuple[str, str], set[str]] = {}  # (cpus, python) -> platforms (kernels)
    for d in docs:
        m = d["machine"]
        machines.setdefault((str(m["cpus"]), m["python"]), set()).add(m["platform"])
    dates = sorted(d["machine"]["date"] for d in docs)
    lines = []
    for (cpus, python), plats in sorted(machines.items()):
        lines.append(
            f"Measured by `make bench` ({dates[0]} to {dates[-1]}) on {cpus} CPUs, "
            f"Python {python}, {' or '.join(sorted(plats))}; CPU time of one process, median of the "
            "repeats after a warm-up, both sides of every ratio on the same inputs "
            "(`bench/harness.py`)."
        )
    lines += ["", "| command | what | figure |", "|---|---|---|"]
    for d in docs:
        if "skipped" in d:
            lines.append(f"| `{d['command']}` | skipped | {d['skipped']} |")
            continue
        status = "" if d.get("status", 0) == 0 else " **(answers differed)**"
        for h in d["headlines"]:
            lines.append(f"| `{d['command']}` | {h['what']} | {h['figure']}{status} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--readme", type=Path)
    ap.add_argument(
        "--before",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="an earlier run's JSON files: adds a before/after table to --out",
    )
    ap.add_argument(
        "--before-note", default="", help="one line saying what the earlier run measured"
    )
    args = ap.parse_args(argv)
    docs = [json.loads(p.read_text()) for p in args.files]
    table = render(docs)
    text = "# Benchmark figures\n\n" + table
    if args.before:
        before = [json.loads(p.read_text()) for p in args.before]
        text += (
            "\n## Before and after\n\n"
            + (args.before_note + "\n\n" if args.before_note else "")
            + before_after(docs, before)
        )
    args.out.write_text(text)
    print(table)
    if args.readme:
        text = args.readme.read_text()
        if BEGIN not in text or END not in text:
            print(f"{args.readme}: no {BEGIN} ... {END} block; not changed", file=sys.stderr)
            return 1
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        args.readme.write_text(head + BEGIN + "\n" + table + END + tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
