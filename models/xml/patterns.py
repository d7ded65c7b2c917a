"""Tree patterns: the XML model's filters (Chand & Felber 2004, §3-4; Mühl 2002, §4.4.2).

A tree pattern is a tree of nodes whose labels are tag names, the wildcard ``*`` or the
ancestor/descendant operator ``//`` (Chand & Felber's convention: ``//`` is a node of its
own, standing for a path of length >= 0). Its root is an artificial node ``/`` standing for
the document node. A node may carry value predicates (:mod:`.predicates`) and one positional
predicate (``[2]``, ``[position() > 1]``, evaluated before the value predicates, among the
siblings that pass the node's tag test). Branches are child nodes: ``/a[b]/c`` is the
pattern ``/ -> a -> {b, c}``; for matching only the existence of an embedding matters.

Patterns are immutable and canonical: predicates and children are sorted, so equal
patterns are equal objects (hash and ``==``). Tags and attribute names are in Clark notation
(``{uri}local``); rendering back to XPath assigns prefixes ``ns0``, ``ns1``, ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from pubsift.models.xml.numbers import format_number
from pubsift.models.xml.predicates import SELF, Pred

ROOT, WILDCARD, DESCENDANT = "/", "*", "//"


@dataclass(frozen=True, slots=True)
class Position:
    """A positional predicate ``position() op n``."""

    op: str
    n: int

    def holds(self, p: int) -> bool:
        op, n = self.op, self.n
        return {"=": p == n, "!=": p != n, "<": p < n, "<=": p <= n, ">": p > n, ">=": p >= n}[op]

    def render(self) -> str:
        """``[n]`` for ``position() = n`` with n >= 0 (``[-1]`` would be an expression,
        not a number literal), else ``position() op n``."""
        n = format_number(float(self.n))
        assert n is not None  # every integer has a literal
        return n if self.op == "=" and self.n >= 0 else f"position() {self.op} {n}"


class Labelled(Protocol):
    """A node test: label, predicates and position (of a pattern :class:`Node`, or of a
    node of the factorization tree)."""

    @property
    def label(self) -> str | None: ...
    @property
    def preds(self) -> tuple[Pred, ...]: ...
    @property
    def position(self) -> Position | None: ...


@dataclass(frozen=True, slots=True)
class Node:
    """A tree-pattern node. ``label`` is ``/`` (root), ``//``, ``*`` or a Clark tag."""

    label: str
    preds: tuple[Pred, ...] = ()
    position: Position | None = None
    children: tuple[Node, ...] = ()
    _hash: int = field(default=0, compare=False, repr=False)
    _skey: str = field(default="", compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "_hash", hash((self.label, self.preds, self.position, self.children))
        )
        head = self.label
        if self.position is not None:
            head += f"[{self.position.render()}]"
        for p in self.preds:
            head += f"[{p.render(_clark)}]"
        if self.children:
            head += "(" + ",".join(c._skey for c in self.children) + ")"
        object.__setattr__(self, "_skey", head)

    def __hash__(self) -> int:
        return self._hash

    @property
    def key(self) -> tuple:
        """The extended label (tag test, value predicates, position) that factorization-tree
        nodes share."""
        return (self.label, self.preds, self.position)

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def size(self) -> int:
        """Number of nodes, the root included."""
        return 1 + sum(c.size() for c in self.children)

    def walk(self) -> Iterator[Node]:
        yield self
        for c in self.children:
            yield from c.walk()

    def is_chain(self) -> bool:
        """At most one child everywhere: a linear path pattern."""
        n = self
        while n.children:
            if len(n.children) > 1:
                return False
            n = n.children[0]
        return True


def make(label: str, preds=(), position: Position | None = None, children=()) -> Node:
    """A canonical node: unique sorted predicates, sorted children."""
    ps = tuple(sorted(set(preds), key=Pred.sort_key))
    cs = tuple(sorted(children, key=sort_key))
    return Node(label, ps, position, cs)


def sort_key(n: Node) -> str:
    """A canonical total order of sibling nodes (a Clark-name rendering, cached)."""
    return n._skey


def _clark(name: str) -> str:
    return name


@dataclass(frozen=True)
class XPathFilter:
    """A filter of the XML model: a canonical tree pattern rooted at ``/``."""

    root: Node

    def __hash__(self) -> int:
        return hash(self.root)

    @property
    def size(self) -> int:
        """|s| in Chand & Felber's Table 2: pattern nodes, the artificial root excluded."""
        return self.root.size() - 1

    def namespaces(self) -> dict[str, str]:
        """Prefix bindings for rendering: ``ns0``, ``ns1``, ... in order of first use."""
        uris: list[str] = []
        for n in self.root.walk():
            names = [n.label] + [p.target[1:] for p in n.preds if p.target.startswith("@")]
            for name in names:
                if name.startswith("{"):
                    uri = name[1 : name.index("}")]
                    if uri not in uris:
                        uris.append(uri)
        return {f"ns{i}": u for i, u in enumerate(uris)}

    def xpath(self) -> str:
        """The pattern as an XPath expression (with :meth:`namespaces` bound)."""
        prefix = {u: p for p, u in self.namespaces().items()}

        def name(n: str) -> str:
            if n.startswith("{"):
                uri, local = n[1:].split("}", 1)
                return f"{prefix[uri]}:{local}"
            return n

        return render_node(self.root, name)

    def __str__(self) -> str:
        return self.xpath()


def _step(n: Node, name: Callable[[str], str]) -> str:
    test = n.label if n.label == WILDCARD else name(n.label)
    out = test
    if n.position is not None:
        out += f"[{n.position.render()}]"
    for p in n.preds:
        out += f"[{p.render(name)}]"
    return out


def _cont(n: Node, name: Callable[[str], str]) -> str:
    """``n`` as the continuation of its parent's step: ``/step...`` or ``//step...``."""
    if n.label == DESCENDANT:
        (only,) = n.children
        return "//" + _body(only, name)
    return "/" + _body(n, name)


def _body(n: Node, name: Callable[[str], str]) -> str:
    """``n``'s step; its last child continues the path, the others become path
    predicates (children are sorted, so the choice is canonical)."""
    head = _step(n, name)
    if not n.children:
        return head
    *branches, last = n.children
    for b in branches:
        head += f"[{_branch(b, name)}]"
    return head + _cont(last, name)


def _branch(n: Node, name: Callable[[str], str]) -> str:
    if (
        not n.children
        and n.position is None
        and len(n.preds) == 1
        and n.preds[0].target == SELF
        and n.label != WILDCARD
        and n.preds[0].comparison
    ):  # [Price > 15] rather than [Price[. > 15]]
        return n.preds[0].render(name, subject=name(n.label))
    if n.label == DESCENDANT:
        (only,) = n.children
        return ".//" + _body(only, name)
    return _body(n, name)


def render_node(n: Node, name: Callable[[str], str]) -> str:
    """XPath text of a pattern rooted at ``/`` (or of a sub-pattern, as a relative path)."""
    if n.label != ROOT:
        return _branch(n, name)
    if len(n.children) != 1:
        raise ValueError("a tree pattern's root has exactly one child")
    return _cont(n.children[0], name)


__all__ = ["DESCENDANT", "ROOT", "WILDCARD", "Node", "Position", "XPathFilter", "make"]
