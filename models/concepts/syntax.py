"""The text and JSON forms of concept filters, parsed into a :class:`FilterSpec` (terms and
literals as written, with positions); :mod:`pubsift.models.concepts.filters` resolves the
terms in the ontology and normalizes the constants into the matching context.

Text form (keywords are case-insensitive; full grammar in ``docs/concepts.md``)::

    filter    := term [predicate] [("where" | "with") condition ("and" condition)*]
    condition := path predicate
    path      := term ("." term)*
    term      := word | "quoted label"           e.g. StockQuote, "prix final"
    predicate := ("<" | "<=" | ">" | ">=" | "=" | "!=") literal
               | ("after" | "before" | "on") literal          (dates: >, <, =)
               | "between" literal "and" literal              (closed range)
               | ["not"] "in" range | ["not"] "in" set
               | ["not"] ("prefix" | "suffix") string | "contains" string
               | "exists" | "not" "exists"
    range     := ("[" | "(") literal "," literal ("]" | ")") [unit]
    set       := "{" literal ("," literal)* "}" [unit]
    literal   := number [unit] | string | date | true | false | null
    date      := YYYY-MM-DD[THH:MM[:SS]]                      (ISO 8601, unquoted)

A unit is a pint unit expression (``kg``, ``lb``, ``km/h``, ``meter ** 2``), a UN/ECE code
(``KGM``) or an ISO 4217 currency code (``USD``). Example::

    StockQuote where FinalPrice < 100 USD and NetWeight >= 2 kg and DateOfIssue after 2017-06-01

JSON form::

    {"concept": "StockQuote", "context": {"currency": "EUR"},
     "where": [{"attr": "FinalPrice", "op": "<", "value": 100, "currency": "USD"},
               {"attr": "NetWeight", "op": "between", "value": [1, 2], "unit": "kg"},
               {"attr": "DateOfIssue", "op": "after", "value": "2017-06-01"}]}

``attr`` may be a list (a path) or omitted (the object's own value).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pubsift.core.errors import FilterSyntaxError
from pubsift.models.concepts.limits import (
    MAX_NUMBER_TEXT,
    MAX_TEXT_LENGTH,
    MAX_TOKENS,
    number_problem,
    text_problem,
)
from pubsift.models.constraints import END, NUMBER_RE, STRING_RE, Token, number_value, read_string

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Literal:
    """A constant as written: value (number, str, bool, None), its unit or currency token,
    and whether it was written as an ISO date."""

    value: Any
    unit: str | None = None
    is_date: bool = False
    pos: int | None = None
    unit_pos: int | None = None


@dataclass(frozen=True, slots=True)
class Condition:
    """``path op args``: op is one of the text operators (``<``, ``between``, ``in-range``,
    ``in``, ``not-in``, ``prefix``, ``exists`` ...), args the literals (ranges carry
    ``lo_closed``/``hi_closed`` in ``closed``)."""

    path: tuple[str, ...]
    op: str
    args: tuple[Literal, ...] = ()
    closed: tuple[bool, bool] = (True, True)
    pos: int | None = None


@dataclass(frozen=True)
class FilterSpec:
    concept: str
    conditions: tuple[Condition, ...]
    context: Mapping[str, Any] | None = None
    text: str | None = None
    concept_pos: int | None = None


# -- tokens -------------------------------------------------------------------------------
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<date>\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})?)?)
  | (?P<number>{number})
  | (?P<string>(?s:{string}))
  | (?P<op><=|>=|!=|==|<|>|=)
  | (?P<punct>[\[\](){},.*/^])
  | (?P<word>[^\W\d][\w°µ]*)
  | (?P<unitsym>[°µ$€£%][\w°µ]*)
""".replace("{number}", NUMBER_RE.pattern).replace("{string}", STRING_RE.pattern),
    re.VERBOSE,
)

_KEYWORDS = {
    "where",
    "with",
    "and",
    "between",
    "in",
    "not",
    "after",
    "before",
    "on",
    "prefix",
    "suffix",
    "contains",
    "exists",
    "true",
    "false",
    "null",
}
_CMP = {"<", "<=", ">", ">=", "=", "==", "!="}
_DATE_OPS = {"after": ">", "before": "<", "on": "="}


