"""Histories and replay (Mühl 2002, §5.2.3, §5.3.4): the store, replay descriptions, the
merge of replayed and held notifications, and late subscribers on a chain of in-process
brokers checked against the delivery oracle (exactly the matching publications, each
once, per publisher in order)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pubsift.adapters.broker.client import AsyncClient, Notification
from pubsift.adapters.broker.config import Address, BrokerConfig, ConfigError, from_mapping
from pubsift.adapters.broker.daemon import BrokerDaemon
from pubsift.adapters.broker.frames import encode, hello, read_frame
from pubsift.adapters.broker.history import History
from pubsift.adapters.broker.history_config import HistoryConfig, read_history
from pubsift.adapters.broker.history_store import HistoryError, HistoryStore, Retention
from pubsift.adapters.broker.replay import (
    SUBSCRIPTIONS,
    Notified,
    Replay,
    ReplayError,
    merge,
    parse,
    parse_text,
    replay_frames,
)

from tests.network.test_inprocess import FAST, until, url

# -- the store --------------------------------------------------------------------------


def test_store_drops_duplicates_and_keeps_what_it_recorded(tmp_path: Path) -> None:
    path = str(tmp_path / "h.sqlite")
    s = HistoryStore(path)
    assert s.record("p", 1, "records", b'{"a":1}', 10.0)
    assert not s.record("p", 1, "records", b'{"a":2}', 11.0)  # the same pub_id
    assert s.record("q", 1, "records", b'{"a":3}', 12.0)
    s.commit()
    s.close()
    again = HistoryStore(path)
    assert [r[:2] for r in again.rows()] == [("p", 1), ("q", 1)]
    assert again.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    again.close()


def test_retention_by_age_count_and_bytes(tmp_path: Path) -> None:
    s = HistoryStore(str(tmp_path / "a.sqlite"), Retention(max_age=10.0))
    for i in range(1, 21):
        s.record("p", i, "records", b"{}", float(i))
    assert s.prune(now=25.0) == 14  # time < 15 goes
    assert [r[1] for r in s.rows()] == list(range(15, 21))
    s = HistoryStore(str(tmp_path / "c.sqlite"), Retention(max_count=5))
    for i in range(1, 21):
        s.record("p", i, "records", b"{}", 0.0)
    s.prune()
    assert [r[1] for r in s.rows()] == list(range(16, 21))
    s = HistoryStore(str(tmp_path / "b.sqlite"), Retention(max_bytes=25))
    for i in range(1, 11):
        s.record("p", i, "records", b'{"x":10}', 0.0)  # 8 bytes each
    s.prune()
    assert [r[1] for r in s.rows()] == [8, 9, 10]
    assert s.size() == 24


def test_a_corrupt_store_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(HistoryError, match=r"bad\.sqlite"):
        HistoryStore(str(bad))


def test_select_last_since_and_max_replay(tmp_path: Path) -> None:
    s = HistoryStore(str(tmp_path / "s.sqlite"))
    for i in range(1, 11):
        s.record("p" if i % 2 else "q", i, "records", b'{"n":%d}' % i, float(i))

    def every(e: bytes) -> bool:
        return True

    assert [r[1] for r in s.select("records", Replay(last=3), every)] == [8, 9, 10]
    assert [r[1] for r in s.select("records", Replay(since_time=7.0), every)] == [7, 8, 9, 10]
    got = s.select("records", Replay(since={"p": 5}, since_time=9.0), every)
    assert [r[:2] for r in got] == [("p", 7), ("p", 9), ("q", 10)]
    assert s.select("xml", Replay(last=3), every) == []
    after = s.select("records", Replay(after=("q", 6)), every)
    assert [r[:2] for r in after] == [("p", 7), ("q", 8), ("p", 9), ("q", 10)]
    pruned = s.select("records", Replay(after=("p", 4)), every)  # not stored: since p 4
    assert [r[:2] for r in pruned] == [
        ("q", 2),
        ("q", 4),
        ("p", 5),
        ("q", 6),
        ("p", 7),
        ("q", 8),
        ("p", 9),
        ("q", 10),
    ]
    with pytest.raises(ReplayError, match="max_replay = 3"):
        s.select("records", Replay(since_time=0.0), every, max_replay=3)
    with pytest.raises(ReplayError, match="max_replay = 2"):
        s.select("records", Replay(last=3), every, max_replay=2)


# -- replay descriptions ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "why"),
    [
        ([1], "expected an object"),
        ({}, "give last"),
        ({"last": 0}, "integer ≥ 1"),
        ({"last": True}, "integer ≥ 1"),
        ({"last": 10**9}, "max_replay"),
        ({"last": 3, "since_time": 1}, "alone"),
        ({"since_time": float("nan")}, "Unix seconds"),
        ({"since_time": "yesterday"}, "Unix seconds"),
        ({"since": [1]}, "since must be an object"),
        ({"since": {"p": -1}}, "sequence number"),
        ({"since": {"p": 1.5}}, "sequence number"),
        ({"from": 1}, "unknown member"),
        ({"after": ["p"]}, "after must be"),
        ({"after": ["p", 1], "last": 2}, "alone"),
    ],
)
def test_malformed_descriptions_are_refused(obj: Any, why: str) -> None:
    with pytest.raises(ReplayError, match=why):
        parse(obj)


def test_text_forms() -> None:
    assert parse_text("last 10") == Replay(last=10)
    assert parse_text("since 2026-12-02T10:00:00Z") == Replay(since_time=1796205600.0)
    assert parse_text("since 12.5") == Replay(since_time=12.5)
    for bad in ("last", "last x", "since 2026-12-02T10:00:00", "first 3"):
        with pytest.raises(ReplayError):
            parse_text(bad)


def test_replay_frames_split_and_end(tmp_path: Path) -> None:
    rows = [("p", i, b'{"n":%d}' % i) for i in range(1, 101)]
    head = {"kind": "replay", "broker": "b", "client": "c", "ref": 1, "model": "records"}
    frames = replay_frames(head, rows, frame_bytes=200)
    assert len(frames) > 5
    objs = [read_frame_bytes(f) for f in frames]
    assert [o.get("end") for o in objs] == [None] * (len(objs) - 1) + [True]
    assert objs[-1]["count"] == 100
    assert [p[0][1] for o in objs for p in o["pubs"]] == list(range(1, 101))


def read_frame_bytes(data: bytes) -> dict[str, Any]:
    import json

    return dict(json.loads(data[4:]))


# -- the merge of replayed and held notifications (against the oracle) ------------------

pub_ids = st.lists(st.tuples(st.sampled_from("pqr"), st.integers(1, 12)), max_size=30)


@given(pub_ids, pub_ids)
@settings(max_examples=200)
def test_merge_delivers_each_once_in_order_per_publisher(
    replayed: list[tuple[str, int]], held: list[tuple[str, int]]
) -> None:
    held = sorted(set(held), key=lambda x: x[1])  # live: in order, once each
    out = merge(
        [Notified(p, s, (p, s)) for p, s in replayed], [Notified(p, s, (p, s)) for p, s in held]
    )
    assert sorted(out) == sorted(set(replayed) | set(held))  # exactly the union, once each
    for p in "pqr":
        mine = [s for q, s in out if q == p]
        assert mine == sorted(mine)


# -- a late subscriber on a chain, a history on the publisher's broker ------------------


def _chain_config(i: int, neighbours: tuple[Address, ...], store: Path | None) -> BrokerConfig:
    histories = (HistoryConfig("records", "true", str(store), id=f"h{i}"),) if store else ()
    return BrokerConfig(
        id=f"b{i}",
        listen=Address("127.0.0.1", 0),
        neighbours=neighbours,
        histories=histories,
        **FAST,
    )


async def _chain(tmp_path: Path) -> list[BrokerDaemon]:
    daemons: list[BrokerDaemon] = []
    for i in range(3):
        nb = (daemons[-1].address,) if daemons else ()
        d = BrokerDaemon(_chain_config(i, nb, tmp_path / "h0.sqlite" if i == 0 else None))
        await d.start()
        daemons.append(d)
    await until(lambda: "b2" in daemons[0].reach.without(None))
    await until(lambda: daemons[2].broker is not None and "b0" in daemons[2].reach.without(None))
    return daemons


def _run(tmp_path: Path, body: Any) -> None:
    async def go() -> None:
        ds = await _chain(tmp_path)
        try:
            await asyncio.wait_for(body(ds), 40)
        finally:
            for d in ds:
                await d.stop()

    asyncio.run(go())


def _check(got: list[Notification], expected: list[int], publisher: str) -> None:
    seqs = [n.seq for n in got if n.publisher == publisher]
    assert len(seqs) == len(set(seqs)), "a duplicate"
    assert seqs == sorted(seqs), "out of order"
    assert seqs == expected, f"missing {sorted(set(expected) - set(seqs))[:10]}"


def test_late_subscriber_gets_the_last_ten_then_live(tmp_path: Path) -> None:
    async def body(ds: list[BrokerDaemon]) -> None:
        history = ds[0].replays.histories[0]
        pub = AsyncClient(url(ds[0]), id="quotes")
        await pub.connect()
        await until(lambda: ds[0].broker is not None and ds[0].broker.sizes()[0] >= 1)
        for i in range(1, 31):
            await pub.publish("records", {"symbol": "IBM" if i % 2 else "HP", "price": i})
        await until(lambda: history.recorded == 30)
        got: list[Notification] = []
        late = AsyncClient(url(ds[2]), id="late")
        await late.connect()
        await late.subscribe("records", 'symbol = "IBM"', got.append, replay="last 10")
        await until(lambda: late.replays == 1)
        assert [n.wire["price"] for n in got] == list(range(11, 31, 2))
        await pub.publish("records", {"symbol": "IBM", "price": 31})
        await until(lambda: len(got) == 11)
        _check(got, list(range(11, 32, 2)), "quotes")
        await late.close()
        await pub.close()

    _run(tmp_path, body)


def test_the_switch_to_live_has_no_gap_and_no_duplicate(tmp_path: Path) -> None:
    """Publications go on while subscribers at the far end subscribe with ``since``
    time 0: each gets every matching publication from the first on, once, in order."""

    async def body(ds: list[BrokerDaemon]) -> None:
        history = ds[0].replays.histories[0]
        pub = AsyncClient(url(ds[0]), id="quotes")
        await pub.connect()
        await until(lambda: ds[0].broker is not None and ds[0].broker.sizes()[0] >= 1)
        stop = asyncio.Event()
        published: list[int] = []

        async def publish() -> None:
            i = 0
            while not stop.is_set():
                i += 1
                seq = await pub.publish("records", {"symbol": "IBM", "price": i % 50})
                published.append(seq)
                if i % 20 == 0:
                    await asyncio.sleep(0.005)

        task = asyncio.ensure_future(publish())
        subscribers = []
        for k in range(4):
            await asyncio.sleep(0.15)
            got: list[Notification] = []
            c = AsyncClient(url(ds[2 - k % 2]), id=f"late{k}")
            await c.connect()
            await c.subscribe("records", "price >= 10", got.append, replay={"since_time": 0})
            subscribers.append((c, got))
        await until(lambda: all(c.replays == 1 for c, _ in subscribers), 10)
        await asyncio.sleep(0.2)
        stop.set()
        await task
        await until(lambda: history.recorded == len(published), 10)
        expected = [s for s in published if (s % 50) >= 10]
        for c, got in subscribers:
            await until(lambda got=got: len(got) >= len(expected), 10)
            _check(got, expected, "quotes")
            assert c.replayed > 0
            await c.close()
        await pub.close()

    _run(tmp_path, body)


def test_bad_replay_and_subscription_events_from_clients_are_refused(tmp_path: Path) -> None:
    async def body(ds: list[BrokerDaemon]) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", ds[2].address.port)
        writer.write(encode(hello("client", "raw")))
        await read_frame(reader, 1 << 20)
        frames = [
            {"kind": "sub", "model": "records", "filter": "true", "replay": {"last": -3}, "ref": 1},
            {"kind": "sub", "model": "records", "filter": "true", "replay": {"last": 10**7}},
            {"kind": "sub", "model": "records", "filter": "true", "replay": "last 3", "ref": 3},
            {"kind": "pub", "model": "subscriptions", "event": {"type": "x"}, "pub_id": ["raw", 1]},
            {"kind": "replay", "broker": "b2", "model": "records", "pubs": []},
            {"kind": "stats"},
        ]
        for f in frames:
            writer.write(encode(f))
        answers = []
        while True:
            obj = await read_frame(reader, 1 << 20)
            assert obj is not None
            if obj["kind"] == "stats":
                break
            answers.append(obj)
        writer.close()
        assert [(a["reason"], a.get("ref")) for a in answers] == [
            ("invalid-message", 1),
            ("invalid-message", None),
            ("invalid-message", 3),
            ("forbidden", None),
            ("invalid-message", None),
        ]
        assert "max_replay" in answers[1]["message"]
        assert "subscription events" in answers[3]["message"]
        # nothing was subscribed by the refused subs
        assert ds[2].broker is not None and ds[2].broker.sizes()[0] == 0

    _run(tmp_path, body)


# -- configuration ----------------------------------------------------------------------


def test_history_tables_in_broker_toml(tmp_path: Path) -> None:
    cfg = from_mapping(
        {
            "history": [
                {"model": "records", "filter": "true", "store": "a.sqlite", "max_count": 10},
                {"model": "xml", "filter": "//quote", "store": "b.sqlite", "max_age": 60},
            ]
        }
    )
    assert [(h.model, h.retention) for h in cfg.histories] == [
        ("records", Retention(max_count=10)),
        ("xml", Retention(max_age=60)),
    ]
    for bad, why in [
        ({"model": "records", "filter": "true"}, "store"),
        ({"model": "records", "filter": "true", "store": "s", "max_count": 0}, "max_count"),
        ({"model": "records", "filter": "true", "store": "s", "colour": 1}, "unknown key"),
        ({"model": "records", "store": "s"}, "filter"),
    ]:
        with pytest.raises(ConfigError, match=why):
            read_history(bad, "history[0]")


def test_a_hosted_history_on_a_corrupt_store_stops_the_broker_with_a_clear_error(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"garbage" * 1000)
    cfg = BrokerConfig(
        id="b",
        listen=Address("127.0.0.1", 0),
        histories=(HistoryConfig("records", "true", str(bad)),),
    )

    async def go() -> None:
        d = BrokerDaemon(cfg)
        with pytest.raises(ConfigError, match=r"history\[0\].*bad\.sqlite"):
            await d.start()

    asyncio.run(go())


def test_a_full_disk_is_a_clear_error_and_keeps_what_was_committed(tmp_path: Path) -> None:
    s = HistoryStore(str(tmp_path / "full.sqlite"))
    s.record("p", 1, "records", b'{"n":1}', 1.0)
    s.commit()
    s.db.execute("PRAGMA max_page_count = 8")  # the "disk" holds 8 pages
    with pytest.raises(HistoryError, match="full"):
        for i in range(2, 10_000):
            s.record("p", i, "records", b'{"pad":"%s"}' % (b"x" * 500), 1.0)
            if i % 10 == 0:
                s.commit()
    got = s.select("records", Replay(since_time=0.0), lambda e: True)
    assert got[0] == ("p", 1, b'{"n":1}')
    seqs = [r[1] for r in got]
    assert seqs == list(range(1, len(seqs) + 1))  # whole transactions, nothing half


def test_the_history_command_exports_and_refuses_a_bad_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pubsift.cli import main

    store = HistoryStore(str(tmp_path / "h.sqlite"))
    for i in range(1, 4):
        store.record("p", i, "records", b'{"n":%d}' % i, 1.0)
    store.close()
    (tmp_path / "history.toml").write_text(
        f'[history]\nmodel = "records"\nfilter = "true"\nstore = "{tmp_path / "h.sqlite"}"\n'
    )
    out = tmp_path / "export"
    assert main(["history", "--config", str(tmp_path / "history.toml"), "--export", str(out)]) == 0
    assert "exported 3 records" in capsys.readouterr().err
    assert (out / "events" / "model=records" / "part-0.parquet").is_file()
    (tmp_path / "bad.toml").write_text('[history]\nmodel = "records"\nstore = "x"\n')
    assert main(["history", "--config", str(tmp_path / "bad.toml"), "pubsift://127.0.0.1:1"]) == 2
    assert "history.filter" in capsys.readouterr().err


def test_two_overlapping_histories_one_answer_and_only_to_the_subscriber(tmp_path: Path) -> None:
    """Histories at b0 (everything) and b2 (IBM only) both overlap ``symbol = "IBM"``: the
    subscriber takes one answer (the first complete one), so nothing twice; a client with
    the same filter at the same broker gets no replayed notification."""

    async def body(ds: list[BrokerDaemon]) -> None:
        from pubsift.adapters.broker.history import History

        h0 = ds[0].replays.histories[0]
        h2 = History(
            HistoryConfig("records", 'symbol = "IBM"', str(tmp_path / "h2.sqlite"), id="h2"),
            url(ds[2]),
            models=ds[2].models,
        )
        await h2.start()
        pub = AsyncClient(url(ds[0]), id="quotes")
        await pub.connect()
        await until(lambda: ds[0].broker is not None and ds[0].broker.sizes()[1] >= 1)
        for i in range(1, 21):
            await pub.publish("records", {"symbol": "IBM" if i % 2 else "HP", "price": i})
        await until(lambda: h0.recorded == 20 and h2.recorded == 10)
        live: list[Notification] = []
        other = AsyncClient(url(ds[2]), id="other")
        await other.connect()
        await other.subscribe("records", 'symbol = "IBM"', live.append, confirm=True)
        got: list[Notification] = []
        late = AsyncClient(url(ds[2]), id="late")
        await late.connect()
        await late.subscribe("records", 'symbol = "IBM"', got.append, replay={"since_time": 0})
        await until(lambda: h0.answered + h2.answered == 2 and late.replays == 1)
        await pub.publish("records", {"symbol": "IBM", "price": 21})
        await until(lambda: len(got) == 11 and len(live) == 1)
        _check(got, list(range(1, 22, 2)), "quotes")
        assert [n.replayed for n in got] == [True] * 10 + [False]
        assert [n.seq for n in live] == [21] and other.replayed == 0
        for c in (late, other, pub):
            await c.close()
        await h2.stop()

    _run(tmp_path, body)


def test_a_replay_asked_before_connecting_is_asked_on_connecting(tmp_path: Path) -> None:
    async def body(ds: list[BrokerDaemon]) -> None:
        history = ds[0].replays.histories[0]
        pub = AsyncClient(url(ds[0]), id="quotes")
        await pub.connect()
        for i in range(1, 6):
            await pub.publish("records", {"price": i})
        await until(lambda: history.recorded == 5)
        got: list[Notification] = []
        late = AsyncClient(url(ds[2]), id="early")
        await late.subscribe("records", "price > 2", got.append, replay="last 2")
        await late.connect()
        await until(lambda: late.replays == 1)
        assert [n.seq for n in got] == [4, 5] and late.replay_timeouts == 0
        await late.close()
        await pub.close()

    _run(tmp_path, body)


def test_the_resume_point_counts_what_a_replay_delivered_beyond_the_live_stream(
    tmp_path: Path,
) -> None:
    """A subscriber resumed through the history gets publications the live stream will
    not bring again: its saved point (``pubsift sub --state``) includes them, so a
    restart from it replays none of them twice."""

    async def body(ds: list[BrokerDaemon]) -> None:
        history = ds[0].replays.histories[0]
        pub = AsyncClient(url(ds[0]), id="quotes")
        await pub.connect()
        for i in range(1, 9):
            await pub.publish("records", {"price": i})
        await until(lambda: history.recorded == 8)
        got: list[Notification] = []
        c = AsyncClient(url(ds[2]), id="resumer")
        await c.connect()
        await c.subscribe("records", "price > 0", got.append, replay={"since": {"quotes": 3}})
        await until(lambda: c.replays == 1)
        assert [n.seq for n in got] == [4, 5, 6, 7, 8]
        assert c.delivered() == {"quotes": 8}
        again: list[Notification] = []
        d = AsyncClient(url(ds[2]), id="restarted")
        d.restore(c.delivered())
        await d.connect()
        await d.subscribe("records", "price > 0", again.append, replay={"since": c.delivered()})
        await until(lambda: d.replays == 1)
        assert again == []
        for x in (c, d, pub):
            await x.close()

    _run(tmp_path, body)


def test_a_history_that_failed_to_record_refuses_a_past_with_a_hole(tmp_path: Path) -> None:
    """The store fills up (``max_page_count``) while publications go on: the history
    misses some, so an answer reaching back to that time would have a hole in it. It
    refuses such a replay (the subscriber is told, and gets the live ones), while a
    ``since_time`` after the failure is still answered."""

    async def body(ds: list[BrokerDaemon]) -> None:
        history = ds[0].replays.histories[0]
        pub = AsyncClient(url(ds[0]), id="quotes")
        await pub.connect()
        for i in range(1, 6):
            await pub.publish("records", {"price": i})
        await until(lambda: history.recorded == 5)
        pages = history.store.db.execute("PRAGMA page_count").fetchone()[0]
        history.store.db.execute(f"PRAGMA max_page_count = {pages}")  # the disk is full
        for i in range(6, 40):
            await pub.publish("records", {"price": i, "pad": "x" * 2000})
        await pub.publish("records", {"price": 40})
        await pub.flush()
        await until(lambda: history.errors >= 1)
        got: list[Notification] = []
        late = AsyncClient(url(ds[2]), id="late")
        await late.connect()
        await late.subscribe("records", "price > 0", got.append, replay={"since_time": 0})
        await until(lambda: late.replay_errors != [])
        assert late.replay_errors[0]["reason"] == "refused"
        assert "incomplete" in late.replay_errors[0]["message"]
        assert got == [] and late.replayed == 0  # no past with a hole in it
        history.store.db.execute("PRAGMA max_page_count = 1000000")  # room again
        recorded = history.recorded
        await pub.publish("records", {"price": 41})
        await until(lambda: len(got) == 1)
        t = time.time()
        await asyncio.sleep(0.05)
        await pub.publish("records", {"price": 42})
        await until(lambda: history.recorded == recorded + 2)
        after: list[Notification] = []
        later = AsyncClient(url(ds[2]), id="later")
        await later.connect()
        await later.subscribe("records", "price > 0", after.append, replay={"since_time": t})
        await until(lambda: later.replays == 1)
        assert [n.wire["price"] for n in after] == [42] and later.replay_errors == []
        for c in (late, later, pub):
            await c.close()

    _run(tmp_path, body)


def test_a_state_file_that_cannot_be_written_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``pubsift sub --state`` in a folder that is not there says so at start (exit 2),
    before it connects; a point that can no longer be written is a ConfigError naming
    the file (``pubsift sub`` then stops with that line, exit 1)."""
    from pubsift.adapters.broker.resume import ResumeState

    from pubsift.cli import main

    missing = tmp_path / "no-such-folder" / "state.json"
    argv = ["sub", "pubsift://127.0.0.1:1", "-m", "records", "-f", "true", "--state"]
    assert main([*argv, str(missing)]) == 2
    err = capsys.readouterr().err
    assert "cannot write the resume point" in err and "state.json" in err
    assert "Traceback" not in err and "cannot connect" not in err
    folder = tmp_path / "here"
    folder.mkdir()
    state = ResumeState(str(folder / "state.json"))
    state.save({"p": 3})
    assert ResumeState(str(folder / "state.json")).last_seq == {"p": 3}
    (folder / "state.json").unlink()
    folder.rmdir()  # the folder went
    with pytest.raises(ConfigError, match=r"state\.json: cannot write the resume point"):
        state.save({"p": 4})


