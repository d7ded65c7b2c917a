"""What the Spark job tests share (DESIGN.md §2.4: batch routing gives exactly the online deliveries): a small mixed sample of every
model written into a directory, seeded random subscribers over it, the job's outputs read
back without Spark (pyarrow, or the JSON lines as text), and two independent oracles for the
deliveries: the plain-Python reading (:func:`pubsift.adapters.read`) matched by each model's
``matches``, and the online routing core (:class:`pubsift.core.network.Network`)."""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pubsift.adapters import Event, Quarantined, Source, read
from pubsift.core.registry import load_model

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / ".." / "shared" / "data"
SYMBOLS = ("AAL", "IBM", "KO", "GE", "XOM", "AAPL")
ATOM = "http://www.w3.org/2005/Atom"

Pairs = dict[str, set[tuple[str, int]]]


# -- the sample ------------------------------------------------------------------------------
def _quotes(rng: random.Random, n: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        close = round(rng.uniform(10, 200), 2)
        rows.append(
            {
                "date": f"2017-{1 + i % 12:02d}-{1 + i % 28:02d}",
                "open": round(close * rng.uniform(0.95, 1.05), 2),
                "close": close,
                "volume": rng.randrange(10_000, 20_000_000),
                "Name": rng.choice(SYMBOLS),
            }
        )
    return rows


RSS = """<?xml version="1.0"?>
<rss version="2.0"><channel><title>Sample news</title><link>http://example.com/</link>
<description>news</description>
{items}
</channel></rss>
"""
ATOM_FEED = f"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="{ATOM}"><title>Sample blog</title><id>urn:sample</id>
<updated>2017-01-01T00:00:00Z</updated>
<entry><title>Jazz tonight</title><id>urn:1</id><updated>2017-01-01T00:00:00Z</updated>
<category term="Music"/></entry>
<entry><title>Cooking pasta</title><id>urn:2</id><updated>2017-01-02T00:00:00Z</updated>
<category term="Food"/></entry>
<entry><title>Opera season</title><id>urn:3</id><updated>2017-01-03T00:00:00Z</updated>
<category term="Music"/></entry>
</feed>
"""
NITF = """<?xml version="1.0"?>
<nitf version="1"><head><title>{title}</title></head>
<body><body.head><hedline><hl1>{title}</hl1></hedline></body.head>
<body.content><p>{text}</p></body.content></body></nitf>
"""


def ubl(doc: str, currency: str, lines: Sequence[tuple[float, float, str]]) -> str:
    """A small UBL-like document: its lines are (price, quantity, unit code)."""
    body = "".join(
        f'<{doc}Line><ID>{i}</ID><Quantity unitCode="{unit}">{qty}</Quantity>'
        f'<Price><PriceAmount currencyID="{currency}">{price}</PriceAmount></Price>'
        f"</{doc}Line>"
        for i, (price, qty, unit) in enumerate(lines, 1)
    )
    total = sum(p * q for p, q, _ in lines)
    return (
        f'<?xml version="1.0"?>\n<{doc}><ID>{doc}-{currency}</ID>'
        f"<IssueDate>2017-03-01</IssueDate><LineExtensionTotalAmount currencyID="
        f'"{currency}">{total:.2f}</LineExtensionTotalAmount>{body}</{doc}>\n'
    )


#: the publisher side of the concepts CSV (docs/concepts.md; tests/adapters/test_concepts_sources.py)
QUOTES_PUBLISHER = {
    "concept": "StockQuote",
    "vocabulary": {
        "close": "FinalPrice",
        "open": "OpenPrice",
        "volume": "TradedVolume",
        "Name": "Symbol",
        "date": "DateOfIssue",
    },
    "context": {"currency": "USD", "units": {"[]": "count"}},
    "time_field": "date",
}


def write_sample(root: Path, seed: int, real: bool = True) -> list[Source]:
    """Files of every model under ``root`` (and, when ../shared/data exists and ``real``,
    a few real ones copied into it); returns the job's sources."""
    rng = random.Random(seed)
    files = root / "files"
    files.mkdir(parents=True)
    rows = _quotes(rng, 60)
    cols = ["date", "open", "close", "volume", "Name"]
    csv_lines = [",".join(cols)] + [",".join(str(r[c]) for c in cols) for r in rows[:40]]
    csv_lines.insert(7, "2017-01-07,1,2")  # csv-field-count, row 7
    (files / "quotes.csv").write_text("\n".join(csv_lines) + "\n")
    jl = [json.dumps(r) for r in rows[40:]]
    jl.insert(3, '{"date": "2017-02-02", "close": 1')  # json-syntax, line 4
    jl.append(json.dumps({**rows[0], "tags": ["energy", "blue-chip"]}))
    (files / "quotes.jsonl").write_text("\n".join(jl) + "\n")
    items = "\n".join(
        f"<item><title>{t}</title><category>{c}</category><description>{d}</description></item>"
        for t, c, d in (
            ("Cup final", "Sports", "goals"),
            ("Rates up", "Business", "bank"),
            ("Marathon", "Sports", "running"),
            ("Elections", "Politics", "vote"),
            ("Broken <b>", "Sports", "x"),
        )
    )
    (files / "news.rss").write_text(RSS.format(items=items.replace("<b>", "&undefined;")))
    (files / "blog.atom").write_text(ATOM_FEED)
    for i, (title, text) in enumerate(
        (("Markets rally", "Stocks rose in Sydney."), ("Rain", "Storms hit the coast."))
    ):
        (files / f"nitf-{i}.xml").write_text(NITF.format(title=title, text=text))
    (files / "empty.csv").write_bytes(b"")
    (files / "README.md").write_text("not an event file\n")  # unknown-format
    docs = root / "ubl"
    docs.mkdir()
    (docs / "invoice-eur.xml").write_text(
        ubl("Invoice", "EUR", [(40.0, 2, "KGM"), (60.0, 1, "KGM"), (120.0, 3, "LBR")])
    )
    (docs / "invoice-gbp.xml").write_text(
        ubl("Invoice", "GBP", [(95.0, 1, "KGM"), (20.0, 5, "PKG")])
    )
    (docs / "order-eur.xml").write_text(ubl("Order", "EUR", [(30.0, 4, "KGM")]))
    concept_csv = root / "concept-quotes.csv"
    concept_csv.write_text(
        "\n".join([",".join(cols)] + [",".join(str(r[c]) for c in cols) for r in rows[:15]]) + "\n"
    )
    sources = [
        Source(str(files)),
        Source(str(docs), model="concepts"),
        Source(str(concept_csv), publisher=QUOTES_PUBLISHER),
    ]
    if real and DATA.is_dir():
        sources += _real(root / "real")
    return sources


def _real(dest: Path) -> list[Source]:
    """A few real files: 80 rows of the 1-year quotes, a real Atom 0.3 feed, wire NITF, UBL."""
    dest.mkdir()
    quotes = DATA / "quotes" / "all_stocks_1yr_2017-02-08_2018-02-07.csv"
    with open(quotes, encoding="utf-8") as fh:
        head = [next(fh) for _ in range(81)]
    (dest / "quotes-1yr-head.csv").write_text("".join(head))
    for p in (
        DATA / "feeds" / "real" / "ns-atom.xml",
        DATA / "nitf" / "wire" / "ap.xml",
        DATA / "nitf" / "wire" / "aap-finance.xml",
    ):
        shutil.copy(p, dest / p.name)
    ubl_dir = dest / "ubl"
    ubl_dir.mkdir()
    for name in ("UBL-Invoice-1.0-Office-Example.xml", "UBL-Order-1.0-Joinery-Example.xml"):
        shutil.copy(DATA / "business" / "ubl" / name, ubl_dir / name)
    return [Source(str(dest), exclude=("ubl/*",)), Source(str(ubl_dir), model="concepts")]


# -- subscribers -------------------------------------------------------------------------------
def _records_clause(rng: random.Random, kind: int | None = None) -> tuple[str, dict[str, Any]]:
    """One random constraint in the text form and the EventBridge form; ``kind`` 0 and 1
    constrain Name, 2 close, 3 open, 4 volume."""
    kind = rng.randrange(5) if kind is None else kind
    if kind == 0:
        s = rng.choice(SYMBOLS)
        return f'Name = "{s}"', {"Name": [s]}
    if kind == 1:
        ss = sorted(rng.sample(SYMBOLS, 2))
        return "Name in {" + ", ".join(f'"{s}"' for s in ss) + "}", {"Name": ss}
    if kind == 2:
        v = round(rng.uniform(20, 190), 2)
        return f"close > {v}", {"close": [{"numeric": [">", v]}]}
    if kind == 3:
        v = round(rng.uniform(20, 190), 2)
        return f"open <= {v}", {"open": [{"numeric": ["<=", v]}]}
    v = rng.randrange(1_000_000, 19_000_000)
    return f"volume >= {v}", {"volume": [{"numeric": [">=", v]}]}


def subscriptions(seed: int, records: int = 24) -> list[dict[str, Any]]:
    """Subscriber entries (the JSON lines' form): ``records`` seeded random records
    subscribers (text conjunctions, EventBridge patterns, ``$or`` of several), and fixed xml
    and concepts subscribers for the sample's feeds, NITF and UBL documents."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for i in range(records):
        kinds = rng.sample([rng.randrange(2), 2, 3, 4], rng.randrange(1, 3))
        clauses = [_records_clause(rng, k) for k in kinds]
        style = i % 3
        if style == 0:
            spec: Any = " and ".join(c[0] for c in clauses)
        elif style == 1:
            spec = {}
            for _, pattern in clauses:
                spec.update(pattern)
        else:
            spec = {"$or": [dict(_records_clause(rng)[1]) for _ in range(rng.randrange(2, 4))]}
        out.append({"id": f"rec-{i:02d}", "model": "records", "filter": spec})
    # ids that are partition directory names Spark must escape, or could read as numbers
    # and dates (docs/spark.md, "What is written": deliveries/subscriber=<id>/ in the per-subscriber layout)
    for i, sid in enumerate(("odd id: 50% = [x]?#", "ünïcode-日本", "007", "2017-01-01")):
        out[i * 5 % len(out)]["id"] = sid
    out.append({"id": "rec-tagged", "model": "records", "filter": {"tags": ["energy"]}})
    out.append(
        {
            "id": "rec-all-or",
            "model": "records",  # two filters match
            "filter": {"$or": [{"close": [{"numeric": [">", 0]}]}, {"Name": [{"exists": True}]}]},
        }
    )
    out += [
        {"id": "xml-sports", "model": "xml", "filter": '/rss/channel/item[category = "Sports"]'},
        {"id": "xml-any-item", "model": "xml", "filter": "//item/title"},
        {"id": "xml-nitf", "model": "xml", "filter": '/nitf/head/title[contains(., "Markets")]'},
        {"id": "xml-nitf-p", "model": "xml", "filter": "/nitf//body.content/p"},
        {
            "id": "xml-atom-music",
            "model": "xml",
            "filter": {
                "xpath": '/a:feed/a:entry[a:category[@term = "Music"]]',
                "namespaces": {"a": ATOM},
            },
        },
        {
            "id": "xml-atom03",
            "model": "xml",
            "filter": {
                "xpath": "//a:entry/a:title",
                "namespaces": {"a": "http://purl.org/atom/ns#"},
            },
        },
        {"id": "xml-none", "model": "xml", "filter": "/nothing-here"},
        {
            "id": "eu-invoices",
            "model": "concepts",
            "filter": "Rechnung where Stueckpreis < 100",
            "vocabulary": {"Rechnung": "Invoice", "Stueckpreis": "UnitPrice"},
            "context": {"currency": "EUR"},
        },
        {
            "id": "uk-heavy",
            "model": "concepts",
            "filter": "BusinessDocument where NetWeight > 2 lb",
            "context": {"currency": "GBP"},
        },
        {
            "id": "uk-invoices",
            "model": "concepts",
            "filter": "Invoice where UnitPrice > 50",
            "context": {"currency": "GBP"},
        },
        {
            "id": "us-quotes",
            "model": "concepts",
            "filter": "StockQuote where FinalPrice > 100",
            "context": {"currency": "USD"},
        },
        {
            "id": "docs-since-2000",
            "model": "concepts",
            "filter": "BusinessDocument where DateOfIssue after 2000-01-01",
        },
        {
            "id": "all-symbols",
            "model": "concepts",
            "filter": 'StockQuote where Symbol in {"IBM", "KO"}',
        },
    ]
    return out


def write_subscriptions(path: Path, entries: Iterable[Mapping[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def _toml(value: Any) -> str:
    """A TOML value (strings as JSON strings: the same escapes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, Mapping):
        return (
            "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in value.items()) + " }"
        )
    return "[" + ", ".join(_toml(v) for v in value) + "]"


