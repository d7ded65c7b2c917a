"""pubsift.models.records — structured records (Mühl 000, §4.3)."""
from pubsift.models.records.constraints import ABSENT, Constraint, Interval, Op, TypeSet
from pubsift.models.records.filters import RecordFilter
from pubsift.models.records.model import RecordsModel
from pubsift.models.records.typesystem import Schema, TypeHierarchy
from pubsift.models.records.values import Record

__all__ = ["ABSENT", "Constraint", "Interval", "Op", "Record", "RecordFilter", "RecordsModel",
           "Schema", "TypeHierarchy", "TypeSet"]