def _tokens(text: str) -> Iterator[Token]:
    """The tokens of ``text`` (spaces dropped), then an ``end`` token. The string pattern
    is possessive (unrolled, no backtracking): a literal of any length costs no memory
    beyond its text (Friedl, *Mastering Regular Expressions*, "unrolling the loop")."""
    i, n = 0, len(text)
    while i < n:
        m = _TOKEN.match(text, i)
        if m is None:
            what = (
                "unterminated string: no closing quote"
                if text[i] == '"'
                else f"unexpected character {text[i]!r}"
            )
            raise FilterSyntaxError(what, text, i)
        kind = m.lastgroup
        assert kind is not None  # every alternative of the pattern is a named group
        if kind != "ws":
            yield Token(kind, m.group(), m.group(), i)
        i = m.end()
    yield Token(END, "", None, n)


def count_tokens(text: str) -> int:
    """How many tokens the parser would read in ``text`` (constant memory)."""
    return sum(1 for _ in _tokens(text))


def _tokenize(text: str) -> list[Token]:
    if len(text) > MAX_TEXT_LENGTH:  # before any work: the limit bounds time and memory
        raise FilterSyntaxError(
            f"filter too long: {len(text):,} characters (at most "
            f"{MAX_TEXT_LENGTH:,} in the text form)",
            text,
            MAX_TEXT_LENGTH,
        )
    bad = _SURROGATE.search(text)
    if bad is not None:  # shown with U+FFFD in their place: messages must be printable
        problem = text_problem(text)
        assert problem is not None  # the surrogate found
        raise FilterSyntaxError(problem, _SURROGATE.sub("\ufffd", text), bad.start())
    out: list[Token] = []
    for t in _tokens(text):
        if len(out) == MAX_TOKENS:
            raise FilterSyntaxError(
                f"filter too long: more than {MAX_TOKENS:,} tokens", text, t.pos
            )
        out.append(t)
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    # helpers
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def error(self, msg: str, pos: int | None = None) -> FilterSyntaxError:
        return FilterSyntaxError(msg, self.text, self.tok.pos if pos is None else pos)

    def kw(self, *words: str) -> bool:
        t = self.tok
        return t.kind == "word" and t.text.lower() in words

    def take(self) -> Token:
        t = self.tok
        self.i += 1
        return t

    def expect_punct(self, p: str) -> Token:
        if self.tok.text != p or self.tok.kind not in ("punct", "op"):
            raise self.error(f"expected {p!r}, found {self.tok.text or 'end of filter'!r}")
        return self.take()

    # grammar
    def parse(self) -> FilterSpec:
        if self.tok.kind == "end":
            raise self.error("empty filter: expected a concept, e.g. StockQuote")
        pos = self.tok.pos
        concept = self.term()
        conds: list[Condition] = []
        if not self.kw("where", "with") and self.tok.kind != "end":
            conds.append(self.predicate((), pos))
            while self.kw("and"):
                self.take()
                conds.append(self.predicate((), self.tok.pos))
        if self.kw("where", "with"):
            self.take()
            conds.append(self.condition())
            while self.kw("and"):
                self.take()
                conds.append(self.condition())
        if self.tok.kind != "end":
            raise self.error(f"unexpected {self.tok.text!r}: expected 'and' or the end")
        return FilterSpec(concept, tuple(conds), None, self.text, pos)

    def string(self, t: Token) -> str:
        """The value of a quoted string token (a JSON string literal)."""
        return read_string(self.text, t.pos)[0]

    def term(self) -> str:
        t = self.tok
        if t.kind == "string":
            self.take()
            return self.string(t)
        if t.kind == "word" and t.text.lower() not in _KEYWORDS:
            self.take()
            return t.text
        raise self.error(f"expected a concept name, found {t.text or 'end of filter'!r}")

    def condition(self) -> Condition:
        pos = self.tok.pos
        path = [self.term()]
        while self.tok.text == "." and self.tok.kind == "punct":
            self.take()
            path.append(self.term())
        return self.predicate(tuple(path), pos)

    def predicate(self, path: tuple[str, ...], pos: int) -> Condition:
        t = self.tok
        if t.kind == "op":
            self.take()
            op = "=" if t.text == "==" else t.text
            return Condition(path, op, (self.literal(),), pos=pos)
        if self.kw(*_DATE_OPS):
            self.take()
            return Condition(path, _DATE_OPS[t.text.lower()], (self.literal(),), pos=pos)
        if self.kw("between"):
            self.take()
            lo = self.literal()
            if not self.kw("and"):
                raise self.error("expected 'and' in 'between ... and ...'")
            self.take()
            return Condition(path, "in-range", (lo, self.literal()), pos=pos)
        neg = False
        if self.kw("not"):
            self.take()
            neg = True
        if self.kw("exists"):
            self.take()
            return Condition(path, "not-exists" if neg else "exists", pos=pos)
        if self.kw("in"):
            self.take()
            if self.tok.text in ("[", "("):
                return self.range(path, pos, neg)
            if self.tok.text == "{":
                return self.set(path, pos, neg)
            raise self.error("expected a range [a, b] or a set {a, b} after 'in'")
        if self.kw("prefix", "suffix", "contains"):
            word = self.take().text.lower()
            if neg and word == "contains":
                raise self.error("'not contains' is not supported", t.pos)
            lit = self.literal()
            if not isinstance(lit.value, str) or lit.is_date:
                raise self.error(f"'{word}' needs a quoted string", lit.pos)
            op = {"prefix": "prefix", "suffix": "suffix", "contains": "substring"}[word]
            return Condition(path, ("not-" + op) if neg else op, (lit,), pos=pos)
        raise self.error(
            f"expected an operator (<, =, between, in, after, exists, ...), "
            f"found {self.tok.text or 'end of filter'!r}"
        )

    def range(self, path, pos, neg) -> Condition:
        lo_closed = self.take().text == "["
        lo = self.literal()
        self.expect_punct(",")
        hi = self.literal()
        if self.tok.text not in ("]", ")"):
            raise self.error("expected ']' or ')' to close the range")
        hi_closed = self.take().text == "]"
        unit = self.unit()
        lo, hi = (_with_unit(x, unit) for x in (lo, hi))
        return Condition(
            path, "not-in-range" if neg else "in-range", (lo, hi), (lo_closed, hi_closed), pos
        )

    def set(self, path, pos, neg) -> Condition:
        self.take()
        items = [self.literal()]
        while self.tok.text == ",":
            self.take()
            items.append(self.literal())
        self.expect_punct("}")
        unit = self.unit()
        return Condition(
            path, "not-in" if neg else "in", tuple(_with_unit(x, unit) for x in items), pos=pos
        )

    def literal(self) -> Literal:
        t = self.tok
        if t.kind == "number":
            self.take()
            if len(t.text) > MAX_NUMBER_TEXT:
                raise self.error(
                    f"number of {len(t.text)} characters: out of range (at most ±1.8e308)", t.pos
                )
            v = number_value(t.text)
            if number_problem(v) or (isinstance(v, float) and math.isinf(v)):
                raise self.error(f"number {t.text[:40]} is out of range (at most ±1.8e308)", t.pos)
            unit_pos = self.tok.pos
            return Literal(v, self.unit(), pos=t.pos, unit_pos=unit_pos)
        if t.kind == "string":
            self.take()
            return Literal(self.string(t), pos=t.pos)
        if t.kind == "date":
            self.take()
            return Literal(t.text, is_date=True, pos=t.pos)
        if self.kw("true", "false", "null"):
            self.take()
            return Literal({"true": True, "false": False, "null": None}[t.text.lower()], pos=t.pos)
        if t.kind == "word" and t.text.lower() in ("inf", "infinity"):
            self.take()
            unit_pos = self.tok.pos
            return Literal(float("inf"), self.unit(), pos=t.pos, unit_pos=unit_pos)
        raise self.error(f"expected a value, found {t.text or 'end of filter'!r}")

    def unit(self) -> str | None:
        """A unit expression right after a number: words joined by ``/``, ``*``, ``**n``."""
        t = self.tok
        if t.kind not in ("word", "unitsym") or t.text.lower() in _KEYWORDS:
            return None
        unit = _UNIT.match(self.text, t.pos)
        assert unit is not None  # a word or unit symbol starts a unit
        end = unit.end()
        while self.tok.kind != "end" and self.tok.pos < end:
            self.take()
        return self.text[t.pos : end]


