"""A ``.gz`` kept decompressed for Spark to read in blocks (``pubsift.adapters.spark.spill``):
kept only above its threshold and within the listing's budget, removed whenever the probe
does not keep it (a file it refuses, an error), byte for byte the decompressed stream."""

from __future__ import annotations

import gzip
import os
import random
from pathlib import Path

import pytest
from pubsift.adapters.readers.limits import ReadLimits
from pubsift.adapters.readers.source import Source
from pubsift.adapters.spark import native, native_jsonl
from pubsift.adapters.spark.spill import Budget, Spill


def chunks(rng: random.Random, n: int) -> list[bytes]:
    return [rng.randbytes(rng.randint(1, 700)) for _ in range(n)]


@pytest.mark.parametrize("seed", range(6))
def test_a_copy_holds_exactly_the_bytes_written_once_past_its_threshold(tmp_path, seed):
    rng = random.Random(seed)
    parts = chunks(rng, rng.randint(1, 30))
    data = b"".join(parts)
    threshold = rng.choice([0, 100, len(data) - 1, len(data), len(data) + 1])
    budget = Budget(str(tmp_path / "plain"), limit=1 << 20)
    with Spill(budget, threshold) as copy:
        for p in parts:
            copy.write(p)
        kept = copy.keep()
    if len(data) > threshold:
        assert kept is not None and Path(kept).read_bytes() == data
        assert budget.left == (1 << 20) - len(data)
        assert os.listdir(tmp_path / "plain") == [os.path.basename(kept)]
    else:  # one block anyway: nothing written
        assert kept is None and not (tmp_path / "plain").exists()
        assert budget.left == 1 << 20


def test_a_copy_not_kept_is_removed_error_or_not(tmp_path):
    budget = Budget(str(tmp_path))
    with Spill(budget, 10) as copy:
        copy.write(b"x" * 100)
        assert copy.path and os.path.exists(copy.path)
    assert os.listdir(tmp_path) == []
    with pytest.raises(RuntimeError), Spill(budget, 10) as copy:
        copy.write(b"x" * 100)
        raise RuntimeError("the probe failed")
    assert os.listdir(tmp_path) == []


def test_beyond_the_budget_a_file_is_not_copied_and_the_next_ones_still_are(tmp_path):
    budget = Budget(str(tmp_path), limit=1000)
    with Spill(budget, 10) as big:
        for _ in range(11):
            big.write(b"y" * 100)  # 1,100 bytes: over the budget on the 11th chunk
        assert big.keep() is None
    assert os.listdir(tmp_path) == [] and budget.left == 1000
    with Spill(budget, 10) as small:
        small.write(b"z" * 600)
        assert small.keep() is not None
    with Spill(budget, 10) as third:  # 600 + 600 > 1000
        third.write(b"w" * 600)
        assert third.keep() is None
    assert len(os.listdir(tmp_path)) == 1 and budget.left == 400


def test_no_budget_no_copy(tmp_path):
    with Spill(None, 0) as copy:
        copy.write(b"abc")
        assert copy.keep() is None


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(native_jsonl, "COUNT_STEP", 4096)
    monkeypatch.setattr(native_jsonl, "MIN_BLOCK", 8192)


def csv_text(rows: int) -> bytes:
    return b"a,b\n" + b"".join(f"{i},s{i % 7}\n".encode() for i in range(rows))


@pytest.mark.parametrize("probe", [native.probe, native_jsonl.probe])
def test_a_gz_the_probe_refuses_leaves_no_copy(tmp_path, small_blocks, probe):
    """a truncated .gz (left to the Python reader, which keeps the rows before the damage)"""
    data = csv_text(5000) if probe is native.probe else b'{"a": 1}\n' * 5000
    name = "t.csv.gz" if probe is native.probe else "t.jsonl.gz"
    path = tmp_path / name
    path.write_bytes(gzip.compress(data)[:-40])
    budget = Budget(str(tmp_path / "plain"))
    assert probe(str(path), str(path), Source(str(path)), None, ReadLimits(), budget) is None
    assert not (tmp_path / "plain").exists() or os.listdir(tmp_path / "plain") == []


def test_a_gz_with_a_carriage_return_is_read_whole_without_a_copy(tmp_path, small_blocks):
    """(Spark's line reader ends a line at \\r too: the probe's counts would not number it)"""
    path = tmp_path / "cr.csv.gz"
    path.write_bytes(gzip.compress(csv_text(5000).replace(b"\n", b"\r\n")))
    budget = Budget(str(tmp_path / "plain"))
    plan = native.probe(str(path), str(path), Source(str(path)), None, ReadLimits(), budget)
    assert plan is not None and plan.gz and plan.copy is None
    assert not (tmp_path / "plain").exists() or os.listdir(tmp_path / "plain") == []


def test_a_large_gz_gets_a_copy_and_the_plain_files_counts(tmp_path, small_blocks):
    data = csv_text(5000)
    (tmp_path / "q.csv").write_bytes(data)
    (tmp_path / "q.csv.gz").write_bytes(gzip.compress(data))
    budget = Budget(str(tmp_path / "plain"))
    plain = native.probe(str(tmp_path / "q.csv"), "q", Source("q"), None, ReadLimits())
    gz = native.probe(
        str(tmp_path / "q.csv.gz"), "q.gz", Source("q.gz"), None, ReadLimits(), budget
    )
    assert plain is not None and gz is not None and gz.copy is not None
    assert Path(gz.copy).read_bytes() == data
    assert (gz.counts, gz.size, gz.rows, gz.shape) == (
        plain.counts,
        plain.size,
        plain.rows,
        plain.shape,
    )
