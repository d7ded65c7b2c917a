"""The readable text form of records filters: tokenizer and recursive-descent parser (the
formatter is :mod:`~pubsift.models.records.formatting`, its names imported here too).

A filter is a conjunction of attribute filters (Mühl 2002, §4.3.2), written

    symbol = "IBM" and price > 45.5 and exchange in {"NYSE", "NASDAQ"} and name prefix "Inter"

The grammar (EBNF, with every operator and the error messages) is in ``docs/records-syntax.md``.
Several clauses on one attribute are combined into one attribute filter with
:func:`relations.conjoin` (``x >= 3 and x <= 5`` -> ``x in [3, 5]``, Mühl's
conjunction-completeness); a contradiction or a combination that is not one attribute filter
is a :class:`FilterSyntaxError` pointing at the clause that broke it. Every clause is brought
into canonical form with :func:`relations.normalize`, so ``parse_text(format_filter(f)) == f``
for every canonical filter ``f`` (and is identical to ``f`` for any filter).

:func:`parse_filter` / :func:`parse_filters` also accept EventBridge JSON patterns (a mapping,
or text starting with ``{``), see :mod:`pubsift.models.records.eventbridge`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from pubsift.core.errors import FilterSyntaxError
from pubsift.models.constraints import (
    ELEMENT_OPS,
    END,
    EXCLUDABLE_OPS,
    NUMBER,
    NUMBER_RE,
    PUNCT,
    STRING,
    WORD,
    Conjunction,
    Constraint,
    Interval,
    NotRepresentable,
    Op,
    RegexpError,
    Scalar,
    Token,
    TooComplex,
    TypeSet,
    Unsatisfiable,
    check_regexp,
    limits,
    load_network,
    number_value,
    quote,
    read_string,
    skey,
    wildcard_parts,
)
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.formatting import (
    _CMP,
    _WORD_RE,
    clause_text,
    format_constraint,
    format_filter,
    format_literal,
    format_name,
    too_complex_message,
    unsatisfiable_message,
)
from pubsift.models.records.typesystem import Schema, UnknownTypeError

# --------------------------------------------------------------------------------------
# tokens

_NEG_INF_RE = re.compile(r"-inf(?![\w$.-])", re.IGNORECASE)
_PUNCT = ("<=", ">=", "!=", "<", ">", "=", "[", "]", "(", ")", "{", "}", ",")


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens; raises :class:`FilterSyntaxError` at the first bad one."""
    toks: list[Token] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            toks.append(Token(END, "", None, n))
            return toks
        c = text[i]
        if c == '"':
            s, j = read_string(text, i)
            if limits.string_too_long(s):
                raise FilterSyntaxError(limits.string_message(s), text, i)
            toks.append(Token(STRING, text[i:j], s, i))
            i = j
            continue
        if c == "-" and (m := _NEG_INF_RE.match(text, i)):
            toks.append(Token(NUMBER, m.group(), -math.inf, i))
            i = m.end()
            continue
        if c in "0123456789-":
            m = NUMBER_RE.match(text, i)
            if m is None:
                raise FilterSyntaxError(
                    "malformed number: a '-' must be followed by digits or inf", text, i
                )
            j = m.end()
            if j < n and (text[j].isalnum() or text[j] in "._$"):
                raise FilterSyntaxError(
                    "malformed number (JSON style: no leading zeros, "
                    "digits after '.', e.g. 0.5, -3, 1e-9)",
                    text,
                    i,
                )
            toks.append(Token(NUMBER, m.group(), _number(m.group(), text, i), i))
            i = j
            continue
        for p in _PUNCT:
            if text.startswith(p, i):
                toks.append(Token(PUNCT, p, p, i))
                i += len(p)
                break
        else:
            m = _WORD_RE.match(text, i)
            if m is None:
                if (
                    c == "."
                    and toks
                    and toks[-1].kind == WORD
                    and toks[-1].pos + len(toks[-1].text) == i
                ):
                    raise FilterSyntaxError(
                        "a '.' in an attribute name must be followed by the next part of the name",
                        text,
                        i,
                    )
                raise FilterSyntaxError(f"unexpected character {c!r}", text, i)
            if limits.string_too_long(m.group()):
                raise FilterSyntaxError(limits.string_message(m.group()), text, i)
            toks.append(Token(WORD, m.group(), m.group(), i))
            i = m.end()


