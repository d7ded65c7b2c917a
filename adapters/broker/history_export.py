"""A history's store as an event store of the Spark job (docs/spark.md; the layout of
:mod:`pubsift.adapters.spark.store`): ``events/model=M/part-0.parquet`` with ``source``
(the publisher), ``position`` (its sequence number) and ``event`` (the wire form's JSON
text, as recorded), ``_pubsift.json`` and ``summary.json``. So ``pubsift route EXPORT
--subscriptions subs.jsonl`` re-routes what the network carried, and its deliveries are
those the online subscribers got (``tests/network/test_history_export.py``).

``pubsift history --export DIR --config history.toml`` writes it (pyarrow; the directory
must not exist: a new one is made beside it and renamed into place when complete).
"""

from __future__ import annotations

import json
import os
import uuid
from collections import Counter

from pubsift.adapters.broker.history_store import HistoryStore
from pubsift.core.errors import PubsiftError

#: rows per Parquet row group
ROW_GROUP = 100_000


class ExportError(PubsiftError, OSError):
    """An export directory that cannot be written."""


def export(store: HistoryStore, out: str) -> dict[str, int]:
    """Write ``store`` as an event store at ``out``; the events per model."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    final = os.path.abspath(out)
    if os.path.exists(final):
        raise ExportError(f"--export {out}: exists already (give a new directory)")
    parent = os.path.dirname(final)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise ExportError(f"--export {out}: cannot write in {parent}")
    staging = os.path.join(parent, f".{os.path.basename(final)}.partial-{uuid.uuid4().hex[:8]}")
    os.mkdir(staging)
    schema = pa.schema([("source", pa.string()), ("position", pa.int64()), ("event", pa.string())])
    writers: dict[str, pq.ParquetWriter] = {}
    columns: dict[str, tuple[list[str], list[int], list[str]]] = {}
    counts: Counter[str] = Counter()

    def flush(model: str) -> None:
        src, pos, ev = columns[model]
        if not src:
            return
        w = writers.get(model)
        if w is None:
            d = os.path.join(staging, "events", f"model={model}")
            os.makedirs(d)
            w = writers[model] = pq.ParquetWriter(os.path.join(d, "part-0.parquet"), schema)
        w.write_table(pa.table([src, pos, ev], schema=schema))
        columns[model] = ([], [], [])

    try:
        for publisher, seq, _, model, event in store.rows():
            src, pos, ev = columns.setdefault(model, ([], [], []))
            src.append(publisher)
            pos.append(seq)
            ev.append(event.decode("utf-8") if isinstance(event, bytes) else str(event))
            counts[model] += 1
            if len(src) >= ROW_GROUP:
                flush(model)
        for model in columns:
            flush(model)
    finally:
        for w in writers.values():
            w.close()
    os.makedirs(os.path.join(staging, "events"), exist_ok=True)
    with open(os.path.join(staging, "_pubsift.json"), "w", encoding="utf-8") as fh:
        json.dump({"written_by": "pubsift", "kind": "history", "format": "parquet"}, fh)
    with open(os.path.join(staging, "summary.json"), "w", encoding="utf-8") as fh:
        json.dump(
            {
                "history": store.path,
                "events": sum(counts.values()),
                "models": dict(sorted(counts.items())),
            },
            fh,
            indent=2,
        )
    os.rename(staging, final)
    return dict(counts)
