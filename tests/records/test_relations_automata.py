"""The string automata behind the constraint algebra: lexical spans as DFAs agree with the
spans, minimal DFAs are canonical, and long constants stay linear (no recursion limits)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pubsift.models.constraints import relations as rel
from pubsift.models.constraints.automata import StrSet, dfa_kmp, dfa_span, dfa_words
from pubsift.models.constraints.constraints import Constraint, Op
from pubsift.models.constraints.intervals import prefix_span
from pubsift.models.constraints.valuesets import value_set
from relations_universe import CASE_VARIANTS, WORDS, constraints_of

LEXICAL = [
    Op.EQ,
    Op.NE,
    Op.LT,
    Op.LE,
    Op.GT,
    Op.GE,
    Op.IN_RANGE,
    Op.NOT_IN_RANGE,
    Op.PREFIX,
    Op.NOT_PREFIX,
    Op.IN_SET,
    Op.NOT_IN_SET,
]
STRINGS = WORDS + CASE_VARIANTS
lexical = (
    st.sampled_from(LEXICAL)
    .flatmap(constraints_of)
    .filter(lambda c: value_set(c).str.lex is not None)
)


def as_dfa_only(s: StrSet) -> StrSet:
    return StrSet(None, s.dfa)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(a=lexical, b=lexical)
def test_lexical_spans_and_their_automata_agree(a, b):
    sa, sb = value_set(a).str, value_set(b).str
    da, db = as_dfa_only(sa), as_dfa_only(sb)
    for w in STRINGS:
        assert da.contains(w) == sa.contains(w), (a, w)
    for op in ("__and__", "__or__", "__sub__"):
        spans, dfa = getattr(sa, op)(sb), getattr(da, op)(db)
        assert spans.lex is not None and dfa.lex is None
        assert spans == dfa  # compares the minimal automata
        assert all(spans.contains(w) == dfa.contains(w) for w in STRINGS)
    assert (~sa) == (~da)
    assert sa.issubset(sb) == da.issubset(db)


def test_minimal_automata_are_canonical():
    lo, _, hi, _ = prefix_span("ab")
    assert dfa_span(lo, hi) == value_set(Constraint(Op.PREFIX, "ab")).str.dfa
    assert dfa_words(["ab", "b"]) == dfa_words(["b", "ab", "b"])
    both = dfa_kmp("ab", absorbing=True).product(dfa_kmp("b", absorbing=True), lambda x, y: x and y)
    assert both == dfa_kmp("ab", absorbing=True)  # equal languages, equal objects


def test_long_constants_do_not_recurse():
    n = 3000
    long = Constraint(Op.EQ_IGNORE_CASE, "Ab" * n)
    assert rel.normalize(long) == Constraint(Op.EQ_IGNORE_CASE, "ab" * n)
    assert rel.covers(long, Constraint(Op.EQ, "aB" * n))
    assert not rel.covers(Constraint(Op.PREFIX, "a"), long)
    assert rel.witness(long).casefold() == "ab" * n
    assert rel.conjoin(Constraint(Op.SUFFIX, "b" * n), Constraint(Op.EQ, "b" * n)) == Constraint(
        Op.EQ, "b" * n
    )


def test_finite_languages_are_read_back_up_to_a_limit():
    caseless = value_set(Constraint(Op.EQ_IGNORE_CASE, "ab")).str
    assert caseless.strings() == ["AB", "Ab", "aB", "ab"]
    assert caseless.strings(limit=3) is None
    huge = value_set(Constraint(Op.EQ_IGNORE_CASE, "s" * 40)).str  # 3^40 strings (s, S, ſ)
    assert huge.strings() is None
