"""The compiled walk of the records index (models/records/_walk.pyx), built with Cython.

Everything else about the package is in pyproject.toml. The extension is optional: when it
cannot be built (no compiler) pubsift installs without it and the index walks in Python
(``pubsift.models.records.plans.walk``), with the same answers.
"""

from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    ext_modules=cythonize(
        [
            Extension(
                "pubsift.models.records._walk",
                ["models/records/_walk.pyx"],
                optional=True,
            )
        ],
        compiler_directives={"language_level": 3},
    )
)
