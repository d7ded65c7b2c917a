"""The broker's monitor port (docs/monitoring.md): what a broker holds and has done, read
at request time from the daemon's own counters, in the daemon's event loop (aiohttp, as
the gateway).

=================  ===============================================================
``GET /metrics``   Prometheus' text exposition (``prometheus_client``, one custom
                   collector reading the counters at scrape time)
``GET /status``    the same as one JSON document (:func:`status`), with rates over
                   the last second and the last minute
``GET /``          a page of its own (no file outside this process is loaded) that
                   shows the status and fetches ``/status`` again every second
=================  ===============================================================

With ``[identities]`` every request needs the token of an identity with ``monitor =
true``, as ``Authorization: Bearer <token>`` (Prometheus' ``authorization``) or as the
password of HTTP Basic authentication (what a browser asks for), or a verified TLS
client certificate naming such an identity; else 401. Without identities the
configuration refuses a monitor bound beyond loopback (:meth:`BrokerConfig.check`).
No label names a client or subscriber: clients are counted together, only neighbour
brokers (which the operator configured) are told apart.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import time
from collections import Counter, deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from pubsift.adapters.broker.auth import Grant
from pubsift.adapters.broker.config import Address
from pubsift.adapters.broker.gateway import serve
from pubsift.adapters.broker.monitor_page import PAGE
from pubsift.adapters.broker.tls import peer_names
from pubsift.core.messages import Level
from pubsift.core.routing_table import RoutingTable

if TYPE_CHECKING:
    from pubsift.adapters.broker.daemon import BrokerDaemon

log = logging.getLogger("pubsift.monitor")

#: seconds between the samples the rates are computed from, and how many are kept
SAMPLE_EVERY = 1.0
SAMPLES = 62
#: the rate windows of ``/status``, in seconds
WINDOWS = {"1s": 1.0, "1m": 60.0}
#: frame kinds as the metrics name them (a batch frame's count is of its publications)
KIND_NAMES = {"pubs": "pub", "forwards": "forward"}


def version() -> str:
    """The installed pubsift's version."""
    from pubsift import __version__

    return __version__


def totals(d: BrokerDaemon) -> dict[str, int]:
    """The counters the rates of ``/status`` are taken of."""
    b = d.broker
    assert b is not None
    pubs = forwards = messages = 0
    for (role, _), counts in d.received.items():
        messages += sum(counts.values())
        if role == "client":
            pubs += counts["pub"] + counts["pubs"]
        else:
            forwards += counts["forward"] + counts["forwards"]
    return {
        "publications_received": pubs,
        "forwards_received": forwards,
        "messages_received": messages,
        "notifications_delivered": b.notified,
        "forwarded": sum(b.forwarded.values()),
    }


def _connections(d: BrokerDaemon) -> dict[str, int]:
    streams = d.gateway.subscribers if d.gateway is not None else 0
    internal = len(d._exempt) + streams  # the gateway's own clients: publishers, streams
    return {
        "client": max(len(d.port.clients) - internal, 0),
        "broker": len(d.port.neighbours),
        "http_stream": streams,
    }


def _neighbours(d: BrokerDaemon) -> list[dict[str, Any]]:
    """The neighbours: linked ones (``up``), configured ones not linked now (``down``),
    and those whose link went down within the lease period (``down``, by id)."""
    b = d.broker
    assert b is not None
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for pid, conn in sorted(d.port.neighbours.items()):
        counts = d.received.get(("broker", pid)) or Counter()
        out.append(
            {
                "id": pid,
                "state": "up",
                "address": conn.peer,
                "dialled": conn.dialled,
                "messages_in": sum(counts.values()),
                "forwarded_to": b.forwarded[pid],
                "admin_to": d.port.admin_sent[pid],
                "backlog_bytes": conn.backlog,
            }
        )
        seen.add(pid)
    out.extend(
        {"id": pid, "state": "down", "address": None, "dialled": None}
        for pid in sorted(set(d._absent) & b.neighbours - seen)
    )
    dialled = [c.writer.get_extra_info("peername") for c in d.port.neighbours.values() if c.dialled]
    out.extend(
        {"id": None, "state": "down", "address": str(a), "dialled": True}
        for a in d.config.neighbours
        if not any(_same(peer, a) for peer in dialled)
    )
    return out


