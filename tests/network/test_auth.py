"""Token authentication and authorized filters checked by covering (docs/protocol.md §10; Fiege,
Zeidler & Buchmann, "Security Aspects in Publish/Subscribe Systems", DEBS 2004, §4.1):
in-process daemons on 127.0.0.1."""

from __future__ import annotations

import asyncio
import logging

import pytest
from pubsift.adapters.broker.auth import Authorizer
from pubsift.adapters.broker.client import AsyncClient, BrokerUnavailable, Notification
from pubsift.adapters.broker.config import (
    Address,
    BrokerConfig,
    ClientIdentity,
    ConfigError,
    load_config,
)
from pubsift.adapters.broker.daemon import BrokerDaemon, load_models
from pubsift.adapters.broker.frames import encode, read_frame

from tests.network.test_inprocess import FAST, run_daemon, until, url

CONFIG = """
[broker]
id = "b0"
listen = "127.0.0.1:0"
models = ["records", "xml"]

[identities.alice]
token = "alice-secret"
subscribe.records = ['symbol prefix "I"', 'price > 100']
publish.records = ['symbol = "IBM"']

[identities.bob]
token_file = "{bob}"
subscribe.xml = ["//quote"]
"""


def _config(tmp_path, text: str = CONFIG):
    (tmp_path / "bob.token").write_text("bob-secret\n")
    p = tmp_path / "broker.toml"
    p.write_text(text.replace("{bob}", str(tmp_path / "bob.token")))
    cfg = load_config(str(p))
    return cfg.with_overrides(**{k: v for k, v in FAST.items() if k != "models"})


def test_the_config_reads_identities(tmp_path):
    cfg = _config(tmp_path)
    alice, bob = cfg.identities
    assert (alice.name, alice.token, bob.name, bob.token) == (
        "alice",
        "alice-secret",
        "bob",
        "bob-secret",
    )
    assert alice.subscribe == {"records": ('symbol prefix "I"', "price > 100")}
    assert alice.publish == {"records": ('symbol = "IBM"',)} and bob.publish == {}
    assert "secret" not in repr(alice)


def test_an_open_broker_is_unchanged_and_ignores_a_token(tmp_path):
    cfg = _config(tmp_path, "[broker]\nlisten = '127.0.0.1:0'\nmodels = ['records']\n")

    async def body(d: BrokerDaemon) -> None:
        assert not d.auth.enabled
        got: list[Notification] = []
        sub = AsyncClient(url(d), id="sub")
        pub = AsyncClient(url(d), id="pub", token="whatever")
        await sub.connect()
        await pub.connect()
        await sub.subscribe("records", "price > 10", got.append)
        await until(lambda: d.broker.sizes() == (1, 0))
        await pub.publish("records", {"symbol": "MSFT", "price": 11})
        await until(lambda: len(got) == 1)
        assert sub.errors == pub.errors == []
        await sub.close()
        await pub.close()

    run_daemon(cfg, body)


@pytest.mark.parametrize("token", [None, "", "wrong", "alice-secre"])
def test_a_missing_or_unknown_token_is_unauthorized(tmp_path, token, caplog):
    cfg = _config(tmp_path)

    async def body(d: BrokerDaemon) -> None:
        extra = {} if token is None else {"token": token}
        r, w = await asyncio.open_connection("127.0.0.1", d.address.port)
        w.write(encode({"kind": "hello", "protocol": 1, "role": "client", "id": "x", **extra}))
        await w.drain()
        first = await asyncio.wait_for(read_frame(r, 1 << 20), 5)
        assert first is not None and first["kind"] == "error"
        assert first["reason"] == "unauthorized"
        assert await asyncio.wait_for(read_frame(r, 1 << 20), 5) is None  # closed
        w.close()
        assert "x" not in d.port.clients
        with pytest.raises(BrokerUnavailable, match="unauthorized"):
            await AsyncClient(url(d), id="y", token=token).connect(timeout=5)

    with caplog.at_level(logging.WARNING, "pubsift.broker"):
        run_daemon(cfg, body)
    assert any("unauthorized" in r.getMessage() for r in caplog.records)
    assert not any("alice-secre" in r.getMessage() for r in caplog.records)


