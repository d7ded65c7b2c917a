"""The summary of a ``pubsift experiment rebeca`` run: the last point of every curve."""

from __future__ import annotations

from collections.abc import Sequence

from pubsift.experiments.rebeca import Point
from rich.table import Table


def summary_table(rows: Sequence[Point], experiment: str, seconds: float) -> Table:
    """Per curve, its last point: x, Σ|R|, the expected Σ|R|, admin messages per change
    and the saved traffic."""
    table = Table(title=f"Mühl ch. 6 reproduced ({experiment}, {seconds:.0f} s)")
    for col in ("curve", "x", "Σ|R|", "expected", "admin/change", "saved traffic"):
        table.add_column(col, justify="left" if col == "curve" else "right")
    last: dict[str, Point] = {}
    for p in rows:
        last[_label(p)] = p
    for label, p in last.items():
        table.add_row(
            label,
            f"{p.active_subscriptions:,}",
            f"{p.remote_entries:,}",
            "" if p.expected_entries is None else f"{p.expected_entries:,}",
            f"{p.admin_per_change:.2f}",
            "" if p.saved_traffic is None else f"{p.saved_traffic:.3f}",
        )
    return table


def _label(p: Point) -> str:
    adv = " + adv" if p.advertisements else ""
    loc = f", d={p.locality}" if p.locality else ""
    return f"{p.strategy}{adv} ({p.kind}{loc})"
