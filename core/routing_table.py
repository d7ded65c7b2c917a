"""A broker's routing table T_B for one filter model (Mühl 2002, "Large-Scale Content-Based
Publish/Subscribe Systems", §3.3.1 and §3.5).

A routing entry is a filter and a destination (a neighbour broker or a local client), plus
a ``tag`` that only simple routing uses (§3.5.2: every subscription is uniquely
identified). The entries live in the model's :class:`~pubsift.core.model.FilterIndex`
(``model.new_index()``) with the whole entry as key, so every set the strategies need is
one index query:

=====================  ===========================================  ======================
Mühl                   meaning                                       index query
=====================  ===========================================  ======================
F_B(n)                 destinations of notification n (3.2)          ``match``
C_B^I(F, D)            entries identical to F (for D) (3.13)         ``identical``
C_B^L(F, D)            entries covered by F (for D) (3.15/3.16)      ``covered_by``
D_B^I(F)               neighbours H with no G ≡ F from D ≠ H (3.14)  ``identical``
D_B^U(F)               ... no G ⊒ F from D ≠ H (3.17)                ``covering``
D_B^RU(F)              ... no G ⊐ F from D ≠ H (3.18)                ``covering``−``identical``
overlap (§3.6)         entries overlapping F                         ``overlapping``
=====================  ===========================================  ======================

With leasing (§3.7.2) every entry has an expiry time; adding a present entry renews it.
:func:`lease_expired` is the one test of a lease running out, :func:`entry_key` the one
deterministic order of entries (destination, then the filter's ``repr``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from functools import cached_property
from typing import NamedTuple

from pubsift.core.model import Event, Filter, FilterIndex, FilterModel


class Entry(NamedTuple):
    """A routing entry (F, D) with the tag of simple routing (``None`` otherwise)."""

    filter: Filter
    dest: str
    tag: Hashable = None


def entry_key(e: Entry) -> tuple[str, str]:
    """The deterministic order of routing entries: by destination, then by ``repr`` of the
    filter (filters need not be ordered among themselves)."""
    return (e.dest, repr(e.filter))


def lease_expired(expiry: float, now: float) -> bool:
    """Whether a lease granted until ``expiry`` has run out at time ``now`` (Mühl 2002,
    "Large-Scale Content-Based Publish/Subscribe Systems", §3.7.2)."""
    return expiry <= now


class RoutingTable:
    """The routing table of one broker for one model (subscriptions or advertisements)."""

    def __init__(
        self,
        model: FilterModel,
        neighbours: Iterable[str] | None = None,
        lease: float | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.model = model
        #: N_B: shared with the broker (the broker adds neighbours as it connects)
        self.neighbours: set[str] = (
            neighbours if isinstance(neighbours, set) else set(neighbours or ())
        )
        self.lease = lease
        self.clock = clock or (lambda: 0.0)
        self._index = model.new_index()
        self._by_dest: dict[str, set[Entry]] = {}
        self.expiry: dict[Entry, float] = {}
        self._constant = False

    @property
    def index(self) -> FilterIndex[Entry, Filter]:
        """The index of the entries' filters, which answers :meth:`destinations` (a
        broker reads the events it matches for it: ``FilterModel.wire_reader``)."""
        return self._index

    # -- constant entries ---------------------------------------------------------------
    def install_constant(self) -> None:
        """Initialize the table with the constant entries {(F_T, U) | U ∈ N_B}, F_T(n) = true
        (flooding, Mühl 2002, "Large-Scale Content-Based Publish/Subscribe Systems",
        §3.5.1). They follow N_B as neighbours connect, match every notification, and are
        part of the algorithm rather than of its state: no lease, no removal, not counted
        in :meth:`sizes`, not in the index queries (F_T is no filter of the model). They
        show in :meth:`destinations` only, as N_B."""
        self._constant = True

    @cached_property
    def parts(self) -> RoutingTable:
        """The subscriptions the entries stand for, where an entry stands for several
        (merging, Mühl 2002, "Large-Scale Content-Based Publish/Subscribe Systems",
        §3.5.5): a table of its own over the same model, N_B, lease period and clock, so
        the parts have their index and their leases (§3.7.2: a merger is renewed through
        its parts) in the same place and form as the entries. Made on first use."""
        return RoutingTable(self.model, self.neighbours, self.lease, self.clock)

    # -- content ------------------------------------------------------------------------
    def add(self, f: Filter, dest: str, tag: Hashable = None) -> bool:
        """Insert (f, dest); renews its lease if present. Returns True if it was new."""
        e = Entry(f, dest, tag)
        new = e not in self.expiry
        if new:
            self._index.add(f, e)
            self._by_dest.setdefault(dest, set()).add(e)
        self.expiry[e] = self.lease_end()
        return new

    def lease_end(self) -> float:
        """When a lease granted (or renewed) now runs out: now + π, never without leasing."""
        return self.clock() + self.lease if self.lease is not None else float("inf")

    def remove(self, e: Entry) -> bool:
        """Remove entry ``e`` if present; returns whether it was present."""
        if e not in self.expiry:
            return False
        del self.expiry[e]
        self._index.remove(e.filter, e)
        entries = self._by_dest[e.dest]
        entries.discard(e)
        if not entries:
            del self._by_dest[e.dest]
        return True

    def __contains__(self, e: object) -> bool:
        return e in self.expiry

    def __len__(self) -> int:
        return len(self.expiry)

    def __iter__(self) -> Iterator[Entry]:
        return iter(list(self.expiry))

    def reaches_beyond(self, dest: str) -> bool:
        """Whether some entry (a constant one included) names a destination other than
        ``dest``: if not, nothing that comes from ``dest`` can go anywhere (Fig. 3.2 never
        sends a notification back), and it need not even be parsed."""
        if self._constant and any(n != dest for n in self.neighbours):
            return True
        by_dest = self._by_dest
        return len(by_dest) > 1 or (len(by_dest) == 1 and dest not in by_dest)

    def filters(self, dest: str) -> list[Filter]:
        return [e.filter for e in self._by_dest.get(dest, ())]

    def sizes(self) -> tuple[int, int]:
        """(local entries, remote entries): entries for local clients and for neighbours."""
        remote = sum(len(es) for d, es in self._by_dest.items() if d in self.neighbours)
        return len(self) - remote, remote

    def expired(self, now: float) -> list[Entry]:
        """Entries whose lease ran out by ``now`` (§3.7.3)."""
        return [e for e, t in self.expiry.items() if lease_expired(t, now)]

    # -- Mühl's sets, through the index -------------------------------------------------
    def destinations(self, event: Event) -> set[str]:
        """F_B(n): every destination with an entry matching ``event`` (3.2), the constant
        entries included."""
        dests = {e.dest for e in self._index.match(event)}
        if self._constant:
            dests |= self.neighbours
        return dests

    def destinations_many(
        self, events: Sequence[Event], exclude: str | None = None
    ) -> list[frozenset[str]]:
        """F_B(n) without ``exclude`` for each of ``events``, in order: ``destinations(e)
        - {exclude}``, for a batch of publications in one call (DESIGN §2.6). The index
        answers them by its ``match_batch``; the destinations of an answer that names one
        entry (every event of a batch going where the last one went, the common case) are
        made once and shared: the sets are frozen."""
        answers = self._index.match_batch(events)
        const = frozenset(self.neighbours) - {exclude} if self._constant else None
        nowhere = const if const is not None else frozenset()
        one: dict[Entry, frozenset[str]] = {}
        out: list[frozenset[str]] = []
        append = out.append
        for keys in answers:
            n = len(keys)
            if n == 1:
                (e,) = keys
                dests = one.get(e)
                if dests is None:
                    dests = one[e] = frozenset({e.dest} if e.dest != exclude else ()) | nowhere
                append(dests)
            elif n == 0:
                append(nowhere)
            else:
                dests = frozenset({e.dest for e in keys})
                if exclude in dests:
                    dests = dests - {exclude}
                append(dests | nowhere if const is not None else dests)
        return out

    def identical(self, f: Filter, dest: str | None = None) -> set[Entry]:
        """C_B^I(F, D) (3.13); all destinations when ``dest`` is None."""
        return _at(self._index.identical(f), dest)

    def covered(self, f: Filter, dest: str | None = None) -> set[Entry]:
        """C_B^L(F, D): entries whose filter F covers (3.15/3.16)."""
        return _at(self._index.covered_by(f), dest)

    def covering(self, f: Filter, dest: str | None = None) -> set[Entry]:
        """Entries whose filter covers F."""
        return _at(self._index.covering(f), dest)

    def overlapping(self, f: Filter, dest: str | None = None) -> set[Entry]:
        """Entries whose filter overlaps F (§3.6)."""
        return _at(self._index.overlapping(f), dest)

    def merge_candidates(self, f: Filter, dest: str | None = None) -> set[Entry]:
        """Entries whose filter has a perfect merger with F (§3.5.5)."""
        return _at(self._index.merge_candidates(f), dest)

    def d_identity(self, f: Filter, ignore: Entry | None = None) -> set[str]:
        """D_B^I(F) (3.14)."""
        return self._free(self._index.identical(f), ignore)

    def d_upper(self, f: Filter, ignore: Entry | None = None) -> set[str]:
        """D_B^U(F) (3.17)."""
        return self._free(self._index.covering(f), ignore)

    def d_real_upper(self, f: Filter, ignore: Entry | None = None) -> set[str]:
        """D_B^RU(F) (3.18): real covers are covers that are not identical."""
        return self._free(self._index.covering(f) - self._index.identical(f), ignore)

    def d_renewal(self, e: Entry, blocking: set[Entry]) -> set[str]:
        """Where a renewal of entry ``e`` goes (§3.7.2): like D_B^U / D_B^I, but an entry
        identical to ``e`` blocks only if it ranks before ``e``. Two identical entries from
        different destinations would otherwise each count on the other to renew the
        neighbours' leases, and those leases would expire; with a fixed rank exactly one
        of them renews every neighbour that neither really covers."""
        key = entry_key(e)
        real = {
            g
            for g in blocking
            if g != e and (entry_key(g) < key or not self.model.covers(e.filter, g.filter))
        }
        return self._free(real, None)

    def _free(self, blocking: set[Entry], ignore: Entry | None) -> set[str]:
        """Neighbours H such that no entry of ``blocking`` has a destination other than H."""
        dests = {e.dest for e in blocking if e != ignore}
        if not dests:
            return set(self.neighbours)
        if len(dests) == 1:
            return dests & self.neighbours
        return set()


def _at(entries: set[Entry], dest: str | None) -> set[Entry]:
    return entries if dest is None else {e for e in entries if e.dest == dest}
