"""pubsift.adapters.spark — the PySpark batch job (docs/spark.md).

``pubsift ingest`` converts archives once into an event store (Parquet partitioned by
model); ``pubsift route`` routes an event store, or archives, against subscriptions and
writes one directory of deliveries per subscriber, the quarantine and ``summary.json``.
Spark lists, reads, partitions, shuffles and writes; the per-partition work calls the
adapters' readers (:mod:`pubsift.adapters.readers.dispatch`) and the models' indexes, so reading a
file and matching an event are written once.

Modules: :mod:`.subscriptions` (subscribers from JSON lines and TOML tables, checked before
Spark starts), :mod:`.jobfile` (the TOML job file), :mod:`.session` (Java check, session
settings), :mod:`.ingest` (files -> event store), :mod:`.route` (event store -> deliveries),
:mod:`.job` (the two commands end to end, with progress and summary).
"""
