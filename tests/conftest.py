"""Hypothesis profiles for the whole suite.

``dev`` (the default when pytest is run directly) explores new random examples on every run.
``ci`` (what ``make test`` / ``.ci/run`` select through ``PUBSIFT_HYPOTHESIS_PROFILE=ci``)
derandomizes, as hypothesis recommends for CI: the same examples on every run, so a landing
is never decided by luck; exploration continues in development runs.
"""

import os

from hypothesis import settings

settings.register_profile("dev", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, database=None, print_blob=True)
settings.load_profile(os.environ.get("PUBSIFT_HYPOTHESIS_PROFILE", "dev"))


# --- Spark: one local[2] session per test run (docs/spark.md, "Where it runs") -------------
import pytest  # noqa: E402


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Tests marked ``spark`` run in one xdist worker (``--dist loadgroup``), so that the
    whole run starts one Spark session and builds each session-scoped job fixture once,
    not once per worker. First among the hooks: xdist's own reads the group marks to
    name the tests' groups (``nodeid@spark``), and a mark added after it is ignored."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("spark") is not None:
            item.add_marker(pytest.mark.xdist_group("spark"))


@pytest.fixture(scope="session")
def spark():
    """The run's SparkSession (``local[2]``, UI off), started as the job starts it."""
    pytest.importorskip("pyspark", reason="the spark extra is not installed")
    from pubsift.adapters.spark.session import start

    session = start("local[2]", "pubsift-tests", {"spark.sql.shuffle.partitions": "4"})
    yield session
    session.stop()
