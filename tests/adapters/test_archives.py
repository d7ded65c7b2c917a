"""Archives (docs/adapters.md §2, §4, §5): zip and tar members read
by streaming, nested one level deep, under limits on member count, total size and ratio;
unsafe names, links and devices quarantined, never opened; nothing written to disk."""

from __future__ import annotations

import gzip
import io
import json
import os
import struct
import subprocess
import sys
import tarfile
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from pubsift.adapters import Event, Quarantined, ReadLimits, read, register_reader
from pubsift.adapters.readers.registry import readers, unregister_reader

sys.path.insert(0, str(Path(__file__).parent))
from toy_lines import LINES_READER, oracle

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
#: small limits, so that the bombs of the tests are small and fast
SMALL = ReadLimits(max_members=20, max_total_bytes=64 << 20, max_ratio=20, ratio_floor=64 << 10)


@pytest.fixture(autouse=True)
def lines_reader():
    register_reader(LINES_READER)
    yield
    unregister_reader("lines")


def make_zip(path: Path, members: dict[str, bytes], method=zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def tar_bytes(members: dict[str, bytes], mode: str = "w") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as t:
        for name, data in members.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def outcome(items) -> list[tuple[str, int, str]]:
    return [(x.source, x.position, "event" if isinstance(x, Event) else x.reason) for x in items]


def per_source(items) -> dict[str, tuple[int, int]]:
    c: dict[str, list[int]] = {}
    for x in items:
        c.setdefault(x.source, [0, 0])[isinstance(x, Quarantined)] += 1
    return {k: tuple(v) for k, v in c.items()}


FILES = {"b/two.lines": b"3\n4\nfive\n", "a.lines": b"1\n2\n", "c/d/e.lines": b"6\n"}


def test_zip_members_are_read_in_archive_order_named_archive_bang_member(tmp_path):
    z = make_zip(tmp_path / "a.zip", {**FILES, "emptydir/": b""})
    got = list(read(str(z)))
    assert [x.source for x in got] == [f"{z}!b/two.lines"] * 3 + [f"{z}!a.lines"] * 2 + [
        f"{z}!c/d/e.lines"
    ]  # the order they were written in, not the names' order
    assert per_source(got) == {f"{z}!{n}": oracle(d) for n, d in FILES.items()}
    assert list(per_source(got)) == [f"{z}!{n}" for n in FILES]


@pytest.mark.parametrize(
    "suffix, mode", [(".tar", "w"), (".tar.gz", "w:gz"), (".tgz", "w:gz"), (".tar.bz2", "w:bz2")]
)
def test_tar_members_are_read_in_archive_order(tmp_path, suffix, mode):
    t = tmp_path / f"a{suffix}"
    t.write_bytes(tar_bytes(FILES, mode))
    got = list(read(str(t)))
    assert list(per_source(got)) == [f"{t}!{n}" for n in FILES]  # archive order
    assert per_source(got) == {f"{t}!{n}": oracle(d) for n, d in FILES.items()}


def test_archives_nest_one_level_deep_and_deeper_ones_are_quarantined(tmp_path):
    innermost = make_zip(tmp_path / "innermost.zip", {"x.lines": b"1\n"}).read_bytes()
    inner = make_zip(
        tmp_path / "inner.zip",
        {"deep.zip": innermost, "i.lines": b"2\n", "g.lines.gz": gzip.compress(b"3\n")},
    )
    tar_inner = tar_bytes({"t.lines": b"4\n5\n"}, "w:gz")
    outer = make_zip(
        tmp_path / "outer.zip", {"inner.zip": inner.read_bytes(), "inner.tar.gz": tar_inner}
    )
    assert outcome(read(str(outer))) == [  # archive order, as written
        (f"{outer}!inner.zip!deep.zip", 0, "archive-member"),
        (f"{outer}!inner.zip!i.lines", 1, "event"),
        (f"{outer}!inner.zip!g.lines.gz", 1, "event"),
        (f"{outer}!inner.tar.gz!t.lines", 1, "event"),
        (f"{outer}!inner.tar.gz!t.lines", 2, "event"),
    ]
    # a zip in a tar.gz: outer.tgz!inner.zip!i.lines
    tgz = tmp_path / "outer.tgz"
    tgz.write_bytes(tar_bytes({"inner.zip": inner.read_bytes()}, "w:gz"))
    assert (f"{tgz}!inner.zip!i.lines", 1, "event") in outcome(read(str(tgz)))
    # max_nesting = 0: no archive inside an archive is opened
    flat = outcome(read(str(outer), limits=ReadLimits(max_nesting=0)))
    assert flat == [
        (f"{outer}!inner.zip", 0, "archive-member"),
        (f"{outer}!inner.tar.gz", 0, "archive-member"),
    ]


UNSAFE = [
    "../evil.lines",
    "a/../../evil.lines",
    "/etc/x.lines",
    "C:/x.lines",
    "..\\evil.lines",
    "\\abs.lines",
]


def test_unsafe_zip_member_names_are_quarantined_never_opened(tmp_path):
    members = dict.fromkeys(UNSAFE, b"1\n")
    members["ok.lines"] = b"1\n"
    members["nulXname.lines"] = b"1\n"
    z = make_zip(tmp_path / "evil.zip", members)
    raw = z.read_bytes().replace(b"nulXname", b"nul\x00name")  # same length: still a zip
    z.write_bytes(raw)
    got = list(read(str(z)))
    reasons = {
        x.source: (x.position, x.reason, x.message)
        if isinstance(x, Quarantined)
        else (x.position, "event", "")
        for x in got
    }
    assert reasons.pop(f"{z}!ok.lines")[:2] == (1, "event")
    assert len(reasons) == len(UNSAFE) + 1
    assert all(p == 0 and r == "archive-member" for p, r, _ in reasons.values())
    assert reasons[f"{z}!nul\\x00name.lines"][2] == "not read: a NUL byte in the member name"
    assert "'..'" in reasons[f"{z}!../evil.lines"][2]
    assert "absolute" in reasons[f"{z}!/etc/x.lines"][2]
    assert "drive letter" in reasons[f"{z}!C:/x.lines"][2]


def test_tar_unsafe_names_links_devices_and_fifos_are_quarantined(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name in ["../evil.lines", "/etc/x.lines", "ok.lines"]:
            ti = tarfile.TarInfo(name)
            ti.size = 2
            t.addfile(ti, io.BytesIO(b"1\n"))
        for name, kind in [
            ("sym.lines", tarfile.SYMTYPE),
            ("hard.lines", tarfile.LNKTYPE),
            ("chr", tarfile.CHRTYPE),
            ("blk", tarfile.BLKTYPE),
            ("fifo", tarfile.FIFOTYPE),
        ]:
            ti = tarfile.TarInfo(name)
            ti.type = kind
            ti.linkname = "/etc/passwd" if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE) else ""
            t.addfile(ti)
    tgz = tmp_path / "evil.tgz"
    tgz.write_bytes(buf.getvalue())
    got = {x.source.split("!", 1)[1]: x for x in read(str(tgz))}
    assert isinstance(got.pop("ok.lines"), Event)
    assert set(got) == {
        "../evil.lines",
        "/etc/x.lines",
        "sym.lines",
        "hard.lines",
        "chr",
        "blk",
        "fifo",
    }
    assert {(x.position, x.reason) for x in got.values()} == {(0, "archive-member")}
    assert "link" in got["sym.lines"].message and "link" in got["hard.lines"].message
    assert "device or FIFO" in got["fifo"].message


def test_zip_symlink_and_encrypted_members_are_quarantined(tmp_path):
    z = tmp_path / "links.zip"
    with zipfile.ZipFile(z, "w") as zf:
        link = zipfile.ZipInfo("link.lines")
        link.create_system = 3
        link.external_attr = 0o120777 << 16
        zf.writestr(link, "/etc/passwd")
        zf.writestr("secret.lines", b"1\n")
        zf.writestr("ok.lines", b"2\n")
    raw = bytearray(z.read_bytes())
    # set the "encrypted" flag of secret.lines in the central directory
    at = raw.index(b"PK\x01\x02" + raw[raw.index(b"PK\x01\x02") + 4 :][:0])
    while True:
        name_len = struct.unpack_from("<H", raw, at + 28)[0]
        if raw[at + 46 : at + 46 + name_len] == b"secret.lines":
            struct.pack_into("<H", raw, at + 8, struct.unpack_from("<H", raw, at + 8)[0] | 1)
            break
        at = raw.index(b"PK\x01\x02", at + 4)
    z.write_bytes(bytes(raw))
    assert outcome(read(str(z))) == [
        (f"{z}!link.lines", 0, "archive-member"),
        (f"{z}!secret.lines", 0, "archive-member"),
        (f"{z}!ok.lines", 1, "event"),
    ]


def test_duplicate_member_names_are_quarantined_so_ids_stay_unique(tmp_path):
    t = tmp_path / "dup.tar"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for data in (b"1\n", b"2\n"):
            ti = tarfile.TarInfo("same.lines")
            ti.size = 2
            tf.addfile(ti, io.BytesIO(data))
    t.write_bytes(buf.getvalue())
    got = outcome(read(str(t)))
    assert got == [(f"{t}!same.lines", 1, "event"), (f"{t}!same.lines", 0, "archive-member")]


# -- bombs --------------------------------------------------------------------------------


def zeros_zip(path: Path, size: int, name: str = "zeros.lines") -> Path:
    """A zip of ``size`` zero bytes (one line), written by streaming: ~size/1000 bytes."""
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z,
        z.open(name, "w", force_zip64=True) as w,
    ):
        chunk = b"0" * (1 << 20)
        for _ in range(size >> 20):
            w.write(chunk)
    return path


