"""The factorization-tree index: XSEARCH (covered and cover mode) answers equal the pairwise
``covers`` answers; shared matching equals lxml per subscription; add/remove scripts."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree
from pubsift.core.index import LinearIndex
from pubsift.models.xml import XmlModel, parse_document
from pubsift.models.xml.factorization import FactorizationTree
from pubsift.models.xml.index import bits
from pubsift.models.xml.patterns import DESCENDANT, ROOT, WILDCARD, Node, XPathFilter, make
from pubsift.models.xml.testing import documents, xpaths

M = XmlModel()
F = M.parse_filter


def _pool(qs):
    return list(dict.fromkeys(F(q) for q in qs))


@settings(max_examples=60, deadline=None)
@given(st.lists(xpaths(), min_size=1, max_size=25), st.lists(xpaths(), min_size=1, max_size=5))
def test_xsearch_equals_pairwise_covers(stored, probes):
    pool = _pool(stored)
    ix = M.new_index()
    for i, f in enumerate(pool):
        ix.add(f, i)
    for f in _pool(probes) + pool[:3]:
        assert ix.covering(f) == {i for i, g in enumerate(pool) if M.covers(g, f)}, f.xpath()
        assert ix.covered_by(f) == {i for i, g in enumerate(pool) if M.covers(f, g)}, f.xpath()
        assert ix.identical(f) == {i for i, g in enumerate(pool) if M.identical(g, f)}
        assert ix.overlapping(f) == {i for i, g in enumerate(pool) if M.overlaps(g, f)}
        assert ix.merge_candidates(f) == {
            i for i, g in enumerate(pool) if M.merge([g, f], perfect=True) is not None
        }


@settings(max_examples=60, deadline=None)
@given(st.lists(xpaths(), min_size=1, max_size=25), st.lists(documents(), min_size=1, max_size=4))
def test_shared_matching_equals_lxml_per_subscription(qs, raws):
    ix = M.new_index()
    for q in qs:
        ix.add(F(q), q)
    for raw in raws:
        e = M.parse_event(raw)
        expected = {q for q in qs if etree.XPath(q)(e.tree())}
        assert ix.match(e) == expected
        assert {k for _, k in ix.match_pairs(e)} == expected


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), xpaths(depth=1), st.integers(0, 2)), max_size=30),
    st.lists(xpaths(depth=1), min_size=1, max_size=4),
    documents(),
)
def test_add_remove_scripts_agree_with_linear_index(script, probes, raw):
    ix, lin = M.new_index(), LinearIndex(M)
    for add, q, key in script:
        f = F(q)
        if add:
            ix.add(f, key)
            lin.add(f, key)
        elif (f, key) in lin:
            ix.remove(f, key)
            lin.remove(f, key)
        else:
            with pytest.raises(KeyError):
                ix.remove(f, key)
    assert sorted(map(repr, ix)) == sorted(map(repr, lin)) and len(ix) == len(lin)
    e = M.parse_event(raw)
    assert ix.match(e) == lin.match(e)
    for q in probes:
        f = F(q)
        assert ix.covering(f) == lin.covering(f)
        assert ix.covered_by(f) == lin.covered_by(f)
        assert ix.identical(f) == lin.identical(f)
    # the tree holds nothing of removed patterns
    live = {f for f, _ in lin}
    assert ix.tree.root.sub.bit_count() == len(live)
    assert ix.tree.nodes == sum(1 for _ in ix.tree.walk())


def test_factorization_tree_shares_prefixes_and_removes():
    t = FactorizationTree()
    pats = [F("/a/b/c"), F("/a/b/d"), F("/a/b[c]/d"), F("//a/b")]
    for i, f in enumerate(pats):
        t.add(i, f.root)
    # /a (1) b (1) c,d (2) + second b for the branching pattern? no: b is shared
    labels = sorted(n.label for n in t.walk())
    assert labels.count("a") == 2 and labels.count("//") == 1
    assert t.nodes == sum(1 for _ in t.walk())
    size_before = t.nodes
    t.remove(2)
    assert t.nodes <= size_before
    for i in (0, 1, 3):
        t.remove(i)
    assert t.nodes == 0 and t.root.sub == 0 and not t.root.children
    with pytest.raises(KeyError):
        t.remove(0)


def test_same_label_twice_in_one_pattern_gets_two_tree_nodes():
    t = FactorizationTree()
    t.add(0, F("/a[b/c]/b/d").root)
    a = t.root.children[0]
    assert [n.label for n in a.children] == ["b", "b"]


def test_bits():
    assert bits(0) == [] and bits(0b1011) == [0, 1, 3]
    big = (1 << 5000) | (1 << 3) | sum(1 << i for i in range(100, 200))
    assert bits(big) == [3] + list(range(100, 200)) + [5000]


def test_index_on_yfilter_queries_matches_lxml(data_dir):
    qs = [
        q.strip()
        for q in (data_dir / "yfilter" / "queries" / "nested_paths.txt").read_text().splitlines()
        if q.strip()
    ][:300]
    ix = M.new_index()
    for i, q in enumerate(qs):
        ix.add(F(q), i)
    compiled = [etree.XPath(q) for q in qs]
    for p in sorted((data_dir / "yfilter" / "xmldocs").glob("*.xml"))[:30]:
        e = parse_document(p.read_bytes())
        assert ix.match(e) == {i for i, x in enumerate(compiled) if x(e.tree())}


@settings(max_examples=15, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), xpaths(depth=1), st.integers(0, 2)), max_size=20),
    documents(),
)
def test_matching_between_adds_and_removes_sees_every_change(script, raw):
    # the path automaton caches keys per state: a key added to or removed from a pattern
    # already held must show in the next match
    ix, lin = M.new_index(), LinearIndex(M)
    e = M.parse_event(raw)
    for add, q, key in script:
        f = F(q)
        if add:
            ix.add(f, key)
            lin.add(f, key)
        elif (f, key) in lin:
            ix.remove(f, key)
            lin.remove(f, key)
        assert ix.match(e) == lin.match(e)
        assert sorted(map(repr, ix.match_pairs(e))) == sorted(map(repr, lin.match_pairs(e)))


def test_index_on_yfilter_path_queries_matches_lxml(data_dir):
    # the matching benchmark's workload: plain paths, many '//' and '*' (shared '//' layers)
    import gzip

    with gzip.open(data_dir / "yfilter" / "queries" / "queries-153928-d.txt.gz", "rt") as fh:
        qs = list(dict.fromkeys(q.strip() for q in fh if q.strip()))[:500]
    ix = M.new_index()
    for i, q in enumerate(qs):
        ix.add(F(q), i)
    compiled = [etree.XPath(q) for q in qs]
    for p in sorted((data_dir / "yfilter" / "xmldocs").glob("*.xml"))[:5]:
        e = parse_document(p.read_bytes())
        assert ix.match(e) == {i for i, x in enumerate(compiled) if x(e.tree())}


def _generalize(n: Node, rnd: random.Random) -> Node:
    """A random generalization of n's subtree: tags become ``*``, branches are dropped,
    steps become ``//`` steps (each pattern made so covers n, most often)."""
    if n.label == DESCENDANT:
        return make(DESCENDANT, children=[_generalize(n.children[0], rnd)])
    kids = [_generalize(c, rnd) for c in n.children if len(n.children) == 1 or rnd.random() < 0.6]
    kids = [make(DESCENDANT, children=[c]) if rnd.random() < 0.15 else c for c in kids]
    if n.label == ROOT or rnd.random() < 0.7:
        return make(n.label, n.preds, n.position, kids)
    return make(WILDCARD, children=kids)