def _number(lexeme: str, text: str, pos: int) -> int | float:
    digits = len(lexeme) - lexeme.startswith("-")
    if digits > limits.MAX_INT_DIGITS and not any(c in lexeme for c in ".eE"):
        raise FilterSyntaxError(limits.int_message(digits), text, pos)
    v = number_value(lexeme)
    if isinstance(v, float) and math.isinf(v):
        raise FilterSyntaxError(
            f"number {lexeme} is too large for a 64-bit float "
            "(write inf or -inf for an unbounded end)",
            text,
            pos,
        )
    return v


# --------------------------------------------------------------------------------------
# parser

_STR_OPS = {
    "prefix": Op.PREFIX,
    "suffix": Op.SUFFIX,
    "postfix": Op.SUFFIX,
    "substring": Op.SUBSTRING,
    "equals-ignore-case": Op.EQ_IGNORE_CASE,
    "ieq": Op.EQ_IGNORE_CASE,
    "prefix-ignore-case": Op.PREFIX_IGNORE_CASE,
    "suffix-ignore-case": Op.SUFFIX_IGNORE_CASE,
}
#: operators whose string operand is read by a parser of its own
_PATTERN_OPS = ("wildcard", "regexp", "cidr")
#: operators over a parenthesized list of predicates
_GROUP_OPS = {"anything-but": Op.ANYTHING_BUT, "all": Op.ALL}
_NOT_STR_OPS = {"prefix": Op.NOT_PREFIX, "suffix": Op.NOT_SUFFIX, "postfix": Op.NOT_SUFFIX}
_SET_OPS = {
    "subset": Op.SUBSET,
    "superset": Op.SUPERSET,
    "disjoint": Op.DISJOINT,
    "disjunct": Op.DISJOINT,
    "overlaps": Op.OVERLAPS,
}
_OPERATORS = (
    "exists, not exists, instanceof, = != < <= > >=, in, not in, prefix, "
    "not prefix, suffix, not suffix, substring, equals-ignore-case, "
    "prefix-ignore-case, suffix-ignore-case, wildcard, regexp, cidr, subset, "
    "superset, contains, not contains, disjoint, overlaps, any, anything-but, all"
)


