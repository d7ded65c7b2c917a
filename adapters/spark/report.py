"""The job's report: ``report.html`` beside ``summary.json``, one self-contained page (no
script, no style sheet, font or image fetched from anywhere: the plots are inline SVG drawn
by matplotlib) that a browser opens from the output directory or from a mail.

It shows what the summary holds, drawn: events per model and per source, quarantined records
per reason with a few examples of each (read back from the quarantine just written),
deliveries per subscriber (the largest and the distribution of all), the wall time of each
stage, the warnings, and the job's settings.
"""

from __future__ import annotations

import glob
import html
import io
import json
import os
import warnings
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

#: bars of a plot at most (the largest; the tables and summary.json hold them all)
TOP = 20

#: examples of each quarantine reason shown
EXAMPLES = 3

#: quarantine records scanned at most for the examples
SCANNED = 100_000

#: rows of the sources table at most
SOURCE_ROWS = 500

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:.15em .6em;text-align:left;
vertical-align:top;border-bottom:1px solid #eee}td.n{text-align:right;font-variant-numeric:
tabular-nums}.warn{background:#fff3cd;border:1px solid #e0c060;padding:.4em .8em;margin:.3em 0}
code,pre{font:12px ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
td:last-child code{display:block;min-width:22em;max-height:12em;overflow:auto}
.plots{display:flex;flex-wrap:wrap;gap:1em}.plots figure{margin:0}
"""


def write(
    path: str,
    summary: Mapping[str, Any],
    settings: Mapping[str, Any],
    quarantine: str | None = None,
    fmt: str = "parquet",
) -> None:
    """Write the report of ``summary`` to ``path``; the examples of each quarantine reason
    come from the quarantine dataset at ``quarantine`` (in format ``fmt``), if given."""
    examples = quarantine_examples(quarantine, fmt) if quarantine else {}
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(render(summary, settings, examples))


def render(
    summary: Mapping[str, Any],
    settings: Mapping[str, Any],
    examples: Mapping[str, Sequence[Mapping[str, Any]]],
) -> str:
    """The report as one HTML document."""
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        "<title>pubsift run report</title>",
        f"<style>{STYLE}</style></head><body>",
        "<h1>pubsift run report</h1>",
        f"<p>{_headline(summary)}</p>",
    ]
    parts += [f'<p class="warn">warning: {e(w)}</p>' for w in summary.get("warnings", [])]
    models = summary.get("models", {})
    sources = summary.get("sources", {})
    if models or sources:
        parts.append("<h2>Events</h2>")
        plots = []
        if models:
            plots.append(_bars("events per model", models))
        if sources:
            largest = dict(sorted(sources.items(), key=lambda kv: -kv[1]["events"])[:TOP])
            title = f"events per source (the {len(largest)} largest of {len(sources)})"
            plots.append(_bars(title, {k: v["events"] for k, v in largest.items()}))
        parts.append(_figures(plots))
        parts.append(_sources_table(sources))
    reasons = summary.get("reasons", {})
    parts.append("<h2>Quarantine</h2>")
    if not reasons:
        parts.append("<p>nothing was quarantined</p>")
    else:
        parts.append(_figures([_bars("quarantined per reason", reasons)]))
        for reason, n in reasons.items():
            parts.append(f"<h3>{e(reason)} ({n:,})</h3>")
            rows = examples.get(reason, [])
            if rows:
                parts.append(
                    _table(
                        ("source", "position", "message", "excerpt"),
                        [
                            (r.get("source"), r.get("position"), r.get("message"), r.get("excerpt"))
                            for r in rows
                        ],
                        code={3},
                    )
                )
    subscribers = summary.get("subscribers")
    if subscribers is not None:
        parts.append(f"<h2>Deliveries: {summary.get('deliveries', 0):,}</h2>")
        top = dict(sorted(subscribers.items(), key=lambda kv: -kv[1])[:TOP])
        plots = [_bars(f"deliveries per subscriber (the {len(top)} largest)", top)]
        if subscribers:
            plots.append(_histogram("subscribers by deliveries", list(subscribers.values())))
        parts.append(_figures(plots))
        none = sorted(s for s, n in subscribers.items() if n == 0)
        if none:
            parts.append(
                f"<p>{len(none)} subscriber(s) received nothing: "
                + ", ".join(f"<code>{e(s)}</code>" for s in none[:200])
                + (" …" if len(none) > 200 else "")
                + "</p>"
            )
    seconds = {k: v for k, v in summary.get("seconds", {}).items() if k != "total"}
    if seconds:
        parts.append(f"<h2>Stages: {summary.get('seconds', {}).get('total', 0):.1f} s</h2>")
        parts.append(_figures([_bars("wall time per stage (s)", seconds)]))
    parts.append("<h2>Settings</h2>")
    parts.append(_table(("setting", "value"), [(k, _text(v)) for k, v in settings.items()]))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _headline(summary: Mapping[str, Any]) -> str:
    bits = []
    if "read" in summary:
        bits.append(
            f"{summary['read']:,} records read, {summary.get('events', 0):,} events, "
            f"{summary.get('quarantined', 0):,} quarantined"
        )
    if "deliveries" in summary:
        bits.append(
            f"{summary['deliveries']:,} deliveries to "
            f"{len(summary.get('subscribers', {})):,} subscribers"
        )
    if "store" in summary:
        bits.append(f"events from the store {summary['store']}")
    return html.escape("; ".join(bits))


def _text(v: Any) -> str:
    if isinstance(v, Mapping):
        return ", ".join(f"{k}={w}" for k, w in v.items()) or "-"
    if isinstance(v, list | tuple):
        return ", ".join(map(str, v)) or "-"
    return "-" if v is None else str(v)


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], code: Collection[int] = ()) -> str:
    e = html.escape
    out = ["<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>"]
    for row in rows:
        cells = []
        for i, v in enumerate(row):
            if isinstance(v, int):
                cells.append(f'<td class="n">{v:,}</td>')
            elif i in code:
                cells.append(f"<td><code>{e(str(v or ''))}</code></td>")
            else:
                cells.append(f"<td>{e('' if v is None else str(v))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "\n".join(out) + "</table>"


def _sources_table(sources: Mapping[str, Mapping[str, int]]) -> str:
    """As on the console (:func:`.tables.ranked_sources`): the problems first, then the
    largest, up to :data:`SOURCE_ROWS` of each."""
    from pubsift.adapters.spark.tables import ranked_sources

    shown, rest = ranked_sources(sources, SOURCE_ROWS)
    rows = [(s, sources[s]["read"], sources[s]["events"], sources[s]["quarantined"]) for s in shown]
    more = f"<p>… and {len(rest):,} smaller sources (summary.json)</p>" if rest else ""
    return _table(("source", "read", "events", "quarantined"), rows) + more


def _figures(svgs: Sequence[str]) -> str:
    return '<div class="plots">' + "".join(f"<figure>{s}</figure>" for s in svgs) + "</div>"


def _svg(fig: Any) -> str:
    """A matplotlib figure as inline SVG (text kept as text; no XML prolog)."""
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    with warnings.catch_warnings():  # a glyph the font lacks: the browser's fonts draw it
        warnings.filterwarnings("ignore", "Glyph .* missing from font", UserWarning)
        fig.savefig(buf, format="svg")  # margins set by the plot (a tight box renders twice)
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def warm() -> None:
    """Import matplotlib (a second or more) ahead of the report: the job calls this in a
    thread while Spark starts, when the driver mostly waits."""
    _pyplot()


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"
    plt.rcParams["svg.hashsalt"] = "pubsift"
    return plt


def _bars(title: str, values: Mapping[str, float]) -> str:
    """A horizontal bar chart of ``values`` in the order given (the first on top)."""
    plt = _pyplot()
    labels = [_short(k) for k in values]
    height = 0.9 + 0.28 * max(1, len(labels))
    fig, ax = plt.subplots(figsize=(7.5, height))
    # margins in inches: the labels' width at 8 pt (~0.065 in a character), title, ticks
    left = (0.2 + 0.065 * max(map(len, labels), default=1)) / 7.5
    fig.subplots_adjust(left=min(left, 0.6), right=0.94, top=1 - 0.35 / height, bottom=0.4 / height)
    bars = ax.barh(range(len(labels)), list(values.values()), color="#4c72b0")
    ax.bar_label(bars, labels=[f"{v:,.4g}" for v in values.values()], fontsize=7, padding=2)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_title(title, fontsize=10)
    ax.tick_params(axis="x", labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return _svg(fig)


def _histogram(title: str, counts: Sequence[int]) -> str:
    """How many subscribers got how many deliveries (bins of equal width)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 3))
    fig.subplots_adjust(left=0.14, right=0.96, top=0.9, bottom=0.16)
    ax.hist(counts, bins=min(30, max(1, len(set(counts)))), color="#55a868")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("deliveries", fontsize=8)
    ax.set_ylabel("subscribers", fontsize=8)
    ax.tick_params(labelsize=8)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return _svg(fig)


