"""The compiled parts of pubsift, built with Cython: the records model's walk and flat
check (models/records/_walk.pyx, _flat.pyx) and the brokers' cutter of batch frames
(adapters/broker/_split.pyx).

Everything else about the package is in pyproject.toml. The extension is optional: when it
cannot be built (no Cython in a build without isolation, no compiler) pubsift installs
without it and the index walks in Python (``pubsift.models.records.plans.walk``), with the
same answers.
"""

from pathlib import Path

from setuptools import Extension, setup

try:
    from Cython.Build import cythonize
except ImportError:  # pip's isolated build always has it (pyproject's build requires)
    cythonize = None

#: the compiled parts of the records model: the index's walk, and the check of a flat
#: event (models/records/_flat.pyx: what the brokers and clients run on every event)
SOURCES = {
    "pubsift.models.records._walk": "models/records/_walk.pyx",
    "pubsift.models.records._flat": "models/records/_flat.pyx",
    #: the cutter of batch frames (DESIGN §2.6: events travel as the bytes that came)
    "pubsift.adapters.broker._split": "adapters/broker/_split.pyx",
}

extensions = []
if cythonize is not None and all(Path(src).is_file() for src in SOURCES.values()):
    extensions = cythonize(
        [Extension(name, [src]) for name, src in SOURCES.items()],
        compiler_directives={"language_level": 3},
    )
    for extension in extensions:
        extension.optional = True  # a failed compilation warns; cythonize drops the flag

setup(ext_modules=extensions)
