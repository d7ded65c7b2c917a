"""What a run leaves to read: ``report.html`` beside summary.json (self-contained, its
numbers the summary's, its quarantine examples records of the quarantine), opened in
headless Chromium where it is installed; the console summary (problems first, then the
largest, nothing wider than a line wraps when it is not a terminal); the warnings for a
model with subscribers and no events, or events and no subscriber."""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser

import pytest
from pubsift.adapters.readers.source import Source
from pubsift.adapters.spark import report, tables
from pubsift.adapters.spark.mismatch import model_warnings
from rich.console import Console

from tests.network import test_monitor_page as page

from . import kit
from .conftest import run_route

#: the monitor page test's selenium-driven headless Chromium, a fixture here too
browser = page.browser


class _Page(HTMLParser):
    """The tags, attributes and text of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


# -- the report ----------------------------------------------------------------------------------
@pytest.mark.spark
def test_the_report_is_self_contained_and_shows_the_summary(routed):
    html = (routed.out / "report.html").read_text(encoding="utf-8")
    page = parse(html)
    names = [t for t, _ in page.tags]
    assert "script" not in names and "link" not in names and "img" not in names
    for _, attrs in page.tags:  # nothing fetched from anywhere
        for key in ("src", "href"):
            assert not attrs.get(key), attrs
    assert not re.search(r"url\((?!#)", html) and "@import" not in html  # url(#clip) only
    # events per model, quarantine per reason, deliveries (top and distribution), stages
    assert names.count("svg") == 6, names.count("svg")
    text = " ".join(" ".join(page.text).split())
    summary = routed.summary
    assert f"{summary['read']:,} records read, {summary['events']:,} events" in text
    assert f"{summary['deliveries']:,} deliveries to {len(summary['subscribers'])}" in text
    for reason, n in summary["reasons"].items():
        assert f"{reason} ({n:,})" in text
    for source, c in summary["sources"].items():
        assert f"{source} {c['read']:,} {c['events']:,} {c['quarantined']:,}" in text
    for model in summary["models"]:  # the plots' labels are text of the SVG
        assert re.search(rf"<text[^>]*>{model}</text>", html), model
    assert "layout sorted" in text and "output format parquet" in text


@pytest.mark.spark
def test_the_report_s_examples_are_records_of_the_quarantine(routed):
    """Each reason shows min(3, count) examples, each one a record of the quarantine."""
    quarantined = kit.read_rows(routed.out / "quarantine", "parquet")
    records = {(q["source"], q["position"], q["reason"], q["message"]) for q in quarantined}
    examples = report.quarantine_examples(str(routed.out / "quarantine"), "parquet")
    assert set(examples) == set(routed.summary["reasons"])
    for reason, rows in examples.items():
        assert len(rows) == min(report.EXAMPLES, routed.summary["reasons"][reason])
        for r in rows:
            assert (r["source"], r["position"], reason, r["message"]) in records
    html = (routed.out / "report.html").read_text(encoding="utf-8")
    text = " ".join(" ".join(parse(html).text).split())
    for rows in examples.values():
        for r in rows:
            assert " ".join(r["message"].split()) in text


@pytest.mark.spark
@pytest.mark.skipif(page._browser_missing() is not None, reason=str(page._browser_missing()))
def test_the_report_renders_in_headless_chromium(routed, browser, tmp_path):
    """Chromium (driven by selenium, the monitor page test's browser) shows the plots and
    the tables, and loads nothing but the page itself; a screenshot is saved."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    # served over HTTP on 127.0.0.1: Chromium's resource timing sees no file:// fetches
    handler = functools.partial(Quiet, directory=str(routed.out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _check_in_browser(browser, f"http://127.0.0.1:{server.server_address[1]}", routed, tmp_path)
    finally:
        server.shutdown()
        server.server_close()


def _check_in_browser(browser, base: str, routed, tmp_path) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{base}/report.html")
    assert browser.title == "pubsift run report"
    svgs = browser.find_elements(By.TAG_NAME, "svg")
    assert len(svgs) == 6 and all(s.size["width"] > 100 and s.size["height"] > 50 for s in svgs)
    body = browser.find_element(By.TAG_NAME, "body").text
    summary = routed.summary
    assert f"Deliveries: {summary['deliveries']:,}" in body
    for reason, n in summary["reasons"].items():
        assert f"{reason} ({n:,})" in body
    fetched = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
    )
    # self-contained: no style sheet, font, image or script (the browser's own favicon aside)
    assert [u for u in fetched if not u.endswith("/favicon.ico")] == [], fetched
    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- the console ---------------------------------------------------------------------------------
def _summary(n_sources: int, n_subscribers: int) -> dict:
    sources = {
        f"/data/archive/{'deep/' * 8}file-{i:03d}.csv.gz": {
            "read": 10 * i,
            "events": 10 * i - (i % 9 == 1),
            "quarantined": int(i % 9 == 1),
        }
        for i in range(n_sources)
    }
    subscribers = {f"sub-{i:03d}": (7 * i) % 23 for i in range(n_subscribers)}
    return {
        "read": sum(c["read"] for c in sources.values()),
        "events": sum(c["events"] for c in sources.values()),
        "quarantined": sum(c["quarantined"] for c in sources.values()),
        "sources": sources,
        "deliveries": sum(subscribers.values()),
        "subscribers": subscribers,
        "warnings": ["model 'concepts' has 4 subscriber(s) but no events: " + "x" * 150],
    }


def test_the_console_lists_problems_first_then_the_largest_and_never_wraps_when_piped():
    summary = _summary(80, 60)
    out = io.StringIO()
    tables.show(summary, Console(file=out, width=80))
    lines = out.getvalue().splitlines()
    assert lines[1].startswith("warning: model 'concepts'")  # first, one line
    rows = [ln for ln in lines if ln.startswith("│ /data/")]
    shown = [ln.split("│")[1].strip() for ln in rows]
    sources = summary["sources"]
    problems = sorted(
        (s for s, c in sources.items() if c["quarantined"] or not c["read"]),
        key=lambda s: (-sources[s]["quarantined"], sources[s]["read"] != 0, s),
    )
    largest = sorted((s for s in sources if s not in problems), key=lambda s: -sources[s]["read"])
    assert shown == problems[: tables.SHOWN] + largest[: tables.SHOWN]
    # every source name whole on its row (as wide as it needs, not the 80 columns)
    assert all(s in ln for s, ln in zip(shown, rows))
    left = len(sources) - len(shown)
    (rest,) = [ln for ln in lines if f"… {left} smaller sources" in ln]
    assert rest.split("│")[2].strip() == str(sum(sources[s]["read"] for s in largest[20:]))
    subs = summary["subscribers"]
    got = [ln.split("│")[1].strip() for ln in lines if ln.startswith("│ sub-")]
    nothing = sorted(s for s, n in subs.items() if n == 0)
    busiest = sorted((s for s in subs if subs[s]), key=lambda s: (-subs[s], s))
    assert got == nothing + busiest[: tables.SHOWN]
    assert any(f"… {len(busiest) - tables.SHOWN} more" in ln for ln in lines)


def test_a_terminal_gets_tables_at_its_width():
    out = io.StringIO()
    tables.show(_summary(5, 3), Console(file=out, width=60, force_terminal=True))
    assert max(len(re.sub(r"\x1b\[[0-9;]*m", "", ln)) for ln in out.getvalue().splitlines()) <= 60


def test_model_warnings_name_both_directions():
    assert model_warnings({"records": 3, "xml": 2}, {"records": 10, "concepts": 5}) == [
        "model 'xml' has 2 subscriber(s) but no events: they receive nothing "
        "(no source of that model was read)",
        "model 'concepts' has 5 event(s) but no subscriber: none of them is delivered",
    ]
    assert model_warnings({"records": 1}, {"records": 1}) == []


@pytest.mark.spark
def test_a_model_without_events_or_without_subscribers_is_warned_about(sample, tmp_path):
    """Quotes and UBL documents routed for xml and concepts subscribers only: the records
    events have no subscriber, the xml subscribers no event."""
    files = sample.root / "files"
    sources = [
        Source(str(files / "quotes.csv")),
        Source(str(sample.root / "ubl"), model="concepts"),
    ]
    subscribers = [s for s in sample.subscribers if s.model in ("xml", "concepts")]
    n_xml = sum(s.model == "xml" for s in subscribers)
    run = run_route(subscribers, tmp_path / "out", sources=sources)
    warnings = run.summary["warnings"]
    assert warnings == [
        f"model 'xml' has {n_xml} subscriber(s) but no events: they receive nothing "
        "(no source of that model was read)",
        f"model 'records' has {run.summary['models']['records']} event(s) but no subscriber: "
        "none of them is delivered",
    ]
    assert all(run.summary["subscribers"][s.id] == 0 for s in subscribers if s.model == "xml")
    console = run.console.splitlines()
    said = [i for i, ln in enumerate(console) if ln.startswith("warning:")]
    assert [console[i] for i in said] == [f"warning: {w}" for w in warnings]
    first_table = min(i for i, ln in enumerate(console) if ln.strip().startswith("read:"))
    assert max(said) < first_table  # the summary begins with them
    assert kit.summary(tmp_path / "out")["warnings"] == warnings


@pytest.mark.spark
def test_the_shared_run_warns_about_nothing(routed):
    assert routed.summary["warnings"] == []
    assert "warning" not in routed.console


def test_spark_connect_progress_is_what_its_server_reports():
    """A Spark Connect session's progress handler: the unfinished stages' tasks and bytes."""
    from pubsift.adapters.spark.progress import ConnectProgress, Stages

    progress = pytest.importorskip(
        "pyspark.sql.connect.shell.progress", reason="the connect extra is not installed"
    )
    StageInfo = progress.StageInfo

    class Session:  # a Spark Connect session offers progress handlers, no SparkContext
        def __init__(self):
            self.handlers = []

        @property
        def sparkContext(self):
            raise RuntimeError("not on Spark Connect")

        def registerProgressHandler(self, handler):
            self.handlers.append(handler)

    session = Session()
    stages = Stages(Console(file=io.StringIO()), session)
    (handler,) = session.handlers
    assert isinstance(handler, ConnectProgress) and stages.now().text() == "waiting for tasks"
    handler(
        stages=[StageInfo(1, 8, 3, 1000, False), StageInfo(0, 2, 2, 50, True)],
        inflight_tasks=2,
        operation_id="op",
        done=False,
    )
    assert stages.now().text() == "3/8 tasks, 1,000 bytes read"


def test_quarantine_examples_of_json_lines_take_the_first_of_each_reason(tmp_path):
    """--format jsonl: the quarantine is text files of JSON lines; three examples a reason,
    in file order, the scan bounded."""
    import json

    folder = tmp_path / "quarantine"
    folder.mkdir()
    rows = [
        {"source": f"f{i}", "position": i, "reason": "json-syntax" if i % 3 else "unreadable"}
        for i in range(20)
    ]
    (folder / "part-00000-a.txt").write_text("".join(json.dumps(r) + "\n" for r in rows[:10]))
    (folder / "part-00001-a.txt").write_text(
        "\n" + "".join(json.dumps(r) + "\n" for r in rows[10:])
    )
    (folder / "_SUCCESS").write_text("")
    got = report.quarantine_examples(str(folder), "jsonl")
    assert got == {
        "unreadable": [rows[0], rows[3], rows[6]],
        "json-syntax": [rows[1], rows[2], rows[4]],
    }
