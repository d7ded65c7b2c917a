"""Hostile inputs for any filter model (DESIGN §3: "bad input gets a clear
error"): hypothesis strategies that mutate a model's own valid forms into malformed and
extreme ones, the way a fuzzer or a hostile client on the network would.

Every input is a :class:`Case`: which hook family receives it (``kind``), the value, and a
``recipe`` saying how it was made (the valid form it started from and each mutation), so a
failure report reads as a reproduction. Values are built from a few drawn numbers (a depth,
a repeat count), never drawn element by element, so 5,000-level nestings and megabyte
strings cost hypothesis nothing.

* text forms: ``format_filter`` of generated filters, then characters and brackets deleted,
  duplicated or inserted, two texts spliced, a substring repeated thousands of times, the
  whole nested in thousands of parentheses or brackets, odd tokens inserted (4,400-digit
  numbers, ``1e309``, lone surrogates, NUL, right-to-left marks, combining marks,
  non-ASCII digits);
* JSON forms: ``dump_filter`` / ``dump_event`` outputs with a member replaced by a value of
  the wrong JSON type, a huge integer (over Python's 4,300-digit ``int``/``str`` limit),
  ``1e308``, ``inf`` or ``nan``, a 1,000-5,000-level nesting, an odd or very long string,
  a non-string key, a member deleted or added, or a string member text-mutated as above;
* raw events: the JSON text of ``dump_event`` (or its string, when the wire form is one)
  as ``str`` and as ``bytes`` (with invalid UTF-8 inserted), text-mutated.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

#: The hook families a case is given to (see :mod:`pubsift.core.conformance.hostile`).
KINDS = ("filter", "filter_wire", "event", "event_wire")

DEPTHS = (1_000, 2_000, 5_000)
REPEATS = (1_000, 5_000)
LONG = 1_000_000

HUGE_INT = 10**4400 + 7  # str(HUGE_INT) raises ValueError under the default digit limit
HUGE_DIGITS = "9" * 4400

ODD_STRINGS = (
    "",
    "\x00",
    "a\x00b",
    "\ud800",
    "\udfff",
    "x\udc80y",
    "\ud83d\ude00",
    "\u202eabc",
    "e\u0301\u0301\u0301",
    "٣",
    "１２",
    "\u0663.\u0665",
    "\ufeff",
    "\u2028",
    "\n\t\r",
    "\\",
    "\"'",
    "]]>",
    "&amp;",
    "<a/>",
    "$or",
    "${x}",
    "𝟘",
    "İ",
    "ß",
    "\uffff",
)

TOKENS = (
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    '"',
    "'",
    "\\",
    ",",
    ":",
    ".",
    "*",
    "/",
    "//",
    "@",
    "=",
    "!=",
    "<",
    ">",
    "-",
    "+",
    " and ",
    " or ",
    " not ",
    "e",
    "1e309",
    "-1e309",
    "NaN",
    "inf",
    "0x1F",
    HUGE_DIGITS,
    "0." + "0" * 400 + "1",
    "1" + "0" * 400,
    "\x00",
    "\ud800",
    "\udfff",
    "\u202e",
    "\u0301",
    "٣",
    "１",
    "\ufeff",
    "\n",
    "\t",
    "$or",
    "//*",
    "[1]",
    "()",
    "kg",
    "**",
    "^",
    "%",
    "&",
    "#",
    "<!--",
    "<?x?>",
    '<!DOCTYPE a [<!ENTITY e "x">]>',
    "&e;",
)

NUMERALS = (
    HUGE_DIGITS,
    "1e309",
    "-" + "9" * 400,
    "123456789",
    "-123456789",
    "99999",
    "-99999",
    "0",
    "-0",
    "00",
    "1" + "0" * 20,
    "9" * 5000,
    "-1e309",
    "1e-400",
    "0.1",
    "1." + "0" * 400,
    "٣",
    "１",
    "NaN",
    "Infinity",
    "0x10",
    "1_000",
    "1e",
    "--1",
    "+1",
    "2**64",
    "\u0663\u0664",
)

BRACKETS = (("(", ")"), ("[", "]"), ("{", "}"), ("[[", "]]"), ("(not ", ")"))


@dataclass(frozen=True)
class Case:
    """One hostile input: ``kind`` (one of :data:`KINDS`), the ``value``, and the
    ``recipe`` it was made by (readable, for failure reports)."""

    kind: str
    value: Any
    recipe: str

    def __repr__(self) -> str:  # bounded: hypothesis prints failing cases
        return f"Case({self.kind!r}, {describe(self.value, 120)}, recipe={self.recipe[:300]!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # hypothesis's printer
        printer.text(repr(self))

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"a hostile case kind is one of {KINDS}, not {self.kind!r}")


def describe(value: Any, limit: int = 300) -> str:
    """A bounded, never-raising rendering of any (deep, huge, odd) value."""
    out: list[str] = []
    size = 0

    def put(s: str) -> bool:
        nonlocal size
        out.append(s)
        size += len(s)
        return size < limit

    def walk(v: Any, depth: int) -> bool:
        if depth > 12:
            return put("…")
        if isinstance(v, bool) or v is None:
            return put(repr(v))
        if isinstance(v, int):
            if v.bit_length() > 1000:
                return put(f"<int of ~{int(v.bit_length() * math.log10(2)) + 1} digits>")
            return put(repr(v))
        if isinstance(v, (str, bytes, bytearray)):
            r = repr(v[:120])
            return put(r + (f"…(+{len(v) - 120} more)" if len(v) > 120 else ""))
        if isinstance(v, dict):
            if not put("{"):
                return False
            for i, (k, x) in enumerate(v.items()):
                if i and not put(", "):
                    return False
                if not (walk(k, depth + 1) and put(": ") and walk(x, depth + 1)):
                    return False
            return put("}")
        if isinstance(v, (list, tuple)):
            if not put("["):
                return False
            for i, x in enumerate(v):
                if i and not put(", "):
                    return False
                if not walk(x, depth + 1):
                    return False
            return put("]")
        try:
            # mypy types the class attribute type(v).__repr__ as a bound method
            r = object.__repr__(v) if type(v).__repr__ is object.__repr__ else repr(v)  # type: ignore[comparison-overlap]
        except Exception as exc:  # a hostile value may not even repr
            r = f"<{type(v).__name__}: repr raised {type(exc).__name__}>"
        return put(r[:200])

    walk(value, 0)
    text = "".join(out)
    return text if len(text) <= limit else text[:limit] + "…"


# -- extreme values ----------------------------------------------------------------------


def nested_list(depth: int, leaf: Any = 1) -> Any:
    v = leaf
    for _ in range(depth):
        v = [v]
    return v


def nested_dict(depth: int, key: str = "a", leaf: Any = 1) -> Any:
    v = leaf
    for _ in range(depth):
        v = {key: v}
    return v


def _extreme_values() -> st.SearchStrategy[tuple[Any, str]]:
    """(value, what) pairs: wrong JSON types, huge and special numbers, deep nesting, odd
    and very long strings, non-string keys."""
    fixed: list[tuple[Any, str]] = [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (-1, "-1"),
        (2**64, "2**64"),
        (-(2**200), "-2**200"),
        (HUGE_INT, "a 4401-digit int"),
        (-HUGE_INT, "a negative 4401-digit int"),
        (1e308, "1e308"),
        (-1e308, "-1e308"),
        (5e-324, "5e-324"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
        (math.nan, "nan"),
        (-0.0, "-0.0"),
        (1.5, "1.5"),
        ([], "[]"),
        ({}, "{}"),
        ([None], "[null]"),
        ([[">"], 1], '[[">"], 1]'),
        ({"": None}, '{"": null}'),
        ({1: "x"}, '{1: "x"}'),
        ({None: 1}, "{None: 1}"),
        ([1, "a", None, [], {}], "a mixed list"),
        ("x" * LONG, f"a {LONG:,}-character string"),
        ("9" * 5000, "5000 digits as a string"),
        (HUGE_DIGITS + "e-4400", "a 4400-digit mantissa as a string"),
    ]
    fixed += [(s, f"the string {s!r}") for s in ODD_STRINGS]
    deep = st.builds(
        lambda d, make: (make[0](d), f"{make[1]} nested {d} levels"),
        st.sampled_from(DEPTHS),
        st.sampled_from(
            [
                (nested_list, "a list"),
                (nested_dict, "an object"),
                (lambda d: nested_dict(d, "$or", [1]), "an $or"),
            ]
        ),
    )
    wide = st.builds(lambda n: ([0] * n, f"a list of {n:,} zeros"), st.sampled_from(REPEATS))
    return st.one_of(st.sampled_from(fixed), deep, wide)


EXTREME = _extreme_values()
_NUMBER_VALUES = st.sampled_from(
    [
        (99999, "99999"),
        (-99999, "-99999"),
        (123456789, "123456789"),
        (2**63, "2**63"),
        (-(2**63) - 1, "-2**63-1"),
        (10**400, "10**400"),
        (HUGE_INT, "a 4401-digit int"),
        (1e308, "1e308"),
        (-1e308, "-1e308"),
        (5e-324, "5e-324"),
        (math.inf, "inf"),
        (math.nan, "nan"),
        (-0.0, "-0.0"),
        (0.1, "0.1"),
        (True, "true"),
        ("1", "the string '1'"),
    ]
)
_JSON_OPS = st.sampled_from(
    ["number", "number", "replace", "replace", "delete", "add", "text", "wrap"]
)


# -- text mutations -------------------------------------------------------------------------


@st.composite
def mutated_text(
    draw: Any, texts: st.SearchStrategy[str], max_mutations: int = 3
) -> tuple[str, str]:
    """(text, recipe): a text from ``texts`` after one to ``max_mutations`` mutations."""
    text = draw(texts)
    recipe = [repr(text[:200])]
    for _ in range(draw(_COUNTS[max_mutations])):
        text, step = _mutate_text(draw, text, texts)
        recipe.append(step)
    return text, " -> ".join(recipe)


_COUNTS = {n: st.integers(1, n) for n in (1, 2, 3)}
_OPS = st.sampled_from(
    [
        "number",
        "deepen",
        "delete",
        "duplicate",
        "insert",
        "odd",
        "splice",
        "repeat",
        "nest",
        "truncate",
    ]
)
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_NUMERALS = st.sampled_from(NUMERALS)
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_TOKENS = st.sampled_from(TOKENS)
_ODD = st.sampled_from(ODD_STRINGS)
_SMALL = st.integers(1, 8)
_REPEATS = st.sampled_from(REPEATS)
_DEPTHS = st.sampled_from(DEPTHS)
_BRACKETS = st.sampled_from(BRACKETS)


def _closing(text: str, i: int) -> int:
    """The index of the bracket closing the one at ``i`` (or the end of the text)."""
    opened, closed, depth = text[i], _OPENERS[text[i]], 0
    for k in range(i, len(text)):
        depth += (text[k] == opened) - (text[k] == closed)
        if depth == 0:
            return k
    return len(text)


def _mutate_text(draw: Any, text: str, texts: st.SearchStrategy[str]) -> tuple[str, str]:
    """One mutation of ``text`` (strategies are module constants: building strategies per
    draw would cost hypothesis more than the cases themselves)."""
    op = draw(_OPS)
    if op == "number" and (numbers := list(_NUMBER.finditer(text))):
        m = numbers[draw(st.integers(0, len(numbers) - 1))]
        num = draw(_NUMERALS)
        return (
            text[: m.start()] + num + text[m.end() :],
            f"replace the number {m[0]!r} by {describe(num, 40)}",
        )
    if op == "deepen" and (opens := [k for k, c in enumerate(text) if c in _OPENERS]):
        i = opens[draw(st.integers(0, len(opens) - 1))]
        j = _closing(text, i)
        d = draw(_DEPTHS)
        return (
            text[:i] + text[i] * d + text[i:j] + _OPENERS[text[i]] * d + text[j:],
            f"deepen the {text[i]!r} at {i} by {d} levels",
        )
    i = draw(st.integers(0, len(text)))
    if op in ("delete", "number", "deepen"):
        n = draw(_SMALL)
        return text[:i] + text[i + n :], f"delete {n} at {i}"
    if op == "duplicate":
        n, k = draw(_SMALL), draw(st.integers(2, 5))
        return text[:i] + text[i : i + n] * k + text[i:], f"repeat [{i}:{i + n}] x{k}"
    if op in ("insert", "odd"):
        tok = draw(_TOKENS if op == "insert" else _ODD)
        return text[:i] + tok + text[i:], f"insert {describe(tok, 60)} at {i}"
    if op == "splice":
        other = draw(texts)
        j = draw(st.integers(0, len(other)))
        return text[:i] + other[j:], f"splice [:{i}] with {describe(other, 80)}[{j}:]"
    if op == "repeat":
        piece = text[i : i + draw(st.integers(1, 12))] or "("
        k = draw(_REPEATS)
        return text[:i] + piece * k + text[i:], f"repeat {describe(piece, 40)} x{k}"
    if op == "nest":
        (opened, closed), d, balanced = draw(_BRACKETS), draw(_DEPTHS), draw(st.booleans())
        return (
            opened * d + text + (closed * d if balanced else ""),
            f"nest in {d} {opened!r}{'' if balanced else ' (unclosed)'}",
        )
    return text[:i], f"truncate at {i}"


# -- JSON mutations -------------------------------------------------------------------------


def _paths(obj: Any, cap: int = 200) -> list[tuple[Any, ...]]:
    """Paths (key/index sequences) of the members of a JSON value, breadth first."""
    out: list[tuple[Any, ...]] = [()]
    queue: list[tuple[tuple[Any, ...], Any]] = [((), obj)]
    while queue and len(out) < cap:
        path, v = queue.pop(0)
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
        for k, x in items:
            out.append(path + (k,))
            queue.append((path + (k,), x))
    return out


def _where(path: tuple[Any, ...]) -> str:
    if not path:
        return "the whole"
    steps = [f"[{describe(k, 30)}]" for k in path]
    if len(steps) > 6:
        steps = steps[:3] + [f"…({len(steps) - 5} more)…"] + steps[-2:]
    return "".join(steps)


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        obj = obj[k]
    return obj


def _replace(obj: Any, path: tuple[Any, ...], new: Any) -> Any:
    """A copy of ``obj`` with the member at ``path`` replaced by ``new`` (or deleted, for
    :data:`_DELETE`)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy = dict(obj) if isinstance(obj, dict) else list(obj)
    v = _replace(obj[head], rest, new)
    if v is _DELETE:
        del copy[head]
    else:
        copy[head] = v
    return copy


