"""Derive the sample archive of ``make run`` from the shared real data (issue 12 §4).

    python examples/make_sample.py [--data DIR] [--out DIR]

reads the public data sets in ``DIR`` (default: ``../shared/data`` next to the project
root) and writes ``examples/sample/`` (or ``--out``): S&P 500 quotes as CSV.gz and as JSON
lines, RSS 1.0 / Atom feeds (plain and in a zip), YFilter's NITF documents in a tar.gz, UBL
business documents in a zip, one deliberately truncated feed, and ``PROVENANCE.md`` naming
each file's origin, upstream source, licence and what was cut or changed.

The output is the same bytes on every run: fixed member order, fixed timestamps in the zip,
tar and gzip headers, no randomness. ``tests/spark/test_examples.py`` checks that the
committed sample is what this script writes.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import json
import re
import shutil
import sys
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT / ".." / "shared" / "data"
DEFAULT_OUT = ROOT / "examples" / "sample"

#: Timestamp of every archive member (2000-01-01 00:00:00 UTC) and of the gzip headers (0).
MTIME = 946684800
ZIP_TIME = (2000, 1, 1, 0, 0, 0)

QUOTES_1YR = "quotes/all_stocks_1yr_2017-02-08_2018-02-07.csv"
#: Twelve symbols from several sectors; the first half year goes to the CSV, the rest to JSON.
SYMBOLS = ("AAPL", "AMZN", "BA", "GE", "GOOGL", "IBM", "JPM", "KO", "MSFT", "NVDA", "WMT",
           "XOM")
SPLIT_DATE = "2017-08-01"
#: The records wire form of a quote (models/records/workload.py): Name -> symbol, close -> price.
WIRE_COLUMNS = ("symbol", "price", "open", "high", "low", "volume", "date")
SOURCE_COLUMNS = ("date", "open", "high", "low", "close", "volume", "Name")

REAL_FEEDS = ("feeds/real/ns-rss-news.xml", "feeds/real/ns-atom.xml")
FEEDPARSER = ("feeds/feedparser/wellformed/rss/item_category.xml",
              "feeds/feedparser/wellformed/rss/item_category_multiple.xml",
              "feeds/feedparser/wellformed/atom10/entry_title.xml",
              "feeds/feedparser/wellformed/rdf/rdf_item_title.xml")
TRUNCATED = "feeds/real/ongoing.xml"
#: Where the truncated feed is cut: inside its fifth entry (four entries stay whole).
TRUNCATE_AT = 20000
NITF = tuple(f"yfilter/xmldocs/outFile{i}.xml" for i in (1, 2, 3, 4, 5, 6))
UBL = ("business/ubl/Invoice.xml", "business/ubl/UBL-OrderResponse-1.0-Joinery-Example.xml",
       "business/ubl/Order.xml")
#: A copy with its amounts in euros: the UBL examples have only GBP and USD amounts.
UBL_EUR = "business/ubl/OrderChange.xml"

#: Where each data folder records its upstream source and licence.
PROVENANCE_OF = {"quotes": "quotes/PROVENANCE.md", "feeds/real": "business/PROVENANCE.md",
                 "feeds/feedparser": "feeds/feedparser/PROVENANCE.md",
                 "yfilter": "yfilter/PROVENANCE.md", "business/ubl": "business/PROVENANCE.md"}
LICENCE_OF = {"quotes": "quotes/LICENSE.MIT.txt", "feeds/real": "business/LEGAL.txt",
              "feeds/feedparser": None, "yfilter": "yfilter/COPYRIGHT",
              "business/ubl": "business/LEGAL.txt"}


class SampleError(Exception):
    """The shared data is missing or not what the script expects."""


@dataclass
class Made:
    """One file of the sample: its bytes and where they came from."""

    path: str
    data: bytes
    origins: list[str]
    how: str
    members: list[str] = field(default_factory=list)


def _read(data: Path, rel: str) -> bytes:
    p = data / rel
    try:
        return p.read_bytes()
    except OSError as exc:
        raise SampleError(f"{p}: cannot read ({exc.strerror or exc}); is --data the shared "
                          "data folder?") from None


def _gzip(payload: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(payload)
    return buf.getvalue()


def _zip(members: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, payload in members:
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            info.create_system = 3
            zf.writestr(info, payload, compresslevel=9)
    return buf.getvalue()


def _tar_gz(members: list[tuple[str, bytes]]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, payload in members:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(payload), MTIME, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(payload))
    return _gzip(raw.getvalue())


def _quote(row: dict[str, str]) -> dict[str, object]:
    """A source row in the records wire form; empty cells are left out (absent attributes)."""
    event: dict[str, object] = {"symbol": row["Name"]}
    for attr, col in (("price", "close"), ("open", "open"), ("high", "high"), ("low", "low")):
        if row[col]:
            event[attr] = float(row[col])
    if row["volume"]:
        event["volume"] = int(row["volume"])
    event["date"] = row["date"]
    return event


def quotes(data: Path) -> list[Made]:
    """The quotes of SYMBOLS: before SPLIT_DATE as CSV.gz, from it on as JSON lines."""
    text = _read(data, QUOTES_1YR).decode("utf-8")
    rows = csv.DictReader(io.StringIO(text, newline=""))
    if tuple(rows.fieldnames or ()) != SOURCE_COLUMNS:
        raise SampleError(f"{data / QUOTES_1YR}: expected the header "
                          f"{','.join(SOURCE_COLUMNS)}, got {rows.fieldnames}")
    chosen = sorted((_quote(r) for r in rows if r["Name"] in SYMBOLS),
                    key=lambda q: (q["symbol"], q["date"]))
    first = [q for q in chosen if q["date"] < SPLIT_DATE]
    second = [q for q in chosen if q["date"] >= SPLIT_DATE]
    if not first or not second:
        raise SampleError(f"{data / QUOTES_1YR}: no quotes of {', '.join(SYMBOLS)} on both "
                          f"sides of {SPLIT_DATE}")
    out = io.StringIO(newline="")
    w = csv.writer(out, lineterminator="\n")
    w.writerow(WIRE_COLUMNS)
    for q in first:
        w.writerow([repr(q[c]) if isinstance(q.get(c), float) else q.get(c, "")
                    for c in WIRE_COLUMNS])
    jsonl = "".join(json.dumps(q) + "\n" for q in second)
    what = (f"the rows of {len(SYMBOLS)} symbols ({', '.join(SYMBOLS)}) "
            "in the records wire form (`Name` -> `symbol`, `close` -> `price`; numbers "
            "as Python floats, volume as an integer; columns "
            f"{','.join(WIRE_COLUMNS)})")
    return [Made("quotes/quotes-2017-02-to-07.csv.gz", _gzip(out.getvalue().encode()),
                 [QUOTES_1YR], f"{len(first)} quotes dated before {SPLIT_DATE}: {what}; "
                 "gzip"),
            Made("quotes/quotes-2017-08-to-2018-02.jsonl", jsonl.encode(), [QUOTES_1YR],
                 f"{len(second)} quotes dated {SPLIT_DATE} or later, one JSON object a "
                 f"line: {what}")]


def feeds(data: Path) -> list[Made]:
    """Two real feeds as they are, four feedparser test feeds in a zip, one cut short."""
    made = [Made("feeds/" + Path(rel).name, _read(data, rel), [rel], "unchanged")
            for rel in REAL_FEEDS]
    members = [(rel.split("/wellformed/")[1], _read(data, rel)) for rel in FEEDPARSER]
    made.append(Made("feeds/feedparser-tests.zip", _zip(members), list(FEEDPARSER),
                     "unchanged, packed in a zip (deflate, fixed timestamps)",
                     [m for m, _ in members]))
    whole = _read(data, TRUNCATED)
    cut = whole[:TRUNCATE_AT]
    if cut.count(b"<entry ") != 5 or cut.count(b"</entry>") != 4:
        raise SampleError(f"{data / TRUNCATED}: expected five entries starting and four ending in its first "
                          f"{TRUNCATE_AT} bytes")
    made.append(Made("feeds/broken/ongoing-truncated.xml", cut, [TRUNCATED],
                     f"**deliberately broken**: the first {TRUNCATE_AT} of {len(whole)} bytes, "
                     "cut inside the fifth entry; the four entries before the cut are read, "
                     "the rest is quarantined `xml-syntax`"))
    return made


def nitf(data: Path) -> list[Made]:
    """Six YFilter NITF documents in a tar.gz."""
    members = [("nitf/" + Path(rel).name, _read(data, rel)) for rel in NITF]
    return [Made("nitf/yfilter-nitf.tar.gz", _tar_gz(members), list(NITF),
                 "unchanged, packed in a tar.gz (ustar, fixed timestamps, gzip mtime 0)",
                 [m for m, _ in members])]


def ubl(data: Path) -> list[Made]:
    """Four UBL documents in a zip, one of them with its amounts changed to euros."""
    members = [("ubl/" + Path(rel).name, _read(data, rel)) for rel in UBL]
    original = _read(data, UBL_EUR)
    euro = original.replace(b'amountCurrencyID="GBP"', b'amountCurrencyID="EUR"')
    if euro == original:
        raise SampleError(f"{data / UBL_EUR}: no GBP amount to turn into euros")
    members.append(("ubl/OrderChange-EUR.xml", euro))
    return [Made("business/ubl-documents.zip", _zip(members), [*UBL, UBL_EUR],
                 "packed in a zip (deflate, fixed timestamps); unchanged except "
                 "`OrderChange-EUR.xml`, a copy of `OrderChange.xml` whose "
                 'amountCurrencyID="GBP" are "EUR" (the examples have no euro amounts)',
                 [m for m, _ in members])]


MAKERS: tuple[Callable[[Path], list[Made]], ...] = (quotes, feeds, nitf, ubl)


def _folder(rel: str) -> str:
    return next(k for k in PROVENANCE_OF if rel.startswith(k + "/"))


def _upstream(data: Path, folder: str) -> tuple[str, str]:
    """The upstream repository and licence lines of a data folder's PROVENANCE.md."""
    text = _read(data, PROVENANCE_OF[folder]).decode("utf-8")
    repo = re.search(r"^- Repo: (.+)$", text, re.M)
    licence = re.search(r"\bLicen[sc]e: (.+)$", text, re.M)
    if not repo or not licence:
        raise SampleError(f"{data / PROVENANCE_OF[folder]}: no 'Repo:' / 'License:' line")
    return repo.group(1).strip(), licence.group(1).strip()


