"""hypothesis strategies for the concepts model: filters written in random contexts (units,
currencies, date formats), events published in random contexts (units, currencies, scale
factors, date formats, times on both sides of an exchange-rate change), and events built to
match a given filter — the fixtures of the conformance kit (docs/conformance.md), usable by any
test.

Constants come from small grids so that covering, overlap and merging across contexts
turn up often (``FinalPrice < 100 EUR`` covers ``FinalPrice < 100 USD`` at 0.85-0.90 EUR
per USD). Filters are made through ``model.parse_filter`` from their text form, so they are
exactly the filters the model can be given.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any

from hypothesis import strategies as st
from pubsift.models.concepts.conversion import RatePeriod, RateTable
from pubsift.models.concepts.filters import ConceptFilter
from pubsift.models.concepts.ontology import DATE, MONEY, QUANTITY
from pubsift.models.constraints import ABSENT, Op

FILTER_CONCEPTS = ("Event", "Quote", "StockQuote", "BondQuote", "Order")
EVENT_CONCEPTS = ("Quote", "StockQuote", "BondQuote", "Order")
CURRENCIES = ("USD", "EUR", "GBP", "JPY")
UNITS = ("kg", "lb", "g", "t", "oz")
DATE_FORMATS = (None, "%d.%m.%Y", "%m/%d/%Y")
TIMES = ("2017-06-30", "2017-07-01", "2017-07-03T12:00:00")
DATES = ("2017-05-31", "2017-06-01", "2017-06-02", "2017-06-30", "2017-07-01")
SYMBOLS = ("A", "AAL", "AAPL", "IBM")
PRICES = (0, 45.5, 50, 88, 90, 99, 100, 110.5, 120, 150, 10000)
WEIGHTS = (0, 0.5, 1, 1.3607771100000001, 2.5, 3, 1000, 3000)
PRICE_CONSTS = (0, 50, 90, 100, 110.5)
WEIGHT_CONSTS = (0, 1, 2.5, 3, 1000)


def rate_table() -> RateTable:
    """The rates the strategies assume: units of each currency per 1 USD, two validity
    periods each (the switch on 2017-07-01), open-ended on both sides, so every currency is
    quoted at every time."""
    cut = datetime(2017, 7, 1)
    return RateTable(
        "USD",
        {
            "EUR": [RatePeriod(None, cut, 0.90), RatePeriod(cut, None, 0.85)],
            "GBP": [RatePeriod(None, cut, 0.78), RatePeriod(cut, None, 0.75)],
            "JPY": [RatePeriod(None, cut, 112.0), RatePeriod(cut, None, 110.5)],
        },
    )


MEMBERS = {"FinalPrice": MONEY, "NetWeight": QUANTITY, "DateOfIssue": DATE, "Symbol": "plain"}


def _const(kind: str, draw) -> str:
    if kind == MONEY:
        return f"{draw(st.sampled_from(PRICE_CONSTS))} {draw(st.sampled_from(CURRENCIES))}"
    if kind == QUANTITY:
        return f"{draw(st.sampled_from(WEIGHT_CONSTS))} {draw(st.sampled_from(UNITS))}"
    if kind == DATE:
        return draw(st.sampled_from(DATES))
    return '"' + draw(st.sampled_from(SYMBOLS)) + '"'


@st.composite
def _condition(draw, member: str) -> str:
    kind = MEMBERS[member]
    op = draw(
        st.sampled_from(
            ("<", "<=", ">", ">=", "=", "!=", "between", "in", "not in", "exists", "not exists")
        )
    )
    if op in ("exists", "not exists"):
        return f"{member} {op}"
    grid: tuple[Any, ...]
    if op == "between":
        if kind in (MONEY, QUANTITY):
            unit = draw(st.sampled_from(CURRENCIES if kind == MONEY else UNITS))
            grid = PRICE_CONSTS if kind == MONEY else WEIGHT_CONSTS
        else:
            unit, grid = "", (DATES if kind == DATE else SYMBOLS)
        a, b = sorted(draw(st.lists(st.sampled_from(grid), min_size=2, max_size=2)))
        if kind == "plain":
            a, b = f'"{a}"', f'"{b}"'
        return f"{member} between {a} {unit} and {b} {unit}".replace("  ", " ")
    if op in ("in", "not in"):
        if kind in (MONEY, QUANTITY):
            unit = draw(st.sampled_from(CURRENCIES if kind == MONEY else UNITS))
            grid = PRICE_CONSTS if kind == MONEY else WEIGHT_CONSTS
            items = draw(st.lists(st.sampled_from(grid), min_size=1, max_size=3, unique=True))
            return f"{member} {op} {{{', '.join(map(str, items))}}} {unit}"
        grid = DATES if kind == DATE else tuple(f'"{s}"' for s in SYMBOLS)
        items = draw(st.lists(st.sampled_from(grid), min_size=1, max_size=3, unique=True))
        return f"{member} {op} {{{', '.join(items)}}}"
    return f"{member} {op} {_const(kind, draw)}"


@st.composite
def filter_texts(draw) -> str:
    concept = draw(st.sampled_from(FILTER_CONCEPTS))
    members = draw(st.lists(st.sampled_from(tuple(MEMBERS)), max_size=3, unique=True))
    conds = [draw(_condition(m)) for m in members]
    return concept + (" where " + " and ".join(conds) if conds else "")


def filters(model) -> st.SearchStrategy[ConceptFilter]:
    """Filters of ``model`` (a ConceptsModel over the project ontology with rates in
    USD, EUR, GBP, JPY)."""
    return filter_texts().map(model.parse_filter)


@st.composite
def event_json(draw, concept: str | None = None, fixed: dict | None = None) -> dict:
    """The JSON form of an event; ``fixed`` maps member names to (value, context) pairs
    that replace the random ones (``ABSENT`` drops the member)."""
    fixed = fixed or {}
    value: dict[str, Any] = {}
    for member, kind in MEMBERS.items():
        if member in fixed:
            v, ctx = fixed[member]
            if v is not ABSENT:
                value[member] = {"value": v, "context": ctx}
            continue
        if not draw(st.booleans()) and draw(st.booleans()):
            continue  # one member in four is missing
        scale = draw(st.sampled_from((1, 1, 1000)))
        if kind == MONEY:
            v = draw(st.sampled_from(PRICES)) / scale
            ctx = {"currency": draw(st.sampled_from(CURRENCIES)), "scale": scale}
        elif kind == QUANTITY:
            v = draw(st.sampled_from(WEIGHTS)) / scale
            ctx = {"unit": draw(st.sampled_from(UNITS)), "scale": scale}
        elif kind == DATE:
            fmt = draw(st.sampled_from(DATE_FORMATS))
            d = draw(st.sampled_from(DATES))
            if fmt is not None:
                y, m, dd = d.split("-")
                d = f"{dd}.{m}.{y}" if fmt == "%d.%m.%Y" else f"{m}/{dd}/{y}"
            v, ctx = d, ({"date_format": fmt} if fmt else {})
        else:
            v, ctx = draw(st.sampled_from(SYMBOLS + ("", "ZZZ"))), {}
        value[member] = {"value": v, "context": ctx}
    return {
        "concept": concept or draw(st.sampled_from(EVENT_CONCEPTS)),
        "time": draw(st.sampled_from(TIMES)),
        "value": value,
    }


def events(model) -> st.SearchStrategy:
    return event_json().map(model.parse_event)


def matching_event(model):
    """``f -> strategy of events matching f`` (None when f has two clauses on one member,
    which this builder does not solve)."""
    onto = model.ontology

    def build(f: ConceptFilter):
        paths = [c.path for c in f.clauses]
        if len(paths) != len(set(paths)) or any(len(p) != 1 for p in paths):
            return None
        concepts = [c for c in EVENT_CONCEPTS if onto.is_a(onto.resolve(c), f.concept)]
        if not concepts:
            return None
        choices: dict[str, list] = {}
        for c in f.clauses:
            member = onto.name(c.path[0])
            if member not in MEMBERS:
                return None
            target = c.target.to_json()
            if c.kind == MONEY:
                target.setdefault("currency", "USD")
            elif c.kind == QUANTITY:
                target.setdefault("unit", "kilogram")
            if c.constraint.op is Op.NOT_EXISTS:
                choices[member] = [(ABSENT, {})]
                continue
            grid = {
                MONEY: PRICES + PRICE_CONSTS,
                QUANTITY: WEIGHTS + WEIGHT_CONSTS,
                DATE: DATES,
                "plain": SYMBOLS,
            }[c.kind]
            ok = [
                v
                for v in grid + _operands(c.constraint)
                if _valid(v, c.kind) and c.constraint.matches(v)
            ]
            if not ok:
                return None
            choices[member] = [(v, target) for v in ok]
        fixed = st.fixed_dictionaries({m: st.sampled_from(vs) for m, vs in choices.items()})
        return (
            st.tuples(st.sampled_from(concepts), fixed)
            .flatmap(lambda cf: event_json(cf[0], cf[1]))
            .map(model.parse_event)
        )

    return build


def _operands(c) -> tuple:
    x = c.operand
    if c.op in (Op.IN_SET, Op.NOT_IN_SET):
        return tuple(v for _, v in x)
    if c.op in (Op.IN_RANGE, Op.NOT_IN_RANGE):
        return (x.lo, x.hi)
    if x is None or (isinstance(x, (int, float, str)) and not isinstance(x, bool)):
        return () if x is None else (x,)
    return ()


def _valid(v: Any, kind: str) -> bool:
    """Whether ``v`` is a value an event of this kind may carry (operands of merged
    filters can be bounds like ``""`` or infinities)."""
    if kind in (MONEY, QUANTITY):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    if kind == DATE:
        return isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v) is not None
    return v is None or isinstance(v, (str, int, float, bool))
