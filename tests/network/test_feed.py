"""``pubsift publish-feed`` (README.md, "Running brokers"): each new item is published once, across runs
(the state file) and polls (items appended to a feed); an ill-formed or unreachable feed is
reported and the others go on; URLs are fetched (a local http.server); item identity;
SIGTERM ends the command cleanly."""

from __future__ import annotations

import asyncio
import functools
import http.server
import json
import logging
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from lxml import etree
from pubsift.adapters.broker import feedpub
from pubsift.adapters.broker.client import AsyncClient, Notification
from pubsift.adapters.broker.config import Address, BrokerConfig
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.feedpub import FeedError, FeedState, item_key

FAST = {"lease_period": 1.5, "lease_refresh": 0.4, "lease_max_delay": 0.1, "models": ("xml",)}


def rss(*items: str, broken: bool = False) -> str:
    body = "".join(f"<item><title>{i}</title><guid>urn:item:{i}</guid></item>" for i in items)
    end = "" if broken else "</channel></rss>"
    return f"<rss version='2.0'><channel><title>t</title>{body}{end}"


async def until(cond: Callable[[], bool], timeout: float = 5.0) -> None:
    async def poll() -> None:
        while not cond():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)


def with_broker(body: Callable[[str, list[Notification]], Awaitable[None]]) -> None:
    """A broker and a subscriber to every RSS item; ``body(url, received)``."""

    async def go() -> None:
        d = BrokerDaemon(BrokerConfig(id="b0", listen=Address("127.0.0.1", 0), **FAST))
        await d.start()
        url = f"pubsift://127.0.0.1:{d.address.port}"
        got: list[Notification] = []
        sub = AsyncClient(url, id="reader")
        try:
            await sub.connect()
            await sub.subscribe("xml", "/rss/channel/item", got.append)
            await until(lambda: sum(d.stats()["entries"]["xml"]) == 1)
            await asyncio.wait_for(body(url, got), 30)
        finally:
            await sub.close()
            await d.stop()

    asyncio.run(go())


def titles(got: list[Notification]) -> list[str]:
    return [etree.fromstring(n.wire["xml"]).findtext(".//item/title") for n in got]


async def once(url: str, feeds: list[str], state: Path | None) -> feedpub.Counts:
    return await feedpub.run(url, feeds, str(state) if state else None, 1.0, True, asyncio.Event())


def test_each_item_is_published_once_across_two_runs(tmp_path: Path):
    feed = tmp_path / "news.xml"
    feed.write_text(rss("a", "b", "c"))
    state = tmp_path / "state.json"

    async def body(url: str, got: list[Notification]) -> None:
        first = await once(url, [str(feed)], state)
        assert first.published == 3
        await until(lambda: len(got) == 3)
        assert titles(got) == ["a", "b", "c"]
        second = await once(url, [str(feed)], state)
        assert second.published == 0
        await asyncio.sleep(0.3)
        assert len(got) == 3
        saved = json.loads(state.read_text())
        assert saved == {
            "version": 1,
            "feeds": {str(feed): ["guid:urn:item:a", "guid:urn:item:b", "guid:urn:item:c"]},
        }
        # without the state file, a run publishes everything again
        assert (await once(url, [str(feed)], None)).published == 3

    with_broker(body)


def test_new_items_appended_to_a_feed_are_published_on_the_next_poll(tmp_path: Path):
    feed = tmp_path / "news.xml"
    feed.write_text(rss("a", "b"))

    async def body(url: str, got: list[Notification]) -> None:
        stop = asyncio.Event()
        task = asyncio.ensure_future(feedpub.run(url, [str(feed)], None, 0.1, False, stop))
        await until(lambda: len(got) == 2)
        feed.write_text(rss("c", "a", "b"))  # a new item on top, as feeds do
        await until(lambda: len(got) == 3)
        await asyncio.sleep(0.4)  # a few more polls: nothing again
        stop.set()
        counts = await asyncio.wait_for(task, 5)
        assert counts.published == 3
        assert titles(got) == ["a", "b", "c"]

    with_broker(body)


def test_ill_formed_and_missing_feeds_are_reported_and_the_others_go_on(tmp_path, caplog):
    good = tmp_path / "good.xml"
    good.write_text(rss("g1", "g2"))
    bad = tmp_path / "bad.xml"
    bad.write_text("<rss><channel><item><title>x</titl></item>")
    broken_end = tmp_path / "broken.xml"
    broken_end.write_text(rss("ok", broken=True) + "<item><title>lost")
    feeds = [str(bad), str(tmp_path / "missing.xml"), str(broken_end), str(good)]
    caplog.set_level(logging.INFO, "pubsift.feed")

    async def body(url: str, got: list[Notification]) -> None:
        counts = await once(url, feeds, tmp_path / "state.json")
        await until(lambda: len(got) == 3)
        assert sorted(titles(got)) == ["g1", "g2", "ok"]
        assert counts.published == 3 and counts.quarantined >= 3

    with_broker(body)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(m.startswith(f"{bad}#") and "(xml-syntax)" in m for m in warnings), warnings
    assert any(m.startswith(f"{tmp_path / 'missing.xml'}#0") for m in warnings), warnings
    assert any(m.startswith(f"{broken_end}#2: not published (xml-syntax)") for m in warnings)