def test_covered_subscriptions_are_accepted_uncovered_ones_forbidden(tmp_path, caplog):
    cfg = _config(tmp_path)

    async def body(d: BrokerDaemon) -> None:
        alice = AsyncClient(url(d), id="alice", token="alice-secret")
        bob = AsyncClient(url(d), id="bob", token="bob-secret")
        await alice.connect()
        await bob.connect()
        await alice.subscribe("records", 'symbol = "IBM" and price > 3', lambda n: None)
        await alice.subscribe("records", "price > 200", lambda n: None)
        await bob.subscribe("xml", "//quote[@symbol='IBM']", lambda n: None)
        await until(lambda: d.broker.sizes()[0] == 3)
        caplog.clear()
        await alice.subscribe("records", 'symbol = "MSFT"', lambda n: None)
        await alice.subscribe("xml", "//quote", lambda n: None)  # no right on xml at all
        await bob.subscribe("records", "price > 200", lambda n: None)
        await until(lambda: len(alice.errors) == 2 and len(bob.errors) == 1)
        assert {e["reason"] for e in alice.errors + bob.errors} == {"forbidden"}
        assert "no authorized filter covers it" in alice.errors[0]["message"]
        assert d.broker.sizes()[0] == 3  # nothing else changed
        warnings = [r for r in caplog.records if r.name == "pubsift.broker"]
        assert len(warnings) == 3
        # the connection still works: a covered subscription after a refusal is accepted
        await alice.subscribe("records", 'symbol = "INTC"', lambda n: None)
        await until(lambda: d.broker.sizes()[0] == 4)
        assert alice.connected and alice.connections == 1
        # the client learnt from the echoed ref which ones were refused: it no longer
        # renews them (the broker would refuse them again every ρ)
        assert [(e.reason, e.kind, e.model) for e in alice.refusals] == [
            ("forbidden", "sub", "records"),
            ("forbidden", "sub", "xml"),
        ]
        await asyncio.sleep(3 * d.config.lease_refresh)
        assert len(alice.errors) == 2 and d.broker.sizes()[0] == 4
        assert len([r for r in caplog.records if r.name == "pubsift.broker"]) == 3
        await alice.close()
        await bob.close()

    with caplog.at_level(logging.WARNING, "pubsift.broker"):
        run_daemon(cfg, body)


def test_a_refusal_echoes_ref_and_advertisements_are_checked_by_covering(tmp_path):
    cfg = _config(tmp_path, CONFIG.replace('models = ["records", "xml"]', "advertisements = true"))

    async def body(d: BrokerDaemon) -> None:
        frames = [
            {"kind": "adv", "model": "records", "filter": 'symbol = "IBM"', "ref": 1},
            {"kind": "adv", "model": "records", "filter": 'symbol prefix "I"', "ref": 2},
            {"kind": "sub", "model": "records", "filter": "price > 5", "ref": 3},
            {"kind": "stats"},
        ]
        r, w = await asyncio.open_connection("127.0.0.1", d.address.port)
        hello = {"kind": "hello", "protocol": 1, "role": "client", "id": "alice"}
        w.write(encode({**hello, "token": "alice-secret"}) + b"".join(map(encode, frames)))
        await w.drain()
        got = []
        while not got or got[-1]["kind"] != "stats":
            got.append(await asyncio.wait_for(read_frame(r, 1 << 20), 5))
        errors = [o for o in got if o["kind"] == "error"]
        assert [(e["reason"], e["ref"]) for e in errors] == [("forbidden", 2), ("forbidden", 3)]
        w.close()

    run_daemon(cfg, body)


def test_publications_outside_the_publish_filters_are_forbidden(tmp_path):
    cfg = _config(tmp_path)

    async def body(d: BrokerDaemon) -> None:
        got: list[Notification] = []
        alice = AsyncClient(url(d), id="alice", token="alice-secret")
        bob = AsyncClient(url(d), id="bob", token="bob-secret")
        await alice.connect()
        await bob.connect()
        await alice.subscribe("records", 'symbol prefix "I"', got.append)
        await until(lambda: d.broker.sizes()[0] == 1)
        await alice.publish("records", {"symbol": "INTC", "price": 1})  # not IBM
        await alice.publish("records", {"symbol": "IBM", "price": 2})
        await bob.publish("records", {"symbol": "IBM", "price": 3})  # bob may not publish
        await until(lambda: len(alice.errors) == 1 and len(bob.errors) == 1)
        await until(lambda: len(got) == 1)
        await asyncio.sleep(0.1)
        assert [(n.publisher, n.wire["price"]) for n in got] == [("alice/alice", 2)]
        assert alice.errors[0]["reason"] == bob.errors[0]["reason"] == "forbidden"
        await alice.close()
        await bob.close()

    run_daemon(cfg, body)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "[identities.a]\ntoken = 't'\nsubscribe.records = ['price >']",
            "identities.a.subscribe.records[0]:",
        ),
        (
            "[identities.a]\ntoken = 't'\npublish.nope = ['x']",
            "identities.a.publish.nope: model 'nope' is not routed",
        ),
        ("[identities.a]\nsubscribe.records = []", "identities.a: give exactly one of token"),
        ("[identities.a]\ntoken = 't'\ntoken_file = 'f'", "give exactly one of token"),
        ("[identities.a]\ntoken = ''", "identities.a.token: expected a non-empty string"),
        ("[identities.a]\ntoken_file = '/nonexistent/t'", "identities.a.token_file: cannot read"),
        ("[identities.a]\ntoken = 't'\nread = []", "identities.a.read: unknown key"),
        ("[identities.a]\ntoken = 't'\nsubscribe = ['x']", "identities.a.subscribe: expected"),
        ("[identities.a]\ntoken = 't'\nsubscribe.records = 'x'", "subscribe.records: expected"),
        (
            "[identities.a]\ntoken = 't'\n[identities.b]\ntoken = 't'",
            "identities.b.token: the same",
        ),
        ("identities = 3", "identities: expected a table"),
        ("[identities.a]\ncert_name = 'a'", "identities.a.cert_name: needs [tls] with ca"),
    ],
)
def test_identity_errors_name_file_and_key(tmp_path, text, words):
    p = tmp_path / "broker.toml"
    p.write_text(text + "\n[broker]\nmodels = ['records']\n")
    with pytest.raises(ConfigError) as info:
        cfg = load_config(str(p))
        BrokerDaemon(cfg)
    assert str(p) in str(info.value)
    assert words in str(info.value)


