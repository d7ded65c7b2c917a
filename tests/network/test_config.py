"""broker.toml: defaults, and a clear error naming file and key for everything wrong."""

from __future__ import annotations

import logging

import pytest
from pubsift.adapters.broker.config import Address, BrokerConfig, ConfigError, load_config


def _load(tmp_path, text: str) -> BrokerConfig:
    p = tmp_path / "broker.toml"
    p.write_text(text)
    return load_config(str(p))


def test_defaults(tmp_path):
    cfg = _load(tmp_path, "")
    assert cfg.listen == Address("127.0.0.1", 7400)
    assert (cfg.strategy, cfg.lease_period, cfg.lease_refresh) == ("covering", 30.0, 10.0)
    assert cfg.models is None and cfg.neighbours == () and cfg.max_frame_bytes == 1 << 20
    assert (cfg.heartbeat_interval, cfg.heartbeat_max_missed) == (15.0, 2)


def test_a_full_file(tmp_path):
    cfg = _load(
        tmp_path,
        """
[broker]
id = "b1"
listen = "0.0.0.0:7500"
neighbours = ["10.0.0.2:7400", "[::1]:7401"]
strategy = "merging"
advertisements = true
models = ["records"]
[lease]
period = 1.5
refresh = 0.4
max_delay = 0.1
[limits]
max_frame_bytes = 4096
[heartbeat]
interval = 0
max_missed = 3
""",
    )
    assert (cfg.heartbeat_interval, cfg.heartbeat_max_missed) == (0.0, 3)
    assert cfg.id == "b1" and cfg.listen == Address("0.0.0.0", 7500)
    assert cfg.neighbours == (Address("10.0.0.2", 7400), Address("::1", 7401))
    assert (cfg.strategy, cfg.advertisements, cfg.models) == ("merging", True, ("records",))
    assert (cfg.lease_period, cfg.lease_refresh, cfg.max_frame_bytes) == (1.5, 0.4, 4096)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[broker]\nlisten = 'nowhere'", "broker.listen: 'nowhere' is not 'host:port'"),
        ("[broker]\nlisten = 'h:70000'", "broker.listen"),
        ("[broker]\nlistne = 'h:1'", "broker.listne: unknown key"),
        ("[brokers]\n", "unknown section or key 'brokers'"),
        ("[broker]\nstrategy = 'fastest'", "broker.strategy: unknown routing strategy 'fastest'"),
        ("[broker]\nneighbours = 'h:1'", "broker.neighbours: expected a list"),
        ("[broker]\nneighbours = ['h:1', 'x']", "broker.neighbours[1]"),
        ("[broker]\nadvertisements = 'yes'", "broker.advertisements: expected true or false"),
        ("[broker]\nid = ''", "broker.id: expected a non-empty string"),
        ("[lease]\nperiod = -1", "lease.period: expected a number > 0"),
        ("[lease]\nperiod = true", "lease.period"),
        ("[lease]\nperiod = 10.0\nrefresh = 10.0", "lease period π=10.0 is too short"),
        ("[limits]\nmax_frame_bytes = 1.5", "limits.max_frame_bytes: expected an integer"),
        ("[links]\nbackoff_initial = 9.0\nbackoff_max = 1.0", "links.backoff_initial"),
        ("[heartbeat]\ninterval = -1", "heartbeat.interval: expected a number ≥ 0"),
        ("[heartbeat]\nmax_missed = 0", "heartbeat.max_missed: expected an integer > 0"),
        ("[heartbeat]\nevery = 1", "heartbeat.every: unknown key"),
        (
            "[broker]\nlisten = '127.0.0.1:7400'\nneighbours = ['127.0.0.1:7400']",
            "broker.neighbours[0]: 127.0.0.1:7400 is this broker's own listen address",
        ),
        ("broker = 3", "broker: expected a table"),
        ("[broker\n", "not valid TOML"),
    ],
)
def test_errors_name_file_and_key(tmp_path, text, words):
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, text)
    assert str(tmp_path / "broker.toml") in str(info.value)
    assert words in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read the broker configuration"):
        load_config(str(tmp_path / "none.toml"))


def test_unknown_model_is_a_config_error():
    from pubsift.adapters.broker.daemon import load_models

    with pytest.raises(ConfigError, match=r"broker\.models: no filter model named 'nope'"):
        load_models(("records", "nope"), "b.toml")


def test_an_address_in_use_is_a_config_error_naming_the_key(caplog):
    import asyncio
    import socket

    from pubsift.adapters.broker.daemon import BrokerDaemon

    taken = socket.create_server(("127.0.0.1", 0))
    port = taken.getsockname()[1]

    async def go(**where) -> str:
        d = BrokerDaemon(BrokerConfig(source="b.toml", models=("records",), **where))
        with pytest.raises(ConfigError) as info:
            await d.start()
        await d.stop()
        return str(info.value)

    try:
        with caplog.at_level(logging.INFO, logger="pubsift"):
            msg = asyncio.run(
                go(listen=Address("127.0.0.1", 0), gateway=Address("127.0.0.1", port))
            )
        assert msg.startswith("b.toml: gateway.listen (--gateway): cannot listen on")
        assert msg.endswith("address already in use")
        (closing,) = [r.getMessage() for r in caplog.records if "shutting down" in r.getMessage()]
        assert "closing 0 client(s), 0 link(s), 0 HTTP stream(s)" in closing, closing
        msg = asyncio.run(go(listen=Address("127.0.0.1", port)))
        assert msg == (
            f"b.toml: broker.listen (--listen): cannot listen on 127.0.0.1:{port}: "
            "address already in use"
        )
    finally:
        taken.close()


def test_broker_help_says_the_defaults_and_the_shutdown(capsys):
    from pubsift.cli import main

    with pytest.raises(SystemExit):
        main(["broker", "--help"])
    out = capsys.readouterr().out
    assert "default 127.0.0.1:7400" in out and "SIGTERM" in out and "exits 0" in out


def test_hello_timeout_is_a_limit():
    from pubsift.adapters.broker.config import from_mapping

    assert BrokerConfig().hello_timeout == 10.0
    assert from_mapping({"limits": {"hello_timeout": 2.5}}).hello_timeout == 2.5
    with pytest.raises(ConfigError, match=r"limits.hello_timeout: expected a number > 0, got 0"):
        from_mapping({"limits": {"hello_timeout": 0}}, "b.toml")
