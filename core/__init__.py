"""pubsift.core — the model-agnostic routing core and the filter-model plug-in contract.

Contract: :class:`FilterModel`, :class:`FilterIndex`, :class:`LinearIndex`, the errors, and
model discovery (:func:`load_model`). Routing (Mühl ch. 3): :class:`Broker`, the strategies
in :data:`STRATEGIES`, :class:`Leasing`, the deterministic :class:`Network` simulation, the
topology builders in :mod:`pubsift.core.topology` and the delivery oracle
:mod:`pubsift.core.oracle`.
"""

from pubsift.core.broker import Broker
from pubsift.core.errors import (
    ConversionError,
    EventError,
    FilterSyntaxError,
    PluginError,
    PubsiftError,
    UnknownModelError,
)
from pubsift.core.index import LinearIndex
from pubsift.core.leasing import Leasing
from pubsift.core.model import (
    CAPABILITIES,
    Event,
    Filter,
    FilterIndex,
    FilterModel,
    SubscriberView,
)
from pubsift.core.network import Network
from pubsift.core.registry import installed_models, load_all, load_model
from pubsift.core.strategies import STRATEGIES

__all__ = [
    "CAPABILITIES",
    "STRATEGIES",
    "Broker",
    "ConversionError",
    "Event",
    "EventError",
    "Filter",
    "FilterIndex",
    "FilterModel",
    "FilterSyntaxError",
    "Leasing",
    "LinearIndex",
    "Network",
    "PluginError",
    "PubsiftError",
    "SubscriberView",
    "UnknownModelError",
    "installed_models",
    "load_all",
    "load_model",
]