def write_job(path: Path, sources: Sequence[Source], subscriptions: Path) -> Path:
    """A TOML job file (``pubsift route JOB.toml``) of ``sources`` and ``subscriptions``."""
    from dataclasses import fields

    lines = [f"subscriptions = {_toml(str(subscriptions))}", ""]
    for src in sources:
        lines.append("[[source]]")
        for f in fields(Source):
            value = getattr(src, f.name)
            if value not in (None, (), {}) and not (isinstance(value, Mapping) and not value):
                lines.append(f"{f.name} = {_toml(value)}")
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


# -- outputs read back without Spark ---------------------------------------------------------------
def partition_value(dirname: str, column: str) -> str:
    """``column=value`` of a partition directory, with Spark's %XX escapes undone."""
    prefix = column + "="
    assert dirname.startswith(prefix), dirname
    return unquote(dirname[len(prefix) :])


def data_files(path: Path) -> list[Path]:
    return sorted(
        p
        for p in path.rglob("*")
        if p.is_file() and not p.name.startswith(("_", ".")) and not p.name.endswith(".crc")
    )


def read_rows(path: Path, fmt: str, partition: str | None = None) -> list[dict[str, Any]]:
    """The rows of an output part (``deliveries``, ``quarantine``, ``events``), Parquet with
    pyarrow or JSON lines with :mod:`json`; the partition column from the directory names
    when the files are in partition directories (the deliveries' sorted layout has the
    ``subscriber`` column in the files, docs/spark.md, "What is written")."""
    import pyarrow.parquet as pq

    rows = []
    for f in data_files(path):
        extra = {}
        if partition and f.parent != path:
            extra[partition] = partition_value(f.parent.name, partition)
        if fmt == "parquet":
            got = pq.read_table(f).to_pylist()
        else:
            got = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines()]
        rows += [{**r, **extra} for r in got]
    return rows