_DELETE = object()


def _jsonable(obj: Any) -> Any:
    """A JSON value as the JSON parser gives it (tuples become lists)."""
    try:
        return json.loads(json.dumps(obj))
    except (TypeError, ValueError):
        return obj


@st.composite
def mutated_json(
    draw: Any, values: st.SearchStrategy[Any], max_mutations: int = 2
) -> tuple[Any, str]:
    """(value, recipe): a JSON value from ``values`` with one to ``max_mutations`` members
    replaced, deleted, added, text-mutated, or the whole wrapped in deep nesting."""
    obj = _jsonable(draw(values))
    recipe = [describe(obj, 200)]
    for _ in range(draw(st.integers(1, max_mutations))):
        paths = _paths(obj)
        path = paths[draw(st.integers(0, len(paths) - 1))]
        old = _get(obj, path)
        where = _where(path)
        how = draw(_JSON_OPS)
        if how == "number" and isinstance(old, (int, float)) and not isinstance(old, bool):
            v, what = draw(_NUMBER_VALUES)
            obj = _replace(obj, path, v)
            recipe.append(f"replace the number {where} by {what}")
        elif how == "delete" and path:
            obj = _replace(obj, path, _DELETE)
            recipe.append(f"delete {where}")
        elif how == "add" and isinstance(old, (dict, list)):
            v, what = draw(EXTREME)
            if isinstance(old, dict):
                key = draw(st.sampled_from(["extra", "", "\x00", "\ud800", "$or"] + list(old)))
                obj = _replace(obj, path, {**old, key: v})
                recipe.append(f"set {where}[{key!r}] to {what}")
            else:
                obj = _replace(obj, path, [*old, v])
                recipe.append(f"append {what} to {where}")
        elif how == "text" and isinstance(old, str):
            text, steps = _mutate_text(draw, old, st.just(old))
            obj = _replace(obj, path, text)
            recipe.append(f"mutate the text of {where}: {steps}")
        elif how == "wrap":
            d = draw(st.sampled_from(DEPTHS))
            obj = _replace(obj, path, nested_list(d, old))
            recipe.append(f"wrap {where} in {d} lists")
        else:
            v, what = draw(EXTREME)
            obj = _replace(obj, path, v)
            recipe.append(f"replace {where} by {what}")
    return obj, " -> ".join(recipe)


