"""pubsift.models.records — structured records (Mühl 2002, §4.3).

Public API: :class:`RecordsModel` (the ``records`` filter model), :class:`Record` (events),
:class:`RecordFilter` (conjunctions of one constraint per attribute, built with
``RecordFilter.of({name: Constraint})``), :class:`Schema` and :class:`TypeHierarchy`
(integer attributes, ``instanceof`` types). Other models may use these, e.g. the concepts
model holds its filters as ``RecordFilter`` in a ``RecordsModel().new_index()``; the other
modules of this package are private.

The constraints themselves (:class:`Constraint`, :class:`Op`, :class:`Interval`,
:class:`TypeSet`, :data:`ABSENT`) and their relations belong to the shared constraint
algebra, :mod:`pubsift.models.constraints`; they are re-exported here because a records
filter is written with them.
"""

from pubsift.models.constraints import ABSENT, Constraint, Interval, Op, TypeSet
from pubsift.models.records.events import Record
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.model import RecordsModel
from pubsift.models.records.typesystem import Schema, TypeHierarchy

__all__ = [
    "ABSENT",
    "Constraint",
    "Interval",
    "Op",
    "Record",
    "RecordFilter",
    "RecordsModel",
    "Schema",
    "TypeHierarchy",
    "TypeSet",
]
