"""The delivery oracle: the specification of publish/subscribe systems checked on a trace.

Mühl 2002, "Large-Scale Content-Based Publish/Subscribe Systems", Def. 2.1 (and Def. 2.4 with
advertisements); Conan, "Distributed Event-Based System — Addendum" (slides) §1.3-1.6. Over the
trace of interface operations (:class:`~pubsift.core.network.TraceOp`) it keeps the
specification variables S_X (active subscriptions), A_X (active advertisements) and P_X
(published notifications) and checks

* safety, at every notify(Y, n): n was published before (b), Y has not been notified about
  n before (c), Y has an active subscription matching n at that moment (a), and, with
  advertisements, n matched an active advertisement of its publisher when published (e);
* liveness, as weak validity (§3.3.3): a publication made when every subscription and
  advertisement change had settled (a ``quiet`` marker since the last change), and with no
  change before the next ``quiet`` marker, is delivered to *exactly* the clients with a
  matching active subscription (and, with advertisements, only if it matches an active
  advertisement of its publisher).

Matching is the models' ``matches`` hook, evaluated by brute force: the oracle shares no
code with the routing tables or the indexes.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pubsift.core.model import Event, Filter, FilterModel


@dataclass(frozen=True)
class Violation:
    kind: str  # duplicate, unpublished, unsubscribed, unadvertised, missing, extra
    pub_id: Hashable
    client: str
    detail: str = ""


@dataclass
class _Publication:
    publisher: str
    model: str
    event: Event
    time: float
    advertised: bool
    expected: set[str]
    settled: bool
    closed: bool = False
    delivered: list[str] = field(default_factory=list)


@dataclass
class Verdict:
    violations: list[Violation]
    settled: int  # publications whose delivery set was checked exactly
    unsettled: int  # publications only checked for safety
    deliveries: int
    settled_ids: frozenset[Hashable] = frozenset()

    @property
    def ok(self) -> bool:
        return not self.violations

    def __str__(self) -> str:
        head = (
            f"{len(self.violations)} violation(s); {self.settled} settled and "
            f"{self.unsettled} unsettled publications, {self.deliveries} deliveries"
        )
        return "\n".join([head] + [f"  {v}" for v in self.violations[:20]])


def check(
    trace: Iterable[Any],  # TraceOps: which fields are set depends on the kind
    models: Mapping[str, FilterModel],
    advertisements: bool = False,
    since: float | None = None,
) -> Verdict:
    """Check ``trace`` against Def. 2.1 (Def. 2.4 if ``advertisements``). With ``since``,
    only publications made at or after that time are judged (self-stabilization: Def. 2.3
    demands safety only eventually)."""
    subs: dict[str, set[tuple[str, Filter]]] = {}
    advs: dict[str, set[tuple[str, Filter]]] = {}
    pubs: dict[Hashable, _Publication] = {}
    open_pubs: list[_Publication] = []
    changed = False
    violations: list[Violation] = []
    deliveries = 0

    def matching(variables: set[tuple[str, Filter]], model: str, event: Event) -> bool:
        m = models[model]
        return any(mm == model and m.matches(f, event) for mm, f in variables)

    p: _Publication | None
    for op in trace:
        k = op.kind
        if k in ("sub", "renew-sub"):
            subs.setdefault(op.client, set()).add((op.model, op.filter))
        elif k == "unsub":
            subs.get(op.client, set()).discard((op.model, op.filter))
        elif k in ("adv", "renew-adv"):
            advs.setdefault(op.client, set()).add((op.model, op.filter))
        elif k == "unadv":
            advs.get(op.client, set()).discard((op.model, op.filter))
        if k in ("sub", "unsub", "adv", "unadv"):
            changed = True
            for p in open_pubs:
                p.settled = False
        elif k == "quiet":
            changed = False
            for p in open_pubs:
                p.closed = True
            open_pubs = []
        elif k == "pub":
            advertised = not advertisements or matching(
                advs.get(op.client, set()), op.model, op.event
            )
            expected = (
                {y for y, fs in subs.items() if matching(fs, op.model, op.event)}
                if advertised
                else set()
            )
            p = _Publication(
                op.client, op.model, op.event, op.time, advertised, expected, settled=not changed
            )
            pubs[op.pub_id] = p
            open_pubs.append(p)
        elif k == "notify":
            p = pubs.get(op.pub_id)
            if p is None:
                violations.append(Violation("unpublished", op.pub_id, op.client))
                continue
            if since is not None and p.time < since:
                continue
            deliveries += 1
            if op.client in p.delivered:
                violations.append(Violation("duplicate", op.pub_id, op.client))
            p.delivered.append(op.client)
            if not matching(subs.get(op.client, set()), p.model, p.event):
                violations.append(
                    Violation(
                        "unsubscribed",
                        op.pub_id,
                        op.client,
                        f"no active subscription matches {p.event!r}",
                    )
                )
            if not p.advertised:
                violations.append(
                    Violation(
                        "unadvertised",
                        op.pub_id,
                        op.client,
                        f"{p.publisher} advertised nothing matching {p.event!r}",
                    )
                )
    settled = unsettled = 0
    settled_ids = set()
    for pid, p in pubs.items():
        if since is not None and p.time < since:
            continue
        if not (p.settled and p.closed):
            unsettled += 1
            continue
        settled += 1
        settled_ids.add(pid)
        got = set(p.delivered)
        what = f"{p.event!r} from {p.publisher}"
        violations.extend(Violation("missing", pid, y, what) for y in sorted(p.expected - got))
        violations.extend(Violation("extra", pid, y, what) for y in sorted(got - p.expected))
    return Verdict(violations, settled, unsettled, deliveries, frozenset(settled_ids))


def deliveries(trace: Iterable[Any]) -> dict[Hashable, frozenset[str]]:
    """Publication id -> the clients notified about it (for differential tests)."""
    out: dict[Hashable, set[str]] = {}
    for op in trace:
        if op.kind == "pub":
            out.setdefault(op.pub_id, set())
        elif op.kind == "notify":
            out.setdefault(op.pub_id, set()).add(op.client)
    return {k: frozenset(v) for k, v in out.items()}
