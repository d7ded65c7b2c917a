"""pubsift: content-based publish/subscribe routing with pluggable filter models.

The routing core is :mod:`pubsift.core`, the filter models are the packages of
:mod:`pubsift.models`, and the edges (readers, the Spark job, the broker daemon and its
clients) are :mod:`pubsift.adapters`. This package itself holds only the version, read
from the installed distribution's metadata (pyproject.toml's ``version`` is its one source).
"""

from importlib.metadata import version as _version

__version__: str = _version("pubsift")

__all__ = ["__version__"]
