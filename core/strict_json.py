"""Strict JSON: a duplicate key, ``NaN``/``Infinity``, an integer beyond Python's digit
limit or a nesting too deep for the parser is an error (:class:`JsonError`, one line)."""

from __future__ import annotations

import json
import sys
from typing import Any

from pubsift.core.errors import PubsiftError


class _Duplicate(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Duplicate(f"duplicate key {json.dumps(k)[:80]} in a JSON object")
        out[k] = v
    return out


def _constant(name: str) -> Any:
    raise _Duplicate(f"{name} is not JSON")


class JsonError(PubsiftError, ValueError):
    """A text is not strict JSON (what is wrong, on one line)."""


def strict_json(text: str) -> Any:
    """``json.loads`` refusing duplicate keys and NaN/Infinity; every problem is a
    :class:`JsonError` with a one-line message (column included when the parser knows it)."""
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise JsonError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
    except _Duplicate as exc:
        raise JsonError(f"invalid JSON: {exc}") from None
    except ValueError:  # an integer beyond the digit limit (Python's message advises a call)
        raise JsonError(
            f"invalid JSON: an integer of more than {sys.get_int_max_str_digits():,} digits"
        ) from None
    except RecursionError:
        raise JsonError("invalid JSON: nested too deeply") from None


__all__ = ["JsonError", "strict_json"]
