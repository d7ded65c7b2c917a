"""Matching throughput of the XML index (shared evaluation over the factorization tree)
against a loop of compiled lxml XPath objects (docs/xml.md, "Workloads and benchmarks"; bench/harness.py's rules).

    .venv/bin/python bench/xml_match.py [--sizes 1000,10000,100000] [--docs 500]
                                        [--baseline-seconds 20] [--quick] [--json PATH]

Subscriptions: the first N distinct path queries of YFilter's
``queries/queries-153928-d.txt.gz`` (../shared/data/yfilter); documents: the 500 NITF
documents of ``xmldocs-500``, parsed beforehand (parsing is not part of matching). For
each N, every document is matched by ``XmlIndex.match``, the document's navigation index built inside the timed
region, and by the baseline, a Python loop calling each subscription's compiled
``lxml.etree.XPath`` on the document. The index's path automaton caches its states per
distinct tag path; no timed run profits from having seen its own documents: every run
starts with an empty automaton ("cold", the headline ratio), and in a second figure on
the baseline's k documents, with the automaton built by matching the *other* documents
("warm": a router in steady state that has never seen these ones). On a large tree the
index matches through the path automaton over arrays (``path_arrays``), which it builds
once matching has paid for it and keeps until the subscriptions change, as it keeps the
tree: the table shows which automaton ran, and the arrays' build time (not in any timed
run, like the adds).
The baseline is slow, so it runs on the first k documents (at most 50), k chosen so that
one run lasts about ``--baseline-seconds`` (at least 3); **the ratio divides its time by
the index's time on the very same k documents**, and its answers are compared with the
index's on every one of them. The index's figure over all documents is shown beside it.
Timing by ``bench/harness.py``: CPU time (``time.process_time``), a warm-up run, the
median of ``--repeats`` runs, the spread printed. Exit status 1 if an answer differs.
"""

from __future__ import annotations

import gzip
import sys
import time
from pathlib import Path

from harness import Bench, ratio, time_it
from lxml import etree
from pubsift.models.xml import XmlModel, parse_document
from pubsift.models.xml.path_arrays import PathArrays
from rich.console import Console
from rich.table import Table

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "yfilter"


def _ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x]


def _fresh(index, events: list, automaton: bool = True) -> None:
    """The documents' navigation indexes are built inside the timed run, and (unless
    ``automaton`` is False) the index's lazily built path automaton, whose states are
    cached per distinct tag path, starts empty."""
    for e in events:
        e._doc = None
    if automaton:
        index._dfa = None


