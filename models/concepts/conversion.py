"""Conversion functions between contexts (Cilia et al. 2004, §4.1: "two kinds of conversion
functions can be distinguished. The first are those attached to the concept definition. The
second are those defined in a function conversion manager (because, for instance, they may
change over time, e.g. currency conversion)").

* Attached to concepts, fixed in time: units (pint, :mod:`~pubsift.models.concepts.units`),
  scale factors, date formats to and from ISO 8601.
* Held by the :class:`ConversionManager`, changing over time: currencies, through a
  :class:`RateTable` of rates against one base currency with validity periods, applied at
  the event's time; and user-defined context properties registered through the entry-point
  group ``pubsift.conversions`` (:class:`PropertyConversion`).

Impossible conversions (kilograms to US dollars, a unit on a date, an unknown currency) are
found by :meth:`ConversionManager.check` when a subscription is made and raise
:class:`~pubsift.core.errors.ConversionError`; at match time a value that cannot be converted
(no rate in force at the event's time) raises :class:`NotConvertible`, which makes the
constraint false, exactly like a value of the wrong type in the records model.
"""

from __future__ import annotations

import bisect
import csv
import io
import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pubsift.core.errors import ConversionError, PluginError
from pubsift.models.concepts.context import Context
from pubsift.models.concepts.ontology import DATE, MONEY, QUANTITY
from pubsift.models.concepts.units import same_dimension, unit_converter

GROUP = "pubsift.conversions"

CACHE_SIZE = 4096
"""Converters a :class:`ConversionManager` keeps (oldest dropped first)."""


class NotConvertible(ConversionError):
    """A value cannot be converted at match time (e.g. no exchange rate in force)."""


# -- time ---------------------------------------------------------------------------------
def parse_time(text: Any) -> datetime:
    """An ISO 8601 date or date-time as a naive UTC datetime (aware times are converted)."""
    if isinstance(text, datetime):
        t = text
    elif isinstance(text, date):
        t = datetime(text.year, text.month, text.day)
    elif isinstance(text, str):
        if len(text) > 64:
            raise ValueError(f"a time is an ISO 8601 string, not {len(text)} characters")
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    else:
        raise ValueError(f"a time is an ISO 8601 string, not {type(text).__name__}")
    if t.tzinfo is not None:
        try:
            t = t.astimezone(UTC).replace(tzinfo=None)
        except OverflowError:
            raise ValueError(f"{t.isoformat()} is out of range in UTC (years 1-9999)") from None
    return t


# -- currencies ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RatePeriod:
    """``rate`` units of a currency buy one unit of the base currency during
    [start, end) (``None`` = unbounded)."""

    start: datetime | None
    end: datetime | None
    rate: float