def provenance(data: Path, made: list[Made]) -> bytes:
    """PROVENANCE.md: every file, its origins (with sha256), upstream and licence."""
    lines = ["# Provenance of the sample archive",
             "",
             "Generated by `python examples/make_sample.py` (optionally `--data DIR`, the "
             "shared data folder, default `../shared/data`) — do not edit: re-run the script. "
             "Every file below is derived from public data sets kept in the shared data "
             "folder; their upstream sources and licences are quoted from that folder's "
             "PROVENANCE.md and licence files.",
             ""]
    for m in made:
        lines += [f"## `{m.path}` ({len(m.data):,} bytes)", "", f"- What: {m.how}."]
        if m.members:
            lines.append("- Members: " + ", ".join(f"`{x}`" for x in m.members) + ".")
        lines.append("- From (shared data path, sha256 of the original):")
        for rel in m.origins:
            digest = hashlib.sha256(_read(data, rel)).hexdigest()
            lines.append(f"  - `{rel}` `{digest[:16]}…`")
        lines.append("")
    lines += ["## Upstream sources and licences", ""]
    for folder in PROVENANCE_OF:
        repo, licence = _upstream(data, folder)
        lines += [f"### `{folder}/` (described in `{PROVENANCE_OF[folder]}`)", "",
                  f"- Repository: {repo}", f"- Licence: {licence}"]
        if LICENCE_OF[folder]:
            notice = _read(data, LICENCE_OF[folder]).decode("utf-8").strip()
            lines += [f"- Licence text (`{LICENCE_OF[folder]}`):", "", "```", notice, "```"]
        lines.append("")
    return ("\n".join(lines).rstrip() + "\n").encode("utf-8")


