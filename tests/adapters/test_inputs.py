"""Inputs of a source (docs/adapters.md §1, §2): plain files,
directories read recursively in sorted order, glob patterns, .gz/.bz2 files; names as
specified; missing paths, empty directories, links and FIFOs quarantined, never raised."""

from __future__ import annotations

import bz2
import gzip
import os
import re
import sys
from pathlib import Path

import pytest
from pubsift.adapters import (
    Event,
    Quarantined,
    ReadLimits,
    Source,
    SourceError,
    read,
    register_reader,
)
from pubsift.adapters.readers.inputs import Input, inputs
from pubsift.adapters.readers.registry import unregister_reader

sys.path.insert(0, str(Path(__file__).parent))
from toy_lines import LINES_READER, oracle

LIMITS = ReadLimits()


@pytest.fixture(autouse=True)
def lines_reader():
    register_reader(LINES_READER)
    yield
    unregister_reader("lines")


def names(source: str | Source) -> list[str]:
    src = Source.of(source)
    return [
        x.name if isinstance(x, Input) else f"Q:{x.source}:{x.reason}" for x in inputs(src, LIMITS)
    ]


def tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root


def test_a_plain_file_is_one_input_named_as_given(tmp_path, monkeypatch):
    tree(tmp_path, {"a.lines": b"1\n2\n"})
    monkeypatch.chdir(tmp_path)
    (inp,) = inputs(Source("a.lines"), LIMITS)
    assert inp.name == "a.lines" and inp.source.path == "a.lines" and inp.size == 4
    with inp.open() as fh:
        assert fh.read() == b"1\n2\n"
    assert [x.id for x in read("a.lines")] == ["a.lines#1", "a.lines#2"]


def test_a_directory_is_read_recursively_in_sorted_order_with_names_joined(tmp_path, monkeypatch):
    tree(
        tmp_path / "data" / "feeds",
        {
            "b.lines": b"1\n",
            "a/b.lines": b"2\n",
            "a/a/z.lines": b"3\n",
            "c/d/e.lines": b"4\n",
            "a.lines": b"5\n",
        },
    )
    monkeypatch.chdir(tmp_path)
    assert names("data/feeds") == [
        "data/feeds/a/a/z.lines",
        "data/feeds/a/b.lines",
        "data/feeds/a.lines",
        "data/feeds/b.lines",
        "data/feeds/c/d/e.lines",
    ]
    assert names("data/feeds/") == names("data/feeds")
    assert names(str(tmp_path / "data")) == [str(tmp_path / n) for n in names("data")]
    # the settings follow each input, with path = its name
    got = list(inputs(Source("data/feeds", format="lines", model="records"), LIMITS))
    assert {(i.source.format, i.source.model) for i in got} == {("lines", "records")}
    assert all(i.source.path == i.name for i in got)


def test_hidden_files_and_directories_are_skipped(tmp_path):
    tree(
        tmp_path,
        {
            "a.lines": b"1\n",
            ".hidden.lines": b"2\n",
            ".git/x.lines": b"3\n",
            "sub/.DS_Store": b"4\n",
            "sub/b.lines": b"5\n",
        },
    )
    assert names(str(tmp_path)) == [f"{tmp_path}/a.lines", f"{tmp_path}/sub/b.lines"]


def test_an_empty_directory_or_only_hidden_files_is_quarantined_not_silent(tmp_path):
    (tmp_path / "empty").mkdir()
    tree(tmp_path / "hid", {".x.lines": b"1\n"})
    for d in ("empty", "hid"):
        (q,) = read(str(tmp_path / d))
        assert isinstance(q, Quarantined) and q.reason == "unreadable" and q.position == 0
        assert q.source == str(tmp_path / d) and "no file to read" in q.message


def test_a_missing_path_is_quarantined_naming_it(tmp_path):
    missing = str(tmp_path / "nope.lines")
    (q,) = read(missing)
    assert (q.source, q.position, q.reason) == (missing, 0, "unreadable")
    assert "no such file" in q.message


def test_symlinks_are_not_followed_out_of_the_tree_and_cannot_loop(tmp_path):
    outside = tree(tmp_path / "outside", {"secret.lines": b"9\n"})
    root = tree(tmp_path / "root", {"a.lines": b"1\n", "sub/b.lines": b"2\n"})
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "sub" / "up").symlink_to(root / "sub", target_is_directory=True)
    (root / "same.lines").symlink_to(root / "a.lines")
    (root / "out.lines").symlink_to(outside / "secret.lines")
    (root / "outdir").symlink_to(outside, target_is_directory=True)
    (root / "broken.lines").symlink_to(tmp_path / "gone")
    (root / "sub" / "dangling.lines").symlink_to(root / "sub" / "never-there.lines")
    got = list(read(str(root)))
    events = [x.id for x in got if isinstance(x, Event)]
    assert events == [f"{root}/a.lines#1", f"{root}/sub/b.lines#1"]
    quarantined = {x.source: x.message for x in got if isinstance(x, Quarantined)}
    assert set(quarantined) == {
        f"{root}/out.lines",
        f"{root}/outdir",
        f"{root}/broken.lines",
        f"{root}/sub/dangling.lines",
    }
    assert "broken" in quarantined[f"{root}/sub/dangling.lines"]
    assert "out of the tree" in quarantined[f"{root}/out.lines"]
    assert "broken" in quarantined[f"{root}/broken.lines"]
    assert all(x.reason == "unreadable" for x in got if isinstance(x, Quarantined))


