"""The kill -9 test of docs/protocol.md §8 with a history (docs/history.md): three
``pubsift broker`` processes b0-b1-b2, a ``[[history]]`` hosted by the publisher's broker
b0, two ``pubsift sub`` processes at b2 (one with ``--state``, which resumes; one
without). b1 is killed with SIGKILL while quotes are published at b0 and started again
on its port. The resuming subscriber prints every matching publication exactly once, in
order; the other one misses what was published while b1 was down. Every wait is
bounded; every process is ended in a finalizer."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pubsift.adapters.broker.client import connect

from tests.network.test_processes import until

pytestmark = pytest.mark.slow

CONFIG = """
[broker]
models = ["records"]
[lease]
period = 1.5
refresh = 0.4
max_delay = 0.1
[links]
backoff_initial = 0.05
backoff_max = 0.5
"""


class Procs:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ports: dict[str, int] = {}

    def broker(self, bid: str, neighbour: str | None, port: int = 0) -> None:
        toml = self.tmp / f"{bid}.toml"
        extra = ""
        if bid == "b0":
            store = self.tmp / "b0-history.sqlite"
            extra = (
                f'[[history]]\nid = "h0"\nmodel = "records"\nfilter = "true"\nstore = "{store}"\n'
            )
        toml.write_text(CONFIG + extra)
        pf = self.tmp / f"{bid}.port"
        pf.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "pubsift.cli", "broker", "--config", str(toml)]
        cmd += ["--id", bid, "--listen", f"127.0.0.1:{port}", "--port-file", str(pf)]
        if neighbour is not None:
            cmd += ["--neighbour", f"127.0.0.1:{self.ports[neighbour]}"]
        self.spawn(bid, cmd, self.tmp / f"{bid}.log")
        until(lambda: pf.exists() or self.procs[bid].poll() is not None, 20, f"{bid} to listen")
        assert self.procs[bid].poll() is None, (self.tmp / f"{bid}.log").read_text()
        self.ports[bid] = int(pf.read_text())

    def spawn(self, name: str, cmd: list[str], out: Path, err: Path | None = None) -> None:
        with open(out, "ab") as o, open(err or out, "ab") as e:
            self.procs[name] = subprocess.Popen(cmd, stdout=o, stderr=e)

    def url(self, bid: str) -> str:
        return f"pubsift://127.0.0.1:{self.ports[bid]}"

    def stats(self, bid: str) -> dict:
        c = connect(self.url(bid), id=f"probe-{time.monotonic_ns()}")
        try:
            return c.stats()
        finally:
            c.close()

    def close(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        for p in self.procs.values():
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Procs]:
    p = Procs(tmp_path)
    try:
        yield p
    finally:
        p.close()


def _stored(path: Path) -> int:
    """Rows in a history's store (read beside the history: WAL lets a reader in)."""
    if not path.exists():
        return 0
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT COUNT(*) FROM events").fetchone()[0])
    except sqlite3.Error:
        return 0
    finally:
        db.close()


def _printed(path: Path) -> list[int]:
    return [json.loads(line)["seq"] for line in path.read_text().splitlines() if line.strip()]


def test_kill_9_the_middle_broker_a_resuming_subscriber_loses_nothing(procs: Procs) -> None:
    tmp = procs.tmp
    procs.broker("b0", None)
    procs.broker("b1", "b0")
    procs.broker("b2", "b1")
    until(lambda: procs.stats("b1")["neighbours"] == ["b0", "b2"], 20, "the chain")
    sub = [sys.executable, "-m", "pubsift.cli", "sub", procs.url("b2"), "-m", "records"]
    sub += ["-f", "price >= 10"]
    procs.spawn(
        "resumes",
        [*sub, "--state", str(tmp / "state.json")],
        tmp / "resumes.out",
        tmp / "resumes.err",
    )
    procs.spawn("plain", sub, tmp / "plain.out", tmp / "plain.err")
    # both subscribed at b2 before the first quote (one arriving earlier misses the first)
    until(lambda: procs.stats("b2")["entries"]["records"][0] >= 2, 20, "the subscriptions at b2")
    until(lambda: procs.stats("b0")["entries"]["records"][1] >= 1, 20, "the subscriptions at b0")
    until(
        lambda: procs.stats("b0")["entries"].get("subscriptions", [0])[0] >= 1,
        20,
        "the history's subscription",
    )
    pub = connect(procs.url("b0"), id="quotes")
    published: list[int] = []
    stop = threading.Event()

    def publish() -> None:
        i = 0
        while not stop.is_set():
            i += 1
            published.append(pub.publish("records", {"symbol": "IBM", "price": i % 50}))
            time.sleep(0.005)

    t = threading.Thread(target=publish, daemon=True)
    t.start()
    try:
        until(lambda: len(_printed(tmp / "plain.out")) > 20, 20, "live notifications")
        port = procs.ports["b1"]
        procs.procs["b1"].send_signal(signal.SIGKILL)
        procs.procs["b1"].wait(10)
        killed = len(published)
        time.sleep(2.0)
        procs.broker("b1", "b0", port)
        until(lambda: procs.stats("b1")["neighbours"] == ["b0", "b2"], 20, "the chain again")
        time.sleep(1.5)
    finally:
        stop.set()
        t.join(10)
        pub.close()
    expected = [s for s in published if s % 50 >= 10]
    assert len(published) > killed + 100
    until(lambda: len(_printed(tmp / "resumes.out")) >= len(expected), 20, "the resumed ones")
    time.sleep(0.3)
    resumed = _printed(tmp / "resumes.out")
    plain = _printed(tmp / "plain.out")
    assert len(resumed) == len(set(resumed)), "a duplicate"
    assert resumed == expected, f"lost {sorted(set(expected) - set(resumed))[:20]}"
    assert plain == sorted(set(plain))
    lost = len(expected) - len(plain)
    assert lost > 0, "the plain subscriber missed nothing: was b1 down at all?"
    state = json.loads((tmp / "state.json").read_text())
    assert state["last_seq"]["quotes"] == expected[-1]
    print(
        f"published {len(published)}, matching {len(expected)}: resuming subscriber 0 lost, "
        f"0 duplicates; plain subscriber {lost} lost"
    )