def test_many_authorized_filters_go_through_the_models_index():
    models = load_models(("records",), "<test>")
    filters = tuple(f'symbol = "S{i}"' for i in range(2000))
    auth = Authorizer((ClientIdentity("many", "t", subscribe={"records": filters}),), models)
    grant = auth.authenticate("t")
    assert grant is not None and auth.authenticate("u") is None
    index = grant.subscribe["records"]
    assert type(index) is type(models["records"].new_index()) and len(index) == 2000
    from pubsift.core.messages import Sub

    ok = Sub("c", "records", models["records"].parse_filter('symbol = "S1999" and price > 1'))
    bad = Sub("c", "records", models["records"].parse_filter('symbol = "T"'))
    assert auth.check(grant, ok, models) is None
    assert auth.check(grant, bad, models) is not None


def test_broker_links_need_the_link_token_when_identities_are_set(tmp_path):
    """Else a client could say role "broker" and get past the authorization checks."""
    secured = _config(tmp_path, CONFIG.replace('id = "b0"', 'id = "b0"\nlink_token = "links"'))
    closed = _config(tmp_path)  # identities, no link token: no links at all

    async def hello_as_broker(d: BrokerDaemon, **token: str) -> dict:
        r, w = await asyncio.open_connection("127.0.0.1", d.address.port)
        w.write(encode({"kind": "hello", "protocol": 1, "role": "broker", "id": "evil", **token}))
        await w.drain()
        first = await asyncio.wait_for(read_frame(r, 1 << 20), 5)
        w.close()
        assert first is not None
        return first

    async def body(d: BrokerDaemon) -> None:
        for token in ({}, {"token": "wrong"}):
            first = await hello_as_broker(d, **token)
            assert (first["kind"], first["reason"]) == ("error", "unauthorized")
        good = BrokerDaemon(
            BrokerConfig(
                id="b1", listen=Address("127.0.0.1", 0), neighbours=(d.address,), **FAST
            ).with_overrides(link_token="links")
        )
        await good.start()
        try:
            await until(lambda: list(d.port.neighbours) == ["b1"])
        finally:
            await good.stop()

    run_daemon(secured, body)

    async def refused(d: BrokerDaemon) -> None:
        first = await hello_as_broker(d, token="anything")
        assert first["reason"] == "unauthorized" and "accepts no links" in first["message"]

    run_daemon(closed, refused)


def test_the_cli_takes_the_token_from_the_flag_or_the_environment(monkeypatch):
    import argparse

    from pubsift.adapters.broker.cli import add_pub_arguments, add_sub_arguments

    for add, argv in ((add_sub_arguments, ["-f", "x > 1"]), (add_pub_arguments, [])):
        monkeypatch.delenv("PUBSIFT_TOKEN", raising=False)
        p = argparse.ArgumentParser()
        add(p)
        assert p.parse_args(["pubsift://h:1", "-m", "records", *argv]).token is None
        monkeypatch.setenv("PUBSIFT_TOKEN", "from-env")
        p = argparse.ArgumentParser()
        add(p)
        assert p.parse_args(["pubsift://h:1", "-m", "records", *argv]).token == "from-env"
        args = p.parse_args(["pubsift://h:1", "-m", "records", "--token", "flag", *argv])
        assert args.token == "flag"
