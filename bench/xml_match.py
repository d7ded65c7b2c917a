"""Matching throughput of the XML index (shared evaluation over the factorization tree)
against a loop of compiled lxml XPath objects (issue 4, §5).

    .venv/bin/python bench/xml_match.py [--sizes 1000,10000,100000] [--docs 500]
                                        [--baseline-seconds 20]

Subscriptions: the first N distinct path queries of YFilter's
``queries/queries-153928-d.txt.gz`` (../shared/data/yfilter); documents: the 500 NITF
documents of ``xmldocs-500``. For each N, every document is matched by ``XmlIndex.match``
(the document's navigation index is built inside the timed region), and by the baseline,
a Python loop calling each subscription's compiled ``lxml.etree.XPath`` on the document.
The baseline is slow, so it runs on the first documents (at most 50, parsed beforehand)
until ``--baseline-seconds`` have passed (at least 3); its answers are compared with the index's on every document it sees.
Times are CPU time of this process (``time.process_time``). Exit status 1 if an answer
differs.
"""
from __future__ import annotations

import argparse
import gzip
import sys
import time
from pathlib import Path

from lxml import etree
from rich.console import Console
from rich.table import Table

from pubsift.models.xml import XmlModel, parse_document

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "yfilter"


def _ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=_ints, default=[1000, 10000, 100000])
    ap.add_argument("--docs", type=int, default=500)
    ap.add_argument("--baseline-seconds", type=float, default=20.0)
    args = ap.parse_args(argv)
    console = Console(width=150)
    qfile = DATA / "queries" / "queries-153928-d.txt.gz"
    if not qfile.is_file():
        console.print(f"[red]YFilter data not found under {DATA}[/red]")
        return 2
    with gzip.open(qfile, "rt") as fh:
        queries = list(dict.fromkeys(q.strip() for q in fh if q.strip()))
    raws = [p.read_bytes() for p in sorted((DATA / "xmldocs-500").glob("*.xml"))][:args.docs]
    model = XmlModel()
    table = Table(title=f"XML matching: {len(raws)} YFilter NITF documents, CPU time")
    for col in ("subscriptions", "parse (ms/sub)", "add (ms/sub)", "|T(R)|", "index docs/s",
                "lxml loop docs/s", "(docs)", "speed-up", "hits/doc"):
        table.add_column(col, justify="right")
    ok = True
    for n in args.sizes:
        qs = queries[:n]
        t = time.process_time()
        fs = [model.parse_filter(q) for q in qs]
        t_parse = (time.process_time() - t) / n * 1e3
        ix = model.new_index()
        t = time.process_time()
        for i, f in enumerate(fs):
            ix.add(f, i)
        t_add = (time.process_time() - t) / n * 1e3
        events = [parse_document(r) for r in raws]  # parsing is not part of matching
        t = time.process_time()
        got = [ix.match(e) for e in events]
        t_ix = time.process_time() - t
        compiled = [etree.XPath(q) for q in qs]
        trees = [parse_document(r).tree() for r in raws[:50]]
        t = time.process_time()
        seen = 0
        while seen < min(len(events), len(trees)) and (seen < 3 or time.process_time() - t
                                      < args.baseline_seconds):
            tree = trees[seen]
            want = {i for i, x in enumerate(compiled) if x(tree)}
            if want != got[seen]:
                ok = False
                console.print(f"[red]answers differ on document {seen}[/red]")
            seen += 1
        t_lx = time.process_time() - t
        ours, base = len(events) / t_ix, seen / t_lx
        table.add_row(f"{n:,}", f"{t_parse:.3f}", f"{t_add:.3f}", f"{ix.tree.nodes:,}",
                      f"{ours:,.1f}", f"{base:,.2f}", f"{seen}", f"{ours / base:.1f}×",
                      f"{sum(map(len, got)) / len(got):.1f}")
    console.print(table)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
