"""How the deliveries are laid out on disk: a layout that scales with
the number of subscribers (docs/spark.md, "What is written").

``sorted`` (the default): one dataset, range-partitioned by subscriber into a few files
(:func:`files_for`) and sorted by subscriber, source and position inside each, written in
Parquet row groups of :data:`ROW_GROUP_BYTES`: every file and row group holds a range of
subscribers, and its min/max statistics let a reader skip the others, so ``WHERE
subscriber = 'alice'`` reads alice's row groups only (Spark's Parquet filter push-down,
pyarrow's ``filters=``). Writing costs one range shuffle and a sort whatever the number of
subscribers.

``per-subscriber``: a directory per subscriber (``deliveries/subscriber=alice/``), one
file each, as the job wrote before this layout. Writing and listing one directory per
subscriber costs a multiple of the routing once there are thousands of subscribers
(bench/spark_job.py ``--parts layouts``); kept for a few subscribers, or for readers that
take a directory per subscriber.

Both are written from the frame the summary's counts come from (:func:`pubsift.adapters.
spark.job._route`): nothing is read back.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pubsift.core.errors import PubsiftError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

LAYOUTS = ("sorted", "per-subscriber")
DEFAULT_LAYOUT = "sorted"
#: Parquet row-group size of the sorted layout: small enough that one subscriber's read
#: skips most of a file, large enough that a file of a million deliveries has a few
#: dozen row groups, not thousands
ROW_GROUP_BYTES = 8 << 20
#: deliveries per file of the sorted layout (at most two files per core)
ROWS_PER_FILE = 1_000_000
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


def files_for(deliveries: int, parallelism: int) -> int:
    """Files of the sorted layout for ``deliveries`` rows: one per :data:`ROWS_PER_FILE`,
    at least one, at most two per core (every core writes)."""
    return max(1, min(2 * max(1, parallelism), math.ceil(deliveries / ROWS_PER_FILE)))


def arrange(
    deliveries: DataFrame, layout: str, count: int, parallelism: int
) -> tuple[DataFrame, str | None, dict[str, str]]:
    """(frame, partition column, writer options) that write ``deliveries`` (``count``
    rows, known before writing) in ``layout``."""
    if check(layout) == "per-subscriber":
        return deliveries.repartition(PARTITION), PARTITION, {}
    arranged = deliveries.repartitionByRange(
        files_for(count, parallelism), PARTITION
    ).sortWithinPartitions(PARTITION, "source", "position")
    return arranged, None, {"parquet.block.size": str(ROW_GROUP_BYTES)}
