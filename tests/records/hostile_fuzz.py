"""A mutation fuzzer for the records model's hooks (docs/records-syntax.md §4), run as a script in a
subprocess by ``test_hostile_fuzz.py`` (under a memory limit and a time limit, so that a
crash or a blow-up cannot take the test runner down).

    python hostile_fuzz.py SEED ITERATIONS

Valid filter texts, EventBridge patterns, wire forms and events — with "any element"
constraints among them (text ``x any ...``, EventBridge matchers, wire ``{"op": "any"}``,
long suffixes near the automata bound) — are mutated (random
tokens, huge and non-finite numbers, lone surrogates, long strings, wrong JSON types in
random places) and every hook is called on what comes out: parse_filter(s), parse_event,
load_filter, load_event, format_filter, dump_*, matches, covers, identical, overlaps,
merge (perfect and not) and every index operation. A problem is any exception other than a
``PubsiftError`` (``KeyError`` from removing an absent pair excepted), a call over 10 s, an
index answer that differs from ``matches``, a merger that misses a matching event, a text
or wire round trip that does not give the filter back. The last line is
``DONE <seed> <iterations> <problems>``.
"""

from __future__ import annotations

import contextlib
import json
import random
import resource
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

from pubsift.core.errors import PubsiftError
from pubsift.models.records.model import RecordsModel
from pubsift.models.records.typesystem import Schema

