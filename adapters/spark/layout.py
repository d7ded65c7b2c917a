"""How the deliveries are laid out on disk: a layout that scales with
the number of subscribers (docs/spark.md, "What is written").

``sorted`` (the default): one dataset of a few files, one per routing task
(:func:`pubsift.adapters.spark.route.partitions_for`), each sorted by subscriber, source
and position (the task sorts its own deliveries: :func:`pubsift.adapters.spark.route.
sorted_router`) and written in Parquet row groups of :data:`ROW_GROUP_BYTES`: every row
group holds a range of subscribers, and its min/max statistics let a reader skip the
others, so ``WHERE subscriber = 'alice'`` reads alice's row groups only (one or two per
file: Spark's Parquet filter push-down, pyarrow's ``filters=``). Writing costs no shuffle
and no sort in the JVM, whatever the number of subscribers.

``per-subscriber``: a directory per subscriber (``deliveries/subscriber=alice/``), one
file each, as the job wrote before this layout. Writing and listing one directory per
subscriber costs a multiple of the routing once there are thousands of subscribers
(bench/spark_job.py ``--parts layouts``); kept for a few subscribers, or for readers that
take a directory per subscriber.

Both are written from the frame the summary's counts come from (:func:`pubsift.adapters.
spark.job._route`): nothing is read back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pubsift.core.errors import PubsiftError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

LAYOUTS = ("sorted", "per-subscriber")
DEFAULT_LAYOUT = "sorted"
#: Parquet row-group size of the sorted layout: each file holds every subscriber, so one
#: subscriber's read decodes a row group or two of each file (7.5M deliveries in 4 files,
#: one session: pyarrow 0.03-0.04 s at 2 MiB against 0.18-0.41 s at 8 MiB, Spark
#: 0.19-0.36 s against 0.21-0.42 s, the write alike)
ROW_GROUP_BYTES = 2 << 20
PARTITION = "subscriber"


class LayoutError(PubsiftError, ValueError):
    """A deliveries layout that does not exist."""


def check(layout: str) -> str:
    """``layout`` when it is one of :data:`LAYOUTS`; LayoutError naming them otherwise."""
    if layout not in LAYOUTS:
        raise LayoutError(
            f"the deliveries layout is {' or '.join(map(repr, LAYOUTS))}, not {layout!r:.80}"
        )
    return layout


def arrange(deliveries: DataFrame, layout: str) -> tuple[DataFrame, str | None, dict[str, str]]:
    """(frame, partition column, writer options) that write ``deliveries`` (each task's
    rows already sorted by subscriber, source and position) in ``layout``."""
    if check(layout) == "per-subscriber":
        return deliveries.repartition(PARTITION), PARTITION, {}
    # the events of a file sorted by subscriber are nearly all distinct: a dictionary
    # only costs its attempt (bench: 12 s against 15 s of the write's CPU, 7.5M rows)
    options = {
        "parquet.block.size": str(ROW_GROUP_BYTES),
        "parquet.enable.dictionary#event": "false",
    }
    return deliveries, None, options
