"""TLS for client connections and broker links (docs/protocol.md §11), with the standard
library's :mod:`ssl`.

Fiege, Zeidler & Buchmann, "Security Aspects in Publish/Subscribe Systems", DEBS 2004,
§4.2 "Infrastructure Security": a scope "might mandate link layer encryption with Transport
Layer Security (TLS)" between brokers, and "certificates authenticate hosts"; §4.1 "Client
Access Control" authenticates clients by a public-key certificate. Here:

* :class:`TLSConfig` is the ``[tls]`` section of broker.toml: the broker's certificate and
  key (presented to clients, and to neighbours when it dials them), the CA that signs the
  peers' certificates, whether clients must present one, and the names of the neighbour
  brokers whose certificates authenticate a link (``link_names``, instead of
  ``broker.link_token``).
* :func:`client_context` builds the context of a client (``pubsifts://`` URLs, ``ca``,
  ``cert``, ``key``); :func:`peer_names` reads the names (subject CN, subjectAltName DNS,
  e-mail and URI entries) of a peer's verified certificate, which select an identity
  (``[identities.NAME] cert_name``) or authenticate a link.
* :class:`TLSServer` accepts connections on a TLS port. It looks at the first byte before
  the handshake: a TLS handshake record starts with 0x16, a pubsift frame with the high byte
  of its length (0 for every frame below 16 MiB). A plaintext client is told ``error``
  ``tls-required`` in plaintext and closed at once, instead of hanging in a handshake that
  never starts; the broker logs one line and goes on serving. (A TLS client on a plaintext
  port is recognised by :func:`pubsift.adapters.broker.frames.read_frame`.)

Every problem with the files is a :class:`~pubsift.adapters.broker.config.ConfigError`
naming the file and the key (or option) that gave it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pubsift.adapters.broker.address import Address, ConfigError
from pubsift.adapters.broker.frames import encode, error

log = logging.getLogger("pubsift.broker")

#: the first byte of a TLS handshake record (ContentType handshake, RFC 8446 §5.1)
TLS_HANDSHAKE = 0x16
#: the keys of ``[tls]`` in broker.toml
KEYS = frozenset({"cert", "key", "ca", "require_client_cert", "link_names"})


def _read(path: str, where: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read {path!r}: {exc.strerror}") from None


def _load_chain(
    ctx: ssl.SSLContext, cert: str, key: str | None, where: str, key_where: str
) -> None:
    """``ctx.load_cert_chain`` with errors that say which file is wrong and why."""
    if b"-----BEGIN CERTIFICATE-----" not in _read(cert, where):
        raise ConfigError(f"{where}: {cert!r} holds no PEM certificate")
    pem = _read(key, key_where) if key is not None else None
    if pem is not None and b"PRIVATE KEY-----" not in pem:
        raise ConfigError(f"{key_where}: {key!r} holds no PEM private key")
    try:
        ctx.load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        what = (
            f"{key_where}: {key!r} is not the private key of {cert!r}"
            if key is not None
            else f"{where}: {cert!r} holds no private key matching its certificate "
            f"(give the key file as {key_where})"
        )
        raise ConfigError(f"{what} ({exc.reason or exc})") from None
    except OSError as exc:  # a passphrase-protected key, a file that vanished
        raise ConfigError(f"{key_where if key else where}: {exc}") from None


def _load_ca(ctx: ssl.SSLContext, ca: str, where: str) -> None:
    if b"-----BEGIN CERTIFICATE-----" not in _read(ca, where):
        raise ConfigError(f"{where}: {ca!r} holds no PEM CA certificate")
    try:
        ctx.load_verify_locations(cafile=ca)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"{where}: {ca!r}: not a readable PEM CA bundle ({exc})") from None


def _verifying_context(ca: str | None, where: str) -> ssl.SSLContext:
    """A client-side context (TLS 1.2 or later) that verifies the server's certificate
    and host name, with the CA certificates in ``ca`` (None: the system's)."""
    if ca is None:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    else:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies certificate and host name
        _load_ca(ctx, ca, where)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


@dataclass(frozen=True)
class TLSConfig:
    """``[tls]`` of broker.toml: TLS on every client connection and broker link.

    ``cert``/``key``: this broker's certificate chain and private key (PEM; the key may be
    in ``cert``), presented to clients and, when this broker dials, to its neighbours.
    ``ca``: the CA certificates that sign the peers' certificates: a dialled neighbour's
    certificate is verified with it (else with the system's CAs), and with it the broker
    asks clients and dialling brokers for a certificate (``require_client_cert``: must
    present one). ``link_names``: the certificate names of neighbour brokers; a link whose
    peer certificate carries one of them is authenticated by it (both ways), without
    ``broker.link_token``."""

    cert: str
    key: str | None = None
    ca: str | None = None
    require_client_cert: bool = False
    link_names: tuple[str, ...] = ()
    source: str = field(default="<config>", compare=False)

    def where(self, key: str) -> str:
        return f"{self.source}: tls.{key}"

    def check(self) -> None:
        """Build both contexts now, so that a bad file is reported when the configuration
        is read, not at the first connection."""
        wanted = {"require_client_cert": self.require_client_cert, "link_names": self.link_names}
        for key, on in wanted.items():
            if on and self.ca is None:
                raise ConfigError(
                    f"{self.where(key)}: needs tls.ca, the CA that signs the peers' "
                    "certificates (without it no certificate is asked for or verified)"
                )
        self.server_context  # noqa: B018 (built for its errors)
        self.link_context  # noqa: B018

    @cached_property
    def server_context(self) -> ssl.SSLContext:
        """The context of accepted connections (clients and dialling brokers)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        _load_chain(ctx, self.cert, self.key, self.where("cert"), self.where("key"))
        if self.ca is not None:
            _load_ca(ctx, self.ca, self.where("ca"))
            ctx.verify_mode = ssl.CERT_REQUIRED if self.require_client_cert else ssl.CERT_OPTIONAL
        return ctx

    @cached_property
    def link_context(self) -> ssl.SSLContext:
        """The context of dialled links: present this broker's certificate, verify the
        neighbour's against ``ca`` (else the system's CAs) and its host name."""
        ctx = _verifying_context(self.ca, self.where("ca"))
        _load_chain(ctx, self.cert, self.key, self.where("cert"), self.where("key"))
        return ctx

    @cached_property
    def loopback_context(self) -> ssl.SSLContext:
        """The context by which the broker's own HTTP gateway reaches its TLS port: the
        broker's own certificate is the only trust anchor (whatever host name it names),
        and it is presented as client certificate when clients must have one."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN  # a leaf as trust anchor
        _load_ca(ctx, self.cert, self.where("cert"))
        if self.require_client_cert:
            _load_chain(ctx, self.cert, self.key, self.where("cert"), self.where("key"))
        return ctx

    def link_allowed(self, names: frozenset[str] | None) -> bool:
        """Whether a peer certificate with ``names`` authenticates a broker link."""
        return names is not None and not names.isdisjoint(self.link_names)