class _Parser:
    def __init__(self, text: str, schema: Schema) -> None:
        self.text = text
        self.schema = schema
        self.toks = tokenize(text)
        self.i = 0

    # -- helpers ------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def advance(self) -> Token:
        t = self.toks[self.i]
        self.i += 1
        return t

    def error(self, msg: str, pos: int | None = None) -> FilterSyntaxError:
        return FilterSyntaxError(msg, self.text, self.tok.pos if pos is None else pos)

    def is_word(self, *words: str) -> bool:
        t = self.tok
        return t.kind == WORD and t.text.casefold() in words

    def is_punct(self, *ps: str) -> bool:
        return self.tok.kind == PUNCT and self.tok.text in ps

    def expect_punct(self, p: str, what: str) -> Token:
        if not self.is_punct(p):
            raise self.error(f"expected {p!r} {what}, found {self.tok.describe()}")
        return self.advance()

    # -- grammar ------------------------------------------------------------------
    def filter(self) -> RecordFilter:
        if self.tok.kind == END:
            return RecordFilter()
        if self.is_word("true") and self.toks[self.i + 1].kind == END:
            return RecordFilter()
        acc: dict[str, Conjunction] = {}
        while True:
            pos = self.tok.pos
            name = self.name()
            c = self.predicate(name)
            conj = acc.get(name)
            if conj is None:
                conj = acc[name] = Conjunction(self.schema.is_integer(name))
            try:
                conj.add(c)
            except Unsatisfiable:
                prev = conj.value if conj else None
                raise FilterSyntaxError(
                    unsatisfiable_message(name, prev, c), self.text, pos
                ) from None
            except TooComplex:
                raise FilterSyntaxError(too_complex_message(name, c), self.text, pos) from None
            except NotRepresentable:
                raise FilterSyntaxError(
                    f"the clauses on attribute {name!r} cannot be combined into one attribute "
                    f"filter ({clause_text(name, conj.value)} and {clause_text(name, c)}); a "
                    "filter holds at most one attribute filter per attribute",
                    self.text,
                    pos,
                ) from None
            if self.tok.kind == END:
                return RecordFilter.of({n: k.value for n, k in acc.items()})
            if not self.is_word("and"):
                raise self.error(
                    f"expected 'and' or the end of the filter, found {self.tok.describe()}"
                )
            self.advance()

    def name(self) -> str:
        t = self.tok
        if t.kind == WORD:
            self.advance()
            return t.value
        if t.kind == STRING:
            if not t.value:
                raise self.error("attribute names are non-empty")
            self.advance()
            return t.value
        raise self.error(f"expected an attribute name, found {t.describe()}")

    def predicate(self, name: str) -> Constraint:
        t = self.tok
        if t.kind == PUNCT and t.text in _CMP:
            self.advance()
            op = _CMP[t.text]
            lit_tok = self.tok
            v = self.literal()
            if op not in (Op.EQ, Op.NE) and (isinstance(v, bool) or v is None):
                raise self.error(
                    f"{t.text} compares numbers or strings, not {lit_tok.text}", lit_tok.pos
                )
            return Constraint(op, v)
        if t.kind != WORD:
            raise self.error(
                f"expected an operator after attribute {name!r} "
                f"({_OPERATORS}), found {t.describe()}"
            )
        w = t.text.casefold()
        self.advance()
        if w == "any":
            return self.any_element(name)
        if w == "exists":
            return Constraint(Op.EXISTS)
        if w == "instanceof":
            return Constraint(Op.INSTANCEOF, self.type_name())
        if w == "in":
            return self.membership(negated=False)
        if w in _STR_OPS:
            return Constraint(_STR_OPS[w], self.string(w))
        if w in _PATTERN_OPS:
            return self.pattern(w)
        if w in _GROUP_OPS:
            return self.group(name, _GROUP_OPS[w])
        if w in _SET_OPS:
            return Constraint(_SET_OPS[w], self.set_literal(allow_empty=True))
        if w == "contains":
            return Constraint(Op.CONTAINS, skey(self.literal()))
        if w == "not":
            if self.is_word("exists"):
                self.advance()
                return Constraint(Op.NOT_EXISTS)
            if self.is_word("in"):
                self.advance()
                return self.membership(negated=True)
            if self.is_word("contains"):
                self.advance()
                return Constraint(Op.NOT_CONTAINS, skey(self.literal()))
            if self.is_word(*_NOT_STR_OPS):
                w2 = self.advance().text.casefold()
                return Constraint(_NOT_STR_OPS[w2], self.string("not " + w2))
            raise self.error(
                "after 'not' comes exists, in, prefix, suffix or contains; "
                f"found {self.tok.describe()}"
            )
        raise self.error(
            f"unknown operator {t.text!r} after attribute {name!r} (operators: {_OPERATORS})", t.pos
        )

    def any_element(self, name: str) -> Constraint:
        """``any`` + a scalar predicate: some leaf of the value (the value itself, or an
        element of a list) satisfies it (EventBridge's reading of a pattern)."""
        t = self.tok
        if t.kind == WORD and t.text.casefold() == "any":
            raise self.error("'any' applies to a scalar predicate, not to another 'any'")
        c = self.predicate(name)
        if c.op not in ELEMENT_OPS:
            raise self.error(
                f"after 'any' comes a predicate on one value (=, <, in, prefix, "
                f"exists, ...), not {c.op.value!r}",
                t.pos,
            )
        return Constraint(Op.ANY, c)

    def pattern(self, w: str) -> Constraint:
        """``wildcard "a*b"`` (EventBridge escapes), ``regexp "..."`` (I-Regexp, RFC
        9485), ``cidr "10.0.0.0/24"``."""
        t = self.tok
        s = self.string(w)
        try:
            if w == "wildcard":
                parts = wildcard_parts(s)
                return (
                    Constraint(Op.EQ, parts[0])
                    if len(parts) == 1
                    else Constraint(Op.WILDCARD, parts)
                )
            if w == "regexp":
                check_regexp(s, "$")
                return Constraint(Op.REGEXP, s)
            return Constraint(Op.CIDR, load_network(s, "$"))
        except RegexpError as e:
            raise self.error(f"wildcard {quote(s)}: {e.message}", t.pos) from None
        except FilterSyntaxError as e:
            raise self.error(e.message, t.pos) from None

    def group(self, name: str, op: Op) -> Constraint:
        """``anything-but (= "a", prefix "b")``: a scalar value that no predicate accepts;
        ``all (any = 1, any prefix "x")``: every predicate holds."""
        self.expect_punct("(", f"after {op.value}")
        items = []
        while True:
            t = self.tok
            c = self.predicate(name)
            if op is Op.ANYTHING_BUT and c.op not in EXCLUDABLE_OPS:
                raise self.error(
                    "anything-but excludes with =, in, prefix, suffix, equals-ignore-case, "
                    f"prefix-ignore-case, suffix-ignore-case or wildcard, not {c.op.value!r}",
                    t.pos,
                )
            items.append(c)
            if not self.is_punct(","):
                break
            self.advance()
        self.expect_punct(")", f"closing {op.value}")
        if op is Op.ALL and len(items) < 2:
            raise self.error("all takes at least two predicates")
        return Constraint(op, frozenset(items))

    def type_name(self) -> TypeSet:
        t = self.tok
        if t.kind not in (WORD, STRING):
            raise self.error(f"expected a type name after instanceof, found {t.describe()}")
        self.advance()
        try:
            return self.schema.types.typeset(t.value)
        except UnknownTypeError as e:
            raise self.error(str(e), t.pos) from None

    def membership(self, negated: bool) -> Constraint:
        if self.is_punct("[", "("):
            iv = self.interval()
            return Constraint(Op.NOT_IN_RANGE if negated else Op.IN_RANGE, iv)
        if self.is_punct("{"):
            pos = self.tok.pos
            s = self.set_literal(allow_empty=False)
            if not s:
                raise self.error("the set after 'in' must not be empty", pos)
            return Constraint(Op.NOT_IN_SET if negated else Op.IN_SET, s)
        raise self.error(
            "expected an interval [a, b] / (a, b) or a set {a, b} after "
            f"{'not in' if negated else 'in'}, found {self.tok.describe()}"
        )

    def interval(self) -> Interval:
        lo_closed = self.advance().text == "["
        lo_tok = self.tok
        lo = self.bound()
        self.expect_punct(",", "between the ends of the interval")
        hi_tok = self.tok
        hi = self.bound()
        if not self.is_punct("]", ")"):
            raise self.error(
                f"expected ']' or ')' closing the interval, found {self.tok.describe()}"
            )
        hi_closed = self.advance().text == "]"
        if isinstance(lo, str) or isinstance(hi, str):
            if isinstance(lo, float) and lo == -math.inf:
                lo, lo_closed = "", True
            elif not isinstance(lo, str):
                raise self.error("a string interval starts at a string or -inf", lo_tok.pos)
            if isinstance(hi, float) and hi == math.inf:
                hi = None
            elif not isinstance(hi, str):
                raise self.error("a string interval ends at a string or inf", hi_tok.pos)
        return Interval(lo, hi, lo_closed, hi_closed)

    def bound(self) -> Any:
        t = self.tok
        v = self.literal()
        if isinstance(v, bool) or v is None:
            raise self.error(f"interval ends are numbers or strings, not {t.text}", t.pos)
        return v

    def set_literal(self, allow_empty: bool) -> frozenset:
        if not self.is_punct("{"):
            raise self.error(f"expected a set {{a, b, ...}}, found {self.tok.describe()}")
        self.advance()
        items: list[Scalar] = []
        if not self.is_punct("}"):
            items.append(self.literal())
            while self.is_punct(","):
                self.advance()
                items.append(self.literal())
        self.expect_punct("}", "closing the set")
        return frozenset(skey(v) for v in items)

    def string(self, op: str) -> str:
        t = self.tok
        if t.kind != STRING:
            raise self.error(f"{op} expects a string in double quotes, found {t.describe()}")
        self.advance()
        return t.value

    def literal(self) -> Scalar:
        t = self.tok
        if t.kind in (STRING, NUMBER):
            self.advance()
            return t.value
        if t.kind == WORD:
            w = t.text.casefold()
            if w in _WORD_LITERALS:
                self.advance()
                return _WORD_LITERALS[w]
            raise self.error(
                f"expected a value, found the bare word {t.text!r}; strings "
                f"are written in double quotes: {quote(t.text)}"
            )
        raise self.error(
            f'expected a value (a "string", a number, true, false, null), found {t.describe()}'
        )


