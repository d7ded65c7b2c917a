"""The broker's monitor (docs/monitoring.md) against real daemons on 127.0.0.1: /metrics
parsed back with prometheus_client's own parser and every number checked against what
the test did, /status, the identities' tokens, the refusal of an open monitor beyond
loopback, and ``pubsift stats`` once over both the monitor and the socket protocol."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pubsift.adapters.broker.client import AsyncClient, Notification
from pubsift.adapters.broker.config import Address, BrokerConfig, ConfigError, from_mapping
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.frames import HEADER, encode, hello, read_frame

import pubsift
from pubsift.cli import main

LOCAL = Address("127.0.0.1", 0)
#: leases long enough that no renewal comes during a test (the entry counts stay exact)
QUIET = {"models": ("records",), "backoff_initial": 0.05, "backoff_max": 0.3}
FILTERS = ("x > 1", "x > 5", "x > 10")  # x > 1 covers the others
N = 20  # publications, x = 0 .. N-1


async def until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    async def poll() -> None:
        while not cond():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    """Every sample of an exposition, by (name, sorted labels)."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[s.name, tuple(sorted(s.labels.items()))] = s.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[name, tuple(sorted(labels.items()))]


async def get(session: aiohttp.ClientSession, url: str, **kw: Any) -> tuple[int, str]:
    async with session.get(url, **kw) as resp:
        return resp.status, await resp.text()


async def get_json(session: aiohttp.ClientSession, url: str) -> Any:
    async with session.get(url) as resp:
        assert resp.status == 200, await resp.text()
        return await resp.json()


def run(body: Callable[[BrokerDaemon, BrokerDaemon], Awaitable[None]], **extra: Any) -> None:
    """b0 - b1 (b1 dials b0), both with a monitor; ``body(b0, b1)``."""

    async def go() -> None:
        b0 = BrokerDaemon(BrokerConfig(id="b0", listen=LOCAL, monitor=LOCAL, **QUIET, **extra))
        await b0.start()
        b1 = BrokerDaemon(
            BrokerConfig(
                id="b1", listen=LOCAL, monitor=LOCAL, neighbours=(b0.address,), **QUIET, **extra
            )
        )
        await b1.start()
        try:
            await until(lambda: "b1" in b0.port.neighbours and "b0" in b1.port.neighbours)
            await asyncio.wait_for(body(b0, b1), 30)
        finally:
            await b1.stop()
            await b0.stop()

    asyncio.run(go())


def url(d: BrokerDaemon) -> str:
    return f"pubsift://127.0.0.1:{d.address.port}"


async def traffic(b0: BrokerDaemon, b1: BrokerDaemon) -> tuple[list[AsyncClient], list[list]]:
    """Three subscribers at b1 (one filter each), N publications at b0, one bad frame at
    b0; returns the clients and what each received, all of it delivered."""
    got: list[list[Notification]] = [[] for _ in FILTERS]
    subs = []
    for i, f in enumerate(FILTERS):
        c = AsyncClient(url(b1), id=f"s{i}")
        await c.connect()
        await c.subscribe("records", f, got[i].append, confirm=True)
        subs.append(c)
    await until(lambda: b0.broker is not None and b0.broker.sizes() == (0, 1))
    pub = AsyncClient(url(b0), id="p")
    await pub.connect()
    for x in range(N):
        await pub.publish("records", {"x": x})
    await pub.stats()
    subs.append(pub)
    want = [sum(1 for x in range(N) if x > int(f.split()[-1])) for f in FILTERS]
    await until(lambda: [len(g) for g in got] == want)
    # one frame that is not an object: answered with a bad-frame error, counted
    reader, writer = await asyncio.open_connection("127.0.0.1", b0.address.port)
    writer.write(encode(hello("client", "raw")))
    assert (await read_frame(reader, 1 << 20))["kind"] == "hello"
    writer.write(HEADER.pack(3) + b"[1]")
    assert (await read_frame(reader, 1 << 20))["reason"] == "bad-frame"
    writer.close()
    return subs, got


