"""pubsift's conformance kit (docs/conformance.md): reusable pytest base classes that check a
filter model against the plug-in contract of §2.1.

A model package subclasses :class:`ModelConformance` (or the parts it wants:
:class:`SoundnessTests`, :class:`AlgebraTests`, :class:`MergeTests`, :class:`WireTests`,
:class:`IndexTests`, :class:`HostileInputTests`) in a test module and provides the fixtures ``model``,
``filter_strategy``, ``event_strategy`` and ``matching_event`` (see ``docs/conformance.md``).
The pytest plugin :mod:`pubsift.core.conformance.plugin` supplies the defaults.

This package imports hypothesis only when a base class is first used, so that the plugin
stays cheap in every pytest run and loads where hypothesis is not installed (the kit's
dependencies are the ``kit`` extra: ``pip install 'pubsift[kit]'``).
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "ModelConformance": "pubsift.core.conformance.base",
    "SoundnessTests": "pubsift.core.conformance.soundness",
    "AlgebraTests": "pubsift.core.conformance.algebra",
    "MergeTests": "pubsift.core.conformance.merging",
    "WireTests": "pubsift.core.conformance.wire",
    "IndexTests": "pubsift.core.conformance.index",
    "HostileInputTests": "pubsift.core.conformance.hostile",
}

# spelled out (the keys of _LAZY) so that tools that read __all__ statically see the names
__all__ = [
    "AlgebraTests",
    "HostileInputTests",
    "IndexTests",
    "MergeTests",
    "ModelConformance",
    "SoundnessTests",
    "WireTests",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        try:
            module = importlib.import_module(_LAZY[name])
        except ModuleNotFoundError as exc:
            if exc.name not in ("hypothesis", "pytest"):
                raise
            raise ImportError(
                f"pubsift's conformance kit needs {exc.name}, which is not "
                "installed: pip install 'pubsift[kit]'"
            ) from exc
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
