"""Stopping a job silences Spark's log whole: loggers given a level of their own (Spark's
``Utils``, which logs "Aborting task" with a Java stack trace for each task whose staging
folder was removed) as well as the root logger that ``setLogLevel`` alone reaches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

UTILS = "org.apache.spark.util.Utils"


@pytest.fixture
def log4j(spark) -> Iterator[Any]:
    """The JVM's log4j2, its root and ``Utils`` levels restored afterwards."""
    jvm = spark.sparkContext._jvm
    manager = jvm.org.apache.logging.log4j.LogManager
    configurator = jvm.org.apache.logging.log4j.core.config.Configurator
    root = manager.getRootLogger().getLevel()
    utils = manager.getLogger(UTILS).getLevel()
    try:
        yield jvm
    finally:
        configurator.setRootLevel(root)
        configurator.setLevel(UTILS, utils)


@pytest.mark.spark
def test_silence_turns_off_loggers_with_a_level_of_their_own(spark, log4j):
    from pubsift.adapters.spark.interrupt import silence

    levels = log4j.org.apache.logging.log4j.Level
    configurator = log4j.org.apache.logging.log4j.core.config.Configurator
    configurator.setLevel(UTILS, levels.ERROR)  # as log4j2.properties configures it
    utils = log4j.org.apache.logging.log4j.LogManager.getLogger(UTILS)
    assert utils.isErrorEnabled()
    spark.sparkContext.setLogLevel("OFF")
    assert utils.isErrorEnabled()  # what stopping did before: Utils still logged
    silence(spark.sparkContext)
    assert not utils.isErrorEnabled()
    assert not log4j.org.apache.logging.log4j.LogManager.getRootLogger().isErrorEnabled()
