"""The measured points of ``pubsift experiment rebeca`` as CSV: one row per
:class:`~pubsift.experiments.rebeca.Point`, one column per field, an empty cell for None.

Reading converts each cell to the type its field is declared with (resolved with
:func:`typing.get_type_hints`), so ``--from-csv`` gets back exactly the points written.
"""

from __future__ import annotations

import csv
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from pubsift.experiments.rebeca import Point


def write_csv(rows: Sequence[Point], path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, [f.name for f in fields(Point)])
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in asdict(r).items()})


def read_csv(path: Path) -> list[Point]:
    """The points of a CSV written by :func:`write_csv`. A missing file or column, or a
    value of the wrong type, is a ``ValueError`` naming the file and line."""
    try:
        fh = open(path, newline="", encoding="utf-8")  # noqa: SIM115  closed by the with below
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    with fh:
        reader = csv.DictReader(fh)
        names = [f.name for f in fields(Point)]
        missing = [n for n in names if n not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: not a rebeca CSV (missing columns: {', '.join(missing)})")
        rows = []
        for row in reader:
            try:
                rows.append(Point(**{name: read(row[name]) for name, read in _READERS.items()}))
            except ValueError as exc:
                raise ValueError(f"{path}, line {reader.line_num}: {exc}") from None
        return rows


def _boolean(text: str) -> bool:
    if text not in ("True", "False"):
        raise ValueError(f"expected True or False, got {text!r}")
    return text == "True"


def _number(kind: type) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return kind(text)
        except ValueError:
            raise ValueError(
                f"expected {'an integer' if kind is int else 'a number'}, got {text!r}"
            ) from None

    return convert


_CONVERT: dict[type, Callable[[str], Any]] = {
    str: str,
    bool: _boolean,
    int: _number(int),
    float: _number(float),
}


def _reader(tp: Any) -> Callable[[str | None], Any]:
    """The reader of a cell of declared type ``tp`` (``X | None``: an empty cell is None)."""
    optional = isinstance(tp, types.UnionType) and type(None) in typing.get_args(tp)
    base = next(t for t in typing.get_args(tp) if t is not type(None)) if optional else tp
    convert = _CONVERT[base]

    def read(text: str | None) -> Any:
        if text is None:
            raise ValueError("the row has too few cells")
        return None if optional and text == "" else convert(text)

    return read


_READERS = {name: _reader(tp) for name, tp in typing.get_type_hints(Point).items()}