def test_a_subscription_event_that_is_not_strict_json_is_dropped(tmp_path: Path, caplog) -> None:
    """The ref and the filter of a subscription event asking for a replay are read as
    strict JSON (core/strict_json): a duplicate key or NaN in either drops the event with
    a warning, before anything is answered."""
    store = str(tmp_path / "h.sqlite")
    history = History(HistoryConfig("records", "true", store), "pubsift://127.0.0.1:9")
    m = history.model
    good = json.dumps(m.dump_filter(m.parse_filter("price > 5")))
    cases = [
        ('{"a": 1, "a": 2}', good, 'duplicate key "a"'),
        ("NaN", good, "NaN is not JSON"),
        ("1", good[:-1] + ', "' + good[2:], 'duplicate key "price"'),
        ("1", '{"price": {"op": ">", "value": NaN}}', "NaN is not JSON"),
    ]

    async def go() -> None:
        for ref, text, _ in cases:
            se = {"broker": "b", "client": "c", "ref": ref, "filter": text, "replay": "{}"}
            await history._answer(Notification(SUBSCRIPTIONS, None, se, "p", 1))

    try:
        with caplog.at_level(logging.WARNING, logger="pubsift.history"):
            asyncio.run(go())
    finally:
        history.store.close()
    dropped = [r.getMessage() for r in caplog.records if "malformed" in r.getMessage()]
    assert len(dropped) == len(cases)
    assert [says in line for line, (_, _, says) in zip(dropped, cases, strict=True)] == [
        True
    ] * len(cases)
    assert history.answered == history.refused == 0
