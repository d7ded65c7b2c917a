"""The job's outputs on disk (issue 12 §2 "Output"): the event store, the quarantine, the
deliveries and ``summary.json``, and the rule that a job never mixes its outputs with an
earlier run's.

An output directory (what ``pubsift ingest --out STORE`` or ``pubsift route --out DIR``
writes) holds::

    events/        the normalized event store, partitioned by model (events/model=xml/...):
                   source, position, event (the model's dump_event form as JSON text)
    quarantine/    source, position, reason, message, excerpt, model
    deliveries/    (route) subscriber, source, position, model, event, partitioned by
                   subscriber (deliveries/subscriber=alice/...)
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
from dataclasses import dataclass
from typing import Any

from pubsift.core.errors import PubsiftError

FORMATS = ("parquet", "jsonl")
MARKER = "_pubsift.json"

#: columns of the converted records (one row per event, quarantined record or input seen)
CONVERTED_SCHEMA = ("kind string, model string, source string, position long, "
                    "event string, reason string, message string, excerpt string")
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


def prepare(out: str, fmt: str, overwrite: bool, kind: str) -> Output:
    """Check ``out`` before Spark starts; OutputError naming the problem."""
    if fmt not in FORMATS:
        raise OutputError(f"--format is one of {', '.join(FORMATS)}, not {fmt!r}")
    final = os.path.abspath(out)
    if os.path.lexists(final):
        if not os.path.isdir(final) or os.path.islink(final):
            raise OutputError(f"--out {out}: exists and is not a directory")
        if os.listdir(final):
            if not overwrite:
                raise OutputError(f"--out {out}: exists and is not empty; the job never "
                                  "mixes outputs of two runs (give --overwrite to replace "
                                  "it, or another --out)")
            if not os.path.isfile(os.path.join(final, MARKER)):
                raise OutputError(f"--out {out}: --overwrite replaces only a directory a "
                                  f"pubsift job wrote (it has {MARKER}); this one has none")
    parent = os.path.dirname(final) or "."
    if not os.path.isdir(parent):
        raise OutputError(f"--out {out}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise OutputError(f"--out {out}: cannot write in {parent}")
    staging = os.path.join(parent, f".{os.path.basename(final)}.partial-{uuid.uuid4().hex[:8]}")
    os.mkdir(staging)
    with open(os.path.join(staging, MARKER), "w", encoding="utf-8") as fh:
        json.dump({"written_by": "pubsift", "kind": kind, "format": fmt}, fh)
        fh.write("\n")
    return Output(final, staging, fmt)


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