class RateTable:
    """Exchange rates of several currencies against one base currency, each with validity
    periods. Conversions go through the base, so they are consistent (rate(A→C) =
    rate(A→B)·rate(B→C) at every time). The table is immutable: the covering rule for
    exchange rates (every rate in force) relies on it; new rates make a new table and a new
    model, and routing tables are rebuilt from the subscriptions."""

    def __init__(self, base: str, rates: Mapping[str, Iterable[RatePeriod]]) -> None:
        Context(currency=base)  # validates the code
        self.base = base
        self._periods: dict[str, tuple[RatePeriod, ...]] = {}
        for cur, periods in rates.items():
            Context(currency=cur)  # validates the code
            ps = tuple(sorted(periods, key=lambda p: (p.start is not None, p.start)))
            for p in ps:
                if not (p.rate > 0 and math.isfinite(p.rate)):
                    raise ConversionError(f"rate of {cur} must be positive and finite: {p}")
                if p.start is not None and p.end is not None and p.end <= p.start:
                    raise ConversionError(f"empty validity period for {cur}: {p}")
            for a, b in itertools.pairwise(ps):
                if a.end is None or b.start is None or b.start < a.end:
                    raise ConversionError(f"overlapping validity periods for {cur}: {a}, {b}")
            self._periods[cur] = ps
        self._starts = {c: [p.start for p in ps] for c, ps in self._periods.items()}

    @classmethod
    def from_csv(cls, source: str | Path, base: str) -> RateTable:
        """Rows ``currency,rate,valid_from,valid_to`` (ISO dates; empty = unbounded; the
        period is [valid_from, valid_to)); ``rate`` units of the currency per one ``base``."""
        try:
            text = (
                Path(source).read_text(encoding="utf-8")
                if isinstance(source, Path)
                or (
                    isinstance(source, str)
                    and "\n" not in source
                    and "\0" not in source
                    and Path(source).exists()
                )
                else source
            )
        except (OSError, UnicodeDecodeError) as exc:
            raise ConversionError(f"cannot read rate table {source}: {exc}") from None
        rates: dict[str, list[RatePeriod]] = {}
        reader = csv.DictReader(io.StringIO(text))
        try:
            header = set(reader.fieldnames or ())
        except csv.Error as exc:
            raise ConversionError(f"rate table line 1: {exc}") from None
        if not {"currency", "rate"} <= header:
            raise ConversionError(
                f"{_shown(source)} is neither a readable file nor CSV "
                "text with the columns currency,rate"
            )
        try:
            for _i, row in enumerate(reader, start=2):
                cur, rate = row.get("currency"), row.get("rate")
                if not isinstance(cur, str) or not isinstance(rate, str):
                    raise ValueError("a row has currency and rate")
                p = RatePeriod(
                    parse_time(row["valid_from"]) if row.get("valid_from") else None,
                    parse_time(row["valid_to"]) if row.get("valid_to") else None,
                    float(rate),
                )
                rates.setdefault(cur.strip(), []).append(p)
        except (KeyError, ValueError, TypeError, csv.Error) as exc:
            raise ConversionError(f"rate table line {reader.line_num}: {exc}") from None
        return cls(base, rates)

    @property
    def currencies(self) -> frozenset[str]:
        return frozenset(self._periods) | {self.base}

    def quote(self, currency: str, at: datetime) -> float | None:
        """Units of ``currency`` per one base unit at time ``at`` (None: no rate in force)."""
        if currency == self.base:
            return 1.0
        periods = self._periods.get(currency)
        if not periods:
            return None
        i = (
            bisect.bisect_right(
                self._starts[currency], at, key=lambda s: datetime.min if s is None else s
            )
            - 1
        )
        if i < 0:
            return None
        p = periods[i]
        if p.end is not None and at >= p.end:
            return None
        return p.rate

    def factor(self, src: str, dst: str, at: datetime) -> float | None:
        """Multiply an amount in ``src`` by this to get ``dst`` at time ``at``."""
        if src == dst:
            return 1.0
        qs, qd = self.quote(src, at), self.quote(dst, at)
        if qs is None or qd is None:
            return None
        return qd / qs

    def rates_in_force(self, src: str, dst: str) -> tuple[frozenset[float], bool]:
        """Every factor src→dst in force at some time, and whether a factor is in force at
        every time (both currencies quoted without gaps from -∞ to +∞)."""
        if src == dst:
            return frozenset({1.0}), True
        cuts: set[datetime] = set()
        for c in (src, dst):
            for p in self._periods.get(c, ()):
                cuts.update(t for t in (p.start, p.end) if t is not None)
        points = sorted(cuts)
        # one probe time inside every elementary interval between cut points
        probes = [datetime.min] if not points else [datetime.min] + points
        found, total = set(), True
        for t in probes:
            f = self.factor(src, dst, t)
            if f is None:
                total = False
            else:
                found.add(f)
        return frozenset(found), total and bool(found)


def _shown(source: Any) -> str:
    r = repr(str(source))
    return r if len(r) <= 60 else r[:57] + "..."


# -- user-defined conversions -------------------------------------------------------------
@runtime_checkable
class PropertyConversion(Protocol):
    """A conversion for a user-defined context property, registered under the entry-point
    group ``pubsift.conversions`` (the entry point names a class or an instance).

    ``convert`` must be strictly increasing in ``value`` for fixed values of the property
    (filters' order constraints are normalized through it). ``time_varying`` conversions
    are handled like exchange rates: never used to claim covering or disjointness.
    ``matching_value`` is the property's value in the matching context."""

    property: str
    time_varying: bool
    matching_value: Any

    def check(self, src: Any, dst: Any) -> None:
        """Raise ConversionError if values with ``src`` can never be converted to ``dst``."""

    def convert(self, value: Any, src: Any, dst: Any, at: datetime | None) -> Any:
        """The value in property value ``dst``; raise NotConvertible if not possible now."""


