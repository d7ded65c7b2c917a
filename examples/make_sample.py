"""Derive the sample archive of ``make run`` from the shared real data.

    python examples/make_sample.py [--data DIR] [--out DIR]

reads the public data sets in ``DIR`` (default: ``../shared/data`` next to the project
root) and writes ``examples/sample/`` (or ``--out``): S&P 500 quotes as CSV.gz and as JSON
lines, feedparser's RSS 1.0 / Atom 0.3 / Atom 1.0 test feeds (plain and in a zip) and one of
its ill-formed feeds, YFilter's NITF documents in a tar.gz, UBL business documents in a zip,
and ``PROVENANCE.md`` naming each file's origin, upstream source, whole licence statement
(with its text) and what was cut or changed. Only files whose licence allows redistribution
are taken. It is the bundled sample archive of the embedded default (DESIGN.md §3, "Two
commands"; README, "What `make run` shows").

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
SYMBOLS = ("AAPL", "AMZN", "BA", "GE", "GOOGL", "IBM", "JPM", "KO", "MSFT", "NVDA", "WMT", "XOM")
SPLIT_DATE = "2017-08-01"
#: The records wire form of a quote (models/records/workload.py): Name -> symbol, close -> price.
WIRE_COLUMNS = ("symbol", "price", "open", "high", "low", "volume", "date")
SOURCE_COLUMNS = ("date", "open", "high", "low", "close", "volume", "Name")

#: Feeds copied as they are: an RSS 1.0 (RDF) item, an Atom 0.3 entry with a Media RSS
#: player, and an Atom 1.0 feed of two entries. All are the feedparser project's test feeds
#: (BSD licence); the real captured feeds of the shared data have no licence that allows
#: redistribution, so none is bundled.
PLAIN_FEEDS = (
    "feeds/feedparser/wellformed/rdf/rdf_item_description.xml",
    "feeds/feedparser/wellformed/media-rss/media_player1.xml",
    "feeds/feedparser/wellformed/atom10/entry_link_rel_enclosure_no_href.xml",
)
FEEDPARSER = (
    "feeds/feedparser/wellformed/rss/item_category.xml",
    "feeds/feedparser/wellformed/rss/item_category_multiple.xml",
    "feeds/feedparser/wellformed/atom10/entry_title.xml",
    "feeds/feedparser/wellformed/atom10/entry_category_term.xml",
    "feeds/feedparser/wellformed/rdf/rdf_item_title.xml",
)
#: The deliberately broken feed: feedparser's own ill-formed test feed, whose one item is
#: whole and whose closing tag ``</rss`` lacks its ``>``.
BROKEN = "feeds/feedparser/illformed/rss_item_link_corrupted_ampersands.xml"
NITF = tuple(f"yfilter/xmldocs/outFile{i}.xml" for i in (1, 2, 3, 4, 5, 6))
UBL = (
    "business/ubl/Invoice.xml",
    "business/ubl/UBL-OrderResponse-1.0-Joinery-Example.xml",
    "business/ubl/Order.xml",
)
#: A copy with its amounts in euros: the UBL examples have only GBP and USD amounts.
UBL_EUR = "business/ubl/OrderChange.xml"

#: Where each data folder records its upstream source and licence.
PROVENANCE_OF = {
    "quotes": "quotes/PROVENANCE.md",
    "feeds/feedparser": "feeds/feedparser/PROVENANCE.md",
    "yfilter": "yfilter/PROVENANCE.md",
    "business/ubl": "business/PROVENANCE.md",
}
#: The licence text copied into a data folder, if any.
LICENCE_OF = {
    "quotes": "quotes/LICENSE.MIT.txt",
    "feeds/feedparser": None,
    "yfilter": "yfilter/COPYRIGHT",
    "business/ubl": "business/LEGAL.txt",
}
#: A folder whose licence paragraph names several sets of terms: the one that covers the
#: files taken from it (business/PROVENANCE.md: "Third-party sample data keeps its own
#: terms: ... UBL 1.0 examples (OASIS) ..."; Nux's LEGAL.txt covers Nux itself).
TERMS_OF = {"business/ubl": "UBL 1.0 examples (OASIS)"}
#: The licence of feedparser and its unit tests, which the shared data names but does not
#: copy: the license block of LICENSE in https://github.com/kurtmckee/feedparser (its BSD
#: conditions ask redistributions to carry it).
FEEDPARSER_LICENSE = """\
feedparser and its unit tests are released under the following license:

Copyright (C) 2010-2025 Kurt McKee <contactme@kurtmckee.org>
Copyright (C) 2002-2008 Mark Pilgrim
All rights reserved.

Redistribution and use in source and binary forms, with or without modification,
are permitted provided that the following conditions are met:

