"""Bulk ingest: files -> converted records (docs/spark.md, "What happens, stage by stage").

The driver lists the sources' files with the adapters (:func:`pubsift.adapters.readers.inputs.files`:
directories, glob patterns, links and exclusions mean what they mean to ``pubsift
convert``); Spark reads them with its ``binaryFile`` source, in partitions balanced by size
(the few files Spark's file sources skip or cannot name, :func:`task_opens`, are opened
by the tasks themselves, so that none is lost);
each partition expands its files (decompression, archive members:
:func:`pubsift.adapters.readers.inputs.expand`) and converts them with the adapters' readers
(:func:`pubsift.adapters.readers.dispatch.read_input`) in ``mapInArrow`` batches. Every record read
becomes one row: an event of its model, or a quarantined record with its reason; every input
opened also gives a ``seen`` row, so that a file with no record is still counted. Reading a
file is written once, in the adapters; this module only moves bytes and rows.
"""

from __future__ import annotations

import functools
import io
import json
import os
import re
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from pubsift.adapters.readers.dispatch import read_input
from pubsift.adapters.readers.inputs import expand, files
from pubsift.adapters.readers.limits import DEFAULT_READ_LIMITS, ReadLimits
from pubsift.adapters.readers.outcomes import Event, Quarantined
from pubsift.adapters.readers.source import Source
from pubsift.adapters.spark.interrupt import ignore_interrupts
from pubsift.adapters.spark.store import CONVERTED_SCHEMA

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: rows per Arrow batch a conversion task returns
BATCH_ROWS = 4096

#: Spark's binaryFile source holds a file in one row: files above this are not read
MAX_FILE_BYTES = 2**31 - 1 - 2**20

#: characters Hadoop reads as a glob in a path (escaped with a backslash)
_HADOOP_GLOB = re.compile(r"([\\*?\[\]{}])")


@dataclass(frozen=True)
class Listing:
    """The files of a job: ``files`` maps a file's absolute path to the (label, source)
    pairs it is read as (one file named by two sources is read for each); ``problems``
    are the sources' listing problems (a missing path, a FIFO, an empty directory) as
    quarantine records."""

    files: dict[str, tuple[tuple[str, Source], ...]]
    sizes: dict[str, int]
    problems: tuple[Quarantined, ...]

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes.values())


def _open_binary(path: str) -> BinaryIO:
    return open(path, "rb")


def list_files(sources: Sequence[Source], limits: ReadLimits = DEFAULT_READ_LIMITS) -> Listing:
    """The files of ``sources``, listed on the driver by the adapters. A file that two
    sources name under the same label (a directory and a pattern inside it) is read once,
    with the first source's settings; a file that cannot be read (no permission, gone, a
    name that is not UTF-8, which Spark cannot carry) is quarantined here, so that one bad
    file never fails the whole job."""
    found: dict[str, list[tuple[str, Source]]] = {}
    sizes: dict[str, int] = {}
    problems: list[Quarantined] = []
    labels: set[str] = set()
    for src in sources:
        for item in files(src, limits):
            if isinstance(item, Quarantined):
                problems.append(item)
                continue
            if item.name in labels:
                continue
            labels.add(item.name)
            assert item.file is not None
            path = os.path.abspath(item.file)
            try:
                path.encode("utf-8")
            except UnicodeEncodeError:
                problems.append(
                    Quarantined(
                        item.name,
                        0,
                        "unreadable",
                        (
                            "not read: the file name is not UTF-8 (rename it); Spark carries paths "
                            "as UTF-8 text"
                        ),
                    )
                )
                continue
            try:
                size = os.stat(path).st_size
                if not os.access(path, os.R_OK):
                    raise PermissionError(13, "permission denied")
            except OSError as exc:
                problems.append(
                    Quarantined(item.name, 0, "unreadable", f"cannot read: {exc.strerror or exc}")
                )
                continue
            if size > MAX_FILE_BYTES:
                problems.append(
                    Quarantined(
                        item.name,
                        0,
                        "too-large",
                        (
                            f"not read: {size} bytes; the Spark job reads files of at most "
                            f"{MAX_FILE_BYTES} bytes (Spark's binaryFile row limit): split it"
                        ),
                    )
                )
                continue
            found.setdefault(path, []).append((item.name, item.source))
            sizes[path] = size
    return Listing({p: tuple(v) for p, v in found.items()}, sizes, tuple(problems))