_UNIT = re.compile(
    r"(?:[^\W\d]|[°µ$€£%])[\w°µ]*"
    r"(?:\s*(?:\*\*\s*-?\d+(?:\.\d+)?|\^\s*-?\d+(?:\.\d+)?"
    r"|[/*]\s*(?:[^\W\d]|[°µ])[\w°µ]*))*"
)


def _with_unit(lit: Literal, unit: str | None) -> Literal:
    if (
        unit is None
        or lit.unit is not None
        or not isinstance(lit.value, (int, float))
        or isinstance(lit.value, bool)
    ):
        return lit
    return Literal(lit.value, unit, lit.is_date, lit.pos, lit.unit_pos)


def parse_text(text: str) -> FilterSpec:
    """Parse the text form; :class:`FilterSyntaxError` names the position."""
    return _Parser(text).parse()


# -- JSON form ----------------------------------------------------------------------------
_JSON_OPS = {
    "<",
    "<=",
    ">",
    ">=",
    "=",
    "!=",
    "after",
    "before",
    "on",
    "between",
    "in",
    "not-in",
    "in-range",
    "not-in-range",
    "prefix",
    "not-prefix",
    "suffix",
    "not-suffix",
    "contains",
    "exists",
    "not-exists",
}


def parse_json(obj: Mapping[str, Any]) -> FilterSpec:
    """Parse the JSON form (see module docstring); errors name the JSON path."""

    def err(msg: str, path: str) -> FilterSyntaxError:
        return FilterSyntaxError(msg, path=path)

    unknown = set(obj) - {"concept", "where", "context"}
    if unknown:
        raise err(
            f"unknown member(s) {sorted(map(str, unknown))}; a filter has concept, where, context",
            "$",
        )
    concept = obj.get("concept")
    if not isinstance(concept, str) or not concept or text_problem(concept):
        raise err("a filter needs a concept (a non-empty string)", "$.concept")
    where = obj.get("where", [])
    if not isinstance(where, list):
        raise err("'where' is a list of conditions", "$.where")
    conds = [_json_condition(c, f"$.where[{i}]", err) for i, c in enumerate(where)]
    return FilterSpec(concept, tuple(conds), obj.get("context"))


