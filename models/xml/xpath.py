"""The XPath subset of the XML model, read through elementpath's token tree.

elementpath (``XPath1Parser``) parses the expression; this module walks its token tree,
accepts a whitelist of symbols and builds a tree pattern (:mod:`.patterns`). Anything else
is a :class:`~pubsift.core.errors.FilterSyntaxError` naming the construct and its position.

Accepted (Chand & Felber's language plus what the YFilter query sets use):

* absolute (``/a``, ``//a``) and relative (``a/b``, ``./a``, ``.//a``; relative to the root
  element, as lxml evaluates on a document) location paths; ``child::`` and ``attribute::``
  axes in their abbreviated or explicit form;
* name tests (prefixed names with bound prefixes), ``*``, ``.`` as a no-op step, and as a
  last step ``@name`` or ``text()`` (a document matches if such a node exists);
* predicates: path predicates (branches) ``[b/c//d]``, ``[@x]``, ``[text()]``; comparisons
  of a path, ``@name``, ``text()`` or ``.`` with a string or number literal (``=``, ``!=``,
  ``<``, ``<=``, ``>``, ``>=``, either side); ``starts-with(t, "s")`` and
  ``contains(t, "s")`` where ``t`` is ``@name`` or ``.``; ``and``; a positional predicate
  (``[2]``, ``[position() op n]``) as the first predicate of a step.

Before elementpath sees the text, :mod:`.lexical` checks its characters and sizes; an
expression lxml cannot compile is refused too (``matches`` agrees with lxml's answer, so
there must be one). Number literals are read as libxml2 reads them (:mod:`.numbers`).
Patterns deeper than :data:`MAX_DEPTH` or larger than :data:`MAX_SIZE` are refused before
any recursive work on them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import elementpath
from elementpath import XPath1Parser
from lxml import etree
from pubsift.core.errors import FilterSyntaxError
from pubsift.models.constraints import Op
from pubsift.models.xml import lexical
from pubsift.models.xml import predicates as P
from pubsift.models.xml.minimize import minimize
from pubsift.models.xml.numbers import format_number, xpath_number
from pubsift.models.xml.patterns import (
    DESCENDANT,
    ROOT,
    WILDCARD,
    Node,
    Position,
    XPathFilter,
    make,
)

_COLUMN = re.compile(r"line ([0-9]+), column ([0-9]+)", re.ASCII)


@dataclass
class _Step:
    """One element step: axis (``child``/``desc``), test, predicates in order."""

    axis: str
    test: str  # Clark name, '*', or '.' (self)
    position: Position | None = None
    preds: list = field(default_factory=list)  # Pred
    branches: list = field(default_factory=list)  # Node


@dataclass
class _Path:
    absolute: bool
    steps: list[_Step]
    terminal: tuple[str, Any] | None = None  # ('@', clark) | ('text', None)


#: the deepest pattern accepted: nodes from the root element to the deepest leaf, a
#: ``//`` counting as a node of its own (``//a/b`` has depth 3)
MAX_DEPTH = 64
#: the largest pattern accepted: its nodes plus its value predicates (minimizing a
#: pattern compares its branches pairwise)
MAX_SIZE = 256


class _Reader:
    def __init__(
        self, text: str, namespaces: Mapping[str, str], numbers: Mapping[int, str]
    ) -> None:
        self.text = text
        self.namespaces = dict(namespaces)
        self.numbers = numbers  # long number literals by offset (lexical.Scan)

    # -- errors --------------------------------------------------------------------------
    def error(self, what: str, tok) -> FilterSyntaxError:
        pos = tok.span[0] if tok is not None and hasattr(tok, "span") else None
        return FilterSyntaxError(f"unsupported XPath construct: {what}", self.text, pos)

    def describe(self, tok) -> str:
        sym = tok.symbol
        if sym in ("(name)", "(string)", "(integer)", "(decimal)", "(float)"):
            return f"{sym[1:-1]} {tok.value!r}"
        return f"{sym!r}" + (" (function)" if tok.label == "function" else "")

    # -- names ---------------------------------------------------------------------------
    def name(self, tok) -> str:
        if tok.symbol == "(name)":
            return tok.value
        if tok.symbol == ":":
            prefix, local = tok[0], tok[1]
            if local.symbol != "(name)":
                raise self.error(f"prefixed wildcard {tok.value!r}", tok)
            uri = self.namespaces.get(prefix.value)
            if uri is None:  # elementpath already refuses undeclared prefixes
                raise self.error(f"unbound prefix {prefix.value!r}", tok)
            return f"{{{uri}}}{local.value}"
        raise self.error(self.describe(tok) + " where a name was expected", tok)

    # -- location paths ------------------------------------------------------------------
    def path(self, tok) -> _Path:
        sym = tok.symbol
        if sym in ("/", "//") and len(tok) == 1:
            inner = self.path(tok[0])
            if inner.absolute:
                raise self.error(f"{sym!r} before an absolute path", tok)
            if not inner.steps:
                raise self.error(f"{sym!r} before an attribute or text() step", tok)
            inner.steps[0].axis = "desc" if sym == "//" else "child"
            inner.absolute = True
            return inner
        if sym in ("/", "//") and len(tok) == 2:
            left, right = self.path(tok[0]), self.path(tok[1])
            if right.absolute:
                raise self.error("an absolute path after a step", tok[1])
            if left.terminal is not None:
                raise self.error("a step after an attribute or text() step", tok[1])
            if not right.steps:
                if sym == "//":
                    raise self.error("'//' before an attribute or text() step", tok)
            else:
                right.steps[0].axis = "desc" if sym == "//" else "child"
            return _Path(left.absolute, left.steps + right.steps, right.terminal)
        if sym == "/" and len(tok) == 0:
            raise self.error("the root node alone ('/') matches every document", tok)
        if sym == "[":
            inner = self.path(tok[0])
            if inner.terminal is not None or len(inner.steps) != 1 or inner.absolute:
                raise self.error("a predicate on something other than one element step", tok)
            step = inner.steps[0]
            if step.test == ".":
                raise self.error("a predicate on '.'", tok)
            self.predicate(tok[1], step)
            return inner
        if sym in ("(name)", ":"):
            return _Path(False, [_Step("child", self.name(tok))])
        if sym == "*" and len(tok) == 0:
            return _Path(False, [_Step("child", WILDCARD)])
        if sym == ".":
            return _Path(False, [_Step("child", ".")])
        if sym == "@" or (sym == "attribute" and len(tok) == 1):
            target = tok[0]
            if target.symbol == "*":
                raise self.error("attribute wildcard '@*'", tok)
            return _Path(False, [], ("@", self.name(target)))
        if sym == "child" and len(tok) == 1:
            return self.path(tok[0])
        if sym == "text" and len(tok) == 0:
            return _Path(False, [], ("text", None))
        raise self.error(self.describe(tok), tok)

    # -- predicates ----------------------------------------------------------------------
    def predicate(self, tok, step: _Step, top: bool = True) -> None:
        """Add predicate ``tok`` to ``step``; ``top``: not inside ``and`` (where a number
        is a boolean, not a position)."""
        sym = tok.symbol
        first = not step.preds and not step.branches and step.position is None
        if sym == "and":  # a left-deep chain of 'and': its terms in order, iteratively
            terms, stack = [], [tok]
            while stack:
                t = stack.pop()
                if t.symbol == "and":
                    stack.extend((t[1], t[0]))
                else:
                    terms.append(t)
            for t in terms:
                self.predicate(t, step, False)
            return
        if sym in ("(integer)", "(decimal)", "(float)") and top:
            if not first:
                raise self.error("a positional predicate after another predicate", tok)
            step.position = self.position("=", tok)
            return
        if sym in P.COMPARISONS and len(tok) == 2:
            a, b = tok[0], tok[1]
            if self._is_position(a) or self._is_position(b):
                if not first:
                    raise self.error("a positional predicate after another predicate", tok)
                sym2, lit = (sym, b) if self._is_position(a) else (P.FLIPPED[sym], a)
                step.position = self.position(sym2, lit)
                return
            if self._is_literal(a) and not self._is_literal(b):
                a, b, sym = b, a, P.FLIPPED[sym]
            if self._is_literal(a):
                raise self.error("a comparison of two literals", tok)
            if not self._is_literal(b):
                self.path(a)  # names an unsupported construct on either side
                self.path(b)
                raise self.error(
                    "a comparison must have a path on one side and a literal on the other", tok
                )
            lit = self.literal(b)

            def compare(target: str) -> P.Pred:
                pred = P.comparison(target, sym, lit)
                if not pred.renderable:
                    raise self.error(
                        f"number {self.source(b)[:30]!r}: no XPath number "
                        "literal reads back as exactly this double (write it "
                        "with at most 17 significant digits)",
                        b,
                    )
                return pred

            self.attach(a, step, compare)
            return
        if sym in ("starts-with", "contains") and len(tok) == 2:
            a, b = tok[0], tok[1]
            if b.symbol != "(string)":
                raise self.error(f"{sym}() with a second argument that is not a string literal", b)
            path = self.path(a)
            single = (not path.steps and path.terminal and path.terminal[0] == "@") or (
                not path.terminal and len(path.steps) == 1 and path.steps[0].test == "."
            )
            if not single:
                raise self.error(
                    f"{sym}() on anything but @name or '.' (on a node-set of "
                    "several nodes it reads only the first)",
                    a,
                )
            if b.value == "":  # always true, even when the attribute is absent
                return
            op = Op.PREFIX if sym == "starts-with" else Op.SUBSTRING
            self.attach(a, step, lambda target: P.string_function(target, op, b.value))
            return
        if self._is_literal(tok) or tok.symbol in ("or", "not", "last", "position"):
            raise self.error(self.describe(tok) + " in a predicate", tok)
        # a path predicate: existence of a branch
        self.attach(tok, step, None)

    @staticmethod
    def _is_position(tok) -> bool:
        return tok.symbol == "position" and len(tok) == 0

    @staticmethod
    def _is_literal(tok) -> bool:
        return tok.symbol in ("(string)", "(integer)", "(decimal)", "(float)") or (
            tok.symbol == "-"
            and len(tok) == 1
            and tok[0].symbol in ("(integer)", "(decimal)", "(float)")
        )

    def source(self, tok) -> str:
        """The text of a literal token as written (a long number: as the lexer kept it)."""
        if tok.symbol == "-":
            return "-" + self.source(tok[0])
        start, end = tok.span
        return self.numbers.get(start) or self.text[start:end]

    def literal(self, tok) -> str | float:
        """A string literal's text or a number literal's value, read as lxml reads it
        (:func:`.numbers.xpath_number`); Infinity and NaN are refused."""
        if tok.symbol == "-":
            return -self.literal(tok[0]) + 0.0  # type: ignore[operator]  # a number follows '-'
        if tok.symbol == "(string)":
            return tok.value
        x = xpath_number(self.source(tok))
        if not math.isfinite(x):
            raise self.error(
                f"number literal {self.source(tok)[:20]!r} out of range "
                "(lxml reads it as Infinity or NaN)",
                tok,
            )
        return x + 0.0

    def position(self, op: str, tok) -> Position:
        """``position() op tok``: tok must be a number literal with an integer value
        that a literal can write back exactly."""
        if not self._is_literal(tok) or tok.symbol == "(string)":
            raise self.error("position() compared with something other than a number literal", tok)
        n = self.literal(tok)
        if n != int(n) or format_number(n) is None:
            raise self.error("position() compared with a non-integer", tok)
        return Position(op, int(n))

    def attach(self, tok, step: _Step, make_pred) -> None:
        """Attach path ``tok`` (relative to ``step``) as a branch or predicate of ``step``;
        ``make_pred(target)`` builds the value predicate at the path's end (None: the
        path's existence)."""
        path = self.path(tok)
        if path.absolute:
            raise self.error("an absolute path inside a predicate", tok)
        steps = [
            s
            for s in path.steps
            if not (s.test == "." and s.axis == "child" and not s.preds and not s.branches)
        ]
        if any(s.test == "." for s in steps):
            raise self.error("'.' after '//' inside a path", tok)
        if path.terminal is None:
            target = P.SELF
        elif path.terminal[0] == "@":
            target = "@" + path.terminal[1]
        else:
            target = P.TEXT
        pred = None
        if make_pred is not None:
            pred = make_pred(target)
        elif target != P.SELF:
            pred = P.exists(target)
        if not steps:
            if pred is not None:
                step.preds.append(pred)
            return
        if pred is not None:
            steps[-1].preds.append(pred)
        step.branches.append(_build(steps))


