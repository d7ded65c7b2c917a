"""Mühl's stock-quote scenario over real S&P 500 quotes (2002, §6.2 and §5.4.2).

Events are daily quotes of the S&P 500 symbols (Cam Nugent's Kaggle data set,
``date,open,high,low,close,volume,Name``, in a folder the caller names: the tests and
benchmarks use the shared data's ``quotes/``) as records events::

    {"symbol": "AAPL", "price": 155.3, "open": ..., "high": ..., "low": ...,
     "volume": 21534000, "date": "2017-08-01"}

(empty fields are left out, so a few events lack ``open``/``high``/``low``). Subscriptions
are drawn deterministically from a seed, in a :class:`Mix` of

* *quote subscriptions* ``symbol = X`` (Mühl §6.2: all quotes of one stock);
* *quote-interval subscriptions* ``symbol = X and price ∈ [p - t1, p + t2]`` around a real
  close ``p`` of X, ``t1, t2`` uniform in ``[0, spread · p]`` (Mühl §6.3.3 uses
  ``[50 - t1, 50 + t2]``; real prices vary per stock, so the interval follows the stock);
* *prefix subscriptions* ``symbol prefix P and price ≤ p`` (P: the first one or two letters
  of a symbol, p a real close of it);
* *portfolio subscriptions* ``symbol in {X1, ..., Xk}``;
* *volume subscriptions* ``symbol = X and volume ≥ m · median volume of X`` or, for a
  quarter of them, ``volume ≥ v`` with v a high quantile of all volumes.

Filters are built directly from :class:`~pubsift.models.constraints.Constraint`
objects in canonical form (``=`` for one value, ``in`` for two or more, closed intervals).
"""

from __future__ import annotations

import csv
import gzip
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from pubsift.core.errors import EventError
from pubsift.models.constraints import STR, Constraint, Interval, Op
from pubsift.models.records.events import Record
from pubsift.models.records.filters import RecordFilter

#: One year of daily quotes, 126,663 rows, 505 symbols.
QUOTES_1YR = "all_stocks_1yr_2017-02-08_2018-02-07.csv"
#: Five years, 619,040 rows (gzip).
QUOTES_5YR = "all_stocks_5yr_2013-02-08_2018-02-07.csv.gz"

#: The header of a quotes file (Kaggle's columns).
COLUMNS = ("date", "open", "high", "low", "close", "volume", "Name")


def quotes_path(directory: Path, five_years: bool = False) -> Path:
    """The quotes file in ``directory`` (the folder of :data:`QUOTES_1YR` and
    :data:`QUOTES_5YR`); raises FileNotFoundError naming the path if it is missing."""
    p = Path(directory) / (QUOTES_5YR if five_years else QUOTES_1YR)
    if not p.is_file():
        raise FileNotFoundError(
            f"S&P 500 quotes not found at {p.resolve()}: expected the folder of the quotes "
            f"files {QUOTES_1YR} and {QUOTES_5YR}"
        )
    return p


