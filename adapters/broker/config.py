"""The broker's configuration file, ``broker.toml`` (read with :mod:`tomllib`).

Every section and key is optional; a key that is not known, or a value of the wrong type or
range, is a :class:`ConfigError` naming the file and the key. Example::

    [broker]
    id = "b1"                          # unique in the network (default: host:port)
    listen = "127.0.0.1:7400"
    neighbours = ["127.0.0.1:7401"]    # dialled by this broker (configure a link on one side)
    strategy = "covering"              # flooding, simple, identity, covering, merging, ...
    advertisements = false
    models = ["records", "xml"]        # default: every installed model
    link_token = "..."                 # links must present it (required with [identities])

    [lease]                            # Mühl 2002, §3.7: π > ρ + d(δmax − δmin)
    period = 30.0                      # π, seconds
    refresh = 10.0                     # ρ, seconds (told to clients in the hello reply)
    max_delay = 0.5                    # δmax − δmin assumed for one link, seconds
    diameter = 8                       # d, the longest path in the broker tree

    [limits]                           # per connection (docs/protocol.md §12)
    max_frame_bytes = 1048576          # longer frames are refused from the length prefix
    max_queue = 10000                  # frames queued to one peer before it is cut off
    max_queue_bytes = 67108864         # bytes queued to one peer before it is cut off
    max_subscriptions = 1000           # per client, and as many advertisements (default: no limit)
    max_publish_rate = 100.0           # publications/s per client (default: no limit); faster
    publish_burst = 200                #   ones are not read until the bucket refills
    max_connections = 100              # client connections (default: no limit)
    # with [identities], max_subscriptions, max_publish_rate, publish_burst and
    # max_connections are each identity's, for all its connections together
    hello_timeout = 10.0               # seconds a new connection has to send its hello

    [links]
    backoff_initial = 0.1              # seconds before the first re-dial
    backoff_max = 5.0

    [heartbeat]                        # liveness of every connection (docs/protocol.md §1.1)
    interval = 15.0                    # seconds of silence from a peer before a ping; 0: off
    max_missed = 2                     # unanswered pings before closing (reason "timeout")

    [gateway]                          # the HTTP gateway (docs/protocol.md §9); off by default
    listen = "127.0.0.1:8080"          # HTTPS when [tls] is set; Bearer tokens with identities
    max_pending = 10000                # events waiting for one SSE stream before it is ended

    [monitor]                          # /metrics, /status, / (docs/monitoring.md); off by default
    listen = "127.0.0.1:8222"          # beyond loopback only with [identities]

    [tls]                              # TLS on every connection (docs/protocol.md §11)
    cert = "/etc/pubsift/b1.pem"       # this broker's certificate chain (PEM), required
    key = "/etc/pubsift/b1.key"        # its private key (default: in the cert file)
    ca = "/etc/pubsift/ca.pem"         # verifies neighbours dialled, client certificates
    require_client_cert = false        # true: every client and broker must present one
    link_names = ["b2.example.org"]    # neighbour certificates that authenticate a link

    [identities.alice]                 # with any identity, clients must authenticate
    token_file = "/etc/pubsift/alice.token"   # or: token = "..." (one of the two)
    cert_name = "alice"                # and/or: a client certificate naming "alice"
    subscribe.records = ['symbol prefix "I"']  # authorized filters (checked by covering)
    publish.records = ['symbol = "IBM"']       # advertisements covered, publications matched
    max_subscriptions = 50                     # this identity's own limits: they replace
    max_publish_rate = 10.0                    # [limits]'s and count all its connections
    max_connections = 20                       # together (docs/protocol.md §12)

    [[history]]                        # a history the broker hosts (docs/history.md)
    model = "records"
    filter = "true"                    # what it records
    store = "/var/lib/pubsift/b1.sqlite"
    max_age = 86400.0                  # retention: also max_count, max_bytes
    monitor = true                     # its token also opens the monitor (default: false)

With ``[tls]`` the broker's port speaks TLS only (clients use ``pubsifts://``); the keys
are read by :func:`pubsift.adapters.broker.tls.read_tls`, and a missing or unreadable file,
a key that does not fit the certificate, or ``require_client_cert``, ``link_names`` or a
``cert_name`` without ``ca`` is a :class:`ConfigError` naming the file and the key.
``cert_name`` selects the identity of a client whose verified certificate has that name as
subject common name (CN) or as a subjectAltName DNS name, e-mail address or URI (as
Mosquitto's ``use_identity_as_username`` or NATS's ``verify_and_map``); a token in the
hello, when sent, takes precedence.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pubsift.adapters.broker.address import DEFAULT_PORT, Address, ConfigError
from pubsift.core.leasing import LeaseTimingError, Leasing
from pubsift.core.strategies import STRATEGIES

if TYPE_CHECKING:
    from pubsift.adapters.broker.history_config import HistoryConfig
    from pubsift.adapters.broker.tls import TLSConfig

#: the limits an identity may set for itself: each replaces the one of ``[limits]`` and
#: counts all the identity's connections together (docs/protocol.md §12)
IDENTITY_LIMITS = (
    "max_subscriptions",
    "max_publish_rate",
    "publish_burst",
    "max_connections",
    "max_queue_bytes",
)


@dataclass(frozen=True)
class ClientIdentity:
    """A client identity of ``[identities.NAME]``: its credentials (a token, and/or the
    name of a TLS client certificate) and its authorized filters per model, as text in the
    model's syntax (parsed by the daemon, which knows the models). ``publish`` filters authorize advertisements (by covering) and publications
    (by matching); Fiege, Zeidler & Buchmann, "Security Aspects in Publish/Subscribe
    Systems", DEBS 2004, §4.1 "Client Access Control"."""

    name: str
    token: str | None = field(repr=False)
    subscribe: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    publish: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: a verified client certificate with this name (CN or subjectAltName) selects it
    cert_name: str | None = None
    #: this identity's own limits, for all its connections together (None: those of
    #: ``[limits]``, per connection; docs/protocol.md §12)
    max_subscriptions: int | None = None
    max_publish_rate: float | None = None
    publish_burst: int | None = None
    #: connections at once (the gateway's SSE streams included); None: no limit
    max_connections: int | None = None
    max_queue_bytes: int | None = None
    #: whether its token (or certificate) opens the monitor port (docs/monitoring.md)
    monitor: bool = False


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``): reachable from this
    machine only."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class BrokerConfig:
    """Everything a broker daemon needs; :func:`load_config` reads it from a file."""

    id: str | None = None
    listen: Address = Address("127.0.0.1", DEFAULT_PORT)  # noqa: RUF009 (frozen)
    neighbours: tuple[Address, ...] = ()
    strategy: str = "covering"
    advertisements: bool = False
    models: tuple[str, ...] | None = None
    lease_period: float = 30.0
    lease_refresh: float = 10.0
    lease_max_delay: float = 0.5
    lease_diameter: int = 8
    max_frame_bytes: int = 1 << 20
    max_queue: int = 10_000
    #: bytes queued to one peer (frames waiting and the transport's buffer) before it is
    #: cut off as a slow consumer
    max_queue_bytes: int = 64 << 20
    #: subscriptions (and, separately, advertisements) one client may hold (None: no limit)
    max_subscriptions: int | None = None
    #: publications per second per client, and how many may come at once (None: no limit)
    max_publish_rate: float | None = None
    publish_burst: int | None = None
    #: client connections at once (with identities: each identity's); None: no limit
    max_connections: int | None = None
    #: seconds a new connection has to send its hello (and a linking broker its reach)
    hello_timeout: float = 10.0
    backoff_initial: float = 0.1
    backoff_max: float = 5.0
    #: seconds of silence from a peer before it is pinged (0: no heartbeat)
    heartbeat_interval: float = 15.0
    #: pings left unanswered before the connection is closed (``timeout``)
    heartbeat_max_missed: int = 2
    #: the HTTP gateway's address (None: no gateway)
    gateway: Address | None = None
    #: events waiting to be written to one SSE stream before it is ended (``slow-consumer``)
    gateway_max_pending: int = 10_000
    #: the monitor's address (None: no monitor; docs/monitoring.md)
    monitor: Address | None = None
    #: the shared secret of broker links (sent by the dialler, required by the acceptor)
    link_token: str | None = field(default=None, repr=False)
    #: client identities (docs/protocol.md §10); empty: the broker is open to every client
    identities: tuple[ClientIdentity, ...] = ()
    #: TLS on client connections and broker links (docs/protocol.md §11); None: plaintext
    tls: TLSConfig | None = None
    #: the histories the broker hosts (``[[history]]``, docs/history.md)
    histories: tuple[HistoryConfig, ...] = ()
    source: str = field(default="<defaults>", compare=False)

    @property
    def leasing(self) -> Leasing:
        return Leasing(self.lease_period, self.lease_refresh)

    def with_overrides(self, **changes: Any) -> BrokerConfig:
        """A copy with ``changes`` (command-line flags), checked like the file."""
        cfg = replace(self, **{k: v for k, v in changes.items() if v is not None})
        cfg.check()
        return cfg

    def check(self) -> None:
        """Raise :class:`ConfigError` for values that cannot work together."""
        if self.strategy not in STRATEGIES:
            raise ConfigError(
                f"{self.source}: broker.strategy: unknown routing strategy {self.strategy!r} "
                f"(known: {', '.join(STRATEGIES)})"
            )
        try:
            self.leasing.check(self.lease_diameter, 0.0, self.lease_max_delay)
        except LeaseTimingError as exc:
            raise ConfigError(f"{self.source}: [lease]: {exc}") from None
        for i, a in enumerate(self.neighbours):
            if a == self.listen and a.port != 0:
                raise ConfigError(
                    f"{self.source}: broker.neighbours[{i}]: {a} is this broker's own listen "
                    "address (a broker cannot link to itself)"
                )
        if self.tls is not None:
            self.tls.check()
        if self.monitor is not None and not is_loopback(self.monitor.host) and not self.identities:
            raise ConfigError(
                f"{self.source}: monitor.listen (--monitor): {self.monitor} is reachable "
                "from other machines, and without [identities] anyone could read the "
                "broker's state there: bind it to 127.0.0.1, or configure identities "
                "(one with monitor = true)"
            )
        if (
            self.monitor is not None
            and self.identities
            and not any(i.monitor for i in self.identities)
        ):
            raise ConfigError(
                f"{self.source}: monitor.listen (--monitor): with [identities] the "
                "monitor asks for the token of an identity with monitor = true, and "
                "none has it"
            )
        for ident in self.identities:
            if "/" in ident.name or not ident.name or len(ident.name) > 100:
                raise ConfigError(
                    f"{self.source}: identities.{ident.name}: an identity's name is 1-100 "
                    "characters without '/' (the broker qualifies its clients' ids as "
                    "NAME/id, docs/protocol.md §13)"
                )
            if ident.cert_name is not None and (self.tls is None or self.tls.ca is None):
                raise ConfigError(
                    f"{self.source}: identities.{ident.name}.cert_name: needs [tls] with ca, "
                    "the CA that signs the client certificates"
                )
        if (
            isinstance(self.gateway_max_pending, bool)
            or not isinstance(self.gateway_max_pending, int)
            or self.gateway_max_pending < 1
        ):
            raise ConfigError(
                f"{self.source}: gateway.max_pending: expected an integer > 0 (events waiting "
                f"for one SSE stream), got {self.gateway_max_pending!r}"
            )
        if self.max_queue_bytes < self.max_frame_bytes:
            raise ConfigError(
                f"{self.source}: limits.max_queue_bytes ({self.max_queue_bytes}) is less than "
                f"limits.max_frame_bytes ({self.max_frame_bytes}): one frame would cut a peer off"
            )
        for who in self.identities:
            if who.max_queue_bytes is not None and who.max_queue_bytes < self.max_frame_bytes:
                raise ConfigError(
                    f"{self.source}: identities.{who.name}.max_queue_bytes "
                    f"({who.max_queue_bytes}) "
                    f"is less than limits.max_frame_bytes ({self.max_frame_bytes}): one frame "
                    "would cut a connection off"
                )
        for where, rate, burst in (
            ("limits", self.max_publish_rate, self.publish_burst),
            *(
                (f"identities.{i.name}", i.max_publish_rate, i.publish_burst)
                for i in self.identities
            ),
        ):
            if burst is not None and rate is None and self.max_publish_rate is None:
                raise ConfigError(
                    f"{self.source}: {where}.publish_burst: set only with max_publish_rate"
                )
        if self.backoff_initial > self.backoff_max:
            raise ConfigError(
                f"{self.source}: links.backoff_initial ({self.backoff_initial}) is more than "
                f"links.backoff_max ({self.backoff_max})"
            )


