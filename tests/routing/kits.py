"""Per-model test kits: a model with hypothesis strategies for its filters and events.

The toy model is always there; every built-in model found by ``pubsift.core.load_all()``
gets a kit from a small generator written for routing (few distinct values, so covering,
overlap, identity and merging happen often).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from pubsift.core import load_all
from pubsift.core.model import FilterModel

from .toy import ToyModel, toy_events, toy_filters


@dataclass(frozen=True)
class Kit:
    name: str
    model: FilterModel
    filters: st.SearchStrategy[Any]
    events: st.SearchStrategy[Any]

    def __repr__(self) -> str:
        return self.name


def _records(model: FilterModel) -> Kit:
    symbols = st.sampled_from(["A", "B", "C"])
    prices = st.integers(0, 12)

    @st.composite
    def texts(draw: st.DrawFn) -> str:
        parts = []
        shape = draw(st.integers(0, 3))
        if shape in (0, 2):
            parts.append(f'symbol = "{draw(symbols)}"')
        elif shape == 3:
            parts.append(
                "symbol in {"
                + ", ".join(f'"{s}"' for s in sorted(draw(st.sets(symbols, min_size=1))))
                + "}"
            )
        if shape != 0 or draw(st.booleans()):
            kind = draw(st.integers(0, 2))
            lo = draw(prices)
            if kind == 0:
                parts.append(f"price > {lo}")
            elif kind == 1:
                parts.append(f"price <= {lo}")
            else:
                parts.append(f"price in [{lo}, {lo + draw(st.sampled_from([0, 2, 5]))}]")
        return " and ".join(parts)

    events = st.builds(lambda s, p: model.parse_event({"symbol": s, "price": p}), symbols, prices)
    return Kit("records", model, texts().map(model.parse_filter), events)


def _xml(model: FilterModel) -> Kit:
    tags = st.sampled_from(["symbol", "price"])

    @st.composite
    def texts(draw: st.DrawFn) -> str:
        step = draw(st.sampled_from(["/quote/", "//", "/*/", "/quote["]))
        tag = draw(tags)
        end = "]" if step == "/quote[" else ""
        if tag == "price" and draw(st.booleans()):
            return f"{step}price[. > {draw(st.integers(0, 6))}]{end}"
        if tag == "symbol" and draw(st.booleans()):
            return f"{step}symbol[. = '{draw(st.sampled_from('AB'))}']{end}"
        return f"{step}{tag}{end}"

    @st.composite
    def docs(draw: st.DrawFn) -> Any:
        body = ""
        if draw(st.booleans()):
            body += f"<symbol>{draw(st.sampled_from('AB'))}</symbol>"
        if draw(st.booleans()):
            body += f"<price>{draw(st.integers(0, 7))}</price>"
        return model.parse_event(f"<quote>{body}</quote>")

    return Kit("xml", model, texts().map(model.parse_filter), docs())


def _concepts(model: FilterModel) -> Kit:
    from pubsift.models.concepts import testing as cs

    return Kit("concepts", model, cs.filters(model), cs.events(model))


_BUILDERS = {"records": _records, "xml": _xml, "concepts": _concepts}


def kits() -> list[Kit]:
    """The toy kit and one kit per loadable built-in model."""
    found = [Kit("toy", ToyModel(), toy_filters(), toy_events())]
    models, _broken = load_all()
    for name, build in _BUILDERS.items():
        if name in models:
            try:
                found.append(build(models[name]))
            except ImportError:
                continue
    return found