def build(data: Path) -> dict[str, bytes]:
    """Every file of the sample, path relative to the sample folder -> bytes."""
    if not data.is_dir():
        raise SampleError(f"{data}: the shared data folder is absent (pass --data DIR)")
    made = [m for maker in MAKERS for m in maker(data)]
    files = {m.path: m.data for m in made}
    files["PROVENANCE.md"] = provenance(data, made)
    return dict(sorted(files.items()))


def check_out(out: Path) -> None:
    """Refuse an output folder this script did not write (it is replaced whole)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())
                         and not (out / "PROVENANCE.md").is_file()):
        raise SampleError(f"{out}: exists and was not written by this script "
                          "(no PROVENANCE.md); refusing to replace it")


def write(files: dict[str, bytes], out: Path) -> None:
    """Replace ``out`` by exactly ``files`` (a folder this script wrote, or a new one)."""
    check_out(out)
    if out.exists():
        shutil.rmtree(out)
    for rel, payload in files.items():
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(payload)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA,
                    help="the shared data folder (default: ../shared/data next to the project)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT,
                    help="where to write the sample (default: examples/sample)")
    args = ap.parse_args(argv)
    try:
        check_out(args.out)
        files = build(args.data.resolve())
        write(files, args.out)
    except SampleError as exc:
        sys.stderr.write(f"make_sample: {exc}\n")
        return 2
    total = sum(len(b) for b in files.values())
    print(f"wrote {len(files)} files, {total:,} bytes, to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