def _same(peer: Any, a: Address) -> bool:
    """Whether a dialled connection's peer address is the configured ``a`` (a host
    name: by the port alone)."""
    import ipaddress

    if not isinstance(peer, tuple) or peer[1] != a.port:
        return False
    try:
        return ipaddress.ip_address(a.host) == ipaddress.ip_address(peer[0])
    except ValueError:
        return True


def _bound(q: float | None) -> float | str | None:
    """A quantile's bucket bound as JSON can hold it: beyond the last bound it is
    ``"+Inf"`` (as Prometheus names that bucket; a float infinity would be written as
    ``Infinity``, which is no JSON, and a browser's ``JSON.parse`` refuses the page)."""
    return "+Inf" if q == float("inf") else q


def _ratio(forwarded: int, received: int) -> float | None:
    return forwarded / received if received else None


def _models(d: BrokerDaemon) -> dict[str, Any]:
    b = d.broker
    assert b is not None
    out: dict[str, Any] = {}
    for name, r in sorted(b.routing.items()):
        row: dict[str, Any] = {}
        levels: tuple[tuple[Level, RoutingTable | None], ...] = (("S", r.subs), ("A", r.advs))
        for level, table in levels:
            key = "subscriptions" if level == "S" else "advertisements"
            if table is None:
                row[key] = None
                continue
            local, remote = table.sizes()
            got, sent = b.entries_received[name, level], b.entries_forwarded[name, level]
            row[key] = {
                "local": local,
                "remote": remote,
                "entries_received": got,
                "entries_forwarded": sent,
                "covering_ratio": _ratio(sent, got),
            }
        out[name] = row
    return out


class Rates:
    """Samples of :func:`totals` every :data:`SAMPLE_EVERY` seconds; the rate over a
    window is taken from now back to the newest sample at least that old (or the oldest
    there is, right after the start)."""

    def __init__(self) -> None:
        self.samples: deque[tuple[float, dict[str, int]]] = deque(maxlen=SAMPLES)

    def sample(self, d: BrokerDaemon) -> None:
        self.samples.append((time.monotonic(), totals(d)))

    def over(self, d: BrokerDaemon) -> dict[str, Any]:
        now, current = time.monotonic(), totals(d)
        out: dict[str, Any] = {}
        for label, window in WINDOWS.items():
            base = None
            for t, values in reversed(self.samples):
                base = (t, values)
                if now - t >= window:
                    break
            if base is None or now - base[0] <= 0:
                out[label] = {"seconds": 0.0, **dict.fromkeys(current, 0.0)}
                continue
            span = now - base[0]
            out[label] = {
                "seconds": round(span, 3),
                **{k: (current[k] - base[1][k]) / span for k in current},
            }
        return out


def status(d: BrokerDaemon, rates: Rates | None = None) -> dict[str, Any]:
    """The broker's state as one JSON document (``GET /status``, docs/monitoring.md)."""
    b = d.broker
    assert b is not None
    lat = d.latency
    return {
        "broker": d.id,
        "version": version(),
        "listen": str(d.address),
        "strategy": d.config.strategy,
        "advertisements": d.config.advertisements,
        "started": d.started,
        "uptime_seconds": round(time.time() - d.started, 3),
        "connections": _connections(d),
        "neighbours": _neighbours(d),
        "models": _models(d),
        "counters": {
            **totals(d),
            "admin_sent": b.admin_sent,
            "admin_processed": b.admin_processed,
            "lost": sum(d.port.lost.values()),
            "throttled": d.throttled,
            "slow_consumers": d.slow_consumers,
            "dropped_publications": b.dropped_publications,
            "useless_forwards": b.useless_forwards,
            "frame_errors": dict(sorted(d.frame_errors.items())),
        },
        "rates": (rates or Rates()).over(d),
        "latency_seconds": {
            "count": lat.count,
            "sum": lat.sum,
            "p50": _bound(lat.quantile(0.5)),
            "p99": _bound(lat.quantile(0.99)),
        },
    }