@pytest.mark.parametrize("seed", [1, 2])
def test_cover_mode_prefilter_keeps_every_covering_pattern(data_dir, seed):
    # XSEARCH's cover mode leaves out, before the search, the patterns holding a tag or a
    # child edge the probe lacks, a group of tags at a time: over the NITF DTD's hundred
    # and more tags (many groups), no pattern covering the probe may be left out, also
    # after removals and re-insertions
    from pubsift.models.xml.covering import covers
    from pubsift.models.xml.factorization import _GROUP
    from pubsift.models.xml.generator import CHAND_FELBER, PatternGenerator

    dtd = data_dir / "yfilter" / "nitf-2-5.dtd"
    rnd = random.Random(seed)
    fs = PatternGenerator(dtd, CHAND_FELBER, seed=seed).patterns(400)
    probes = fs[:40]
    pool = list(
        dict.fromkeys(
            fs[40:] + [XPathFilter(_generalize(q.root, rnd)) for q in probes for _ in range(3)]
        )
    )
    tree = FactorizationTree()
    for i, g in enumerate(pool):
        tree.add(i, g.root)
    assert len(tree.grouped) > 4 and len(tree.tag_group) > 4 * _GROUP
    live = set(range(len(pool)))

    def check() -> int:
        hits = 0
        for q in probes:
            want = [i for i in sorted(live) if covers(pool[i], q)]
            assert set(want) <= set(bits(tree._candidates(q.root)[1])), q.xpath()
            assert bits(tree.covering(q.root)) == want, q.xpath()
            hits += len(want)
        return hits

    assert check() > len(probes)
    gone = rnd.sample(sorted(live), len(pool) // 2)
    for i in gone:
        tree.remove(i)
        live.discard(i)
    check()
    for i in gone[::2]:
        tree.add(i, pool[i].root)
        live.add(i)
    check()
    for g, gm in enumerate(tree.grouped):  # each group: its tags' patterns, no others
        union = 0
        for tag in tree.group_tags[g]:
            union |= tree.tagged.get(tag, 0)
        assert gm == union
    parents: dict[str, set[str]] = {}
    for a, b in tree.edged:
        parents.setdefault(b, set()).add(a)
    assert tree.edge_parents == parents


def _expected_moves(t) -> dict:
    """TNode.moves recomputed from scratch from the plain children (the spec of
    ``TNode.refresh``), as ids for the children's moves dicts."""
    out = {}
    for label, kids in t.plain_by_label.items():
        if label == "//":
            continue
        kmoves = [c for c in kids if _expected_moves(c)]
        nums = [n for c in kids for n in c.ending]
        desc = [d for c in kids for d in c.plain_by_label.get("//", ())]
        if kmoves or nums or desc:
            out[label] = (
                [id(c.moves) for c in kmoves],
                [id(c.moves["*"]) for c in kmoves if "*" in c.moves],
                nums,
                desc,
            )
    return out


_PLAIN = st.lists(
    st.sampled_from(["/a", "/b", "/*", "//a", "//b", "//*"]), min_size=1, max_size=4
).map("".join)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.one_of(_PLAIN, xpaths(depth=1)), st.integers(0, 99)),
        max_size=40,
    ),
    documents(),
)
def test_compiled_moves_of_the_tree_stay_exact_through_adds_and_removes(script, raw):
    # the path automaton reads TNode.moves only: every node's must equal a fresh computation
    ix = M.new_index()
    for add, q, pick in script:
        held = sorted(ix, key=repr)
        if add or not held:
            ix.add(F(q), q)
        else:
            ix.remove(*held[pick % len(held)])
    e = M.parse_event(raw)
    assert ix.match(e) == {k for f, k in ix if etree.XPath(k)(e.tree())}
    for t in [ix.tree.root, *ix.tree.walk()]:
        got = {
            label: ([id(x) for x in m[0]], [id(x) for x in m[1]], list(m[2]), list(m[3]))
            for label, m in t.moves.items()
        }
        assert got == _expected_moves(t)