def delivered_pairs(out: Path, fmt: str = "parquet") -> Pairs:
    """subscriber -> {(source, position)} of the job's deliveries; asserts each pair once."""
    pairs: Pairs = {}
    for r in read_rows(out / "deliveries", fmt, "subscriber"):
        key = (r["source"], r["position"])
        got = pairs.setdefault(r["subscriber"], set())
        assert key not in got, f"{r['subscriber']} got {key} twice"
        got.add(key)
    return pairs


def summary(out: Path) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


# -- oracles --------------------------------------------------------------------------------------
def plain(sources: Sequence[Source]) -> list[Event | Quarantined]:
    return list(read(*sources))


def brute_force(subscribers: Sequence[Any], outcomes: Iterable[Any]) -> Pairs:
    """subscriber -> pairs of the events one of its filters ``matches`` (linear scan)."""
    pairs: Pairs = {}
    events = [o for o in outcomes if isinstance(o, Event)]
    for s in subscribers:
        model = load_model(s.model)
        got = {
            (e.source, e.position)
            for e in events
            if e.model == s.model and any(model.matches(f, e.event) for f in s.filters)
        }
        if got:
            pairs[s.id] = got
    return pairs


#: a filter of each model that matches every event the sample publishes (the publishers'
#: advertisements)
EVERYTHING = {"records": "true", "xml": "/*", "concepts": "Event"}


