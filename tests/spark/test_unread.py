"""A listed file that never reached a task is quarantined, never silently missing
(``pubsift.adapters.spark.job.unread``; no Spark needed)."""

from pubsift.adapters.readers.source import Source
from pubsift.adapters.spark.ingest import Listing
from pubsift.adapters.spark.job import read_counts, unread


def _listing(*labels: str) -> Listing:
    return Listing(
        {f"/abs/{lab}": ((lab, Source(lab)),) for lab in labels},
        {f"/abs/{lab}": 1 for lab in labels},
        (),
    )


def test_files_with_rows_or_members_are_reached_and_the_others_are_not():
    listing = _listing("a.csv", "b!c.csv", "d.zip", "e.tar.gz", "f.jsonl", "g.zip")
    counts = [
        ("seen", "a.csv", None, None, 1),
        ("event", "a.csv", "records", None, 3),
        ("seen", "b!c.csv", None, None, 1),
        ("event", "d.zip!x/y.csv", "records", None, 2),
        ("quarantine", "e.tar.gz!in.zip!z.xml", "xml", "xml-syntax", 1),
        ("quarantine", "g.zip", None, "archive-bomb", 1),
    ]
    assert unread(listing, counts) == ["f.jsonl"]


def test_read_counts_add_up_per_source():
    counts = [
        ("seen", "a.csv", None, None, 1),
        ("event", "a.csv", "records", None, 3),
        ("quarantine", "a.csv", "records", "csv-syntax", 2),
        ("seen", "empty.csv", None, None, 1),
        ("quarantine", "gone", None, "unreadable", 1),
    ]
    s = read_counts(counts)
    assert s["sources"] == {
        "a.csv": {"read": 5, "events": 3, "quarantined": 2},
        "empty.csv": {"read": 0, "events": 0, "quarantined": 0},
        "gone": {"read": 1, "events": 0, "quarantined": 1},
    }
    assert (s["read"], s["events"], s["quarantined"]) == (6, 3, 3)
    assert s["models"] == {"records": 3}
    assert s["reasons"] == {"csv-syntax": 2, "unreadable": 1}
