"""How deep the slow tests dig: one knob for the whole suite.

The slow-marked fuzz and "thorough" tests scale their example counts and iterations with
``PUBSIFT_TEST_DEPTH`` (default 1: what ``make test`` and CI run, sized so that the whole
suite stays within CI's time budget on 2 cores). A deeper run, e.g. before a release or
after touching a model's algebra: ``PUBSIFT_TEST_DEPTH=4 make test`` (four times the
examples of every deep test).
"""

from __future__ import annotations

import os

DEPTH = float(os.environ.get("PUBSIFT_TEST_DEPTH", "1"))


def deep(n: int) -> int:
    """``n`` examples (or iterations) scaled by the depth; at least 1."""
    return max(1, round(n * DEPTH))
