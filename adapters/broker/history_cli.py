"""``pubsift history --config history.toml URL``: run a history (:mod:`.history`) as a
client of the broker at URL until SIGTERM or SIGINT (exit 0); a bad configuration or an
unusable store is one line on standard error, exit 2."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from rich.console import Console

HISTORY_EPILOG = """\
history.toml holds one [history] table: model, filter, store (a SQLite file, created if
absent), optional id, max_age (seconds), max_count, max_bytes (retention) and max_replay
(the most notifications one replay answers with). It records what matches its filter and
answers the subscriptions with a replay description (pubsift sub --replay 'last 10')
whose filter overlaps it. docs/history.md.
"""


def add_history_arguments(p: argparse.ArgumentParser) -> None:
    from pubsift.adapters.broker.cli import add_tls_arguments, add_token_argument

    p.epilog = HISTORY_EPILOG
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument(
        "url", metavar="URL", nargs="?", help="the broker, pubsift://host:port (not with --export)"
    )
    p.add_argument(
        "--export",
        metavar="DIR",
        help="write the store as an event store of the Spark job (pubsift route DIR ...) and exit",
    )
    p.add_argument("--config", required=True, metavar="history.toml", help="the history")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    add_token_argument(p)
    add_tls_arguments(p)
    p.set_defaults(func=cmd_history)


def cmd_history(args: argparse.Namespace, console: Console) -> int:
    from pubsift.adapters.broker.cli import LOG_FORMAT, client_options
    from pubsift.adapters.broker.history import History
    from pubsift.adapters.broker.history_config import load_history_config

    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format=LOG_FORMAT)
    cfg = load_history_config(args.config)
    if args.export:
        from pubsift.adapters.broker.history_export import export
        from pubsift.adapters.broker.history_store import HistoryStore

        store = HistoryStore(cfg.store)
        try:
            counts = export(store, args.export)
        finally:
            store.close()
        per = ", ".join(f"{n} {m}" for m, n in counts.items()) or "no events"
        sys.stderr.write(f"pubsift history: exported {per} to {args.export}\n")
        return 0
    if args.url is None:
        from pubsift.adapters.broker.config import ConfigError

        raise ConfigError("give the broker's URL (or --export DIR)")
    history = History(cfg, args.url, **client_options(args))

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await history.start()
        try:
            await stop.wait()
        finally:
            await history.stop()

    asyncio.run(main())
    return 0
