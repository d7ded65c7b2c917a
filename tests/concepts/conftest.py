"""Fixtures of the concepts-model tests: the project ontology, an exchange-rate table with
validity periods, and models with and without rates."""

from __future__ import annotations

from pathlib import Path

import pytest
from pubsift.models.concepts import ConceptsModel, Ontology, RateTable, testing

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def data_dir(*parts: str) -> Path:
    """A folder of ../shared/data, or skip the test with the reason."""
    p = DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"real data not available: {p} is absent")
    return p


@pytest.fixture(scope="session")
def ontology() -> Ontology:
    return Ontology.default()


@pytest.fixture(scope="session")
def rates() -> RateTable:
    return testing.rate_table()


@pytest.fixture(scope="session")
def model(rates) -> ConceptsModel:
    return ConceptsModel(rates=rates, conversions={})


@pytest.fixture(scope="session")
def shared_data():
    """``shared_data("ontologies", "om2")``: a folder of ../shared/data, or skip."""
    return data_dir
