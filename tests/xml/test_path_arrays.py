"""The path automaton over arrays (:mod:`pubsift.models.xml.path_arrays`) answers what the
one over the tree's objects answers, and what lxml answers, also through the index, across
adds and removes, with several keys per pattern and with a bounded cache."""

from __future__ import annotations

import gzip
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree
from pubsift.core.index import LinearIndex
from pubsift.models.xml import XmlModel, index, parse_document, shared_matching
from pubsift.models.xml.factorization import FactorizationTree
from pubsift.models.xml.index import _plain_chain
from pubsift.models.xml.path_arrays import ArrayPathAutomaton, PathArrays, _ranges
from pubsift.models.xml.shared_matching import PathAutomaton
from pubsift.models.xml.testing import documents, xpaths

M = XmlModel()
F = M.parse_filter


def arrays_at_once():
    """The index moves to arrays after its first match, whatever the tree's size."""
    return mock.patch.multiple(index, ARRAY_MOVES=0, ARRAY_PAYBACK=0)


def _agree(qs, raws):
    """Both automata over one tree of ``qs`` answer lxml's plain-chain matches."""
    pool = list(dict.fromkeys(F(q) for q in qs))
    tree = FactorizationTree()
    for i, f in enumerate(pool):
        tree.add(i, f.root)
    plain = {i for i, f in enumerate(pool) if _plain_chain(f)}
    objects = PathAutomaton(tree)
    arrays = ArrayPathAutomaton(PathArrays(tree))
    for raw in raws * 2:  # the second pass reaches states made by the first
        e = M.parse_event(raw)
        want = {i for i in plain if etree.XPath(pool[i].xpath())(e.tree())}
        assert arrays.match(e.document) == objects.match(e.document) == want
        assert arrays.match_outputs(e.document) == want


@settings(max_examples=80, deadline=None)
@given(st.lists(xpaths(), min_size=1, max_size=30), st.lists(documents(), min_size=1, max_size=4))
def test_array_automaton_equals_object_automaton_and_lxml(qs, raws):
    _agree(qs, raws)


def test_ranges_gathers_rows_of_any_lengths():
    values = np.arange(10, 20)
    for lo, hi in [([0, 2], [0, 4]), ([2, 5], [4, 5]), ([1, 3, 3], [2, 3, 4]), ([4], [5])]:
        want = [v for a, b in zip(lo, hi) for v in values[a:b]]
        got = _ranges(np.array(lo), np.array(hi), values, nonempty=False)
        assert got.tolist() == want
    assert _ranges(np.array([1, 3]), np.array([2, 4]), values, nonempty=True).tolist() == [11, 13]


# a node with two '//' children (two './/' predicates, or one and a '//' step) next to a
# node with none: their rows in the dense '//' relation have lengths 2 and 0
_BRANCHING = [
    "/a[.//b][.//c]",
    "/a[.//b]//c",
    "//a[.//c][.//b]/b",
    "/*/c",
    "/b/a//c",
    "//b//c",
    "/a/*",
    "//c[.//a]//b",
]


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(_BRANCHING), xpaths()), min_size=2, max_size=10),
    st.lists(documents(), min_size=1, max_size=3),
)
def test_array_automaton_with_several_descendant_children_per_node(qs, raws):
    _agree(qs, raws)


def test_review_case_two_descendant_children_next_to_a_node_without():
    qs = ["/a[.//b][.//c]", "/*/e", "/x/y//g"]
    e = M.parse_event("<a><g/></a>")
    pool = [F(q) for q in qs]
    tree = FactorizationTree()
    for i, f in enumerate(pool):
        tree.add(i, f.root)
    assert ArrayPathAutomaton(PathArrays(tree)).match(e.document) == set()
    ix, lin = M.new_index(), LinearIndex(M)
    for i, q in enumerate(qs):
        ix.add(F(q), i)
        lin.add(F(q), i)
    with arrays_at_once():
        for _ in range(3):
            assert ix.match(e) == lin.match(e) == set()
        assert isinstance(ix._dfa, ArrayPathAutomaton)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), xpaths(depth=1), st.integers(0, 2)), max_size=30),
    st.lists(documents(), min_size=1, max_size=3),
)
def test_index_on_arrays_agrees_with_linear_index_through_adds_and_removes(script, raws):
    # keys 0-2 on the same pattern: patterns with several keys take the slow output path
    ix, lin = M.new_index(), LinearIndex(M)
    events = [M.parse_event(r) for r in raws]
    with arrays_at_once():
        for add, q, key in script:
            f = F(q)
            if add:
                ix.add(f, key)
                lin.add(f, key)
            elif (f, key) in lin:
                ix.remove(f, key)
                lin.remove(f, key)
            for e in events:
                assert ix.match(e) == lin.match(e)
                assert ix.match(e) == lin.match(e)  # on arrays after the first
                assert sorted(map(repr, ix.match_pairs(e))) == sorted(map(repr, lin.match_pairs(e)))
    if len(ix) and any(_plain_chain(f) for f, _ in ix):
        assert isinstance(ix._dfa, ArrayPathAutomaton)


