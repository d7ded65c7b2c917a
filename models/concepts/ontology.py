"""The shared vocabulary: concepts, their generalizations and synonyms, and the context
properties that give their values a meaning (Cilia et al. 2004, §3.1 "Sharing a Common
Vocabulary", §4.1 MIX: "an ontology is a finite set of concepts and their relationships").

Loaded with rdflib from Turtle, RDF/XML or JSON-LD:

* concepts: subjects typed ``owl:Class``, ``rdfs:Class`` or ``skos:Concept`` (and anything
  that takes part in ``rdfs:subClassOf`` / ``skos:broader``);
* generalization: ``rdfs:subClassOf``, ``skos:broader`` (``skos:narrower`` read backwards);
* synonyms: ``owl:equivalentClass`` and ``skos:exactMatch`` merge concepts into one
  (a canonical IRI represents the class); ``rdfs:label``, ``skos:prefLabel`` and
  ``skos:altLabel`` in any language, and the IRI's local name, are terms that resolve to it;
* context properties: ``ps:contextProperty`` (inherited along generalization), the
  dimensionality of quantities (``ps:dimension``) and their matching unit
  (``ps:matchingUnit``).

Closures (ancestors, descendants) are computed once, iteratively, at load time; rdflib's
``transitive_objects`` recurses and fails on deep hierarchies.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources
from pathlib import Path

import rdflib
from pubsift.core.errors import PubsiftError
from rdflib import OWL, RDF, RDFS, SKOS, URIRef

PS = rdflib.Namespace("https://pubsift.org/ontology#")

QUANTITY, MONEY, DATE, PLAIN = "quantity", "money", "date", "plain"
"""Kinds of concept values, from the context properties a concept carries."""

#: context-property IRIs of the pubsift vocabulary -> names used in :class:`Context`
PROPERTY_NAMES: dict[rdflib.term.Node, str] = {
    PS.unit: "unit",
    PS.currency: "currency",
    PS.scaleFactor: "scale",
    PS.dateFormat: "date_format",
}

_CLASS_TYPES = (OWL.Class, RDFS.Class, SKOS.Concept)
_LABELS = (RDFS.label, SKOS.prefLabel, SKOS.altLabel)


def term_key(term: str) -> str:
    """How terms are compared: case-folded, without spaces, ``_`` and ``-``."""
    return re.sub(r"[\s_\-]+", "", term).casefold()


def local_name(iri: str) -> str:
    return re.split(r"[#/:]", iri.rstrip("#/:"))[-1]


class UnknownConcept(PubsiftError, LookupError):
    """A term names no concept of the ontology (or several)."""


class OntologyError(PubsiftError, ValueError):
    """An ontology file cannot be read (rdflib's parsers raise many kinds of errors)."""


_RESOLVED_SIZE = 65536
"""Resolved terms an :class:`Ontology` remembers."""


class Ontology:
    """An immutable view of an rdflib graph as a concept hierarchy with synonyms."""

    def __init__(self, graph: rdflib.Graph, namespace: str | None = None) -> None:
        self.graph = graph
        self.namespace = namespace
        self._canon = self._equivalence_classes(graph)
        concepts = {self._canon.get(str(c), str(c)) for c in self._raw_concepts(graph)}
        self.concepts: frozenset[str] = frozenset(concepts)
        parents: dict[str, set[str]] = defaultdict(set)
        for s, o in self._broader_pairs(graph):
            a, b = self.canonical(s), self.canonical(o)
            if a != b and a in self.concepts and b in self.concepts:
                parents[a].add(b)
        self._ancestors = _closure(self.concepts, parents)
        children: dict[str, set[str]] = defaultdict(set)
        for c, ups in parents.items():
            for p in ups:
                children[p].add(c)
        self._descendants = _closure(self.concepts, children)
        self._terms = self._index_terms(graph)
        self._resolved: dict[str, str] = {}
        self._props = self._inherit({c: self._own_properties(graph, c) for c in self.concepts})
        self._dimension = self._inherit_one(PS.dimension)
        self._matching_unit = self._inherit_one(PS.matchingUnit)

    # -- loading ----------------------------------------------------------------------
    @classmethod
    def load(
        cls, *sources: str | Path, format: str | None = None, namespace: str | None = None
    ) -> Ontology:
        """Load and merge ontology files (format guessed from the suffix: .ttl, .rdf/.owl/.xml,
        .jsonld/.json, .nt)."""
        g = rdflib.Graph()
        for src in sources:
            try:
                g.parse(str(src), format=format or _guess_format(str(src)))
            except Exception as exc:
                raise OntologyError(
                    f"cannot read ontology {src}: {type(exc).__name__}: {str(exc)[:200]}"
                ) from None
        return cls(g, namespace)

    @classmethod
    def default(cls) -> Ontology:
        """The project's own stock-trading and commerce ontology (``ontologies/pubsift.ttl``)."""
        return _default()

    # -- equivalence and generalization -----------------------------------------------
    @staticmethod
    def _raw_concepts(g: rdflib.Graph) -> set[URIRef]:
        out: set[URIRef] = set()
        for t in _CLASS_TYPES:
            out.update(s for s in g.subjects(RDF.type, t) if isinstance(s, URIRef))
        for s, o in Ontology._broader_pairs(g):
            out.update((s, o))
        return out

    @staticmethod
    def _broader_pairs(g: rdflib.Graph) -> Iterable[tuple[URIRef, URIRef]]:
        for p in (RDFS.subClassOf, SKOS.broader):
            for s, o in g.subject_objects(p):
                if isinstance(s, URIRef) and isinstance(o, URIRef):
                    yield s, o
        for s, o in g.subject_objects(SKOS.narrower):
            if isinstance(s, URIRef) and isinstance(o, URIRef):
                yield o, s

    def _equivalence_classes(self, g: rdflib.Graph) -> dict[str, str]:
        parent: dict[str, str] = {}

        def find(x: str) -> str:
            root = x
            while parent.get(root, root) != root:
                root = parent[root]
            while parent.get(x, x) != root:  # path compression, iteratively
                parent[x], x = root, parent[x]
            return root

        for p in (OWL.equivalentClass, SKOS.exactMatch):
            for s, o in g.subject_objects(p):
                if isinstance(s, URIRef) and isinstance(o, URIRef):
                    a, b = find(str(s)), find(str(o))
                    if a != b:
                        parent[max(a, b, key=self._rank)] = min(a, b, key=self._rank)
        return {x: find(x) for x in list(parent)}

    def _rank(self, iri: str) -> tuple:
        """Representative choice: IRIs in the ontology's namespace first, then shortest."""
        ns = self.namespace or str(PS)
        return (not iri.startswith(ns), len(iri), iri)

    def canonical(self, iri: str | URIRef) -> str:
        iri = str(iri)
        return self._canon.get(iri, iri)

    def ancestors(self, concept: str) -> frozenset[str]:
        """The concept and all its generalizations."""
        return self._ancestors[concept]

    def descendants(self, concept: str) -> frozenset[str]:
        """The concept and all its specializations."""
        return self._descendants[concept]

    def is_a(self, sub: str, sup: str) -> bool:
        """sub is sup or a specialization of it."""
        return sup in self._ancestors.get(sub, ())

    def common_ancestors(self, concepts: Iterable[str]) -> frozenset[str]:
        sets = [self._ancestors[c] for c in concepts]
        return frozenset.intersection(*sets) if sets else frozenset()

    # -- terms ------------------------------------------------------------------------
    def _index_terms(self, g: rdflib.Graph) -> dict[str, set[str]]:
        terms: dict[str, set[str]] = defaultdict(set)
        members: dict[str, set[str]] = defaultdict(set)
        for raw, c in self._canon.items():
            members[c].add(raw)
        for c in self.concepts:
            for iri in members[c] | {c}:
                terms[term_key(local_name(iri))].add(c)
                for p in _LABELS:
                    for lit in g.objects(URIRef(iri), p):
                        terms[term_key(str(lit))].add(c)
        return terms

    def resolve(self, term: str) -> str:
        """The concept a term names: an IRI, a local name, or a label / synonym in any
        language. Raises :class:`UnknownConcept` when it names none or several."""
        found = self._resolved.get(term) if isinstance(term, str) else None
        if found is None:
            found = self._resolve(term)
            if len(self._resolved) < _RESOLVED_SIZE:  # spellings are endless: stay bounded
                self._resolved[term] = found
        return found

    def _resolve(self, term: str) -> str:
        if not isinstance(term, str):
            raise UnknownConcept(f"a concept is named by a string, not {type(term).__name__}")
        if len(term) > 1000:
            raise UnknownConcept(f"unknown concept (a term of {len(term)} characters)")
        if "://" in term or term.startswith("urn:"):
            c = self.canonical(term)
            if c in self.concepts:
                return c
            raise UnknownConcept(f"{term!r} is not a concept of the ontology")
        found = self._terms.get(term_key(term), set())
        if len(found) == 1:
            return next(iter(found))
        if not found:
            raise UnknownConcept(f"unknown concept {term!r}")
        names = ", ".join(sorted(self.name(c) for c in found))
        raise UnknownConcept(f"ambiguous concept {term!r}: it names {names}")

    def name(self, concept: str) -> str:
        """The short name of a concept: its local name when that resolves back to it."""
        short = local_name(concept)
        return short if self._terms.get(term_key(short)) == {concept} else concept

    def labels(self, concept: str, lang: str | None = None) -> list[str]:
        return sorted(
            {
                str(lit)
                for p in _LABELS
                for lit in self.graph.objects(URIRef(concept), p)
                if lang is None or getattr(lit, "language", None) == lang
            }
        )

    # -- context properties -----------------------------------------------------------
    def _own_properties(self, g: rdflib.Graph, c: str) -> set[str]:
        return {
            PROPERTY_NAMES.get(o, local_name(str(o)))
            for o in g.objects(URIRef(c), PS.contextProperty)
        }

    def _inherit(self, own: dict[str, set[str]]) -> dict[str, frozenset[str]]:
        carriers = {a: v for a, v in own.items() if v}
        return {
            c: frozenset().union(*(v for a, v in carriers.items() if a in self._ancestors[c]))
            for c in self.concepts
        }

    def _inherit_one(self, prop: URIRef) -> dict[str, str]:
        own = {c: str(v) for c in self.concepts for v in self.graph.objects(URIRef(c), prop)}
        out = {}
        for c in self.concepts:
            # the nearest generalization that declares it: fewest ancestors of its own
            carriers = [a for a in own if a in self._ancestors[c]]
            if carriers:
                best = max(carriers, key=lambda a: (len(self._ancestors[a]), a))
                out[c] = own[best]
        return out

    def context_properties(self, concept: str) -> frozenset[str]:
        """Names of the context properties a concept's values depend on (``unit``,
        ``currency``, ``scale``, ``date_format`` or user-defined ones)."""
        return self._props.get(concept, frozenset())

    def kind(self, concept: str) -> str:
        props = self.context_properties(concept)
        if "currency" in props:
            return MONEY
        if "unit" in props:
            return QUANTITY
        if "date_format" in props:
            return DATE
        return PLAIN

    def dimension(self, concept: str) -> str | None:
        """The pint dimensionality of a quantity concept (e.g. ``[mass]``), if declared."""
        return self._dimension.get(concept)

    def matching_unit(self, concept: str) -> str | None:
        """The unit quantities of this concept are matched in, if declared."""
        return self._matching_unit.get(concept)

    def __len__(self) -> int:
        return len(self.concepts)

    def __repr__(self) -> str:
        return f"<Ontology {len(self.concepts)} concepts>"


def _closure(nodes: Iterable[str], edges: dict[str, set[str]]) -> dict[str, frozenset[str]]:
    """Reflexive-transitive closure of ``edges`` for every node, without recursion: the
    strongly connected components (Tarjan, iteratively) come out in reverse topological
    order, so each component's closure is itself plus the closures of its successors, and
    the nodes of one component (a cycle of subclasses) share one frozenset."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: dict[str, frozenset[str]] = {}
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(edges.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, succ = work[-1]
            for m in succ:
                if m not in index:
                    index[m] = low[m] = counter
                    counter += 1
                    stack.append(m)
                    on_stack.add(m)
                    work.append((m, iter(edges.get(m, ()))))
                    break
                if m in on_stack:
                    low[node] = min(low[node], index[m])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        comp.append(m)
                        if m == node:
                            break
                    members = set(comp)
                    closure = set(members)
                    for m in comp:
                        for n in edges.get(m, ()):
                            if n not in members:
                                closure |= out[n]
                    frozen = frozenset(closure)
                    for m in comp:
                        out[m] = frozen
    return out


def _guess_format(src: str) -> str:
    low = src.lower()
    for suffix, fmt in (
        (".ttl", "turtle"),
        (".nt", "nt"),
        (".jsonld", "json-ld"),
        (".json", "json-ld"),
        (".n3", "n3"),
    ):
        if low.endswith(suffix):
            return fmt
    return "xml"


@lru_cache(maxsize=1)
def _default() -> Ontology:
    text = (
        resources.files("pubsift.models.concepts")
        .joinpath("ontologies/pubsift.ttl")
        .read_text(encoding="utf-8")
    )
    g = rdflib.Graph()
    g.parse(data=text, format="turtle")
    return Ontology(g, str(PS))