def online(subscribers: Sequence[Any], outcomes: Iterable[Any], seed: int = 0) -> Pairs:
    """subscriber -> pairs delivered by the simulated broker network (Mühl ch. 3; covering
    routing with advertisements): each subscriber a client subscribing its filters, one
    publisher client per source advertising :data:`EVERYTHING` of the models it publishes,
    then publishing its events; asserts no client is notified twice of one publication."""
    from pubsift.core.network import Network
    from pubsift.core.topology import hierarchy

    events = [o for o in outcomes if isinstance(o, Event)]
    names = sorted({s.model for s in subscribers} | {e.model for e in events})
    models = {m: load_model(m) for m in names}
    topo = hierarchy(levels=3, fanout=2)
    brokers = sorted(topo.brokers)
    rng = random.Random(seed)
    net = Network(topo, models, strategy="covering", advertisements=True, seed=seed)
    by_source: dict[str, list[Event]] = {}
    for e in events:
        by_source.setdefault(e.source, []).append(e)
    publishers = {}
    for i, (src, evs) in enumerate(sorted(by_source.items())):
        c = net.client(f"publisher-{i}", rng.choice(brokers))
        for m in sorted({e.model for e in evs}):
            c.advertise(m, models[m].parse_filter(EVERYTHING[m]))
        publishers[src] = c
    clients = {}
    for s in subscribers:
        c = clients[s.id] = net.client(f"sub:{s.id}", rng.choice(brokers))
        for f in s.filters:
            c.subscribe(s.model, f)
    net.run_until_quiet()
    ids = {}
    for src, evs in sorted(by_source.items()):
        for e in evs:
            ids[publishers[src].publish(e.model, e.event)] = (e.source, e.position)
    net.run_until_quiet()
    pairs: Pairs = {}
    for sid, c in clients.items():
        assert len(c.received) == len(set(c.received)), f"{sid} notified twice"
        if c.received:
            pairs[sid] = {ids[p] for p in c.received}
    return pairs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pubsift_cmd() -> list[str]:
    """The ``pubsift`` command of this interpreter's installation."""
    import sys

    exe = Path(sys.executable).with_name("pubsift")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "pubsift.cli"]


def spark_env(**extra: str) -> dict[str, str]:
    """The environment of a job run as a process: this interpreter for the workers."""
    import sys

    env = dict(
        os.environ,
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        PYTHONDONTWRITEBYTECODE="1",
    )
    env.update(extra)
    return env
