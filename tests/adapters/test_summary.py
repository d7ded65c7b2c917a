"""Counts of a read (docs/adapters.md: read = events + quarantined, per source): the summary of a
mixed directory against counts made independently of the readers."""

from __future__ import annotations

import bz2
import gzip
import io
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from pubsift.adapters import read, register_reader
from pubsift.adapters.readers.registry import unregister_reader
from pubsift.adapters.summary import SourceCounts, Summary

sys.path.insert(0, str(Path(__file__).parent))
from toy_lines import LINES_READER, oracle


@pytest.fixture(autouse=True)
def lines_reader():
    register_reader(LINES_READER)
    yield
    unregister_reader("lines")


def test_read_equals_events_plus_quarantined_for_every_source_of_a_mixed_directory(tmp_path):
    d = tmp_path / "mixed"
    (d / "deep" / "er").mkdir(parents=True)
    plain = {"a.lines": b"1\n2\nx\n4\n", "deep/b.lines": b"\n", "deep/er/c.lines": b"5\n"}
    for rel, data in plain.items():
        (d / rel).write_bytes(data)
    (d / "g.lines.gz").write_bytes(gzip.compress(b"6\n7\nbad\n"))
    (d / "h.lines.bz2").write_bytes(bz2.compress(b"8\n"))
    (d / "x.bin").write_bytes(b"\x00\x01\xfe\xff")  # binary: no reader claims it
    with zipfile.ZipFile(d / "z.zip", "w") as z:
        z.writestr("in/one.lines", "9\nten\n")
        z.writestr("/abs.lines", "1\n")
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w:gz") as t:
        ti = tarfile.TarInfo("t.lines")
        ti.size = 4
        t.addfile(ti, io.BytesIO(b"1\n2\n"))
    (d / "t.tgz").write_bytes(tar.getvalue())
    expected = {str(d / rel): oracle(data) for rel, data in plain.items()}
    expected |= {
        f"{d}/g.lines.gz": oracle(b"6\n7\nbad\n"),
        f"{d}/h.lines.bz2": (1, 0),
        f"{d}/x.bin": (0, 1),
        f"{d}/z.zip!in/one.lines": oracle(b"9\nten\n"),
        f"{d}/z.zip!/abs.lines": (0, 1),
        f"{d}/t.tgz!t.lines": (2, 0),
    }
    summary = Summary()
    items = [summary.add(x) for x in read(str(d), seen=summary.saw)]
    assert {s: (c.events, c.quarantined) for s, c in summary.sources.items()} == expected
    for source, (e, q) in expected.items():
        assert summary.sources[source].read == e + q
    assert summary.read == len(items) == sum(e + q for e, q in expected.values())
    assert dict(summary.reasons) == {"lines-syntax": 4, "unknown-format": 1, "archive-member": 1}
    assert list(summary.sources) == list(dict.fromkeys(x.source for x in items))


def test_summaries_of_parts_merge_and_round_trip_through_json(tmp_path):
    (tmp_path / "a.lines").write_bytes(b"1\nx\n")
    (tmp_path / "b.lines").write_bytes(b"2\n")
    whole = Summary()
    for x in read(str(tmp_path)):
        whole.add(x)
    first, second = Summary(), Summary()
    for x in read(str(tmp_path / "a.lines")):
        first.add(x)
    for x in read(str(tmp_path / "b.lines")):
        second.add(x)
    merged = Summary.from_json(first.to_json()).merge(Summary.from_json(second.to_json()))
    assert (
        merged.to_json()
        == whole.to_json()
        == {
            "read": 3,
            "events": 2,
            "quarantined": 1,
            "sources": {
                f"{tmp_path}/a.lines": {"read": 2, "events": 1, "quarantined": 1},
                f"{tmp_path}/b.lines": {"read": 1, "events": 1, "quarantined": 0},
            },
            "reasons": {"lines-syntax": 1},
        }
    )
    assert SourceCounts(2, 3).read == 5
