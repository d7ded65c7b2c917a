"""The project's source folders and the packages they install as
([tool.setuptools.package-dir] of pyproject.toml; ``pubsift/`` is the top-level package):
what the tests of the import graph and of the package edges read."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: folder -> the package it installs as
FOLDERS = {
    "adapters": "pubsift.adapters",
    "core": "pubsift.core",
    "experiments": "pubsift.experiments",
    "models": "pubsift.models",
    "pubsift": "pubsift",
}