def read_tls(sec: Any, source: str) -> TLSConfig | None:
    """``[tls]`` (already checked for unknown keys) -> a checked :class:`TLSConfig`, or
    None when the section is absent or empty."""
    if not sec:
        return None

    def text(key: str) -> str | None:
        v = sec.get(key)
        if v is not None and (not isinstance(v, str) or not v):
            raise ConfigError(f"{source}: tls.{key}: expected a non-empty string, got {v!r}")
        return v

    cert = text("cert")
    if cert is None:
        raise ConfigError(
            f"{source}: tls.cert: [tls] needs this broker's certificate (PEM)"
            + (" (tls.key is given without it)" if "key" in sec else "")
        )
    require = sec.get("require_client_cert", False)
    if not isinstance(require, bool):
        raise ConfigError(
            f"{source}: tls.require_client_cert: expected true or false, got {require!r}"
        )
    names = sec.get("link_names", [])
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise ConfigError(
            f"{source}: tls.link_names: expected a list of non-empty strings, got {names!r}"
        )
    cfg = TLSConfig(cert, text("key"), text("ca"), require, tuple(names), source)
    cfg.check()
    return cfg


def client_context(
    tls: bool | ssl.SSLContext | None = None,
    ca: str | None = None,
    cert: str | None = None,
    key: str | None = None,
    names: tuple[str, str, str] = ("ca", "cert", "key"),
) -> ssl.SSLContext | None:
    """The client's TLS context: ``tls`` itself when it is one; else, when ``tls`` is
    true, one that verifies the broker with ``ca`` (default: the system's CAs) and its host
    name and presents ``cert``/``key`` (a client certificate, optional); None for no TLS.
    ``names`` say how the three options are called in errors (``--ca`` on the command line)."""
    if isinstance(tls, ssl.SSLContext):
        if ca or cert or key:
            raise ConfigError(
                f"give either an ssl.SSLContext as tls or {', '.join(names)}, not both"
            )
        return tls
    if not tls:
        given = [n for n, v in zip(names, (ca, cert, key)) if v]
        if given:
            raise ConfigError(
                f"{', '.join(given)} given for a plaintext connection: "
                "use a pubsifts:// URL (or tls=True)"
            )
        return None
    if key and not cert:
        raise ConfigError(f"{names[2]} {key!r} given without {names[1]} (the client certificate)")
    ctx = _verifying_context(ca or None, names[0])
    if cert:
        _load_chain(ctx, cert, key, names[1], names[2])
    return ctx