def load_config(path: str) -> BrokerConfig:
    """Read ``path`` (TOML) into a checked :class:`BrokerConfig`."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the broker configuration: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return from_mapping(data, path)


def from_mapping(data: Mapping[str, Any], source: str = "<mapping>") -> BrokerConfig:
    """A checked :class:`BrokerConfig` from parsed TOML; ``source`` names it in errors."""
    r = _Reader(data, source)
    b = r.section(
        "broker",
        {"id", "listen", "neighbours", "strategy", "advertisements", "models", "link_token"},
    )
    lease = r.section("lease", {"period", "refresh", "max_delay", "diameter"})
    limits = r.section(
        "limits",
        {
            "max_frame_bytes",
            "max_queue",
            "max_queue_bytes",
            "max_subscriptions",
            "max_publish_rate",
            "publish_burst",
            "max_connections",
            "hello_timeout",
        },
    )
    links = r.section("links", {"backoff_initial", "backoff_max"})
    gateway = r.section("gateway", {"listen", "max_pending"})
    monitor = r.section("monitor", {"listen"})
    heartbeat = r.section("heartbeat", {"interval", "max_missed"})
    from pubsift.adapters.broker import tls

    tls_config = tls.read_tls(r.section("tls", set(tls.KEYS)), source)
    identities = r.identities()
    known = {
        "broker",
        "lease",
        "limits",
        "links",
        "gateway",
        "monitor",
        "heartbeat",
        "tls",
        "identities",
        "history",
    }
    from pubsift.adapters.broker.history_config import read_histories

    histories = read_histories(data.get("history"), source)
    extra = sorted(set(data) - known)
    if extra:
        raise ConfigError(
            f"{source}: unknown section or key {extra[0]!r} (sections: broker, lease, "
            "limits, links, gateway, monitor, heartbeat, tls, identities, [[history]])"
        )
    d = BrokerConfig()
    cfg = BrokerConfig(
        id=r.string(b, "broker", "id", d.id),
        listen=Address.parse(b["listen"], f"{source}: broker.listen")
        if "listen" in b
        else d.listen,
        neighbours=tuple(
            Address.parse(a, f"{source}: broker.neighbours[{i}]")
            for i, a in enumerate(r.strings(b, "broker", "neighbours") or ())
        ),
        strategy=r.string(b, "broker", "strategy", d.strategy) or d.strategy,
        advertisements=r.boolean(b, "broker", "advertisements", d.advertisements),
        models=r.strings(b, "broker", "models"),
        link_token=r.string(b, "broker", "link_token", None),
        lease_period=r.number(lease, "lease", "period", d.lease_period),
        lease_refresh=r.number(lease, "lease", "refresh", d.lease_refresh),
        lease_max_delay=r.number(lease, "lease", "max_delay", d.lease_max_delay, zero=True),
        lease_diameter=int(r.number(lease, "lease", "diameter", d.lease_diameter, integer=True)),
        max_frame_bytes=int(
            r.number(limits, "limits", "max_frame_bytes", d.max_frame_bytes, integer=True)
        ),
        max_queue=int(r.number(limits, "limits", "max_queue", d.max_queue, integer=True)),
        max_queue_bytes=int(
            r.number(limits, "limits", "max_queue_bytes", d.max_queue_bytes, integer=True)
        ),
        max_subscriptions=r.optional_int(limits, "limits", "max_subscriptions"),
        max_connections=r.optional_int(limits, "limits", "max_connections"),
        max_publish_rate=r.optional_number(limits, "limits", "max_publish_rate"),
        publish_burst=r.optional_int(limits, "limits", "publish_burst"),
        hello_timeout=r.number(limits, "limits", "hello_timeout", d.hello_timeout),
        backoff_initial=r.number(links, "links", "backoff_initial", d.backoff_initial),
        backoff_max=r.number(links, "links", "backoff_max", d.backoff_max),
        heartbeat_interval=r.number(
            heartbeat, "heartbeat", "interval", d.heartbeat_interval, zero=True
        ),
        heartbeat_max_missed=int(
            r.number(heartbeat, "heartbeat", "max_missed", d.heartbeat_max_missed, integer=True)
        ),
        gateway=Address.parse(gateway["listen"], f"{source}: gateway.listen")
        if "listen" in gateway
        else None,
        gateway_max_pending=int(
            r.number(gateway, "gateway", "max_pending", d.gateway_max_pending, integer=True)
        ),
        monitor=Address.parse(monitor["listen"], f"{source}: monitor.listen")
        if "listen" in monitor
        else None,
        identities=identities,
        tls=tls_config,
        histories=histories,
        source=source,
    )
    cfg.check()
    return cfg


class _Reader:
    """Typed access to the parsed TOML with errors naming ``source`` and the key."""

    def __init__(self, data: Mapping[str, Any], source: str) -> None:
        self.data, self.source = data, source

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.source}: {key}: {problem}")

    def identities(self) -> tuple[ClientIdentity, ...]:
        """``[identities.NAME]`` tables: ``token`` or ``token_file`` and/or ``cert_name``,
        and ``subscribe`` / ``publish`` tables of model -> list of filters."""
        raw = self.data.get("identities", {})
        sec = self.section("identities", set(raw) if isinstance(raw, Mapping) else set())
        out, tokens, cert_names = [], set(), set()
        for name, t in sec.items():
            where = f"identities.{name}"
            if "/" in name or not name or len(name) > 100:
                raise self.fail(
                    where,
                    "an identity's name is 1-100 characters without '/' (the broker "
                    "qualifies its clients' ids as NAME/id, docs/protocol.md §13)",
                )
            if not isinstance(t, Mapping):
                raise self.fail(where, "expected a table [identities." + name + "]")
            keys = {
                "token",
                "token_file",
                "cert_name",
                "subscribe",
                "publish",
                "monitor",
                *IDENTITY_LIMITS,
            }
            unknown = sorted(set(t) - keys)
            if unknown:
                raise self.fail(
                    f"{where}.{unknown[0]}", f"unknown key (known: {', '.join(sorted(keys))})"
                )
            cert_name = self.string(t, where, "cert_name", None)
            if "token" in t and "token_file" in t:
                raise self.fail(where, "give exactly one of token and token_file")
            if "token" not in t and "token_file" not in t and cert_name is None:
                raise self.fail(
                    where,
                    "give exactly one of token and token_file, or cert_name (the name of "
                    "a TLS client certificate)",
                )
            if cert_name is not None:
                if cert_name in cert_names:
                    raise self.fail(f"{where}.cert_name", "the same name as another identity's")
                cert_names.add(cert_name)
            token: str | None = None
            if "token" in t:
                token = self.string(t, where, "token", None) or ""
            elif "token_file" in t:
                path = self.string(t, where, "token_file", None) or ""
                try:
                    with open(path, encoding="utf-8") as fh:
                        token = fh.read().strip()
                except (OSError, UnicodeDecodeError) as exc:
                    why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
                    raise self.fail(f"{where}.token_file", f"cannot read {path!r}: {why}") from None
                if not token:
                    raise self.fail(f"{where}.token_file", f"{path!r} is empty")
            if token is not None and token in tokens:
                raise self.fail(f"{where}.token", "the same token as another identity")
            tokens.add(token)
            rights = {}
            for right in ("subscribe", "publish"):
                per_model = t.get(right, {})
                if not isinstance(per_model, Mapping):
                    raise self.fail(
                        f"{where}.{right}",
                        f"expected a table of model = [filters], got {per_model!r}",
                    )
                rights[right] = {
                    m: self.strings(per_model, f"{where}.{right}", m) or () for m in per_model
                }
            out.append(
                ClientIdentity(
                    name,
                    token,
                    rights["subscribe"],
                    rights["publish"],
                    cert_name,
                    max_subscriptions=self.optional_int(t, where, "max_subscriptions"),
                    max_publish_rate=self.optional_number(t, where, "max_publish_rate"),
                    publish_burst=self.optional_int(t, where, "publish_burst"),
                    max_connections=self.optional_int(t, where, "max_connections"),
                    max_queue_bytes=self.optional_int(t, where, "max_queue_bytes"),
                    monitor=self.boolean(t, where, "monitor", False),
                )
            )
        return tuple(out)

    def section(self, name: str, keys: set[str]) -> Mapping[str, Any]:
        sec = self.data.get(name, {})
        if not isinstance(sec, Mapping):
            raise self.fail(name, "expected a table [" + name + "]")
        unknown = sorted(set(sec) - keys)
        if unknown:
            raise self.fail(
                f"{name}.{unknown[0]}",
                f"unknown key (known in [{name}]: {', '.join(sorted(keys))})",
            )
        return sec

    def string(
        self, sec: Mapping[str, Any], name: str, key: str, default: str | None
    ) -> str | None:
        v = sec.get(key, default)
        if v is not None and (not isinstance(v, str) or not v):
            raise self.fail(f"{name}.{key}", f"expected a non-empty string, got {v!r}")
        return v

    def strings(self, sec: Mapping[str, Any], name: str, key: str) -> tuple[str, ...] | None:
        if key not in sec:
            return None
        v = sec[key]
        if (
            not isinstance(v, Sequence)
            or isinstance(v, str)
            or not all(isinstance(x, str) and x for x in v)
        ):
            raise self.fail(f"{name}.{key}", f"expected a list of non-empty strings, got {v!r}")
        return tuple(v)

    def boolean(self, sec: Mapping[str, Any], name: str, key: str, default: bool) -> bool:
        v = sec.get(key, default)
        if not isinstance(v, bool):
            raise self.fail(f"{name}.{key}", f"expected true or false, got {v!r}")
        return v

    def optional_int(self, sec: Mapping[str, Any], name: str, key: str) -> int | None:
        """An integer ≥ 1, or None when the key is absent (no limit)."""
        return int(self.number(sec, name, key, 1, integer=True)) if key in sec else None

    def optional_number(self, sec: Mapping[str, Any], name: str, key: str) -> float | None:
        """A number > 0, or None when the key is absent (no limit)."""
        return self.number(sec, name, key, 1.0) if key in sec else None

    def number(
        self,
        sec: Mapping[str, Any],
        name: str,
        key: str,
        default: float,
        integer: bool = False,
        zero: bool = False,
    ) -> float:
        v = sec.get(key, default)
        ok = isinstance(v, int) if integer else isinstance(v, (int, float))
        if isinstance(v, bool) or not ok or not (v >= 0 if zero else v > 0):
            kind = "an integer" if integer else "a number"
            sign = "≥ 0" if zero else "> 0"
            raise self.fail(f"{name}.{key}", f"expected {kind} {sign}, got {v!r}")
        return float(v) if not integer else v