def test_a_zip_bomb_declaring_its_sizes_is_refused_before_it_is_opened(tmp_path):
    z = zeros_zip(tmp_path / "bomb.zip", 16 << 20)
    assert z.stat().st_size < 100_000
    (q,) = read(str(z), limits=SMALL)
    assert (q.source, q.position, q.reason) == (f"{z}!zeros.lines", 0, "archive-bomb")
    assert "declares a compression ratio above max_ratio = 20" in q.message
    (q,) = read(str(z), limits=ReadLimits(max_total_bytes=1 << 20))
    assert q.reason == "archive-bomb" and "declares 16777216 bytes" in q.message


def _lie_about_compressed_size(z: Path) -> None:
    """Make the central directory claim compressed size = uncompressed size (ratio 1)."""
    raw = bytearray(z.read_bytes())
    at = raw.index(b"PK\x01\x02")
    size = struct.unpack_from("<I", raw, at + 24)[0]
    if size == 0xFFFFFFFF:  # zip64: sizes in the extra field
        pytest.skip("zip64 header")
    struct.pack_into("<I", raw, at + 20, size)
    z.write_bytes(bytes(raw))


def test_a_zip_bomb_that_lies_about_its_sizes_is_refused_while_streaming(tmp_path):
    """The central directory claims ratio 1; the member's deflate stream is followed by
    other bytes, so zipfile keeps reading (it stops at the claimed size): only the count of
    the bytes actually produced catches it."""
    z = tmp_path / "liar.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("zeros.lines", b"0" * (16 << 20), zipfile.ZIP_DEFLATED)
        zf.writestr("zpad.bin", os.urandom(256 << 10), zipfile.ZIP_STORED)
    _lie_about_compressed_size(z)
    info = zipfile.ZipFile(z).getinfo("zeros.lines")
    assert info.compress_size == info.file_size == 16 << 20
    got = list(read(str(z), limits=SMALL))
    assert outcome(got)[0] == (f"{z}!zeros.lines", 0, "archive-bomb")
    assert "compression ratio above 20" in got[0].message