def _build(steps: list[_Step]) -> Node:
    """Nodes for a non-empty list of element steps (the first one's axis included)."""
    node: Node | None = None
    for s in reversed(steps):
        children = list(s.branches) + ([node] if node is not None else [])
        node = make(s.test, s.preds, s.position, children)
        if s.axis == "desc":
            node = make(DESCENDANT, (), None, [node])
    assert node is not None  # steps is not empty
    return node


def parse_xpath(text: str, namespaces: Mapping[str, str] | None = None) -> XPathFilter:
    """The tree pattern of XPath expression ``text``; ``namespaces`` binds prefixes.

    Raises FilterSyntaxError naming the construct and its position."""
    if not isinstance(text, str) or not text.strip():
        raise FilterSyntaxError(
            "an XPath filter must be a non-empty string",
            text if isinstance(text, str) else None,
            None,
        )
    scanned = lexical.scan(text)
    namespaces = dict(namespaces or {})
    check_namespaces(namespaces, lexical.MAX_LENGTH - len(text))
    try:
        tok = XPath1Parser(namespaces=namespaces).parse(scanned.text)
    except elementpath.ElementPathError as e:
        m = _COLUMN.search(str(e))
        pos = None
        if m:
            line, col = int(m.group(1)), int(m.group(2))
            starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
            if 1 <= line <= len(starts) and col >= 1:
                pos = min(starts[line - 1] + col - 1, len(text))
        msg = str(e).split(": ", 1)[-1] if "] " not in str(e) else str(e).split("] ", 1)[-1]
        raise FilterSyntaxError(f"XPath syntax error: {msg}", text, pos) from None
    except (RecursionError, MemoryError, ValueError, TypeError, ArithmeticError) as e:
        # last resort: the lexical limits keep elementpath within its means
        raise FilterSyntaxError(
            f"XPath not accepted by elementpath: {type(e).__name__}", text, None
        ) from None
    try:  # what lxml cannot compile has no answer to agree with (e.g. names that
        # libxml2's XPath, on XML 1.0 4th edition's name characters, refuses)
        etree.XPath(text, namespaces=namespaces or None)
    except (etree.XPathError, ValueError) as e:
        raise FilterSyntaxError(f"XPath not accepted by lxml (libxml2): {e}", text, None) from None
    reader = _Reader(text, namespaces, scanned.numbers)
    path = reader.path(tok)
    steps = [
        s
        for s in path.steps
        if not (s.test == "." and s.axis == "child" and not s.preds and not s.branches)
    ]
    if any(s.test == "." for s in steps):
        raise reader.error("'.' after '//'", tok)
    if path.terminal is not None:
        target = "@" + path.terminal[1] if path.terminal[0] == "@" else P.TEXT
        if not steps:
            steps = [_Step("child", WILDCARD)] if path.absolute else []
            if path.absolute:
                raise reader.error("an attribute or text() step of the document node", tok)
        if steps:
            steps[-1].preds.append(P.exists(target))
    if not path.absolute:
        # relative paths are evaluated with the root element as context (as lxml does)
        root_elem = _Step("child", WILDCARD)
        if path.terminal is not None and not steps:  # './@x': '.' steps dropped
            root_elem.preds.append(P.exists(target))
        steps = [root_elem] + steps
    if not steps:
        raise reader.error("an empty path", tok)
    top = _build(steps)
    depth, size = _measure(top)
    if depth > MAX_DEPTH:
        raise FilterSyntaxError(f"XPath pattern too deep: {depth} levels > {MAX_DEPTH}", text, None)
    if size > MAX_SIZE:
        raise FilterSyntaxError(
            f"XPath pattern too large: {size} steps and predicates > {MAX_SIZE}", text, None
        )
    return check_written(XPathFilter(minimize(make(ROOT, (), None, [top]))), text)