class BrokerCollector:
    """The Prometheus collector of one daemon: every family is read from the daemon's
    counters when scraped (nothing is copied as the broker works)."""

    def __init__(self, daemon: BrokerDaemon) -> None:
        self.daemon = daemon

    def collect(self) -> Iterator[Metric]:
        d = self.daemon
        b = d.broker
        if b is None:
            return
        info = GaugeMetricFamily(
            "pubsift_broker_info", "This broker", labels=["broker", "version", "strategy"]
        )
        info.add_metric([d.id, version(), d.config.strategy], 1)
        yield info
        yield GaugeMetricFamily(
            "pubsift_uptime_seconds", "Seconds since the broker started", time.time() - d.started
        )
        conns = GaugeMetricFamily(
            "pubsift_connections", "Open connections by role", labels=["role"]
        )
        for role, n in _connections(d).items():
            conns.add_metric([role], n)
        yield conns
        subs = GaugeMetricFamily(
            "pubsift_subscriptions", "Subscriptions of local clients", labels=["model"]
        )
        advs = GaugeMetricFamily(
            "pubsift_advertisements", "Advertisements of local clients", labels=["model"]
        )
        entries = GaugeMetricFamily(
            "pubsift_routing_table_entries",
            "Routing table entries (local: for clients, remote: for neighbours)",
            labels=["model", "table", "destination"],
        )
        got = CounterMetricFamily(
            "pubsift_routing_entries_received",
            "Routing entries received from clients and neighbours, renewals included",
            labels=["model", "table"],
        )
        sent = CounterMetricFamily(
            "pubsift_routing_entries_forwarded",
            "Routing entries forwarded to neighbours, renewals included",
            labels=["model", "table"],
        )
        ratio = GaugeMetricFamily(
            "pubsift_covering_ratio",
            "Routing entries forwarded / received (lower: covering saves more)",
            labels=["model", "table"],
        )
        for name, r in sorted(b.routing.items()):
            levels: tuple[tuple[Level, RoutingTable | None, GaugeMetricFamily], ...] = (
                ("S", r.subs, subs),
                ("A", r.advs, advs),
            )
            for level, table, family in levels:
                if table is None:
                    continue
                tname = "subscriptions" if level == "S" else "advertisements"
                local, remote = table.sizes()
                family.add_metric([name], local)
                entries.add_metric([name, tname, "local"], local)
                entries.add_metric([name, tname, "remote"], remote)
                n_got, n_sent = b.entries_received[name, level], b.entries_forwarded[name, level]
                got.add_metric([name, tname], n_got)
                sent.add_metric([name, tname], n_sent)
                if n_got:
                    ratio.add_metric([name, tname], n_sent / n_got)
        yield from (subs, advs, entries, got, sent, ratio)
        messages = CounterMetricFamily(
            "pubsift_messages",
            "Messages per link, direction and kind (a batch frame counts its publications; "
            "clients are one link)",
            labels=["role", "link", "direction", "kind"],
        )
        for (role, link), counts in sorted(d.received.items()):
            merged: dict[str, int] = {}
            for kind, n in counts.items():
                k = KIND_NAMES.get(kind, kind)
                merged[k] = merged.get(k, 0) + n
            for kind, n in sorted(merged.items()):
                messages.add_metric([role, link, "in", kind], n)
        for pid in sorted(set(b.forwarded) | set(d.port.admin_sent)):
            messages.add_metric(["broker", pid, "out", "forward"], b.forwarded[pid])
            messages.add_metric(["broker", pid, "out", "admin"], d.port.admin_sent[pid])
        messages.add_metric(["client", "", "out", "notify"], b.notified)
        yield messages
        for name, doc, value in (
            ("pubsift_notifications_delivered", "Notifications handed to clients", b.notified),
            (
                "pubsift_messages_lost",
                "Messages for a client or neighbour that was not connected",
                sum(d.port.lost.values()),
            ),
            (
                "pubsift_publications_throttled",
                "Publications held back by a publication rate limit",
                d.throttled,
            ),
            ("pubsift_slow_consumers", "Peers cut off as slow consumers", d.slow_consumers),
            (
                "pubsift_publications_dropped",
                "Publications that matched no advertisement of their publisher",
                b.dropped_publications,
            ),
            (
                "pubsift_useless_forwards",
                "Forwards received that went nowhere from here",
                b.useless_forwards,
            ),
        ):
            yield CounterMetricFamily(name, doc, value)
        errors = CounterMetricFamily(
            "pubsift_frame_errors",
            "Frames refused (answered with an error, or closed on), by reason",
            labels=["reason"],
        )
        for reason, n in sorted(d.frame_errors.items()):
            errors.add_metric([reason], n)
        yield errors
        lat = d.latency
        yield HistogramMetricFamily(
            "pubsift_notification_latency_seconds",
            "From a frame's arrival at this broker to its notifications handed to the "
            "subscribers' sockets, per notification",
            buckets=lat.cumulative(),
            sum_value=lat.sum,
        )


