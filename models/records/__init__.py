"""pubsift.models.records — structured records (Mühl 2002, §4.3).

Public API: :class:`RecordsModel` (the ``records`` filter model), :class:`Record` (events),
:class:`RecordFilter` (conjunctions of one constraint per attribute, built with
``RecordFilter.of({name: Constraint})``), :class:`Schema` and :class:`TypeHierarchy`
(integer attributes, ``instanceof`` types), :class:`RecordsIndex` and
:class:`WitnessValues` (the index and its search by witness values), and :mod:`workload`
(Mühl's stock-quote scenario over real quotes, 2002 §6.2: events and subscriptions for
experiments and benchmarks). Other models may use these, e.g. the concepts model holds its
filters as ``RecordFilter`` in a ``RecordsModel().new_index()``; the other modules of this
package are private.

The constraints themselves (:class:`Constraint`, :class:`Op`, :class:`Interval`,
:class:`TypeSet`, :data:`ABSENT`) and their relations belong to the shared constraint
algebra, :mod:`pubsift.models.constraints`; they are re-exported here because a records
filter is written with them.
"""

from typing import TYPE_CHECKING, Any

from pubsift.models.constraints import ABSENT, Constraint, Interval, Op, TypeSet
from pubsift.models.records.events import Record
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.model import RecordsModel
from pubsift.models.records.typesystem import Schema, TypeHierarchy

if TYPE_CHECKING:
    from pubsift.models.records import workload
    from pubsift.models.records.index import RecordsIndex
    from pubsift.models.records.witness_values import WitnessValues
else:

    def __getattr__(name: str) -> Any:
        """:class:`RecordsIndex` (what ``RecordsModel().new_index()`` makes) and
        :class:`WitnessValues` (held filters by their witness values, Mühl 2002 §4.3.8),
        for models that index records filters of their own, and the module :mod:`workload`:
        imported on first use, so that a program that makes no index loads none of its
        modules."""
        if name == "RecordsIndex":
            from pubsift.models.records.index import RecordsIndex

            return RecordsIndex
        if name == "WitnessValues":
            from pubsift.models.records.witness_values import WitnessValues

            return WitnessValues
        if name == "workload":
            import importlib

            return importlib.import_module("pubsift.models.records.workload")
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ABSENT",
    "Constraint",
    "Interval",
    "Op",
    "Record",
    "RecordFilter",
    "RecordsIndex",
    "RecordsModel",
    "Schema",
    "TypeHierarchy",
    "TypeSet",
    "WitnessValues",
    "workload",
]