def main(argv: list[str] | None = None) -> int:
    bench = Bench("xml_match", __doc__, argv)
    ap = bench.parser
    ap.add_argument(
        "--sizes",
        type=_ints,
        default=None,
        help="numbers of subscriptions (default 1000,10000,100000; quick: 1000,10000)",
    )
    ap.add_argument("--docs", type=int, default=500)
    ap.add_argument(
        "--baseline-seconds",
        type=float,
        default=None,
        help="length of one baseline run (default 20; quick: 3)",
    )
    args = bench.parse()
    sizes = args.sizes or ([1000, 10000] if args.quick else [1000, 10000, 100000])
    budget = args.baseline_seconds or (3.0 if args.quick else 20.0)
    console = Console(width=160)
    qfile = DATA / "queries" / "queries-153928-d.txt.gz"
    if not qfile.is_file():
        return bench.skip(f"YFilter data not found under {DATA.resolve()}")
    with gzip.open(qfile, "rt") as fh:
        queries = list(dict.fromkeys(q.strip() for q in fh if q.strip()))
    raws = [p.read_bytes() for p in sorted((DATA / "xmldocs-500").glob("*.xml"))][: args.docs]
    model = XmlModel()
    table = Table(
        title=f"XML matching: {len(raws)} YFilter NITF documents, CPU time, median "
        f"of {args.repeats} (±half the spread)"
    )
    for col in (
        "subscriptions",
        "parse (ms/sub)",
        "add (ms/sub)",
        "|T(R)|",
        "automaton",
        "arrays build (ms)",
        "index docs/s (all)",
        "index docs/s (k)",
        "lxml loop docs/s (k)",
        "k",
        "speed-up (same k)",
        "warm docs/s (k)",
        "warm speed-up",
        "hits/doc",
    ):
        table.add_column(col, justify="right")
    ok = True
    for n in sizes:
        qs = queries[:n]
        t = time.process_time()
        fs = [model.parse_filter(q) for q in qs]
        t_parse = (time.process_time() - t) / n * 1e3
        ix = model.new_index()
        t = time.process_time()
        for i, f in enumerate(fs):
            ix.add(f, i)
        t_add = (time.process_time() - t) / n * 1e3
        events = [parse_document(r) for r in raws]
        got = [ix.match(e) for e in events]
        match = ix.match
        t_all = time_it(
            lambda: [match(e) for e in events],
            len(events),
            f"{len(events)} documents",
            args.repeats,
            min_seconds=0.2,
            setup=lambda: _fresh(ix, events),
        )
        compiled = [etree.XPath(q) for q in qs]
        trees = [e.tree() for e in events[:50]]
        t0, seen = time.process_time(), 0  # warm-up of the baseline, answers compared
        while seen < len(trees) and (seen < 3 or time.process_time() - t0 < budget):
            want = {i for i, x in enumerate(compiled) if x(trees[seen])}
            if want != got[seen]:
                ok = False
                console.print(f"[red]answers differ on document {seen}[/red]")
            seen += 1
        k_trees, k_events = trees[:seen], events[:seen]
        inputs = f"first {seen} documents"
        t_lx = time_it(
            lambda: [[x(tr) for x in compiled] for tr in k_trees],
            seen,
            inputs,
            args.repeats,
            warmup=0,
        )
        others = events[seen:]

        def warm_on_others() -> None:
            _fresh(ix, events)
            for e in others:
                match(e)
            _fresh(ix, k_events, automaton=False)  # keep what the others built

        t_ix = time_it(
            lambda: [match(e) for e in k_events],
            seen,
            inputs,
            args.repeats,
            min_seconds=0.2,
            setup=lambda: _fresh(ix, k_events),
        )
        t_warm = time_it(
            lambda: [match(e) for e in k_events], seen, inputs, args.repeats, setup=warm_on_others
        )
        r, r_warm = ratio(t_ix, t_lx), ratio(t_warm, t_lx)
        hits = sum(map(len, got)) / len(got)
        # the automaton the runs used; building the arrays is not in any timed run (the
        # index builds them once between changes): its time is shown beside add's
        engine = type(ix._automaton()).__name__
        t = time.process_time()
        if engine == "ArrayPathAutomaton":
            PathArrays(ix.tree)
        t_arrays = (time.process_time() - t) * 1e3 if engine == "ArrayPathAutomaton" else 0.0
        table.add_row(
            f"{n:,}",
            f"{t_parse:.3f}",
            f"{t_add:.3f}",
            f"{ix.tree.nodes:,}",
            "arrays" if t_arrays else "objects",
            f"{t_arrays:,.0f}" if t_arrays else "–",
            t_all.fmt_rate(1),
            t_ix.fmt_rate(1),
            t_lx.fmt_rate(2),
            f"{seen}",
            f"{r:.1f}×",
            t_warm.fmt_rate(1),
            f"{r_warm:.1f}×",
            f"{hits:.1f}",
        )
        bench.row(
            subs=n,
            parse_ms=t_parse,
            add_ms=t_add,
            tree_nodes=ix.tree.nodes,
            automaton=engine,
            arrays_build_ms=t_arrays,
            index_all=t_all,
            index=t_ix,
            lxml=t_lx,
            ratio=r,
            index_warm=t_warm,
            ratio_warm=r_warm,
            hits_per_doc=hits,
        )
        bench.headline(
            f"XML shared matching vs compiled lxml XPath loop, {n // 1000}k YFilter queries",
            f"{r:.1f}× on the same {seen} NITF documents, cold "
            f"({r_warm:.1f}× warm on the others; {t_all.rate:,.0f} docs/s over "
            f"all {len(events)})",
        )
    console.print(table)
    return bench.finish(0 if ok else 1)


if __name__ == "__main__":
    sys.exit(main())
