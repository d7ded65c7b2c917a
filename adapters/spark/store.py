"""The job's outputs on disk (docs/spark.md, "What is written"): the event store, the quarantine,
the deliveries and ``summary.json``, and the rule that a job never mixes its outputs with an
earlier run's.

An output directory (what ``pubsift ingest --out STORE`` or ``pubsift route --out DIR``
writes) holds::

    events/        the normalized event store, partitioned by model (events/model=xml/...):
                   source, position, event (the model's dump_event form as JSON text)
    quarantine/    source, position, reason, message, excerpt, model
    deliveries/    (route) subscriber, source, position, model, event, sorted by
                   subscriber (or a directory per subscriber, deliveries/subscriber=alice/:
                   :mod:`.layout`)
    summary.json   counts per source, model, reason and subscriber; wall time per stage
    _pubsift.json  what made the directory (the marker ``--overwrite`` looks for)

in Parquet, or JSON lines with ``--format jsonl``. The job writes into a sibling staging
directory and renames it into place when everything is written, so ``--out`` holds one
whole run or nothing new; an existing ``--out`` is refused unless ``--overwrite`` is given,
and ``--overwrite`` replaces only a directory that pubsift made (never, say, a home
directory given by mistake).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pubsift.core.errors import PubsiftError

FORMATS = ("parquet", "jsonl")
MARKER = "_pubsift.json"

#: columns of the converted records (one row per event, quarantined record or input seen)
CONVERTED_SCHEMA = (
    "kind string, model string, source string, position long, "
    "event string, reason string, message string, excerpt string"
)
EVENT_COLUMNS = ("model", "source", "position", "event")
QUARANTINE_COLUMNS = ("source", "position", "reason", "message", "excerpt", "model")
DELIVERY_SCHEMA = "subscriber string, source string, position long, model string, event string"


class OutputError(PubsiftError, OSError):
    """An output directory that cannot be used (exists, not pubsift's, not writable)."""


@dataclass(frozen=True)
class Output:
    """Where a run writes: ``final`` (``--out``) and the staging directory beside it."""

    final: str
    staging: str
    format: str

    def path(self, part: str) -> str:
        """A part (``events``, ``quarantine``, ``deliveries``, ``summary.json``) of the
        staging directory."""
        return os.path.join(self.staging, part)


def _root(path: str) -> str:
    """The real directory or file a source path stands for (a glob pattern: the part
    before its first wildcard)."""
    import glob

    if glob.has_magic(path):
        parts = []
        for part in path.split(os.sep):
            if glob.has_magic(part):
                break
            parts.append(part)
        path = os.sep.join(parts) or "."
    return os.path.realpath(path)


def apart(out: str, inputs: Sequence[str]) -> None:
    """OutputError when ``out`` is, holds, or lies inside one of ``inputs`` (a source or
    the event store routed): a run would read its own output, or replace its input."""
    mine = os.path.realpath(out)
    for given in inputs:
        other = _root(given)
        if (
            mine == other
            or mine.startswith(other.rstrip(os.sep) + os.sep)
            or other.startswith(mine.rstrip(os.sep) + os.sep)
        ):
            raise OutputError(
                f"--out {out} overlaps the input {given}: the job would read "
                "its own output or replace what it reads (choose an --out "
                "outside the inputs)"
            )


def prepare(out: str, fmt: str, overwrite: bool, kind: str, inputs: Sequence[str] = ()) -> Output:
    """Check ``out`` before Spark starts; OutputError naming the problem. Staging
    directories left by a run that was killed (``.NAME.partial-*``, with pubsift's
    marker) are removed first."""
    if fmt not in FORMATS:
        raise OutputError(f"--format is one of {', '.join(FORMATS)}, not {fmt!r}")
    apart(out, inputs)
    final = os.path.abspath(out)
    if os.path.lexists(final):
        if not os.path.isdir(final) or os.path.islink(final):
            raise OutputError(f"--out {out}: exists and is not a directory")
        if os.listdir(final):
            if not overwrite:
                raise OutputError(
                    f"--out {out}: exists and is not empty; the job never "
                    "mixes outputs of two runs (give --overwrite to replace "
                    "it, or another --out)"
                )
            if not os.path.isfile(os.path.join(final, MARKER)):
                raise OutputError(
                    f"--out {out}: --overwrite replaces only a directory a "
                    f"pubsift job wrote (it has {MARKER}); this one has none"
                )
    parent = os.path.dirname(final) or "."
    if not os.path.isdir(parent):
        raise OutputError(f"--out {out}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise OutputError(f"--out {out}: cannot write in {parent}")
    _sweep(parent, os.path.basename(final))
    staging = os.path.join(
        parent, f".{os.path.basename(final)}.partial-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    )
    os.mkdir(staging)
    with open(os.path.join(staging, MARKER), "w", encoding="utf-8") as fh:
        json.dump({"written_by": "pubsift", "kind": kind, "format": fmt}, fh)
        fh.write("\n")
    return Output(final, staging, fmt)


def _sweep(parent: str, name: str) -> None:
    """Remove the staging directories of earlier runs into ``name`` that were killed
    before they could clean up (SIGKILL, a lost machine); only directories with pubsift's
    marker whose writer (the pid in the name) is gone."""
    import re

    pattern = re.compile(re.escape(f".{name}.partial-") + r"([0-9]+)-[0-9a-f]{8}(\.old)?\Z")
    try:
        entries = os.listdir(parent)
    except OSError:
        return
    for entry in entries:
        path = os.path.join(parent, entry)
        m = pattern.match(entry)
        if m is None or not os.path.isfile(os.path.join(path, MARKER)) or _alive(int(m.group(1))):
            continue
        shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def commit(output: Output) -> None:
    """Move the staging directory into place, replacing an earlier run (checked by
    :func:`prepare`)."""
    if os.path.lexists(output.final):
        old = output.staging + ".old"
        os.rename(output.final, old)
        os.rename(output.staging, output.final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(output.staging, output.final)


def discard(output: Output) -> None:
    """Remove the staging directory of a run that failed or was interrupted."""
    shutil.rmtree(output.staging, ignore_errors=True)


def write_json(path: str, obj: Any) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2, ensure_ascii=False)
        fh.write("\n")


def store_format(path: str) -> str | None:
    """The format of the event store at ``path`` (a directory ``pubsift ingest`` or
    ``pubsift route`` wrote), or None when ``path`` is not one."""
    marker = os.path.join(path, MARKER)
    if not os.path.isdir(os.path.join(path, "events")) or not os.path.isfile(marker):
        return None
    try:
        with open(marker, encoding="utf-8") as fh:
            fmt = json.load(fh).get("format")
    except (OSError, ValueError, AttributeError):
        return None
    return fmt if fmt in FORMATS else None
