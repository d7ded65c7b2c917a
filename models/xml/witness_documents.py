"""Documents that match a given tree pattern (witnesses), for tests and examples.

The builder instantiates the pattern: a tag node becomes an element with that tag, ``*`` an
element with a name drawn from ``names``, ``//`` zero to two intermediate elements, a
positional predicate filler siblings before the element, and value predicates attribute
values and text chosen with the constraint algebra's witnesses
(:func:`pubsift.models.constraints.relations.witness`). Random extra elements and attributes
are added as noise. Some patterns have no witness of this simple shape (e.g. conflicting
string-value predicates); the builder then returns None. Every witness returned was checked
with lxml's own XPath evaluation.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from lxml import etree
from pubsift.models.constraints import Op, relations
from pubsift.models.xml.numbers import format_number
from pubsift.models.xml.parsing import hardened_parser
from pubsift.models.xml.patterns import DESCENDANT, WILDCARD, Node, XPathFilter
from pubsift.models.xml.predicates import ANY, NUM, SELF, TEXT, Pred

NAMES = ("a", "b", "c", "d")


def _value(preds: list[Pred], rnd: random.Random) -> str | None:
    """A string satisfying every predicate (all single-valued on one target)."""
    tries: list[str] = []
    for p in preds:
        c = p.constraint
        if p.domain == ANY:
            continue
        if p.domain == NUM:
            try:
                conj = c
                for q in preds:
                    if q.domain == NUM and q is not p:
                        conj = relations.conjoin(conj, q.constraint)
                v = relations.witness(conj)
            except (ValueError, TypeError):
                continue
            if isinstance(v, (int, float)):
                text = format_number(float(v))
                if text is not None:
                    tries.append(text)
        else:
            if c.op is Op.EQ:
                tries.append(c.operand)
            else:
                try:
                    v = relations.witness(c)
                except (ValueError, TypeError):
                    continue
                if isinstance(v, str):
                    tries.append(v)
    tries += ["1", "0", "x", str(rnd.randint(-5, 30))]
    for v in tries:
        if _xml_text(v) and all(p.holds([v]) for p in preds):
            return v
    return None


def _xml_text(v: str) -> bool:
    return all(ch in "\t\n\r" or " " <= ch <= "\ud7ff" or "\ue000" <= ch <= "\ufffd" for ch in v)


class _Builder:
    def __init__(self, rnd: random.Random, names: Sequence[str], noise: float) -> None:
        self.rnd, self.names, self.noise = rnd, names, noise
        self.ok = True

    def name(self, label: str) -> str:
        return self.rnd.choice(self.names) if label == WILDCARD else label

    def place(self, u: Node, parent: etree._Element) -> None:
        """Put u's instance under ``parent`` (``//``: through 0-2 new elements)."""
        if u.label == DESCENDANT:
            for _ in range(self.rnd.randint(0, 2)):
                parent = etree.SubElement(parent, self.rnd.choice(self.names))
            for c in u.children:
                self.place(c, parent)
            return
        tag = self.name(u.label)
        if u.position is not None:
            same = [e for e in parent if u.label == WILDCARD or e.tag == tag]
            p = next((k for k in range(1, 12) if u.position.holds(k)), None)
            if p is None:
                self.ok = False
                return
            for _ in range(max(0, p - 1 - len(same))):
                etree.SubElement(parent, tag)
        el = etree.SubElement(parent, tag)
        self.fill(u, el)

    def fill(self, u: Node, el: etree._Element) -> None:
        by_target: dict[str, list[Pred]] = {}
        for p in u.preds:
            by_target.setdefault(p.target, []).append(p)
        for target, preds in by_target.items():
            if target == TEXT:
                texts = []
                for p in preds:
                    v = _value([p], self.rnd)
                    if v is None or v == "":
                        v = None if p.domain != ANY else "t"
                    if v is None:
                        self.ok = False
                        return
                    texts.append(v)
                el.text = texts[0]
                for t in texts[1:]:
                    etree.SubElement(el, self.rnd.choice(self.names)).tail = t
            elif target != SELF:
                v = _value(preds, self.rnd)
                if v is None:
                    self.ok = False
                    return
                el.set(target[1:], v)
        for c in u.children:
            self.place(c, el)
        if SELF in by_target:
            v = _value(by_target[SELF], self.rnd)
            if v is None:
                self.ok = False
                return
            if len(el) == 0 and el.text is None:
                el.text = v
            elif "".join(el.itertext()) != v:
                self.ok = False
        if self.rnd.random() < self.noise:
            etree.SubElement(el, self.rnd.choice(self.names))
        if self.rnd.random() < self.noise:
            el.set("z", str(self.rnd.randint(0, 9)))


def witness(
    f: XPathFilter,
    rnd: random.Random | None = None,
    names: Sequence[str] = NAMES,
    noise: float = 0.3,
) -> bytes | None:
    """A serialized document matching f, or None if this builder finds none."""
    rnd = rnd or random.Random(0)
    (first,) = f.root.children
    b = _Builder(rnd, names, noise)
    holder = etree.Element("holder")
    b.place(first, holder)
    if not b.ok or len(holder) == 0:
        return None
    root = holder[-1] if first.label != DESCENDANT else holder[0]
    if first.label != DESCENDANT and len(holder) != 1:
        return None  # positional fillers at the top: a document has one root element
    xml = etree.tostring(root)
    ns = f.namespaces()
    doc = etree.fromstring(xml, hardened_parser(huge=True))
    if not etree.XPath(f.xpath(), namespaces=ns)(doc.getroottree()):
        return None
    return xml
