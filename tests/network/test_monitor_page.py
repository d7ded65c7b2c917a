"""The monitor's status page in a real browser: headless Chromium (Debian's ``chromium``
and ``chromium-driver``) driven by selenium loads ``/`` from two running broker
processes' monitor, and the numbers it shows are those of ``/status``; it loads nothing
from anywhere else, and a screenshot is saved under the test's tmp_path. Skipped, with
the reason, where Chromium, its driver or selenium is absent."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pubsift.adapters.broker.client import connect

CHROMIUM = os.environ.get("PUBSIFT_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("PUBSIFT_CHROMEDRIVER", "/usr/bin/chromedriver")


def _browser_missing() -> str | None:
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.exists(path) or shutil.which(path)):
            return f"{path} is absent (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return None


pytestmark = pytest.mark.skipif(_browser_missing() is not None, reason=str(_browser_missing()))


def wait(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = cond()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


class Broker:
    """``pubsift broker --monitor 127.0.0.1:0`` as a process; its ports from its log."""

    def __init__(self, tmp: Path, bid: str, neighbour: int | None = None) -> None:
        self.log = tmp / f"{bid}.log"
        pf = tmp / f"{bid}.port"
        cmd = [
            sys.executable, "-m", "pubsift.cli", "broker", "--config", str(tmp / "b.toml"),
            "--id", bid, "--listen", "127.0.0.1:0", "--monitor", "127.0.0.1:0",
            "--port-file", str(pf),
        ]  # fmt: skip
        if neighbour is not None:
            cmd += ["--neighbour", f"127.0.0.1:{neighbour}"]
        with open(self.log, "w") as fh:
            self.proc = subprocess.Popen(cmd, stdout=fh, stderr=fh)
        found = wait(
            lambda: (
                self.proc.poll() is not None
                or (
                    pf.exists() and re.search(r"monitor of broker \S+ on (http://\S+)", self.text())
                )
            ),
            30,
            f"broker {bid} to listen",
        )
        assert self.proc.poll() is None, self.text()
        self.monitor: str = found.group(1)
        self.port = int(pf.read_text())

    def text(self) -> str:
        return self.log.read_text()

    def status(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.monitor + "/status", timeout=10) as resp:
            doc: dict[str, Any] = json.loads(resp.read())
            return doc

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def brokers(tmp_path: Path) -> Iterator[tuple[Broker, Broker]]:
    (tmp_path / "b.toml").write_text('[broker]\nmodels = ["records"]\n')
    started: list[Broker] = []
    try:
        started.append(Broker(tmp_path, "page0"))
        started.append(Broker(tmp_path, "page1", neighbour=started[0].port))
        yield started[0], started[1]
    finally:
        for b in reversed(started):
            b.stop()


@pytest.fixture
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1200,1000",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def shown(driver: Any, key: str, within: str = "body") -> str:
    from selenium.webdriver.common.by import By

    text: str = driver.find_element(By.CSS_SELECTOR, f'{within} [data-k="{key}"]').text
    return text


def test_the_status_page_shows_what_status_says(brokers, browser, tmp_path: Path):
    from selenium.webdriver.common.by import By

    b0, b1 = brokers
    wait(lambda: any(n["state"] == "up" for n in b0.status()["neighbours"]), 20, "the link")
    subs = [connect(f"pubsift://127.0.0.1:{b1.port}", id=f"s{i}") for i in range(2)]
    pub = connect(f"pubsift://127.0.0.1:{b0.port}", id="p")
    try:
        got: list[list[Any]] = [[], []]
        subs[0].subscribe("records", "x > 2", got[0].append)
        subs[1].subscribe("records", "x > 5", got[1].append)
        for s in subs:
            s.stats()
        wait(lambda: b0.status()["models"]["records"]["subscriptions"]["remote"] == 1, 20, "b0")
        for x in range(12):
            pub.publish("records", {"x": x})
        pub.stats()
        wait(lambda: [len(g) for g in got] == [9, 6], 20, "the notifications")

        browser.get(b1.monitor + "/")
        wait(lambda: browser.find_element(By.ID, "broker").text == "page1", 20, "the page")
        status = b1.status()
        # the page refreshes every second: wait until it shows the counts of now
        want = str(status["counters"]["notifications_delivered"])
        wait(lambda: shown(browser, "counters.notifications_delivered") == want, 20, "a refresh")
        assert status["counters"]["notifications_delivered"] == 15
        assert shown(browser, "version") == status["version"]
        assert shown(browser, "strategy") == "covering"
        assert shown(browser, "connections.client") == str(status["connections"]["client"])
        assert shown(browser, "connections.broker") == "1"
        row = '#models tr[data-model="records"]'
        table = status["models"]["records"]["subscriptions"]
        assert shown(browser, "subscriptions.local", row) == str(table["local"]) == "2"
        assert shown(browser, "subscriptions.remote", row) == str(table["remote"]) == "0"
        assert shown(browser, "subscriptions.covering_ratio", row) == "0.500"  # 1 of 2 sent
        [n] = status["neighbours"]
        cells = f'#neighbours tr[data-neighbour="{n["id"]}"]'
        assert n["id"] == "page0"
        assert shown(browser, "state", cells) == n["state"] == "up"
        assert shown(browser, "messages_in", cells) == str(n["messages_in"])
        assert shown(browser, "counters.forwards_received") == str(
            status["counters"]["forwards_received"]
        )
        assert status["counters"]["forwards_received"] == 9  # what x > 2 matches
        for window in ("1s", "1m"):
            value = shown(browser, f"rates.{window}.notifications_delivered")
            assert re.fullmatch(r"\d+(\.\d+)?", value), value
        assert float(shown(browser, "rates.1m.notifications_delivered")) > 0
        assert shown(browser, "latency_seconds.count") == "15"
        assert re.fullmatch(r"(\d+h )?\d+m \d+s", shown(browser, "uptime_seconds"))
        # nothing but the monitor itself was asked for
        urls = browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        assert urls and all(u.startswith(b1.monitor + "/") for u in urls), urls
        shot = tmp_path / "status-page.png"
        assert browser.save_screenshot(str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        for c in [*subs, pub]:
            c.close()
