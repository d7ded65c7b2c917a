"""Plots of the REBECA experiments in the style of Mühl's Fig. 6.2-6.7 and 6.8-6.12 (Mühl 2002,
Large-Scale Content-Based Publish/Subscribe Systems, ch. 6), drawn with matplotlib's Agg
backend.

Each figure is written on its own (``fig6_2.png`` ...) and all of them together on one
overview sheet (``rebeca-tables.png`` / ``rebeca-locality.png``). Mühl's analytical
values (2002, ch. 6) are drawn as grey dashed lines: 106·x and P_avg·x = 3.73·x, the limits
2·m·(|V|-1) = 212,000 and m·(|V|-1) = 106,000, 106 and 3.73 admin messages per change,
the advertisement factor 28.4.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from pubsift.experiments.rebeca import Point

V, M = 107, 1000
P_AVG = 250 / 67
FACTOR = (V - 1) / P_AVG

Curves = dict[tuple[str, bool, str, str], list["Point"]]
Panel = Callable[["Axes", Curves], None]


def _curves(rows: Sequence[Point]) -> Curves:
    out: Curves = defaultdict(list)
    for p in rows:
        out[(p.strategy, p.advertisements, p.kind, p.locality)].append(p)
    return out


def _label(key: tuple[str, bool, str, str]) -> str:
    strategy, adv, kind, d = key
    return (
        f"{strategy}{' + adv' if adv else ''}"
        + (f" ({kind})" if kind != "quote" else "")
        + (f" d={d}" if d else "")
    )


Key = tuple[str, bool, str, str]
Series = dict[Key, list[tuple[int, float]]]


def _series(curves: Curves, keep: Callable[[Key], bool], y: Callable[[Point], float]) -> Series:
    return {
        k: [(p.active_subscriptions, y(p)) for p in pts] for k, pts in curves.items() if keep(k)
    }


def _plot(ax: Axes, series: Series) -> None:
    for key, xy in sorted(series.items()):
        ax.plot([x for x, _ in xy], [y for _, y in xy], marker="o", markersize=3, label=_label(key))


def _draw(
    ax: Axes, curves: Curves, keep: Callable[[Key], bool], y: Callable[[Point], float]
) -> None:
    _plot(ax, _series(curves, keep, y))


def _xmax(curves: Curves) -> int:
    return max((p.active_subscriptions for pts in curves.values() for p in pts), default=1)


def _xmin(curves: Curves) -> int:
    return min((p.active_subscriptions for pts in curves.values() for p in pts), default=1)


def _guide(
    ax: Axes,
    text: str,
    y: float | None = None,
    slope: float | None = None,
    xmax: int = 1,
    xmin: int = 1,
) -> None:
    if slope is not None:
        ax.plot([xmin, xmax], [slope * xmin, slope * xmax], ls="--", lw=0.8, color="grey")
        ax.annotate(text, (xmax, slope * xmax), fontsize=6, color="grey", ha="right")
    else:
        assert y is not None  # a guide is a slope or a level
        ax.axhline(y, ls="--", lw=0.8, color="grey")
        ax.annotate(text, (0, y), fontsize=6, color="grey", va="bottom")


def _ratio(curves: Curves, value: Callable[[Point], float]) -> Series:
    """Per strategy and kind: value without advertisements / value with, at equal x."""
    out: Series = {}
    for (s, adv, kind, d), pts in curves.items():
        other = curves.get((s, True, kind, d))
        if adv or other is None:
            continue
        with_adv = {p.active_subscriptions: value(p) for p in other}
        ratio = [
            (p.active_subscriptions, value(p) / with_adv[p.active_subscriptions])
            for p in pts
            if with_adv.get(p.active_subscriptions)
        ]
        if ratio:
            out[(s, False, kind, d)] = ratio
    return out


def fig6_2(ax: Axes, c: Curves) -> None:
    ax.set_title("Fig. 6.2 simple vs. identity (routing table size)", fontsize=8)
    _draw(ax, c, lambda k: k[0] in ("simple", "identity"), lambda p: p.remote_entries)
    lo, hi = _xmin(c), _xmax(c)
    _guide(ax, "106·x", slope=V - 1, xmax=hi, xmin=lo)
    _guide(ax, "3.73·x", slope=P_AVG, xmax=hi, xmin=lo)
    _guide(ax, "2·m·(|V|-1)", y=2 * M * (V - 1))
    _guide(ax, "m·(|V|-1)", y=M * (V - 1))
    ax.set_yscale("log")
    ax.set_ylabel("Σ|R|")


def fig6_3(ax: Axes, c: Curves) -> None:
    ax.set_title("Fig. 6.3 covering vs. merging (routing table size)", fontsize=8)
    _draw(ax, c, lambda k: k[0] in ("covering", "merging"), lambda p: p.remote_entries)
    _guide(ax, "2·m·(|V|-1)", y=2 * M * (V - 1))
    _guide(ax, "m·(|V|-1)", y=M * (V - 1))
    ax.set_ylabel("Σ|R|")


def fig6_4(ax: Axes, c: Curves) -> None:
    ax.set_title("Fig. 6.4 effect of advertisements (routing table size)", fontsize=8)
    _plot(ax, _ratio(c, lambda p: p.remote_entries))
    _guide(ax, "(|V|-1)/P_avg = 28.4", y=FACTOR)
    _guide(ax, "2", y=2)
    ax.set_ylabel("Σ|R| without / with adv.")


def fig6_5(ax: Axes, c: Curves) -> None:
    ax.set_title("Fig. 6.5 simple vs. identity (filter forwarding overhead)", fontsize=8)
    _draw(ax, c, lambda k: k[0] in ("simple", "identity"), lambda p: p.admin_per_change)
    _guide(ax, "|V|-1 = 106", y=V - 1)
    _guide(ax, "P_avg = 3.73", y=P_AVG)
    ax.set_ylabel("admin messages per change")


def fig6_6(ax: Axes, c: Curves) -> None:
    ax.set_title("Fig. 6.6 covering vs. merging (filter forwarding overhead)", fontsize=8)
    _draw(ax, c, lambda k: k[0] in ("covering", "merging"), lambda p: p.admin_per_change)
    ax.set_ylabel("admin messages per change")


def fig6_7(ax: Axes, c: Curves) -> None:
    ax.set_title("Fig. 6.7 effect of advertisements (overhead)", fontsize=8)
    _plot(ax, _ratio(c, lambda p: p.admin_per_change))
    _guide(ax, "28.4", y=FACTOR)
    ax.set_ylabel("overhead without / with adv.")


def _locality(adv: bool, what: str) -> Panel:
    def panel(ax: Axes, c: Curves) -> None:
        name = "routing table size" if what == "entries" else "filter forwarding overhead"
        ax.set_title(f"{name} ({'with' if adv else 'without'} adv.)", fontsize=8)
        _draw(
            ax,
            c,
            lambda k: k[1] == adv,
            (lambda p: p.remote_entries) if what == "entries" else (lambda p: p.admin_per_change),
        )
        ax.set_ylabel("Σ|R|" if what == "entries" else "admin messages per change")

    return panel


def fig6_12(ax: Axes, c: Curves) -> None:
    ax.set_title("Fig. 6.12 saved payload traffic vs. flooding", fontsize=8)
    _draw(ax, c, lambda k: not k[1], lambda p: p.saved_traffic or 0.0)
    ax.set_ylabel("share of messages saved")


TABLES: dict[str, Panel] = {
    "fig6_2": fig6_2,
    "fig6_3": fig6_3,
    "fig6_4": fig6_4,
    "fig6_5": fig6_5,
    "fig6_6": fig6_6,
    "fig6_7": fig6_7,
}
LOCALITY: dict[str, Panel] = {
    "fig6_8": _locality(True, "entries"),
    "fig6_9": _locality(True, "overhead"),
    "fig6_10": _locality(False, "entries"),
    "fig6_11": _locality(False, "overhead"),
    "fig6_12": fig6_12,
}


def plot(rows: Sequence[Point], out: Path, locality: bool, dpi: int = 100) -> list[Path]:
    """Write every figure and the overview sheet into ``out``; returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = _curves(rows)
    panels = LOCALITY if locality else TABLES
    paths = []
    for name, panel in panels.items():
        fig, ax = plt.subplots(figsize=(5, 3.6))
        _finish(ax, panel, curves)
        fig.tight_layout()
        paths.append(out / f"{name}.png")
        fig.savefig(paths[-1], dpi=dpi)
        plt.close(fig)
    paths.append(
        overview(curves, out / f"rebeca-{'locality' if locality else 'tables'}.png", panels, dpi)
    )
    return paths


def overview(curves: Curves, path: Path, panels: dict[str, Panel], dpi: int = 100) -> Path:
    """All ``panels`` on one sheet, three per row."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = (len(panels) + 2) // 3
    fig, axes = plt.subplots(rows, 3, figsize=(13, 3.4 * rows))
    flat = list(axes.flat)
    for ax, panel in zip(flat, panels.values()):
        _finish(ax, panel, curves)
    for ax in flat[len(panels) :]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def _finish(ax: Axes, panel: Panel, curves: Curves) -> None:
    panel(ax, curves)
    ax.set_xlabel("active subscriptions x", fontsize=7)
    ax.tick_params(labelsize=6)
    ax.yaxis.label.set_fontsize(7)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6)
