"""Token authentication and authorized filters for client connections (docs/protocol.md
§10), after Fiege, Zeidler & Buchmann, "Security Aspects in Publish/Subscribe Systems",
DEBS 2004, §4.1 "Client Access Control" (access control at the border broker; there the
credential is an attribute certificate carrying the authorized filters, here a token
naming an identity of broker.toml, or a verified TLS client certificate whose name the
identity gives as ``cert_name``): a subscription or advertisement is accepted only if an
authorized filter of the identity *covers* it, a publication only if it *matches* one of
the identity's publishing filters.

Covering is the model's ``covers`` hook, which is sound ("cannot decide" says False), so a
filter the model cannot prove inside the authorized set is refused. The authorized filters
of one identity and model are held in the model's index (``new_index``), so the check is
``index.covering(f)`` / ``index.match(e)``, not a scan over the identity's filters.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from pubsift.adapters.broker.config import ClientIdentity, ConfigError
from pubsift.core.errors import PubsiftError, one_line
from pubsift.core.messages import Adv, Message, Pub, Sub
from pubsift.core.model import FilterIndex, FilterModel


@dataclass
class Grant:
    """One identity's authorized filters, indexed per model."""

    name: str
    token: bytes | None = field(repr=False)
    subscribe: dict[str, FilterIndex[Any, Any]] = field(default_factory=dict)
    publish: dict[str, FilterIndex[Any, Any]] = field(default_factory=dict)
    #: the TLS client certificate name that selects this identity
    cert_name: str | None = None
    #: the broker's own HTTP gateway, which checks each HTTP request itself
    unrestricted: bool = False
    #: whether it may read the monitor port (docs/monitoring.md)
    monitor: bool = False


class Authorizer:
    """The identities of a broker; :attr:`enabled` is False (an open broker) without any."""

    def __init__(
        self,
        identities: tuple[ClientIdentity, ...],
        models: Mapping[str, FilterModel],
        source: str = "<config>",
    ) -> None:
        self.grants: list[Grant] = []
        for ident in identities:
            if "/" in ident.name or not ident.name or len(ident.name) > 100:
                raise ConfigError(
                    f"{source}: identities.{ident.name}: an identity's name is 1-100 "
                    "characters without '/' (docs/protocol.md §13)"
                )
            token = ident.token.encode("utf-8") if ident.token is not None else None
            g = Grant(ident.name, token, cert_name=ident.cert_name, monitor=ident.monitor)
            for right, table in (("subscribe", ident.subscribe), ("publish", ident.publish)):
                out: dict[str, FilterIndex[Any, Any]] = getattr(g, right)
                for m, texts in table.items():
                    where = f"{source}: identities.{ident.name}.{right}.{m}"
                    model = models.get(m)
                    if model is None:
                        raise ConfigError(
                            f"{where}: model {m!r} is not routed by this broker "
                            f"(it routes {', '.join(sorted(models))})"
                        )
                    index = out[m] = model.new_index()
                    for i, text in enumerate(texts):
                        try:
                            index.add(model.parse_filter(text), i)
                        except PubsiftError as exc:
                            raise ConfigError(f"{where}[{i}]: {one_line(exc)}") from None
            self.grants.append(g)

    @property
    def enabled(self) -> bool:
        return bool(self.grants)

    def named(self, name: str) -> Grant | None:
        """The configured identity called ``name`` (never the gateway's own), or None."""
        return next((g for g in self.grants if g.name == name and not g.unrestricted), None)

    def authenticate(self, token: Any) -> Grant | None:
        """The identity whose token is ``token`` (compared in constant time), or None."""
        if not isinstance(token, str) or not token:
            return None
        given = token.encode("utf-8")
        found = None
        for g in self.grants:  # no early exit: the time does not tell which one matched
            if g.token is not None and hmac.compare_digest(g.token, given):
                found = g
        return found

    def by_certificate(self, names: Set[str]) -> Grant | str:
        """The identity whose ``cert_name`` is one of ``names`` (a verified client
        certificate's CN and subjectAltNames), or why there is none."""
        found = [g for g in self.grants if g.cert_name is not None and g.cert_name in names]
        if len(found) == 1:
            return found[0]
        shown = ", ".join(repr(n) for n in sorted(names)) or "no name"
        if not found:
            return f"the client certificate ({shown}) names no identity"
        return (
            f"the client certificate ({shown}) names several identities "
            f"({', '.join(sorted(g.name for g in found))})"
        )

    def identify(self, hello: Mapping[str, Any], cert_names: Set[str] | None) -> Grant | str:
        """The identity of a client, or why it has none: the hello's ``token`` if it has
        one (then it must be known), else the names of its verified TLS client
        certificate (``cert_names``; None without one)."""
        if "token" in hello:
            return self.authenticate(hello["token"]) or "unknown token"
        if cert_names is not None:
            return self.by_certificate(cert_names)
        return "no token in the hello (and no client certificate)"

    def network_id(self, grant: Grant, presented: str) -> tuple[str, str | None]:
        """The id in the network of a client of ``grant`` whose hello says ``presented``,
        and the identity that owns ``presented`` if it is not ``grant``'s (then the
        connection is refused). Every id a broker trusts belongs to one identity
        (docs/protocol.md §13): the broker qualifies a client's id as ``identity/id``,
        so ids of two identities never collide anywhere in the network, and the
        client's publisher id and sequence numbers are its identity's alone. A hello
        that already says ``identity/id`` is taken as it is when it names the client's
        own identity, and refused when it names another one."""
        head, sep, _ = presented.partition("/")
        if sep and head == grant.name:
            return presented, None
        if sep and self.named(head) is not None:
            return presented, head
        return f"{grant.name}/{presented}", None

    def internal(self, name: str) -> str:
        """Add an unrestricted identity for the broker's own HTTP gateway, which checks
        every HTTP request against the identities itself; returns its (random) token."""
        token = secrets.token_urlsafe(32)
        self.grants.append(Grant(name, token.encode("utf-8"), unrestricted=True))
        return token

    @staticmethod
    def check(grant: Grant, msg: Message, models: Mapping[str, FilterModel]) -> str | None:
        """None if ``grant`` allows ``msg``; otherwise why not. Withdrawals (unsub,
        unadv) are always allowed: they only remove what the client itself added."""
        if grant.unrestricted:
            return None
        try:
            if isinstance(msg, (Sub, Adv)):
                index = (grant.subscribe if isinstance(msg, Sub) else grant.publish).get(msg.model)
                if index is None or not index.covering(msg.filter):
                    verb = "subscribe to" if isinstance(msg, Sub) else "advertise"
                    return (
                        f"identity {grant.name!r} may not {verb} "
                        f"{models[msg.model].format_filter(msg.filter)!r} in {msg.model} "
                        "(no authorized filter covers it)"
                    )
            elif isinstance(msg, Pub):
                index = grant.publish.get(msg.model)
                if index is None or not index.match(msg.event):
                    return (
                        f"identity {grant.name!r} may not publish this event in {msg.model} "
                        "(it matches no authorized filter)"
                    )
        except Exception as exc:  # a model that fails cannot authorize anything
            return f"identity {grant.name!r}: authorization check failed: {type(exc).__name__}"
        return None