def test_metrics_count_what_was_done():
    async def body(b0: BrokerDaemon, b1: BrokerDaemon) -> None:
        clients, got = await traffic(b0, b1)
        delivered = sum(map(len, got))  # 18 + 14 + 9
        forwarded = sum(1 for x in range(N) if x > 1)  # b0 forwards what x > 1 matches
        await until(lambda: b1.broker is not None and b1.broker.notified == delivered)
        async with aiohttp.ClientSession() as http:
            s0 = parse((await get(http, b0.monitor.url + "/metrics"))[1])
            s1 = parse((await get(http, b1.monitor.url + "/metrics"))[1])
        for c in clients:
            await c.close()
        m = "pubsift_messages_total"
        assert value(s0, m, role="client", link="", direction="in", kind="pub") == N
        assert value(s0, m, role="broker", link="b1", direction="out", kind="forward") == forwarded
        assert value(s1, m, role="broker", link="b0", direction="in", kind="forward") == forwarded
        assert value(s1, m, role="client", link="", direction="in", kind="sub") == len(FILTERS)
        assert value(s1, m, role="client", link="", direction="out", kind="notify") == delivered
        # covering: b1 holds the three subscriptions and forwards one entry to b0
        assert value(s1, "pubsift_subscriptions", model="records") == len(FILTERS)
        entries = "pubsift_routing_table_entries"
        assert value(s1, entries, model="records", table="subscriptions", destination="local") == 3
        assert value(s0, entries, model="records", table="subscriptions", destination="remote") == 1
        assert value(s0, "pubsift_subscriptions", model="records") == 0
        received = "pubsift_routing_entries_received_total"
        assert value(s1, received, model="records", table="subscriptions") == 3
        sent = "pubsift_routing_entries_forwarded_total"
        assert value(s1, sent, model="records", table="subscriptions") == 1
        ratio = value(s1, "pubsift_covering_ratio", model="records", table="subscriptions")
        assert ratio == pytest.approx(1 / 3)
        assert value(s1, "pubsift_notifications_delivered_total") == delivered
        assert value(s0, "pubsift_notifications_delivered_total") == 0
        assert value(s0, "pubsift_frame_errors_total", reason="bad-frame") == 1
        assert ("pubsift_frame_errors_total", (("reason", "bad-frame"),)) not in s1
        assert value(s1, "pubsift_connections", role="client") == len(FILTERS)
        assert value(s1, "pubsift_connections", role="broker") == 1
        assert value(s0, "pubsift_messages_lost_total") == 0
        # the latency: one observation per notification, at the broker that notified
        lat = "pubsift_notification_latency_seconds"
        assert value(s1, lat + "_count") == delivered
        assert value(s1, lat + "_bucket", le="+Inf") == delivered
        assert value(s1, lat + "_sum") > 0
        assert value(s0, lat + "_count") == 0
        info = value(
            s1, "pubsift_broker_info", broker="b1", version=pubsift.__version__, strategy="covering"
        )
        assert info == 1
        # no label anywhere holds a client's id
        ids = {"s0", "s1", "s2", "p", "raw"}
        for samples in (s0, s1):
            for _, labels in samples:
                assert not ids & {v for _, v in labels}, labels

    run(body)


