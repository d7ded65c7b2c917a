"""The default filter index: a correct linear scan over the model's hooks.

It lets a new model route on day one; built-in models ship faster indexes whose answers
must equal this one's (the conformance kit checks that). :class:`LinearIndex` is defined
in :mod:`pubsift.core.model` beside :class:`~pubsift.core.model.FilterIndex`, so that
:meth:`FilterModel.new_index <pubsift.core.model.FilterModel.new_index>` makes it without
importing back into a module that imports the model (docs/packages.md, "Layers"); it is
imported from here and from :mod:`pubsift.core`.
"""

from __future__ import annotations

from pubsift.core.model import LinearIndex

__all__ = ["LinearIndex"]
