"""TLS on client connections and broker links, client-certificate identities, and the
HTTP gateway's Bearer tokens and HTTPS (docs/protocol.md §11; Fiege, Zeidler & Buchmann, "Security
Aspects in Publish/Subscribe Systems", DEBS 2004, §4.1-§4.2). In-process daemons on
127.0.0.1 with throwaway certificates from trustme."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import ssl
import time
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
import trustme
from pubsift.adapters.broker.client import AsyncClient, BrokerUnavailable, Notification, connect
from pubsift.adapters.broker.config import BrokerConfig, ConfigError, from_mapping, load_config
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.tls import TLSConfig, client_context

from tests.network.test_inprocess import FAST, until

LIVE = {k: v for k, v in FAST.items() if k != "models"}
ALICE_RIGHTS = {
    "subscribe": {"records": ['symbol prefix "I"']},
    "publish": {"records": ['symbol = "IBM"']},
}


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> SimpleNamespace:
    """A CA, broker certificates b0 and b1 (for 127.0.0.1), client certificates alice
    and mallory, and a second CA that signed nothing the brokers know."""
    d = tmp_path_factory.mktemp("pki")
    ca, other = trustme.CA(), trustme.CA()
    out: dict[str, Any] = {}
    for auth, name in ((ca, "ca"), (other, "other")):
        auth.cert_pem.write_to_path(str(d / f"{name}.pem"))
        out[name] = str(d / f"{name}.pem")
    leaves = {
        "b0": (ca, "127.0.0.1", "b0.brokers.test"),
        "b1": (ca, "127.0.0.1", "b1.brokers.test"),
        "b9": (ca, "127.0.0.1", "b9.brokers.test"),
        "alice": (ca, "alice@example.org"),
        "mallory": (ca, "mallory@example.org"),
        "stranger": (other, "alice@example.org"),
    }
    for name, (auth, *ids) in leaves.items():
        leaf = auth.issue_cert(*ids, common_name=name)
        leaf.cert_chain_pems[0].write_to_path(str(d / f"{name}.crt"))
        leaf.private_key_pem.write_to_path(str(d / f"{name}.key"))
        out[name] = (str(d / f"{name}.crt"), str(d / f"{name}.key"))
    out["dir"] = d
    return SimpleNamespace(**out)


def config(pki: SimpleNamespace, id: str = "b0", **sections: Any) -> BrokerConfig:
    """A TLS broker (certificate ``id``) through the configuration reader."""
    cert, key = getattr(pki, id)
    data: dict[str, Any] = {
        "broker": {"id": id, "listen": "127.0.0.1:0", "models": ["records"]},
        "tls": {"cert": cert, "key": key, "ca": pki.ca},
    }
    for name, sec in sections.items():
        data[name] = {**data.get(name, {}), **sec}
    return from_mapping(data, "broker.toml").with_overrides(**LIVE)


def turl(d: BrokerDaemon) -> str:
    return f"pubsifts://127.0.0.1:{d.address.port}"


def run(*cfgs: BrokerConfig, body: Callable[..., Awaitable[None]]) -> None:
    """Start the daemons of ``cfgs``, run ``body(*daemons)`` (bounded), stop them."""

    async def go() -> None:
        daemons: list[BrokerDaemon] = []
        try:
            for cfg in cfgs:
                d = BrokerDaemon(cfg)
                await d.start()
                daemons.append(d)
            await asyncio.wait_for(body(*daemons), 15)
        finally:
            for d in reversed(daemons):
                await d.stop()

    asyncio.run(go())


def test_a_client_over_tls_subscribes_publishes_and_is_notified(pki):
    async def body(d: BrokerDaemon) -> None:
        got: list[Notification] = []
        sub = AsyncClient(turl(d), id="sub", ca=pki.ca)
        pub = AsyncClient(f"pubsift://127.0.0.1:{d.address.port}", id="pub", tls=True, ca=pki.ca)
        await sub.connect()
        await pub.connect()
        await sub.subscribe("records", "price > 10", got.append)
        await until(lambda: d.broker.sizes() == (1, 0))
        for price in (5, 11):
            await pub.publish("records", {"symbol": "IBM", "price": price})
        await until(lambda: len(got) == 1)
        assert got[0].event["price"] == 11 and sub.errors == pub.errors == []
        ssl_object = d.port.clients["sub"].writer.get_extra_info("ssl_object")
        assert ssl_object is not None and ssl_object.version() in ("TLSv1.2", "TLSv1.3")
        await sub.close()
        await pub.close()
        # the synchronous client, from another thread, with a ready SSLContext
        ctx = ssl.create_default_context(cafile=pki.ca)
        stats = await asyncio.to_thread(lambda: connect(turl(d), tls=ctx).stats())
        assert stats["broker"] == "b0"

    run(config(pki), body=body)


def test_a_link_over_tls_authenticated_by_certificate(pki, caplog):
    """b1 dials b0 over TLS; with identities and no link_token, the link is accepted for
    its certificate name (tls.link_names), and a broker with another name is refused."""
    names = {"link_names": ["b0", "b1"]}
    ident = {"alice": {"token": "alice-secret", **ALICE_RIGHTS}}
    b0 = config(pki, "b0", tls=names, identities=ident)

    async def body(d0: BrokerDaemon) -> None:
        dial = {"neighbours": [str(d0.address)]}
        d1 = BrokerDaemon(config(pki, "b1", tls=names, identities=ident, broker=dial))
        await d1.start()
        try:
            await linked(d0, d1)
        finally:
            await d1.stop()

    async def linked(d0: BrokerDaemon, d1: BrokerDaemon) -> None:
        await until(lambda: list(d0.port.neighbours) == ["b1"])
        got: list[Notification] = []
        sub = AsyncClient(turl(d0), id="sub", ca=pki.ca, token="alice-secret")
        pub = AsyncClient(turl(d1), id="pub", ca=pki.ca, token="alice-secret")
        await sub.connect()
        await pub.connect()
        await sub.subscribe("records", 'symbol = "IBM"', got.append)
        await until(lambda: d1.broker.sizes()[1] == 1)  # the subscription crossed the link
        await pub.publish("records", {"symbol": "IBM", "price": 1})
        await until(lambda: len(got) == 1)
        await sub.close()
        await pub.close()
        # a broker certificate signed by the same CA but not named in link_names
        dial = {"neighbours": [str(d0.address)]}
        intruder = BrokerDaemon(config(pki, "b9", tls=names, broker=dial))
        await intruder.start()
        try:
            await until(lambda: "not one of tls.link_names" in caplog.text)
            assert "b9" not in d0.port.neighbours
        finally:
            await intruder.stop()

    with caplog.at_level(logging.INFO, "pubsift.broker"):
        run(b0, body=body)
    assert "certificate 'b1', 'b1.brokers.test' accepted" in caplog.text


def test_a_wrong_ca_is_refused_with_a_clear_error(pki, caplog):
    async def body(d: BrokerDaemon) -> None:
        t0 = time.monotonic()
        with pytest.raises(BrokerUnavailable, match="certificate is not trusted"):
            await AsyncClient(turl(d), ca=pki.other).connect(timeout=5)
        # the system's CAs do not know the throwaway CA either
        with pytest.raises(BrokerUnavailable, match="certificate is not trusted"):
            await AsyncClient(turl(d)).connect(timeout=5)
        # the broker's certificate signed by another CA, for a client that trusts ours
        wrong = BrokerDaemon(
            from_mapping(
                {
                    "broker": {"listen": "127.0.0.1:0", "models": ["records"]},
                    "tls": {"cert": pki.stranger[0], "key": pki.stranger[1]},
                },
                "wrong.toml",
            )
        )
        await wrong.start()
        try:
            with pytest.raises(BrokerUnavailable, match="not trusted"):
                await AsyncClient(turl(wrong), ca=pki.ca).connect(timeout=5)
        finally:
            await wrong.stop()
        # a neighbour dialled with the wrong CA: no link, one clear line, retried
        dial = {"neighbours": [str(d.address)]}
        b1 = BrokerDaemon(config(pki, "b1", tls={"ca": pki.other}, broker=dial))
        await b1.start()
        try:
            await until(lambda: "cannot reach neighbour" in caplog.text)
            assert "certificate is not trusted" in caplog.text and not d.port.neighbours
        finally:
            await b1.stop()
        # a client certificate that the broker's CA did not sign
        stranger = AsyncClient(turl(d), ca=pki.ca, cert=pki.stranger[0], key=pki.stranger[1])
        with pytest.raises(BrokerUnavailable, match="certificate"):
            await stranger.connect(timeout=5)
        assert time.monotonic() - t0 < 4
        await until(lambda: "TLS handshake" in caplog.text)
        async with AsyncClient(turl(d), ca=pki.ca) as ok:  # the broker carries on
            assert ok.connected

    with caplog.at_level(logging.WARNING, "pubsift.broker"):
        run(config(pki), body=body)


def test_plaintext_and_tls_mismatches_fail_fast_with_a_clear_message(pki, caplog):
    plain = from_mapping(
        {"broker": {"id": "p", "listen": "127.0.0.1:0", "models": ["records"]}}, "p.toml"
    ).with_overrides(**LIVE)

    async def body(tls: BrokerDaemon, p: BrokerDaemon) -> None:
        t0 = time.monotonic()
        with pytest.raises(BrokerUnavailable, match=r"tls-required.*pubsifts://"):
            await AsyncClient(f"pubsift://127.0.0.1:{tls.address.port}").connect(timeout=5)
        with pytest.raises(BrokerUnavailable, match="plaintext"):
            await AsyncClient(turl(p), ca=pki.ca).connect(timeout=5)
        assert time.monotonic() - t0 < 2
        lines = [r.getMessage() for r in caplog.records if r.name == "pubsift.broker"]
        assert any("plaintext on a TLS port" in m for m in lines)
        assert any("speaks TLS and this port plaintext" in m for m in lines)
        async with AsyncClient(turl(tls), ca=pki.ca) as a:  # both carry on
            assert a.connected
        async with AsyncClient(f"pubsift://127.0.0.1:{p.address.port}") as b:
            assert b.connected

    with caplog.at_level(logging.WARNING, "pubsift.broker"):
        run(config(pki), plain, body=body)


def test_a_client_certificate_selects_its_identity(pki, caplog):
    """alice's certificate stands for a token: her authorized filters apply; a verified
    certificate that names no identity is ``unauthorized``, and with
    require_client_cert a client without one is refused."""
    idents = {"alice": {"cert_name": "alice", **ALICE_RIGHTS}, "bob": {"token": "bob-secret"}}
    cfg = config(pki, identities=idents)

    async def body(d: BrokerDaemon) -> None:
        got: list[Notification] = []
        alice = AsyncClient(turl(d), id="alice", ca=pki.ca, cert=pki.alice[0], key=pki.alice[1])
        await alice.connect()
        await alice.subscribe("records", 'symbol = "INTC"', got.append)
        await alice.subscribe("records", 'symbol = "MSFT"', got.append)  # not covered
        await alice.publish("records", {"symbol": "INTC", "price": 1})  # not matched
        await until(lambda: len(alice.errors) == 2)
        assert {e["reason"] for e in alice.errors} == {"forbidden"}
        assert d.broker.sizes()[0] == 1 and alice.connected
        # a token in the hello takes precedence over the certificate
        as_bob = AsyncClient(
            turl(d), ca=pki.ca, cert=pki.alice[0], key=pki.alice[1], token="bob-secret"
        )
        await as_bob.connect()
        assert as_bob.network_id == f"bob/{as_bob.id}"
        assert d._grants[d.port.clients[as_bob.network_id]].name == "bob"
        await as_bob.close()
        for kwargs in ({"cert": pki.mallory[0], "key": pki.mallory[1]}, {}):
            with pytest.raises(BrokerUnavailable, match="unauthorized") as info:
                await AsyncClient(turl(d), ca=pki.ca, **kwargs).connect(timeout=5)
            assert ("names no identity" if kwargs else "no client certificate") in str(info.value)
        await alice.close()

    with caplog.at_level(logging.WARNING, "pubsift.broker"):
        run(cfg, body=body)
    assert "('mallory', 'mallory@example.org') names no identity" in caplog.text

    async def required(d: BrokerDaemon) -> None:
        with pytest.raises(BrokerUnavailable, match="certificate"):
            await AsyncClient(turl(d), ca=pki.ca).connect(timeout=5)
        ok = AsyncClient(turl(d), ca=pki.ca, cert=pki.alice[0], key=pki.alice[1])
        await ok.connect()
        await ok.close()

    run(config(pki, tls={"require_client_cert": True}, identities=idents), body=required)


def test_the_gateway_wants_bearer_tokens_and_serves_https(pki):
    idents = {
        "alice": {"token": "alice-secret", "cert_name": "alice", **ALICE_RIGHTS},
        "bob": {"token": "bob-secret", "subscribe": {"records": ["price > 0"]}},
    }
    cfg = config(pki, identities=idents, gateway={"listen": "127.0.0.1:0"})

    async def body(d: BrokerDaemon) -> None:
        base = d.gateway.url
        assert base.startswith("https://")
        ctx = ssl.create_default_context(cafile=pki.ca)
        alice = {"Authorization": "Bearer alice-secret"}
        ibm = json.dumps({"symbol": "IBM", "price": 2})
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx)) as http:

            async def status(method: str, path: str, headers: dict, **kw: Any) -> int:
                async with http.request(method, base + path, headers=headers, **kw) as r:
                    if r.status >= 400:
                        body = await r.json()
                        assert body["error"] == {401: "unauthorized", 403: "forbidden"}[r.status]
                    if r.status == 401:
                        assert r.headers["WWW-Authenticate"].startswith('Bearer realm="pubsift"')
                    return r.status

            assert await status("POST", "/publish/records", {}, data=ibm) == 401
            wrong = {"Authorization": "Bearer nope"}
            assert await status("POST", "/publish/records", wrong, data=ibm) == 401
            basic = {"Authorization": "Basic YTpi"}
            assert await status("POST", "/publish/records", basic, data=ibm) == 401
            bob = {"Authorization": "Bearer bob-secret"}
            assert await status("POST", "/publish/records", bob, data=ibm) == 403
            msft = json.dumps({"symbol": "MSFT", "price": 2})
            assert await status("POST", "/publish/records", alice, data=msft) == 403
            sub = {"filter": 'symbol = "MSFT"'}
            assert await status("GET", "/subscribe/records", alice, params=sub) == 403
            assert await status("GET", "/subscribe/records", {}, params=sub) == 401
            # bob subscribes over SSE; alice publishes with her token, then her certificate
            sse = await http.get(
                base + "/subscribe/records", headers=bob, params={"filter": "price > 1"}
            )
            assert sse.status == 200
            await until(lambda: d.broker.sizes()[0] == 1)
            assert await status("POST", "/publish/records", alice, data=ibm) == 202
            cert_ctx = ssl.create_default_context(cafile=pki.ca)
            cert_ctx.load_cert_chain(*pki.alice)
            async with http.post(base + "/publish/records", data=ibm, ssl=cert_ctx) as r:
                assert r.status == 202, await r.text()
            seen = []
            while len(seen) < 2:
                line = (await asyncio.wait_for(sse.content.readline(), 5)).decode()
                if line.startswith("data:"):
                    seen.append(json.loads(line[5:])["event"])
            assert seen == [{"symbol": "IBM", "price": 2}] * 2
            sse.close()

    run(cfg, body=body)


@pytest.mark.parametrize(
    ("tls", "words"),
    [
        ({"cert": "{dir}/none.pem"}, "tls.cert: cannot read"),
        ({"key": "{b0key}"}, "tls.cert: [tls] needs this broker's certificate"),
        ({"cert": "{b0key}", "key": "{b0key}"}, "holds no PEM certificate"),
        ({"cert": "{b0crt}", "key": "{b0crt}"}, "tls.key: '{b0crt}' holds no PEM private key"),
        ({"cert": "{b0crt}", "key": "{b1key}"}, "tls.key: '{b1key}' is not the private key"),
        ({"cert": "{b0crt}"}, "holds no private key matching its certificate"),
        ({"cert": "{b0crt}", "key": "{b0key}", "ca": "{b0key}"}, "tls.ca: '{b0key}' holds no PEM"),
        ({"cert": "{b0crt}", "key": "{b0key}", "require_client_cert": True}, "needs tls.ca"),
        ({"cert": "{b0crt}", "key": "{b0key}", "link_names": ["b1"]}, "tls.link_names: needs"),
        ({"cert": "{b0crt}", "key": "{b0key}", "link_names": "b1"}, "tls.link_names: expected"),
        ({"cert": "{b0crt}", "key": "{b0key}", "verify": True}, "tls.verify: unknown key"),
        ({"cert": "{b0crt}", "require_client_cert": "yes"}, "expected true or false"),
    ],
)
def test_tls_config_errors_name_file_and_key(pki, tmp_path, tls, words):
    subst = {
        "dir": str(pki.dir),
        "b0crt": pki.b0[0],
        "b0key": pki.b0[1],
        "b1key": pki.b1[1],
    }
    lines = ["[tls]"]
    for k, v in tls.items():
        lines.append(f"{k} = {json.dumps(v.format(**subst) if isinstance(v, str) else v)}")
    p = tmp_path / "broker.toml"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as info:
        load_config(str(p))
    assert str(p) in str(info.value)
    assert words.format(**subst) in str(info.value)


def test_client_tls_options_and_cli_flags(pki, monkeypatch):
    with pytest.raises(ConfigError, match="ca given for a plaintext connection"):
        AsyncClient("pubsift://127.0.0.1:1", ca=pki.ca)
    with pytest.raises(ConfigError, match=r"key '.*' given without cert"):
        AsyncClient("pubsifts://127.0.0.1:1", key=pki.alice[1])
    with pytest.raises(ConfigError, match=r"ca: cannot read '/nonexistent.pem'"):
        AsyncClient("pubsifts://127.0.0.1:1", ca="/nonexistent.pem")
    assert AsyncClient("pubsifts://h").tls is not None and AsyncClient("pubsift://h").tls is None
    assert client_context(False) is None

    from pubsift.adapters.broker.cli import (
        add_publish_feed_arguments,
        add_sub_arguments,
        client_options,
    )

    p = argparse.ArgumentParser()
    add_sub_arguments(p)
    monkeypatch.delenv("PUBSIFT_TOKEN", raising=False)
    monkeypatch.setenv("PUBSIFT_CA", pki.ca)
    argv = ["-m", "records", "-f", "price > 1"]
    # the environment applies to pubsifts:// URLs only
    assert client_options(p.parse_args(["pubsifts://h", *argv])) == {"token": None, "ca": pki.ca}
    assert client_options(p.parse_args(["pubsift://h", *argv])) == {"token": None}
    with pytest.raises(ConfigError, match="--cert given for the plaintext URL"):
        client_options(p.parse_args(["pubsift://h", "--cert", pki.alice[0], *argv]))
    feed = argparse.ArgumentParser()
    add_publish_feed_arguments(feed)
    cert, key = pki.alice
    args = feed.parse_args(["pubsifts://h", "f.xml", "--token", "t", "--cert", cert, "--key", key])
    assert client_options(args) == {"token": "t", "ca": pki.ca, "cert": cert, "key": key}
    with pytest.raises(ConfigError, match=r"--key: '.*' holds no PEM private key"):
        client_options(
            p.parse_args(["pubsifts://h", "--cert", pki.alice[0], "--key", pki.ca, *argv])
        )


def test_a_tls_config_built_directly_is_checked(pki):
    with pytest.raises(ConfigError, match=r"needs tls.ca"):
        BrokerConfig(tls=TLSConfig(pki.b0[0], pki.b0[1], link_names=("b1",))).check()