def test_a_fifo_in_a_directory_is_quarantined_not_opened(tmp_path):
    tree(tmp_path, {"a.lines": b"1\n"})
    os.mkfifo(tmp_path / "pipe.lines")  # opening it would block: it must not be opened
    got = list(read(str(tmp_path)))
    assert [x.id for x in got] == [f"{tmp_path}/a.lines#1", f"{tmp_path}/pipe.lines#0"]
    assert got[1].reason == "unreadable" and "not a regular file" in got[1].message


def test_glob_patterns_match_sorted_with_recursive_double_star(tmp_path, monkeypatch):
    tree(
        tmp_path,
        {
            "d/x1.lines": b"1\n",
            "d/x2.lines": b"2\n",
            "d/y.lines": b"3\n",
            "d/sub/x3.lines": b"4\n",
            "d/sub/deep/x4.lines": b"5\n",
            "d/.x5.lines": b"6\n",
            "d/x[1].lines": b"7\n",
        },
    )
    monkeypatch.chdir(tmp_path)
    assert names("d/x?.lines") == ["d/x1.lines", "d/x2.lines"]
    assert names("d/x[2-9].lines") == ["d/x2.lines"]
    assert names("d/*.lines") == ["d/x1.lines", "d/x2.lines", "d/x[1].lines", "d/y.lines"]
    assert names("d/**/x*.lines") == [
        "d/sub/deep/x4.lines",
        "d/sub/x3.lines",
        "d/x1.lines",
        "d/x2.lines",
        "d/x[1].lines",
    ]
    assert names("d/.x*") == ["d/.x5.lines"]  # the dot spelled out
    # a file whose name looks like a pattern is read literally
    assert names("d/x[1].lines") == ["d/x[1].lines"]


def test_a_glob_matching_directories_reads_each_file_once(tmp_path, monkeypatch):
    tree(tmp_path, {"d/a/x.lines": b"1\n", "d/a/b/y.lines": b"2\n", "d/z.lines": b"3\n"})
    monkeypatch.chdir(tmp_path)
    got = names("d/**")
    assert sorted(got) == ["d/a/b/y.lines", "d/a/x.lines", "d/z.lines"]
    assert len(got) == len(set(got))


def test_a_glob_that_matches_nothing_is_quarantined(tmp_path):
    pattern = str(tmp_path / "*.nothing")
    (q,) = read(pattern)
    assert (q.source, q.position, q.reason) == (pattern, 0, "unreadable")
    assert "matches no file" in q.message


@pytest.mark.parametrize("suffix, compress", [(".gz", gzip.compress), (".bz2", bz2.compress)])
def test_compressed_files_are_decompressed_and_keep_their_name(tmp_path, suffix, compress):
    data = b"1\n2\nthree\n4\n"
    path = tmp_path / f"n.lines{suffix}"
    path.write_bytes(compress(data))
    (inp,) = inputs(Source(str(path)), LIMITS)
    assert inp.name == str(path)
    with inp.open() as fh:
        assert fh.read() == data
    with inp.open() as fh:  # open() gives a fresh stream every time
        assert fh.read(2) == b"1\n"
    got = list(read(str(path)))
    assert [x.position for x in got] == [1, 2, 3, 4]
    assert [type(x) for x in got] == [Event, Event, Quarantined, Event]
    assert (sum(isinstance(x, Event) for x in got), 1) == oracle(data)


