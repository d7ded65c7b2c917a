"""Value predicates of tree-pattern nodes, with XPath 1.0 comparison semantics.

A value predicate constrains one *target* of an element: an attribute (``@name``), the
element's text-node children (``text()``) or its string value (``.``). Its constraint is a
records :class:`~pubsift.models.constraints.constraints.Constraint` applied to

* the target's string, in the ``str`` domain (XPath ``=`` / ``!=`` against a string literal,
  ``starts-with``, ``contains``), or
* the target's string converted with XPath's ``number()`` (libxml2's conversion, as lxml
  evaluates it), in the ``num`` domain (any comparison against a number literal, and
  ``<``, ``<=``, ``>``, ``>=`` against any literal). ``NaN`` never satisfies ``=`` or a
  relational operator and always satisfies ``!=``, exactly as in IEEE 754 and XPath 1.0.

XPath compares a node-set existentially: a predicate holds if *some* node of the target
satisfies it. Attributes and the string value are single nodes; ``text()`` may hold several
text nodes, which is why two ``text()`` predicates are never conjoined.

Covering between predicates (Mühl §4.4.3, "covering of attribute filters": same name and
L_A(A1) ⊇ L_A(A2)) is delegated to the shared constraint algebra
(:mod:`pubsift.models.constraints.relations`) within one domain, with ``NaN`` handled here; a
string equality also implies numeric predicates on the same target.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from pubsift.models.constraints import Constraint, Op, relations
from pubsift.models.xml.numbers import NUMBER_CHARS, format_number, xpath_number

STR, NUM, ANY = "str", "num", "any"
TEXT, SELF = "text()", "."

#: XPath operator symbol -> records operator, for comparisons
COMPARISONS = {"=": Op.EQ, "!=": Op.NE, "<": Op.LT, "<=": Op.LE, ">": Op.GT, ">=": Op.GE}
_SYMBOL = {op: sym for sym, op in COMPARISONS.items()}
FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

#: the text of an infinite operand (a relational comparison with a string literal such as
#: ``"1e999"``): a string literal that number() reads as Infinity
_INFINITE = {math.inf: '"1e999"', -math.inf: '"-1e999"'}


def number_text(x: float) -> str | None:
    """The literal of numeric operand ``x`` in a relational comparison (None: none
    reads back as exactly x)."""
    if x in _INFINITE:
        return _INFINITE[x]
    return format_number(x)


def format_string(s: str) -> str:
    """An XPath 1.0 string literal. XPath 1.0 has no escapes, so a string holding both
    quote characters has no literal; the parser never produces one (a literal is
    delimited by one of them)."""
    return f"'{s}'" if '"' in s else f'"{s}"'


@dataclass(frozen=True, slots=True)
class Pred:
    """``constraint`` over ``target`` (``@name`` in Clark notation, ``text()`` or ``.``)
    read in ``domain`` (``str``, ``num``, or ``any`` for plain existence)."""

    target: str
    domain: str
    constraint: Constraint

    # -- evaluation ----------------------------------------------------------------------
    def holds(self, values: list[str]) -> bool:
        """XPath's existential comparison over the target's string values."""
        c = self.constraint
        if self.domain == ANY:
            return bool(values)
        if self.domain == NUM:
            return any(c.matches(xpath_number(v)) for v in values)
        return any(c.matches(v) for v in values)

    def holds_on_chunks(self, chunks: Iterable[str]) -> bool:
        """The predicate on one string value given in pieces (an element's
        ``itertext()``), deciding as soon as a prefix of the value tells, without
        building the value when it can: a deeply nested document has string values
        that together are far larger than the document."""
        c = self.constraint
        if self.domain == ANY:
            return True
        if self.domain == NUM:
            parts = []
            for piece in chunks:
                if not NUMBER_CHARS.issuperset(piece):
                    return c.matches(math.nan)
                parts.append(piece)
            return c.matches(xpath_number("".join(parts)))
        if c.op in (Op.EQ, Op.NE, Op.PREFIX):
            return _starts(c.operand, chunks, c.op is not Op.PREFIX) == (c.op is not Op.NE)
        if c.op is Op.SUBSTRING:
            return _contains(c.operand, chunks)
        return c.matches("".join(chunks))

    @property
    def single_valued(self) -> bool:
        """Attributes and the string value are one node; ``text()`` may be several."""
        return self.target != TEXT

    @property
    def satisfiable(self) -> bool:
        """False for a relational comparison with NaN, which no value satisfies."""
        return not (self.domain == NUM and self.constraint.operand == NAN)

    @property
    def infinite(self) -> bool:
        """A numeric comparison with ±Infinity (``@x < "1e999"``). The constraint algebra
        reads numbers as finite, while number() of a document value may be Infinity, so
        such a predicate is compared only with itself (covering, overlap, merging)."""
        return self.domain == NUM and self.constraint.operand in _INFINITE

    # -- text form -----------------------------------------------------------------------
    @property
    def comparison(self) -> bool:
        """A comparison (existential over the target's nodes), not a string function."""
        return self.domain != ANY and self.constraint.op in COMPARISONS.values()

    def render(self, name, subject: str | None = None) -> str:
        """The predicate in XPath; ``name`` renders a Clark name as a prefixed QName;
        ``subject`` replaces ``.`` (a child path whose string values are compared)."""
        t = self.target if subject is None else subject
        if t.startswith("@"):
            t = "@" + name(t[1:])
        c = self.constraint
        if self.domain == ANY:
            return t
        if c.op is Op.PREFIX:
            return f"starts-with({t}, {format_string(c.operand)})"
        if c.op is Op.SUBSTRING:
            return f"contains({t}, {format_string(c.operand)})"
        sym = _SYMBOL[c.op]
        if self.domain == NUM:
            if c.operand == NAN:
                return f'{t} {sym} "NaN"'
            text = number_text(c.operand)
            assert text is not None  # a parsed predicate's constant has a literal
            return f"{t} {sym} {text}"
        return f"{t} {sym} {format_string(c.operand)}"

    @property
    def renderable(self) -> bool:
        """Its XPath (:meth:`render`) reads back as this very predicate."""
        c = self.constraint
        if self.domain == ANY:
            return True
        if self.domain == STR:
            if c.op not in (Op.EQ, Op.NE, Op.PREFIX, Op.SUBSTRING) or not isinstance(
                c.operand, str
            ):
                return False
            return not ('"' in c.operand and "'" in c.operand)
        if c.op not in COMPARISONS.values():
            return False
        if c.operand == NAN:
            return c.op not in (Op.EQ, Op.NE)
        if not isinstance(c.operand, float):
            return False
        if c.operand in _INFINITE:  # written as a string literal: relational only
            return c.op not in (Op.EQ, Op.NE)
        return format_number(c.operand) is not None

    def sort_key(self) -> tuple:
        c = self.constraint
        return (self.target, self.domain, c.op.value, repr(c.operand))


def _starts(s: str, chunks: Iterable[str], whole: bool) -> bool:
    """The value begins with s (``whole``: and is exactly s)."""
    pos = 0
    for piece in chunks:
        end = pos + len(piece)
        if end > len(s):
            return not whole and s[pos:] == piece[: len(s) - pos]
        if s[pos:end] != piece:
            return False
        pos = end
    return pos == len(s)


def _contains(s: str, chunks: Iterable[str]) -> bool:
    """s occurs in the value (across piece boundaries too)."""
    if not s:
        return True
    keep = len(s) - 1
    tail = ""
    for piece in chunks:
        window = tail + piece
        if s in window:
            return True
        tail = window[-keep:] if keep else ""
    return False


def exists(target: str) -> Pred:
    return Pred(target, ANY, Constraint(Op.EXISTS))


#: the operand of a relational comparison with a literal that is not a number: NaN, so the
#: predicate never holds (kept as a string so that equal predicates compare equal)
NAN = "NaN"


def comparison(target: str, symbol: str, literal: str | float) -> Pred:
    """``target symbol literal`` with XPath 1.0's conversion rules."""
    op = COMPARISONS[symbol]
    if isinstance(literal, str):
        if op in (Op.EQ, Op.NE):
            return Pred(target, STR, Constraint(op, literal))
        n = xpath_number(literal) + 0.0  # -0 is 0
        return Pred(target, NUM, Constraint(op, NAN if math.isnan(n) else n))
    return Pred(target, NUM, Constraint(op, float(literal) + 0.0))


def string_function(target: str, op: Op, literal: str) -> Pred:
    """``starts-with(target, literal)`` (PREFIX) or ``contains(target, literal)``."""
    return Pred(target, STR, Constraint(op, literal))


def pred_covers(a: Pred, b: Pred) -> bool:
    """Sound test of L(a) ⊇ L(b) for predicates on the same element: every element whose
    target satisfies ``b`` also satisfies ``a``."""
    if a == b:
        return True
    if a.target != b.target:
        return False
    if a.domain == ANY:  # existence of the target follows from any other predicate on it
        return True
    if b.domain == ANY:
        return False
    if not b.satisfiable:
        return True
    if not a.satisfiable or a.infinite or b.infinite:
        return False
    ca, cb = a.constraint, b.constraint
    if a.domain == b.domain:
        if not relations.covers(ca, cb):
            return False
        # NaN is a number the algebra does not know: a must accept it whenever b does
        return a.domain == STR or not cb.matches(math.nan) or ca.matches(math.nan)
    if b.domain == STR and cb.op is Op.EQ:  # a string equality fixes the number too
        return ca.matches(xpath_number(cb.operand))
    return False