def test_status_is_one_json_document_of_the_same_numbers():
    async def body(b0: BrokerDaemon, b1: BrokerDaemon) -> None:
        clients, got = await traffic(b0, b1)
        async with aiohttp.ClientSession() as http:
            async with http.get(b1.monitor.url + "/status") as resp:
                assert resp.status == 200
                assert resp.headers["Content-Type"].startswith("application/json")
                s1 = await resp.json()
            async with http.get(b0.monitor.url + "/status") as resp:
                s0 = await resp.json()
        for c in clients:
            await c.close()
        assert s1["broker"] == "b1" and s1["version"] == pubsift.__version__
        assert s1["uptime_seconds"] >= 0 and s1["strategy"] == "covering"
        [n] = s1["neighbours"]
        assert (n["id"], n["state"], n["dialled"]) == ("b0", "up", True)
        assert [(n["id"], n["state"], n["dialled"]) for n in s0["neighbours"]] == [
            ("b1", "up", False)
        ]
        subs = s1["models"]["records"]["subscriptions"]
        assert (subs["local"], subs["remote"]) == (3, 0)
        assert subs["entries_received"] == 3 and subs["entries_forwarded"] == 1
        assert s0["models"]["records"]["subscriptions"]["remote"] == 1
        assert s1["models"]["records"]["advertisements"] is None
        assert s0["counters"]["publications_received"] == N
        assert s1["counters"]["notifications_delivered"] == sum(map(len, got))
        assert s0["counters"]["frame_errors"] == {"bad-frame": 1}
        assert s1["latency_seconds"]["count"] == sum(map(len, got))
        assert set(s0["rates"]) == {"1s", "1m"}
        # the publications came within the last minute: the minute's rate has them all
        minute = s0["rates"]["1m"]
        assert minute["publications_received"] * minute["seconds"] == pytest.approx(N, rel=0.01)

    run(body)


def test_a_configured_neighbour_that_is_not_up_shows_down():
    async def go() -> None:
        dead = Address("127.0.0.1", 9)  # the discard port: nothing listens there
        d = BrokerDaemon(
            BrokerConfig(id="lonely", listen=LOCAL, monitor=LOCAL, neighbours=(dead,), **QUIET)
        )
        await d.start()
        try:
            async with aiohttp.ClientSession() as http:
                status = await get_json(http, d.monitor.url + "/status")
        finally:
            await d.stop()
        assert status["neighbours"] == [
            {"id": None, "state": "down", "address": "127.0.0.1:9", "dialled": True}
        ]

    asyncio.run(go())


IDENTITIES = {
    "ops": {"token": "ops-token", "monitor": True},
    "app": {"token": "app-token", "subscribe": {"records": ["x > 0"]}},
}


def test_with_identities_the_monitor_wants_a_monitoring_identity(caplog):
    cfg = from_mapping(
        {
            "broker": {"id": "b", "listen": "127.0.0.1:0", "models": ["records"]},
            "monitor": {"listen": "127.0.0.1:0"},
            "identities": IDENTITIES,
        },
        "auth.toml",
    )

    async def go() -> None:
        d = BrokerDaemon(cfg)
        await d.start()
        base = d.monitor.url
        basic = base64.b64encode(b"anyone:ops-token").decode()
        try:
            async with aiohttp.ClientSession() as http:
                for path in ("/metrics", "/status", "/"):
                    status, text = await get(http, base + path)
                    assert status == 401 and "no Authorization header" in text
                status, text = await get(
                    http, base + "/status", headers={"Authorization": "Bearer app-token"}
                )
                assert status == 401 and "'app' may not monitor" in text
                status, text = await get(
                    http, base + "/status", headers={"Authorization": "Bearer wrong"}
                )
                assert status == 401 and "unknown token" in text
                async with http.get(base + "/metrics") as resp:
                    assert resp.headers["WWW-Authenticate"].startswith("Basic")
                status, text = await get(
                    http, base + "/metrics", headers={"Authorization": "Bearer ops-token"}
                )
                assert status == 200 and "pubsift_broker_info" in text
                status, text = await get(
                    http, base + "/status", headers={"Authorization": f"Basic {basic}"}
                )
                assert status == 200 and '"broker": "b"' in text
        finally:
            await d.stop()

    asyncio.run(go())
    assert "monitor: HTTP 127.0.0.1: unauthorized" in caplog.text


