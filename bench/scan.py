"""Reading only what patterns use (issue 32, the event side): the candidate ways from an
event's JSON text to a records event holding only the fields an index's filters name,
measured in one run on the same citylots2-shaped texts (``bench/eventbridge.py``'s
generator, seeded), each with the index's answers compared to the full parse's.

    .venv/bin/python bench/scan.py [--events 10000] [--seed 0] [--sets EXACT,COMPLEX_ARRAYS]
                                   [--quick] [--json PATH]

Candidates, per text, CPU time of one core (median of ``--repeats``):

* *json.loads*: the yardstick (builds every value, checks nothing of the records model);
* *parse_event*: the full parse of the hooks (strict JSON, then the whole ``Record``);
* *orjson+prune*: ``orjson.loads`` (C, builds every value) and a walk in Python that keeps
  the selected paths, then ``Record.of`` of what is kept; it does not refuse a key given
  twice (orjson keeps the last), so it is not a complete candidate: a lower bound of the
  way;
* *orjson*: ``orjson.loads`` alone (what that way cannot go below);
* *scan*: ``RecordsIndex.parse_wire``, the compiled scanner of the walk's extension
  (``models/records/_scan.pxi``): skipped members are checked, not built;
* *scan+match*: ``RecordsIndex.match_wire`` (the scan and the index's match).

msgspec and simdjson are not installed here and not measured (neither refuses duplicate keys
without a scan of its own either).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import orjson
from eventbridge import RULES, texts
from harness import Bench, ratio, time_it
from pubsift.models.records import Record, RecordsModel
from rich.console import Console
from rich.table import Table


def _pruner(names: frozenset[str], prefixes: frozenset[str]) -> Any:
    """The walk of the orjson candidate: the selected members of a parsed object."""

    def obj(o: dict, pre: str) -> dict:
        out = {}
        for k, v in o.items():
            name = pre + k
            if name in names:
                out[k] = v
            elif name in prefixes:
                if type(v) is dict:
                    out[k] = obj(v, name + ".")
                elif type(v) is list:
                    out[k] = arr(v, name)
        return out

    def arr(a: list, name: str) -> list:
        out: list = []
        for x in a:
            if type(x) is dict:
                out.append(obj(x, name + "."))
            elif type(x) is list:
                out.append(arr(x, name))
        return out

    return lambda text: Record.of(obj(orjson.loads(text), ""))


def main(argv: list[str] | None = None) -> int:
    bench = Bench("scan", __doc__, argv)
    bench.parser.add_argument("--events", type=int, default=None, help="default 10000, quick 2000")
    bench.parser.add_argument("--seed", type=int, default=0)
    bench.parser.add_argument("--sets", default="EXACT,NUMERIC,COMPLEX_ARRAYS,COMBO")
    args = bench.parse()
    n = args.events or (2000 if args.quick else 10000)
    console = Console(width=160)
    model = RecordsModel()
    wires = texts(n, args.seed)
    data = [w.encode() for w in wires]
    size = sum(map(len, data)) / n
    inputs = f"{n:,} citylots2-shaped texts (seed {args.seed}, {size:.0f} bytes each)"
    reps = args.repeats
    t_json = time_it(lambda: [json.loads(w) for w in wires], n, inputs, reps)
    t_full = time_it(lambda: [model.parse_event(w) for w in data], n, inputs, reps)
    t_or = time_it(lambda: [orjson.loads(w) for w in data], n, inputs, reps)
    full = [model.parse_event(w) for w in data]
    table = Table(
        title=f"{inputs}; events/s of one core, median of {reps}; ×: multiple of json.loads "
        f"({t_json.fmt_rate()}/s); parse_event {t_full.fmt_rate()}/s, orjson.loads alone "
        f"{t_or.fmt_rate()}/s"
    )
    for col in ("set", "fields", "orjson+prune", "×", "scan", "×", "scan+match", "×", "answers"):
        table.add_column(col, justify="right")
    status = 0
    for name in args.sets.split(","):
        index = model.new_index()
        for i, rule in enumerate(RULES[name]):
            for f in model.parse_filters(rule):
                index.add(f, i)
        sel = index.fields()
        prune = _pruner(sel.names, sel.prefixes)
        want = [index.match(e) for e in full]
        same = [index.match(index.parse_wire(w)) for w in data] == want
        same_or = [index.match(prune(w)) for w in data] == want
        status |= not same
        t_prune = time_it(lambda: [prune(w) for w in data], n, inputs, reps)
        t_scan = time_it(lambda: [index.parse_wire(w) for w in data], n, inputs, reps)
        t_sm = time_it(lambda: [index.match_wire(w) for w in data], n, inputs, reps)
        table.add_row(
            name,
            str(len(sel.names)),
            t_prune.fmt_rate(),
            f"{ratio(t_prune, t_json):.2f}",
            t_scan.fmt_rate(),
            f"{ratio(t_scan, t_json):.2f}",
            t_sm.fmt_rate(),
            f"{ratio(t_sm, t_json):.2f}",
            "same" if same and same_or else f"scan {same}, orjson {same_or}",
        )
        bench.row(
            set=name,
            fields=sorted(sel.names),
            json_loads=t_json,
            parse_event=t_full,
            orjson=t_or,
            orjson_prune=t_prune,
            scan=t_scan,
            scan_match=t_sm,
            same_answers=same,
            orjson_same_answers=same_or,
        )
        bench.headline(
            f"selective scan of citylots2-shaped texts for {name}",
            f"{t_scan.fmt_rate()} events/s ({ratio(t_scan, t_json):.2f}× json.loads, "
            f"{ratio(t_scan, t_full):.1f}× parse_event, {ratio(t_scan, t_prune):.2f}× "
            "orjson+prune)",
        )
    console.print(table)
    return bench.finish(status)


if __name__ == "__main__":
    sys.exit(main())
