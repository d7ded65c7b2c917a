"""pubsift.models.constraints — the constraint algebra shared by the filter models.

A *constraint* is an operator with its operand, ``(Op, operand)``, that accepts or rejects
one value: an attribute filter of Mühl's records model without its attribute name (Mühl,
"Large-Scale Content-Based Publish/Subscribe Systems", 2002, §4.3.2-4.3.3). Its
value set ``L_A(c)`` (numbers as unions of intervals, strings as minimal automata, booleans,
null, multi values as unions of cubes, the absent value) is computed exactly, and every
relation between constraints is derived from value sets, so the covering and merging
tables of Mühl §4.3 (Tables 4.1-4.8) hold for every pair of operators, across kinds:

* ``covers(a, b)``  ⇔ L_A(a) ⊇ L_A(b);  ``identical(a, b)`` ⇔ L_A(a) = L_A(b);
  ``overlaps(a, b)`` ⇔ L_A(a) ∩ L_A(b) ≠ ∅ (§4.3.3-4.3.6);
* ``conjoin(a, b)``: one constraint for a ∧ b (conjunction-complete classes, §4.3.2);
* ``merge(cs)``: a perfect merger, L_A = ∪ L_A(cs) (§4.3.7, Table 4.8), ``hull(cs)``: an
  imperfect one;
* ``witness(c)``: a value that ``c`` accepts (used to build matching events).

Relations that would cost too much (huge automata or multi-value sets) raise
:class:`TooComplex` inside the algebra and give the sound answer at the public functions
("does not cover", "may overlap").

The records model builds its conjunctive filters on it, the xml model its value predicates,
the concepts model its clauses after unit and currency conversion. Modules, one idea each:

==================  ==============================================================
``constraints``     :class:`Constraint`, :class:`Op`, :class:`Interval`,
                    :class:`TypeSet`, :data:`ABSENT`; ``Constraint.matches``
``values``          kinds of values, :func:`skey` (``True`` ≠ ``1``), :func:`sort_key`
``intervals``       unions of intervals over the reals, integers, strings
``automata``        string value sets as minimal DFAs
``elements``,       element sets and sets of multi values (Table 4.7)
``multivalues``
``valuesets``       :class:`ValueSet`, :func:`value_set` (``L_A`` of a constraint)
``representation``  a value set read back as one constraint
``relations``       covering, identity, overlap, conjunction, merging, witnesses
``wire``            JSON forms :func:`dump_constraint` / :func:`load_constraint`
``limits``          limits on constants (integer digits, string length, surrogates)
``lexer``           the lexical parts of the filter text forms (one token type, JSON
                    numbers and strings), shared by the records and concepts parsers
==================  ==============================================================
"""

from pubsift.models.constraints import relations
from pubsift.models.constraints.constraints import (
    ABSENT,
    ELEMENT_OPS,
    Constraint,
    Interval,
    Op,
    TypeSet,
)
from pubsift.models.constraints.limits import MAX_INT_DIGITS, MAX_STRING, TooComplex
from pubsift.models.constraints.relations import (
    Conjunction,
    NotRepresentable,
    Unsatisfiable,
    conjoin,
    covers,
    hull,
    identical,
    merge,
    normalize,
    overlaps,
    witness,
)
from pubsift.models.constraints.values import (
    BOOL,
    MULTI,
    NULL,
    NUM,
    STR,
    Scalar,
    kind,
    skey,
    sort_key,
)
from pubsift.models.constraints.valuesets import ValueSet, value_set
from pubsift.models.constraints.wire import dump_constraint, load_constraint

__all__ = [
    "ABSENT",
    "BOOL",
    "ELEMENT_OPS",
    "MAX_INT_DIGITS",
    "MAX_STRING",
    "MULTI",
    "NULL",
    "NUM",
    "STR",
    "Conjunction",
    "Constraint",
    "Interval",
    "NotRepresentable",
    "Op",
    "Scalar",
    "TooComplex",
    "TypeSet",
    "Unsatisfiable",
    "ValueSet",
    "conjoin",
    "covers",
    "dump_constraint",
    "hull",
    "identical",
    "kind",
    "load_constraint",
    "merge",
    "normalize",
    "overlaps",
    "relations",
    "skey",
    "sort_key",
    "value_set",
    "witness",
]
