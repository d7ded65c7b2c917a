"""The sample archive of ``make run`` (README.md, "Two commands"), checked without Spark: the committed
sample is what ``examples/make_sample.py`` writes, it fits in 2 MB, its one broken file is
quarantined with its reason and nothing else is lost, and every subscriber of
``examples/subscriptions.jsonl`` receives something — decided by the plain-Python adapters
and each model's ``matches`` (the oracle the Spark job is compared with)."""

from __future__ import annotations

import gzip
import importlib.util
import io
import json
import sys
import tarfile
import tomllib
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from pubsift.adapters import Event, Quarantined, Source, read
from pubsift.adapters.readers.dispatch import check
from pubsift.core.registry import load_model
from pubsift.models.concepts.vocabulary import VocabularyAgreement
from pubsift.models.xml.parsing import parse_document

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SAMPLE = EXAMPLES / "sample"
JOB = EXAMPLES / "job.toml"
SUBSCRIPTIONS = EXAMPLES / "subscriptions.jsonl"
DATA = ROOT / ".." / "shared" / "data"
BROKEN = "feeds/broken/rss_item_link_corrupted_ampersands.xml"
CSV_QUOTES = "quotes/quotes-2017-02-to-07.csv.gz"
JSON_QUOTES = "quotes/quotes-2017-08-to-2018-02.jsonl"
PLAIN_FEEDS = (
    "feeds/rdf_item_description.xml",
    "feeds/media_player1.xml",
    "feeds/entry_link_rel_enclosure_no_href.xml",
)
UBL_LINES = frozenset({"OrderLine", "InvoiceLine", "DespatchLine", "ReceiptLine", "LineItem"})


def _make_sample():
    """examples/make_sample.py as a module (a script, not part of the package)."""
    name = "pubsift_examples_make_sample"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, EXAMPLES / "make_sample.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while being made
        spec.loader.exec_module(module)
    return sys.modules[name]


def _committed() -> dict[str, bytes]:
    return {
        p.relative_to(SAMPLE).as_posix(): p.read_bytes()
        for p in sorted(SAMPLE.rglob("*"))
        if p.is_file()
    }


def _needs_data() -> None:
    if not DATA.is_dir():
        pytest.skip(f"shared data folder {DATA} is absent: the sample cannot be regenerated")


def _payload(name: str, data: bytes) -> object:
    """What a file holds, independent of the compressor's bytes: the decompressed stream,
    or each archive member's name, timestamp, mode and content."""
    if name.endswith(".tar.gz"):
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data))) as tar:
            return [
                (m.name, m.mtime, m.mode, m.uid, m.gid, tar.extractfile(m).read())
                for m in tar.getmembers()
            ]
    if name.endswith(".gz"):
        return gzip.decompress(data)
    if name.endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            return [(i.filename, i.date_time, i.external_attr, zf.read(i)) for i in zf.infolist()]
    return data


# -- the sample is what the script writes ---------------------------------------------------


def test_committed_sample_is_what_make_sample_writes(tmp_path):
    _needs_data()
    ms = _make_sample()
    assert ms.main(["--data", str(DATA), "--out", str(tmp_path / "sample")]) == 0
    made = {
        p.relative_to(tmp_path / "sample").as_posix(): p.read_bytes()
        for p in sorted((tmp_path / "sample").rglob("*"))
        if p.is_file()
    }
    committed = _committed()
    assert sorted(made) == sorted(committed)
    for name, data in made.items():
        # Same bytes; a zlib other than the one that made the commit may compress the same
        # content differently, so compressed files are compared by what they hold.
        assert data == committed[name] or (
            name.endswith((".gz", ".zip"))
            and _payload(name, data) == _payload(name, committed[name])
        ), f"{name} differs from what make_sample.py writes"


def test_make_sample_writes_the_same_bytes_every_time(tmp_path):
    _needs_data()
    ms = _make_sample()
    first, second = ms.build(DATA.resolve()), ms.build(DATA.resolve())
    assert first == second
    ms.write(first, tmp_path / "a")
    ms.write(second, tmp_path / "a")  # replaces its own output
    assert {
        p.relative_to(tmp_path / "a").as_posix(): p.read_bytes()
        for p in (tmp_path / "a").rglob("*")
        if p.is_file()
    } == first


