"""``pubsift sub`` and ``pub`` against a broker that refuses them (docs/protocol.md §6): a
clear one-line message and a non-zero exit, never "subscribed" and a silent wait, nor
"published" for what the broker refused; the client never sends a frame above the broker's
limit (the broker would close the connection on every reconnection), and a broker that
drops it at once does not get a reconnection storm."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from pubsift.adapters.broker.client import AsyncClient, BrokerRefused
from pubsift.adapters.broker.frames import encode, error, hello

ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
CLI = [sys.executable, "-m", "pubsift.cli"]


def _frame(sock: socket.socket) -> dict | None:
    import json

    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    (n,) = struct.unpack(">I", head)
    body = b""
    while len(body) < n:
        chunk = sock.recv(n - len(body))
        if not chunk:
            return None
        body += chunk
    return json.loads(body)


class FakeBroker:
    """A broker that routes ``records``, refuses every sub and pub (``invalid-message``)
    and answers stats; or, with ``drop``, closes each connection right after the hello."""

    def __init__(self, drop: bool = False) -> None:
        self.drop = drop
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.hellos: list[float] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"pubsift://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                s, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, s: socket.socket) -> None:
        with s, contextlib.suppress(OSError):
            if _frame(s) is None:
                return
            self.hellos.append(time.monotonic())
            s.sendall(encode(hello("broker", "fake", models=["records"], max_frame_bytes=4096)))
            if self.drop:
                return
            while (obj := _frame(s)) is not None:
                if obj["kind"] in ("sub", "pub"):
                    s.sendall(encode(error("invalid-message", f"{obj['kind']}: not here")))
                elif obj["kind"] == "stats":
                    s.sendall(encode({"kind": "stats", "broker": "fake"}))

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def fake() -> Iterator[FakeBroker]:
    b = FakeBroker()
    yield b
    b.close()


def test_sub_exits_non_zero_when_the_broker_refuses_the_subscription(fake: FakeBroker):
    done = subprocess.run(
        [*CLI, "sub", fake.url, "-m", "records", "-f", "price > 1"],
        capture_output=True,
        text=True,
        timeout=30,
        env=ENV,
    )
    assert done.returncode != 0
    assert "refused the subscription: invalid-message: sub: not here" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_sub_and_pub_exit_non_zero_for_a_model_the_broker_does_not_route(fake: FakeBroker):
    for cmd in (["sub", fake.url, "-m", "xml", "-f", "//a"], ["pub", fake.url, "-m", "xml"]):
        done = subprocess.run(
            [*CLI, *cmd], capture_output=True, text=True, timeout=30, env=ENV, input=""
        )
        assert done.returncode == 2, done.stderr
        assert "broker fake at pubsift://127.0.0.1" in done.stderr
        assert "does not route model 'xml' (it routes records)" in done.stderr
        assert "Traceback" not in done.stderr


def test_pub_counts_what_the_broker_refused_as_not_sent(fake: FakeBroker):
    done = subprocess.run(
        [*CLI, "pub", fake.url, "-m", "records"],
        capture_output=True,
        text=True,
        timeout=30,
        env=ENV,
        input='{"price": 1}\n{"price": 2}\n',
    )
    assert done.returncode == 1, done.stderr
    assert "refused by the broker: pub: not here" in done.stderr
    assert "0 published, 2 not sent" in done.stderr


def test_a_frame_above_the_brokers_limit_is_refused_by_the_client(fake: FakeBroker):
    async def go() -> None:
        c = AsyncClient(fake.url)
        await c.connect()
        big = {"symbol": [f"S{i}" for i in range(1000)]}
        with pytest.raises(BrokerRefused, match="above the broker's limit of 4096"):
            await c.subscribe("records", big, print)
        with pytest.raises(BrokerRefused, match="above the broker's limit"):
            await c.publish("records", {"text": "x" * 5000})
        assert c._subs == {} and c._seq == 0
        assert await c.publish("records", {"price": 1}) == 1
        await c.close()

    asyncio.run(go())


def test_a_broker_that_drops_the_client_at_once_gets_no_reconnection_storm():
    fake = FakeBroker(drop=True)

    async def go() -> None:
        c = AsyncClient(fake.url, backoff=(0.05, 2.0))
        await c.connect()
        await asyncio.sleep(1.5)
        await c.close()

    try:
        asyncio.run(go())
    finally:
        fake.close()
    # backoff 0.05 doubling (x0.5-1 jitter) allows at most ~6 dials in 1.5 s; resetting it
    # on every hello made it ~1 per 50 ms
    assert len(fake.hellos) <= 7, len(fake.hellos)


def test_sub_pub_and_publish_feed_say_when_the_broker_is_unreachable():
    # a port held bound but not listening: connecting is refused, and no broker of a test
    # running beside this one can take the port meanwhile (closing it first once let one)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    url = f"pubsift://127.0.0.1:{port}"
    try:
        _refused_everywhere(url)
    finally:
        s.close()


def _refused_everywhere(url: str) -> None:
    for cmd in (
        ["sub", url, "-m", "records", "-f", "price > 1"],
        ["pub", url, "-m", "records"],
        ["publish-feed", url, "feed.xml", "--once"],
    ):
        done = subprocess.run(
            [*CLI, *cmd], capture_output=True, text=True, timeout=30, env=ENV, input=""
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"pubsift {cmd[0]}: cannot connect to {url}:"), done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
