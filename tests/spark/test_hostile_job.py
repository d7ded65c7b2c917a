"""Hostile and broken inputs through the Spark job (DESIGN.md §3: bad input gets a clear
error and loses nothing; read = converted + quarantined): one directory holding every kind of
broken input next to good records — a truncated gzip, a zip bomb and zip-slip member names,
XML with an external entity and a billion-laughs bomb, a broken feed item, CSV rows with
wrong field counts, JSON lines that are not UTF-8, an empty file, a FIFO, and good files
with awkward names (``:``, ``[x]``, ``%41``, ``#``, ``?``, ``{a,b}``, ``*``,
spaces, a backslash, non-ASCII, a leading ``_``). The job's counts, event store,
quarantine (JSON lines) and deliveries equal the plain-Python reading with the same limits,
and every good record is there."""

from __future__ import annotations

import gzip
import io
import json
import os
import zipfile
from pathlib import Path

import pytest
from pubsift.adapters import Event, Quarantined, ReadLimits, Source
from rich.console import Console

from . import kit
from .test_job import plain_summary, siblings

pytestmark = pytest.mark.spark

#: small archive limits, so that the bomb is small (as tests/adapters/test_archives.py)
LIMITS = ReadLimits(max_members=20, max_total_bytes=64 << 20, max_ratio=20, ratio_floor=64 << 10)

XXE = b"""<?xml version="1.0"?>
<!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<nitf><head><title>&xxe;</title></head></nitf>
"""
LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<nitf><head><title>&lol3;</title></head></nitf>
"""
FEED = b"""<?xml version="1.0"?>
<rss version="2.0"><channel><title>t</title>
<item><title>good one</title></item>
<item><title>bad &nope; item</title></item>
<item><title>good two</title></item>
</channel></rss>
"""


def csv_rows(n: int, start: int = 0) -> list[str]:
    return [f"2017-01-{1 + i % 28:02d},{10 + i}.5,{1000 + i},S{start + i}" for i in range(n)]


def hostile_dir(root: Path) -> Path:
    d = root / "hostile"
    d.mkdir()
    head = "date,close,volume,Name"
    good = "\n".join([head] + csv_rows(400)) + "\n"
    (d / "truncated.csv.gz").write_bytes(gzip.compress(good.encode())[:-60])
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("bomb.csv", head + "\n" + "0" * (4 << 20))  # ratio far beyond 20:1
        z.writestr("../slip.csv", head + "\n" + csv_rows(1)[0])
        z.writestr("/etc/abs.csv", head + "\n" + csv_rows(1)[0])
        z.writestr("inside.csv", "\n".join([head] + csv_rows(3, 500)) + "\n")
    (d / "archive.zip").write_bytes(buf.getvalue())
    (d / "xxe.xml").write_bytes(XXE)
    (d / "laughs.xml").write_bytes(LAUGHS)
    (d / "feed.rss").write_bytes(FEED)
    rows = csv_rows(6, 600)
    rows[1] += ",extra"
    rows[4] = "2017-01-05,1"
    (d / "fields.csv").write_text("\n".join([head] + rows) + "\n")
    (d / "latin.jsonl").write_bytes(
        b'{"Name": "ok1", "close": 1}\n'
        b'{"Name": "caf\xe9", "close": 2}\n'
        b'{"Name": "ok2", "close": 3}\n'
    )
    (d / "empty.jsonl").write_bytes(b"")
    os.mkfifo(d / "pipe.csv")
    (d / "_odd: name [x].csv").write_text("\n".join([head] + csv_rows(2, 700)) + "\n")
    (d / "spaced [1] file:2.jsonl").write_text('{"Name": "colon", "close": 5}\n')
    (d / "pct%41 #h?{a,b}*.jsonl").write_text('{"Name": "percent", "close": 6}\n')
    (d / "ünï 日本 back\\slash.jsonl").write_text('{"Name": "unicode", "close": 7}\n')
    return d


def test_hostile_inputs_end_in_quarantine_and_lose_no_good_record(spark, tmp_path):
    from pubsift.adapters import read
    from pubsift.adapters.spark.job import Settings, route
    from pubsift.adapters.spark.subscriptions import load_subscriptions

    d = hostile_dir(tmp_path)
    sources = [Source(str(d))]
    subs = load_subscriptions(
        str(
            kit.write_subscriptions(
                tmp_path / "subs.jsonl",
                [
                    {"id": "every-record", "model": "records", "filter": "true"},
                    {"id": "every-document", "model": "xml", "filter": "/*"},
                ],
            )
        )
    )
    out = tmp_path / "out"
    summary = route(
        subs,
        str(out),
        Settings(format="jsonl", limits=LIMITS),
        sources=sources,
        console=Console(file=io.StringIO()),
    )
    plain = list(read(*sources, limits=LIMITS))
    want = plain_summary(sources, LIMITS)
    assert summary["sources"] == dict(sorted(want["sources"].items()))
    assert summary["reasons"] == want["reasons"]
    for c in summary["sources"].values():
        assert c["read"] == c["events"] + c["quarantined"]
    assert set(want["reasons"]) >= {
        "compression",
        "archive-bomb",
        "archive-member",
        "xml-entity",
        "xml-syntax",
        "csv-field-count",
        "encoding",
        "unreadable",
    }, want["reasons"]
    # the quarantine, as JSON lines, is the plain reading's, record for record
    rows = kit.read_rows(out / "quarantine", "jsonl")
    assert sorted(
        (r["source"], r["position"], r["reason"], r["message"], r["excerpt"]) for r in rows
    ) == sorted(
        (q.source, q.position, q.reason, q.message, q.excerpt)
        for q in plain
        if isinstance(q, Quarantined)
    )
    # every good record is an event and is delivered to the subscriber of everything
    events = {(e.source, e.position) for e in plain if isinstance(e, Event)}
    names = {os.path.basename(s.split("!")[-1]) for s, _ in events}
    assert {
        "truncated.csv.gz",
        "inside.csv",
        "feed.rss",
        "fields.csv",
        "latin.jsonl",
        "_odd: name [x].csv",
        "spaced [1] file:2.jsonl",
        "pct%41 #h?{a,b}*.jsonl",
        "ünï 日本 back\\slash.jsonl",
    } <= names, names
    assert {
        (str(d / "feed.rss"), 1),
        (str(d / "feed.rss"), 3),
        (str(d / "_odd: name [x].csv"), 2),
        (str(d / "latin.jsonl"), 3),
    } <= events
    assert sum(1 for s, _ in events if s.endswith("fields.csv")) == 4
    assert sum(1 for s, _ in events if s.endswith("inside.csv")) == 3
    stored = {(r["source"], r["position"]) for r in kit.read_rows(out / "events", "parquet")}
    assert stored == events
    got = kit.delivered_pairs(out, "jsonl")
    assert got["every-record"] | got["every-document"] == events
    assert not siblings(out)
    for name in ("pipe.csv", "empty.jsonl"):
        assert str(d / name) in summary["sources"], name
    json.dumps(summary)
