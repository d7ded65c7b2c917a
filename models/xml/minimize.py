"""Tree-pattern minimization: drop what the rest of a node already implies.

A branch of a node is redundant when a sibling branch maps onto it by a homomorphism (the
sibling implies it), and a value predicate is redundant when another predicate of the same
node implies it. Removing them keeps N(pattern) unchanged, makes the factorization tree
smaller, and makes identity (mutual covering) agree with equality more often.
"""

from __future__ import annotations

from pubsift.models.xml.covering import Homomorphism
from pubsift.models.xml.patterns import Node, make
from pubsift.models.xml.predicates import pred_covers


def _prune(items: list, implies) -> list:
    """Drop items implied by another remaining item (in order, so one of two mutually
    implying items stays)."""
    kept = list(items)
    i = 0
    while i < len(kept):
        x = kept[i]
        if any(implies(y, x) for j, y in enumerate(kept) if j != i):
            del kept[i]
        else:
            i += 1
    return kept


def minimize(n: Node) -> Node:
    """An equivalent pattern without redundant branches or predicates."""
    children = [minimize(c) for c in n.children]

    def implies(b: Node, a: Node) -> bool:  # branch b implies branch a (a maps under b)
        return Homomorphism().below(a, Node(n.label, (), None, (b,)))

    children = _prune(children, implies)
    preds = _prune(list(n.preds), lambda q, p: pred_covers(p, q))
    return make(n.label, preds, n.position, children)
