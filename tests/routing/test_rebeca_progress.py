"""``pubsift experiment rebeca`` with its output piped (a file, a CI log): plain progress
lines on standard error, one as each curve starts and one per interval with the points
done, and no terminal control characters."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

SMALL = ["--consumers", "2", "--step", "1", "--toggles", "2", "--subscriptions", "2"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_piped_progress_is_plain_lines(tmp_path, jobs):
    done = subprocess.run(
        [sys.executable, "-m", "pubsift.cli", "experiment", "rebeca"]
        + ["--strategies", "identity", *SMALL, "--stocks", "100", "--jobs", jobs]
        + ["--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PUBSIFT_PROGRESS_EVERY="0.000001"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("rebeca: ")]
    counts = [int(re.match(r"rebeca: (\d+)/4 points", ln).group(1)) for ln in lines]
    assert counts == sorted(counts) and counts[-1] == 4, done.stderr
    assert lines[-1].endswith(": done") and len(lines) >= 3, lines
    if jobs == "1":  # a line as each curve starts, named
        assert sum("identity" in ln for ln in lines) >= 2, lines
    assert "\x1b[" not in done.stderr
