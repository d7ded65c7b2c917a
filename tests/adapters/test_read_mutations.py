"""Mutated inputs (docs/adapters.md §4: good CSV/JSON/XML bytes mutated, and still
read = events + quarantined, no exception escaping): bytes flipped,
inserted, deleted and cut off, in plain files and in whole archives. Whatever comes in,
``read()`` gives events and quarantine records only, with ids unique per source; for the
line format, whose records an independent split can count, read equals that count. Formats
whose reader is not registered yet are skipped."""

from __future__ import annotations

import csv
import gzip
import io
import sys
import tarfile
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pubsift.adapters import Event, Quarantined, ReadLimits, read, register_reader
from pubsift.adapters.readers.outcomes import REASONS
from pubsift.adapters.readers.registry import readers, strip_compression, unregister_reader

sys.path.insert(0, str(Path(__file__).parent))
from toy_lines import LINES_READER, oracle

#: small limits: a mutation that makes a bomb is refused quickly
LIMITS = ReadLimits(max_members=50, max_total_bytes=8 << 20, max_ratio=50, ratio_floor=64 << 10)

FEED = b"""<?xml version="1.0"?>
<rss version="2.0"><channel><title>News</title>
<item><title>Cup final</title><category>Sports</category></item>
<item><title>Rates &amp; more</title><category>Business</category></item>
</channel></rss>
"""
NITF = b"""<?xml version="1.0" encoding="UTF-8"?>
<nitf><head><title>Storm</title></head><body><body.content><p>Rain.</p></body.content></body></nitf>
"""
#: format -> (reader, file name, good bytes)
SAMPLES = {
    "lines": ("lines", "n.lines", b"1\n22\n-3\nfour\n5\n"),
    "csv": ("csv", "q.csv", b'symbol,price,volume\nIBM,50.5,100\nINTC,20,\n"A,B",1e3,7\n'),
    "jsonl": ("jsonl", "e.jsonl", b'{"a": 1}\n{"b": [1, 2], "c": "\\u00e9"}\n[3]\n{"d": null}\n'),
    "feed": ("xml", "f.rss", FEED),
    "nitf": ("xml", "d.xml", NITF),
}


@pytest.fixture(autouse=True)
def lines_reader():
    register_reader(LINES_READER)
    yield
    unregister_reader("lines")


mutation = st.tuples(
    st.sampled_from(["flip", "insert", "delete", "truncate"]),
    st.floats(0, 1, allow_nan=False),
    st.integers(0, 7),
    st.one_of(
        st.sampled_from(
            [
                b"\n",
                b",",
                b'"',
                b"<",
                b">",
                b"&",
                b"\xff",
                b"\x00",
                b"{",
                b"]",
                b"\r\n",
                b"PK\x03\x04",
            ]
        ),
        st.binary(min_size=1, max_size=8),
    ),
)


def mutate(data: bytes, mutations) -> bytes:
    b = bytearray(data)
    for op, where, bit, payload in mutations:
        i = min(int(where * len(b)), max(len(b) - 1, 0))
        if op == "flip" and b:
            b[i] ^= 1 << bit
        elif op == "insert":
            b[i:i] = payload
        elif op == "delete":
            del b[i : i + 1 + bit]
        elif op == "truncate":
            del b[i:]
    return bytes(b)


def check(items: list) -> None:
    """Only events and quarantine records, ids unique per source, codes well formed."""
    assert all(isinstance(x, (Event, Quarantined)) for x in items)
    ids = Counter((x.source, x.position) for x in items)
    assert not [k for k, n in ids.items() if n > 1], ids
    for x in items:
        assert x.position >= 0
        if isinstance(x, Quarantined):
            assert x.reason in REASONS or x.reason == "lines-syntax", x
    # positions of rows and items are contiguous: a source is either one record at
    # position 0 (the source as a whole) or records at 1..n with no gap (each row or item
    # read is accounted for); line formats number lines, blank ones included
    positions: dict[str, list[int]] = {}
    for x in items:
        positions.setdefault(x.source, []).append(x.position)
    for source, ps in positions.items():
        if not strip_compression(source).endswith((".jsonl", ".lines")):
            assert ps == [0] or ps == list(range(1, len(ps) + 1)), (source, ps)


