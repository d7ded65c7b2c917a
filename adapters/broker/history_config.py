"""The configuration of a history: a ``[[history]]`` table of ``broker.toml`` (the broker
hosts it) or the ``[history]`` table of the file ``pubsift history --config`` reads::

    [[history]]
    id = "quotes-history"      # its client id (default: history-<model>-<n>)
    model = "records"
    filter = 'symbol prefix ""'  # what it records (text or JSON form); "true": everything
    store = "quotes.sqlite"    # the SQLite database (created if absent)
    max_age = 86400.0          # retention (each optional): seconds,
    max_count = 1000000        #   notifications,
    max_bytes = 1000000000     #   bytes of events
    max_replay = 100000        # the most notifications one replay answers with
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pubsift.adapters.broker.address import ConfigError
from pubsift.adapters.broker.history_store import Retention
from pubsift.adapters.broker.replay import MAX_REPLAY

KEYS = {"id", "model", "filter", "store", "max_age", "max_count", "max_bytes", "max_replay"}


@dataclass(frozen=True)
class HistoryConfig:
    """One history: what it records (``model``, ``filter``), where (``store``), how much
    (``retention``), and the largest replay it answers (``max_replay``)."""

    model: str
    filter: str | Mapping[str, Any]
    store: str
    id: str | None = None
    retention: Retention = field(default_factory=Retention)
    max_replay: int = MAX_REPLAY


def read_history(t: Any, where: str) -> HistoryConfig:
    """A :class:`HistoryConfig` from one parsed TOML table; errors name ``where``."""
    if not isinstance(t, Mapping):
        raise ConfigError(f"{where}: expected a table")
    unknown = sorted(set(t) - KEYS)
    if unknown:
        raise ConfigError(f"{where}.{unknown[0]}: unknown key (known: {', '.join(sorted(KEYS))})")
    for key in ("model", "store"):
        if not isinstance(t.get(key), str) or not t[key]:
            raise ConfigError(f"{where}.{key}: expected a non-empty string")
    f = t.get("filter")
    if not isinstance(f, (str, Mapping)):
        raise ConfigError(f"{where}.filter: expected the filter (text or a table)")
    ident = t.get("id")
    if ident is not None and (not isinstance(ident, str) or not ident or len(ident) > 200):
        raise ConfigError(f"{where}.id: expected a client id of 1-200 characters")

    def positive(key: str, integer: bool) -> Any:
        v = t.get(key)
        if v is None:
            return None
        ok = type(v) is int if integer else type(v) in (int, float)
        if not ok or v <= 0:
            raise ConfigError(
                f"{where}.{key}: expected {'an integer' if integer else 'a number'} > 0, got {v!r}"
            )
        return v

    retention = Retention(
        positive("max_age", False), positive("max_count", True), positive("max_bytes", True)
    )
    return HistoryConfig(
        t["model"], f, t["store"], ident, retention, positive("max_replay", True) or MAX_REPLAY
    )


def read_histories(raw: Any, source: str) -> tuple[HistoryConfig, ...]:
    """The ``[[history]]`` tables of ``broker.toml``."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(f"{source}: history: expected [[history]] tables")
    return tuple(read_history(t, f"{source}: history[{i}]") for i, t in enumerate(raw))


def load_history_config(path: str) -> HistoryConfig:
    """The ``[history]`` table of ``path`` (``pubsift history --config``)."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read the history configuration: {exc.strerror}"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    extra = sorted(set(data) - {"history"})
    if extra:
        raise ConfigError(f"{path}: unknown section or key {extra[0]!r} (expected [history])")
    return read_history(data.get("history"), f"{path}: history")
