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

The names below (``__all__``) are the package's public API, what the models built on it
import; its modules are private (``limits`` and ``relations`` are also given as modules,
for their many small functions).
"""

from pubsift.models.constraints import limits, relations
from pubsift.models.constraints.automata import MAX_CELLS
from pubsift.models.constraints.constraints import (
    ABSENT,
    ELEMENT_OPS,
    EXCLUDABLE_OPS,
    Constraint,
    Interval,
    Op,
    TypeSet,
    glob_test,
)
from pubsift.models.constraints.lexer import (
    END,
    NUMBER,
    NUMBER_RE,
    PUNCT,
    STRING,
    STRING_RE,
    WORD,
    Token,
    number_value,
    quote,
    read_string,
)
from pubsift.models.constraints.limits import (
    MAX_INT_DIGITS,
    MAX_STRING,
    TooComplex,
    has_surrogate,
    int_message,
    int_too_large,
    string_message,
    string_too_long,
    surrogate_message,
)
from pubsift.models.constraints.regular import RegexpError, wildcard_parts, wildcard_text
from pubsift.models.constraints.relations import (
    Conjunction,
    NotRepresentable,
    Unsatisfiable,
    conjoin,
    covers,
    glob_constraint,
    hull,
    identical,
    merge,
    normalize,
    overlaps,
    span_key,
    witness,
)
from pubsift.models.constraints.values import (
    BOOL,
    MULTI,
    NULL,
    NUM,
    STR,
    Scalar,
    Value,
    kind,
    skey,
    sort_key,
)
from pubsift.models.constraints.valuesets import ValueSet, everything, surely_equal, value_set
from pubsift.models.constraints.wire import (
    JSON,
    check_regexp,
    dump_constraint,
    json_type,
    load_constraint,
    load_network,
    load_string,
    path_step,
)

__all__ = [
    "ABSENT",
    "BOOL",
    "ELEMENT_OPS",
    "END",
    "EXCLUDABLE_OPS",
    "JSON",
    "MAX_CELLS",
    "MAX_INT_DIGITS",
    "MAX_STRING",
    "MULTI",
    "NULL",
    "NUM",
    "NUMBER",
    "NUMBER_RE",
    "PUNCT",
    "STR",
    "STRING",
    "STRING_RE",
    "WORD",
    "Conjunction",
    "Constraint",
    "Interval",
    "NotRepresentable",
    "Op",
    "RegexpError",
    "Scalar",
    "Token",
    "TooComplex",
    "TypeSet",
    "Unsatisfiable",
    "Value",
    "ValueSet",
    "check_regexp",
    "conjoin",
    "covers",
    "dump_constraint",
    "everything",
    "glob_constraint",
    "glob_test",
    "has_surrogate",
    "hull",
    "identical",
    "int_message",
    "int_too_large",
    "json_type",
    "kind",
    "limits",
    "load_constraint",
    "load_network",
    "load_string",
    "merge",
    "normalize",
    "number_value",
    "overlaps",
    "path_step",
    "quote",
    "read_string",
    "relations",
    "skey",
    "sort_key",
    "span_key",
    "string_message",
    "string_too_long",
    "surely_equal",
    "surrogate_message",
    "value_set",
    "wildcard_parts",
    "wildcard_text",
    "witness",
]