def load_conversions() -> dict[str, PropertyConversion]:
    """The conversions registered under ``pubsift.conversions`` (broken ones raise
    :class:`~pubsift.core.errors.PluginError`)."""
    out: dict[str, PropertyConversion] = {}
    for ep in entry_points(group=GROUP):
        try:
            obj = ep.load()
            conv = obj() if isinstance(obj, type) else obj
        except Exception as exc:
            raise PluginError(ep.name, ep.value, f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(conv, PropertyConversion):
            raise PluginError(ep.name, ep.value, "is not a PropertyConversion")
        out[conv.property] = conv
    return out


# -- the manager --------------------------------------------------------------------------
Converter = Callable[[Any, "datetime | None"], Any]


def _property_step(conv: PropertyConversion, a: Any, b: Any) -> Converter:
    """The step converting a value's property ``a`` into ``b`` with ``conv``."""
    return lambda v, at: conv.convert(v, a, b, at)


class ConversionManager:
    """Builds and checks conversions between contexts for a kind of value.

    ``rates``: the exchange-rate table (None: only same-currency comparisons);
    ``conversions``: user-defined property conversions (default: the entry-point group)."""

    def __init__(
        self,
        rates: RateTable | None = None,
        conversions: Mapping[str, PropertyConversion] | None = None,
    ) -> None:
        self.rates = rates
        self.conversions = dict(load_conversions() if conversions is None else conversions)
        self._cache: dict[tuple, Converter] = {}
        self._rate_cache: dict[tuple[str, str], tuple[frozenset[float], bool]] = {}

    # -- subscription-time checks -----------------------------------------------------
    def check(
        self, concept_name: str, kind: str, dimension: str | None, src: Context, dst: Context
    ) -> None:
        """Raise :class:`ConversionError` if values of this concept can never be converted
        from ``src`` to ``dst`` (checked when a subscription is made)."""
        for ctx in (src, dst):
            if ctx.unit is not None and kind != QUANTITY:
                raise ConversionError(
                    f"{concept_name} is a {kind} value; it has no unit (got {ctx.unit})"
                )
            if ctx.currency is not None and kind != MONEY:
                raise ConversionError(
                    f"{concept_name} is a {kind} value, not an amount of "
                    f"money; it cannot be compared with {ctx.currency}"
                )
            if ctx.date_format is not None and kind != DATE:
                raise ConversionError(f"{concept_name} is a {kind} value, not a date")
            if (
                kind == QUANTITY
                and ctx.unit is not None
                and dimension is not None
                and not same_dimension(dimension, ctx.unit)
            ):
                raise ConversionError(
                    f"{concept_name} is measured in {dimension}; {ctx.unit} is not"
                )
            if (
                kind == MONEY
                and ctx.currency is not None
                and self.rates is not None
                and ctx.currency not in self.rates.currencies
            ):
                known = ", ".join(sorted(self.rates.currencies))
                raise ConversionError(
                    f"no exchange rates for {ctx.currency} (the conversion manager knows {known})"
                )
        if kind == QUANTITY and src.unit and dst.unit:
            unit_converter(src.unit, dst.unit)
        if (
            kind == MONEY
            and src.currency
            and dst.currency
            and src.currency != dst.currency
            and self.rates is None
        ):
            raise ConversionError(
                f"cannot convert {src.currency} to {dst.currency}: "
                "the conversion manager has no exchange rates"
            )
        for prop, a in src.extra:
            b = dst.get(prop)
            if b is not None and a != b:
                self._property(prop).check(a, b)

    def _property(self, prop: str) -> PropertyConversion:
        try:
            return self.conversions[prop]
        except KeyError:
            raise ConversionError(
                f"no conversion registered for context property {prop!r} "
                f"(entry-point group {GROUP!r})"
            ) from None

    # -- match-time conversion --------------------------------------------------------
    def converter(self, kind: str, src: Context, dst: Context) -> Converter:
        """A function ``(value, time) -> value`` from ``src`` to ``dst``. Properties ``dst``
        leaves unset are left as they are (``dst`` describes the matching context)."""
        key = (kind, src, dst)
        fn = self._cache.get(key)
        if fn is None:
            fn = self._build(kind, src, dst)
            if len(self._cache) >= CACHE_SIZE:  # events bring fresh contexts: stay bounded
                del self._cache[next(iter(self._cache))]
            self._cache[key] = fn
        return fn

    def convert(
        self, kind: str, value: Any, src: Context, dst: Context, at: datetime | None = None
    ) -> Any:
        return self.converter(kind, src, dst)(value, at)

    def _build(self, kind: str, src: Context, dst: Context) -> Converter:
        steps: list[Converter] = []
        if kind in (QUANTITY, MONEY) and src.scale != 1:
            s = float(src.scale)
            steps.append(lambda v, at: float(v) * s)
        if kind == QUANTITY and dst.unit is not None and src.unit != dst.unit:
            if src.unit is None:
                raise NotConvertible(f"value has no unit; {dst.unit} expected")
            f = unit_converter(src.unit, dst.unit)
            steps.append(lambda v, at: f(float(v)))
        if kind == MONEY and dst.currency is not None and src.currency != dst.currency:
            steps.append(self._currency_step(src.currency, dst.currency))
        for prop, b in dst.extra:
            a = src.get(prop)
            if a is not None and a != b:
                steps.append(_property_step(self._property(prop), a, b))
        if kind in (QUANTITY, MONEY) and dst.scale != 1:
            d = float(dst.scale)
            steps.append(lambda v, at: float(v) / d)
        if kind == DATE:
            steps.insert(0, _date_step(src.date_format, dst.date_format))
        if not steps:
            return _keep
        if len(steps) == 1:
            return steps[0]

        def chain(v: Any, at: datetime | None) -> Any:
            for step in steps:
                v = step(v, at)
            return v

        return chain

    def _currency_step(self, src: str | None, dst: str) -> Converter:
        rates = self.rates
        if src is None:
            raise NotConvertible(f"amount has no currency; {dst} expected")
        if rates is None:
            raise NotConvertible(f"no exchange rates to convert {src} to {dst}")

        def step(v: Any, at: datetime | None) -> Any:
            if at is None:
                raise NotConvertible(f"the event has no time: cannot convert {src} to {dst}")
            f = rates.factor(src, dst, at)
            if f is None:
                raise NotConvertible(f"no {src}/{dst} rate in force at {at.isoformat()}")
            return float(v) * f

        return step

    def rates_in_force(self, src: str, dst: str) -> tuple[frozenset[float], bool]:
        """See :meth:`RateTable.rates_in_force` (cached)."""
        key = (src, dst)
        if key not in self._rate_cache:
            self._rate_cache[key] = (
                self.rates.rates_in_force(src, dst)
                if self.rates
                else (frozenset() if src != dst else frozenset({1.0}), src == dst)
            )
        return self._rate_cache[key]

    def is_time_varying(self, prop: str) -> bool:
        return prop == "currency" or (
            prop in self.conversions and self.conversions[prop].time_varying
        )


def _keep(v: Any, at: datetime | None) -> Any:
    return v


def _date_step(src_fmt: str | None, dst_fmt: str | None) -> Converter:
    def step(v: Any, at: datetime | None) -> Any:
        d = parse_date(v, src_fmt)
        return format_date(d, dst_fmt)

    return step


def parse_date(v: Any, fmt: str | None) -> datetime:
    """A date value written in ``fmt`` (None: ISO 8601) as a datetime."""
    if not isinstance(v, str):
        raise NotConvertible(f"a date is a string, not {type(v).__name__}")
    if len(v) > 64:
        raise NotConvertible(f"a date is a short string, not {len(v)} characters")
    try:
        return parse_time(v) if fmt is None else datetime.strptime(v, fmt)
    except (ValueError, UnicodeError, OverflowError) as exc:
        raise NotConvertible(f"{v!r} is not a date in format {fmt or 'ISO 8601'}: {exc}") from None


def format_date(d: datetime, fmt: str | None) -> str:
    """ISO 8601 (``YYYY-MM-DD`` when there is no time of day) or ``strftime(fmt)``."""
    if fmt is not None:
        try:
            return d.strftime(fmt)
        except (ValueError, UnicodeError) as exc:
            raise NotConvertible(f"cannot write {d.isoformat()} in format {fmt!r}: {exc}") from None
    if d.hour == d.minute == d.second == d.microsecond == 0:
        return d.date().isoformat()
    return d.isoformat()


__all__ = [
    "ConversionManager",
    "Converter",
    "NotConvertible",
    "PropertyConversion",
    "RatePeriod",
    "RateTable",
    "format_date",
    "load_conversions",
    "parse_date",
    "parse_time",
]
