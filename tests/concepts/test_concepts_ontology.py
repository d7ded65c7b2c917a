"""The ontology: concepts, generalization closures, synonyms in several languages, context
properties; loading Turtle, RDF/XML and JSON-LD; the real ontologies of ../shared/data."""

from __future__ import annotations

import json

import pytest
import rdflib
from hypothesis import given, settings
from hypothesis import strategies as st
from pubsift.models.concepts.ontology import (
    DATE,
    MONEY,
    PLAIN,
    QUANTITY,
    Ontology,
    UnknownConcept,
    _closure,
)


def test_project_ontology_terms_and_synonyms(ontology):
    sq = ontology.resolve("StockQuote")
    for term in (
        "stock quote",
        "Aktienkurs",
        "cours de l'action",
        "ShareQuote",
        "EQUITY_QUOTE",
        "https://pubsift.org/ontology#StockQuote",
    ):
        assert ontology.resolve(term) == sq, term
    # owl:equivalentClass merges concepts; the project namespace gives the representative
    assert ontology.resolve("Consignment") == ontology.resolve("Shipment")
    assert ontology.name(ontology.resolve("Consignment")) == "Shipment"
    with pytest.raises(UnknownConcept, match="unknown concept 'Stonk'"):
        ontology.resolve("Stonk")


def test_generalization_closure(ontology):
    r = ontology.resolve
    assert ontology.is_a(r("StockQuote"), r("Event"))
    assert ontology.is_a(r("OrderChange"), r("BusinessDocument"))
    assert ontology.is_a(r("Shipment"), r("Event"))  # skos:broader
    assert not ontology.is_a(r("Event"), r("StockQuote"))
    assert {ontology.name(c) for c in ontology.descendants(r("Quote"))} == {
        "Quote",
        "StockQuote",
        "BondQuote",
    }
    assert r("Event") in ontology.common_ancestors([r("StockQuote"), r("Invoice")])


def test_context_properties_are_inherited(ontology):
    r = ontology.resolve
    assert ontology.kind(r("FinalPrice")) == MONEY
    assert ontology.kind(r("NetWeight")) == QUANTITY
    assert ontology.kind(r("DateOfIssue")) == DATE
    assert ontology.kind(r("Symbol")) == PLAIN
    assert ontology.context_properties(r("NetWeight")) == {"unit", "scale"}
    assert ontology.dimension(r("NetWeight")) == "[mass]"
    assert ontology.matching_unit(r("NetWeight")) == "kilogram"
    assert ontology.matching_unit(r("Distance")) == "meter"


def test_deep_hierarchies_do_not_recurse():
    """Closures are iterative: a chain of 1500 subclasses (rdflib's recursive helpers
    overflow Python's stack on such chains)."""
    g = rdflib.Graph()
    ex = rdflib.Namespace("urn:ex:")
    for i in range(1500):
        g.add((ex[f"C{i + 1}"], rdflib.RDFS.subClassOf, ex[f"C{i}"]))
    g.add((ex.C0, rdflib.RDFS.subClassOf, ex.C1499))  # and a cycle
    o = Ontology(g)
    assert len(o.ancestors("urn:ex:C1000")) == 1500
    assert o.is_a("urn:ex:C10", "urn:ex:C1499")


def test_formats_turtle_rdfxml_jsonld_and_skos(tmp_path):
    ttl = """@prefix ex: <urn:ex:> . @prefix owl: <http://www.w3.org/2002/07/owl#> .
    @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
    @prefix skos: <http://www.w3.org/2004/02/skos/core#> .
    ex:Price a owl:Class ; rdfs:label "price"@en , "Preis"@de .
    ex:Cost a skos:Concept ; skos:exactMatch ex:Price ; skos:altLabel "charge"@en .
    ex:Fee a skos:Concept ; skos:broader ex:Cost ."""
    g = rdflib.Graph().parse(data=ttl, format="turtle")
    paths = {"ttl": tmp_path / "o.ttl", "rdf": tmp_path / "o.rdf", "jsonld": tmp_path / "o.jsonld"}
    paths["ttl"].write_text(ttl)
    paths["rdf"].write_text(g.serialize(format="xml"))
    paths["jsonld"].write_text(g.serialize(format="json-ld"))
    json.loads(paths["jsonld"].read_text())
    for p in paths.values():
        o = Ontology.load(p, namespace="urn:ex:")
        # skos:exactMatch merges Price and Cost; the shorter IRI represents both
        assert o.resolve("Preis") == o.resolve("charge") == o.resolve("Price") == "urn:ex:Cost"
        assert o.is_a(o.resolve("Fee"), o.resolve("price"))


def test_real_om2_loads_with_generalizations(shared_data):
    om = Ontology.load(shared_data("ontologies", "om2") / "om-2.0.rdf")
    mass = om.resolve("Mass")
    assert len(om) > 500
    assert mass.endswith("om-2/Mass")
    assert len(om.descendants(om.resolve("Length"))) > 5


def test_real_fibo_currency_concepts(shared_data):
    root = shared_data("ontologies", "fibo-subset")
    fibo = Ontology.load(*sorted(root.rglob("*.rdf")))
    amount = fibo.resolve("MonetaryAmount")
    assert "ScalarQuantityValue" in {fibo.name(a) for a in fibo.ancestors(amount)}
    listed = fibo.resolve("ListedSecurity")
    assert "FinancialInstrument" in {fibo.name(a) for a in fibo.ancestors(listed)}


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 10).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=25),
        )
    )
)
def test_closure_equals_naive_search(graph):
    """The iterative SCC closure against a plain depth-first search on random digraphs."""
    n, pairs = graph
    nodes = [f"n{i}" for i in range(n)]
    edges: dict[str, set[str]] = {}
    for a, b in pairs:
        edges.setdefault(nodes[a], set()).add(nodes[b])
    expected = {}
    for x in nodes:
        seen, todo = {x}, [x]
        while todo:
            for y in edges.get(todo.pop(), ()):
                if y not in seen:
                    seen.add(y)
                    todo.append(y)
        expected[x] = frozenset(seen)
    assert _closure(nodes, edges) == expected
