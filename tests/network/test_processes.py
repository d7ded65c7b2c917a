"""Real broker processes on 127.0.0.1 (docs/protocol.md §8): a tree of ``pubsift broker``
subprocesses and clients of the records and xml models, checked with the delivery oracle
after the network settled; a link closing a cycle is refused; a killed client's
subscription expires after π; a broker killed with SIGKILL and restarted gets its table
back from renewals. Ports are chosen by the OS; every wait is bounded; every process is
killed in a finalizer."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pubsift.adapters.broker.client import Client, connect
from pubsift.core import load_model, oracle
from pubsift.core.network import TraceOp

pytestmark = pytest.mark.slow

PI = 1.5
CONFIG = """
[broker]
models = ["records", "xml"]
[lease]
period = 1.5
refresh = 0.4
max_delay = 0.1
[links]
backoff_initial = 0.05
backoff_max = 0.5
"""


def until(cond: Callable[[], bool], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


class Net:
    """Broker processes by id, each with its port and log file."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        (tmp / "broker.toml").write_text(CONFIG)
        self.procs: dict[str, subprocess.Popen] = {}
        self.ports: dict[str, int] = {}
        self.others: list[subprocess.Popen] = []
        self.clients: list[Client] = []

    def start(self, bid: str, neighbours: tuple[str, ...] = (), port: int = 0) -> None:
        pf = self.tmp / f"{bid}.port"
        pf.unlink(missing_ok=True)
        cmd = [
            sys.executable,
            "-m",
            "pubsift.cli",
            "broker",
            "--config",
            str(self.tmp / "broker.toml"),
        ]
        cmd += ["--id", bid, "--listen", f"127.0.0.1:{port}", "--port-file", str(pf)]
        for n in neighbours:
            cmd += ["--neighbour", f"127.0.0.1:{self.ports[n]}"]
        log = open(self.tmp / f"{bid}.log", "a")  # noqa: SIM115 - closed with the process
        self.procs[bid] = subprocess.Popen(cmd, stdout=log, stderr=log)
        log.close()
        until(
            lambda: pf.exists() or self.procs[bid].poll() is not None, 20, f"broker {bid} to listen"
        )
        assert self.procs[bid].poll() is None, self.log(bid)
        self.ports[bid] = int(pf.read_text())

    def log(self, bid: str) -> str:
        return (self.tmp / f"{bid}.log").read_text()

    def url(self, bid: str) -> str:
        return f"pubsift://127.0.0.1:{self.ports[bid]}"

    def client(self, bid: str, id: str) -> Client:
        c = connect(self.url(bid), id=id)
        self.clients.append(c)
        return c

    def stats(self, bid: str) -> dict:
        c = self.client(bid, f"probe-{bid}-{time.monotonic_ns()}")
        try:
            return c.stats()
        finally:
            c.close()
            self.clients.remove(c)

    def kill(self, bid: str) -> None:
        p = self.procs[bid]
        p.send_signal(signal.SIGKILL)
        p.wait(10)

    def close(self) -> None:
        for c in self.clients:
            c.close()
        for p in [*self.others, *self.procs.values()]:
            if p.poll() is None:
                p.terminate()
        for p in [*self.others, *self.procs.values()]:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)


@pytest.fixture
def net(tmp_path: Path) -> Iterator[Net]:
    n = Net(tmp_path)
    try:
        # b0 is the root; b1 and b2 dial it; b3 dials b1
        n.start("b0")
        n.start("b1", ("b0",))
        n.start("b2", ("b0",))
        n.start("b3", ("b1",))
        until(
            lambda: (
                len(n.stats("b0")["neighbours"]) == 2
                and n.stats("b1")["neighbours"] == ["b0", "b3"]
            ),
            10,
            "the tree",
        )
        yield n
    finally:
        n.close()