MODELS = [RecordsModel(), RecordsModel(Schema.of(integer_attrs=["n"], types={"T": [], "U": ["T"]}))]
STRINGS = [
    "",
    "a",
    "\x00",
    "\ud800",
    "\udc00",
    "\U0010ffff",
    "\U00010000",
    "é",
    "ß",
    "ﬃ",
    "İ",
    "K",
    "a.b",
    ".",
    "..",
    "$or",
    "*",
    "a*",
    "*a*",
    "\\*",
    "\\",
    '"',
    "x" * 10000,
    "\uffff",
    "\n",
    "ab" * 300,
    "".join(chr(0x4E00 + i) for i in range(300)),
]
NUMBERS = [
    0,
    -0.0,
    1,
    -1,
    0.5,
    1e308,
    -1e308,
    5e-324,
    2**53,
    2**53 + 1,
    10**400,
    -(10**400),
    10**4299,
    10**4300,
    float("nan"),
    float("inf"),
    float("-inf"),
    True,
    False,
    1.5,
    2.0,
]
KEYS = [
    "exactly",
    "prefix",
    "suffix",
    "equals-ignore-case",
    "anything-but",
    "numeric",
    "exists",
    "wildcard",
    "cidr",
    "$or",
    "a",
    "b",
    "a.b",
    "n",
    "x",
    "",
    1,
    "\ud800",
]
PATTERNS = [
    {"a": ["x", 1]},
    {"a": [{"prefix": "x"}]},
    {"a": [{"numeric": [">", 1, "<=", 5]}]},
    {"a": {"b": [{"anything-but": [1, 2]}]}},
    {"$or": [{"a": [1]}, {"b": [{"exists": False}]}]},
    {"n": [{"numeric": [">", 1.5]}]},
    {"a": [{"wildcard": "*x*"}]},
    {"a": [{"equals-ignore-case": "ß"}]},
    {"a": [{"anything-but": {"prefix": "x"}}]},
    {"a": ["x", {"suffix": "y"}], "b": [True, None]},
    {"a": [{"suffix": "x" * 3000}]},
    {"a": [{"equals-ignore-case": "AB" * 150}], "b": [{"prefix": "ab" * 100}]},
]
TEXTS = [
    "x = 1",
    'x != "a"',
    "x > 3 and x < 10",
    "x in [1, 5)",
    'x in {1, "a", true, null}',
    'x prefix "ab"',
    'x not prefix "a"',
    'x suffix "z"',
    'x substring "mid"',
    'x equals-ignore-case "Straße"',
    "x subset {1, 2}",
    "x superset {1}",
    "x contains 3",
    'x not contains "a"',
    "x disjoint {1}",
    "x overlaps {2, 3}",
    "x exists",
    "x not exists",
    "n > 1.5",
    "n in [1, 3]",
    "n != 2",
    'x in ["a", "b")',
    "x not in (1, 2]",
    "x instanceof T",
    '"a.b" = 1',
    "x < inf",
    "x any = 1",
    "x any > 3",
    "x any in [1, 5)",
    'x any prefix "ab"',
    'x any suffix "z"',
    'x any substring "mid"',
    'x any equals-ignore-case "Straße"',
    'x any != "a"',
    'x any in {1, "a", true, null}',
    "x any exists",
    "x any not exists",
    "n any > 1.5",
    "x any instanceof T",
    "true",
    "",
]
ANY_TEXTS = [t for t in TEXTS if " any " in t]
TOKENS = [
    " and ",
    "=",
    "!=",
    "<",
    ">",
    "in",
    "not",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    ",",
    '"',
    "\\u",
    "\\ud800",
    "1e309",
    "9" * 400,
    "9" * 5000,
    "-",
    "inf",
    "-inf",
    "null",
    "nan",
    "x",
    "\x00",
    "\ud800",
    "é",
    "-0.0",
    "1.",
    ".5",
    "01",
    " x = 1 and x = 2",
    "prefix",
    "instanceof",
    "U",
    "Z",
    '"' + "ab" * 300 + '"',
    ' x suffix "' + "ab" * 150 + '"',
    ' x equals-ignore-case "' + "AB" * 150 + '"',
    " any ",
    "any",
    " x any ",
    " any any ",
    ' x any suffix "' + "x" * 3000 + '"',
    ' x any equals-ignore-case "' + "AB" * 150 + '"',
    ' x any suffix "' + "ab" * 150 + '"',
]
#: wire forms with "any element" constraints (mutated like the dumped filters)
WIRES = [
    {"x": {"op": "any", "of": {"op": "=", "value": 1}}},
    {"x": {"op": "any", "of": {"op": "suffix", "value": "x" * 3000}}},
    {"x": {"op": "any", "of": {"op": "prefix", "value": "ab"}}, "n": {"op": ">", "value": 1}},
    {
        "x": {
            "op": "any",
            "of": {"op": "in-range", "lo": 1, "hi": 5, "lo_closed": True, "hi_closed": False},
        }
    },
    {"x": {"op": "any", "of": {"op": "in", "values": [1, "a", True, None]}}},
    {"x": {"op": "any", "of": {"op": "not-exists"}}},
    {"x": {"op": "any", "of": {"op": "equals-ignore-case", "value": "AB" * 150}}},
    {"x": {"op": "any", "of": {"op": "any", "of": {"op": "=", "value": 1}}}},
    {"x": {"op": "any", "of": {"op": "subset", "values": [1]}}},
]
EVENTS = [
    {"x": 1},
    {"x": "a", "n": 2},
    {"a": {"b": [1, 2]}, "x": 0.5},
    {"x": [1, "a", None]},
    {"n": 1.0, "x": True},
    {"x": None},
    {"x": ["ab", "zz", "x" * 3000], "a": []},
    {"x": [], "n": [2, 3.5]},
]


class _Timeout(Exception):
    pass


def _alarm(*_: Any) -> None:
    raise _Timeout()


def show(x: Any) -> str:
    try:
        return repr(x)[:300]
    except ValueError:  # an integer beyond Python's digit limit
        return f"<{type(x).__name__}>"


