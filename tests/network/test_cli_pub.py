"""``pubsift pub`` reading a pipe that writes slowly (``tail -f log | pubsift pub ...``):
each line is published as it comes, not when standard input ends."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from pubsift.adapters.broker.client import connect

CLI = [sys.executable, "-m", "pubsift.cli"]


def test_pub_sends_each_stdin_line_as_it_comes(tmp_path: Path):
    pf, log = tmp_path / "port", tmp_path / "broker.log"
    with open(log, "w") as fh:
        broker = subprocess.Popen(
            [*CLI, "broker", "--listen", "127.0.0.1:0", "--port-file", str(pf)],
            stdout=fh,
            stderr=fh,
        )
    pub = sub = None
    try:
        end = time.monotonic() + 30
        while not pf.exists():
            assert broker.poll() is None and time.monotonic() < end, log.read_text()
            time.sleep(0.05)
        url = f"pubsift://127.0.0.1:{int(pf.read_text())}"
        got: list[int] = []
        sub = connect(url)
        sub.subscribe("records", "price > 0", lambda n: got.append(n.event["price"]))
        pub = subprocess.Popen(
            [*CLI, "pub", url, "-m", "records"],
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert pub.stdin is not None
        for price in (1, 2):
            pub.stdin.write(f'{{"price": {price}}}\n')
            pub.stdin.flush()
            end = time.monotonic() + 15
            while len(got) < price:
                assert time.monotonic() < end, f"line {price} not published while stdin is open"
                time.sleep(0.05)
        pub.stdin.write('\xff{"price": 3}\n{"price": 4}')  # a bad line, a last one without \n
        pub.stdin.close()
        assert pub.wait(30) == 1
        assert pub.stderr is not None
        err = pub.stderr.read()
        assert "<stdin>:3: not sent" in err and "3 published, 1 not sent" in err, err
        end = time.monotonic() + 10
        while got != [1, 2, 4]:
            assert time.monotonic() < end, got
            time.sleep(0.05)
    finally:
        if sub is not None:
            sub.close()
        for p in (pub, broker):
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(10)
