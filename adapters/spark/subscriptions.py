"""Subscribers of the Spark job, from JSON lines or TOML tables, checked before Spark starts
(docs/spark.md, "Subscriptions"; bad input gets a clear error).

One subscriber per JSON line (blank lines and lines starting with ``#`` are skipped)::

    {"id": "alice", "model": "records", "filter": "symbol = \\"IBM\\" and price > 45"}
    {"id": "bob", "model": "records", "filter": {"$or": [{"symbol": ["IBM"]}, {"price": [{"numeric": [">", 100]}]}]}}
    {"id": "eu", "model": "concepts", "filter": "Kurs where Schluss < 40",
     "vocabulary": {"Kurs": "StockQuote", "Schluss": "FinalPrice"}, "context": {"currency": "EUR"}}

``filter`` is the model's text form or a JSON form (an EventBridge pattern for records; a
disjunction such as ``$or`` gives several filters, :meth:`FilterModel.parse_filters`).
``vocabulary`` and ``context`` belong to concepts subscribers: they are the options of the
model's :meth:`~pubsift.core.model.FilterModel.subscriber_view`, which rewrites the filter
into the matching vocabulary and context (Cilia et al. 2004, §4.2) and converts deliveries
back (:meth:`JobSubscriber.delivered`).

Every bad entry is collected and reported at once in one :class:`JobError`, each problem
starting with where it is (``subs.jsonl:3: ...``), so a user fixes a file in one pass.

**Subscriber ids** name the partition directories of the deliveries in the
``per-subscriber`` layout (``deliveries/subscriber=<id>/``, :mod:`.layout`): an id is 1 to 200 characters with no control, format or
unassigned characters, no line or paragraph separators, no leading or trailing white space,
no ``/`` or ``\\``, not ``.`` or ``..`` and not Spark's null marker
``__HIVE_DEFAULT_PARTITION__``. Other characters are allowed: Spark escapes ``= % : # ? *``
and the like as ``%XX`` in the directory name and unescapes them when reading back. The
directory name ``subscriber=<escaped id>`` must fit in a file name (255 bytes of UTF-8).
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pubsift.adapters.readers.textlines import decode_line
from pubsift.core.errors import (
    FilterSyntaxError,
    PubsiftError,
    UnknownModelError,
    filter_problem,
    one_line,
    printable,
)
from pubsift.core.model import FilterModel, SubscriberView
from pubsift.core.registry import installed_models, load_model
from pubsift.core.strict_json import strict_json

#: the keys of a subscriber entry (a JSON line or a TOML ``[[subscriber]]`` table)
KEYS = ("id", "model", "filter", "vocabulary", "context")
#: the longest line of a subscriptions file read (longer lines are a problem, not read)
MAX_LINE_BYTES = 1 << 20
#: problems kept in a JobError; beyond them only a count (a file of a million bad lines
#: gives a readable report, not a gigabyte of messages)
MAX_PROBLEMS = 1000
#: one problem's message is cut to this many characters
MAX_MESSAGE = 600
MAX_ID_CHARS = 200
#: the longest file name of common file systems (ext4, APFS, NTFS: 255 bytes/units)
MAX_NAME_BYTES = 255
PARTITION = "subscriber"
#: characters Spark escapes as %XX in a partition directory name
#: (``ExternalCatalogUtils.escapePathName``; control characters too)
_SPARK_ESCAPED = frozenset("\"#%'*/:=?\\\x7f{[]^")
_BAD_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_SPARK_NULL = "__HIVE_DEFAULT_PARTITION__"


class JobError(PubsiftError, ValueError):
    """Subscriptions or a job file that cannot be used: ``problems`` lists every bad entry,
    each starting with where it is; ``str()`` gives them one per line."""

    def __init__(self, problems: Sequence[str], more: int = 0) -> None:
        self.problems = list(problems)
        self.more = more
        lines = list(self.problems)
        if more:
            lines.append(f"... and {more:,} more problem(s)")
        super().__init__("\n".join(lines))


class Problems:
    """Collects the problems of one load (at most :data:`MAX_PROBLEMS` kept, the rest
    counted) and raises them together."""

    def __init__(self) -> None:
        self.kept: list[str] = []
        self.more = 0

    def add(self, message: str) -> None:
        if len(self.kept) >= MAX_PROBLEMS:
            self.more += 1
            return
        message = printable(message)
        if len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 1] + "…"
        self.kept.append(message)

    def extend(self, exc: JobError) -> None:
        for p in exc.problems:
            self.add(p)
        self.more += exc.more

    def __bool__(self) -> bool:
        return bool(self.kept or self.more)

    def raise_if_any(self) -> None:
        if self:
            raise JobError(self.kept, self.more)


@dataclass(frozen=True)
class JobSubscriber:
    """One subscriber: its ``filters`` (parsed by ``model``; several when the JSON form is a
    disjunction), ``where`` its entry (``subs.jsonl:3``), ``spec`` the entry as written and,
    ``view`` the model's :class:`~pubsift.core.model.SubscriberView` when it converts
    deliveries (concepts: the subscriber's vocabulary and context), else None."""

    id: str
    model: str
    filters: tuple[Any, ...]
    where: str
    spec: Mapping[str, Any] = field(hash=False)
    view: Any | None = field(default=None, compare=False)

    def delivered(self, model: FilterModel, f: Any, event: Any) -> Any:
        """What a delivery of ``event`` (which matched filter ``f`` of this subscriber)
        carries, JSON-safe (``json.dumps(..., allow_nan=False)`` accepts it).

        ``model.dump_event(event)``, or the subscriber view's
        :meth:`~pubsift.core.model.SubscriberView.delivery` (concepts, Cilia et al. 2004:
        "already converted into the subscriber's vocabulary and context"; docs/spark.md)."""
        if self.view is None:
            return model.dump_event(event)
        return self.view.delivery(f, event)


def by_model(subscribers: Sequence[JobSubscriber]) -> dict[str, list[JobSubscriber]]:
    """The subscribers of each model, in the order given."""
    out: dict[str, list[JobSubscriber]] = {}
    for s in subscribers:
        out.setdefault(s.model, []).append(s)
    return out


# -- reading -------------------------------------------------------------------------------
def load_subscriptions(
    path: str, models: Mapping[str, FilterModel] | None = None
) -> list[JobSubscriber]:
    """The subscribers of a JSON-lines file, or one JobError listing every problem (with
    its ``file:line``): a line that is not UTF-8, not strict JSON (duplicate keys, NaN), not
    an object or longer than :data:`MAX_LINE_BYTES`; a bad entry (:func:`subscribers_from`);
    a file that cannot be read or holds no subscriber. ``models`` provides model instances
    by name (default: the installed models)."""
    problems = Problems()
    entries: list[tuple[str, Any]] = []
    try:
        for where, text, problem in _lines(path):
            if text is None:
                entries.append((where, Unreadable(problem)))
                continue
            try:
                entries.append((where, strict_json(text)))
            except PubsiftError as exc:
                entries.append((where, Unreadable(one_line(exc))))
    except OSError as exc:
        problems.add(f"{path}: cannot read the subscriptions file: {exc.strerror or one_line(exc)}")
        problems.raise_if_any()
    subscribers = subscribers_from(entries, models, problems)
    if not entries and not problems:
        problems.add(f"{path}: no subscriber (the file holds no JSON line)")
    problems.raise_if_any()
    return subscribers


def subscribers_from_tables(
    tables: Sequence[Mapping[str, Any]], where: str, models: Mapping[str, FilterModel] | None = None
) -> list[JobSubscriber]:
    """The subscribers of TOML ``[[subscriber]]`` tables (keys as the JSON lines'); each
    problem starts with ``<where>: [[subscriber]] <n> (id "<id>")``. JobError as
    :func:`load_subscriptions`."""
    problems = Problems()
    entries = []
    for n, table in enumerate(tables, 1):
        sid = table.get("id") if isinstance(table, Mapping) else None
        label = f"{where}: [[subscriber]] {n}" + (
            f" (id {json.dumps(sid)[:80]})" if isinstance(sid, str) else ""
        )
        entries.append((label, table))
    subscribers = subscribers_from(entries, models, problems)
    if not entries and not problems:
        problems.add(f"{where}: no subscriber")
    problems.raise_if_any()
    return subscribers


@dataclass(frozen=True)
class Unreadable:
    """An entry that could not be read (not UTF-8, not JSON): its problem, reported in
    file order with the others."""

    problem: str


def subscribers_from(
    entries: Sequence[tuple[str, Any]], models: Mapping[str, FilterModel] | None, problems: Problems
) -> list[JobSubscriber]:
    """The subscribers of (where, entry) pairs; each bad entry's problems go to
    ``problems``, in order (an entry with a problem gives no subscriber; an
    :class:`Unreadable` entry gives its problem). Problems of an entry: not
    an object; an unknown key; a missing, non-string, unsafe or duplicate id; a missing or
    unknown model; a missing filter or one the model refuses (a syntax error with its
    position, an unknown concept, an impossible conversion); vocabulary or context on a
    model other than concepts."""
    cache: dict[str, FilterModel | str] = {}
    first: dict[str, str] = {}
    out = []
    for where, entry in entries:
        if isinstance(entry, Unreadable):
            problems.add(f"{where}: {entry.problem}")
            continue
        found = _subscriber(where, entry, models, cache, problems)
        sid = entry.get("id") if isinstance(entry, Mapping) else None
        if isinstance(sid, str):
            if sid in first:
                problems.add(
                    f"{where}: duplicate id {json.dumps(sid)[:80]} (first at {first[sid]})"
                )
                continue
            first[sid] = where
        if found is not None:
            out.append(found)
    return out


def _subscriber(
    where: str,
    entry: Any,
    models: Mapping[str, FilterModel] | None,
    cache: dict[str, FilterModel | str],
    problems: Problems,
) -> JobSubscriber | None:
    if not isinstance(entry, Mapping):
        problems.add(
            f"{where}: a subscriber is a JSON object "
            f'({{"id": ..., "model": ..., "filter": ...}}), not '
            f"{_kind(entry)}"
        )
        return None
    before = len(problems.kept) + problems.more
    unknown = [k for k in entry if k not in KEYS]
    if unknown:
        problems.add(
            f"{where}: unknown key(s) {', '.join(json.dumps(str(k))[:80] for k in unknown)}"
            f"; the keys are {', '.join(KEYS)}"
        )
    sid = entry.get("id")
    if sid is None:
        problems.add(f"{where}: the subscriber has no id")
    elif not isinstance(sid, str):
        problems.add(f"{where}: id is a string, not {_kind(sid)}")
    else:
        bad = id_problem(sid)
        if bad:
            problems.add(f"{where}: id {json.dumps(sid)[:80]}: {bad}")
    name = entry.get("model")
    model: FilterModel | None = None
    if name is None:
        problems.add(
            f"{where}: the subscriber has no model (installed: {', '.join(_installed(models))})"
        )
    elif not isinstance(name, str):
        problems.add(f"{where}: model is a string, not {_kind(name)}")
    else:
        got = _model(name, models, cache)
        if isinstance(got, str):
            problems.add(f"{where}: {got}")
        else:
            model = got
    spec = entry.get("filter")
    if "filter" not in entry:
        problems.add(f"{where}: the subscriber has no filter")
    elif not isinstance(spec, (str, Mapping)):
        problems.add(
            f"{where}: filter is the model's text form (a string) or a JSON form "
            f"(an object), not {_kind(spec)}"
        )
    else:
        bad = _not_json(spec)
        if bad:
            problems.add(f"{where}: filter {bad}")
    view: SubscriberView | None = None
    extra = [k for k in KEYS[3:] if k in entry]
    foreign = [k for k in extra if model is not None and k not in model.subscriber_options]
    if model is not None and foreign:
        problems.add(
            f"{where}: {' and '.join(foreign)} "
            f"{'belong' if len(foreign) > 1 else 'belongs'} to "
            f"{' or '.join(_readers(foreign, models, cache))} subscribers, "
            f"not to model {model.name!r}"
        )
    elif model is not None:
        view = _view(where, model, {k: entry[k] for k in extra}, problems)
    if model is None or len(problems.kept) + problems.more > before:
        return None
    if view is None:
        return None
    filters = _filters(where, model, spec, view, problems)
    if filters is None:
        return None
    # sid and name are strings: anything else added a problem above
    converting = view if view.converts else None
    return JobSubscriber(sid, name, tuple(filters), where, dict(entry), converting)  # type: ignore[arg-type]


def _filters(
    where: str, model: FilterModel, spec: Any, view: SubscriberView, problems: Problems
) -> list[Any] | None:
    label = f"{where}: filter"
    if isinstance(spec, str) and spec.lstrip().startswith("{"):
        try:
            spec = strict_json(spec)
        except PubsiftError as exc:
            problems.add(f"{label}: {one_line(exc)}")
            return None
    hook = "parse_filters (through the subscriber view)" if view.converts else "parse_filters"
    try:
        fs = list(view.parse_filters(spec))
    except FilterSyntaxError as exc:
        problems.add(filter_problem(exc, label))
        return None
    except PubsiftError as exc:
        problems.add(f"{label}: {one_line(exc)}")
        return None
    except Exception as exc:
        problems.add(
            f"{label}: internal error in model {model.name!r}'s {hook} "
            f"({type(exc).__name__}: {one_line(exc)[:300]}); this is a bug in the "
            "model"
        )
        return None
    if not fs:
        problems.add(f"{label}: the model gives no filter for it")
        return None
    return fs


def _view(
    where: str, model: FilterModel, options: Mapping[str, Any], problems: Problems
) -> SubscriberView | None:
    """The model's view of a subscriber with ``options`` (None: a problem added)."""
    try:
        return model.subscriber_view(options)
    except PubsiftError as exc:
        problems.add(f"{where}: {'/'.join(options) or 'subscriber'}: {one_line(exc)}")
    except Exception as exc:
        problems.add(
            f"{where}: {'/'.join(options) or 'subscriber'} cannot be used "
            f"({type(exc).__name__}: {one_line(exc)[:300]})"
        )
    return None


def _readers(
    keys: Sequence[str], models: Mapping[str, FilterModel] | None, cache: dict[str, Any]
) -> list[str]:
    """The models whose subscribers may give one of ``keys`` (for a message)."""
    found = []
    for name in _installed(models):
        got = _model(name, models, cache)
        if not isinstance(got, str) and any(k in got.subscriber_options for k in keys):
            found.append(name)
    return found or ["no installed model's"]


def _model(
    name: str, models: Mapping[str, FilterModel] | None, cache: dict[str, FilterModel | str]
) -> FilterModel | str:
    """The model named ``name``, or the problem (a string) when it cannot be used."""
    if name not in cache:
        if models and name in models:
            cache[name] = models[name]
        else:
            try:
                cache[name] = load_model(name)
            except UnknownModelError:
                cache[name] = (
                    f"unknown model {json.dumps(name)[:80]} (installed: "
                    f"{', '.join(_installed(models))})"
                )
            except PubsiftError as exc:  # a broken plug-in
                cache[name] = f"model {json.dumps(name)[:80]} cannot be used: {one_line(exc)}"
    return cache[name]


def _installed(models: Mapping[str, FilterModel] | None) -> list[str]:
    return sorted({i.name for i in installed_models()} | set(models or ()))


def id_problem(sid: str) -> str:
    """Why ``sid`` cannot be a subscriber id ('' when it can): see the module docstring."""
    if not sid:
        return "an id is not empty"
    if len(sid) > MAX_ID_CHARS:
        return f"an id is at most {MAX_ID_CHARS} characters, not {len(sid):,}"
    for i, ch in enumerate(sid, 1):
        if unicodedata.category(ch) in _BAD_CATEGORIES:
            return (
                f"character {i} is U+{ord(ch):04X}, a control, format or separator "
                "character (ids name directories)"
            )
        if ch in "/\\":
            return f"character {i} is {ch!r} (ids name directories)"
    if sid != sid.strip():
        return "an id has no leading or trailing white space"
    if sid in (".", "..", _SPARK_NULL):
        return f"{sid!r} cannot name a directory of deliveries"
    size = len(PARTITION) + 1 + sum(3 if ch in _SPARK_ESCAPED else len(ch.encode()) for ch in sid)
    if size > MAX_NAME_BYTES:
        return (
            f"its directory name {PARTITION}=<id> would be {size} bytes once Spark "
            f"escapes it, over the {MAX_NAME_BYTES} of a file name"
        )
    return ""


def _lines(path: str) -> Iterator[tuple[str, str | None, str]]:
    """(where, text, problem) of each non-blank line that is not a ``#`` comment; ``text``
    is None when the line is not UTF-8, holds a NUL byte or is longer than
    :data:`MAX_LINE_BYTES` (then it is skipped, not read into memory)."""
    with open(path, "rb") as fh:
        n = 0
        while True:
            raw = fh.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            n += 1
            where = f"{path}:{n}"
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):
                    raw = fh.readline(MAX_LINE_BYTES)
                yield where, None, f"a line longer than {MAX_LINE_BYTES:,} bytes (not read)"
                continue
            text, problem = decode_line(raw.rstrip(b"\r\n"))
            if text is None:
                yield where, None, problem
            elif text.strip() and not text.lstrip().startswith("#"):
                yield where, text, ""


def _not_json(value: Any) -> str:
    """Why a value from TOML is not JSON ('' when it is): dates and times, nan and inf."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"is not JSON ({one_line(exc)[:200]}; write dates as strings)"
    except RecursionError:
        return "is not JSON (nested too deeply)"
    return ""


def _kind(value: Any) -> str:
    return {
        dict: "an object",
        list: "an array",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


__all__ = [
    "KEYS",
    "MAX_LINE_BYTES",
    "JobError",
    "JobSubscriber",
    "by_model",
    "id_problem",
    "load_subscriptions",
    "subscribers_from",
    "subscribers_from_tables",
]