# -- cases for a model ----------------------------------------------------------------------


def _safe(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``fn`` on a generated filter or event; an exception there is the model's own bug on
    a *valid* input, which the other checks of the kit report, so it is not hidden: it
    propagates with the input named."""

    def call(x: Any) -> Any:
        try:
            return fn(x)
        except Exception as exc:
            raise AssertionError(
                f"{getattr(fn, '__name__', fn)}({describe(x)}) raised "
                f"{type(exc).__name__}: {exc} on a generated (valid) "
                "input"
            ) from exc

    return call


def filter_texts(model: Any, filters: st.SearchStrategy) -> st.SearchStrategy[Case]:
    """Mutated text forms (``format_filter`` of generated filters), for parse_filter(s)."""
    texts = filters.map(_safe(model.format_filter))
    return mutated_text(texts).map(lambda t: Case("filter", t[0], f"text {t[1]}"))


def filter_jsons(model: Any, filters: st.SearchStrategy) -> st.SearchStrategy[Case]:
    """Mutated wire forms (``dump_filter``), for load_filter and for parse_filter (as an
    object and as JSON text)."""
    dumped = filters.map(_safe(model.dump_filter))

    def cases(t: tuple[Any, str]) -> st.SearchStrategy[Case]:
        obj, recipe = t
        out = [Case("filter_wire", obj, f"wire {recipe}"), Case("filter", obj, f"object {recipe}")]
        with contextlib.suppress(TypeError, ValueError, RecursionError):
            out.append(Case("filter", json.dumps(obj), f"JSON text of {recipe}"))
        return st.sampled_from(out)

    return mutated_json(dumped).flatmap(cases)


def event_inputs(model: Any, events: st.SearchStrategy) -> st.SearchStrategy[Case]:
    """Raw events: mutated wire forms (``dump_event``) for load_event and parse_event, and
    mutated texts of them, as ``str`` and as ``bytes`` (sometimes not UTF-8)."""
    dumped = events.map(_safe(model.dump_event))

    def as_text(obj: Any) -> str:
        if isinstance(obj, str):
            return obj
        try:
            return json.dumps(obj, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):
            return str(type(obj).__name__)

    def json_cases(t: tuple[Any, str]) -> st.SearchStrategy[Case]:
        obj, recipe = t
        return st.sampled_from(
            [Case("event_wire", obj, f"wire {recipe}"), Case("event", obj, f"object {recipe}")]
        )

    def text_cases(t: tuple[str, str], encode: bool, garbage: bytes) -> Case:
        text, recipe = t
        if not encode:
            return Case("event", text, f"text {recipe}")
        raw = text.encode("utf-8", "surrogatepass")
        cut = len(raw) // 2
        return Case(
            "event",
            raw[:cut] + garbage + raw[cut:],
            f"bytes of {recipe} with {garbage!r} in the middle",
        )

    return st.one_of(
        mutated_json(dumped).flatmap(json_cases),
        st.builds(
            text_cases,
            mutated_text(dumped.map(as_text)),
            st.booleans(),
            st.sampled_from([b"", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf"]),
        ),
    )
