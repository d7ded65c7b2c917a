"""Reading speed of the adapters against the plainest baseline, in the same run (docs/adapters.md).

    .venv/bin/python bench/adapters.py [--quick] [--repeats N] [--json PATH]

* **CSV**: the S&P 500 quotes (``../shared/data/quotes/*.csv.gz``, 619,040 rows; ``--quick``
  reads the first 100,000) into records events. Ours: :func:`pubsift.adapters.read` (the CSV
  reader: delimiter sniffed, cells typed, empty cells absent, positions, every bad row
  quarantined, the records model's ``parse_event`` per row). Baseline: ``csv.DictReader``
  over ``gzip.open(path, "rt")`` plus ``RecordsModel().parse_event(row)`` per row (string
  values, no typing, no positions, no quarantine). Bar: ours within 1.5x the baseline's
  time. The row and event counts of both are printed and must be equal.
* **Feeds**: every feed of ``../shared/data/feeds`` (``feedparser/wellformed`` and
  ``real``; the ill-formed ones are not timed) into one event per item/entry through
  :func:`pubsift.adapters.read`, against lxml's parse with the hardened settings of
  ``models/xml/parsing.py`` plus ``xpath`` of the items (RSS ``//item``, RSS 1.0 and 0.90
  ``//rss:item``, Atom 1.0 and 0.3 ``//atom:entry``) per feed. The counts differ slightly,
  never in ours' favour: ours also splits RSS in the userland/Harvard namespaces and reads a
  non-feed document whole (one event), which the baseline's XPath does not count, and
  quarantines what it refuses (an entity declaration). The feeds are read 10 times per run
  (``--quick`` too: the corpus is small and a shorter run is mostly noise). Skipped, with a
  line saying so, when no ``xml`` reader is installed.

Timed by the shared harness (``bench/harness.py``): CPU time of this process, a warm-up
run, then the median of ``--repeats`` runs with the spread (max - min over the median);
``--json PATH`` writes the figures for ``make bench``'s table. Exit status 1 when the
counts of ours and the baseline differ on the CSV rows.
"""

from __future__ import annotations

import csv
import gzip
import itertools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from harness import Bench, ratio, time_it
from lxml import etree
from pubsift.adapters import Event, Input, Source, read, read_input
from pubsift.adapters.readers.inputs import inputs
from pubsift.adapters.readers.limits import DEFAULT_READ_LIMITS
from pubsift.adapters.readers.registry import broken_readers, readers
from pubsift.models.records import RecordsModel
from pubsift.models.xml import hardened_parser
from rich.console import Console
from rich.table import Table

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
QUICK_ROWS = 100_000
BAR = 1.5
FEED_NS = {
    "rss": "http://purl.org/rss/1.0/",
    "atom": "http://www.w3.org/2005/Atom",
    "rss090": "http://my.netscape.com/rdf/simple/0.9/",
    "atom03": "http://purl.org/atom/ns#",
}
#: the items of every feed kind the reader splits (outermost: items do not nest in feeds)
FEED_ITEMS = "//item | //rss:item | //rss090:item | //atom:entry | //atom03:entry"


def _compare(
    ours: Callable[[], int], base: Callable[[], int], repeats: int, inputs: str
) -> dict[str, Any]:
    """Both sides timed by the shared harness (warm-up, CPU time, median of ``repeats``)
    on the same inputs; the figure is ours' time over the baseline's."""
    counts: dict[str, int] = {}

    def counted(name: str, fn: Callable[[], int]) -> Callable[[], None]:
        def run() -> None:
            counts[name] = fn()

        return run

    t_base = time_it(counted("base", base), 1, inputs, repeats)
    t_ours = time_it(counted("ours", ours), 1, inputs, repeats)
    return {
        "ours_s": t_ours.median,
        "baseline_s": t_base.median,
        "ratio": 1 / ratio(t_ours, t_base),  # ours' time over the baseline's, same inputs
        "ours_per_s": counts["ours"] / t_ours.median,
        "baseline_per_s": counts["base"] / t_base.median,
        "ours_count": counts["ours"],
        "baseline_count": counts["base"],
        "ours_spread": t_ours.spread,
        "baseline_spread": t_base.spread,
        "repeats": repeats,
        "cpu_s": sum(t_ours.seconds) + sum(t_base.seconds),
        "inputs": inputs,
    }


# -- CSV ------------------------------------------------------------------------------------
def _decompressing_inputs(path: str) -> bool:
    """Whether the inputs layer decompresses ``.gz`` files (docs/adapters.md §2)."""
    for inp in inputs(Source(path), DEFAULT_READ_LIMITS):
        if not isinstance(inp, Input):
            return False
        with inp.open() as fh:
            return fh.read(2) != b"\x1f\x8b"
    return False


