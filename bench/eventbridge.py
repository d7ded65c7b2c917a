"""EventBridge patterns on citylots2-shaped GeoJSON events: event-ruler's benchmark rule
sets, events/s per core from JSON text, against ``json.loads`` on the same texts (docs/records-syntax.md §2).

    .venv/bin/python bench/eventbridge.py [--events 20000] [--batch 5000] [--seed 0]
                                          [--sets EXACT,WILDCARD,...] [--quick] [--json PATH]

**Rules.** The rule sets of aws/event-ruler's ``CL2Benchmark``
(``src/test/software/amazon/event/ruler/Benchmarks.java`` at commit 337e8d99: EXACT lines
43-69, WILDCARD 72-98, PREFIX 101-127, PREFIX_EQUALS_IGNORE_CASE 130-156, SUFFIX 159-185,
SUFFIX_EQUALS_IGNORE_CASE 188-214, EQUALS_IGNORE_CASE 217-243, COMPLEX_ARRAYS 246-284,
NUMERIC 287-325, ANYTHING_BUT 328-354, ANYTHING_BUT_IGNORE_CASE 357-383,
ANYTHING_BUT_PREFIX 387-413, ANYTHING_BUT_SUFFIX 416-442, ANYTHING_BUT_WILDCARD 445-471;
PARTIAL_COMBO and COMBO are unions of them, lines 786-815), transcribed pattern by pattern
below; ../shared/data/eventruler/PROVENANCE.md lists them with their expected counts on
the real citylots2 (which is not available here: the counts below are this generator's).
A rule the records model refuses is reported as refused, and the set is timed without it.

**Events.** citylots2 itself (213,068 San Francisco lot features, ~900 bytes each) is
too large to be had here, so :func:`citylot` generates features of its shape, seeded:

    {"type": "Feature",
     "properties": {"MAPBLKLOT": "1430022", "BLKLOT": "1430022", "BLOCK_NUM": "1430",
                    "LOT_NUM": "022", "FROM_ST": "441", "TO_ST": "445",
                    "STREET": "FULTON", "ST_TYPE": "ST", "ODD_EVEN": "O"},
     "geometry": {"type": "Polygon",
                  "coordinates": [{"x": -122.4291636, "y": 37.7299002, "z": 0}, ...],
                  "firstCoordinates": {"x": -122.4291636, "y": 37.7299002, "z": 0}}}

Blocks and lots are drawn so that lots repeat (several features per lot, as in the
city's data; EXACT's five lots at the rates citylots2 holds them), a few MAPBLKLOTs are
street codes (``VACSTWIL``); streets come from a list
of San Francisco street names with skewed weights; about a fifth of the features have
``null`` address fields (FROM_ST, TO_ST, STREET, ST_TYPE, ODD_EVEN: lots without an
address), and about 1 in 1,000 is a ``MultiPolygon``; a polygon has 4 to 16 corners of
``{"x", "y", "z"}`` objects around a point of the city (``geometry.coordinates``: an
array of objects, which COMPLEX_ARRAYS matches inside; ``firstCoordinates``: the first
corner, which NUMERIC matches).

**Figures**, per rule set, CPU time of this process (one core), median of ``--repeats``
after a warm-up (``bench/harness.py``), all on the same texts:

* *json.loads*: the yardstick, ``json.loads(text)`` per event;
* *per event*: ``index.match(model.parse_event(text))`` per text, and its two stages:
  *parse* (``model.parse_event(text)``: the JSON scan and the records event) and
  *match* (``index.match(event)`` on events parsed beforehand); where the index has a
  selective entry point that reads only the fields its filters name (docs/records-syntax.md §5,
  the event side: ``RecordsIndex.match_wire``), it is timed too (*selective*, and its parse stage
  ``parse_wire``: *sel. parse*);
* *batch*: ``index.match_wire_batch`` over pyarrow string arrays of ``--batch`` texts
  (made before timing).

The batch path is warmed over five passes of the texts before it is timed: past the first
time its chooser tries Arrow's reading again (``wire_batches.Choice``: after 65,536 rows,
then each time after enough rows that a losing try costs about 1 % of them), so the timed
runs show its steady state. The events parsed for *match* are dropped once it is timed, so that *selective* and *batch*
run on the heap the yardstick ran on (the texts, and here the answers), not one whose full
garbage collections also walk 20,000 parsed events.

Each rate is also given as a multiple of *json.loads*, with the goals it was built to: per event
at least 3× on the simple sets and 1× on COMBO and COMPLEX_ARRAYS; batch at least 5× on
the simple sets (event-ruler measured 3.4-6.9× and 0.6-1.0× of the same yardstick). Every
path's answers are compared with the per-event answers (exit status 1 if any differs).
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from typing import Any

import pyarrow as pa
from harness import Bench, Timing, ratio, time_it
from pubsift.core.errors import EventError, FilterSyntaxError
from pubsift.models.records import RecordsModel
from rich.console import Console
from rich.table import Table

# --------------------------------------------------------------------------------------
# the rule sets of Benchmarks.java (CL2Benchmark)


def _props(field: str, *leaves: Any) -> list[dict]:
    return [{"properties": {field: [leaf]}} for leaf in leaves]


def _geo(field: str, *leaves: Any) -> list[dict]:
    return [{"geometry": {field: [leaf]}} for leaf in leaves]


def _coords(key: str, kind: str | None, leaf: dict) -> dict:
    geometry: dict[str, Any] = {key: {leaf["axis"]: [{"numeric": leaf["numeric"]}]}}
    if kind is not None:
        geometry = {"type": [kind], **geometry}
    return {"geometry": geometry}


def _numeric_set(key: str) -> list[dict]:
    """COMPLEX_ARRAYS (key ``coordinates``) and NUMERIC (``firstCoordinates``)."""
    return [
        _coords(key, "Polygon", {"axis": "x", "numeric": ["=", -122.42916360922355]}),
        _coords(
            key,
            "MultiPolygon",
            {"axis": "y", "numeric": ["=", 37.729900216217324]}
            if key == "coordinates"
            else {"axis": "z", "numeric": ["=", 0]},
        ),
        _coords(key, None, {"axis": "x", "numeric": ["<", -122.41600944012424]}),
        _coords(key, None, {"axis": "x", "numeric": [">", -122.41600944012424]}),
        _coords(
            key, None, {"axis": "x", "numeric": [">", -122.46471267081272, "<", -122.4063085128395]}
        ),
    ]


def _but(field: str, where: str, v: Any) -> dict:
    return {where: {field: [{"anything-but": v}]}}


RULES: dict[str, list[dict]] = {
    "EXACT": _props("MAPBLKLOT", "1430022", "2607117", "2607218", "3745012", "VACSTWIL"),
    "WILDCARD": _props(
        "MAPBLKLOT", *({"wildcard": w} for w in ("143*", "2*0*1*7", "*218", "3*5*2", "VA*IL"))
    ),
    "PREFIX": _props("STREET", *({"prefix": p} for p in ("AC", "BL", "DR", "FU", "RH"))),
    "PREFIX_EQUALS_IGNORE_CASE": _props(
        "STREET",
        *({"prefix": {"equals-ignore-case": p}} for p in ("Ac", "bL", "dR", "Fu", "rH")),
    ),
    "SUFFIX": _props("STREET", *({"suffix": s} for s in ("ON", "KE", "MM", "ING", "GO"))),
    "SUFFIX_EQUALS_IGNORE_CASE": _props(
        "STREET",
        *({"suffix": {"equals-ignore-case": s}} for s in ("oN", "Ke", "mM", "InG", "gO")),
    ),
    "EQUALS_IGNORE_CASE": [
        *_props(
            "STREET",
            *({"equals-ignore-case": s} for s in ("jefferson", "bEaCh", "HyDe", "CHESTNUT")),
        ),
        *_props("ST_TYPE", {"equals-ignore-case": "st"}),
    ],
    "NUMERIC": _numeric_set("firstCoordinates"),
    "ANYTHING_BUT": [
        _but("STREET", "properties", ["FULTON"]),
        _but("STREET", "properties", ["MASON"]),
        _but("ST_TYPE", "properties", ["ST"]),
        _but("type", "geometry", ["Polygon"]),
        _but("FROM_ST", "properties", ["441"]),
    ],
    "ANYTHING_BUT_IGNORE_CASE": [
        _but("STREET", "properties", {"equals-ignore-case": ["Fulton"]}),
        _but("STREET", "properties", {"equals-ignore-case": ["Mason"]}),
        _but("ST_TYPE", "properties", {"equals-ignore-case": ["st"]}),
        _but("type", "geometry", {"equals-ignore-case": ["polygon"]}),
        _but("FROM_ST", "properties", {"equals-ignore-case": ["441"]}),
    ],
    "ANYTHING_BUT_PREFIX": [
        _but("STREET", "properties", {"prefix": "FULTO"}),
        _but("STREET", "properties", {"prefix": "MASO"}),
        _but("ST_TYPE", "properties", {"prefix": "S"}),
        _but("type", "geometry", {"prefix": "Poly"}),
        _but("FROM_ST", "properties", {"prefix": "44"}),
    ],
    "ANYTHING_BUT_SUFFIX": [
        _but("STREET", "properties", {"suffix": "ULTON"}),
        _but("STREET", "properties", {"suffix": "ASON"}),
        _but("ST_TYPE", "properties", {"suffix": "T"}),
        _but("type", "geometry", {"suffix": "olygon"}),
        _but("FROM_ST", "properties", {"suffix": "41"}),
    ],
    "ANYTHING_BUT_WILDCARD": _props(
        "MAPBLKLOT",
        *({"anything-but": {"wildcard": w}} for w in ("143*", "2*0*1*7", "*218", "3*5*2", "VA*IL")),
    ),
    "COMPLEX_ARRAYS": _numeric_set("coordinates"),
}
_PARTIAL = [
    "NUMERIC",
    "EXACT",
    "PREFIX",
    "ANYTHING_BUT",
    "ANYTHING_BUT_IGNORE_CASE",
    "ANYTHING_BUT_PREFIX",
    "ANYTHING_BUT_SUFFIX",
    "ANYTHING_BUT_WILDCARD",
]
RULES["PARTIAL_COMBO"] = [r for s in _PARTIAL for r in RULES[s]]
RULES["COMBO"] = RULES["PARTIAL_COMBO"] + RULES["COMPLEX_ARRAYS"]
#: the sets whose goal is 1× json.loads per event (the others: 3×, batch 5×)
HARD = ("COMBO", "COMPLEX_ARRAYS")

# --------------------------------------------------------------------------------------
# citylots2-shaped events

STREETS = [
    ("UNKNOWN", 20),
    ("MISSION", 9),
    ("FULTON", 4),
    ("MASON", 3),
    ("JACKSON", 4),
    ("WASHINGTON", 4),
    ("CALIFORNIA", 5),
    ("HYDE", 3),
    ("BEACH", 1),
    ("JEFFERSON", 1),
    ("CHESTNUT", 2),
    ("IRVING", 4),
    ("KING", 1),
    ("SAN DIEGO", 1),
    ("LAKE", 3),
    ("DRUMM", 1),
    ("BLAKE", 1),
    ("BLUXOME", 1),
    ("ACTON", 1),
    ("RHODE ISLAND", 1),
    ("FOLSOM", 4),
    ("HARRISON", 4),
    ("VALENCIA", 3),
    ("18TH", 5),
    ("24TH", 5),
    ("NORIEGA", 4),
    ("TARAVAL", 4),
]
ST_TYPES = [("ST", 55), ("AVE", 25), ("BLVD", 3), ("WAY", 5), ("TER", 4), ("PL", 3), ("DR", 5)]


def _pick(rnd: random.Random, weighted: list[tuple[str, int]]) -> str:
    return rnd.choices([w for w, _ in weighted], [n for _, n in weighted])[0]


#: EXACT's lots, at the rates citylots2 holds them (Benchmarks.java's EXACT_MATCHES of
#: 213,068 features)
HOT_LOTS = [("1430022", 1), ("2607117", 101), ("2607218", 35), ("3745012", 655), ("VACSTWIL", 1)]
CITYLOTS = 213_068


def citylot(rnd: random.Random) -> dict[str, Any]:
    """One feature of citylots2's shape (see the module docstring)."""
    u = rnd.random() * CITYLOTS
    hot = None
    for lot, count in HOT_LOTS:
        if u < count:
            hot = lot
            break
        u -= count
    if hot is not None:
        blklot = hot
        block, lot = blklot[:4], blklot[4:]
    elif rnd.random() < 0.002:
        blklot = rnd.choice(["VACSTBRY", "VACSTMSN", "VACSTWAL"])
        block, lot = blklot[:4], blklot[4:]
    else:
        block = f"{int(rnd.paretovariate(0.9) * 100) % 7600:04d}"
        lot = f"{int(rnd.paretovariate(1.2)) % 300:03d}"
        blklot = block + lot
    addressed = rnd.random() > 0.22
    lo = rnd.randrange(1, 4000)
    props = {
        "MAPBLKLOT": blklot,
        "BLKLOT": blklot,
        "BLOCK_NUM": block,
        "LOT_NUM": lot,
        "FROM_ST": str(lo) if addressed else None,
        "TO_ST": str(lo + rnd.randrange(0, 40)) if addressed else None,
        "STREET": _pick(rnd, STREETS) if addressed else None,
        "ST_TYPE": _pick(rnd, ST_TYPES) if addressed else None,
        "ODD_EVEN": ("O" if lo % 2 else "E") if addressed else None,
    }
    cx, cy = rnd.uniform(-122.514, -122.357), rnd.uniform(37.708, 37.833)
    corners = [
        {"x": cx + rnd.uniform(-3e-4, 3e-4), "y": cy + rnd.uniform(-3e-4, 3e-4), "z": 0}
        for _ in range(rnd.randrange(4, 17))
    ]
    if rnd.random() < 0.002:
        corners[0]["x"] = -122.42916360922355
    geometry = {
        "type": "MultiPolygon" if rnd.random() < 0.001 else "Polygon",
        "coordinates": corners,
        "firstCoordinates": dict(corners[0]),
    }
    return {"type": "Feature", "properties": props, "geometry": geometry}


