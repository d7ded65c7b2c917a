"""XSEARCH against the pairwise "Linear" scan, and the size of the factorization tree
(Chand & Felber 2004, §5, Tables 1 and 2; docs/xml.md).

    .venv/bin/python bench/xml_covering.py [--sizes 1000,2000,5000,10000] [--queries 1000]
                                           [--linear-queries 50] [--table2 1000,...,100000]
                                           [--seed 1] [--dtd PATH] [--quick] [--json PATH]

Workload: tree patterns generated over the NITF DTD (NITF 2.5 as shipped with YFilter,
../shared/data/yfilter/nitf-2-5.dtd; ``--dtd`` for another) with h = 10, p* = 0.1,
p// = 0.05, pλ = 0.1, θ = 1 (``pubsift.models.xml.generator``): one pool of distinct
patterns in the order generated. Table 1: the first ``--queries`` patterns are the queries,
the search set of size |R| the |R| patterns after them. Table 2: the first |R| patterns, as
Chand & Felber's sets of unique subscriptions.

Table 1: for each |R|, the mean time per query of XSEARCH in covered mode (the patterns of
R a query covers, ``FactorizationTree.covered``) and cover mode (the patterns covering it,
``FactorizationTree.covering``), and of Linear (``covers`` against every pattern of R, the
pairwise homomorphism test of ``pubsift.models.xml.covering``, the model's ``covers``:
``covers(q, g)`` for covered mode, ``covers(g, q)`` for cover mode) on the first
``--linear-queries`` queries (50 by default), all in this run; the ratios divide Linear's
time by XSEARCH's on those same queries (``bench/harness.py``: warm-up, median of
``--repeats``, spread printed). Times are CPU time of this process
(``time.process_time``), with the pool and each tree moved out of the cyclic GC's reach
(``gc.freeze``) before timing. Every Linear answer is compared with XSEARCH's; exit status 1 if
one differs. Table 2: Σ|s| and |T(R)| (pattern nodes, the artificial roots excluded).
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

from harness import Bench, ratio, time_it
from pubsift.models.xml.covering import covers
from pubsift.models.xml.factorization import FactorizationTree
from pubsift.models.xml.generator import CHAND_FELBER, PatternGenerator
from pubsift.models.xml.index import bits
from rich.console import Console
from rich.table import Table

DTD = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "yfilter" / "nitf-2-5.dtd"
PAPER_T1 = {1000: (0.23, 0.28), 2000: (0.45, 0.53), 5000: (1.17, 1.30), 10000: (2.41, 2.57)}
PAPER_T2 = {
    1000: (7.6, 1.9),
    2000: (15.8, 3.6),
    5000: (42.1, 8.2),
    10000: (88.1, 15.1),
    20000: (183.3, 28.1),
    50000: (481.8, 62.1),
    100000: (998.6, 112.6),
}


def _ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x]


def main(argv: list[str] | None = None) -> int:
    bench = Bench("xml_covering", __doc__, argv)
    ap = bench.parser
    ap.add_argument(
        "--sizes", type=_ints, default=None, help="default 1000,2000,5000,10000; quick: 1000,10000"
    )
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--linear-queries", type=int, default=None, help="default 50; quick: 20")
    ap.add_argument(
        "--table2", type=_ints, default=None, help="default 1000,...,100000; quick: 1000,10000"
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dtd", type=Path, default=DTD, help="the DTD (default: NITF 2.5)")
    args = bench.parse()
    q = args.quick
    args.sizes = args.sizes or ([1000, 10000] if q else [1000, 2000, 5000, 10000])
    args.table2 = args.table2 or (
        [1000, 10000] if q else [1000, 2000, 5000, 10000, 20000, 50000, 100000]
    )
    args.linear_queries = args.linear_queries or (20 if q else 50)
    console = Console(width=150)
    if not args.dtd.is_file():
        return bench.skip(f"NITF DTD not found at {args.dtd.resolve()}")
    gen = PatternGenerator(args.dtd, CHAND_FELBER, seed=args.seed)
    biggest = max(max(args.sizes) + args.queries, max(args.table2))
    t0 = time.process_time()
    pool = gen.patterns(biggest)
    console.print(
        f"generated {len(pool):,} distinct patterns over {args.dtd.name} in "
        f"{time.process_time() - t0:.1f} s CPU (h=10, p*=0.1, p//=0.05, pλ=0.1, θ=1)"
    )
    queries, search = pool[: args.queries], pool[args.queries :]

    t1 = Table(
        title="Table 1: mean time per query (ms; XSEARCH over all queries, Linear and "
        "the ratios on the first --linear-queries, both sides); median of "
        f"{args.repeats}, ±half the spread; paper: C++ on a 1.5 GHz Pentium IV"
    )
    for col in (
        "|R|",
        "XSEARCH⊇ covered",
        "paper",
        "XSEARCH⊆ cover",
        "paper",
        "Linear⊇",
        "Linear⊆",
        "Linear/XSEARCH ⊇",
        "⊆",
        "hits/query ⊇ | ⊆",
    ):
        t1.add_column(col, justify="right")
    ok = True
    for n in args.sizes:
        R = search[:n]
        tree = FactorizationTree()
        for i, f in enumerate(R):
            tree.add(i, f.root)
        # the pool and the tree live for the whole run: keep the cyclic GC from rescanning
        # them inside whichever timed block happens to cross its threshold
        gc.collect()
        gc.freeze()
        covered = [tree.covered(q.root) for q in queries]
        covering = [tree.covering(q.root) for q in queries]
        lq = queries[: args.linear_queries]
        reps = args.repeats
        every = f"{len(queries)} queries"
        same = f"first {len(lq)} queries"
        x_all = time_it(lambda: [tree.covered(q.root) for q in queries], len(queries), every, reps)
        xv_all = time_it(
            lambda: [tree.covering(q.root) for q in queries], len(queries), every, reps
        )
        x_cd_t = time_it(
            lambda: [tree.covered(q.root) for q in lq], len(lq), same, reps, min_seconds=0.1
        )
        x_cv_t = time_it(
            lambda: [tree.covering(q.root) for q in lq], len(lq), same, reps, min_seconds=0.1
        )
        lin_cd = [[i for i, g in enumerate(R) if covers(q, g)] for q in lq]
        lin_cv = [[i for i, g in enumerate(R) if covers(g, q)] for q in lq]
        l_cd_t = time_it(
            lambda: [[i for i, g in enumerate(R) if covers(q, g)] for q in lq],
            len(lq),
            same,
            reps,
            warmup=0,
        )
        l_cv_t = time_it(
            lambda: [[i for i, g in enumerate(R) if covers(g, q)] for q in lq],
            len(lq),
            same,
            reps,
            warmup=0,
        )
        x_cd, x_cv = x_all.per_item * 1e3, xv_all.per_item * 1e3
        r_cd, r_cv = ratio(x_cd_t, l_cd_t), ratio(x_cv_t, l_cv_t)
        for k in range(len(lq)):
            if bits(covered[k]) != lin_cd[k] or bits(covering[k]) != lin_cv[k]:
                ok = False
                console.print(f"[red]answers differ for {lq[k].xpath()}[/red]")
        hits_cd = sum(m.bit_count() for m in covered) / len(queries)
        hits_cv = sum(m.bit_count() for m in covering) / len(queries)
        p_cd, p_cv = PAPER_T1.get(n, (None, None))
        t1.add_row(
            f"{n:,}",
            x_all.fmt_ms(3),
            f"{p_cd}" if p_cd else "-",
            xv_all.fmt_ms(3),
            f"{p_cv}" if p_cv else "-",
            l_cd_t.fmt_ms(2),
            l_cv_t.fmt_ms(2),
            f"{r_cd:.0f}×",
            f"{r_cv:.0f}×",
            f"{hits_cd:.1f} | {hits_cv:.1f}",
        )
        bench.row(
            table=1,
            patterns=n,
            xsearch_covered=x_all,
            xsearch_cover=xv_all,
            xsearch_covered_same=x_cd_t,
            xsearch_cover_same=x_cv_t,
            linear_covered=l_cd_t,
            linear_cover=l_cv_t,
            ratio_covered=r_cd,
            ratio_cover=r_cv,
            hits_covered=hits_cd,
            hits_cover=hits_cv,
        )
        bench.headline(
            f"XSEARCH vs pairwise Linear, {n // 1000}k NITF patterns",
            f"covered {x_cd:.2f} ms ({r_cd:.0f}×), cover {x_cv:.2f} ms ({r_cv:.0f}×) per query",
        )
    console.print(t1)

    t2 = Table(title="Table 2: space, thousands of nodes (the first |R| distinct patterns)")
    for col in ("|R|", "Σ|s|", "|T(R)|", "ratio", "paper Σ|s|", "paper |T(R)|", "paper ratio"):
        t2.add_column(col, justify="right")
    tree = FactorizationTree()
    total = 0
    done = 0
    for n in sorted(args.table2):
        for i in range(done, n):
            tree.add(i, pool[i].root)
            total += pool[i].size
        done = n
        ps, pt = PAPER_T2.get(n, (None, None))
        bench.row(
            table=2,
            patterns=n,
            pattern_nodes=total,
            tree_nodes=tree.nodes,
            paper_pattern_nodes=ps and ps * 1e3,
            paper_tree_nodes=pt and pt * 1e3,
        )
        t2.add_row(
            f"{n:,}",
            f"{total / 1e3:.1f}",
            f"{tree.nodes / 1e3:.1f}",
            f"{total / tree.nodes:.1f}",
            f"{ps}" if ps else "-",
            f"{pt}" if pt else "-",
            f"{ps / pt:.1f}" if ps else "-",
        )
    console.print(t2)
    if not ok:
        console.print("[red]XSEARCH and Linear disagree[/red]")
    return bench.finish(0 if ok else 1)


if __name__ == "__main__":
    sys.exit(main())