def peer_names(extra: Callable[[str], Any]) -> frozenset[str] | None:
    """The names of the peer's verified certificate: subject common names and
    subjectAltName DNS names, e-mail addresses and URIs (None: no verified certificate).
    ``extra`` is a transport's or stream writer's ``get_extra_info``."""
    obj = extra("ssl_object")
    cert = obj.getpeercert() if obj is not None else None
    if not cert:  # no certificate, or one the context did not verify
        return None
    names = {v for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName" and v}
    names |= {v for k, v in cert.get("subjectAltName", ()) if k in ("DNS", "email", "URI") and v}
    return frozenset(names)


def show_names(names: Iterable[str] | None) -> str:
    """``names`` for a log line or an error message."""
    return ", ".join(repr(n) for n in sorted(names or ())) or "no name"


def describe(exc: BaseException, accepting: bool = False) -> str:
    """What went wrong in a TLS handshake, in words, with the likely cause (``accepting``:
    on the broker's side of an accepted connection)."""
    if isinstance(exc, ssl.SSLCertVerificationError) and accepting:
        return (
            f"the peer's client certificate is not trusted: {exc.verify_message} (it is not "
            "signed by a CA of tls.ca)"
        )
    if isinstance(exc, ssl.SSLCertVerificationError):
        return (
            f"the peer's certificate is not trusted: {exc.verify_message} (is it signed by "
            "the CA given as ca / --ca / tls.ca, and does it name the host dialled?)"
        )
    if isinstance(exc, ssl.SSLError):
        reason = exc.reason or str(exc)
        why = reason.lower().replace("_", " ")
        if reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"):
            return f"TLS handshake failed: {why} (is the port plaintext? then use pubsift://)"
        if "PEER_DID_NOT_RETURN" in reason:
            return f"TLS handshake failed: {why} (tls.require_client_cert is set)"
        if "CERTIFICATE_REQUIRED" in reason:
            return (
                f"TLS handshake failed: {why} (the broker requires a client certificate: "
                "cert / --cert)"
            )
        if "UNKNOWN_CA" in reason or "BAD_CERTIFICATE" in reason:
            return f"TLS handshake failed: {why} (the peer does not trust this side's certificate)"
        if isinstance(exc, ssl.SSLEOFError) or "EOF" in reason.upper():
            return (
                "the peer closed the connection during the TLS handshake (is the port plaintext?)"
            )
        return f"TLS handshake failed: {why}"
    if accepting and isinstance(exc, (ConnectionResetError, BrokenPipeError)):
        return (
            "the peer closed the connection during the TLS handshake (it may not trust this "
            "broker's certificate: is its CA the one that signed tls.cert?)"
        )
    if isinstance(exc, (ConnectionResetError, BrokenPipeError, asyncio.IncompleteReadError)):
        return (
            "the peer closed the connection during the TLS handshake (it may not trust this "
            "side's certificate, or speak plaintext)"
        )
    if isinstance(exc, TimeoutError):
        return "no TLS handshake within the time allowed"
    return str(exc) or type(exc).__name__


Accept = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class TLSServer:
    """The listening side of a TLS port: accepts, looks at the first byte, and hands a
    connection whose TLS handshake succeeded to ``accept(reader, writer)`` (as
    :func:`asyncio.start_server` would). Plaintext peers get ``error`` ``tls-required``.
    :attr:`sockets`, :meth:`close` and :meth:`wait_closed` as :class:`asyncio.Server`."""

    def __init__(
        self, accept: Accept, context: ssl.SSLContext, timeout: float, limit: int = 1 << 16
    ) -> None:
        self._accept, self._context, self._timeout, self._limit = accept, context, timeout, limit
        self.sockets: list[socket.socket] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._handshakes: set[asyncio.Task[None]] = set()

    async def start(self, listen: Address) -> None:
        """Bind every address of ``listen`` (like :func:`asyncio.start_server`); OSError
        if one cannot be bound."""
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(
            listen.host or None, listen.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        try:
            for family, kind, proto, _, addr in dict.fromkeys(infos):
                s = socket.socket(family, kind, proto)
                self.sockets.append(s)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                s.bind(addr)
                s.listen(128)
                s.setblocking(False)
        except OSError:
            self.close()
            raise
        self._tasks = [asyncio.ensure_future(self._serve(s)) for s in self.sockets]

    def close(self) -> None:
        for t in (*self._tasks, *self._handshakes):
            t.cancel()
        for s in self.sockets:
            s.close()

    async def wait_closed(self) -> None:
        await asyncio.gather(*self._tasks, *self._handshakes, return_exceptions=True)

    async def _serve(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, _ = await loop.sock_accept(listener)
            except OSError as exc:  # too many open files, ...: do not spin
                log.warning("TLS port: cannot accept a connection: %s", exc)
                await asyncio.sleep(0.1)
                continue
            task = asyncio.ensure_future(self._handshake(sock))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    async def _handshake(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        peer = _peer(sock)
        try:
            sock.setblocking(False)
            first = await asyncio.wait_for(_peek(loop, sock), self._timeout)
            if not first:
                sock.close()
                return
            if first[0] != TLS_HANDSHAKE:
                await _refuse_plaintext(loop, sock)
                log.warning(
                    "connection %s: plaintext on a TLS port (told it tls-required; closing)", peer
                )
                return
            reader = asyncio.StreamReader(limit=self._limit)
            protocol = asyncio.StreamReaderProtocol(reader)
            transport, _ = await loop.connect_accepted_socket(
                lambda: protocol, sock, ssl=self._context, ssl_handshake_timeout=self._timeout
            )
        except asyncio.CancelledError:
            sock.close()
            raise
        except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
            log.warning("connection %s: %s (closing)", peer, describe(exc, accepting=True))
            sock.close()
            return
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        task = asyncio.current_task()
        if task is not None:  # from here on the daemon owns the connection
            self._handshakes.discard(task)
        await self._accept(reader, writer)


def _peer(sock: socket.socket) -> str:
    try:
        host, port = sock.getpeername()[:2]
    except OSError:
        return "?"
    return str(Address(host, port))


async def _peek(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> bytes:
    """The first byte the peer sent, left in the socket (b"" if it closed)."""
    while True:
        try:
            return sock.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            pass
        ready: asyncio.Future[None] = loop.create_future()
        loop.add_reader(sock.fileno(), _set, ready)
        try:
            await ready
        finally:
            loop.remove_reader(sock.fileno())


def _set(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


async def _refuse_plaintext(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
    """Tell a plaintext peer, in plaintext, that this port speaks TLS, and close. What it
    sent is read first, so that closing does not reset the connection before it reads."""
    try:
        with contextlib.suppress(BlockingIOError):
            sock.recv(1 << 16)
        frame = encode(
            error(
                "tls-required",
                "this broker port speaks TLS: connect with pubsifts://host:port "
                "(and the broker's CA: ca= / --ca)",
            )
        )
        await asyncio.wait_for(loop.sock_sendall(sock, frame), 5.0)
        sock.shutdown(socket.SHUT_WR)
    except (OSError, TimeoutError):
        pass
    finally:
        sock.close()


def reason_of(exc: OSError) -> str:
    """The OS's words for ``exc`` (asyncio's bind errors repeat the address); what went
    wrong for a TLS error."""
    if isinstance(exc, ssl.SSLError):
        return describe(exc)
    return os.strerror(exc.errno).lower() if exc.errno else str(exc)
