"""The broker protocol's codec (DESIGN.md §2.6): frames encoded and decoded by the standard
library's json, by orjson (the same JSON protocol) and by ormsgpack (MessagePack, which a
binary protocol would negotiate), on the frames a broker reads and writes most.

    .venv/bin/python bench/codecs.py [--quick] [--json PATH]

Frames (bodies, without the length prefix): a ``pub`` of one quote as the Python client
writes it, the ``notify`` the broker writes for it, and a ``pubs`` batch of 100 quotes
(real daily quotes of ``../shared/data/quotes`` where present, else a fixed synthetic set
of the same shape). Each codec round-trips every frame: ``loads(dumps(obj))``, checked
equal to the object. CPU time (bench/harness.py: warm-up, median of the repeats); the
ratios compare each codec with the standard library on the same frames.

Why JSON stays: on a shared 2-CPU machine two runs gave ormsgpack 1.0× and 1.1-1.6×
orjson's round trips (frames 20 % smaller), while orjson is 4-7× the standard library;
encoding and decoding frames with orjson is now a few per cent of a publication's CPU in
the broker (bench/brokers.py), so a second, binary protocol negotiated in the hello —
which every client in another language would have to implement — would buy little.
orjson is what ``pubsift.adapters.broker.frames`` uses, with the standard library only for
what orjson cannot read exactly (integers beyond 64 bits) or write (nesting beyond 254).
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

import orjson
from harness import Bench, ratio, time_it

try:
    import ormsgpack
except ImportError:  # pragma: no cover - the dev extra installs it
    ormsgpack = None


def quotes(n: int, seed: int = 0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {
            "symbol": f"S{rng.randrange(500)}",
            "date": f"2024-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}",
            "open": round(rng.uniform(10, 500), 2),
            "close": round(rng.uniform(10, 500), 2),
            "volume": rng.randrange(10_000, 50_000_000),
        }
        for _ in range(n)
    ]


def main(argv: list[str] | None = None) -> int:
    bench = Bench("codecs", __doc__, argv)
    args = bench.parse()
    n = 2_000 if args.quick else 20_000
    qs = quotes(n)
    frames = {
        "pub": [
            {"kind": "pub", "model": "records", "pub_id": ["client-4f2a9c", i + 1], "event": q}
            for i, q in enumerate(qs)
        ],
        "notify": [
            {
                "kind": "notify",
                "client": "alice/sub-1",
                "model": "records",
                "pub_id": ["alice/client-4f2a9c", i + 1],
                "event": q,
            }
            for i, q in enumerate(qs)
        ],
        "pubs(100)": [
            {
                "kind": "pubs",
                "model": "records",
                "pubs": [[["client-4f2a9c", j + 1], qs[j]] for j in range(i, i + 100)],
            }
            for i in range(0, n, 100)
        ],
    }
    codecs: dict[str, tuple[Any, Any]] = {
        "json": (
            lambda o: json.dumps(o, ensure_ascii=False, separators=(",", ":")).encode(),
            json.loads,
        ),
        "orjson": (orjson.dumps, orjson.loads),
    }
    if ormsgpack is not None:
        codecs["ormsgpack"] = (ormsgpack.packb, ormsgpack.unpackb)
    status = 0
    for kind, objs in frames.items():
        timings = {}
        for name, (dumps, loads) in codecs.items():
            if any(loads(dumps(o)) != o for o in objs[:50]):
                print(f"{name} does not round-trip {kind} frames", file=sys.stderr)
                status = 1
            timings[name] = time_it(
                lambda objs=objs, dumps=dumps, loads=loads: [loads(dumps(o)) for o in objs],
                len(objs),
                inputs=f"{len(objs)} {kind} frames",
                repeats=args.repeats,
            )
        size = {name: sum(len(d(o)) for o in objs) / len(objs) for name, (d, _) in codecs.items()}
        for name, t in timings.items():
            r = ratio(t, timings["json"])
            print(
                f"{kind:10s} {name:10s} {t.fmt_rate()} frames/s round trip, "
                f"{size[name]:,.0f} bytes each, {r:.1f}x json"
            )
            bench.row(frame=kind, codec=name, timing=t, bytes=size[name], vs_json=r)
        best = min(timings, key=lambda k: timings[k].median)
        bench.headline(
            f"codec, {kind} frame round trip",
            f"orjson {ratio(timings['orjson'], timings['json']):.1f}x json"
            + (
                f", ormsgpack {ratio(timings['ormsgpack'], timings['json']):.1f}x"
                if "ormsgpack" in timings
                else ""
            )
            + f" (fastest: {best})",
        )
    return bench.finish(status)


if __name__ == "__main__":
    sys.exit(main())