def check_written(f: XPathFilter, text: str | None = None) -> XPathFilter:
    """``f`` if its text form (:func:`format_text`, which writes numbers in full and binds
    ``ns0``, ``ns1``, ...) is within :data:`.lexical.MAX_LENGTH`, so that it reads back;
    else FilterSyntaxError."""
    n = len(format_text(f))
    if n > lexical.MAX_LENGTH:
        raise FilterSyntaxError(
            f"XPath filter too long once written: its text form (numbers "
            f"in full, namespace declarations included) has {n} "
            f"characters > {lexical.MAX_LENGTH}",
            text,
            None,
        )
    return f


def _measure(n: Node) -> tuple[int, int]:
    """Depth (nodes on the longest path down from n) and size (nodes and value
    predicates) of the pattern below n, iteratively."""
    deepest = size = 0
    stack = [(n, 1)]
    while stack:
        x, d = stack.pop()
        deepest = max(deepest, d)
        size += 1 + len(x.preds)
        stack.extend((c, d + 1) for c in x.children)
    return deepest, size


_XML_NAMESPACE = "http://www.w3.org/XML/1998/namespace"
_PREFIX = re.compile(r"[^\W\d][\w.-]*\Z")


def check_namespaces(namespaces: Mapping[str, str], budget: int = lexical.MAX_LENGTH) -> None:
    """Prefixes must be names and URIs non-empty XML text without ``"``, ``{`` or ``}``
    (which neither Clark notation nor the text form could write back); the declarations,
    written as the text form writes them (``xmlns:p="uri" ``), must fit in ``budget``
    characters (what :data:`.lexical.MAX_LENGTH` leaves beside the XPath), checked before
    any URI is read further."""
    for prefix, uri in namespaces.items():
        if isinstance(prefix, str) and isinstance(uri, str):
            budget -= len(prefix) + len(uri) + 10  # xmlns:{prefix}="{uri}" + a space
            if budget < 0:
                raise FilterSyntaxError(
                    f"namespace declarations too long: with the XPath, "
                    f"the text form would exceed {lexical.MAX_LENGTH} "
                    "characters",
                    path=f"namespaces.{prefix[:60]}",
                )
        if not isinstance(prefix, str) or not _PREFIX.match(prefix):
            raise FilterSyntaxError(
                f"namespace prefix {prefix!r} is not a name", path=f"namespaces.{prefix}"
            )
        if not isinstance(uri, str) or not uri:
            raise FilterSyntaxError(
                f"namespace URI of prefix {prefix!r} must be a non-empty string",
                path=f"namespaces.{prefix}",
            )
        if prefix == "xml" and uri != _XML_NAMESPACE:  # lxml keeps xml's own binding
            raise FilterSyntaxError(
                f"prefix 'xml' is bound to {_XML_NAMESPACE} and cannot be rebound",
                path="namespaces.xml",
            )
        bad = next((ch for ch in '"{}' if ch in uri), None)
        if bad is not None:
            raise FilterSyntaxError(
                f"namespace URI {uri[:60]!r} holds {bad!r} (percent-encode it)",
                path=f"namespaces.{prefix}",
            )
        try:
            lexical.check_chars(uri, "a namespace URI")
        except FilterSyntaxError as e:
            raise FilterSyntaxError(e.message, path=f"namespaces.{prefix}") from None


