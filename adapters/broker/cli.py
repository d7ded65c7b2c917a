"""``pubsift broker``, ``sub``, ``pub`` and ``publish-feed`` (docs/protocol.md)::

    pubsift broker [--config broker.toml] [--listen HOST:PORT] [--id ID] [--neighbour HOST:PORT]...
                   [--gateway HOST:PORT] [--monitor HOST:PORT]
    pubsift sub URL -m MODEL -f FILTER [-f FILTER]...
    pubsift pub URL -m MODEL [FILE...]
    pubsift publish-feed URL FEED... [--interval SECONDS] [--once] [--state PATH]
    pubsift stats URL [--watch] [--interval SECONDS]

The clients take ``--token`` (or ``$PUBSIFT_TOKEN``) and, for a ``pubsifts://`` URL (TLS),
``--ca``, ``--cert``, ``--key`` (or ``$PUBSIFT_CA``, ``$PUBSIFT_CERT``, ``$PUBSIFT_KEY``);
docs/protocol.md §10-§11.

``sub`` prints each matching event as one JSON line until interrupted (exit 0 on Ctrl-C or
SIGTERM; exit 1 with one line when the broker refuses a subscription: ``forbidden``,
``limit``, ...); ``pub`` publishes JSON lines from standard input, or files through the adapters'
readers (quarantined records are reported on standard error, not sent); ``publish-feed``
polls feeds and publishes each new item once (:mod:`.feedpub`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


BROKER_EPILOG = """\
Flags override the configuration file; without either the broker listens on
127.0.0.1:7400, routes every installed model with covering routing, leases entries for
30 s (clients renew every 10 s) and pings a peer silent for 15 s, closing it after 2
unanswered pings. The keys of broker.toml are listed in the README ("Running brokers") and
pubsift.adapters.broker.config; a bad value is reported with the file and key, exit 2.
Logs go to standard error, one line per event. SIGTERM or SIGINT: the broker tells every
client and neighbour 'shutdown', closes, and exits 0. Clients: pubsift sub / pub /
publish-feed pubsift://HOST:PORT (pubsifts:// when broker.toml has [tls]), or the HTTP
gateway (--gateway) with curl. Watching it: --monitor serves /metrics (Prometheus),
/status (JSON) and a status page; pubsift stats URL shows them in the terminal.
"""


def add_broker_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = BROKER_EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("--config", metavar="broker.toml", help="the broker's configuration file")
    p.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="address to listen on (default 127.0.0.1:7400; port 0: any)",
    )
    p.add_argument("--id", help="the broker's id, unique in the network (default: HOST:PORT)")
    p.add_argument(
        "--neighbour",
        action="append",
        default=[],
        metavar="HOST:PORT",
        help="a neighbour broker to dial (repeatable; added to the file's)",
    )
    p.add_argument("--strategy", help="routing strategy (default: the file's, or covering)")
    p.add_argument("--port-file", metavar="PATH", help="write the bound port there once listening")
    p.add_argument(
        "--gateway",
        metavar="HOST:PORT",
        help="serve the HTTP gateway there (POST /publish/MODEL, GET /subscribe/MODEL as SSE)",
    )
    p.add_argument(
        "--monitor",
        metavar="HOST:PORT",
        help="serve the monitor there: GET /metrics (Prometheus), /status (JSON), / (a page); "
        "beyond loopback only with [identities] (docs/monitoring.md)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    p.set_defaults(func=cmd_broker)


#: the young generation's threshold of a serving broker process (CPython's default: 700)
YOUNG_THRESHOLD = 50_000
#: seconds between the full collections of a serving broker process; after connections
#: closed, at most this many seconds
FULL_COLLECTION_PERIOD = 60.0
AFTER_CLOSES_PERIOD = 1.0


def serving_collector() -> None:
    """The cyclic garbage collector of a broker process that serves (DESIGN §2.6, the
    data path): what the start made is frozen (never scanned again), and the young
    generation is collected after :data:`YOUNG_THRESHOLD` allocations, not 700. Each
    routed event allocates a few tracked objects (its event, its attributes, its
    publication id) that a batch holds until it is routed: at 700 the collector scans
    and promotes them mid-batch, at 50,000 most have been freed by then. The objects of
    the data path form no cycles; what does (a closed connection's state, with its
    buffers; exceptions) is collected by :func:`collector_clock`. Measured on an
    in-process W1 path (a 500-event ``pubs`` frame read, cut and matched): 1.27 µs per
    event at 700, 1.12 at 50,000, 1.11 with the collector off. ``bench/brokers.py
    --systems pubsift --workloads W1 --events 200000 --repeats 3``, two runs each way
    alternating at load 0.1-0.8: broker CPU 2.2-2.7 µs per publication at 700, 1.6-2.0
    at 50,000."""
    import gc

    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)


async def collector_clock(
    closed: Callable[[], int],
    period: float = FULL_COLLECTION_PERIOD,
    after_closes: float = AFTER_CLOSES_PERIOD,
) -> None:
    """Full collections for :func:`serving_collector`'s process, until cancelled: within
    ``after_closes`` seconds of a connection's close (``closed()``: how many have closed
    so far), else every ``period`` seconds. A closed connection leaves its state in
    cycles that lived long enough to reach the oldest generation, which the raised young
    threshold makes CPython collect rarely. ``bench/broker_churn.py`` (pairs of a
    subscriber and a publisher of 200 events connecting and closing, five pairs at a
    time, about 300 connections a second): resident size 0.96-1.17× and broker CPU per
    connection 0.73-0.96× CPython's collector's, in runs of 30-60 s; with only a
    60-second collection the resident size grew to 405 MB against 145 (90 s). A process whose
    connections stay open is not paused by collections more than once a ``period``."""
    import gc

    seen, waited = closed(), 0.0
    while True:
        await asyncio.sleep(after_closes)
        waited += after_closes
        now = closed()
        if now != seen or waited >= period:
            gc.collect()
            seen, waited = now, 0.0


def cmd_broker(args: argparse.Namespace, console: Console) -> int:
    from pubsift.adapters.broker.config import Address, BrokerConfig, load_config
    from pubsift.adapters.broker.daemon import BrokerDaemon

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format=LOG_FORMAT)
    cfg = load_config(args.config) if args.config else BrokerConfig(source="command line")
    cfg = cfg.with_overrides(
        listen=Address.parse(args.listen, "--listen") if args.listen else None,
        id=args.id,
        strategy=args.strategy,
        gateway=Address.parse(args.gateway, "--gateway") if args.gateway else None,
        monitor=Address.parse(args.monitor, "--monitor") if args.monitor else None,
        neighbours=cfg.neighbours + tuple(Address.parse(a, "--neighbour") for a in args.neighbour)
        if args.neighbour
        else None,
    )

    async def main() -> None:
        daemon = BrokerDaemon(cfg)
        task = asyncio.ensure_future(daemon.run())
        while daemon.broker is None and not task.done():
            await asyncio.sleep(0.01)
        serving_collector()
        clock = asyncio.ensure_future(collector_clock(lambda: daemon.closed_connections))
        if args.port_file and daemon.broker is not None:
            with open(args.port_file + ".tmp", "w") as fh:
                fh.write(f"{daemon.address.port}\n")
            import os

            os.replace(args.port_file + ".tmp", args.port_file)
        try:
            await task
        finally:
            clock.cancel()

    asyncio.run(main())
    return 0


def add_sub_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("url", metavar="URL", help="the broker, pubsift://host:port")
    p.add_argument("-m", "--model", required=True, help="filter model")
    p.add_argument(
        "-f", "--filter", action="append", required=True, help="filter (text or JSON); repeatable"
    )
    p.add_argument("--id", help="client id (default: random)")
    p.add_argument(
        "--replay",
        metavar="WHAT",
        help="first the past from a history: 'last N' or 'since TIME' (ISO 8601 or Unix seconds)",
    )
    p.add_argument(
        "--state",
        metavar="FILE",
        help="keep the resume point there: after a reconnection, a link coming back or a "
        "restart with the same FILE, ask the histories for what was missed (docs/history.md)",
    )
    add_token_argument(p)
    add_tls_arguments(p)
    p.set_defaults(func=cmd_sub)


def add_token_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--token",
        default=os.environ.get("PUBSIFT_TOKEN") or None,
        help="the token of this client's identity, sent in the hello "
        "(default: $PUBSIFT_TOKEN; docs/protocol.md §10)",
    )


#: the TLS options of the clients and the environment variables they default to
TLS_OPTIONS = (
    ("ca", "PUBSIFT_CA", "the CA certificates (PEM) that verify the broker"),
    ("cert", "PUBSIFT_CERT", "this client's certificate (PEM), e.g. for a cert_name identity"),
    ("key", "PUBSIFT_KEY", "the private key of --cert (PEM; default: in the --cert file)"),
)


def add_tls_arguments(p: argparse.ArgumentParser) -> None:
    for name, env, what in TLS_OPTIONS:
        p.add_argument(
            f"--{name}",
            metavar="PEM",
            help=f"{what}; for pubsifts:// URLs (default: ${env}; docs/protocol.md §11)",
        )


def client_options(args: argparse.Namespace) -> dict[str, Any]:
    """``token``, ``ca``, ``cert``, ``key`` for :class:`AsyncClient` from the flags; the
    TLS ones default to their environment variables for ``pubsifts://`` URLs only, so that
    a ``$PUBSIFT_CA`` set for one broker does not break plaintext ones."""
    from pubsift.adapters.broker.frames import url_uses_tls

    out: dict[str, Any] = {"token": args.token}
    tls = url_uses_tls(args.url)
    for name, env, _ in TLS_OPTIONS:
        given = getattr(args, name)
        value = given if given is not None else (os.environ.get(env) or None if tls else None)
        if value is not None:
            out[name] = value
    if tls:  # errors name the flag
        from pubsift.adapters.broker.tls import client_context

        client_context(
            True, out.get("ca"), out.get("cert"), out.get("key"), ("--ca", "--cert", "--key")
        )
    else:
        given = [f"--{n}" for n, _, _ in TLS_OPTIONS if n in out]
        if given:
            from pubsift.adapters.broker.config import ConfigError

            raise ConfigError(
                f"{', '.join(given)} given for the plaintext URL {args.url}: "
                "use pubsifts:// for the broker's TLS port"
            )
    return out


def cmd_sub(args: argparse.Namespace, console: Console) -> int:
    from pubsift.adapters.broker.client import (
        REFUSALS,
        AsyncClient,
        BrokerRefused,
        Notification,
    )
    from pubsift.core.errors import one_line
    from pubsift.core.strict_json import strict_json

    logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)
    out = sys.stdout
    state = None
    if args.state:
        from pubsift.adapters.broker.resume import ResumeState

        state = ResumeState(args.state)
        state.save(state.last_seq)  # a file it cannot write: said now, not after a turn
    saving: list[bool] = []
    made: list[AsyncClient] = []
    stops: list[asyncio.Event] = []
    failed: list[str] = []

    def show(n: Notification) -> None:
        out.write(json.dumps(n.to_json(), ensure_ascii=False) + "\n")
        out.flush()
        if state is not None and not saving:  # once per turn, after printing
            saving.append(True)
            asyncio.get_running_loop().call_soon(save)

    def save() -> None:
        from pubsift.adapters.broker.config import ConfigError

        saving.clear()
        assert state is not None
        try:
            state.save(made[0].delivered())
        except ConfigError as exc:  # the disk filled up, the folder went: stop, said once
            if not failed:
                failed.append(str(exc))
                sys.stderr.write(f"pubsift sub: {exc}\n")
            stops[0].set()

    options = client_options(args)
    replay = None
    if args.replay:
        from pubsift.adapters.broker.replay import parse_text

        replay = parse_text(args.replay)
    if state is not None and state.found:
        replay = state.replay()

    async def main() -> int:
        stop = asyncio.Event()
        stops.append(stop)
        refusal: list[dict[str, Any]] = []

        def on_error(obj: dict[str, Any]) -> None:
            if obj.get("reason") in (*REFUSALS, "too-large"):  # it refused a subscription
                refusal.append(obj)
                stop.set()

        client = AsyncClient(args.url, id=args.id, on_error=on_error, **options)
        made.append(client)
        if state is not None:
            client.restore(state.last_seq)
        specs: list[Any] = [
            strict_json(f) if f.lstrip().startswith("{") else f for f in args.filter
        ]
        filters = [client.parse_filter(args.model, s) for s in specs]  # errors before connecting
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await client.connect()
        try:
            client.check_routed(args.model)
            for f in filters:
                await client.subscribe(args.model, f, show, replay=replay, resume=state is not None)
            await client.flush()  # any refusal of them has come by now
            if not refusal:
                sys.stderr.write(f"pubsift sub: subscribed as {client.id} at {client.broker_id}\n")
                await stop.wait()
        finally:
            await client.close()
            if state is not None and not failed:
                state.save(client.delivered())
        if failed:
            return 1
        if not refusal:
            return 0
        # the broker names the refused filter by the ref it echoes; an older one may not
        why = (
            client.refusals[0]
            if client.refusals
            else BrokerRefused(
                f"broker {client.broker_id} refused the subscription: "
                f"{refusal[0].get('reason')}: {refusal[0].get('message')}"
            )
        )
        sys.stderr.write(f"pubsift sub: {one_line(why)}\n")
        return 1

    return asyncio.run(main())


class _Intermixed(argparse.ArgumentParser):
    """Options between positionals (``pub URL -m MODEL FILE...``): argparse would give
    ``FILE...`` no positional left after ``URL``, so parse them intermixed."""

    _inner = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._inner:
            return super().parse_known_args(args, namespace)
        self._inner = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inner = False


def add_pub_arguments(p: argparse.ArgumentParser) -> None:
    p.__class__ = _Intermixed
    p.add_argument("url", metavar="URL", help="the broker, pubsift://host:port")
    p.add_argument("-m", "--model", required=True, help="filter model of the events")
    p.add_argument("files", nargs="*", metavar="FILE", help="files to publish (default: stdin)")
    p.add_argument("--id", help="client (publisher) id (default: random)")
    p.add_argument("--advertise", metavar="FILTER", help="advertise this filter first")
    add_token_argument(p)
    add_tls_arguments(p)
    p.set_defaults(func=cmd_pub)


def cmd_pub(args: argparse.Namespace, console: Console) -> int:
    from pubsift.adapters.broker.client import REFUSALS, AsyncClient
    from pubsift.core.errors import EventError, PubsiftError, one_line

    logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)

    quarantined = [0]
    options = client_options(args)

    async def stdin_lines() -> Any:
        """(where, line) of standard input, read in a thread as it comes: a pipe that
        writes slowly (``tail -f log | pubsift pub``) has each line sent at once, and the
        connection stays served (pings, renewals) while it waits."""
        loop = asyncio.get_running_loop()
        stream: Any = sys.stdin.buffer  # a BufferedReader: read1 returns what is there
        rest, i = b"", 0
        while True:
            chunk = await loop.run_in_executor(None, stream.read1, 1 << 16)
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop() if chunk else b""
            for line in lines:
                i += 1
                if line.strip():
                    yield f"<stdin>:{i}", line
            if not chunk:
                return

    async def events() -> Any:
        """(where, raw or parsed event) of stdin's JSON lines, or of the files' records."""
        if not args.files:
            async for where, line in stdin_lines():
                try:
                    yield where, line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield where, exc
            return
        from pubsift.adapters import Quarantined, read

        for item in read(*({"path": f, "model": args.model} for f in args.files)):
            if isinstance(item, Quarantined):
                quarantined[0] += 1
                sys.stderr.write(
                    f"pubsift pub: {item.id}: not sent ({item.reason}): {item.message}\n"
                )
            else:
                yield item.id, item.event

    async def main() -> int:
        client = AsyncClient(args.url, id=args.id, **options)
        await client.connect()
        try:
            client.check_routed(args.model)
        except PubsiftError:
            await client.close()
            raise
        if args.advertise:
            await client.advertise(args.model, args.advertise)
        sent = bad = 0
        async for where, ev in events():
            try:
                if isinstance(ev, UnicodeDecodeError):
                    raise EventError(f"not UTF-8 (byte {ev.start} of the line)")
                await client.publish(args.model, ev)
                sent += 1
            except PubsiftError as exc:
                bad += 1
                sys.stderr.write(f"pubsift pub: {where}: not sent: {one_line(exc)}\n")
            if sent % 256 == 0:
                await asyncio.sleep(0)  # let the writer drain
        # the broker answers in order: its stats reply comes after every refusal of a pub
        with contextlib.suppress(PubsiftError, TimeoutError):
            await client.stats(10.0)
        refused = [e for e in client.errors if e.get("reason") in REFUSALS]
        for e in refused[:10]:
            sys.stderr.write(f"pubsift pub: refused by the broker: {e.get('message')}\n")
        sent -= len(refused)
        bad += len(refused)
        await client.close(unsubscribe=True)
        bad += quarantined[0]
        sys.stderr.write(f"pubsift pub: {sent} published, {bad} not sent\n")
        return 1 if bad else 0

    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(main())
    return 130


def add_publish_feed_arguments(p: argparse.ArgumentParser) -> None:
    p.__class__ = _Intermixed
    p.add_argument("url", metavar="URL", help="the broker, pubsift://host:port")
    p.add_argument(
        "feeds",
        nargs="+",
        metavar="FEED",
        help="RSS/RDF/Atom feeds: files, directories or archives of them, or http(s) URLs",
    )
    p.add_argument(
        "--interval",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="seconds between polls (default: 300)",
    )
    p.add_argument(
        "--on-demand",
        nargs="?",
        const="/*",
        default=None,
        metavar="XPATH",
        help="poll only while some subscription overlaps XPATH (default /*: any xml "
        "subscription); a factory, Mühl §5.2.4 (docs/history.md)",
    )
    p.add_argument(
        "--once",
        action="store_true",
        help="poll once and exit: status 0, or 1 when an item was quarantined or too "
        "large or a feed could not be read",
    )
    p.add_argument(
        "--state",
        metavar="PATH",
        help="remember what was published there across runs (JSON; default: nowhere)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    add_token_argument(p)
    add_tls_arguments(p)
    p.set_defaults(func=cmd_publish_feed)


def cmd_publish_feed(args: argparse.Namespace, console: Console) -> int:
    from pubsift.adapters.broker.feedpub import FeedError, run

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format=LOG_FORMAT)
    if not args.interval > 0:
        raise FeedError(f"--interval: expected seconds > 0, got {args.interval:g}")
    options = client_options(args)

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        counts = await run(
            args.url,
            args.feeds,
            args.state,
            args.interval,
            args.once,
            stop,
            on_demand=args.on_demand,
            **options,
        )
        return 1 if args.once and counts.problems else 0

    return asyncio.run(main())


def add_stats_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "show a broker's status as tables: from its monitor (http://HOST:PORT, the "
        "[monitor] of broker.toml; table sizes, links, rates, latency) or from the broker "
        "itself (pubsift://HOST:PORT, the protocol's stats frame: sizes, links, totals)"
    )
    p.add_argument("url", metavar="URL", help="http(s)://HOST:PORT (monitor) or pubsift(s)://")
    p.add_argument("--watch", action="store_true", help="refresh in place until Ctrl-C")
    p.add_argument(
        "--interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="seconds between refreshes with --watch (default: 1)",
    )
    add_token_argument(p)
    add_tls_arguments(p)
    p.set_defaults(func=cmd_stats)


def cmd_stats(args: argparse.Namespace, console: Console) -> int:
    from pubsift.adapters.broker import top

    if not args.interval > 0:
        raise top.StatsError(f"--interval: expected seconds > 0, got {args.interval:g}")
    if "://" not in args.url:  # a bare HOST:PORT could be either port
        raise top.StatsError(
            f"{args.url}: say which port it is: http://{args.url} (the broker's monitor, "
            f"[monitor] listen) or pubsift://{args.url} (the broker's client port)"
        )
    if top.is_http(args.url):
        options: dict[str, Any] = {"token": args.token, "ca": args.ca}
    else:
        logging.basicConfig(level=logging.WARNING, format=LOG_FORMAT)
        options = client_options(args)
    return top.run(args.url, console, args.watch, args.interval, options)
