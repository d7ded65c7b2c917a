"""Merging of concept filters: Mühl's merging of conjunctive filters (2002, §4.3.7) carried
over to concepts (Cilia et al. 2004, §3.1): a member covering the others; filters that
agree on the concept and on all clauses but one, whose constraints (normalized into one
matching context) merge in the shared constraint algebra; imperfect mergers as the nearest
common concept with the hulls of the clauses all inputs share. Covering is
:mod:`.covering`'s.
"""

from __future__ import annotations

from collections.abc import Sequence

from pubsift.models.concepts.covering import Relations
from pubsift.models.concepts.filters import Clause, ConceptFilter, make_filter
from pubsift.models.constraints import relations as constraint_relations


def merge(
    rel: Relations, fs: Sequence[ConceptFilter], perfect: bool = True
) -> ConceptFilter | None:
    """Mühl §4.3.7 on concept filters: a covering member of ``fs``; else filters that
    agree on the concept and on all clauses but one (same path and context), merged by
    the constraint algebra's ``merge``; with ``perfect=False`` the nearest common concept
    and the hulls of the clauses all inputs share."""
    fs = list(dict.fromkeys(fs))
    if not fs:
        return None
    for f in fs:
        if all(rel.covers(f, g) for g in fs):
            return f
    merged = _merge_one_clause(fs)
    if merged is not None or perfect:
        return merged
    return _hull(rel, fs)


def _merge_one_clause(fs: list[ConceptFilter]) -> ConceptFilter | None:
    first = fs[0]
    keys = [c.key for c in first.clauses]
    if any(f.concept != first.concept or [c.key for c in f.clauses] != keys for f in fs):
        return None
    differing = [i for i in range(len(keys)) if len({f.clauses[i] for f in fs}) > 1]
    if len(differing) != 1:
        return None
    i = differing[0]
    c = constraint_relations.merge([f.clauses[i].constraint for f in fs])
    if c is None:
        return None
    clauses = list(first.clauses)
    clauses[i] = Clause(clauses[i].path, c, clauses[i].target, clauses[i].kind)
    return make_filter(first.concept, clauses)


def _hull(rel: Relations, fs: list[ConceptFilter]) -> ConceptFilter | None:
    onto = rel.ontology
    common = onto.common_ancestors(f.concept for f in fs)
    if not common:
        return None
    concept = max(common, key=lambda c: (len(onto.ancestors(c)), c))
    shared = set.intersection(*({c.key for c in f.clauses} for f in fs))
    clauses = []
    for key in sorted(shared):
        group = [next(c for c in f.clauses if c.key == key) for f in fs]
        try:
            h = constraint_relations.hull([c.constraint for c in group])
        except constraint_relations.NotRepresentable:
            continue
        clauses.append(Clause(group[0].path, h, group[0].target, group[0].kind))
    return make_filter(concept, clauses)


__all__ = ["merge"]
