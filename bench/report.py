"""What the run report costs a Spark job (``out/report.html``, adapters/spark/report.py):
the report of a synthetic run against the baseline of writing that run's summary.json, both
measured in this run on the same summary.

    .venv/bin/python bench/report.py [--sources 2000] [--subscribers 10000]
                                     [--quarantined 20000] [--quick] [--json PATH]

The summary has ``--sources`` sources, ``--subscribers`` subscribers and eight quarantine
reasons over a quarantine dataset of ``--quarantined`` records (Parquet, written once by
pyarrow, untimed): the report reads three examples of each reason back from it and draws
six plots. matplotlib is imported before timing (the job imports it in a thread while
Spark starts). CPU time of one core, median of ``--repeats``.
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

from harness import Bench, time_it
from pubsift.adapters.spark import report
from pubsift.adapters.spark.store import write_json

REASONS = [
    "csv-field-count",
    "json-syntax",
    "xml-syntax",
    "unreadable",
    "unknown-format",
    "too-large",
    "invalid-event",
    "concept-enrichment",
]


def summary(sources: int, subscribers: int, quarantined: int, seed: int) -> dict:
    rng = random.Random(seed)
    per_source = {}
    for i in range(sources):
        read = rng.randint(1, 5000)
        bad = min(read, rng.choice([0, 0, 0, 1, 3]))
        per_source[f"/data/archive/part-{i // 100:03d}/quotes-{i:05d}.csv.gz"] = {
            "read": read,
            "events": read - bad,
            "quarantined": bad,
        }
    subs = {f"subscriber-{i:05d}": int(rng.paretovariate(1.2)) - 1 for i in range(subscribers)}
    reasons = {r: quarantined // len(REASONS) for r in REASONS}
    return {
        "read": sum(c["read"] for c in per_source.values()),
        "events": sum(c["events"] for c in per_source.values()),
        "quarantined": quarantined,
        "sources": per_source,
        "models": {"records": 10**6, "xml": 10**4, "concepts": 10**3},
        "reasons": reasons,
        "layout": "sorted",
        "deliveries": sum(subs.values()),
        "subscribers": subs,
        "seconds": {"start": 8.0, "list": 0.1, "convert": 40.0, "route": 30.0, "total": 78.1},
        "warnings": [],
    }


def write_quarantine(folder: Path, n: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    rows = {
        "source": [f"/data/archive/quotes-{i:05d}.csv.gz" for i in range(n)],
        "position": list(range(n)),
        "reason": [REASONS[i % len(REASONS)] for i in range(n)],
        "message": [f"row {i}: expected 7 fields, got 3" for i in range(n)],
        "excerpt": ["2017-01-07,1,2"] * n,
        "model": ["records"] * n,
    }
    pq.write_table(pa.table(rows), folder / "part-00000.parquet")


def main(argv: list[str] | None = None) -> int:
    bench = Bench("report", __doc__, argv)
    bench.parser.add_argument("--sources", type=int, default=None, help="default 2000, quick 200")
    bench.parser.add_argument(
        "--subscribers", type=int, default=None, help="default 10000, quick 2000"
    )
    bench.parser.add_argument(
        "--quarantined", type=int, default=None, help="default 20000, quick 2000"
    )
    bench.parser.add_argument("--seed", type=int, default=0)
    args = bench.parse()
    n_src = args.sources or (200 if args.quick else 2000)
    n_sub = args.subscribers or (2000 if args.quick else 10000)
    n_q = args.quarantined or (2000 if args.quick else 20000)
    run = summary(n_src, n_sub, n_q, args.seed)
    settings = {"master": "local[*]", "output format": "parquet", "layout": "sorted"}
    inputs = f"a run of {n_src:,} sources, {n_sub:,} subscribers, {n_q:,} quarantined"
    report.warm()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_quarantine(root / "quarantine", n_q)
        t_json = time_it(
            lambda: write_json(str(root / "summary.json"), run), 1, inputs, args.repeats
        )
        t_report = time_it(
            lambda: report.write(
                str(root / "report.html"), run, settings, str(root / "quarantine"), "parquet"
            ),
            1,
            inputs,
            args.repeats,
        )
        size = (root / "report.html").stat().st_size
        json_size = (root / "summary.json").stat().st_size
    times = t_report.median / t_json.median
    print(f"{inputs}, CPU time of one core, median of {args.repeats}:")
    print(f"  summary.json written (the baseline): {t_json.median * 1000:.1f} ms, {json_size:,} B")
    print(f"  report.html written: {t_report.median * 1000:.0f} ms, {size:,} B ({times:.0f}x)")
    bench.row(
        sources=n_src,
        subscribers=n_sub,
        quarantined=n_q,
        summary_json=t_json,
        report=t_report,
        report_bytes=size,
    )
    bench.headline(
        f"run report ({inputs})",
        f"{t_report.median:.2f} s, {times:.0f}x writing summary.json",
    )
    return bench.finish()


if __name__ == "__main__":
    sys.exit(main())