def texts(n: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    return [json.dumps(citylot(rnd)) for _ in range(n)]


# --------------------------------------------------------------------------------------


def _selective(index: Any) -> Any:
    """The index's entry points that read only the fields its filters name
    (``RecordsIndex.parse_wire`` / ``match_wire``), if it has them."""
    parse, match = getattr(index, "parse_wire", None), getattr(index, "match_wire", None)
    return (parse, match) if callable(parse) and callable(match) else (None, None)


def run(
    bench: Bench,
    sets: list[str],
    n: int,
    batch: int,
    seed: int,
    repeats: int,
    console: Console,
) -> int:
    model = RecordsModel()
    wires = texts(n, seed)
    size = sum(map(len, wires)) / len(wires)
    inputs = f"{n:,} citylots2-shaped texts (seed {seed}, {size:.0f} bytes each)"
    loads = json.loads
    t_json = time_it(lambda: [loads(w) for w in wires], n, inputs, repeats)

    def dropped() -> None:
        for w in wires:
            loads(w)

    # the yardstick as first measured keeps every result (as the paths timed here
    # keep their answers); dropping each one at once spares the collector its growing heap
    t_dropped = time_it(dropped, n, inputs, repeats)
    console.print(
        f"{inputs}: json.loads {t_json.fmt_rate()} events/s "
        f"({n * size / t_json.median / 1e6:,.0f} MB/s), the yardstick of the × columns; "
        f"with each result dropped at once {t_dropped.fmt_rate()} events/s"
    )
    arrays = [pa.array(wires[i : i + batch], pa.string()) for i in range(0, n, batch)]
    table = Table(
        title=f"event-ruler's CL2Benchmark rule sets, {n:,} events, CPU time of one core, "
        f"median of {repeats} (±half the spread); ×: multiple of json.loads on the same texts"
    )
    for col in (
        "set",
        "rules",
        "refused",
        "matches",
        "per event",
        "×",
        "parse",
        "match",
        "selective",
        "sel. ×",
        "sel. parse",
        "batch",
        "×",
        "goal",
    ):
        table.add_column(col, justify="right", no_wrap=True)
    failures = 0
    for name in sets:
        index = model.new_index()
        refused: list[str] = []
        for i, rule in enumerate(RULES[name]):
            try:
                for f in model.parse_filters(rule):
                    index.add(f, i)
            except FilterSyntaxError as e:
                refused.append(f"rule {i}: {e}")
        for r in refused:
            console.print(f"[red]{name}: refused {r}[/red]")
        try:
            events = [model.parse_event(w) for w in wires]
        except EventError as e:
            console.print(f"[red]{name}: events refused: {e}[/red]")
            table.add_row(name, str(len(RULES[name])), str(len(refused)), "events refused")
            bench.row(set=name, rules=len(RULES[name]), refused=refused, events_refused=str(e))
            failures += 1
            continue
        match, parse = index.match, model.parse_event
        answers = [match(e) for e in events]
        counts = Counter(k for a in answers for k in a)
        t_event = time_it(lambda: [match(parse(w)) for w in wires], n, inputs, repeats)
        t_parse = time_it(lambda: [parse(w) for w in wires], n, inputs, repeats)
        t_match = time_it(lambda: [match(e) for e in events], n, inputs, repeats)
        # the parsed events (hundreds of thousands of objects) are not needed any more:
        # dropped, so that what follows runs on the heap json.loads was timed on (the
        # texts, the answers), not one whose full collections walk them too
        events = []
        sel_parse, sel = _selective(index)
        t_sel: Timing | None = None
        t_sel_parse: Timing | None = None
        if sel is not None:
            if [sel(w) for w in wires] != answers:
                failures += 1
                console.print(f"[red]{name}: index.match_wire differs from per event[/red]")
            t_sel = time_it(lambda: [sel(w) for w in wires], n, inputs, repeats)
            t_sel_parse = time_it(lambda: [sel_parse(w) for w in wires], n, inputs, repeats)
        got, base = [], 0
        for arr in arrays:
            rows, keys = index.match_wire_batch(arr)
            got += zip((rows + base).tolist(), keys.tolist())
            base += len(arr)
        if sorted(got) != sorted((i, k) for i, a in enumerate(answers) for k in a):
            failures += 1
            console.print(f"[red]{name}: match_wire_batch differs from per event[/red]")
        # warmed over 5 x the texts: past the chooser's first try of its other way (its
        # steady state: a try every half million rows or more, about 1 % of the time)
        t_batch = time_it(
            lambda: [index.match_wire_batch(a) for a in arrays],
            n,
            inputs,
            repeats,
            warmup=5,
            min_seconds=0.2,
        )
        best = t_sel if t_sel is not None and t_sel.median < t_event.median else t_event
        # (the per-event figure against the goals: the faster entry point)
        x_event, x_batch = ratio(best, t_json), ratio(t_batch, t_json)
        want_event, want_batch = (1.0, None) if name in HARD else (3.0, 5.0)
        met = x_event >= want_event and (want_batch is None or x_batch >= want_batch)
        goal = f"≥{want_event:.0f}×" + ("" if want_batch is None else f", batch ≥{want_batch:.0f}×")
        table.add_row(
            name,
            str(len(RULES[name])),
            str(len(refused)),
            ",".join(str(counts.get(i, 0)) for i in range(len(RULES[name])))
            if len(RULES[name]) <= 5
            else f"{sum(counts.values()):,} in all",
            t_event.fmt_rate(),
            f"{ratio(t_event, t_json):.2f}",
            t_parse.fmt_rate(),
            t_match.fmt_rate(),
            "-" if t_sel is None else t_sel.fmt_rate(),
            "-" if t_sel is None else f"{ratio(t_sel, t_json):.2f}",
            "-" if t_sel_parse is None else t_sel_parse.fmt_rate(),
            t_batch.fmt_rate(),
            f"{x_batch:.2f}",
            f"{goal} {'met' if met else '[red]not met[/red]'}",
        )
        bench.row(
            set=name,
            rules=len(RULES[name]),
            refused=refused,
            matches=[counts.get(i, 0) for i in range(len(RULES[name]))],
            json_loads=t_json,
            json_loads_dropped=t_dropped,
            per_event=t_event,
            parse=t_parse,
            match=t_match,
            selective=t_sel,
            selective_parse=t_sel_parse,
            batch=t_batch,
            per_event_x_json=ratio(t_event, t_json),
            best_event_x_json=x_event,
            batch_x_json=x_batch,
            goal_met=met,
        )
        if name in ("EXACT", "ANYTHING_BUT", "COMBO", "COMPLEX_ARRAYS"):
            bench.headline(
                f"EventBridge {name} rules on citylots2-shaped JSON texts",
                f"{best.rate:,.0f} events/s per event ({x_event:.2f}× json.loads), "
                f"batch {t_batch.rate:,.0f} ({x_batch:.2f}×)",
            )
    console.print(table)
    if failures:
        console.print(f"[red]{failures} set(s) refused events or gave differing answers[/red]")
    return bench.finish(1 if failures else 0)


def main(argv: list[str] | None = None) -> int:
    bench = Bench("eventbridge", __doc__, argv)
    ap = bench.parser
    ap.add_argument("--events", type=int, default=None, help="events (default 20000; quick 3000)")
    ap.add_argument("--batch", type=int, default=5000, help="texts per Arrow batch")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sets", default=",".join(RULES), help="comma-separated rule sets")
    args = bench.parse()
    n = args.events or (3000 if args.quick else 20000)
    sets = [s for s in args.sets.split(",") if s]
    unknown = [s for s in sets if s not in RULES]
    if unknown or n < 1 or args.batch < 1:
        ap.error(f"unknown sets {unknown} (known: {', '.join(RULES)})" if unknown else "sizes > 0")
    console = Console(width=max(Console().width, 200))
    return run(bench, sets, n, args.batch, args.seed, args.repeats, console)


if __name__ == "__main__":
    sys.exit(main())
