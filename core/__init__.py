"""pubsift.core — the model-agnostic routing core and the filter-model plug-in contract."""
from pubsift.core.errors import (ConversionError, EventError, FilterSyntaxError, PluginError,
                                 PubsiftError, UnknownModelError)
from pubsift.core.index import LinearIndex
from pubsift.core.model import CAPABILITIES, Event, Filter, FilterIndex, FilterModel
from pubsift.core.registry import installed_models, load_all, load_model

__all__ = [
    "CAPABILITIES", "ConversionError", "Event", "EventError", "Filter", "FilterIndex",
    "FilterModel", "FilterSyntaxError", "LinearIndex", "PluginError", "PubsiftError",
    "UnknownModelError", "installed_models", "load_all", "load_model",
]