*   Redistributions of source code must retain the above copyright notice,
    this list of conditions and the following disclaimer.
*   Redistributions in binary form must reproduce the above copyright notice,
    this list of conditions and the following disclaimer in the documentation
    and/or other materials provided with the distribution.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS 'AS IS'
AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE
ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT OWNER OR CONTRIBUTORS BE
LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR
CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF
SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS
INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN
CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE)
ARISING IN ANY WAY OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE
POSSIBILITY OF SUCH DAMAGE."""


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
        raise SampleError(
            f"{p}: cannot read ({exc.strerror or exc}); is --data the shared data folder?"
        ) from None


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
        raise SampleError(
            f"{data / QUOTES_1YR}: expected the header "
            f"{','.join(SOURCE_COLUMNS)}, got {rows.fieldnames}"
        )
    chosen = sorted(
        (_quote(r) for r in rows if r["Name"] in SYMBOLS), key=lambda q: (q["symbol"], q["date"])
    )
    first = [q for q in chosen if q["date"] < SPLIT_DATE]
    second = [q for q in chosen if q["date"] >= SPLIT_DATE]
    if not first or not second:
        raise SampleError(
            f"{data / QUOTES_1YR}: no quotes of {', '.join(SYMBOLS)} on both sides of {SPLIT_DATE}"
        )
    out = io.StringIO(newline="")
    w = csv.writer(out, lineterminator="\n")
    w.writerow(WIRE_COLUMNS)
    for q in first:
        w.writerow(
            [repr(q[c]) if isinstance(q.get(c), float) else q.get(c, "") for c in WIRE_COLUMNS]
        )
    jsonl = "".join(json.dumps(q) + "\n" for q in second)
    what = (
        f"the rows of {len(SYMBOLS)} symbols ({', '.join(SYMBOLS)}) "
        "in the records wire form (`Name` -> `symbol`, `close` -> `price`; numbers "
        "as Python floats, volume as an integer; columns "
        f"{','.join(WIRE_COLUMNS)})"
    )
    return [
        Made(
            "quotes/quotes-2017-02-to-07.csv.gz",
            _gzip(out.getvalue().encode()),
            [QUOTES_1YR],
            f"{len(first)} quotes dated before {SPLIT_DATE}: {what}; gzip",
        ),
        Made(
            "quotes/quotes-2017-08-to-2018-02.jsonl",
            jsonl.encode(),
            [QUOTES_1YR],
            f"{len(second)} quotes dated {SPLIT_DATE} or later, one JSON object a line: {what}",
        ),
    ]


def feeds(data: Path) -> list[Made]:
    """Three feedparser test feeds as they are, five more in a zip, and its ill-formed one."""
    made = [
        Made("feeds/" + Path(rel).name, _read(data, rel), [rel], "unchanged") for rel in PLAIN_FEEDS
    ]
    members = [(rel.split("/wellformed/")[1], _read(data, rel)) for rel in FEEDPARSER]
    made.append(
        Made(
            "feeds/feedparser-tests.zip",
            _zip(members),
            list(FEEDPARSER),
            "unchanged, packed in a zip (deflate, fixed timestamps)",
            [m for m, _ in members],
        )
    )
    broken = _read(data, BROKEN)
    if (
        broken.count(b"<item>") != 1
        or broken.count(b"</item>") != 1
        or not broken.rstrip().endswith(b"</rss")
    ):
        raise SampleError(
            f"{data / BROKEN}: expected one whole item and a last tag '</rss' without its '>'"
        )
    made.append(
        Made(
            "feeds/broken/" + Path(BROKEN).name,
            broken,
            [BROKEN],
            "**deliberately broken**, unchanged: feedparser's ill-formed test feed "
            "whose closing `</rss` lacks its `>`; its one item is read, the end "
            "is quarantined `xml-syntax`",
        )
    )
    return made


def nitf(data: Path) -> list[Made]:
    """Six YFilter NITF documents in a tar.gz."""
    members = [("nitf/" + Path(rel).name, _read(data, rel)) for rel in NITF]
    return [
        Made(
            "nitf/yfilter-nitf.tar.gz",
            _tar_gz(members),
            list(NITF),
            "unchanged, packed in a tar.gz (ustar, fixed timestamps, gzip mtime 0)",
            [m for m, _ in members],
        )
    ]


def ubl(data: Path) -> list[Made]:
    """Four UBL documents in a zip, one of them with its amounts changed to euros."""
    members = [("ubl/" + Path(rel).name, _read(data, rel)) for rel in UBL]
    original = _read(data, UBL_EUR)
    euro = original.replace(b'amountCurrencyID="GBP"', b'amountCurrencyID="EUR"')
    if euro == original:
        raise SampleError(f"{data / UBL_EUR}: no GBP amount to turn into euros")
    members.append(("ubl/OrderChange-EUR.xml", euro))
    return [
        Made(
            "business/ubl-documents.zip",
            _zip(members),
            [*UBL, UBL_EUR],
            "packed in a zip (deflate, fixed timestamps); unchanged except "
            "`OrderChange-EUR.xml`, a copy of `OrderChange.xml` whose "
            'amountCurrencyID="GBP" are "EUR" (the examples have no euro amounts)',
            [m for m, _ in members],
        )
    ]


MAKERS: tuple[Callable[[Path], list[Made]], ...] = (quotes, feeds, nitf, ubl)


def _folder(rel: str) -> str:
    return next(k for k in PROVENANCE_OF if rel.startswith(k + "/"))


def _upstream(data: Path, folder: str) -> tuple[str, str]:
    """The upstream repository line and the whole licence statement of a data folder's
    PROVENANCE.md: the ``License:`` line with its indented continuation lines."""
    text = _read(data, PROVENANCE_OF[folder]).decode("utf-8")
    repo = re.search(r"^- Repo: (.+)$", text, re.M)
    licence = re.search(r"\bLicen[sc]e: (.+(?:\n[ \t]+\S.*)*)", text)
    if not repo or not licence:
        raise SampleError(f"{data / PROVENANCE_OF[folder]}: no 'Repo:' / 'License:' line")
    return repo.group(1).strip(), " ".join(licence.group(1).split())


def provenance(data: Path, made: list[Made]) -> bytes:
    """PROVENANCE.md: every file, its origins (with sha256), upstream and licence."""
    lines = [
        "# Provenance of the sample archive",
        "",
        "Generated by `python examples/make_sample.py` (optionally `--data DIR`, the "
        "shared data folder, default `../shared/data`) — do not edit: re-run the script. "
        "Every file below is derived from public data sets kept in the shared data "
        "folder; their upstream sources and licences are quoted from that folder's "
        "PROVENANCE.md and licence files.",
        "",
    ]
    for m in made:
        lines += [f"## `{m.path}` ({len(m.data):,} bytes)", "", f"- What: {m.how}."]
        if m.members:
            lines.append("- Members: " + ", ".join(f"`{x}`" for x in m.members) + ".")
        folders = {_folder(rel) for rel in m.origins}
        if len(folders) != 1:
            raise SampleError(f"{m.path}: made from several data folders {sorted(folders)}")
        (folder,) = folders
        terms = TERMS_OF.get(folder) or _upstream(data, folder)[1]
        lines.append(f"- Licence (see `{folder}/` under Upstream sources and licences): {terms}")
        lines.append("- From (shared data path, sha256 of the original):")
        for rel in m.origins:
            digest = hashlib.sha256(_read(data, rel)).hexdigest()
            lines.append(f"  - `{rel}` `{digest[:16]}…`")
        lines.append("")
    lines += ["## Upstream sources and licences", ""]
    for folder in PROVENANCE_OF:
        repo, licence = _upstream(data, folder)
        lines += [
            f"### `{folder}/` (described in `{PROVENANCE_OF[folder]}`)",
            "",
            f"- Repository: {repo}",
            f"- Licence: {licence}",
        ]
        if folder in TERMS_OF:
            if TERMS_OF[folder] not in licence:
                raise SampleError(
                    f"{data / PROVENANCE_OF[folder]}: its licence no longer "
                    f"names {TERMS_OF[folder]!r}"
                )
            lines.append(
                f"- Terms of the files taken from it: {TERMS_OF[folder]}, as the "
                "licence above says of third-party sample data (the files carry "
                "no notice of their own); the licence text below is Nux's."
            )
        if LICENCE_OF[folder]:
            notice = _read(data, LICENCE_OF[folder]).decode("utf-8").strip()
            lines += [f"- Licence text (`{LICENCE_OF[folder]}`):", "", "```", notice, "```"]
        elif folder == "feeds/feedparser":
            lines += [
                "- Licence text (the license block of the repository's `LICENSE`, "
                "which the shared data names but does not copy):",
                "",
                "```",
                FEEDPARSER_LICENSE,
                "```",
            ]
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
    if out.exists() and (
        not out.is_dir() or (any(out.iterdir()) and not (out / "PROVENANCE.md").is_file())
    ):
        raise SampleError(
            f"{out}: exists and was not written by this script "
            "(no PROVENANCE.md); refusing to replace it"
        )


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
    ap.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="the shared data folder (default: ../shared/data next to the project)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help="where to write the sample (default: examples/sample)",
    )
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