@pytest.fixture
def http_dir(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A local http.server on 127.0.0.1 serving ``tmp_path/www``."""
    www = tmp_path / "www"
    www.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(www))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", www
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_urls_are_fetched_and_an_http_error_is_one_failed_feed(http_dir, tmp_path, caplog):
    base, www = http_dir
    (www / "feed.rss").write_text(rss("u1", "u2"))
    caplog.set_level(logging.INFO, "pubsift.feed")

    async def body(url: str, got: list[Notification]) -> None:
        feeds = [f"{base}/gone.rss", f"{base}/feed.rss"]
        counts = await once(url, feeds, tmp_path / "state.json")
        assert counts.published == 2 and counts.failed_feeds == 1
        await until(lambda: len(got) == 2)
        assert titles(got) == ["u1", "u2"]
        assert (await once(url, feeds, tmp_path / "state.json")).published == 0

    with_broker(body)
    assert any(f"{base}/gone.rss: not read: " in r.getMessage() and "404" in r.getMessage()
               for r in caplog.records)  # fmt: skip


def test_fetch_refuses_a_body_above_the_limit(http_dir):
    base, www = http_dir
    (www / "big.xml").write_text("<rss>" + "x" * 5000 + "</rss>")
    with pytest.raises(FeedError, match="above the 1000-byte limit"):
        asyncio.run(feedpub.fetch(f"{base}/big.xml", limit=1000))


@pytest.mark.parametrize(
    ("xml", "key"),
    [
        ("<rss><channel><item><link>L</link><guid>G</guid></item></channel></rss>", "guid:G"),
        (
            "<feed xmlns='http://www.w3.org/2005/Atom'><entry><link rel='enclosure' href='E'/>"
            "<link href='A'/><id>tag:1</id></entry></feed>",
            "id:tag:1",
        ),
        (
            "<feed xmlns='http://www.w3.org/2005/Atom'><entry><link rel='enclosure' href='E'/>"
            "<link href='A'/></entry></feed>",
            "link:A",
        ),
        (
            "<r:RDF xmlns:r='http://www.w3.org/1999/02/22-rdf-syntax-ns#' "
            "xmlns='http://purl.org/rss/1.0/'><item r:about='http://x/1'><link>L</link></item>"
            "</r:RDF>",
            "about:http://x/1",
        ),
        ("<rss><channel><item><link> L </link></item></channel></rss>", "link:L"),
    ],
)
def test_item_identity(xml: str, key: str):
    assert item_key(etree.fromstring(xml)) == key


def test_items_without_identity_are_told_apart_by_a_hash_of_their_xml():
    one = item_key(etree.fromstring("<rss><channel><item><title>a</title></item></channel></rss>"))
    two = item_key(etree.fromstring("<rss><channel><item><title>b</title></item></channel></rss>"))
    same = item_key(etree.fromstring("<rss><channel><item><title>a</title></item></channel></rss>"))
    assert one.startswith("sha256:") and one != two and one == same


def test_the_state_is_bounded_per_feed_and_refuses_a_foreign_file(tmp_path: Path):
    path = tmp_path / "s.json"
    st = FeedState.load(str(path), bound=3)
    for k in "abcd":
        st.remember("f", k)
    st.remember("f", "b")  # seen again: the newest
    st.remember("g", "z")
    st.save()
    again = FeedState.load(str(path), bound=3)
    assert list(again.feeds["f"]) == ["c", "d", "b"] and list(again.feeds["g"]) == ["z"]
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]  # no temporary file left
    path.write_text('{"feeds": []}')
    with pytest.raises(FeedError, match="not a publish-feed state"):
        FeedState.load(str(path))
    path.write_text("{")
    with pytest.raises(FeedError, match="cannot be read"):
        FeedState.load(str(path))


def test_a_state_file_that_could_not_be_saved_is_refused_before_publishing(tmp_path: Path):
    """Found only at the first save, after publishing, it would make the next run publish
    every item again."""
    with pytest.raises(FeedError, match=r"state file .*/nowhere/s\.json: cannot be written in"):
        FeedState.load(str(tmp_path / "nowhere" / "s.json"))
    assert [p.name for p in tmp_path.iterdir()] == []


@pytest.mark.slow
def test_the_command_polls_until_sigterm_and_exits_cleanly(tmp_path: Path):
    feed = tmp_path / "news.xml"
    feed.write_text(rss("a", "b"))
    pf = tmp_path / "port"
    (tmp_path / "broker.toml").write_text('[broker]\nmodels = ["xml"]\n')
    cli = [sys.executable, "-m", "pubsift.cli"]
    broker = subprocess.Popen(
        [*cli, "broker", "--config", str(tmp_path / "broker.toml")]
        + ["--listen", "127.0.0.1:0", "--port-file", str(pf)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    procs = [broker]
    try:
        end = time.monotonic() + 20
        while not pf.exists():
            assert time.monotonic() < end and broker.poll() is None, "the broker did not start"
            time.sleep(0.05)
        url = f"pubsift://127.0.0.1:{int(pf.read_text())}"
        state = tmp_path / "state.json"
        pub = subprocess.Popen(
            [*cli, "publish-feed", url, str(feed), "--interval", "0.2", "--state", str(state)],
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(pub)
        end = time.monotonic() + 20
        while not state.exists():
            assert time.monotonic() < end and pub.poll() is None, "nothing was published"
            time.sleep(0.05)
        pub.send_signal(signal.SIGTERM)
        _, err = pub.communicate(timeout=10)
        assert pub.returncode == 0, err
        assert err.count(": published as feed-") == 2
        assert "2 published, 0 quarantined" in err
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(10)
