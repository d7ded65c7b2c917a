"""Reading only what patterns use (docs/records-syntax.md §5, the event side): the candidate ways from an
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
* *msgspec+prune*: ``msgspec.json.decode`` (C, builds every value) and the same walk;
  *msgspec*: the decode alone;
* *simdjson+prune*: pysimdjson's ``Parser.parse`` (simdjson's parser in C++: a document
  of the whole text, values made Python objects only where asked) and a walk of its
  proxies that asks only for the selected members; *simdjson*: the parse alone. Neither
  refuses a key given twice either (msgspec keeps the last, simdjson answers the first);
* *scan*: ``RecordsIndex.parse_wire``, the compiled scanner of the walk's extension
  (``models/records/_scan.pxi``): skipped members are checked, not built;
* *scan+match*: ``RecordsIndex.match_wire`` (the scan and the index's match).

msgspec and pysimdjson are optional (the dev extra): a candidate whose package is missing
is left out of the table.
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

    return lambda load: lambda text: Record.of(obj(load(text), ""))


def _simd_pruner(names: frozenset[str], prefixes: frozenset[str]) -> Any:
    """The walk of the simdjson candidate over the parser's proxies: only the keys of an
    object and the selected members' values become Python objects."""
    import simdjson

    parser = simdjson.Parser()
    Obj, Arr = simdjson.Object, simdjson.Array

    def plain(v: Any) -> Any:
        t = type(v)
        return v.as_dict() if t is Obj else v.as_list() if t is Arr else v

    def obj(o: Any, pre: str) -> dict:
        out = {}
        for k in o:  # the keys
            name = pre + k
            if name in names:
                out[k] = plain(o[k])
            elif name in prefixes:
                v = o[k]
                if type(v) is Obj:
                    out[k] = obj(v, name + ".")
                elif type(v) is Arr:
                    out[k] = arr(v, name)
        return out

    def arr(a: Any, name: str) -> list:
        out: list = []
        for x in a:
            if type(x) is Obj:
                out.append(obj(x, name + "."))
            elif type(x) is Arr:
                out.append(arr(x, name))
        return out

    def read(text: bytes) -> Record:
        return Record.of(obj(parser.parse(text), ""))  # no proxy outlives the call

    return read, lambda text: parser.parse(text) and None


def _optional(name: str) -> Any:
    try:
        return __import__(name)
    except ImportError:
        return None


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
    msgspec, simdjson = _optional("msgspec"), _optional("simdjson")
    t_ms = t_simd = None
    if msgspec is not None:
        ms_decode = msgspec.json.decode
        t_ms = time_it(lambda: [ms_decode(w) for w in data], n, inputs, reps)
    if simdjson is not None:
        simd_alone = _simd_pruner(frozenset(), frozenset())[1]
        t_simd = time_it(lambda: [simd_alone(w) for w in data], n, inputs, reps)
    alone = ", ".join(
        f"{label} {t.fmt_rate()}/s" for label, t in (("msgspec", t_ms), ("simdjson", t_simd)) if t
    )
    full = [model.parse_event(w) for w in data]
    table = Table(
        title=f"{inputs}; events/s of one core, median of {reps}; ×: multiple of json.loads "
        f"({t_json.fmt_rate()}/s); parse_event {t_full.fmt_rate()}/s, orjson.loads alone "
        f"{t_or.fmt_rate()}/s{', ' + alone if alone else ''} (each alone, values dropped)"
    )
    cols = ["set", "fields", "orjson+prune", "×"]
    cols += ["msgspec+prune", "×"] if msgspec is not None else []
    cols += ["simdjson+prune", "×"] if simdjson is not None else []
    for col in (*cols, "scan", "×", "scan+match", "×", "answers"):
        table.add_column(col, justify="right")
    status = 0
    for name in args.sets.split(","):
        index = model.new_index()
        for i, rule in enumerate(RULES[name]):
            for f in model.parse_filters(rule):
                index.add(f, i)
        sel = index.fields()
        pruned = _pruner(sel.names, sel.prefixes)
        prune = pruned(orjson.loads)
        want = [index.match(e) for e in full]
        same = [index.match(index.parse_wire(w)) for w in data] == want
        same_or = [index.match(prune(w)) for w in data] == want
        status |= not same
        t_prune = time_it(lambda: [prune(w) for w in data], n, inputs, reps)
        others: list[tuple[str, Any]] = []
        if msgspec is not None:
            others.append(("msgspec", pruned(msgspec.json.decode)))
        if simdjson is not None:
            others.append(("simdjson", _simd_pruner(sel.names, sel.prefixes)[0]))
        extra: list[str] = []
        found: dict[str, Any] = {}
        for label, read in others:
            t = time_it(lambda read=read: [read(w) for w in data], n, inputs, reps)
            ok = [index.match(read(w)) for w in data] == want
            same_or = same_or and ok
            extra += [t.fmt_rate(), f"{ratio(t, t_json):.2f}"]
            found[f"{label}_prune"] = t
            found[f"{label}_same_answers"] = ok
        t_scan = time_it(lambda: [index.parse_wire(w) for w in data], n, inputs, reps)
        t_sm = time_it(lambda: [index.match_wire(w) for w in data], n, inputs, reps)
        table.add_row(
            name,
            str(len(sel.names)),
            t_prune.fmt_rate(),
            f"{ratio(t_prune, t_json):.2f}",
            *extra,
            t_scan.fmt_rate(),
            f"{ratio(t_scan, t_json):.2f}",
            t_sm.fmt_rate(),
            f"{ratio(t_sm, t_json):.2f}",
            "same" if same and same_or else f"scan {same}, others {same_or}",
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
            msgspec=t_ms,
            simdjson=t_simd,
            **found,
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