def test_make_sample_refuses_to_replace_a_folder_it_did_not_write(tmp_path, capsys):
    _needs_data()
    ms = _make_sample()
    (tmp_path / "mine.txt").write_text("keep me")
    assert ms.main(["--data", str(DATA), "--out", str(tmp_path)]) == 2
    assert (tmp_path / "mine.txt").read_text() == "keep me"
    assert "refusing to replace it" in capsys.readouterr().err


def test_make_sample_names_a_missing_data_folder(tmp_path, capsys):
    ms = _make_sample()
    assert ms.main(["--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "s")]) == 2
    assert "the shared data folder is absent" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_sample_fits_in_two_megabytes_and_records_its_provenance():
    files = [p for p in SAMPLE.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) <= 2 * 1024 * 1024
    provenance = (SAMPLE / "PROVENANCE.md").read_text(encoding="utf-8")
    for p in files:
        rel = p.relative_to(SAMPLE).as_posix()
        if rel != "PROVENANCE.md":
            assert f"## `{rel}` ({p.stat().st_size:,} bytes)" in provenance
    for licence in ("MIT", "BSD", "Licence text"):
        assert licence in provenance


# -- the job file and what it reads -----------------------------------------------------------


def _job() -> dict:
    with JOB.open("rb") as fh:
        return tomllib.load(fh)


def _sources() -> list[Source]:
    return [
        Source.from_mapping({**t, "path": str(JOB.parent / t["path"])}) for t in _job()["source"]
    ]


@pytest.fixture(scope="module")
def outcomes() -> list[Event | Quarantined]:
    return list(read(*_sources()))


def test_job_file_names_the_sample_the_subscriptions_and_the_output():
    job = _job()
    assert job["spark"]["master"] == "local[*]"
    assert (JOB.parent / job["subscriptions"]).resolve() == SUBSCRIPTIONS
    assert (JOB.parent / job["out"]).resolve() == ROOT / "out"
    check(_sources())  # every setting usable (raises SourceError otherwise)
    assert {t["model"] for t in job["source"]} == {"records", "xml", "concepts"}


def test_job_sources_read_every_sample_file(outcomes):
    read_files = {o.source.split("!")[0] for o in outcomes}
    expected = {str(SAMPLE / rel) for rel in _committed() if rel != "PROVENANCE.md"}
    assert read_files == expected
    archives = {o.source for o in outcomes if "!" in o.source}
    assert any(".zip!" in s for s in archives) and any(".tar.gz!" in s for s in archives)


def test_the_broken_file_is_the_only_quarantine_with_its_reason(outcomes):
    quarantined = [o for o in outcomes if isinstance(o, Quarantined)]
    assert [(o.source, o.position, o.reason) for o in quarantined] == [
        (str(SAMPLE / BROKEN), 2, "xml-syntax")
    ]
    assert "the document ends early" in quarantined[0].message
    assert "expected '>'" in quarantined[0].message
    broken = [o for o in outcomes if o.source == str(SAMPLE / BROKEN)]
    assert [o.position for o in broken] == [1, 2]
    assert isinstance(broken[0], Event)


def _xml_items(data: bytes) -> int:
    """Items/entries of a feed, by the xml model's hardened parser (not the adapters)."""
    root = parse_document(data).root
    return len(root.xpath("//*[local-name() = 'item' or local-name() = 'entry']"))


def _ubl_lines(data: bytes) -> int:
    root = parse_document(data).root
    lines = [
        e
        for e in root.iter()
        if isinstance(e.tag, str)
        and e.tag.rsplit("}", 1)[-1] in UBL_LINES
        and not any(a.tag.rsplit("}", 1)[-1] in UBL_LINES for a in e.iterancestors())
    ]
    return len(lines) or 1


def _members(path: Path) -> list[tuple[str, bytes]]:
    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path) as zf:
            return [(i.filename, zf.read(i)) for i in zf.infolist()]
    with tarfile.open(path) as tar:
        return [(m.name, tar.extractfile(m).read()) for m in tar.getmembers()]


def test_read_is_events_plus_quarantined_per_file(outcomes):
    """Records in each file counted independently: CSV rows, JSON lines, feed items by
    lxml, UBL lines, one per NITF document; the broken feed: its items plus one quarantine
    record for its end."""
    expected: Counter[str] = Counter()
    with gzip.open(SAMPLE / CSV_QUOTES, "rt", encoding="utf-8") as fh:
        expected[str(SAMPLE / CSV_QUOTES)] = sum(1 for _ in fh) - 1
    expected[str(SAMPLE / JSON_QUOTES)] = len((SAMPLE / JSON_QUOTES).read_bytes().splitlines())
    for feed in PLAIN_FEEDS:
        expected[str(SAMPLE / feed)] = _xml_items((SAMPLE / feed).read_bytes())
    expected[str(SAMPLE / BROKEN)] = (SAMPLE / BROKEN).read_bytes().count(b"<item>") + 1
    archive = SAMPLE / "feeds/feedparser-tests.zip"
    for name, data in _members(archive):
        expected[f"{archive}!{name}"] = _xml_items(data)
    archive = SAMPLE / "nitf/yfilter-nitf.tar.gz"
    for name, _data in _members(archive):
        expected[f"{archive}!{name}"] = 1
    archive = SAMPLE / "business/ubl-documents.zip"
    for name, data in _members(archive):
        expected[f"{archive}!{name}"] = _ubl_lines(data)
    got = Counter(o.source for o in outcomes)
    assert got == expected
    assert sum(isinstance(o, Event) for o in outcomes) == sum(expected.values()) - 1
    assert len({o.id for o in outcomes}) == len(outcomes)


def test_readme_counts_are_the_sample_s(outcomes):
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    events = sum(isinstance(o, Event) for o in outcomes)
    quarantined = len(outcomes) - events
    assert f"Reading the sample gives {events:,} events and one quarantine record" in readme
    assert quarantined == 1
    assert f"\n{len(_subscribers())} subscribers, one JSON object a line" in readme


def test_quotes_in_csv_and_json_lines_are_the_same_kind_of_event(outcomes):
    """One records filter means the same on both quote files: same attributes and types."""

    def shapes(rel: str) -> set:
        return {
            tuple(sorted((k, type(v).__name__) for k, v in o.event.items()))
            for o in outcomes
            if o.source == str(SAMPLE / rel)
        }

    assert (
        shapes(CSV_QUOTES)
        == shapes(JSON_QUOTES)
        == {
            tuple(
                sorted(
                    [
                        ("date", "str"),
                        ("high", "float"),
                        ("low", "float"),
                        ("open", "float"),
                        ("price", "float"),
                        ("symbol", "str"),
                        ("volume", "int"),
                    ]
                )
            )
        }
    )


# -- every subscriber receives something --------------------------------------------------------


def _subscribers() -> list[dict]:
    lines = SUBSCRIPTIONS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _filters(sub: dict) -> list:
    model = load_model(sub["model"])
    if sub["model"] == "concepts":
        agreement = VocabularyAgreement(model, sub.get("vocabulary", {}), sub.get("context", {}))
        return [agreement.subscribe(sub["filter"])]
    return model.parse_filters(sub["filter"])


def test_subscriptions_cover_every_model_and_filter_form():
    subs = _subscribers()
    assert 10 <= len(subs) <= 20
    assert len({s["id"] for s in subs}) == len(subs)
    assert {s["model"] for s in subs} == {"records", "xml", "concepts"}
    records = [s for s in subs if s["model"] == "records"]
    assert any(isinstance(s["filter"], str) for s in records)
    assert any(isinstance(s["filter"], dict) and "$or" in s["filter"] for s in records)
    assert any(isinstance(s["filter"], dict) and "$or" not in s["filter"] for s in records)
    currencies = {s.get("context", {}).get("currency") for s in subs if s["model"] == "concepts"}
    assert {"EUR", "GBP"} <= currencies
    for s in subs:
        assert set(s) <= {"id", "model", "filter", "vocabulary", "context"}


@pytest.mark.parametrize("sub", _subscribers(), ids=lambda s: s["id"])
def test_every_subscriber_parses_and_receives_a_delivery(sub, outcomes):
    filters = _filters(sub)
    model = load_model(sub["model"])
    hits = [
        o
        for o in outcomes
        if isinstance(o, Event)
        and o.model == sub["model"]
        and any(model.matches(f, o.event) for f in filters)
    ]
    assert hits, f"{sub['id']} receives nothing from the sample"


def test_one_records_filter_matches_both_quote_files(outcomes):
    (sub,) = [s for s in _subscribers() if s["id"] == "apple-above-150"]
    (f,) = _filters(sub)
    model = load_model("records")
    files = {
        o.source
        for o in outcomes
        if isinstance(o, Event) and o.model == "records" and model.matches(f, o.event)
    }
    assert files == {str(SAMPLE / CSV_QUOTES), str(SAMPLE / JSON_QUOTES)}


def test_currency_decides_the_concepts_deliveries(outcomes):
    """The euro subscriber gets the euro order change and not the pound orders (no rate
    table: amounts match in their own currency only); the pound one the reverse."""
    got = {}
    model = load_model("concepts")
    for s in _subscribers():
        if s["model"] == "concepts" and s["id"] in ("eu-order-desk", "uk-heavy-orders"):
            (f,) = _filters(s)
            got[s["id"]] = {
                o.source.rsplit("/", 1)[-1]
                for o in outcomes
                if isinstance(o, Event) and o.model == "concepts" and model.matches(f, o.event)
            }
    assert got == {"eu-order-desk": {"OrderChange-EUR.xml"}, "uk-heavy-orders": {"Order.xml"}}


def test_heavy_orders_are_delivered_in_the_subscriber_s_pounds(outcomes):
    """uk-heavy-orders' context names its mass unit, so the order stored as 100 kilogram is
    delivered in pounds; oracle: the international pound is exactly 0.45359237 kg."""
    from pubsift.adapters.spark.subscriptions import load_subscriptions

    (sub,) = [s for s in load_subscriptions(str(SUBSCRIPTIONS)) if s.id == "uk-heavy-orders"]
    model = load_model("concepts")
    hits = [
        (f, o)
        for o in outcomes
        if isinstance(o, Event) and o.model == "concepts"
        for f in sub.filters
        if model.matches(f, o.event)
    ]
    assert len(hits) == 1
    f, o = hits[0]
    stored = model.dump_event(o.event)["value"]["NetWeight"]
    assert stored == {"value": 100, "context": {"unit": "kilogram"}}
    delivered = sub.delivered(model, f, o.event)
    assert "unconverted" not in delivered
    assert delivered["value"]["NetWeight"] == pytest.approx(100 / 0.45359237, rel=1e-12)
    assert delivered["value"]["TotalAmount"] == 100.0  # already in the context's GBP


def test_provenance_records_each_file_s_whole_licence_and_no_unlicensed_source():
    """Every file's licence is recorded (examples/), the upstream licence statements are
    quoted whole (not cut at their first line), and nothing comes from the captured real
    feeds, whose licence ("feeds (their authors)") does not allow redistribution."""
    provenance = (SAMPLE / "PROVENANCE.md").read_text(encoding="utf-8")
    sections = provenance.split("\n## ")[1:]
    files = [s for s in sections if not s.startswith("Upstream sources")]
    assert len(files) == len(_committed()) - 1
    for section in files:
        assert "\n- Licence (see `" in section, section.splitlines()[0]
    assert "feeds/real/" not in provenance
    assert "keeps its own terms:\n" not in provenance
    assert (
        "keeps its own terms: XMark (CWI, xml-benchmark.org, free for benchmarking), "
        "FpML examples (FpML.org public license), UBL 1.0 examples (OASIS)"
    ) in provenance
    assert (
        "Licence (see `business/ubl/` under Upstream sources and licences): UBL 1.0 "
        "examples (OASIS)" in provenance
    )
    # feedparser's BSD conditions: redistributions carry its notice and conditions.
    assert "Copyright (C) 2002-2008 Mark Pilgrim" in provenance
    assert "Redistributions of source code must retain the above copyright notice" in provenance


def test_upstream_licence_statement_is_read_whole(tmp_path):
    """_upstream keeps the indented continuation lines of a ``License:`` item and stops at
    the next item."""
    ms = _make_sample()
    (tmp_path / "quotes").mkdir()
    (tmp_path / "quotes" / "PROVENANCE.md").write_text(
        "# x\n\n- Repo: https://example.org/r\n- License: first line,\n  second line;\n"
        "\tthird.\n- Files: not the licence\n",
        encoding="utf-8",
    )
    assert ms._upstream(tmp_path, "quotes") == (
        "https://example.org/r",
        "first line, second line; third.",
    )