def test_monitor_configuration_is_checked():
    base = {"broker": {"listen": "127.0.0.1:0"}}
    cfg = from_mapping({**base, "monitor": {"listen": "127.0.0.1:8222"}}, "m.toml")
    assert cfg.monitor == Address("127.0.0.1", 8222)
    with pytest.raises(ConfigError, match=r"m.toml: monitor.listen .*reachable from other"):
        from_mapping({**base, "monitor": {"listen": "0.0.0.0:8222"}}, "m.toml")
    with pytest.raises(ConfigError, match=r"m.toml: monitor.bind: unknown key"):
        from_mapping({**base, "monitor": {"bind": "127.0.0.1:1"}}, "m.toml")
    only_app = {"app": IDENTITIES["app"]}
    with pytest.raises(ConfigError, match="none has it"):
        from_mapping({**base, "monitor": {"listen": "[::1]:1"}, "identities": only_app}, "m.toml")
    with pytest.raises(ConfigError, match=r"identities.ops.monitor: expected true or false"):
        from_mapping({**base, "identities": {"ops": {"token": "t", "monitor": 1}}}, "m.toml")
    # beyond loopback with a monitoring identity: accepted
    ok = from_mapping({**base, "monitor": {"listen": "0.0.0.0:1"}, "identities": IDENTITIES}, "m")
    assert ok.monitor == Address("0.0.0.0", 1)
    with pytest.raises(ConfigError, match=r"--monitor.*reachable from other machines"):
        BrokerConfig(source="command line").with_overrides(monitor=Address("10.1.2.3", 8222))


def test_pubsift_stats_shows_the_status_once(capsys):
    async def body(b0: BrokerDaemon, b1: BrokerDaemon) -> None:
        clients, got = await traffic(b0, b1)
        loop = asyncio.get_running_loop()
        code = await loop.run_in_executor(None, main, ["stats", b1.monitor.url])
        out = capsys.readouterr().out
        assert code == 0
        assert re.search(r"broker b1\s+pubsift " + re.escape(pubsift.__version__), out)
        assert re.search(r"│ b0\s+│\s+up\s+│", out), out
        assert re.search(r"│ records\s+│\s+3 │\s+0 │\s+0\.333 │", out), out
        delivered = sum(map(len, got))
        assert re.search(rf"│ notifications delivered\s+│\s+{delivered} │", out), out
        assert "rates (per second)" in out
        code = await loop.run_in_executor(None, main, ["stats", url(b0)])
        out = capsys.readouterr().out
        assert code == 0
        assert re.search(r"│ records\s+│\s+0 │\s+1 │", out), out  # the stats frame's sizes
        assert re.search(r"│ b1\s+│\s+up\s+│", out), out
        for c in clients:
            await c.close()
        code = await loop.run_in_executor(None, main, ["stats", "http://127.0.0.1:9"])
        assert code == 2
        err = capsys.readouterr().err
        assert err.startswith("pubsift stats: cannot reach the monitor at http://127.0.0.1:9")
        bare = f"127.0.0.1:{b1.monitor.address.port}"
        code = await loop.run_in_executor(None, main, ["stats", bare])
        assert code == 2
        assert capsys.readouterr().err.splitlines() == [
            f"pubsift stats: {bare}: say which port it is: http://{bare} (the broker's "
            f"monitor, [monitor] listen) or pubsift://{bare} (the broker's client port)"
        ]

    run(body)


def test_the_broker_command_serves_the_monitor_and_refuses_it_beyond_loopback(tmp_path: Path):
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "pubsift.cli",
            "broker",
            "--listen",
            "127.0.0.1:0",
            "--monitor",
            "0.0.0.0:0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("pubsift broker: command line: monitor.listen (--monitor): 0.0.0.0:0")
    log = tmp_path / "b.log"
    (tmp_path / "b.toml").write_text('[broker]\nmodels = ["records"]\n')
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pubsift.cli",
                "broker",
                "--id",
                "px",
                "--listen",
                "127.0.0.1:0",
                "--monitor",
                "127.0.0.1:0",
                "--config",
                str(tmp_path / "b.toml"),
            ],
            stdout=fh,
            stderr=fh,
        )
    try:
        deadline = time.monotonic() + 30
        found = None
        while found is None and time.monotonic() < deadline and proc.poll() is None:
            found = re.search(r"monitor of broker px on (http://\S+)", log.read_text())
            time.sleep(0.05)
        assert found is not None, log.read_text()
        import urllib.request

        with urllib.request.urlopen(found.group(1) + "/status", timeout=10) as resp:
            assert b'"broker": "px"' in resp.read()
    finally:
        proc.terminate()
        proc.wait(10)


