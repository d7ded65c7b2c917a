"""``pubsift publish-feed URL FEED...``: poll RSS, RDF and Atom feeds (files,
directories or archives of them, or http(s) URLs) and publish each new item once, as an
``xml`` event of the feed with the other items removed.

Reading is the adapters' (:func:`pubsift.adapters.read`, :func:`~pubsift.adapters.read_input`
for fetched bytes): the xml model's hardened parser, one event per item, and every item
that cannot be read a :class:`~pubsift.adapters.Quarantined` record, reported on standard
error and never published. A feed that cannot be fetched or read is reported and the
others go on.

**Item identity**: the item's ``guid``, else its ``id``, else its ``rdf:about``, else its
``link`` (text or ``href``), else a hash of the item's canonical XML; scoped by the feed
(the input an item comes from). What was published is remembered in a **state file**
(JSON, written atomically after each poll, at most :data:`REMEMBERED` keys per feed: the
ones seen most recently, so a feed with fewer items than that never has one published
twice). Items are published only while the broker is connected; the others wait for the
next poll. An item whose frame the broker would refuse (above its ``max_frame_bytes``) is
reported and remembered, not published.

**Exit status** of ``--once``: 0 when every item was published or had been before, 1 when
an item was quarantined or too large, or a feed could not be fetched or read (each
reported on standard error); without ``--once`` the command runs until SIGTERM or Ctrl-C
and exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import logging
import os
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lxml import etree
from pubsift.adapters.broker.client import AsyncClient
from pubsift.adapters.broker.frames import encode
from pubsift.adapters.readers.archives import archive_kind
from pubsift.adapters.readers.dispatch import read, read_input
from pubsift.adapters.readers.inputs import Input
from pubsift.adapters.readers.limits import DEFAULT_READ_LIMITS
from pubsift.adapters.readers.outcomes import Event, Quarantined
from pubsift.adapters.readers.source import Source
from pubsift.core.errors import PubsiftError, one_line

log = logging.getLogger("pubsift.feed")

#: keys remembered per feed in the state file
REMEMBERED = 2000
#: seconds to fetch one URL
FETCH_TIMEOUT = 20.0
#: the most bytes fetched from one URL (what the xml reader holds in memory)
MAX_FEED_BYTES = DEFAULT_READ_LIMITS.stream_above
STATE_VERSION = 1
_ITEMS = frozenset({"item", "entry"})
_RDF_ABOUT = "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}about"


class FeedError(PubsiftError):
    """A feed that cannot be fetched, or a state file that cannot be used."""


def is_url(feed: str) -> bool:
    return feed.startswith(("http://", "https://"))


def _local(tag: Any) -> str:
    return etree.QName(tag).localname if isinstance(tag, str) else ""


def item_key(root: etree._Element) -> str:
    """The identity of the one item or entry in a feed event (its root ``root``): guid,
    id, rdf:about or link, else ``sha256:`` of the item's canonical XML (of the whole
    event when it holds no item element)."""
    item = next((e for e in root.iter() if _local(e.tag) in _ITEMS), root)
    children: dict[str, etree._Element] = {}
    for child in item:
        children.setdefault(_local(child.tag), child)
    for name in ("guid", "id"):
        el = children.get(name)
        text = (el.text or "").strip() if el is not None else ""
        if text:
            return f"{name}:{text}"
    about = item.get(_RDF_ABOUT)
    if about:
        return f"about:{about}"
    links = [c for c in item if _local(c.tag) == "link"]
    for el in links:
        href = el.get("href")
        if href and el.get("rel", "alternate") == "alternate":
            return f"link:{href}"
        text = (el.text or "").strip()
        if text:
            return f"link:{text}"
    digest = hashlib.sha256(etree.tostring(item, method="c14n")).hexdigest()
    return f"sha256:{digest[:32]}"


@dataclass
class FeedState:
    """What was published, per feed: keys in the order last seen (oldest first)."""

    path: str | None = None
    bound: int = REMEMBERED
    feeds: dict[str, dict[str, None]] = field(default_factory=dict)
    dirty: bool = False

    @classmethod
    def load(cls, path: str | None, bound: int = REMEMBERED) -> FeedState:
        """The state in ``path`` (a missing file is an empty state); FeedError when the
        file is not a state file."""
        state = cls(path, bound)
        if path is not None:
            state._check_writable()
        if path is None or not os.path.exists(path):
            return state
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError) as exc:
            raise FeedError(f"state file {path}: cannot be read: {one_line(exc)}") from None
        feeds = data.get("feeds") if isinstance(data, dict) else None
        if (
            not isinstance(data, dict)
            or data.get("version") != STATE_VERSION
            or not isinstance(feeds, dict)
            or not all(
                isinstance(v, list) and all(isinstance(k, str) for k in v) for v in feeds.values()
            )
        ):
            raise FeedError(
                f"state file {path}: not a publish-feed state (version {STATE_VERSION}: "
                '{"version": 1, "feeds": {feed: [item keys]}}); move it away to start afresh'
            )
        state.feeds = {f: dict.fromkeys(keys) for f, keys in feeds.items()}
        return state

    def seen(self, feed: str, key: str) -> bool:
        return key in self.feeds.get(feed, {})

    def remember(self, feed: str, key: str) -> None:
        """``key`` was seen now (published, or present again): it becomes the newest;
        the oldest keys beyond the bound are forgotten."""
        keys = self.feeds.setdefault(feed, {})
        if keys.pop(key, 0) == 0:  # new: the state changed (a reordering waits for one)
            self.dirty = True
        keys[key] = None
        while len(keys) > self.bound:
            del keys[next(iter(keys))]

    def _check_writable(self) -> None:
        """FeedError now if the state could not be saved later (a missing or read-only
        folder): found only after publishing, every item would be published again on
        the next run."""
        assert self.path is not None
        folder = os.path.dirname(os.path.abspath(self.path))
        try:
            fd, tmp = tempfile.mkstemp(prefix=".publish-feed-", dir=folder)
            os.close(fd)
            os.unlink(tmp)
        except OSError as exc:
            raise FeedError(
                f"state file {self.path}: cannot be written in {folder}: "
                f"{(exc.strerror or str(exc)).lower()}"
            ) from None

    def save(self) -> None:
        """Write the state atomically (a temporary file renamed over the old one)."""
        if self.path is None or not self.dirty:
            return
        data = {"version": STATE_VERSION, "feeds": {f: list(k) for f, k in self.feeds.items()}}
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(prefix=".publish-feed-", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, ensure_ascii=False, indent=0)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self.dirty = False


async def fetch(url: str, timeout: float = FETCH_TIMEOUT, limit: int = MAX_FEED_BYTES) -> bytes:
    """The body of ``url`` (http or https), at most ``limit`` bytes; FeedError otherwise."""
    import aiohttp

    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as http,
            http.get(url, max_redirects=5) as resp,
        ):
            if resp.status != 200:
                raise FeedError(f"{url}: HTTP {resp.status} {resp.reason or ''}".rstrip())
            declared = resp.content_length
            if declared is not None and declared > limit:
                raise FeedError(f"{url}: {declared} bytes, above the {limit}-byte limit")
            body = await resp.content.read(limit + 1)
            if len(body) > limit:
                raise FeedError(f"{url}: more than {limit} bytes")
            return body
    except TimeoutError:
        raise FeedError(f"{url}: no complete answer within {timeout:g} s") from None
    except aiohttp.ClientError as exc:
        raise FeedError(f"{url}: {type(exc).__name__}: {one_line(exc)}") from None


def items_of(feed: str, body: bytes | None = None) -> Iterator[Event | Quarantined]:
    """The events and quarantine records of one feed: a local path read through the
    adapters (a file, directory or archive), or the fetched ``body`` of a URL."""
    if body is None:
        return read(Source(feed, model="xml"))
    src = Source(feed, format="xml", model="xml")
    return read_input(Input(feed, src, lambda: io.BytesIO(body), len(body)))


@dataclass
class Counts:
    published: int = 0
    quarantined: int = 0
    too_large: int = 0
    failed_feeds: int = 0
    #: passes over the feeds (with on_demand: only while a subscription wants them)
    polls: int = 0

    @property
    def problems(self) -> int:
        return self.quarantined + self.too_large + self.failed_feeds


class FeedPublisher:
    """Polls ``feeds`` and publishes their new items through ``client``."""

    def __init__(self, client: AsyncClient, feeds: Sequence[str], state: FeedState) -> None:
        self.client = client
        self.feeds = list(feeds)
        self.state = state
        self.counts = Counts()

    async def poll(self) -> None:
        """One pass over every feed; the state is saved after each feed."""
        for feed in self.feeds:
            try:
                body = await fetch(feed) if is_url(feed) else None
                got = list(items_of(feed, body))
            except PubsiftError as exc:
                self.counts.failed_feeds += 1
                log.warning("%s: not read: %s", feed, one_line(exc))
                continue
            for item in got:
                if isinstance(item, Quarantined):
                    self.counts.quarantined += 1
                    log.warning("%s: not published (%s): %s", item.id, item.reason, item.message)
                else:
                    await self._publish(item)
                await asyncio.sleep(0)
            self.state.save()

    async def _publish(self, ev: Event) -> None:
        key = item_key(ev.event.root)
        if self.state.seen(ev.source, key):
            self.state.remember(ev.source, key)  # still in the feed: keep it remembered
            return
        if not self.client.connected:
            log.info("%s: broker not connected; the item waits for the next poll", ev.id)
            return
        frame = {
            "kind": "pub",
            "client": self.client.id,
            "model": "xml",
            "event": self.client.model("xml").dump_event(ev.event),
            "pub_id": [self.client.id, 1 << 62],
        }
        size = len(encode(frame)) - 4
        if size > self.client.broker_max_frame_bytes:
            self.counts.too_large += 1
            log.warning(
                "%s: not published (too-large): its frame has %d bytes, the broker takes %d",
                ev.id,
                size,
                self.client.broker_max_frame_bytes,
            )
        else:
            seq = await self.client.publish("xml", ev.event)
            self.counts.published += 1
            log.info("%s: published as %s:%d (%s)", ev.id, self.client.id, seq, key)
        self.state.remember(ev.source, key)


def described(feeds: Sequence[str]) -> str:
    """What the command line names, counted by kind: ``3 files, 1 directory, 2 URLs`` (a
    directory or an archive holds any number of feeds, read anew at each poll)."""
    kinds: dict[str, int] = {}
    for feed in feeds:
        if is_url(feed):
            kind = "URL"
        elif os.path.isdir(feed):
            kind = "directory"
        elif archive_kind(feed) is not None:
            kind = "archive"
        else:
            kind = "file"
        kinds[kind] = kinds.get(kind, 0) + 1
    plural = {"URL": "URLs", "directory": "directories", "archive": "archives", "file": "files"}
    return ", ".join(f"{n} {kind if n == 1 else plural[kind]}" for kind, n in kinds.items())


async def run(
    url: str,
    feeds: Sequence[str],
    state_path: str | None,
    interval: float,
    once: bool,
    stop: asyncio.Event,
    on_demand: str | None = None,
    **client_options: Any,
) -> Counts:
    """Connect to the broker at ``url``, poll ``feeds`` every ``interval`` seconds (once
    with ``once``) until ``stop`` is set, close cleanly; the counts of what was done.
    ``on_demand`` (an xml filter): poll only while some subscription overlaps it (a
    :class:`~pubsift.adapters.broker.factory.Factory`, Mühl §5.2.4).
    ``client_options`` go to :class:`AsyncClient` (``token``, ``ca``, ``cert``, ``key``)."""
    from pubsift.adapters.broker.factory import Factory
    from pubsift.adapters.broker.replay import SUBSCRIPTIONS, subscription_events

    state = FeedState.load(state_path)
    client = AsyncClient(
        url,
        id=f"feed-{uuid.uuid4().hex[:12]}",
        models={SUBSCRIPTIONS: subscription_events()},
        **client_options,
    )
    await client.connect()
    log.info(
        "publishing the feeds of %s to %s as %s", described(feeds), client.broker_id, client.id
    )
    pub = FeedPublisher(client, feeds, state)
    wanted = asyncio.Event()
    factory = None
    if on_demand is not None:
        factory = Factory(
            client, "xml", client.parse_filter("xml", on_demand), wanted.set, wanted.clear
        )
        await factory.open()
        log.info("polling only while a subscription overlaps %s", on_demand)
    try:
        while not stop.is_set():
            if factory is not None and not factory.running:
                asleep = asyncio.ensure_future(stop.wait())
                woken = asyncio.ensure_future(wanted.wait())
                await asyncio.wait({asleep, woken}, return_when=asyncio.FIRST_COMPLETED)
                asleep.cancel()
                woken.cancel()
                continue
            pub.counts.polls += 1
            await pub.poll()
            if once:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), interval)
    finally:
        state.save()
        await client.close()
    c = pub.counts
    log.info(
        "%d published, %d quarantined, %d too large, %d feed read(s) failed",
        c.published,
        c.quarantined,
        c.too_large,
        c.failed_feeds,
    )
    return c
