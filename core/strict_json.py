"""Strict JSON: the one policy of every entry point that reads JSON text (DESIGN §2.6).

* **duplicate keys** in an object are refused (JSON says names *should* be unique; the
  parsers keep the last silently, so ``{"a": 1, "a": 2}`` would match ``a = 2`` in one
  place and be refused in another);
* **NaN, Infinity, -Infinity** are not JSON and are refused, and so is a number that
  overflows a 64-bit float to infinity (``1e309``);
* **nesting** deeper than ``max_depth`` levels of arrays and objects is refused
  (:data:`MAX_DEPTH` unless the caller says; ``None``: the parser's own limit);
* **integers are exact** at any size up to :data:`MAX_INT_DIGITS` digits (Python's own
  limit for reading integers); longer ones are refused.

Every problem is a :class:`JsonError` (one line, what and where). :func:`loads` reads with
orjson where the text holds no risk it would read differently (a run of 19 digits: an
integer beyond 64 bits; an escaped colon, see below) and falls back to the standard
library with hooks for the rest, and for every text orjson refuses (for the message, and
because the standard library decides what is JSON). orjson keeps the last of two equal
keys; a duplicate is found by counting: the colons of the text are its keys plus the
colons inside its strings, and orjson's writing of what it read has as many exactly when
no key was dropped (a dropped key takes its colon and its value's with it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from pubsift.core.errors import PubsiftError

#: the deepest nesting of arrays and objects :func:`loads` accepts unless told
MAX_DEPTH = 512
#: the most digits of an integer (Python's default ``sys.get_int_max_str_digits()``)
MAX_INT_DIGITS = 4300

#: digits to "0", everything else to " ": a run of 19 zeros in a text so translated is a
#: run of digits that may be an integer beyond 64 bits, which orjson does not read exactly
_DIGITS = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
_LONG_RUN = b"0" * 19
_LONG_RUN_STR = "0" * 19
_DIGITS_STR = {i: 48 if 48 <= i <= 57 else 32 for i in range(128)}


class JsonError(PubsiftError, ValueError):
    """A text that is not strict JSON. ``kind``: ``syntax``, ``encoding``, ``duplicate``,
    ``constant`` (NaN/Infinity), ``number`` (a float overflowing to infinity), ``integer``
    (too many digits) or ``depth``; ``reason`` what is wrong (``str()`` is ``invalid JSON:
    reason``, with the column of a syntax error); ``pos``, ``lineno``, ``colno`` the place
    of a syntax error; ``key`` the duplicate key; ``digits`` the integer's digits."""

    def __init__(
        self,
        kind: str,
        reason: str,
        pos: int | None = None,
        lineno: int | None = None,
        colno: int | None = None,
        key: str | None = None,
        digits: int | None = None,
    ) -> None:
        self.kind, self.reason = kind, reason
        self.pos, self.lineno, self.colno = pos, lineno, colno
        self.key, self.digits = key, digits
        at = f" at column {colno}" if colno is not None else ""
        super().__init__(f"invalid JSON: {reason}{at}")


class _Refused(ValueError):
    """Raised inside the standard library's parse by a hook (carries the JsonError)."""

    def __init__(self, error: JsonError) -> None:
        super().__init__(str(error))
        self.error = error


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                shown = json.dumps(k)[:80]
                raise _Refused(
                    JsonError("duplicate", f"duplicate key {shown} in a JSON object", key=k)
                )
            seen.add(k)
    return out


def _constant(name: str) -> Any:
    raise _Refused(JsonError("constant", f"{name} is not JSON"))


def _float(lexeme: str) -> float:
    v = float(lexeme)
    if v in (float("inf"), float("-inf")):
        shown = lexeme if len(lexeme) <= 40 else lexeme[:20] + "..." + lexeme[-10:]
        raise _Refused(
            JsonError(
                "number", f"number {shown} is too large for a 64-bit float (numbers are finite)"
            )
        )
    return v


def _int(lexeme: str) -> int:
    digits = len(lexeme) - lexeme.startswith("-")
    if digits > MAX_INT_DIGITS:
        raise _Refused(
            JsonError(
                "integer", f"an integer of more than {MAX_INT_DIGITS:,} digits", digits=digits
            )
        )
    return int(lexeme)


def too_deep(obj: Any, max_depth: int) -> bool:
    """Whether ``obj`` nests arrays and objects (lists, tuples, mappings) more than
    ``max_depth`` levels deep; level by level, so a structure that contains itself is
    too deep."""
    level: list[Any] = [obj]
    for _ in range(max_depth):
        nxt: list[Any] = []
        for x in level:
            items: Iterable[Any] = x.values() if isinstance(x, Mapping) else x
            nxt.extend(v for v in items if isinstance(v, (Mapping, list, tuple)))
        if not nxt:
            return False
        level = nxt
    return True


def _depth_error(max_depth: int) -> JsonError:
    return JsonError("depth", f"nested too deeply (more than {max_depth} levels)")


def _fast(data: str | bytes) -> Any:
    """orjson's reading of ``data``, or None (a sentinel list) when the text holds a risk
    or orjson refuses it or a key was given twice: the standard library decides then."""
    if isinstance(data, str):
        if _LONG_RUN_STR in data.translate(_DIGITS_STR) or "\\u003" in data:
            return _SLOW
        colons = data.count(":")
    else:
        if _LONG_RUN in data.translate(_DIGITS) or b"\\u003" in data:
            return _SLOW
        colons = data.count(b":")
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return _SLOW
    if colons > 1:  # a key given twice: two colons at least
        try:
            written = orjson.dumps(obj)
        except TypeError:  # deeper than orjson writes (255 levels)
            return _SLOW
        if written.count(b":") != colons:
            return _SLOW  # a key given twice (the standard library names it)
    return obj


_SLOW: Any = object()


def _slow(data: str | bytes) -> Any:
    """The standard library with the policy's hooks: every refusal as a JsonError."""
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonError(
                "encoding",
                f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                exc.start,
            ) from None
    try:
        return json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_int,
        )
    except json.JSONDecodeError as exc:
        raise JsonError("syntax", exc.msg, exc.pos, exc.lineno, exc.colno) from None
    except _Refused as exc:
        raise exc.error from None
    except RecursionError:
        raise JsonError("depth", "nested too deeply") from None


def loads(data: str | bytes, max_depth: int | None = MAX_DEPTH) -> Any:
    """The value of the JSON text ``data`` (text, or UTF-8 bytes) under the policy of this
    module; :class:`JsonError` says what is wrong. ``max_depth``: the deepest nesting of
    arrays and objects accepted (None: the parsers' own limits). Anything but text or
    bytes is a ``TypeError``, as for :func:`json.loads`."""
    if not isinstance(data, (str, bytes, bytearray)):
        raise TypeError(f"the JSON text must be str or bytes, not {type(data).__name__}")
    obj = _fast(data)
    if obj is _SLOW:
        obj = _slow(data)
    if (
        max_depth is not None
        and isinstance(obj, (dict, list))
        and (
            data.count("[") + data.count("{")
            if isinstance(data, str)
            else data.count(b"[") + data.count(b"{")
        )
        > max_depth
        and too_deep(obj, max_depth)
    ):
        raise _depth_error(max_depth)
    return obj


def strict_json(text: str) -> Any:
    """:func:`loads` at the default depth: what the command line, the readers and the
    gateway read."""
    return loads(text)


__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "JsonError", "loads", "strict_json", "too_deep"]