def csv_rows(data: bytes) -> int | None:
    """Data rows of a CSV file as Python's csv module counts them (blank lines are not
    rows), when the mutation left a file the module reads strictly with the sample's
    header and delimiter; None otherwise (no independent count)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\x00" in text or not text.startswith("symbol,price,volume\n"):
        return None
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error:
        return None
    return sum(1 for r in rows[1:] if r)


def json_lines(data: bytes) -> list[int]:
    """The numbers of the lines with content, as a plain split finds them."""
    lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [i for i, ln in enumerate(lines, 1) if ln.strip(b" \t\r\n\x0b\x0c")]


def _need(fmt: str) -> None:
    if SAMPLES[fmt][0] not in readers():
        pytest.skip(f"the {SAMPLES[fmt][0]} reader is not registered yet")


def read_bytes(name: str, data: bytes) -> list:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_bytes(data)
        items = list(read(str(path), limits=LIMITS))
        return [(x, str(path)) for x in items]


SETTINGS = settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_mutated_files_end_in_events_and_quarantine_only(fmt):
    _need(fmt)
    _, name, good = SAMPLES[fmt]

    @SETTINGS
    @given(st.lists(mutation, min_size=1, max_size=4), st.booleans())
    def run(mutations, compressed):
        data = mutate(good, mutations)
        fname = name + ".gz" if compressed else name
        got = read_bytes(fname, gzip.compress(data) if compressed else data)
        items = [x for x, _ in got]
        check(items)
        if fmt == "lines":  # an independent count of the records
            events = sum(isinstance(x, Event) for x in items)
            assert (events, len(items) - events) == oracle(data)
        elif fmt == "jsonl" and items and items[0].position:  # read = lines with content
            assert [x.position for x in items] == json_lines(data)
        elif fmt == "csv" and csv_rows(data) is not None:  # read = the csv module's rows
            assert len(items) == csv_rows(data), (data, items)
        elif fmt in ("feed", "nitf"):
            assert items, "an XML document gives at least one record"

    run()


def _archive(kind: str, files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    if kind == "zip":
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for n, d in files.items():
                z.writestr(n, d)
    else:
        with tarfile.open(fileobj=buf, mode="w:gz" if kind == "tgz" else "w") as t:
            for n, d in files.items():
                ti = tarfile.TarInfo(n)
                ti.size = len(d)
                t.addfile(ti, io.BytesIO(d))
    return buf.getvalue()


@pytest.mark.parametrize("kind", ["zip", "tgz", "tar"])
def test_mutated_archives_end_in_events_and_quarantine_only(kind):
    files = {
        f"m/{name}": data
        for fmt, (reader, name, data) in sorted(SAMPLES.items())
        if reader in readers()
    }
    inner = _archive("zip", {"inner/" + k: v for k, v in files.items()})
    good = _archive(kind, {**files, "nested.zip": inner})

    @SETTINGS
    @given(st.lists(mutation, min_size=1, max_size=4))
    def run(mutations):
        got = read_bytes(f"a.{kind}", mutate(good, mutations))
        items = [x for x, _ in got]
        check(items)
        assert items, "a damaged archive gives at least one record"
        path = got[0][1]
        assert all(x.source == path or x.source.startswith(path + "!") for x in items)

    run()


def test_the_good_samples_read_without_quarantine():
    """The base of the mutations is good: unmutated, nothing is quarantined (so the
    mutation tests do start from good bytes)."""
    for fmt, (reader, name, data) in SAMPLES.items():
        if reader not in readers():
            continue
        items = [x for x, _ in read_bytes(name, data)]
        check(items)
        if fmt == "csv":
            assert len(items) == csv_rows(data) == 3
        if fmt == "jsonl":
            assert [x.position for x in items] == json_lines(data) == [1, 2, 3, 4]
        if fmt == "feed":  # lxml's count of the items
            from lxml import etree

            assert len(items) == etree.fromstring(data).xpath("count(//item)") == 2
        if fmt == "lines":
            assert Counter(type(x).__name__ for x in items) == {"Event": 4, "Quarantined": 1}
        elif fmt == "jsonl":
            assert [type(x).__name__ for x in items] == ["Event", "Event", "Quarantined", "Event"]
        else:
            assert items and all(isinstance(x, Event) for x in items), (fmt, items)
