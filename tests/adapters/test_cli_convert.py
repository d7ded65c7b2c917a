"""``pubsift convert`` and ``pubsift match`` on files, trees and archives (docs/adapters.md §6):
events as JSON lines (model, source, position, wire form), a quarantine file, counts per
source and per reason, exit codes 0/1/2, output written atomically."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import sys
import zipfile
from pathlib import Path

import pytest
from pubsift.adapters import Reader, register_reader
from pubsift.adapters.options import checked_sources
from pubsift.adapters.readers.registry import readers, unregister_reader
from pubsift.core.registry import load_model

from pubsift import cli

sys.path.insert(0, str(Path(__file__).parent))
from toy_lines import LINES_READER, oracle

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


@pytest.fixture(autouse=True)
def lines_reader():
    register_reader(LINES_READER)
    yield
    unregister_reader("lines")


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def mixed(tmp_path):
    """A directory of .lines files, plain, gzip and in a zip, with bad lines, a file no
    reader knows, and a corrupt gzip."""
    d = tmp_path / "in"
    (d / "sub").mkdir(parents=True)
    files = {"a.lines": b"1\n2\nx\n", "sub/b.lines": b"3\n"}
    for rel, data in files.items():
        (d / rel).write_bytes(data)
    (d / "c.lines.gz").write_bytes(gzip.compress(b"4\nfive\n6\n"))
    (d / "bad.lines.gz").write_bytes(b"\x1f\x8b\x08\x00 truncated")
    (d / "notes.unknown").write_bytes(b"\x00\x01\xfe\xff")  # binary: no reader claims it
    with zipfile.ZipFile(d / "z.zip", "w") as z:
        z.writestr("m/one.lines", "7\n8\n")
        z.writestr("../evil.lines", "9\n")
    expected = {  # source -> (events, quarantined): independent counts
        f"{d}/a.lines": oracle(files["a.lines"]),
        f"{d}/bad.lines.gz": (0, 1),
        f"{d}/c.lines.gz": oracle(b"4\nfive\n6\n"),
        f"{d}/notes.unknown": (0, 1),
        f"{d}/sub/b.lines": oracle(files["sub/b.lines"]),
        f"{d}/z.zip!../evil.lines": (0, 1),
        f"{d}/z.zip!m/one.lines": oracle(b"7\n8\n"),
    }
    return d, expected


def test_convert_writes_events_quarantine_and_counts_per_source_and_reason(mixed, tmp_path):
    d, expected = mixed
    out = tmp_path / "out.jsonl"
    code, stdout, err = run(["convert", d, "--out", out])
    assert code == 1
    assert all("warning: reader plug-in" in x for x in err.splitlines())
    events = jsonl(out)
    assert events[:3] == [
        {"model": "records", "source": f"{d}/a.lines", "position": 1, "event": {"n": 1}},
        {"model": "records", "source": f"{d}/a.lines", "position": 2, "event": {"n": 2}},
        {"model": "records", "source": f"{d}/c.lines.gz", "position": 1, "event": {"n": 4}},
    ]
    quarantine = jsonl(tmp_path / "out.quarantine.jsonl")
    assert {(q["source"], q["position"], q["reason"]) for q in quarantine} == {
        (f"{d}/a.lines", 3, "lines-syntax"),
        (f"{d}/bad.lines.gz", 0, "compression"),
        (f"{d}/c.lines.gz", 2, "lines-syntax"),
        (f"{d}/notes.unknown", 0, "unknown-format"),
        (f"{d}/z.zip!../evil.lines", 0, "archive-member"),
    }
    assert set(quarantine[0]) == {"source", "position", "reason", "message", "excerpt", "model"}
    # counts per source: from the files written, and as printed
    got: dict[str, list[int]] = {}
    for line in events:
        got.setdefault(line["source"], [0, 0])[0] += 1
    for q in quarantine:
        got.setdefault(q["source"], [0, 0])[1] += 1
    assert {k: tuple(v) for k, v in got.items()} == expected
    for source, (e, q) in expected.items():
        assert f"  {source}: {e + q} read, {e} events, {q} quarantined\n" in stdout
    assert (
        "reasons:\n  archive-member: 1\n  compression: 1\n  lines-syntax: 2\n"
        "  unknown-format: 1\n" in stdout
    )
    n_e = sum(e for e, _ in expected.values())
    n_q = sum(q for _, q in expected.values())
    assert (
        f"total: {n_e + n_q} read, {n_e} events -> {out}, {n_q} quarantined -> "
        f"{tmp_path / 'out.quarantine.jsonl'}\n" in stdout
    )


def test_convert_exits_0_when_nothing_is_quarantined(tmp_path):
    (tmp_path / "ok.lines").write_bytes(b"1\n2\n")
    out, q = tmp_path / "o.jsonl", tmp_path / "bad.jsonl"
    code, stdout, _ = run(
        ["convert", tmp_path / "ok.lines", "--out", out, "--quarantine", q, "--model", "records"]
    )
    assert code == 0 and len(jsonl(out)) == 2 and q.read_text() == ""
    assert "total: 2 read, 2 events" in stdout


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--model", "nosuch"], "no filter model named 'nosuch' is installed"),
        (["--format", "nosuch"], "no reader for format 'nosuch'"),
        (["--columns", "price"], "--columns takes NAME=VALUE, not 'price'"),
        (["--columns", "price=money"], "column 'price' has type 'money'"),
        (["--delimiter", ";;"], "delimiter is one character"),
        (["--ns", "=http://x"], "--ns takes NAME=VALUE"),
    ],
)
def test_convert_usage_errors_exit_2_with_one_line(tmp_path, argv, message):
    (tmp_path / "ok.lines").write_bytes(b"1\n")
    out = tmp_path / "o.jsonl"
    code, stdout, err = run(["convert", tmp_path / "ok.lines", "--out", out, *argv])
    assert code == 2 and stdout == ""
    assert err.startswith("pubsift convert: ") and err.count("\n") == 1, err
    assert message.lower() in err.lower()
    assert not out.exists() and sorted(os.listdir(tmp_path)) == ["ok.lines"]


def test_convert_refuses_quarantine_and_out_being_one_file(tmp_path):
    (tmp_path / "ok.lines").write_bytes(b"1\n")
    code, _, err = run(
        [
            "convert",
            tmp_path / "ok.lines",
            "--out",
            tmp_path / "o.jsonl",
            "--quarantine",
            tmp_path / "o.jsonl",
        ]
    )
    assert code == 2 and "same file" in err


def test_input_options_become_the_source_settings(tmp_path):
    args = cli.build_parser().parse_args(
        [
            "convert",
            "x.csv",
            "--out",
            "o.jsonl",
            "--format",
            "lines",
            "--split",
            "cac:InvoiceLine",
            "--ns",
            "cac=urn:cac",
            "--columns",
            "price=float,volume=int",
            "--columns",
            "ok=bool",
            "--delimiter",
            "\\t",
        ]
    )
    (src,) = checked_sources(args.paths, args, "records")
    assert (src.path, src.format, src.model, src.split, src.delimiter) == (
        "x.csv",
        "lines",
        "records",
        "cac:InvoiceLine",
        "\t",
    )
    assert dict(src.namespaces) == {"cac": "urn:cac"}
    assert dict(src.columns) == {"price": "float", "volume": "int", "ok": "bool"}


class InterruptingReader(Reader):
    """Yields one event, then the user presses ^C."""

    name = "interrupting"
    extensions = (".stop",)
    default_model = "records"

    def read(self, inp, model, limits):
        yield from LINES_READER.read(inp, model, limits)
        raise KeyboardInterrupt


def test_an_interrupted_convert_leaves_no_half_file_and_keeps_the_old_one(tmp_path):
    register_reader(InterruptingReader())
    try:
        (tmp_path / "a.stop").write_bytes(b"1\n2\n")
        out = tmp_path / "o.jsonl"
        out.write_text("the previous run\n")
        code, _, err = run(["convert", tmp_path / "a.stop", "--out", out])
    finally:
        unregister_reader("interrupting")
    assert code == 130 and "interrupted" in err
    assert out.read_text() == "the previous run\n"
    assert sorted(os.listdir(tmp_path)) == ["a.stop", "o.jsonl"]  # no temporary files


def test_an_event_the_model_cannot_write_is_quarantined(tmp_path, monkeypatch):
    records = load_model("records")
    real = records.dump_event

    def dump(e):
        if e["n"] == 2:
            raise ValueError("cannot dump two")
        return real(e)

    monkeypatch.setattr(records, "dump_event", dump)
    (tmp_path / "a.lines").write_bytes(b"1\n2\n3\n")
    out = tmp_path / "o.jsonl"
    code, _stdout, _ = run(["convert", tmp_path / "a.lines", "--out", out])
    assert code == 1 and [e["position"] for e in jsonl(out)] == [1, 3]
    (q,) = jsonl(tmp_path / "o.quarantine.jsonl")
    assert (q["position"], q["reason"]) == (2, "invalid-event")
    assert "dump_event: ValueError: cannot dump two" in q["message"]


def test_convert_needs_out(tmp_path):
    with pytest.raises(SystemExit) as exc, contextlib.redirect_stderr(io.StringIO()):
        cli.main(["convert", str(tmp_path)])
    assert exc.value.code == 2


# -- match on files, trees and archives --------------------------------------------------


def test_match_reads_trees_and_archives_naming_events_by_id(mixed):
    d, _expected = mixed
    code, out, err = run(["match", "-f", "n >= 3", "-f", "n = 7", "--all", d])
    lines = [json.loads(x) for x in out.splitlines()]
    assert lines == [
        {"event": f"{d}/a.lines#1", "matches": []},
        {"event": f"{d}/a.lines#2", "matches": []},
        {"event": f"{d}/c.lines.gz#1", "matches": ["n >= 3"]},
        {"event": f"{d}/c.lines.gz#3", "matches": ["n >= 3"]},
        {"event": f"{d}/sub/b.lines#1", "matches": ["n >= 3"]},
        {"event": f"{d}/z.zip!m/one.lines#1", "matches": ["n >= 3", "n = 7"]},
        {"event": f"{d}/z.zip!m/one.lines#2", "matches": ["n >= 3"]},
    ]
    problems = [x for x in err.splitlines() if "warning: reader plug-in" not in x]
    assert f"{d}/a.lines#3: lines-syntax: not an integer; quarantined" in problems
    assert any(x.startswith(f"{d}/notes.unknown#0: unknown-format: ") for x in problems)
    assert len(problems) == 6  # 5 quarantined records and the counts
    assert problems[-1] == "7 events, 2 filters, 6 matches, 5 quarantined"
    assert code == 1


def test_match_keeps_json_lines_files_and_stdin_as_before(tmp_path):
    events = tmp_path / "e.jsonl"
    events.write_text('{"n": 1}\n{"n": 5}\n')
    code, out, err = run(["match", "-f", "n > 2", events])
    assert code == 0 and json.loads(out) == {"event": f"{events}:2", "matches": ["n > 2"]}
    code, _, err = run(["match", "-f", "n > 2", "--format", "lines", "-"])
    assert code == 2 and err.startswith("pubsift match: standard input (-) is read as JSON")


def test_match_mixes_json_lines_files_with_other_inputs_in_order(tmp_path):
    (tmp_path / "e.jsonl").write_text('{"n": 5}\n')
    (tmp_path / "f.lines").write_text("6\n")
    code, out, _ = run(["match", "-f", "n > 2", tmp_path / "f.lines", tmp_path / "e.jsonl"])
    assert [json.loads(x)["event"] for x in out.splitlines()] == [
        f"{tmp_path}/f.lines#1",
        f"{tmp_path}/e.jsonl:1",
    ]
    assert code == 0


def test_readers_lists_the_registered_test_reader():
    _code, out, _ = run(["readers", "--json"])
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["lines"] == {
        "name": "lines",
        "extensions": [".lines"],
        "model": "records",
        "status": "ok",
    }


# -- with the real XML reader (skip until it is merged) ------------------------------------


def _need_xml() -> None:
    if "xml" not in readers():
        pytest.skip("the xml reader is not registered yet")


SPORTS_FEED = b"""<?xml version="1.0"?>
<rss version="2.0"><channel><title>News</title>
<item><title>Cup final</title><category>Sports</category></item>
<item><title>Rates up</title><category>Business</category></item>
<item><title>Derby</title><category>Local</category><category>Sports</category></item>
</channel></rss>
"""


def test_match_xml_filters_on_a_feed_match_its_items(tmp_path):
    _need_xml()
    feed = tmp_path / "feed.rss"
    feed.write_bytes(SPORTS_FEED)
    code, out, err = run(["match", "-m", "xml", "-f", '//item[category="Sports"]', feed])
    assert code == 0, err
    assert [json.loads(x) for x in out.splitlines()] == [
        {"event": f"{feed}#1", "matches": ['//item[category="Sports"]']},
        {"event": f"{feed}#3", "matches": ['//item[category="Sports"]']},
    ]
    assert "3 events, 1 filter, 2 matches" in err


def test_match_on_real_rss_feeds_agrees_with_lxml_per_item(tmp_path):
    _need_xml()
    from lxml import etree

    rss = DATA / "feeds" / "feedparser" / "wellformed" / "rss"
    if not rss.is_dir():
        pytest.skip(f"shared data folder {rss} is absent")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    files, expected = [], set()
    for f in sorted(rss.glob("item_*.xml")):
        try:
            root = etree.parse(str(f), parser).getroot()
        except etree.XMLSyntaxError:
            continue
        if root.tag != "rss":
            continue
        files.append(f)
        for i, item in enumerate(root.xpath("/rss/channel/item"), 1):
            if item.xpath("boolean(category)"):
                expected.add(f"{f}#{i}")
    assert expected, "the sample has items with a category"
    _code, out, err = run(["match", "-m", "xml", "-f", "/rss/channel/item[category]", *files])
    assert {json.loads(x)["event"] for x in out.splitlines()} == expected, err


def test_convert_lists_an_input_that_gives_no_record(tmp_path):
    (tmp_path / "a.lines").write_bytes(b"1\n")
    (tmp_path / "empty.lines").write_bytes(b"")
    out = tmp_path / "o.jsonl"
    code, stdout, _ = run(["convert", tmp_path, "--out", out])
    assert code == 0
    assert f"  {tmp_path}/empty.lines: 0 read, 0 events, 0 quarantined\n" in stdout
    assert stdout.splitlines()[-1].endswith("; 1 inputs gave no record")


@pytest.mark.parametrize("name", ["events.json", "events.txt", "events"])
def test_match_reads_other_plain_files_as_json_lines_as_before(tmp_path, name):
    events = tmp_path / name
    events.write_text('{"n": 1}\n{"n": 5}\nnot json\n')
    code, out, err = run(["match", "-f", "n > 2", events])
    assert json.loads(out) == {"event": f"{events}:2", "matches": ["n > 2"]}
    assert f"{events}:3: invalid JSON" in err and code == 1
    code, _, err = run(["match", "-f", "n > 2", tmp_path / "missing.txt"])
    assert code == 2 and "cannot read the events file" in err


def test_convert_into_a_folder_that_does_not_exist_is_a_usage_error(tmp_path):
    (tmp_path / "a.lines").write_bytes(b"1\n")
    code, _, err = run(["convert", tmp_path / "a.lines", "--out", tmp_path / "no" / "o.jsonl"])
    assert code == 2
    assert err == f"pubsift convert: cannot write {tmp_path / 'no'}: No such file or directory\n"


def test_the_output_files_get_the_usual_mode_not_the_temporary_files_private_one(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"x": 1}\n[1]\n')
    out = tmp_path / "o.jsonl"
    umask = os.umask(0o022)
    try:
        code, _, _ = run(["convert", tmp_path / "a.jsonl", "--out", out])
    finally:
        os.umask(umask)
    assert code == 1  # one line quarantined
    for path in (out, tmp_path / "o.quarantine.jsonl"):
        assert path.stat().st_mode & 0o777 == 0o644, path


def test_readme_reading_example_prints_what_it_says(capsys):
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = re.search(
        r"## Reading files, feeds and archives.*?```python\n(.*?)```", readme, re.S
    ).group(1)
    exec(compile(block, "README.md", "exec"), {})
    assert capsys.readouterr().out.split("\n") == ["1 True", "2 False", "2 csv-field-count", ""]


QUOTES_PUBLISHER = {
    "concept": "StockQuote",
    "time_field": "date",
    "vocabulary": {"close": "FinalPrice", "Name": "Symbol", "date": "DateOfIssue"},
    "context": {"currency": "USD"},
}


@pytest.mark.parametrize("form", ["json", "@json", "@toml"])
def test_convert_with_a_publisher_side_writes_semantic_objects(tmp_path, form):
    (tmp_path / "q.csv").write_text("date,close,Name\n2017-02-08,45.06,AAL\n2017-02-08,abc,IBM\n")
    if form == "json":
        value = json.dumps(QUOTES_PUBLISHER)
    elif form == "@json":
        (tmp_path / "pub.json").write_text(json.dumps(QUOTES_PUBLISHER))
        value = "@" + str(tmp_path / "pub.json")
    else:
        (tmp_path / "pub.toml").write_text(
            'concept = "StockQuote"\ntime_field = "date"\n[vocabulary]\nclose = "FinalPrice"\n'
            'Name = "Symbol"\ndate = "DateOfIssue"\n'
            '[context]\ncurrency = "USD"\n'
        )
        value = "@" + str(tmp_path / "pub.toml")
    out = tmp_path / "o.jsonl"
    code, _stdout, err = run(["convert", tmp_path / "q.csv", "--publisher", value, "--out", out])
    assert code == 1, err  # the second row's price is not a number
    (line,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert line["model"] == "concepts" and line["position"] == 1
    assert line["event"]["value"]["FinalPrice"] == {"value": 45.06, "context": {"currency": "USD"}}
    (bad,) = [json.loads(x) for x in (tmp_path / "o.quarantine.jsonl").read_text().splitlines()]
    assert (bad["position"], bad["reason"]) == (2, "concept-enrichment")
    assert "abc" in bad["message"]


@pytest.mark.parametrize(
    "value, says",
    [
        ('{"concept": "NoSuchConcept"}', "NoSuchConcept"),
        ('["StockQuote"]', "a publisher side is a JSON object"),
        ('{"concept": ', "invalid JSON"),
        ("@/nonexistent/pub.json", "cannot read"),
    ],
)
def test_a_publisher_side_that_cannot_be_used_is_a_usage_error(tmp_path, value, says):
    (tmp_path / "q.csv").write_text("close,Name\n45.06,AAL\n")
    code, _, err = run(
        ["convert", tmp_path / "q.csv", "--publisher", value, "--out", tmp_path / "o.jsonl"]
    )
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o.jsonl").exists()


# -- found by review: links, output paths, counts --------------------------------------------
def test_convert_out_through_a_symlink_writes_the_target_and_keeps_the_link(tmp_path):
    (tmp_path / "a.lines").write_bytes(b"1\n")
    target = tmp_path / "target.jsonl"
    target.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    code, _, err = run(
        ["convert", tmp_path / "a.lines", "--out", link, "--quarantine", tmp_path / "q.jsonl"]
    )
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert [e["position"] for e in jsonl(target)] == [1]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_convert_refuses_an_out_that_is_not_a_regular_file(tmp_path):
    (tmp_path / "a.lines").write_bytes(b"1\n")
    os.mkfifo(tmp_path / "pipe")
    for out in (tmp_path / "pipe", tmp_path):
        code, stdout, err = run(
            ["convert", tmp_path / "a.lines", "--out", out, "--quarantine", tmp_path / "q.jsonl"]
        )
        assert code == 2 and stdout == "" and "not a regular file" in err, err
    assert not (tmp_path / "q.jsonl").exists()


def test_convert_out_dash_writes_the_events_to_stdout(tmp_path):
    (tmp_path / "a.lines").write_bytes(b"1\nx\n")
    q = tmp_path / "q.jsonl"
    code, stdout, err = run(["convert", tmp_path / "a.lines", "--out", "-", "--quarantine", q])
    assert code == 1
    assert [json.loads(x)["position"] for x in stdout.splitlines()] == [1]
    assert [r["position"] for r in jsonl(q)] == [2]
    assert "total: 2 read, 1 events -> standard output, 1 quarantined" in err
    code, stdout, err = run(["convert", tmp_path / "a.lines", "--out", "-"])
    assert code == 2 and stdout == "" and "needs --quarantine" in err


def test_convert_prints_at_most_20_sources_problems_first_and_writes_all_to_summary(tmp_path):
    d = tmp_path / "many"
    d.mkdir()
    for i in range(30):
        (d / f"f{i:02d}.lines").write_bytes(b"1\n" * (i + 1))
    (d / "f29.lines").write_bytes(b"1\nbad\n")
    (d / "f28.lines").write_bytes(b"")
    summary = tmp_path / "summary.json"
    code, stdout, _ = run(["convert", d, "--out", tmp_path / "o.jsonl", "--summary", summary])
    assert code == 1
    lines = stdout.splitlines()
    shown = lines[1 : lines.index("  … and 10 more sources")]
    assert len(shown) == 20
    assert shown[0] == f"  {d}/f29.lines: 2 read, 1 events, 1 quarantined"  # problems first
    assert shown[1] == f"  {d}/f28.lines: 0 read, 0 events, 0 quarantined"  # then empty
    assert shown[2] == f"  {d}/f27.lines: 28 read, 28 events, 0 quarantined"  # then busiest
    full = json.loads(summary.read_text())
    assert len(full["sources"]) == 30
    assert (
        full["read"]
        == sum(c["read"] for c in full["sources"].values())
        == len(jsonl(tmp_path / "o.jsonl")) + 1
    )
    from pubsift.adapters.summary import Summary

    assert Summary.from_json(full).to_json() == full


def test_convert_exclude_and_limit_options(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    (d / "a.lines").write_bytes(b"1\n22222222\n")
    (d / "README.md").write_text("# about\n")
    (d / "PROVENANCE.txt").write_text("from\n")
    code, stdout, _ = run(["convert", d, "--out", tmp_path / "o.jsonl"])
    assert code == 1 and "unknown-format: 2" in stdout
    code, stdout, _ = run(
        [
            "convert",
            d,
            "--out",
            tmp_path / "o.jsonl",
            "--exclude",
            "*.md",
            "--exclude",
            "PROVENANCE*",
        ]
    )
    assert code == 0 and "README" not in stdout and "total: 2 read, 2 events" in stdout
    (tmp_path / "e.jsonl").write_text('{"a": 1}\n{"b": 22222222}\n')
    code, stdout, _ = run(
        [
            "convert",
            tmp_path / "e.jsonl",
            "--out",
            tmp_path / "o.jsonl",
            "--limit",
            "max_record_bytes=10",
        ]
    )
    assert code == 1 and "too-large: 1" in stdout
    for bad, says in [
        ("nosuch=1", "no limit named 'nosuch'"),
        ("max_ratio=x", "an integer"),
        ("max_ratio=0", "positive"),
    ]:
        code, _, err = run(["convert", d, "--out", tmp_path / "o.jsonl", "--limit", bad])
        assert code == 2 and says in err, err


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--split", "a/b[1]"], "is not an element name"),
        (["--publisher", '{"concept": "NoSuchConcept"}'], "NoSuchConcept"),
    ],
)
def test_a_setting_that_cannot_be_used_exits_2_before_anything_is_written(tmp_path, argv, says):
    d = tmp_path / "mix"
    d.mkdir()
    (d / "a.lines").write_bytes(b"1\n")
    (d / "b.xml").write_bytes(b"<r><x/></r>")
    out = tmp_path / "o.jsonl"
    code, stdout, err = run(["convert", d, "--out", out, *argv])
    assert code == 2 and stdout == "" and says in err and err.count("\n") == 1, err
    assert sorted(os.listdir(tmp_path)) == ["mix"]
    code, stdout, err = run(["match", "-f", "n > 0", d, *argv])
    assert code == 2 and stdout == "" and err.startswith("pubsift match: source "), err


def test_convert_encoding_option_reads_a_latin_1_csv(tmp_path):
    (tmp_path / "q.csv").write_bytes("name,city\nJosé,Zürich\n".encode("latin-1"))
    out = tmp_path / "o.jsonl"
    code, _, err = run(["convert", tmp_path / "q.csv", "--out", out])
    assert code == 1 and "encoding" in (tmp_path / "o.quarantine.jsonl").read_text()
    code, _, err = run(["convert", tmp_path / "q.csv", "--encoding", "latin-1", "--out", out])
    assert code == 0, err
    (line,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert line["event"] == {"name": "José", "city": "Zürich"}
    code, _, err = run(["convert", tmp_path / "q.csv", "--encoding", "rot13", "--out", out])
    assert code == 2 and "rot13" in err


def test_excluded_links_and_special_files_are_neither_read_nor_counted(tmp_path):
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "x.csv").write_text("a,b\n1,2\n")
    (d / "link.rss").symlink_to(tmp_path / "outside.rss")  # out of the tree
    (d / "dangling.rss").symlink_to(tmp_path / "nonexistent")
    os.mkfifo(d / "fifo.csv")
    (tmp_path / "outside.rss").write_text("<rss><channel/></rss>")
    out = tmp_path / "o.jsonl"
    code, stdout, err = run(
        ["convert", d, "--exclude", "fifo*", "--exclude", "*.rss", "--out", out]
    )
    assert code == 0, stdout + err
    assert (tmp_path / "o.quarantine.jsonl").read_text() == ""
    code, stdout, _ = run(["convert", d, "--out", out])
    assert code == 1
    reasons = [
        json.loads(x)["source"].rsplit("/", 1)[-1]
        for x in (tmp_path / "o.quarantine.jsonl").read_text().splitlines()
    ]
    assert sorted(reasons) == ["dangling.rss", "fifo.csv", "link.rss"]


def test_a_summary_that_is_not_a_regular_file_is_a_usage_error(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"x": 1}\n')
    os.mkfifo(tmp_path / "pipe")
    code, _, err = run(
        [
            "convert",
            tmp_path / "a.jsonl",
            "--out",
            tmp_path / "o.jsonl",
            "--summary",
            tmp_path / "pipe",
        ]
    )
    assert code == 2 and "not a regular file" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "o.jsonl").exists()


def test_a_publisher_message_names_the_option_once(tmp_path):
    (tmp_path / "q.csv").write_text("close\n1\n")
    code, _, err = run(
        ["convert", tmp_path / "q.csv", "--publisher", "{bad", "--out", tmp_path / "o.jsonl"]
    )
    assert code == 2 and err.count("--publisher") == 1, err
