"""Discovery of filter models through the entry-point group pubsift.models."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest
from pubsift.core import registry
from pubsift.core.errors import PluginError, UnknownModelError
from pubsift.core.index import LinearIndex
from pubsift.core.model import FilterModel
from pubsift.models.records import RecordsModel


class NotAModel:
    pass


class Exploding(RecordsModel):
    def __init__(self):
        raise RuntimeError("missing licence key")


class Misnamed(RecordsModel):
    name = "something-else"


def _fake(monkeypatch, **targets):
    eps = {n: EntryPoint(name=n, value=v, group=registry.GROUP) for n, v in targets.items()}
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)
    registry.load_model.cache_clear()
    yield
    registry.load_model.cache_clear()


@pytest.fixture
def fake_plugins(monkeypatch):
    gen = _fake(
        monkeypatch,
        records="pubsift.models.records:RecordsModel",
        missing="no_such_package.models:Model",
        notamodel=f"{__name__}:NotAModel",
        exploding=f"{__name__}:Exploding",
        misnamed=f"{__name__}:Misnamed",
    )
    next(gen)
    yield
    next(gen, None)


def test_builtin_models_register_through_entry_points():
    names = {m.name for m in registry.installed_models()}
    assert {"records", "xml", "concepts"} <= names
    records = registry.load_model("records")
    assert isinstance(records, RecordsModel) and records.name == "records"
    assert registry.load_model("records") is records  # one shared instance per name
    info = {m.name: m for m in registry.installed_models()}["records"]
    assert info.distribution == "pubsift" and info.version


def test_unknown_model_names_the_installed_ones():
    with pytest.raises(UnknownModelError) as exc:
        registry.load_model("no-such-model")
    assert "records" in str(exc.value) and "pubsift.models" in str(exc.value)


@pytest.mark.parametrize(
    "name, reason",
    [
        ("missing", "cannot be imported: ModuleNotFoundError"),
        ("notamodel", "is a NotAModel, not a pubsift.core.FilterModel"),
        ("exploding", "cannot be instantiated: RuntimeError: missing licence key"),
        ("misnamed", "calls itself 'something-else', registered as 'misnamed'"),
    ],
)
def test_broken_plugin_is_reported_clearly(fake_plugins, name, reason):
    with pytest.raises(PluginError) as exc:
        registry.load_model(name)
    assert exc.value.name == name
    assert reason in str(exc.value)
    assert f"plug-in {name!r}" in str(exc.value)


def test_broken_plugins_do_not_hide_the_others(fake_plugins):
    models, broken = registry.load_all()
    assert set(models) == {"records"}
    assert set(broken) == {"missing", "notamodel", "exploding", "misnamed"}


def test_default_index_is_a_linear_scan():
    class Minimal(FilterModel):
        name = "minimal"

        def parse_filter(self, spec):
            return int(spec)

        def parse_event(self, raw):
            return int(raw)

        def matches(self, f, e):
            return e >= f

        def covers(self, f, g):
            return f <= g

        def dump_filter(self, f):
            return f

        def load_filter(self, obj):
            return obj

        def dump_event(self, e):
            return e

        def load_event(self, obj):
            return obj

    m = Minimal()
    idx = m.new_index()
    assert isinstance(idx, LinearIndex)
    for f in (1, 5, 9):
        idx.add(f, f"k{f}")
    idx.add(5, "k5")  # a present pair again is a no-op
    assert len(idx) == 3
    assert idx.match(6) == {"k1", "k5"}
    assert idx.covering(5) == {"k1", "k5"} and idx.covered_by(5) == {"k5", "k9"}
    assert idx.identical(5) == {"k5"}  # default: mutual covering
    assert idx.overlapping(9) == {"k1", "k5", "k9"}  # default overlaps: always True (sound)
    assert idx.merge_candidates(5) == set()  # default merge: None
    idx.remove(5, "k5")
    with pytest.raises(KeyError):
        idx.remove(5, "k5")
