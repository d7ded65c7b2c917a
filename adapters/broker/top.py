"""``pubsift stats URL [--watch]``: a broker's status as tables in the terminal (rich),
refreshed in place like nats-top.

``URL`` is the broker's monitor (``http://HOST:PORT``, ``https://`` with ``[tls]``: its
``/status``, docs/monitoring.md) or the broker itself (``pubsift://HOST:PORT``: the
socket protocol's ``stats`` frame, docs/protocol.md §3, which has the table sizes, links
and totals but no rates, latency or version).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from pubsift.core.errors import PubsiftError
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

#: the rates ``/status`` has, in the order shown
RATES = (
    "publications_received",
    "forwards_received",
    "messages_received",
    "notifications_delivered",
    "forwarded",
)


class StatsError(PubsiftError):
    """A broker or monitor that cannot be read (unreachable, refused, not a monitor)."""


def is_http(url: str) -> bool:
    return url.startswith(("http://", "https://"))


def status_url(url: str) -> str:
    """The ``/status`` of a monitor URL given as its root, its page or its status."""
    base = url.rstrip("/")
    for tail in ("/status", "/metrics"):
        base = base.removesuffix(tail)
    return base + "/status"


def fetch_http(
    url: str, token: str | None = None, ca: str | None = None, timeout: float = 10.0
) -> dict[str, Any]:
    """The monitor's ``/status`` (``token``: sent as ``Authorization: Bearer``; ``ca``:
    the CA file that verifies an ``https://`` monitor)."""
    target = status_url(url)
    request = urllib.request.Request(target, headers={"Accept": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    context = ssl.create_default_context(cafile=ca) if target.startswith("https:") else None
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as resp:
            body = resp.read()
    except urllib.error.HTTPError as exc:
        why = exc.reason
        with contextlib.suppress(ValueError, AttributeError):
            why = json.loads(exc.read()).get("message", why)
        hint = " (give --token, or $PUBSIFT_TOKEN)" if exc.code == 401 and not token else ""
        raise StatsError(f"{target}: HTTP {exc.code}: {why}{hint}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise StatsError(f"cannot reach the monitor at {target}: {reason}") from None
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or "broker" not in doc:
        raise StatsError(f"{target}: not a pubsift broker's status (is it the monitor port?)")
    return doc


def from_stats_frame(frame: dict[str, Any]) -> dict[str, Any]:
    """A ``stats`` frame (docs/protocol.md §3) in the form of ``/status`` (what it has)."""
    forwarded = frame.get("forwarded") or {}
    return {
        "broker": frame.get("broker"),
        "connections": {
            "client": len(frame.get("clients") or ()),
            "broker": len(frame.get("neighbours") or ()),
        },
        "neighbours": [
            {"id": n, "state": "up", "forwarded_to": forwarded.get(n, 0)}
            for n in frame.get("neighbours") or ()
        ],
        "models": {
            m: {"subscriptions": {"local": sizes[0], "remote": sizes[1]}, "advertisements": None}
            for m, sizes in (frame.get("entries") or {}).items()
        },
        "counters": {
            "notifications_delivered": frame.get("notified"),
            "forwarded": sum(forwarded.values()),
            **{
                k: frame.get(k)
                for k in ("admin_sent", "admin_processed", "lost", "throttled", "slow_consumers")
            },
        },
    }


def _num(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 10 else f"{v:,.1f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _uptime(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)):
        return "–"
    s = int(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return (f"{d}d" if d else "") + (f"{h}h" if d or h else "") + f"{m}m{s:02d}s"


def render(status: dict[str, Any], source: str = "") -> RenderableType:
    """The status as a header line and tables."""
    conns = status.get("connections") or {}
    head = Text.assemble(
        ("broker ", "bold"),
        (str(status.get("broker")), "bold cyan"),
        f"  pubsift {status.get('version') or '–'}",
        f"  up {_uptime(status.get('uptime_seconds'))}",
        f"  strategy {status.get('strategy') or '–'}",
        "\nconnections: " + ", ".join(f"{k} {v}" for k, v in conns.items()),
        (f"  ({source})" if source else "", "dim"),
    )
    parts: list[RenderableType] = [head]

    neighbours = Table(title="neighbours", title_justify="left", expand=False)
    for col in ("broker", "state", "address", "messages in", "forwarded to", "admin to"):
        neighbours.add_column(col, justify="left" if col in ("broker", "address") else "right")
    for n in status.get("neighbours") or ():
        state = n.get("state")
        neighbours.add_row(
            str(n.get("id") or "(not linked)"),
            Text(str(state), style="green" if state == "up" else "red"),
            str(n.get("address") or "–"),
            _num(n.get("messages_in")),
            _num(n.get("forwarded_to")),
            _num(n.get("admin_to")),
        )
    if not status.get("neighbours"):
        neighbours.add_row("(none)", "", "", "", "", "")
    parts.append(neighbours)

    tables = Table(title="routing tables", title_justify="left")
    models = status.get("models") or {}
    tables.add_column("model", no_wrap=True, min_width=max(map(len, models), default=5))
    for col in ("subs local", "remote", "covering", "advs local", "remote"):
        tables.add_column(col, justify="right")
    for model, t in models.items():
        subs, advs = t.get("subscriptions") or {}, t.get("advertisements") or {}
        tables.add_row(
            model,
            _num(subs.get("local")),
            _num(subs.get("remote")),
            _num(subs.get("covering_ratio")),
            _num(advs.get("local")),
            _num(advs.get("remote")),
        )
    parts.append(tables)

    rates = status.get("rates")
    if rates:
        table = Table(title="rates (per second)", title_justify="left")
        for col in ("", "last 1 s", "last 1 min"):
            table.add_column(col, justify="left" if not col else "right")
        for k in RATES:
            table.add_row(
                k.replace("_", " "),
                _num((rates.get("1s") or {}).get(k)),
                _num((rates.get("1m") or {}).get(k)),
            )
        parts.append(table)

    counters = Table(title="counters", title_justify="left")
    counters.add_column("counter")
    counters.add_column("total", justify="right")
    for k, v in (status.get("counters") or {}).items():
        if isinstance(v, dict):
            for reason, n in v.items():
                counters.add_row(f"{k.replace('_', ' ')}: {reason}", _num(n))
        else:
            counters.add_row(k.replace("_", " "), _num(v))
    lat = status.get("latency_seconds")
    if lat:
        counters.add_row(
            "latency p50 / p99 (s, bucket bound)",
            f"{_num(lat.get('p50'))} / {_num(lat.get('p99'))}",
        )
    parts.append(counters)
    return Group(*parts)


def run(
    url: str,
    console: Console,
    watch: bool = False,
    interval: float = 1.0,
    options: dict[str, Any] | None = None,
) -> int:
    """Show the status once, or (``watch``) every ``interval`` seconds until Ctrl-C."""
    options = options or {}
    if is_http(url):

        def fetch() -> dict[str, Any]:
            return fetch_http(url, options.get("token"), options.get("ca"))

        return _show(fetch, url, console, watch, interval)
    try:
        return asyncio.run(_socket(url, console, watch, interval, options))
    except KeyboardInterrupt:  # --watch ends with Ctrl-C
        return 0


def _show(
    fetch: Callable[[], dict[str, Any]],
    url: str,
    console: Console,
    watch: bool,
    interval: float,
) -> int:
    if not watch:
        console.print(render(fetch(), url))
        return 0
    from rich.live import Live

    with Live(render(fetch(), url), console=console, screen=False, auto_refresh=False) as live:
        try:
            while True:
                time.sleep(interval)
                live.update(render(fetch(), url), refresh=True)
        except KeyboardInterrupt:
            pass
    return 0


async def _socket(
    url: str, console: Console, watch: bool, interval: float, options: dict[str, Any]
) -> int:
    from pubsift.adapters.broker.client import AsyncClient
    from rich.live import Live

    client = AsyncClient(url, **options)
    await client.connect()
    try:
        shown = render(from_stats_frame(await client.stats()), url)
        if not watch:
            console.print(shown)
            return 0
        with Live(shown, console=console, screen=False, auto_refresh=False) as live:
            while True:
                await asyncio.sleep(interval)
                live.update(render(from_stats_frame(await client.stats()), url), refresh=True)
    finally:
        await client.close()