def test_index_moves_to_arrays_only_when_states_take_many_moves():
    qs = ["//a/b", "/r//c", "/r/*/d", "//e"]
    ix = M.new_index()
    for i, q in enumerate(qs):
        ix.add(F(q), i)
    e = M.parse_event("<r><a><b/></a><x><d/><c/></x><e/></r>")
    want = {i for i, q in enumerate(qs) if etree.XPath(q)(e.tree())}
    for _ in range(3):
        assert ix.match(e) == want
    assert type(ix._dfa) is PathAutomaton  # few moves per state: objects stay
    with mock.patch.object(index, "ARRAY_MOVES", 0):
        ix.match(e)  # pays back: the tree has few nodes
        assert isinstance(ix._dfa, ArrayPathAutomaton)
        assert ix.match(e) == want
        ix.add(F("//b"), "new")  # the tree changed: objects again, then arrays
        assert type(ix._automaton()) is PathAutomaton
        assert ix.match(e) == want | {"new"}
        assert isinstance(ix._automaton(), ArrayPathAutomaton)
        ix.add(F("//b"), "second key")  # keys only: the arrays stay
        assert isinstance(ix._automaton(), ArrayPathAutomaton)
        assert ix.match(e) == want | {"new", "second key"}


def test_array_automaton_cache_is_a_bounded_lru(monkeypatch):
    monkeypatch.setattr(shared_matching, "DFA_CACHE_SIZE", 40)
    ix = M.new_index()
    plain = [F(q) for q in ("//t3", "/r/*/t5", "//r//t7")]
    for i, f in enumerate(plain):
        ix.add(f, i)
    with arrays_at_once():
        for n in range(300):  # documents with ever new tag names
            raw = f"<r><t{n}><u{n}/></t{n}><v{n}/><t7/></r>"
            e = M.parse_event(raw)
            assert ix.match(e) == {
                i for i, f in enumerate(plain) if etree.XPath(f.xpath())(e.tree())
            }
            assert ix._dfa.cached <= 40
    assert isinstance(ix._dfa, ArrayPathAutomaton) and ix._dfa.cache_size == 40


@pytest.mark.parametrize("on_arrays", [False, True])
def test_yfilter_path_queries_on_either_automaton_match_lxml(data_dir, on_arrays):
    # the matching benchmark's workload: plain paths, many '//' and '*'
    with gzip.open(data_dir / "yfilter" / "queries" / "queries-153928-d.txt.gz", "rt") as fh:
        qs = list(dict.fromkeys(q.strip() for q in fh if q.strip()))[:2000]
    ix = M.new_index()
    for i, q in enumerate(qs):
        ix.add(F(q), i)
    compiled = [etree.XPath(q) for q in qs]
    with mock.patch.multiple(index, ARRAY_MOVES=0 if on_arrays else 10**9, ARRAY_PAYBACK=0):
        for p in sorted((data_dir / "yfilter" / "xmldocs-500").glob("*.xml"))[:12]:
            e = parse_document(p.read_bytes())
            assert ix.match(e) == {i for i, x in enumerate(compiled) if x(e.tree())}
        assert isinstance(ix._dfa, ArrayPathAutomaton) == on_arrays


def test_pickled_index_leaves_its_state_cache_behind_and_answers_alike():
    import pickle

    from pyspark import cloudpickle

    qs = ["//a/b", "/a//c", "/*/b", "//c"]
    ix = M.new_index()
    for i, q in enumerate(qs):
        ix.add(F(q), i)
    e = M.parse_event("<a><b/><c><b/></c></a>")
    with arrays_at_once():
        want = ix.match(e)
        ix.match(e)
        assert isinstance(ix._dfa, ArrayPathAutomaton) and ix._dfa.cached
        for dumps in (pickle.dumps, cloudpickle.dumps):
            copy = pickle.loads(dumps(ix))
            assert copy._dfa is None and copy._arrays is not None
            assert copy.match(e) == want
            assert isinstance(copy._dfa, ArrayPathAutomaton)
        assert ix._dfa.cached  # the original keeps its cache