def _credential(request: web.Request) -> str | None:
    """The token of ``Authorization: Bearer`` or the password of ``Basic`` (None: none)."""
    header = request.headers.get("Authorization")
    if header is None:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() == "bearer":
        return value.strip()
    if scheme.lower() == "basic":
        with contextlib.suppress(binascii.Error, UnicodeDecodeError):
            return base64.b64decode(value.strip(), validate=True).decode().partition(":")[2]
    return ""


class Monitor:
    """The monitor of ``daemon`` on ``listen`` (port 0: the OS chooses; :attr:`address`
    says which once started)."""

    def __init__(self, daemon: BrokerDaemon, listen: Address) -> None:
        self.daemon = daemon
        self.listen = listen
        self.address = listen
        self.rates = Rates()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(daemon))
        self._runner: web.AppRunner | None = None
        self._sampler: asyncio.Task[None] | None = None
        #: refusals already logged, per remote address (one WARNING line each)
        self._refused: set[str] = set()

    @property
    def url(self) -> str:
        scheme = "https" if self.daemon.config.tls is not None else "http"
        return f"{scheme}://{self.address}"

    async def start(self) -> None:
        app = web.Application(middlewares=[self._authenticate])
        app.router.add_get("/", self.page)
        app.router.add_get("/status", self.status)
        app.router.add_get("/metrics", self.metrics)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        self.address = await serve(self._runner, self.listen, self.daemon.config.tls)
        self.rates.sample(self.daemon)
        self._sampler = asyncio.ensure_future(self._sample())
        log.info("monitor of broker %s on %s", self.daemon.id, self.url)

    async def stop(self) -> None:
        if self._sampler is not None:
            self._sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sampler
        if self._runner is not None:
            await self._runner.cleanup()

    async def _sample(self) -> None:
        while True:
            await asyncio.sleep(SAMPLE_EVERY)
            self.rates.sample(self.daemon)

    def _grant(self, request: web.Request) -> Grant | str:
        """The monitoring identity of a request, or why it has none."""
        auth = self.daemon.auth
        token = _credential(request)
        hello = {"token": token} if token is not None else {}
        transport = request.transport
        names = peer_names(transport.get_extra_info) if transport is not None else None
        grant = auth.identify(hello, names)
        if isinstance(grant, str):
            if token == "":
                return "the Authorization header is neither 'Bearer <token>' nor Basic"
            if not hello and names is None:
                return "no Authorization header (Bearer token, or Basic with the token as password)"
            return grant
        if grant.unrestricted or not grant.monitor:
            return f"identity {grant.name!r} may not monitor (monitor = true is not set)"
        return grant

    @web.middleware
    async def _authenticate(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if self.daemon.auth.enabled:
            grant = self._grant(request)
            if isinstance(grant, str):
                remote = request.remote or "?"
                if remote not in self._refused and len(self._refused) < 1000:
                    self._refused.add(remote)
                    log.warning("monitor: HTTP %s: unauthorized: %s", remote, grant)
                resp = web.json_response({"error": "unauthorized", "message": grant}, status=401)
                resp.headers["WWW-Authenticate"] = 'Basic realm="pubsift monitor"'
                return resp
        resp = await handler(request)
        assert isinstance(resp, web.StreamResponse)
        resp.headers["Cache-Control"] = "no-store"
        return resp

    async def page(self, request: web.Request) -> web.Response:
        return web.Response(
            text=PAGE,
            content_type="text/html",
            headers={
                "Content-Security-Policy": "default-src 'self'; style-src 'unsafe-inline'; "
                "script-src 'unsafe-inline'; connect-src 'self'"
            },
        )

    async def status(self, request: web.Request) -> web.Response:
        return web.json_response(status(self.daemon, self.rates))

    async def metrics(self, request: web.Request) -> web.Response:
        body = generate_latest(self.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