def hadoop_path(path: str) -> str:
    """``path`` as Spark's file sources take it: a ``file:`` URI with Hadoop's glob
    characters escaped (a file named ``a[1].csv`` is that file, not a pattern)."""
    return "file://" + _HADOOP_GLOB.sub(r"\\\1", path)


def local_path(uri: str) -> str:
    """The local path of a path Spark's ``binaryFile`` source reports (``file:/a b``)."""
    # Hadoop's Path.toString: the scheme, then the path as it is, not percent-encoded (a
    # file named "a%41 #b?.csv" is reported as file:/dir/a%41 #b?.csv): no URI parsing
    for prefix in ("file://", "file:"):
        if uri.startswith(prefix) and uri[len(prefix) :].startswith("/"):
            return uri[len(prefix) :]
    return uri


def spark_hides(path: str) -> bool:
    """Whether Spark's file sources skip ``path`` even when it is named explicitly: Hadoop
    treats names starting with ``_`` or ``.`` as hidden (``_SUCCESS``, ``.crc``)."""
    return os.path.basename(path)[:1] in ("_", ".")


def task_opens(path: str, size: int | None) -> bool:
    """Whether a conversion task opens ``path`` itself rather than Spark's ``binaryFile``
    source: a name Spark hides (:func:`spark_hides`), an empty file (Spark's file scans skip
    it) or a path holding ``:``, which a Hadoop path cannot (``Relative path in absolute
    URI``: the whole job would fail), or a name Spark's file index drops as a file being
    copied (``*._COPYING_``)."""
    return spark_hides(path) or size == 0 or ":" in path or path.endswith("._COPYING_")


def _rows(
    items: Iterator[Event | Quarantined | str], dump: Callable[[Event], str]
) -> Iterator[dict[str, Any]]:
    for item in items:
        if isinstance(item, str):
            yield {
                "kind": "seen",
                "model": None,
                "source": item,
                "position": 0,
                "event": None,
                "reason": None,
                "message": None,
                "excerpt": None,
            }
        elif isinstance(item, Quarantined):
            yield {
                "kind": "quarantine",
                "model": item.model,
                "source": item.source,
                "position": item.position,
                "event": None,
                "reason": item.reason,
                "message": item.message,
                "excerpt": item.excerpt,
            }
        else:
            yield {
                "kind": "event",
                "model": item.model,
                "source": item.source,
                "position": item.position,
                "event": dump(item),
                "reason": None,
                "message": None,
                "excerpt": None,
            }


def _outcomes(
    label: str, source: Source, opener: Callable[[], Any], size: int | None, limits: ReadLimits
) -> Iterator[Event | Quarantined | str]:
    """What one file gives: for each input in it (itself, or its members), the input's
    name (``seen``) and then its events and quarantined records; an archive with no
    member to read (empty, only directories or excluded members) is ``seen`` itself."""
    empty = True
    for inp in expand(source, label, opener, size, limits):
        empty = False
        if isinstance(inp, Quarantined):
            yield inp
        else:
            yield inp.name
            yield from read_input(inp, limits)
    if empty:
        yield label


def event_dumper() -> Callable[[Event], str]:
    """``dump(event)``: the JSON text of the model's wire form (``dump_event``)."""
    from pubsift.core.registry import load_model

    models: dict[str, Any] = {}

    def dump(item: Event) -> str:
        model = models.get(item.model)
        if model is None:
            model = models[item.model] = load_model(item.model)
        return json.dumps(model.dump_event(item.event), ensure_ascii=False, separators=(",", ":"))

    return dump