def test_pubsift_sub_with_state_resumes_across_its_own_restart(procs: Procs) -> None:
    """``pubsift sub --state`` stopped (SIGTERM) while quotes go on, and started again
    with the same file: the two runs together print every matching quote once, in order."""
    tmp = procs.tmp
    procs.broker("b0", None)
    sub = [sys.executable, "-m", "pubsift.cli", "sub", procs.url("b0"), "-m", "records"]
    sub += ["-f", "price >= 10", "--state", str(tmp / "state.json")]
    pub = connect(procs.url("b0"), id="quotes")
    published: list[int] = []

    def publish(n: int) -> None:
        for _ in range(n):
            i = len(published) + 1
            published.append(pub.publish("records", {"symbol": "IBM", "price": i % 50}))

    try:
        until(
            lambda: procs.stats("b0")["entries"].get("subscriptions", [0])[0] >= 1,
            20,
            "the history's subscription",
        )
        procs.spawn("run1", sub, tmp / "run1.out", tmp / "run1.err")
        until(lambda: procs.stats("b0")["entries"]["records"][0] >= 2, 20, "the subscription")
        publish(60)
        until(lambda: len(_printed(tmp / "run1.out")) >= 10, 20, "the first run's notifications")
        procs.procs["run1"].send_signal(signal.SIGTERM)
        assert procs.procs["run1"].wait(10) == 0
        publish(60)  # nobody listens with that filter but the history
        procs.spawn("run2", sub, tmp / "run2.out", tmp / "run2.err")
        until(lambda: procs.stats("b0")["entries"]["records"][0] >= 2, 20, "the resubscription")
        publish(30)
    finally:
        pub.close()
    expected = [s for s in published if s % 50 >= 10]
    both = lambda: _printed(tmp / "run1.out") + _printed(tmp / "run2.out")  # noqa: E731
    until(lambda: len(both()) >= len(expected), 20, "the second run to catch up")
    time.sleep(0.3)
    assert both() == expected, (len(both()), len(expected))


def test_pubsift_history_as_a_process_answers_pubsift_sub_replay(procs: Procs) -> None:
    """``pubsift history --config history.toml URL`` (a process of its own) records, and
    ``pubsift sub --replay 'last 3'`` gets the last three, marked replayed, then live."""
    tmp = procs.tmp
    procs.broker("b1", None)  # no [[history]] in its configuration
    (tmp / "history.toml").write_text(
        f'[history]\nid = "h-proc"\nmodel = "records"\nfilter = "true"\n'
        f'store = "{tmp / "proc.sqlite"}"\n'
    )
    cli = [sys.executable, "-m", "pubsift.cli"]
    procs.spawn(
        "history",
        [*cli, "history", "--config", str(tmp / "history.toml"), procs.url("b1")],
        tmp / "history.log",
    )
    until(
        lambda: procs.stats("b1")["entries"].get("subscriptions", [0])[0] >= 1,
        20,
        "the history process's subscriptions",
    )
    pub = connect(procs.url("b1"), id="quotes")
    try:
        for i in range(1, 11):
            pub.publish("records", {"symbol": "IBM", "price": i})
        pub.stats()
        until(lambda: _stored(tmp / "proc.sqlite") == 10, 10, "the ten recorded")
        sub = [*cli, "sub", procs.url("b1"), "-m", "records", "-f", "true", "--replay", "last 3"]
        procs.spawn("late", sub, tmp / "late.out", tmp / "late.err")
        until(lambda: len(_printed(tmp / "late.out")) >= 3, 20, "the replayed ones")
        until(lambda: procs.stats("b1")["entries"]["records"][0] >= 2, 20, "the live one")
        pub.publish("records", {"symbol": "IBM", "price": 11})
        until(lambda: len(_printed(tmp / "late.out")) >= 4, 20, "the live one")
    finally:
        pub.close()
    lines = [json.loads(x) for x in (tmp / "late.out").read_text().splitlines()]
    assert [(d["seq"], d.get("replayed", False)) for d in lines] == [
        (8, True),
        (9, True),
        (10, True),
        (11, False),
    ]
    procs.procs["history"].send_signal(signal.SIGTERM)
    assert procs.procs["history"].wait(10) == 0
