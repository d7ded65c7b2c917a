"""The one timing helper of the benchmarks: warm-up, CPU time, repeats, median, spread,
the ratio line, and the ``--quick`` / ``--json`` options every script takes.

Rules it enforces (DESIGN.md §3, "Correct first, then fast, both measured"): both sides of a ratio are timed on the same inputs
(:func:`ratio` refuses two timings over different inputs); times are the CPU time of this
process (``time.process_time``), so figures hold on a busy machine; every timing runs
its work once untimed first (warm-up: caches, compiled plans, lazily built structures),
then ``repeats`` times, and reports the median with the spread ``(max - min) / median``.

    from harness import Bench, time_it, ratio
    bench = Bench("records_match", __doc__)          # parses --quick, --json
    t_ix = time_it(lambda: [match(e) for e in evs], len(evs), inputs="20000 quotes")
    t_lin = time_it(lambda: [scan(e) for e in evs[:50]], 50, inputs="first 50 quotes")
    bench.row(subs=10_000, index=t_ix, linear=t_lin, ratio=ratio(t_same, t_lin))
    sys.exit(bench.finish())                          # prints the JSON when asked
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


@dataclass
class Timing:
    """CPU seconds per call of some work that handles ``count`` items (events,
    queries, pairs) of the inputs named by ``inputs``."""

    count: int
    inputs: str
    seconds: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def rate(self) -> float:
        """Items per CPU second (median repeat)."""
        m = self.median
        return self.count / m if m > 0 else float("inf")

    @property
    def per_item(self) -> float:
        return self.median / self.count

    @property
    def spread(self) -> float:
        """(slowest - fastest) / median of the repeats."""
        m = self.median
        return (max(self.seconds) - min(self.seconds)) / m if m > 0 else 0.0

    def fmt_rate(self, digits: int = 0) -> str:
        return f"{self.rate:,.{digits}f} ±{self.spread / 2:.0%}"

    def fmt_ms(self, digits: int = 2) -> str:
        return f"{self.per_item * 1e3:,.{digits}f} ±{self.spread / 2:.0%}"

    def as_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "inputs": self.inputs,
            "rate": self.rate,
            "median_s": self.median,
            "spread": self.spread,
            "repeats": len(self.seconds),
        }


def time_it(
    work: Callable[[], Any],
    count: int,
    inputs: str,
    repeats: int = 5,
    warmup: int = 1,
    min_seconds: float = 0.0,
    setup: Callable[[], Any] | None = None,
    clock: Callable[[], float] = time.process_time,
) -> Timing:
    """Runs ``work`` ``warmup`` times untimed, then ``repeats`` timed runs in CPU time
    (``clock=time.perf_counter`` for wall time, where the work runs in other processes).
    With ``min_seconds``, a timed run calls ``work`` as often as needed to last that
    long (measured during warm-up), and its time is divided by the number of calls.
    ``setup`` runs untimed before every call of ``work`` (say, to drop what the inputs
    cache, so that every run does the whole work). A full garbage collection precedes
    every timed run (untimed), so no run pays for garbage made before it."""
    loops = 1
    for _ in range(warmup):
        if setup is not None:
            setup()
        t = clock()
        work()
        spent = clock() - t
        if min_seconds and spent < min_seconds:
            loops = max(loops, int(min_seconds / max(spent, 1e-6)) + 1)
    out = Timing(count, inputs)
    for _ in range(max(1, repeats)):
        gc.collect()  # earlier garbage is not collected inside the run
        spent = 0.0
        for _ in range(loops):
            if setup is not None:
                setup()
                gc.collect()  # the setup's garbage is not collected inside the run
            t = clock()
            work()
            spent += clock() - t
        out.seconds.append(spent / loops)
    return out


def ratio(fast: Timing, slow: Timing) -> float:
    """How many times faster ``fast`` is than ``slow``: only over the same inputs."""
    if fast.inputs != slow.inputs or fast.count != slow.count:
        raise ValueError(
            f"a ratio compares like with like: {fast.inputs!r} ({fast.count}) "
            f"vs {slow.inputs!r} ({slow.count})"
        )
    return slow.median / fast.median if fast.median > 0 else float("inf")


def ratio_line(name: str, fast: Timing, slow: Timing, unit: str = "items/s") -> str:
    """``name: 123× (fast 1,234 ±2% vs slow 10 ±5% items/s, same inputs: ..., median
    of n repeats)``."""
    r = ratio(fast, slow)
    return (
        f"{name}: {r:,.1f}× ({fast.fmt_rate()} vs {slow.fmt_rate(1)} {unit}; same "
        f"inputs: {fast.inputs}; median of {len(fast.seconds)}/{len(slow.seconds)} "
        f"repeats, spread ±half of max-min)"
    )


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "processor": platform.machine(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


class Bench:
    """Command-line options shared by every script (``--quick``, ``--json PATH``) and the
    figures it reports: ``row(...)`` adds one line of the machine-readable output,
    ``headline(...)`` the figure ``make bench`` puts in the README table."""

    def __init__(
        self,
        name: str,
        doc: str | None,
        argv: list[str] | None = None,
        parser: argparse.ArgumentParser | None = None,
    ) -> None:
        self.name = name
        self.parser = parser or argparse.ArgumentParser(
            description=(doc or "").split("\n\n")[0],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        self.parser.add_argument(
            "--quick",
            action="store_true",
            help="small sizes and few repeats (what `make bench` runs)",
        )
        self.parser.add_argument(
            "--json", metavar="PATH", help="also write the figures as JSON to PATH ('-': stdout)"
        )
        self.parser.add_argument(
            "--repeats",
            type=int,
            default=None,
            help="timed repeats per figure (default: 5, quick: 3)",
        )
        self._argv = argv
        self.rows: list[dict[str, Any]] = []
        self.headlines: list[dict[str, Any]] = []
        self.args: argparse.Namespace | None = None

    def parse(self) -> argparse.Namespace:
        self.args = self.parser.parse_args(self._argv)
        if self.args.repeats is None:
            self.args.repeats = 3 if self.args.quick else 5
        self.command = (
            "python bench/"
            + self.name
            + ".py"
            + "".join(
                " " + a
                for a in (self._argv if self._argv is not None else sys.argv[1:])
                if not a.startswith("--json") and not a.endswith(".json")
            )
        )
        return self.args

    def row(self, **fields: Any) -> None:
        self.rows.append(
            {k: (v.as_json() if isinstance(v, Timing) else v) for k, v in fields.items()}
        )

    def headline(self, what: str, figure: str) -> None:
        """One line of the README table: what is compared, and the figure."""
        self.headlines.append({"what": what, "figure": figure})

    def skip(self, reason: str) -> int:
        """Data absent: one clear line, and a JSON record saying so."""
        print(f"{self.name}: skipped: {reason}", file=sys.stderr)
        self._write({"skipped": reason})
        return 0

    def finish(self, status: int = 0) -> int:
        self._write({"status": status})
        return status

    def _write(self, extra: dict[str, Any]) -> None:
        if self.args is None or not self.args.json:
            return
        doc = {
            "bench": self.name,
            "command": getattr(self, "command", self.name),
            "quick": self.args.quick,
            "machine": machine(),
            "headlines": self.headlines,
            "rows": self.rows,
            **extra,
        }
        text = json.dumps(doc, indent=1, default=str)
        if self.args.json == "-":
            print(text)
        else:
            Path(self.args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(self.args.json).write_text(text + "\n")
