"""The compiled walk of the records index (models/records/_walk.pyx), built with Cython.

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

extensions = []
if cythonize is not None and Path("models/records/_walk.pyx").is_file():
    extensions = cythonize(
        [Extension("pubsift.models.records._walk", ["models/records/_walk.pyx"])],
        compiler_directives={"language_level": 3},
    )
    for extension in extensions:
        extension.optional = True  # a failed compilation warns; cythonize drops the flag

setup(ext_modules=extensions)