def test_a_gzip_bomb_is_refused_keeping_the_records_before(tmp_path):
    g = tmp_path / "bomb.lines.gz"
    with gzip.open(g, "wb") as fh:
        fh.write(b"1\n2\n")
        for _ in range(16):
            fh.write(b"0" * (1 << 20))
    got = list(read(str(g), limits=SMALL))
    assert outcome(got) == [(str(g), 1, "event"), (str(g), 2, "event"), (str(g), 3, "archive-bomb")]
    assert "compression ratio above 20" in got[-1].message


def test_a_tar_gz_bomb_is_refused_at_the_archive_stream(tmp_path):
    t = tmp_path / "bomb.tar.gz"
    t.write_bytes(
        tar_bytes(
            {"a.lines": b"1\n", "zeros.lines": b"0" * (16 << 20), "after.lines": b"2\n"}, "w:gz"
        )
    )
    got = outcome(read(str(t), limits=SMALL))
    assert got[0] == (f"{t}!a.lines", 1, "event")
    assert got[1] == (f"{t}!zeros.lines", 0, "archive-bomb")
    assert got[2:] == [(str(t), 0, "archive-bomb")]  # the rest of the archive is not read


def test_the_total_size_of_an_archive_is_limited_across_members(tmp_path):
    members = {
        f"m{i}.lines": b"".join(b"%015d\n" % j for j in range(16_000)) for i in range(5)
    }  # 256 kB each, stored: ratio 1
    z = make_zip(tmp_path / "big.zip", members, zipfile.ZIP_STORED)
    limits = ReadLimits(max_total_bytes=5 * (256_000 // 2))
    counts = per_source(read(str(z), limits=limits))
    assert counts[f"{z}!m0.lines"] == (16_000, 0)
    assert counts[f"{z}!m1.lines"] == (16_000, 0)
    assert counts[f"{z}!m2.lines"][1] == 1 and 0 < counts[f"{z}!m2.lines"][0] < 16_000
    assert counts[f"{z}!m3.lines"] == counts[f"{z}!m4.lines"] == (0, 1)


def test_reading_a_member_twice_counts_its_bytes_once(tmp_path):
    from pubsift.adapters import Source
    from pubsift.adapters.readers.inputs import inputs

    z = make_zip(tmp_path / "a.zip", {"m.lines": b"1\n" * 500_000}, zipfile.ZIP_STORED)
    limits = ReadLimits(max_total_bytes=1_500_000)
    for inp in inputs(Source(str(z)), limits):
        for _ in range(3):
            with inp.open() as fh:
                assert len(fh.read()) == 1_000_000


def _reverse_zip(n: int) -> bytes:
    """A zip of ``n`` members written in reverse name order (review finding 8)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for i in reversed(range(n)):
            z.writestr(f"m{i:04d}.lines", b"".join(b"%d\n" % (i * 7 + j) for j in range(50)))
    return buf.getvalue()


def test_a_nested_zip_is_read_front_to_back_within_a_linear_budget(tmp_path):
    # members in name order meant a backward seek on the inner zip's decompressed stream
    # per member, each decompressing it again from the start: quadratic work. In archive
    # order, the inner zip is decompressed a few times (its directory is at its end), and
    # every member once. Name order here costs about 150 times the inner zip's size.
    inner = _reverse_zip(300)
    outer = make_zip(tmp_path / "outer.zip", {"inner.zip": inner})
    members = sum(len(b"".join(b"%d\n" % (i * 7 + j) for j in range(50))) for i in range(300))
    limits = ReadLimits(max_total_bytes=4 * len(inner) + members)
    got = list(read(str(outer), limits=limits))
    assert not [q for q in got if isinstance(q, Quarantined)]
    sources = list(per_source(got))
    assert sources == [f"{outer}!inner.zip!m{i:04d}.lines" for i in reversed(range(300))]
    assert all(c == (50, 0) for c in per_source(got).values())


def test_decompressing_again_after_a_backward_seek_is_charged_to_the_budget():
    from pubsift.adapters.readers.bombguard import Budget, decompressed

    data = b"1\n" * 100_000
    limits = ReadLimits(max_total_bytes=500_000)
    budget = Budget("x.gz", limits)
    fh = decompressed(io.BytesIO(gzip.compress(data)), ".gz", "x.gz", limits, budget)
    assert fh.read() == data and budget.total == len(data)
    fh.seek(0)
    assert fh.read(1000) == data[:1000]
    assert len(data) < budget.total <= len(data) + (64 << 10)  # one buffer again
    fh.seek(len(data))
    assert budget.total == 2 * len(data)
    fh.seek(0)
    with pytest.raises(Exception) as info:
        fh.seek(len(data))  # a third time: over the limit
    assert getattr(info.value, "reason", None) == "archive-bomb"


def test_a_refused_tar_gz_member_is_skipped_under_the_ratio_limit(tmp_path):
    # tarfile skips a member by seeking the decompressed stream: the guard reads its way
    # forward and stops at the ratio limit instead of decompressing all of it first
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        zeros = b"\0" * (64 << 20)
        info = tarfile.TarInfo("../evil.lines")
        info.size = len(zeros)
        tf.addfile(info, io.BytesIO(zeros))
    t = tmp_path / "skip.tar.gz"
    t.write_bytes(buf.getvalue())
    got = list(read(str(t), limits=SMALL))
    assert outcome(got) == [
        (f"{t}!../evil.lines", 0, "archive-member"),
        (str(t), 0, "archive-bomb"),
    ]
    produced = int(got[-1].message.split("(")[1].split(" bytes out of")[0])
    assert produced < 4 << 20, got[-1].message  # not the 64 MiB of the member


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_too_many_members_end_in_one_archive_bomb_record(tmp_path, kind):
    members = {f"m{i:02d}.lines": b"%d\n" % i for i in range(25)}
    if kind == "zip":
        a = make_zip(tmp_path / "many.zip", members)
    else:
        a = tmp_path / "many.tar"
        a.write_bytes(tar_bytes(members))
    got = list(read(str(a), limits=SMALL))
    assert [x.source for x in got[:20]] == [f"{a}!m{i:02d}.lines" for i in range(20)]
    assert all(isinstance(x, Event) for x in got[:20])
    assert outcome(got[20:]) == [(str(a), 0, "archive-bomb")]
    assert "max_members = 20" in got[20].message


# -- corrupt archives ---------------------------------------------------------------------


def test_a_zip_member_with_a_bad_crc_is_quarantined_and_the_others_read(tmp_path):
    z = make_zip(
        tmp_path / "crc.zip", {"a.lines": b"1\n", "b.lines": b"2\n" * 1000}, zipfile.ZIP_STORED
    )
    raw = bytearray(z.read_bytes())
    at = raw.index(b"2\n2\n")
    raw[at] = ord("3")
    z.write_bytes(bytes(raw))
    got = outcome(read(str(z)))
    assert got[0] == (f"{z}!a.lines", 1, "event")
    assert got[-1][0] == f"{z}!b.lines" and got[-1][2] == "archive-member"
    q = list(read(str(z)))[-1]
    assert "Bad CRC-32" in q.message


@pytest.mark.parametrize(
    "name, data",
    [
        ("not.zip", b"PK\x03\x04 not really"),
        ("empty.zip", b""),
        ("not.tar", b"x" * 700),
        ("not.tgz", b"\x1f\x8b\x08garbage"),
    ],
)
def test_a_file_that_is_not_the_archive_its_name_says_is_one_record(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    (q,) = read(str(p))
    assert (q.source, q.position) == (str(p), 0)
    assert q.reason in ("archive-member", "compression")


def test_a_truncated_tar_gz_keeps_what_came_before(tmp_path):
    members = {
        f"m{i}.lines": b"".join(b"%d\n" % j for j in range(i * 1000, i * 1000 + 1000))
        for i in range(40)
    }
    packed = tar_bytes(members, "w:gz")
    t = tmp_path / "cut.tgz"
    t.write_bytes(packed[: len(packed) // 2])
    got = list(read(str(t)))
    counts = per_source(got)
    complete = [s for s, c in counts.items() if c == (1000, 0)]
    assert complete == [f"{t}!m{i}.lines" for i in range(len(complete))]
    assert len(complete) >= 5
    # the member at the cut ends in one record, then one for the rest of the archive
    assert outcome(got[len(complete) * 1000 :]) == [
        (f"{t}!m{len(complete)}.lines", 0, "compression"),
        (str(t), 0, "compression"),
    ]
    assert got[-1].message.endswith("; the rest of the archive is not read")


def test_nothing_is_extracted_or_written_while_reading_hostile_archives(tmp_path):
    """An audit hook in a fresh interpreter sees every open for writing, mkdir, rename,
    symlink: reading hostile archives must cause none of them."""
    work = tmp_path / "work"
    work.mkdir()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name in ["../evil.lines", "/tmp/pubsift-evil.lines", "ok.lines"]:
            ti = tarfile.TarInfo(name)
            ti.size = 2
            t.addfile(ti, io.BytesIO(b"1\n"))
        ti = tarfile.TarInfo("link")
        ti.type = tarfile.SYMTYPE
        ti.linkname = "../../outside"
        t.addfile(ti)
    (work / "evil.tgz").write_bytes(buf.getvalue())
    make_zip(
        work / "evil.zip",
        {
            "../evil2.lines": b"1\n",
            "/abs.lines": b"1\n",
            "in.zip": make_zip(tmp_path / "in.zip", {"../x.lines": b"1\n"}).read_bytes(),
        },
    )
    zeros_zip(work / "bomb.zip", 8 << 20)
    script = f"""
import sys, os
sys.path.insert(0, {str(Path(__file__).parent)!r})
from toy_lines import LINES_READER
from pubsift.adapters import read, register_reader, ReadLimits
register_reader(LINES_READER)
seen = []
WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
def hook(event, args):
    if event == "open":
        mode, flags = args[1], args[2]
        if (isinstance(mode, str) and any(c in mode for c in "wax+")) or \\
                (isinstance(flags, int) and flags & WRITE):
            seen.append((event, str(args[0])))
    elif event in ("os.mkdir", "os.rename", "os.symlink", "os.link", "os.remove",
                   "os.rmdir", "os.truncate", "os.chmod", "os.utime", "shutil.copyfile"):
        seen.append((event, str(args[0])))
sys.addaudithook(hook)
n = sum(1 for _ in read({str(work)!r}, limits=ReadLimits(max_ratio=20, ratio_floor=65536)))
print(n, seen)
"""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    n, seen = done.stdout.split(" ", 1)
    assert int(n) >= 7 and seen.strip() == "[]", done.stdout
    assert sorted(os.listdir(work)) == ["bomb.zip", "evil.tgz", "evil.zip"]
    assert not (tmp_path / "evil.lines").exists() and not Path("/tmp/pubsift-evil.lines").exists()


# -- the real readers (skip until they are merged) ----------------------------------------


def _need(*formats: str) -> None:
    missing = [f for f in formats if f not in readers()]
    if missing:
        pytest.skip(f"reader(s) {', '.join(missing)} not registered yet")
    if not DATA.is_dir():
        pytest.skip(f"shared data folder {DATA} is absent")


def test_a_zip_mixing_csv_json_lines_an_rss_feed_and_an_nitf_document(tmp_path):
    _need("csv", "jsonl", "xml")
    import csv

    from lxml import etree

    feed = DATA / "feeds" / "real" / "ns-rss-news.xml"
    nitf = sorted((DATA / "nitf" / "wire").glob("*.xml"))[0]
    csv_text = "symbol,price,volume\nIBM,50.5,100\nINTC,20,\nMSFT,300.25,7\n"
    jsonl = '{"a": 1}\n{"a": 2, "b": "x"}\n[1]\n{"c": null}\n'
    z = make_zip(
        tmp_path / "mixed.zip",
        {
            "q/quotes.csv": csv_text.encode(),
            "e/events.jsonl": jsonl.encode(),
            "f/feed.rss": feed.read_bytes(),
            "n/article.xml": nitf.read_bytes(),
        },
    )
    got = list(read(str(z)))
    counts = per_source(got)
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert sum(counts[f"{z}!q/quotes.csv"]) == len(rows)
    assert sum(counts[f"{z}!e/events.jsonl"]) == len(jsonl.splitlines())
    assert counts[f"{z}!e/events.jsonl"][1] == 1  # [1] is not an object
    items = etree.fromstring(
        feed.read_bytes(), etree.XMLParser(resolve_entities=False, no_network=True)
    )
    n_items = int(items.xpath("count(//*[local-name()='item'])"))
    assert counts[f"{z}!f/feed.rss"] == (n_items, 0)
    assert counts[f"{z}!n/article.xml"] == (1, 0)
    assert {x.model for x in got if isinstance(x, Event)} == {"records", "xml"}
    assert len({x.id for x in got}) == len(got)


def test_real_quotes_csv_gz_in_a_tar_counts_rows_like_the_csv_module(tmp_path):
    _need("csv")
    import csv

    src = sorted((DATA / "quotes").glob("*.csv.gz"))
    if not src:
        pytest.skip("no quotes csv.gz in the shared data")
    with gzip.open(src[0], "rt", newline="") as fh:
        head = "".join(line for _, line in zip(range(2001), fh))
    t = tmp_path / "q.tar.gz"
    t.write_bytes(tar_bytes({"quotes.csv.gz": gzip.compress(head.encode())}, "w:gz"))
    got = list(read(str(t)))
    assert len(got) == len(list(csv.DictReader(io.StringIO(head)))) == 2000
    assert Counter(x.source for x in got) == {f"{t}!quotes.csv.gz": 2000}
    assert [x.position for x in got] == list(range(1, 2001))
    json.dumps([x.to_json() for x in got if isinstance(x, Quarantined)])


def test_an_archive_that_cannot_be_opened_is_one_unreadable_record():
    from pubsift.adapters import Source
    from pubsift.adapters.readers.inputs import expand

    def opener():
        raise PermissionError(13, "Permission denied")

    (q,) = expand(Source("x.zip"), "x.zip", opener, None, ReadLimits())
    assert (q.source, q.position, q.reason) == ("x.zip", 0, "unreadable")
    assert q.message == "cannot read: Permission denied"
