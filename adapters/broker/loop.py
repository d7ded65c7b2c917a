"""The event loop the broker's processes run on: uvloop where it is installed (the
``fast`` extra; Linux and macOS), else asyncio's own. ``PUBSIFT_EVENT_LOOP=asyncio``
chooses asyncio's loop even where uvloop is installed (to compare, or to rule it out).
What each gives is measured by ``bench/brokers.py`` (docs/protocol.md §14)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's ``new_event_loop`` where installed and not turned off, else None."""
    if os.environ.get("PUBSIFT_EVENT_LOOP", "").lower() == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the loop of :func:`loop_factory`."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
