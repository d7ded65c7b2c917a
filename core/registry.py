"""Discovery of filter models through the entry-point group ``pubsift.models``.

Built-in models register the same way a third party does (pyproject
``[project.entry-points."pubsift.models"]``). A broken plug-in is reported with a clear
:class:`~pubsift.core.errors.PluginError` and does not hide the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib.metadata import EntryPoint, entry_points

from pubsift.core.errors import PluginError, UnknownModelError
from pubsift.core.model import FilterModel

GROUP = "pubsift.models"


@dataclass(frozen=True)
class ModelInfo:
    """What is known about an installed model without loading it."""

    name: str
    target: str
    distribution: str | None
    version: str | None


def _entry_points() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=GROUP):
        found.setdefault(ep.name, ep)
    return found


def installed_models() -> list[ModelInfo]:
    """All models registered under ``pubsift.models``, sorted by name (not loaded)."""
    infos = []
    for name, ep in sorted(_entry_points().items()):
        dist = ep.dist
        infos.append(
            ModelInfo(name, ep.value, dist.name if dist else None, dist.version if dist else None)
        )
    return infos


def _instantiate(name: str, ep: EntryPoint) -> FilterModel:
    try:
        obj = ep.load()
    except Exception as exc:
        raise PluginError(
            name, ep.value, f"cannot be imported: {type(exc).__name__}: {exc}"
        ) from exc
    try:
        model = obj() if isinstance(obj, type) else obj
    except Exception as exc:
        raise PluginError(
            name, ep.value, f"cannot be instantiated: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(model, FilterModel):
        raise PluginError(
            name, ep.value, f"is a {type(model).__name__}, not a pubsift.core.FilterModel"
        )
    if not model.name:
        model.name = name
    elif model.name != name:
        raise PluginError(name, ep.value, f"calls itself {model.name!r}, registered as {name!r}")
    return model


@cache
def load_model(name: str) -> FilterModel:
    """The installed model registered as ``name`` (one shared instance per name)."""
    eps = _entry_points()
    if name not in eps:
        raise UnknownModelError(name, list(eps))
    return _instantiate(name, eps[name])


def load_all() -> tuple[dict[str, FilterModel], dict[str, PluginError]]:
    """Load every installed model; broken plug-ins are returned apart, not raised."""
    models: dict[str, FilterModel] = {}
    broken: dict[str, PluginError] = {}
    for name in _entry_points():
        try:
            models[name] = load_model(name)
        except PluginError as exc:
            broken[name] = exc
    return models, broken