_WORD_LITERALS: dict[str, Scalar] = {"true": True, "false": False, "null": None, "inf": math.inf}


def parse_text(text: str, schema: Schema | None = None) -> RecordFilter:
    """Parse the text form; ``""`` and ``"true"`` are the empty filter (matches every
    notification). Raises :class:`FilterSyntaxError` with the position of the problem."""
    if not isinstance(text, str):
        raise TypeError(f"parse_text expects a str, not {type(text).__name__}")
    if limits.has_surrogate(text):
        # shown with U+FFFD in its place: the message must be printable as UTF-8
        pos = limits.first_surrogate(text)
        raise FilterSyntaxError(
            f"lone surrogate U+{ord(text[pos]):04X}: a filter holds Unicode "
            "characters that UTF-8 can encode",
            limits.printable(text),
            pos,
        )
    return _Parser(text, schema or Schema()).filter()


def parse_filters(
    spec: str | Mapping[str, Any], schema: Schema | None = None
) -> list[RecordFilter]:
    """The conjunctive filters a specification denotes (their union is meant): one for the
    text form; one or more for an EventBridge pattern (``$or``, several matchers for a
    field). A mapping, or text whose first non-blank character is ``{``, is an EventBridge
    pattern."""
    from pubsift.models.records import eventbridge

    if isinstance(spec, Mapping) or (isinstance(spec, str) and spec.lstrip().startswith("{")):
        return eventbridge.parse_pattern(spec, schema)
    if isinstance(spec, str):
        return [parse_text(spec, schema)]
    raise FilterSyntaxError(
        f"a records filter is text or a JSON object (EventBridge "
        f"pattern), not {type(spec).__name__}"
    )


def parse_filter(spec: str | Mapping[str, Any], schema: Schema | None = None) -> RecordFilter:
    """Exactly one conjunctive filter from the text form or an EventBridge pattern; a
    pattern that denotes several (``$or``) is an error pointing to :func:`parse_filters`."""
    fs = parse_filters(spec, schema)
    if len(fs) != 1:
        raise FilterSyntaxError(
            f"this pattern denotes a disjunction of {len(fs)} conjunctive "
            "filters ($or or several matchers for one field); use "
            "parse_filters to get all of them"
        )
    return fs[0]


__all__ = [
    "format_constraint",
    "format_filter",
    "format_literal",
    "format_name",
    "parse_filter",
    "parse_filters",
    "parse_text",
    "tokenize",
]