_RANGE_OPS = ("between", "in-range", "not-in-range")


def _json_condition(c: Any, p: str, err) -> Condition:
    if not isinstance(c, Mapping):
        raise err("a condition is a JSON object", p)
    bad = set(c) - {"attr", "op", "value", "unit", "currency", "closed"}
    if bad:
        raise err(f"unknown member(s) {sorted(map(str, bad))} in a condition", p)
    attr = c.get("attr", [])
    path = (attr,) if isinstance(attr, str) else tuple(attr) if isinstance(attr, list) else None
    if path is None or not all(isinstance(a, str) and a and not text_problem(a) for a in path):
        raise err("'attr' is a concept name or a list of them", p + ".attr")
    op = c.get("op")
    if not isinstance(op, str) or op not in _JSON_OPS:
        shown = repr(op) if isinstance(op, str) and len(op) < 40 else type(op).__name__
        raise err(f"unknown op {shown} (known: {', '.join(sorted(_JSON_OPS))})", p + ".op")
    if "unit" in c and "currency" in c:
        raise err("give 'unit' or 'currency', not both", p)
    key = "unit" if "unit" in c else "currency"
    unit = c.get(key)
    if key in c and (not isinstance(unit, str) or not unit.strip() or text_problem(unit)):
        raise err(f"'{key}' is a non-empty string", f"{p}.{key}")
    if "closed" in c and op not in _RANGE_OPS:
        raise err(f"'closed' belongs to a range (between, in-range), not to {op!r}", p + ".closed")
    closed = c.get("closed", [True, True])
    if not (
        isinstance(closed, list) and len(closed) == 2 and all(isinstance(b, bool) for b in closed)
    ):
        raise err("'closed' is two booleans [lo_closed, hi_closed]", p + ".closed")

    def lit(v: Any, where: str) -> Literal:
        if isinstance(v, (dict, list)) or not (v is None or isinstance(v, (str, int, float))):
            raise err(f"a value is a scalar, not {type(v).__name__}", where)
        if isinstance(v, str) and text_problem(v):
            raise err(text_problem(v), where)
        num = isinstance(v, (int, float)) and not isinstance(v, bool)
        if num and number_problem(v):
            raise err(number_problem(v), where)
        if unit is not None and not num:
            raise err(f"'{key}' belongs to a number, not to {type(v).__name__} values", where)
        is_date = isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}.*", v) is not None
        return Literal(v, unit if num else None, is_date)

    value = c.get("value")
    if op in ("exists", "not-exists"):
        if "value" in c or key in c:
            raise err(f"op {op!r} takes no value nor unit", p)
        return Condition(path, op)
    if op in _RANGE_OPS or op in ("in", "not-in"):
        if (
            not isinstance(value, list)
            or not value
            or (op not in ("in", "not-in") and len(value) != 2)
        ):
            raise err(
                f"op {op!r} needs a list value" + ("" if op in ("in", "not-in") else " [lo, hi]"),
                p + ".value",
            )
        name = "in-range" if op == "between" else op
        args = tuple(lit(v, f"{p}.value[{j}]") for j, v in enumerate(value))
        return Condition(path, name, args, (closed[0], closed[1]))
    if "value" not in c:
        raise err(f"op {op!r} needs a value", p)
    name = _DATE_OPS.get(op, op)
    name = "substring" if name == "contains" else name
    return Condition(path, name, (lit(value, p + ".value"),))
