"""Hypothesis profiles for the whole suite.

``dev`` (the default when pytest is run directly) explores new random examples on every run.
``ci`` (what ``make test`` / ``.ci/run`` select through ``PUBSIFT_HYPOTHESIS_PROFILE=ci``)
derandomizes, as hypothesis recommends for CI: the same examples on every run, so a landing
is never decided by luck; exploration continues in development runs.
"""
import os

from hypothesis import settings

settings.register_profile("dev", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, database=None,
                          print_blob=True)
settings.load_profile(os.environ.get("PUBSIFT_HYPOTHESIS_PROFILE", "dev"))