class Fuzzer:
    def __init__(self, seed: int) -> None:
        self.rnd = random.Random(seed)
        self.problems: list[tuple[str, str]] = []

    # -- inputs -----------------------------------------------------------------------
    def scalar(self) -> Any:
        r = self.rnd.random()
        if r < 0.4:
            return self.rnd.choice(STRINGS)
        if r < 0.8:
            return self.rnd.choice(NUMBERS)
        return self.rnd.choice([None, True, False, [], {}, [1], {"a": 1}])

    def value(self, depth: int = 0) -> Any:
        r = self.rnd.random()
        if depth > 6 or r < 0.4:
            return self.scalar()
        if r < 0.7:
            return [self.value(depth + 1) for _ in range(self.rnd.randint(0, 4))]
        return {self.rnd.choice(KEYS): self.value(depth + 1) for _ in range(self.rnd.randint(0, 3))}

    def mutate(self, obj: Any) -> None:
        """Replace a random member of ``obj`` (in place) by a random value."""
        parent, cur = None, obj
        while isinstance(cur, (dict, list)) and cur and self.rnd.random() < 0.7:
            key = (
                self.rnd.choice(list(cur))
                if isinstance(cur, dict)
                else self.rnd.randrange(len(cur))
            )
            parent, cur = (cur, key), cur[key]
        if parent is not None:
            parent[0][parent[1]] = self.value(3) if self.rnd.random() < 0.5 else self.scalar()
        elif isinstance(obj, dict):
            obj[self.rnd.choice(["a", "a.b", "c", "$or", 1])] = self.value(2)

    def mutated(self, base: Any, times: int) -> Any:
        obj = json.loads(json.dumps(base))
        for _ in range(self.rnd.randint(0, times)):
            self.mutate(obj)
        return obj

    def text(self) -> str:
        t = self.rnd.choice(TEXTS)
        if self.rnd.random() < 0.3:
            t = " and ".join(
                self.rnd.choice(TEXTS[:25] + ANY_TEXTS) for _ in range(self.rnd.randint(2, 5))
            )
        for _ in range(self.rnd.randint(0, 3)):
            i = self.rnd.randint(0, len(t))
            if self.rnd.random() < 0.5:
                t = t[:i] + self.rnd.choice(TOKENS) + t[i:]
            else:
                t = t[:i] + t[i + self.rnd.randint(1, 3) :]
        return t

    def spec(self) -> Any:
        r = self.rnd.random()
        if r < 0.4:
            return self.text()
        if r < 0.7:
            return self.mutated(self.rnd.choice(PATTERNS), 3)
        if r < 0.85:
            try:
                return json.dumps(
                    self.mutated(self.rnd.choice(PATTERNS), 3), ensure_ascii=self.rnd.random() < 0.5
                )
            except ValueError:
                return "{}"
        return self.value()

    def raw_event(self) -> Any:
        raw = self.mutated(self.rnd.choice(EVENTS), 2) if self.rnd.random() < 0.8 else self.value()
        if self.rnd.random() < 0.3:
            with contextlib.suppress(ValueError):
                raw = json.dumps(raw, ensure_ascii=self.rnd.random() < 0.5)
        return raw

    # -- checks -----------------------------------------------------------------------
    def call(self, label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)``, with a timeout; a raised PubsiftError gives None,
        anything else is recorded as a problem."""
        # CPU time, not wall-clock time: a loaded machine must not turn into a TIMEOUT.
        signal.setitimer(signal.ITIMER_PROF, 10)
        try:
            return fn(*args, **kwargs)
        except PubsiftError:
            return None
        except _Timeout:
            self.problems.append((f"TIMEOUT {label}", ""))
        except KeyError:
            if not label.startswith("remove"):
                self.problems.append((label, traceback.format_exc()))
        except Exception:  # the contract: nothing but PubsiftError
            self.problems.append((label, traceback.format_exc()))
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        return None

    def check(self, label: str, ok: bool) -> None:
        if not ok:
            self.problems.append((f"WRONG {label}", ""))

    def round_trips(self, m: RecordsModel, f: Any, what: str) -> None:
        t = self.call(f"format {show(f)}", m.format_filter, f)
        if t is not None:
            back = self.call(f"reparse {show(t)}", m.parse_filter, t)
            self.check(f"{what} text round trip {show(f)} -> {show(t)}", back == f)
        d = self.call(
            f"dump {show(f)}", lambda: json.loads(json.dumps(m.dump_filter(f), allow_nan=False))
        )
        if d is not None:
            back = self.call(f"load {show(d)}", m.load_filter, d)
            self.check(f"{what} wire round trip {show(f)}", back == f)

    def round(self) -> None:
        m = self.rnd.choice(MODELS)
        fs = []
        for _ in range(3):
            s = self.spec()
            fs += self.call(f"parse_filters {show(s)}", m.parse_filters, s) or []
            self.call(f"parse_filter {show(s)}", m.parse_filter, s)
        w = self.mutated(self.rnd.choice(WIRES), 2)
        fs.append(self.call(f"load_filter {show(w)}", m.load_filter, w))
        fs = [f for f in fs if f is not None]
        for f in list(fs):
            w = self.call(f"wire {show(f)}", lambda f: self.mutated(m.dump_filter(f), 2), f)
            if w is not None:
                g = self.call(f"load_filter {show(w)}", m.load_filter, w)
                if g is not None:
                    fs.append(g)
        events = []
        for _ in range(3):
            raw = self.raw_event()
            e = self.call(f"parse_event {show(raw)}", m.parse_event, raw)
            if e is not None:
                events.append(e)
            self.call(f"load_event {show(raw)}", m.load_event, raw)
        for e in events:
            d = self.call(
                f"dump_event {show(e)}",
                lambda e: json.loads(json.dumps(m.dump_event(e), allow_nan=False)),
                e,
            )
            self.check(
                f"event round trip {show(e)}",
                d is not None and self.call("load_event", m.load_event, d) == e,
            )
        for f in fs:
            self.round_trips(m, f, "filter")
            for e in events:
                self.call(f"matches {show(f)} {show(e)}", m.matches, f, e)
        for f in fs:
            for g in fs:
                self.relations(m, f, g, events)
        self.index(m, fs, events)

    def relations(self, m: RecordsModel, f: Any, g: Any, events: list) -> None:
        pair = f"{show(f)} {show(g)}"
        cv = self.call(f"covers {pair}", m.covers, f, g)
        ov = self.call(f"overlaps {pair}", m.overlaps, f, g)
        self.call(f"identical {pair}", m.identical, f, g)
        for e in events:
            if cv and m.matches(g, e):
                self.check(f"covers {pair} {show(e)}", m.matches(f, e))
            if m.matches(f, e) and m.matches(g, e):
                self.check(f"overlaps {pair}", bool(ov))
        for perfect in (True, False):
            mg = self.call(f"merge {perfect} {pair}", m.merge, [f, g], perfect=perfect)
            if mg is None:
                continue
            self.round_trips(m, mg, "merger")
            for e in events:
                if m.matches(f, e) or m.matches(g, e):
                    self.check(f"merger {show(mg)} of {pair}", m.matches(mg, e))

    def index(self, m: RecordsModel, fs: list, events: list) -> None:
        idx = m.new_index()
        for i, f in enumerate(fs):
            self.call(f"add {show(f)}", idx.add, f, i)
        for e in events:
            got = self.call(f"match {show(e)}", idx.match, e)
            want = {i for i, f in enumerate(fs) if m.matches(f, e)}
            self.check(f"index match {show(e)} {show(fs)}", got == want)
        for f in fs:
            for q in ("covering", "covered_by", "identical", "overlapping", "merge_candidates"):
                self.call(f"{q} {show(f)}", getattr(idx, q), f)
        for i, f in enumerate(fs):
            self.call(f"remove {show(f)}", idx.remove, f, i)
        self.check("index empties", len(idx) == 0)


def main(seed: int, iterations: int) -> int:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    signal.signal(signal.SIGPROF, _alarm)
    fuzzer = Fuzzer(seed)
    for _ in range(iterations):
        fuzzer.round()
    seen = set()
    for label, tb in fuzzer.problems:
        key = tb.strip().splitlines()[-1][:100] if tb else label[:40]
        if key not in seen:
            seen.add(key)
            print("=====", label[:600], "\n", tb[-1500:])
    print("DONE", seed, iterations, len(fuzzer.problems))
    return 1 if fuzzer.problems else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2])))
