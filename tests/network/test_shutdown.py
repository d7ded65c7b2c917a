"""SIGTERM to a ``pubsift broker`` with a socket client, a neighbour link and an SSE stream
open: exit 0 within a second or two, one log line when the shutdown starts
and one when it is done (none per connection), the SSE stream told ``shutdown``."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from pubsift.adapters.broker.client import connect

CMD = [sys.executable, "-m", "pubsift.cli", "broker"]


def _start(tmp: Path, name: str, *extra: str) -> tuple[subprocess.Popen, int, Path]:
    pf, log = tmp / f"{name}.port", tmp / f"{name}.log"
    with open(log, "w") as fh:
        p = subprocess.Popen(
            [*CMD, "--id", name, "--listen", "127.0.0.1:0", "--port-file", str(pf), *extra],
            stdout=fh,
            stderr=fh,
        )
    end = time.monotonic() + 30
    while not pf.exists():
        assert p.poll() is None and time.monotonic() < end, log.read_text()
        time.sleep(0.05)
    return p, int(pf.read_text()), log


def test_sigterm_with_clients_links_and_an_sse_stream_exits_0_promptly(tmp_path: Path):
    procs = []
    client = None
    try:
        b0, port, log = _start(tmp_path, "b0", "--gateway", "127.0.0.1:0")
        procs.append(b0)
        b1, _, _ = _start(tmp_path, "b1", "--neighbour", f"127.0.0.1:{port}")
        procs.append(b1)
        end = time.monotonic() + 20
        while not (m := re.search(r"listening on (http://\S+)", log.read_text())):
            assert time.monotonic() < end, log.read_text()
            time.sleep(0.05)
        client = connect(f"pubsift://127.0.0.1:{port}", id="c1")
        client.subscribe("records", "price > 1", print)
        sse = urllib.request.urlopen(f"{m.group(1)}/subscribe/records?filter=price%20%3E%201")
        assert sse.readline().startswith(b": subscribed as")
        while "link b0 - b1 up" not in log.read_text() or "c1 connected" not in log.read_text():
            assert time.monotonic() < end, log.read_text()
            time.sleep(0.05)

        t0 = time.monotonic()
        b0.send_signal(signal.SIGTERM)
        assert b0.wait(10) == 0
        took = time.monotonic() - t0
        rest = sse.read().decode()
        assert 'event: error\ndata: {"error": "shutdown"' in rest
        text = log.read_text()
        after = text[text.rindex("\n", 0, text.index("shutting down")) + 1 :].splitlines()
        pubsift_lines = [ln for ln in after if "pubsift.broker" in ln]
        assert len(pubsift_lines) == 2, after
        assert (
            "broker b0 shutting down (SIGTERM): closing 1 client(s), 1 link(s), 1 HTTP"
            in (pubsift_lines[0])
        )
        assert pubsift_lines[1].endswith("broker b0 stopped")
        assert "Traceback" not in text
        assert took < 5, took
    finally:
        if client is not None:
            client.close()
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(10)