def test_exactly_the_matching_publications_arrive_once_each(net: Net):
    models = {m: load_model(m) for m in ("records", "xml")}
    trace: list[TraceOp] = []
    received: list[tuple[str, object]] = []

    def subscriber(bid: str, cid: str, model: str, spec: str) -> None:
        c = net.client(bid, cid)
        c.subscribe(model, spec, lambda n: received.append((cid, n)))
        trace.append(TraceOp(0, "sub", cid, model, models[model].parse_filter(spec)))

    subscriber("b3", "s-cheap", "records", "price < 5")
    subscriber("b3", "s-ibm", "xml", "//quote[@symbol='IBM']")
    subscriber("b2", "s-any", "records", "price >= 0")
    subscriber("b0", "s-sap", "xml", "//quote[@symbol='SAP' and @price > 3]")
    subscriber("b1", "s-none", "records", "price > 1000")
    # and one over the command line, printing JSON lines
    cli = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pubsift.cli",
            "sub",
            net.url("b2"),
            "-m",
            "xml",
            "-f",
            "//quote",
            "--id",
            "s-cli",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    net.others.append(cli)
    trace.append(TraceOp(0, "sub", "s-cli", "xml", models["xml"].parse_filter("//quote")))
    until(lambda: len(net.stats("b2")["clients"]) >= 3, 10, "the command-line subscriber")
    time.sleep(1.0)  # settle: a few hops on loopback
    trace.append(TraceOp(1, "quiet"))
    p1, p2 = net.client("b2", "p-rec"), net.client("b3", "p-xml")
    for i in range(10):
        ev = {"symbol": "IBM", "price": i}
        trace.append(
            TraceOp(
                2,
                "pub",
                "p-rec",
                "records",
                event=models["records"].parse_event(ev),
                pub_id=("p-rec", p1.publish("records", ev)),
            )
        )
        xml = f"<quote symbol='{'IBM' if i % 2 else 'SAP'}' price='{i}'/>"
        trace.append(
            TraceOp(
                2,
                "pub",
                "p-xml",
                "xml",
                event=models["xml"].parse_event(xml),
                pub_id=("p-xml", p2.publish("xml", xml)),
            )
        )
    want = 5 + 5 + 10 + 3  # cheap, IBM quotes, any, SAP above 3 (in-process subscribers)
    until(lambda: len(received) >= want, 10, f"{want} notifications")
    time.sleep(0.5)  # nothing more may come
    cli.send_signal(signal.SIGINT)
    out, err = cli.communicate(timeout=10)
    assert cli.returncode == 0 and "Traceback" not in err, err
    lines = [json.loads(x) for x in out.splitlines()]
    for cid, n in received:
        trace.append(TraceOp(3, "notify", cid, n.model, event=n.event, pub_id=(n.publisher, n.seq)))
    for x in lines:
        ev = models["xml"].load_event(x["event"])
        trace.append(
            TraceOp(3, "notify", "s-cli", "xml", event=ev, pub_id=(x["publisher"], x["seq"]))
        )
    trace.append(TraceOp(4, "quiet"))
    verdict = oracle.check(trace, models)
    assert verdict.ok, str(verdict)
    assert verdict.settled == 20 and verdict.deliveries == want + 10
    orders = [[n.seq for c, n in received if c == cid] for cid in ("s-cheap", "s-any", "s-ibm")]
    orders.append([x["seq"] for x in lines])
    assert all(seqs == sorted(seqs) for seqs in orders), orders  # per publisher, in order


def test_cycles_crashed_clients_and_restarted_brokers(net: Net):
    # a link that closes a cycle is refused, with a clear line in both logs
    net.start("b4", ("b2", "b3"))
    until(lambda: "would close a cycle" in net.log("b4"), 10, "the cycle refusal")
    assert len(net.stats("b4")["neighbours"]) == 1
    # a killed client's subscription expires after π
    sub = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pubsift.cli",
            "sub",
            net.url("b3"),
            "-m",
            "records",
            "-f",
            "price > 7",
            "--id",
            "doomed",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    net.others.append(sub)
    until(lambda: net.stats("b0")["entries"]["records"][1] >= 1, 10, "the subscription to reach b0")
    sub.send_signal(signal.SIGKILL)
    sub.wait(10)
    t = time.monotonic()
    until(
        lambda: net.stats("b3")["entries"]["records"] == [0, 0],
        PI + 2,
        "the lease to run out at b3",
    )
    until(lambda: net.stats("b0")["entries"]["records"] == [0, 0], 2, "the lease to run out at b0")
    assert time.monotonic() - t < PI + 2
    # a broker killed with SIGKILL and restarted on its port rebuilds its table
    got: list[int] = []
    s = net.client("b3", "survivor")
    s.subscribe("records", "price > 7", lambda n: got.append(n.seq))
    p = net.client("b2", "pub")
    until(lambda: net.stats("b1")["entries"]["records"] == [0, 1], 5, "b1's entry")
    net.kill("b1")
    net.start("b1", ("b0",), port=net.ports["b1"])
    until(
        lambda: net.stats("b1")["entries"]["records"] == [0, 1],
        5,
        "b1's table rebuilt from renewals",
    )
    until(lambda: net.stats("b0")["entries"]["records"][1] >= 1, 5, "b0's entry toward b1")
    for i in range(6, 10):
        p.publish("records", {"price": i})
    until(lambda: len(got) == 2, 5, "publications through the restarted broker")
    assert got == [3, 4]
