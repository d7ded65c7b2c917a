"""The whole conformance kit as one base class (docs/conformance.md), in the style of pandas'
extension-array base tests: a model's test module subclasses it and provides the fixtures
(see :mod:`pubsift.core.conformance.plugin` and ``docs/conformance.md``)::

    class TestMyModel(ModelConformance):
        pass
"""

from __future__ import annotations

from pubsift.core.conformance.algebra import AlgebraTests
from pubsift.core.conformance.hostile import HostileInputTests
from pubsift.core.conformance.index import IndexTests
from pubsift.core.conformance.merging import MergeTests
from pubsift.core.conformance.soundness import SoundnessTests
from pubsift.core.conformance.wire import WireTests


class ModelConformance(
    SoundnessTests, AlgebraTests, MergeTests, WireTests, IndexTests, HostileInputTests
):
    """Every check of the kit; checks of capabilities the model does not claim are skipped."""
