"""Fixtures of the concepts-model tests: the project ontology, an exchange-rate table with
validity periods, and models with and without rates."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from pubsift.models.concepts import ConceptsModel, Ontology, RatePeriod, RateTable

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def data_dir(*parts: str) -> Path:
    """A folder of ../shared/data, or skip the test with the reason."""
    p = DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"real data not available: {p} is absent")
    return p


def rate_table() -> RateTable:
    """Units of each currency per 1 USD; two validity periods each (the switch on
    2017-07-01), open-ended on both sides, so every currency is quoted at every time."""
    cut = datetime(2017, 7, 1)
    return RateTable("USD", {
        "EUR": [RatePeriod(None, cut, 0.90), RatePeriod(cut, None, 0.85)],
        "GBP": [RatePeriod(None, cut, 0.78), RatePeriod(cut, None, 0.75)],
        "JPY": [RatePeriod(None, cut, 112.0), RatePeriod(cut, None, 110.5)],
    })


@pytest.fixture(scope="session")
def ontology() -> Ontology:
    return Ontology.default()


@pytest.fixture(scope="session")
def rates() -> RateTable:
    return rate_table()


@pytest.fixture(scope="session")
def model(rates) -> ConceptsModel:
    return ConceptsModel(rates=rates, conversions={})