def _short(label: str, width: int = 48) -> str:
    """A long source path shortened from the left (its file name stays)."""
    return label if len(label) <= width else "…" + label[-(width - 1) :]


def quarantine_examples(path: str, fmt: str) -> dict[str, list[dict[str, Any]]]:
    """Up to :data:`EXAMPLES` records of each reason from the quarantine dataset at
    ``path`` (Parquet or JSON lines), scanning at most :data:`SCANNED` records."""
    out: dict[str, list[dict[str, Any]]] = {}
    for scanned, row in enumerate(_quarantine_rows(path, fmt)):
        if scanned >= SCANNED:
            break
        got = out.setdefault(str(row.get("reason")), [])
        if len(got) < EXAMPLES:
            got.append(row)
    return out


def _quarantine_rows(path: str, fmt: str) -> Iterator[dict[str, Any]]:
    files = sorted(
        f
        for f in glob.glob(os.path.join(glob.escape(path), "**", "part-*"), recursive=True)
        if os.path.isfile(f)
    )
    if fmt == "parquet":
        import pyarrow.parquet as pq

        for f in files:
            pf = pq.ParquetFile(f)
            for batch in pf.iter_batches(batch_size=1024):
                yield from batch.to_pylist()
    else:
        for f in files:
            with open(f, encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        yield json.loads(line)