def converter(listing: Listing, limits: ReadLimits) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function of the conversion stage: batches of files in (``path``
    and ``content`` from binaryFile, or only ``path`` for a file the task opens itself),
    converted rows (:data:`CONVERTED_SCHEMA`) out."""
    files_of = listing.files

    def convert(batches: Iterator[Any]) -> Iterator[Any]:
        ignore_interrupts()
        import pyarrow as pa

        dump = event_dumper()
        schema = _arrow_schema()
        out: list[dict[str, Any]] = []
        for batch in batches:
            paths = batch.column("path").to_pylist()
            contents = batch.column("content") if "content" in batch.schema.names else None
            opener: Callable[[], BinaryIO]
            size: int | None
            for i, uri in enumerate(paths):
                path = local_path(uri)
                if contents is not None:
                    content = contents[i].as_py()
                    opener, size = functools.partial(io.BytesIO, content), len(content)
                else:
                    opener, size = functools.partial(_open_binary, path), listing.sizes.get(path)
                for label, source in files_of.get(path, ()):
                    for row in _rows(_outcomes(label, source, opener, size, limits), dump):
                        out.append(row)
                        if len(out) >= BATCH_ROWS:
                            yield pa.RecordBatch.from_pylist(out, schema=schema)
                            out = []
        if out:
            yield pa.RecordBatch.from_pylist(out, schema=schema)

    return convert


def _arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("kind", pa.string()),
            ("model", pa.string()),
            ("source", pa.string()),
            ("position", pa.int64()),
            ("event", pa.string()),
            ("reason", pa.string()),
            ("message", pa.string()),
            ("excerpt", pa.string()),
        ]
    )


def convert(
    spark: SparkSession,
    listing: Listing,
    limits: ReadLimits = DEFAULT_READ_LIMITS,
    skip: Collection[str] = (),
    extra: Sequence[DataFrame] = (),
) -> DataFrame:
    """The converted rows of every listed file but those of ``skip`` (lazy: a Spark plan),
    plus ``extra`` rows and the listing's problems. Spark reads the files (``binaryFile``)
    in partitions of about an equal share of the bytes, at least one per core, for the
    readers in Python tasks (the CSV files Spark converts itself, :mod:`.native`, are
    ``skip``)."""
    parts = max(1, spark.sparkContext.defaultParallelism) if _has_context(spark) else 2
    share = max(1 << 20, listing.total_bytes // (2 * parts) + 1)
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(share))
    spark.conf.set("spark.sql.files.openCostInBytes", str(min(share, 1 << 20)))
    frames = list(extra)
    taken = set(skip)
    fn = converter(listing, limits)
    hidden = [p for p in listing.files if task_opens(p, listing.sizes.get(p))]
    by_task = set(hidden)
    read_by_spark = [p for p in listing.files if p not in by_task and p not in taken]
    if read_by_spark:
        raw = spark.read.format("binaryFile").load([hadoop_path(p) for p in read_by_spark])
        frames.append(raw.select("path", "content").mapInArrow(fn, CONVERTED_SCHEMA))
    if hidden:
        paths = spark.createDataFrame([(p,) for p in hidden], "path string")
        frames.append(paths.repartition(min(len(hidden), parts)).mapInArrow(fn, CONVERTED_SCHEMA))
    if listing.problems:
        frames.append(
            spark.createDataFrame(
                [
                    {
                        "kind": "quarantine",
                        "model": q.model,
                        "source": q.source,
                        "position": q.position,
                        "event": None,
                        "reason": q.reason,
                        "message": q.message,
                        "excerpt": q.excerpt,
                    }
                    for q in listing.problems
                ],
                CONVERTED_SCHEMA,
            )
        )
    if not frames:
        return spark.createDataFrame([], CONVERTED_SCHEMA)
    df = frames[0]
    for f in frames[1:]:
        df = df.unionByName(f)
    return df


def _has_context(spark: SparkSession) -> bool:
    try:
        spark.sparkContext  # noqa: B018 - not available on Spark Connect
    except Exception:
        return False
    return True