_DECLARATION = re.compile(r"""\s*xmlns:([A-Za-z_][\w.-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')""")


def parse_text(text: str) -> XPathFilter:
    """The text form of a filter: optional ``xmlns:prefix="uri"`` declarations, then the
    XPath expression (what :func:`format_text` writes)."""
    if not isinstance(text, str):
        raise FilterSyntaxError("an XPath filter must be a string", None, None)
    if len(text) > lexical.MAX_LENGTH:
        raise FilterSyntaxError(
            f"XPath filter too long: {len(text)} characters > {lexical.MAX_LENGTH}",
            text,
            lexical.MAX_LENGTH,
        )
    namespaces: dict[str, str] = {}
    offset = 0
    while True:
        m = _DECLARATION.match(text, offset)
        if m is None:
            break
        namespaces[m.group(1)] = m.group(2) if m.group(2) is not None else m.group(3)
        offset = m.end()
    if not namespaces:
        return parse_xpath(text)
    while offset < len(text) and text[offset] in " \t\r\n":  # not part of the XPath
        offset += 1
    try:
        return parse_xpath(text[offset:], namespaces)
    except FilterSyntaxError as e:
        pos = None if e.position is None else e.position + offset
        raise FilterSyntaxError(e.message, text, pos) from None


def format_text(f: XPathFilter) -> str:
    """``f`` as text that :func:`parse_text` reads back (namespace bindings included)."""
    decls = "".join(f'xmlns:{p}="{u}" ' for p, u in f.namespaces().items())
    return decls + f.xpath()