def iter_quotes(path: Path) -> Iterator[Record]:
    """Quote events from a quotes CSV (plain or ``.gz``), in file order."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"quotes file not found: {p}")
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt", newline="", encoding="utf-8") as fh:
        rows = csv.reader(fh)
        header = next(rows, None)
        if header is None or tuple(header) != COLUMNS:
            raise EventError(f"expected the header {','.join(COLUMNS)}, got {header!r}", f"{p}:1")
        for line, row in enumerate(rows, start=2):
            yield quote(row, f"{p}:{line}")


def quote(row: list[str], where: str) -> Record:
    """The event of one row of a quotes file (:data:`COLUMNS`); EventError at ``where``
    when the row is not a quote."""
    if len(row) != len(COLUMNS):
        raise EventError(f"expected {len(COLUMNS)} fields, got {len(row)}", where)
    date, open_, high, low, close, volume, name = row
    if not name or not date:
        raise EventError("a quote needs a symbol and a date", where)
    event: dict[str, object] = {"symbol": name, "date": date}
    try:
        for attr, text in (("price", close), ("open", open_), ("high", high), ("low", low)):
            if text:
                event[attr] = float(text)
        if volume:
            event["volume"] = int(volume)
    except ValueError as err:
        raise EventError(f"not a number: {err}", where) from None
    return Record.of(event, where)


def load_quotes(path: Path, limit: int | None = None) -> list[Record]:
    """The first ``limit`` quote events (all by default) of the quotes file."""
    out: list[Record] = []
    for r in iter_quotes(path):
        if limit is not None and len(out) >= limit:
            break
        out.append(r)
    return out


@dataclass(frozen=True)
class Mix:
    """Relative weights of the subscription kinds and their parameters."""

    quote: float = 0.4
    interval: float = 0.4
    prefix: float = 0.05
    portfolio: float = 0.1
    volume: float = 0.05
    #: quote-interval half widths are uniform in [0, spread · price]
    spread: float = 0.1
    #: portfolio sizes are uniform in this closed range
    portfolio_size: tuple[int, int] = (2, 8)
    #: share of volume subscriptions on a single stock (the others watch all stocks)
    volume_single: float = 0.75
    #: volume thresholds of single stocks: this many times their median volume
    volume_factor: float = 2.0
    #: thresholds over all stocks: a quantile of all volumes, uniform in this range
    volume_quantiles: tuple[float, float] = (0.99, 0.999)


class _Stats:
    """Per-symbol prices and volumes of the quotes the subscriptions are drawn from."""

    def __init__(self, quotes: Sequence[Record]) -> None:
        closes: dict[str, list[float]] = {}
        volumes: dict[str, list[int]] = {}
        # quote records: a str symbol, a float price, an int volume
        quote_values: Sequence[Mapping[str, Any]] = quotes
        for q in quote_values:
            s = q["symbol"]
            if "price" in q:
                closes.setdefault(s, []).append(q["price"])
            if "volume" in q:
                volumes.setdefault(s, []).append(q["volume"])
        self.symbols = sorted(closes)
        if not self.symbols:
            raise ValueError("no quotes with a symbol and a price to draw subscriptions from")
        self.closes = closes
        self.median_volume = {s: median(v) for s, v in volumes.items()}
        self.all_volumes = sorted(v for vs in volumes.values() for v in vs)


def _eq(v: object) -> Constraint:
    return Constraint(Op.EQ, v)


def subscriptions(
    quotes: Sequence[Record], n: int, seed: int = 0, mix: Mix = Mix()
) -> list[RecordFilter]:
    """``n`` subscriptions drawn from the quotes with ``random.Random(seed)``; the same
    arguments always give the same list."""
    if n < 0:
        raise ValueError("the number of subscriptions is not negative")
    weights = [mix.quote, mix.interval, mix.prefix, mix.portfolio, mix.volume]
    if any(w < 0 for w in weights) or not sum(weights):
        raise ValueError(f"mix weights must be non-negative and not all zero: {mix}")
    stats = _Stats(quotes)
    rng = random.Random(seed)
    makers = [_quote_sub, _interval_sub, _prefix_sub, _portfolio_sub, _volume_sub]
    kinds = rng.choices(range(len(makers)), weights=weights, k=n)
    return [makers[k](rng, stats, mix) for k in kinds]


def _quote_sub(rng: random.Random, st: _Stats, mix: Mix) -> RecordFilter:
    return RecordFilter.of({"symbol": _eq(rng.choice(st.symbols))})


def _interval_sub(rng: random.Random, st: _Stats, mix: Mix) -> RecordFilter:
    s = rng.choice(st.symbols)
    p = rng.choice(st.closes[s])
    lo = round(p * (1 - rng.uniform(0, mix.spread)), 2)
    hi = round(p * (1 + rng.uniform(0, mix.spread)), 2)
    return RecordFilter.of({"symbol": _eq(s), "price": Constraint(Op.IN_RANGE, Interval(lo, hi))})


def _prefix_sub(rng: random.Random, st: _Stats, mix: Mix) -> RecordFilter:
    s = rng.choice(st.symbols)
    prefix = s[: rng.choice((1, 2))]
    p = round(rng.choice(st.closes[s]), 2)
    return RecordFilter.of({"symbol": Constraint(Op.PREFIX, prefix), "price": Constraint(Op.LE, p)})


def _portfolio_sub(rng: random.Random, st: _Stats, mix: Mix) -> RecordFilter:
    k = rng.randint(*mix.portfolio_size)
    chosen = rng.sample(st.symbols, min(k, len(st.symbols)))
    if len(chosen) == 1:
        return RecordFilter.of({"symbol": _eq(chosen[0])})
    return RecordFilter.of({"symbol": Constraint(Op.IN_SET, frozenset((STR, s) for s in chosen))})


def _volume_sub(rng: random.Random, st: _Stats, mix: Mix) -> RecordFilter:
    s = rng.choice(st.symbols)
    if rng.random() < mix.volume_single and s in st.median_volume:
        v = int(st.median_volume[s] * mix.volume_factor)
        return RecordFilter.of({"symbol": _eq(s), "volume": Constraint(Op.GE, v)})
    vols = st.all_volumes
    q = rng.uniform(*mix.volume_quantiles)
    v = vols[min(len(vols) - 1, int(q * len(vols)))] if vols else 0
    return RecordFilter.of({"volume": Constraint(Op.GE, v)})


def sample_events(quotes: Sequence[Record], n: int, seed: int = 0) -> list[Record]:
    """``n`` quote events drawn without replacement (all of them if n is larger)."""
    rng = random.Random(seed)
    idx = sorted(rng.sample(range(len(quotes)), min(n, len(quotes))))
    return [quotes[i] for i in idx]


__all__ = [
    "QUOTES_1YR",
    "QUOTES_5YR",
    "Mix",
    "iter_quotes",
    "load_quotes",
    "quotes_path",
    "sample_events",
    "subscriptions",
]