@pytest.mark.parametrize(
    "suffix, compress, lines",
    [
        (".gz", gzip.compress, 20_000),
        # bzip2 gives nothing of a block cut short: 100 kB blocks (level 1), 3 of them
        (".bz2", lambda data: bz2.compress(data, compresslevel=1), 40_000),
    ],
)
def test_a_truncated_compressed_file_keeps_the_records_before_the_cut(
    tmp_path, suffix, compress, lines
):
    data = b"".join(b"%d\n" % i for i in range(lines))
    packed = compress(data)
    path = tmp_path / f"t.lines{suffix}"
    path.write_bytes(packed[: len(packed) * 4 // 5])
    got = list(read(str(path)))
    *events, last = got
    assert events and all(isinstance(x, Event) for x in events)
    assert [x.event["n"] for x in events] == list(range(len(events)))
    assert isinstance(last, Quarantined) and last.reason == "compression"
    assert last.position == len(events) + 1 and "truncated" in last.message
    assert len(events) < lines


@pytest.mark.parametrize("suffix", [".gz", ".bz2"])
def test_a_file_named_compressed_that_is_not_is_quarantined(tmp_path, suffix):
    path = tmp_path / f"plain.lines{suffix}"
    path.write_bytes(b"1\n2\n")
    (q,) = read(str(path))
    assert q.reason == "compression" and q.position == 0


def test_positions_and_ids_are_stable_across_runs(tmp_path):
    tree(tmp_path, {"a.lines": b"1\nx\n3\n", "b/c.lines.gz": gzip.compress(b"4\n5\n")})
    first = [(x.id, type(x).__name__) for x in read(str(tmp_path))]
    assert first == [(x.id, type(x).__name__) for x in read(str(tmp_path))]
    assert len({i for i, _ in first}) == len(first) == 5


# -- found by review: links, hidden names, special files -----------------------------------
def test_a_link_to_a_hidden_file_is_read_under_the_links_name_once(tmp_path):
    # the Kubernetes volume layout: q.lines -> ..data/q.lines, ..data -> ..2024_01_01
    d = tree(tmp_path / "mount", {"..2024_01_01/q.lines": b"1\n2\n", "plain.lines": b"3\n"})
    (d / "..data").symlink_to("..2024_01_01")
    (d / "q.lines").symlink_to("..data/q.lines")
    (d / "r.lines").symlink_to("..2024_01_01/q.lines")  # the same file again: read once
    (d / "p.lines").symlink_to("plain.lines")  # read under its own name
    got = list(read(str(d)))
    assert [x.id for x in got] == [f"{d}/plain.lines#1", f"{d}/q.lines#1", f"{d}/q.lines#2"]
    assert all(isinstance(x, Event) for x in got)


def test_a_link_to_a_hidden_directory_is_quarantined_not_silent(tmp_path):
    d = tree(tmp_path / "d", {".hidden/x.lines": b"1\n"})
    (d / "shown").symlink_to(".hidden", target_is_directory=True)
    got = list(read(str(d)))
    assert [(x.source, x.reason) for x in got] == [(f"{d}/shown", "unreadable")]
    assert "hidden directory" in got[0].message


def test_a_tree_of_only_directories_is_quarantined(tmp_path):
    (tmp_path / "d" / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "d" / "link").symlink_to(tmp_path / "d" / "sub", target_is_directory=True)
    got = list(read(str(tmp_path / "d")))
    assert [(x.id, x.reason) for x in got] == [(f"{tmp_path / 'd'}#0", "unreadable")]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
@pytest.mark.parametrize("how", ["path", "glob", "link"])
def test_a_fifo_given_as_the_path_is_quarantined_never_opened(tmp_path, how):
    import subprocess

    fifo = tmp_path / "f.lines"
    os.mkfifo(fifo)
    path = {"path": fifo, "glob": tmp_path / "f.*", "link": tmp_path / "l.lines"}[how]
    if how == "link":
        path.symlink_to(fifo)
    code = (
        "from pubsift.adapters import read; "
        f"print([(o.source, o.reason) for o in read({str(path)!r})])"
    )
    try:  # in a child process: a FIFO opened for reading blocks until a writer comes
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("read() of a FIFO blocks")
    shown = str(fifo) if how == "glob" else str(path)
    assert done.stdout.strip() == repr([(shown, "unreadable")]), done.stderr


def test_excluded_files_are_neither_read_nor_counted(tmp_path):
    import zipfile

    d = tree(
        tmp_path / "data",
        {
            "a.lines": b"1\n",
            "README.md": b"# data\n",
            "sub/PROVENANCE.txt": b"from x\n",
            "sub/b.lines": b"2\n",
            "docs/c.lines": b"3\n",
        },
    )
    with zipfile.ZipFile(d / "z.zip", "w") as z:
        z.writestr("notes.md", "x")
        z.writestr("in/m.lines", "4\n")
    src = Source(str(d), exclude=("*.md", "PROVENANCE*", "docs/*"))
    assert [x.id for x in read(src)] == [
        f"{d}/a.lines#1",
        f"{d}/sub/b.lines#1",
        f"{d}/z.zip!in/m.lines#1",
    ]
    assert [x.id for x in read(Source(str(d / "README.md"), exclude=["*.md"]))] == []
    assert Source.from_mapping({"path": "x", "exclude": ["*.md"]}).exclude == ("*.md",)
    with pytest.raises(SourceError):
        Source("x", exclude=["*.md", ""])
    # without exclude, the README is read and quarantined: the point of the setting
    assert "unknown-format" in [getattr(x, "reason", "") for x in read(str(d))]


@pytest.mark.parametrize(
    "setting, says",
    [
        ({"split": "a/b[1]"}, "is not an element name"),
        ({"format": "nosuch"}, "no reader for format 'nosuch'"),
        ({"model": "nosuch"}, "model 'nosuch' cannot be used"),
        ({"publisher": {"concept": "NoSuchConcept"}}, "NoSuchConcept"),
        ({"publisher": {"concept": "StockQuote"}, "model": "records"}, "concepts model"),
    ],
)
def test_a_setting_that_cannot_be_used_raises_before_anything_is_read(tmp_path, setting, says):
    d = tree(tmp_path / "mix", {"a.csv": b"a,b\n1,2\n", "b.xml": b"<r><x/></r>"})
    good = Source(str(d))
    with pytest.raises(SourceError, match=re.escape(says)):
        read(good, Source(str(d), **setting))  # raised by the call: nothing yielded