def test_connections_count_http_streams_apart_from_clients():
    async def go() -> None:
        d = BrokerDaemon(BrokerConfig(id="g", listen=LOCAL, monitor=LOCAL, gateway=LOCAL, **QUIET))
        await d.start()
        try:
            async with aiohttp.ClientSession() as http:
                stream = await http.get(
                    d.gateway.url + "/subscribe/records", params={"filter": "x > 1"}
                )
                await until(lambda: d.gateway.subscribers == 1)
                status = await get_json(http, d.monitor.url + "/status")
                stream.close()
        finally:
            await d.stop()
        assert status["connections"] == {"client": 0, "broker": 0, "http_stream": 1}

    asyncio.run(go())


def test_a_monitor_port_in_use_is_a_configuration_error():
    async def go() -> None:
        taken = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = taken.sockets[0].getsockname()[1]
        d = BrokerDaemon(BrokerConfig(listen=LOCAL, monitor=Address("127.0.0.1", port), **QUIET))
        try:
            with pytest.raises(ConfigError, match=rf"monitor.listen .*127.0.0.1:{port}: address"):
                await d.start()
            assert d.stopping
        finally:
            taken.close()

    asyncio.run(go())


def test_over_tls_the_monitor_is_https_and_pubsift_stats_reads_it(tmp_path: Path, capsys):
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    leaf = ca.issue_cert("127.0.0.1")
    leaf.cert_chain_pems[0].write_to_path(str(tmp_path / "b.crt"))
    leaf.private_key_pem.write_to_path(str(tmp_path / "b.key"))
    cfg = from_mapping(
        {
            "broker": {"id": "secure", "listen": "127.0.0.1:0", "models": ["records"]},
            "monitor": {"listen": "127.0.0.1:0"},
            "tls": {"cert": str(tmp_path / "b.crt"), "key": str(tmp_path / "b.key")},
            "identities": IDENTITIES,
        },
        "tls.toml",
    )

    async def go() -> None:
        d = BrokerDaemon(cfg)
        await d.start()
        try:
            assert d.monitor.url.startswith("https://127.0.0.1:")
            loop = asyncio.get_running_loop()
            ca_file = str(tmp_path / "ca.pem")
            args = ["stats", d.monitor.url, "--ca", ca_file, "--token", "ops-token"]
            assert await loop.run_in_executor(None, main, args) == 0
            assert "broker secure" in capsys.readouterr().out
            args = ["stats", d.monitor.url, "--ca", ca_file, "--token", "app-token"]
            assert await loop.run_in_executor(None, main, args) == 2
            err = capsys.readouterr().err
            assert "HTTP 401: identity 'app' may not monitor" in err
        finally:
            await d.stop()

    asyncio.run(go())


def test_a_latency_beyond_the_last_bucket_is_still_json():
    """A notification slower than the last bound (an overloaded broker, just when it is
    watched) makes p99 the +Inf bucket: /status stays JSON that a browser parses."""

    def strict(name: str) -> Any:
        raise AssertionError(f"{name} is not JSON")

    async def body(b0: BrokerDaemon, b1: BrokerDaemon) -> None:
        b1.latency.observe(0.001, 90)
        b1.latency.observe(30.0, 10)
        async with aiohttp.ClientSession() as http:
            status, text = await get(http, b1.monitor.url + "/status")
        assert status == 200
        lat = json.loads(text, parse_constant=strict)["latency_seconds"]
        assert (lat["count"], lat["p50"], lat["p99"]) == (100, 0.001, "+Inf")

    run(body)