def csv_section(rows: int | None, repeats: int) -> dict[str, Any] | str:
    found = sorted((DATA / "quotes").glob("*.csv.gz"))
    if not found:
        return f"CSV: skipped, no quotes under {DATA / 'quotes'}"
    path = str(found[0])
    model = RecordsModel()
    models = {"records": model}
    if _decompressing_inputs(path):
        how = "pubsift.adapters.read(path)"

        def outcomes() -> Iterator[Any]:
            return read(path, models=models)
    else:
        how = "read_input(Input(path, gzip.open)) (the inputs layer does not decompress yet)"

        def outcomes() -> Iterator[Any]:
            return read_input(Input(path, Source(path), lambda: gzip.open(path)), models=models)

    def ours() -> int:
        n = 0
        for out in itertools.islice(outcomes(), rows):
            n += out.__class__ is Event
        return n

    def baseline() -> int:
        parse = model.parse_event
        n = 0
        with gzip.open(path, "rt", newline="") as fh:
            for row in itertools.islice(csv.DictReader(fh), rows):
                parse(row)
                n += 1
        return n

    result = _compare(ours, baseline, repeats, f"{rows or 'all'} rows of {Path(path).name}")
    result.update(file=Path(path).name, how=how, bar=BAR)
    return result


# -- feeds ----------------------------------------------------------------------------------
def feed_files() -> list[Path]:
    root = DATA / "feeds"
    return sorted(
        [*(root / "feedparser" / "wellformed").rglob("*.xml"), *(root / "real").rglob("*.xml")]
    )


def feeds_section(repeats: int, rounds: int) -> dict[str, Any] | str:
    if "xml" not in readers():
        why = broken_readers().get("xml")
        return (
            "feeds: skipped, no xml reader installed (pubsift.adapters.readers.xmlfiles.reader"
            + (f": {why}" if why else "")
            + ")"
        )
    files = feed_files()
    if not files:
        return f"feeds: skipped, no feeds under {DATA / 'feeds'}"
    paths = [str(p) for p in files]
    limits = DEFAULT_READ_LIMITS.xml

    def ours() -> int:
        n = 0
        for _ in range(rounds):
            for out in read(*paths):
                n += out.__class__ is Event
        return n

    def baseline() -> int:
        parser = hardened_parser(limits)  # the xml model's own settings
        n = 0
        for _ in range(rounds):
            for p in paths:
                try:
                    root = etree.parse(p, parser).getroot()
                except etree.XMLSyntaxError:
                    continue
                n += len(root.xpath(FEED_ITEMS, namespaces=FEED_NS))
        return n

    result = _compare(
        ours, baseline, repeats, f"{len(paths)} feeds of shared/data/feeds x {rounds}"
    )
    result.update(files=len(paths), rounds=rounds, bar=BAR)
    return result


# -- output ---------------------------------------------------------------------------------
def _table(title: str, unit: str, r: dict[str, Any]) -> Table:
    table = Table(title=title)
    for col in (
        f"ours {unit}/s",
        f"baseline {unit}/s",
        "time ratio",
        "bar",
        "ours s ±",
        "baseline s ±",
        "ours n",
        "baseline n",
        "CPU s",
    ):
        table.add_column(col, justify="right", no_wrap=True)
    verdict = "met" if r["ratio"] <= r["bar"] else "missed"
    table.add_row(
        f"{r['ours_per_s']:,.0f}",
        f"{r['baseline_per_s']:,.0f}",
        f"{r['ratio']:.2f}×",
        f"≤ {r['bar']}× ({verdict})",
        f"{r['ours_s']:.2f} (±{r['ours_spread']:.0%})",
        f"{r['baseline_s']:.2f} (±{r['baseline_spread']:.0%})",
        f"{r['ours_count']:,}",
        f"{r['baseline_count']:,}",
        f"{r['cpu_s']:.1f}",
    )
    return table


def main(argv: list[str] | None = None) -> int:
    bench = Bench("adapters", __doc__, argv)
    args = bench.parse()
    rows = QUICK_ROWS if args.quick else None
    status = 0
    console = Console(width=max(Console().width, 140))
    results = {}
    for name, run in (
        ("csv", lambda: csv_section(rows, args.repeats)),
        ("feeds", lambda: feeds_section(args.repeats, 10)),
    ):
        r = run()
        if isinstance(r, str):
            console.print(r)
            continue
        results[name] = r
        bench.row(section=name, **r)
        if name == "csv":
            if r["ours_count"] != r["baseline_count"]:
                status = 1
            console.print(f"{r['file']}: ours = {r['how']}")
            console.print(
                _table(
                    f"CSV quotes into records events, {r['repeats']} repeats (median)", "rows", r
                )
            )
        else:
            console.print(
                _table(
                    f"feed items, {r['files']} feeds read {r['rounds']} "
                    f"times per run, {r['repeats']} repeats (median)",
                    "items",
                    r,
                )
            )
    if not results:
        return bench.skip(f"no quotes nor feeds under {DATA}")
    if "csv" in results:
        r = results["csv"]
        bench.headline(
            f"CSV reader vs csv.DictReader + parse_event, {r['ours_count']:,} quote rows",
            f"{r['ours_per_s']:,.0f} rows/s, {r['ratio']:.2f}× the baseline's time (bar ≤ {BAR}×)",
        )
    if "feeds" in results:
        r = results["feeds"]
        bench.headline(
            f"feed reader (one event per item) vs lxml parse + item XPath, {r['files']} feeds",
            f"{r['ours_per_s']:,.0f} items/s, {r['ratio']:.2f}× the baseline's time (bar ≤ {BAR}×)",
        )
    if status == 1:
        console.print("[red]the CSV event count differs from the baseline's row count[/red]")
    return bench.finish(status)


if __name__ == "__main__":
    sys.exit(main())
